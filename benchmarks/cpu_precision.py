"""The measurement behind ``precision=auto`` on a CPU (:data:`gca.precision.CPU_AUTO`): how long an update takes in
bf16 (the attention objective, ``precision=bf16``) and in fp32 (the blocked objective, ``precision=fp32``), in exact
and in mini-batch training, on this machine.

Each graph and mode trains ``--rounds`` pairs of short fits with the shipped config (``GCA.fit``, its
``on_update`` hook stamping every update), the two precisions alternated and the order swapped every round; an
update's time is the median over a fit's updates after ``--warmup``, and the speed-up the median over the rounds of
fp32 / bf16. Mini-batches are the fast path's (1,024 anchors, fan-out 10 per hop). The last column is what
``auto`` does on this CPU's kind.

    python benchmarks/cpu_precision.py --data-dir DATA [--datasets Cora Amazon-Photo] [--modes exact mini-batch]
                                       [--exact-updates 12] [--batch-updates 60] [--rounds 3] [--threads 2]
"""

from __future__ import annotations

import argparse
import datetime
import math
import platform
import statistics
import time

import torch

from gca import GCA
from gca.config import build_config
from gca.datasets import load_dataset
from gca.precision import cpu_bf16_units, precision_choice
from gca.train.fast import FAST_BATCH_SIZE, FAST_FANOUT

KINDS = {
    "fp32": {"precision": "fp32", "loss_backend": "blocked"},
    "bf16": {"precision": "bf16", "loss_backend": "attention"},
}


def update_seconds(data, config, warmup: int) -> float:
    """The median seconds of an update of ``GCA(config).fit(data)`` after its first ``warmup`` updates."""
    stamps: list[float] = []
    GCA(config, device="cpu").fit(data, on_update=lambda update, updates: stamps.append(time.perf_counter()))
    gaps = [b - a for a, b in zip(stamps[warmup:-1], stamps[warmup + 1 :], strict=True)]
    return statistics.median(gaps)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--datasets", nargs="+", default=["Cora", "Amazon-Photo", "Amazon-Computers", "Coauthor-CS"])
    parser.add_argument("--modes", nargs="+", default=["exact", "mini-batch"], choices=["exact", "mini-batch"])
    parser.add_argument("--exact-updates", type=int, default=12)
    parser.add_argument("--batch-updates", type=int, default=60)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    units = cpu_bf16_units()
    cpu = next(
        (line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")),
        platform.processor(),
    )
    print(
        f"{cpu}, bf16 units: {units or 'none'} (PyTorch's CPU capability {torch.backends.cpu.get_cpu_capability()}); "
        f"{args.threads} thread(s); torch {torch.__version__}; {datetime.date.today()}"
    )
    print("| graph | training | fp32 ms/update | bf16 ms/update | bf16 speed-up (median of rounds) | auto here |")
    print("|---|---|---:|---:|---:|---|")
    for name in args.datasets:
        loaded = load_dataset(name, args.data_dir)
        nodes = loaded.data.num_nodes
        for mode in args.modes:
            if mode == "exact":
                base = build_config(loaded.name).replace(batch_size=0, epochs=args.exact_updates)
            else:
                per_epoch = math.ceil(nodes / FAST_BATCH_SIZE)
                base = build_config(loaded.name).replace(
                    batch_size=FAST_BATCH_SIZE, fanout=FAST_FANOUT, epochs=math.ceil(args.batch_updates / per_epoch)
                )
            times: dict[str, list[float]] = {kind: [] for kind in KINDS}
            for round_ in range(args.rounds):
                order = list(KINDS) if round_ % 2 == 0 else list(KINDS)[::-1]
                for kind in order:
                    times[kind].append(update_seconds(loaded.data, base.replace(**KINDS[kind]), args.warmup))
            speedup = statistics.median(a / b for a, b in zip(times["fp32"], times["bf16"], strict=True))
            auto = precision_choice("auto", "cpu")[0]
            print(
                f"| {loaded.name} | {mode} | {statistics.median(times['fp32']) * 1e3:.1f} | "
                f"{statistics.median(times['bf16']) * 1e3:.1f} | {speedup:.2f}× | {auto} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
