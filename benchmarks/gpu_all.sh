#!/usr/bin/env bash
# Every GPU check the issues name, in one run on a GPU machine, section by section (SECTIONS, default
# "tests epoch variants"):
#   tests     the CUDA tests (tests/test_cuda.py) and the authors' probe tests;
#   epoch     one training epoch of Amazon-Photo, Amazon-Computers and Coauthor-CS with the default objective
#             against the plain formulation on the same GPU (benchmarks/gpu.py --epoch-graphs);
#   variants  the paper's GCA variants on those three graphs, both protocols, as many seeds as the budget allows
#             (benchmarks/paper_variants.py; it gets what is left of the budget, less 15 s);
#   paper-minibatch  mini-batch against exact training on those three graphs (Table 5's settings, gca's default
#             schedule): exact, B = 1024, then B = 2048 and 512 while the budget lasts, each one `gca train` —
#             accuracy under both protocols, seconds, peak GPU memory and RSS (benchmarks/paper_minibatch.py,
#             arguments in PAPER_MB_ARGS; it gets what is left of the budget, less 15 s; OUT/paper_minibatch.json);
#   objective the objective at N = 34,493, 169,343 and 10^6 per backend and precision (benchmarks/gpu_scale.py,
#             arguments in SCALE_ARGS: "--sizes 1000000 --backends attention --precisions bf16" for 10^6 in bf16 alone);
#   cora      Cora GCA-DE, 20 splits, objective in fp32 (blocked), tf32 (blocked), fp32 and bf16 (attention);
#   arxiv     ogbn-arxiv size: a mini-batch epoch and exact full-graph epochs (benchmarks/minibatch.py);
#   products  ogbn-products size, 50 mini-batch steps (PRODUCTS_ARGS, e.g. "--products-steps 200"): steps per second
#             and the seconds to embed every node — only if at least 330 s of the budget are left.
# Everything is printed and kept in OUT/gpu.log (plus OUT/*.json).
#
#   bash benchmarks/gpu_all.sh OUT DATA_DIR [BUDGET_SECONDS]
#
# DATA_DIR holds Cora/raw/ind.cora.* and Photo/, Computers/, CS/ with their raw/*.npz, and must be writable
# (PyTorch Geometric writes processed/ beside raw/). A dry run on a CPU:
# DEVICE=cpu SECTIONS="epoch variants" EPOCH_ARGS="--epochs 1" VARIANT_ARGS="--epochs 2 --seeds 1 --variant GCA-DE"
# bash benchmarks/gpu_all.sh /tmp/dry DATA 300
# DEVICE=cpu SECTIONS=paper-minibatch PAPER_MB_ARGS="--datasets Amazon-Photo --batch-sizes 0 1024 --epochs 2
# --splits 2 --sklearn-splits 2" bash benchmarks/gpu_all.sh /tmp/dry DATA 120
set -u
OUT=${1:?output folder}
DATA=${2:?data folder}
BUDGET=${3:-540}
SECTIONS=" ${SECTIONS:-tests epoch variants} "
mkdir -p "$OUT"
exec > >(tee "$OUT/gpu.log") 2>&1
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}
WORK=$(mktemp -d)
DEVICE=${DEVICE:-cuda}
run() { [[ $SECTIONS == *" $1 "* ]]; }

echo "== machine"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || echo "no nvidia-smi"
echo "$(nproc) CPU cores; $(grep -m1 'model name' /proc/cpuinfo)"
$PY -c "import torch, torch_geometric, sklearn, gca; print('torch', torch.__version__, 'pyg', \
torch_geometric.__version__, 'sklearn', sklearn.__version__, 'gca', gca.__version__, 'cuda', \
torch.cuda.is_available())" || exit 1

if run tests; then
  echo "== tests: CUDA and the authors' probe ($SECONDS s)"
  $PY -m pytest -q -p no:cacheprovider tests/test_cuda.py tests/test_probe.py
fi

if run epoch; then
  echo "== epoch: the paper's graphs, default objective against the plain formulation ($SECONDS s)"
  # shellcheck disable=SC2086
  $PY benchmarks/gpu.py --skip-objective --epoch-graphs real-photo real-computers real-cs --data-dir "$DATA" \
    --device "$DEVICE" --json "$OUT/epoch.json" ${EPOCH_ARGS:-}
fi

if run variants; then
  echo "== variants: GCA-DE/-PR/-EV and Table 4's ablations, both protocols ($SECONDS s)"
  # shellcheck disable=SC2086
  $PY benchmarks/paper_variants.py --data-dir "$DATA" --out "$OUT" --device "$DEVICE" --seeds 3 \
    --deadline $(( BUDGET - SECONDS - 15 )) ${VARIANT_ARGS:-}
fi

if run paper-minibatch; then
  echo "== paper-minibatch: mini-batch against exact training, Table 5's settings, both protocols ($SECONDS s)"
  # shellcheck disable=SC2086
  $PY benchmarks/paper_minibatch.py --data-dir "$DATA" --out "$OUT" --device "$DEVICE" --work "$WORK/paper-minibatch" \
    --deadline $(( BUDGET - SECONDS - 15 )) ${PAPER_MB_ARGS:-}
fi

if run objective; then
  echo "== objective per backend and precision ($SECONDS s)"
  # shellcheck disable=SC2086
  $PY benchmarks/gpu_scale.py --deadline 200 --json "$OUT/objective.json" --device "$DEVICE" ${SCALE_ARGS:-}
fi

if run cora; then
  echo "== Cora GCA-DE, 20 splits ($SECONDS s)"
  summary() {
    $PY - "$1" "$2" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[2]))
a = r["accuracy"]
print(f"| {sys.argv[1]} | {a['mean']:.2f} ± {a['std']:.2f} | {r['seconds_per_epoch'] * 1000:.2f} ms | "
      f"{r['train_seconds']:.1f} s | {r.get('gpu_peak_mb')} MB | {r['final_loss']:.4f} |")
PYEOF
  }
  echo "| objective | accuracy | s/epoch | training | peak GPU memory | final loss |"
  echo "|---|---|---|---|---|---|"
  for variant in "blocked fp32:--set precision=fp32" "blocked tf32:--set precision=tf32" \
                 "attention fp32:--set loss_backend=attention --set precision=fp32" \
                 "attention bf16 (auto, the default on CUDA):"; do
    label=${variant%%:*}; settings=${variant#*:}
    dir="$WORK/cora-${label// /-}"
    # shellcheck disable=SC2086
    $PY -m gca train --dataset Cora --data-dir "$DATA" --device "$DEVICE" --quiet $settings ${CORA_ARGS:-} \
      --out "$dir" >/dev/null 2>"$dir.err" && summary "$label" "$dir/results.json" || {
      echo "| $label | failed |"; tail -3 "$dir.err"; }
  done
fi

if run arxiv; then
  echo "== ogbn-arxiv size ($SECONDS s)"
  # shellcheck disable=SC2086
  $PY benchmarks/minibatch.py --dir "$WORK/bench" --skip-products --exact --exact-bf16 --exact-epochs 3 \
    --device "$DEVICE" ${ARXIV_ARGS:-}
fi

if run products; then
  if (( BUDGET - SECONDS >= 330 )); then
    echo "== ogbn-products size, mini-batch steps per second and inference ($SECONDS s)"
    # shellcheck disable=SC2086
    timeout $(( BUDGET - SECONDS - 10 )) $PY benchmarks/minibatch.py --dir "$WORK/bench" --device "$DEVICE" \
      --skip-arxiv ${PRODUCTS_ARGS:-}
  else
    echo "== ogbn-products size: not run ($(( BUDGET - SECONDS )) s of the budget left, 330 s needed)"
  fi
fi
echo "== done in $SECONDS s"
