#!/usr/bin/env bash
# Every GPU check the issues name, in one run on a GPU machine, by section (SECTIONS, default "tests epoch variants";
# a section's extra arguments in the variable beside it). Printed and kept in OUT/gpu.log and OUT/*.json.
#   tests: the CUDA and probe tests          epoch: epoch.py on Photo, Computers, CS (EPOCH_ARGS)
#   variants: paper_variants.py (VARIANT_ARGS)     paper-minibatch: minibatch.py --paper (PAPER_MB_ARGS)
#   objective: objective.py at N = 34,493, 169,343, 10^6 (OBJECTIVE_ARGS replaces its sizes and cases)
#   cora: Cora GCA-DE per objective and precision (CORA_ARGS)     arxiv: minibatch.py at arxiv size (ARXIV_ARGS)
#   products: minibatch.py at products size, if 330 s are left (PRODUCTS_ARGS)
#
#   bash benchmarks/gpu_all.sh OUT DATA [BUDGET_SECONDS]    # DATA: Cora/, Photo/, Computers/, CS/; writable
#   DEVICE=cpu SECTIONS="epoch variants" EPOCH_ARGS="--epochs 1" VARIANT_ARGS="--epochs 2 --seeds 1 --variant GCA-DE" \
#     bash benchmarks/gpu_all.sh /tmp/dry DATA 300                                        # a dry run on a CPU
set -u
OUT=${1:?output folder} DATA=${2:?data folder} BUDGET=${3:-540}
SECTIONS=" ${SECTIONS:-tests epoch variants} "
mkdir -p "$OUT"
exec > >(tee "$OUT/gpu.log") 2>&1
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
PY=${PYTHON:-python3} WORK=$(mktemp -d) DEVICE=${DEVICE:-cuda}
run() { [[ $SECTIONS == *" $1 "* ]] && echo "== $1 ($SECONDS s)"; }
left() { echo $(( BUDGET - SECONDS - 15 )); }

echo "== machine"; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || echo "no nvidia-smi"
echo "$(nproc) CPU cores; $(grep -m1 'model name' /proc/cpuinfo)"
$PY -c "import torch, torch_geometric, sklearn, gca; print('torch', torch.__version__, 'pyg', \
torch_geometric.__version__, 'sklearn', sklearn.__version__, 'gca', gca.__version__, 'cuda', \
torch.cuda.is_available())" || exit 1

# shellcheck disable=SC2086
{
run tests && $PY -m pytest -q -p no:cacheprovider tests/test_cuda.py tests/test_probe.py
run epoch && $PY benchmarks/epoch.py --graphs real-photo real-computers real-cs --data-dir "$DATA" \
  --device "$DEVICE" --json "$OUT/epoch.json" ${EPOCH_ARGS:-}
run variants && $PY benchmarks/paper_variants.py --data-dir "$DATA" --out "$OUT" --device "$DEVICE" --seeds 3 \
  --deadline "$(left)" ${VARIANT_ARGS:-}
run paper-minibatch && $PY benchmarks/minibatch.py --paper --data-dir "$DATA" --out "$OUT" --device "$DEVICE" \
  --deadline "$(left)" ${PAPER_MB_ARGS:-}
run objective && $PY benchmarks/objective.py --deadline 200 --json "$OUT/objective.json" --device "$DEVICE" \
  ${OBJECTIVE_ARGS:---sizes 34493 169343 1000000 --dims 128 --cases blocked-fp32 blocked-tf32 attention-fp32 \
  attention-bf16-flash attention-bf16-efficient}
}

if run cora; then
  echo "| objective | accuracy | s/epoch | training | peak GPU memory | final loss |"
  echo "|---|---|---|---|---|---|"
  for variant in "blocked fp32:--set precision=fp32" "blocked tf32:--set precision=tf32" \
                 "attention fp32:--set loss_backend=attention --set precision=fp32" \
                 "attention bf16 (auto, the default on CUDA):"; do
    label=${variant%%:*}; settings=${variant#*:}; dir="$WORK/cora-${label// /-}"
    # shellcheck disable=SC2086
    if $PY -m gca train --dataset Cora --data-dir "$DATA" --device "$DEVICE" --quiet $settings ${CORA_ARGS:-} \
      --out "$dir" >/dev/null 2>"$dir.err"; then
      $PY -c "import json, sys; r = json.load(open(sys.argv[2])); a = r['accuracy']
print(f\"| {sys.argv[1]} | {a['mean']:.2f} ± {a['std']:.2f} | {r['seconds_per_epoch'] * 1000:.2f} ms | \"
      f\"{r['train_seconds']:.1f} s | {r.get('gpu_peak_mb')} MB | {r['final_loss']:.4f} |\")" "$label" "$dir/results.json"
    else echo "| $label | failed |"; tail -3 "$dir.err"; fi
  done
fi

# shellcheck disable=SC2086
run arxiv && $PY benchmarks/minibatch.py --dir "$WORK/bench" --skip-products --exact --exact-bf16 --exact-epochs 3 \
  --device "$DEVICE" ${ARXIV_ARGS:-}
# shellcheck disable=SC2086
run products && if (( BUDGET - SECONDS >= 330 )); then
  timeout "$(left)" $PY benchmarks/minibatch.py --dir "$WORK/bench" --device "$DEVICE" --skip-arxiv ${PRODUCTS_ARGS:-}
else echo "not run: $(( BUDGET - SECONDS )) s of the budget left, 330 s needed"; fi
echo "== done in $SECONDS s"
