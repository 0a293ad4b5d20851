"""The measurement behind ``precision=auto`` on a CPU (:data:`gca.precision.CPU_AUTO`): an update in bf16 (the
attention objective) against fp32 (the blocked one), in exact and in mini-batch training (1,024 anchors, fan-out 10).

Per graph and mode, ``--rounds`` pairs of short fits, the precisions alternated; printed: the median update time
after ``--warmup``, the median speed-up fp32 / bf16 over the rounds, and what ``auto`` does on this CPU.

    python benchmarks/cpu_precision.py --data-dir DATA [--datasets Cora Amazon-Photo] [--modes exact mini-batch]
                                       [--exact-updates 12] [--batch-updates 60] [--rounds 3] [--threads 2]
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from functools import partial

import torch
from harness import alternated, load, machine, table

from gca import GCA
from gca.precision import precision_choice
from gca.train.fast import FAST_BATCH_SIZE, FAST_FANOUT

KINDS = {
    "fp32": {"precision": "fp32", "loss_backend": "blocked"},
    "bf16": {"precision": "bf16", "loss_backend": "attention"},
}


def update_seconds(data, config, warmup: int) -> float:
    """The median seconds of an update of ``GCA(config).fit(data)`` after its first ``warmup`` updates."""
    stamps: list[float] = []
    GCA(config, device="cpu").fit(data, on_update=lambda update, updates: stamps.append(time.perf_counter()))
    return statistics.median(b - a for a, b in zip(stamps[warmup:-1], stamps[warmup + 1 :], strict=True))


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
    print(machine())
    row = table("graph | training | fp32 ms/update | bf16 ms/update | bf16 speed-up (median of rounds) | auto here")
    for name in args.datasets:
        for mode in args.modes:
            if mode == "exact":
                loaded, base = load(name, args.data_dir, batch_size=0, epochs=args.exact_updates)
            else:
                loaded, base = load(name, args.data_dir, batch_size=FAST_BATCH_SIZE, fanout=FAST_FANOUT)
                per_epoch = math.ceil(loaded.data.num_nodes / FAST_BATCH_SIZE)
                base = base.replace(epochs=math.ceil(args.batch_updates / per_epoch))
            fits = [partial(update_seconds, loaded.data, base.replace(**KINDS[kind]), args.warmup) for kind in KINDS]
            fp32, bf16 = alternated(*fits, args.rounds)
            speedup = statistics.median(a / b for a, b in zip(fp32, bf16, strict=True))
            row(
                f"{loaded.name} | {mode} | {statistics.median(fp32) * 1e3:.1f} | {statistics.median(bf16) * 1e3:.1f} | "
                f"{speedup:.2f}× | {precision_choice('auto', 'cpu')[0]}"
            )


if __name__ == "__main__":
    main()
