#!/usr/bin/env bash
# Every GPU check the issues name, in one run on a lent GPU machine (about 6 minutes on an H100):
#   1. the CUDA tests (tests/test_cuda.py);
#   2. the objective at N = 34,493, 169,343 and 10^6 per backend and precision (benchmarks/gpu_scale.py);
#   3. Cora GCA-DE, 20 splits, with the objective in fp32 (blocked), tf32 (blocked), fp32 (attention) and bf16
#      (attention) — accuracy and seconds per epoch;
#   4. ogbn-arxiv size: mini-batch epoch and exact full-graph epochs, fp32 blocked and bf16 attention
#      (benchmarks/minibatch.py);
#   5. ogbn-products size, 50 mini-batch steps — only if at least 330 s of the budget are left.
# Everything is printed and kept in OUT/gpu.log (plus OUT/objective.json).
#
#   bash benchmarks/gpu_all.sh OUT DATA_DIR [BUDGET_SECONDS]     # DATA_DIR holds Cora/raw/ind.cora.*
#
# A dry run of this script on a CPU: DEVICE=cpu SCALE_ARGS="--sizes 300" CORA_ARGS="--epochs 3 --splits 2"
# ARXIV_ARGS="--skip-arxiv" bash benchmarks/gpu_all.sh /tmp/dry ../shared/data 0
set -u
OUT=${1:?output folder}
DATA=${2:?data folder holding Cora}
BUDGET=${3:-540}
mkdir -p "$OUT"
exec > >(tee "$OUT/gpu.log") 2>&1
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}
WORK=$(mktemp -d)
DEVICE=${DEVICE:-cuda}

echo "== machine"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
nproc
$PY -c "import torch, torch_geometric, gca; print('torch', torch.__version__, 'pyg', torch_geometric.__version__, \
'gca', gca.__version__, 'cuda', torch.cuda.is_available())" || exit 1

echo "== 1. CUDA tests ($SECONDS s)"
$PY -m pytest -q -p no:cacheprovider tests/test_cuda.py

echo "== 2. objective per backend and precision ($SECONDS s)"
# shellcheck disable=SC2086
$PY benchmarks/gpu_scale.py --deadline 200 --json "$OUT/objective.json" --device "$DEVICE" ${SCALE_ARGS:-}

echo "== 3. Cora GCA-DE on the GPU, 20 splits ($SECONDS s)"
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
  $PY -m gca train --dataset Cora --data-dir "$DATA" --device "$DEVICE" --quiet $settings ${CORA_ARGS:-} --out "$dir" >/dev/null \
    2>"$dir.err" && summary "$label" "$dir/results.json" || { echo "| $label | failed |"; tail -3 "$dir.err"; }
done

echo "== 4. ogbn-arxiv size ($SECONDS s)"
# shellcheck disable=SC2086
$PY benchmarks/minibatch.py --dir "$WORK/bench" --skip-products --exact --exact-bf16 --exact-epochs 3 \
  --device "$DEVICE" ${ARXIV_ARGS:-}

if (( BUDGET - SECONDS >= 330 )); then
  echo "== 5. ogbn-products size, 50 steps ($SECONDS s)"
  timeout $(( BUDGET - SECONDS - 10 )) $PY benchmarks/minibatch.py --dir "$WORK/bench" --device "$DEVICE" \
    --skip-arxiv
else
  echo "== 5. ogbn-products size: not run ($(( BUDGET - SECONDS )) s of the budget left, 330 s needed)"
fi
echo "== done in $SECONDS s"
