"""The authors' evaluator on the CPU: 20 splits fitted together against one split at a time, at 1 and 2 threads.

Under ``--eval-protocol authors`` every judged training fits a linear layer with Adam for 3,000 epochs on each of
its splits (:func:`gca.evaluate.probe.adam_probe`). This script embeds a paper dataset with GCA's encoder at its
initial weights (the Random-Init row's embeddings: the probe's cost depends on the shapes, not on training) and
times, for each thread count:

* ``one at a time`` — 20 calls of ``adam_probe`` on one split each, split s seeded ``run_seeds(0, 20)[s]``;
* ``together``      — one call on all 20 splits (the batched tensor program the library runs).

It checks that both give the same test accuracy, validation accuracy and chosen epoch on every split, and prints the
seconds and their ratio. Threads are set with ``torch.set_num_threads`` for the timed calls (the library's own
choice of threads, :data:`gca.evaluate.probe.PROBE_THREADS`, is bypassed so that each count is measured).

    python benchmarks/probe.py --data-dir ../shared/data [--dataset Amazon-Photo --dataset Coauthor-CS]
                               [--splits 20] [--threads 1,2]
"""

from __future__ import annotations

import argparse
import datetime
import platform
import time

import numpy as np
import torch

import gca.evaluate.probe as probe
from gca import GCA, build_config, load_dataset
from gca.evaluate.splits import SplitSetting, renumber_classes
from gca.seeds import run_seeds


def embeddings(name: str, data_dir: str) -> tuple[torch.Tensor, np.ndarray]:
    loaded = load_dataset(name, data_dir=data_dir)
    model = GCA(build_config(name, overrides={"epochs": 0}), device="cpu")
    return model.fit_transform(loaded.data), loaded.data.y.numpy()


def timed(call) -> tuple[float, object]:
    start = time.perf_counter()
    result = call()
    return time.perf_counter() - start, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--dataset", action="append")
    parser.add_argument("--splits", type=int, default=20)
    parser.add_argument("--threads", default="1,2")
    args = parser.parse_args()
    print(f"# {platform.processor() or platform.machine()}, torch {torch.__version__}, {datetime.date.today()}")
    print("| dataset | N × d, classes | threads | one at a time (s) | together (s) | speed-up | equal |")
    print("|---|---|---|---|---|---|---|")
    for name in args.dataset or ["Amazon-Photo", "Coauthor-CS"]:
        z, y = embeddings(name, args.data_dir)
        splits = SplitSetting("random", args.splits, sizes="floor").draw(y, 0)
        seeds = run_seeds(0, len(splits))
        classes = int(renumber_classes(y).max()) + 1
        for threads in (int(t) for t in args.threads.split(",")):
            probe.PROBE_THREADS = None  # measure the count asked for
            torch.set_num_threads(threads)
            probe.adam_probe(z, y, splits[:1], epochs=100)  # warm-up
            alone_s, alone = timed(lambda z=z, y=y, splits=splits, seeds=seeds: [
                probe.adam_probe(z, y, [s], seed=seeds[i]) for i, s in enumerate(splits)])  # fmt: skip
            together_s, together = timed(lambda z=z, y=y, splits=splits: probe.adam_probe(z, y, splits, seed=0))
            equal = all(np.array_equal(np.concatenate([a[k] for a in alone]), together[k]) for k in range(4))
            print(f"| {name} | {z.shape[0]:,} × {z.shape[1]}, {classes} | {threads} | {alone_s:.1f} | "
                  f"{together_s:.1f} | {alone_s / together_s:.1f}× | {'yes' if equal else 'NO'} |")  # fmt: skip


if __name__ == "__main__":
    main()
