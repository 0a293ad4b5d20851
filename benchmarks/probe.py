"""The authors' evaluator on the CPU: 20 splits fitted together against one split at a time, at 1 and 2 threads.

Under ``--eval-protocol authors`` every judged training fits a linear layer with Adam for 3,000 epochs on each of
its splits (:func:`gca.evaluate.probe.adam_probe`). This script embeds a paper dataset with GCA's encoder at its
initial weights (the Random-Init row's embeddings: the probe's cost depends on the shapes, not on training) and
times, for each thread count:

* ``one at a time`` — 20 calls of ``adam_probe`` on one split each, split s seeded ``run_seeds(0, 20)[s]``;
* ``together``      — one call on all 20 splits (the batched tensor program the library runs).

It checks that both give the same test accuracy, validation accuracy and chosen epoch on every split, and prints the
seconds and their ratio.

``--raw`` times instead the Raw-features row of ``gca reproduce table3``: the dataset's features as the authors'
protocol judges them (row sums 1), 20 splits together, on the dense path (the features as a dense tensor,
``SPARSE_BELOW = -1``) and on the default path (features at most 10 % non-zero judged as a sparse matrix), and
checks that both give the same results on every split. ``--dense-epochs K`` runs the dense path for K of the
3,000 epochs only and scales its time by 3,000 / K (said in the table; the results are then not compared).

Threads are set with ``torch.set_num_threads`` for the timed calls (the library's own choice of threads,
:data:`gca.evaluate.probe.PROBE_THREADS`, is bypassed so that each count is measured).

    python benchmarks/probe.py --data-dir ../shared/data [--dataset Amazon-Photo --dataset Coauthor-CS]
                               [--splits 20] [--threads 1,2] [--raw [--dense-epochs K]]
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
    parser.add_argument("--raw", action="store_true", help="time the raw-features row: dense path against sparse")
    parser.add_argument("--dense-epochs", type=int, default=None, help="with --raw: epochs of the dense path")
    args = parser.parse_args()
    if args.raw:
        return raw_rows(args)
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
            alone_s, alone = timed(
                lambda z=z, y=y, splits=splits, seeds=seeds: [
                    probe.adam_probe(z, y, [s], seed=seeds[i]) for i, s in enumerate(splits)
                ]
            )
            together_s, together = timed(lambda z=z, y=y, splits=splits: probe.adam_probe(z, y, splits, seed=0))
            equal = all(np.array_equal(np.concatenate([a[k] for a in alone]), together[k]) for k in range(4))
            print(
                f"| {name} | {z.shape[0]:,} × {z.shape[1]}, {classes} | {threads} | {alone_s:.1f} | "
                f"{together_s:.1f} | {alone_s / together_s:.1f}× | {'yes' if equal else 'NO'} |"
            )


def raw_rows(args: argparse.Namespace) -> None:
    from gca.evaluate.classification import raw_feature_input

    print(
        f"# {platform.processor() or platform.machine()}, torch {torch.__version__}, {torch.get_num_threads()} "
        f"threads, {datetime.date.today()}"
    )
    print("| dataset | N × d, non-zero | dense path (s) | sparse path (s) | speed-up | equal |")
    print("|---|---|---|---|---|---|")
    for name in args.dataset or ["Amazon-Photo", "Amazon-Computers", "Coauthor-CS"]:
        data = load_dataset(name, data_dir=args.data_dir).data
        x = data.x.to_dense() if data.x.is_sparse else data.x
        x, y = torch.from_numpy(raw_feature_input(x.float().numpy(), "authors")), data.y.numpy()
        splits = SplitSetting("random", args.splits, sizes="floor").draw(y, 0)
        density = float(torch.count_nonzero(x)) / x.numel()
        sparse_s, sparse = timed(lambda x=x, y=y, splits=splits: probe.adam_probe(x, y, splits))
        epochs = args.dense_epochs or probe.PROBE_EPOCHS
        saved, probe.SPARSE_BELOW = probe.SPARSE_BELOW, -1.0
        try:
            dense_s, dense = timed(lambda x=x, y=y, s=splits, e=epochs: probe.adam_probe(x, y, s, epochs=e))
        finally:
            probe.SPARSE_BELOW = saved
        scaled = dense_s * probe.PROBE_EPOCHS / epochs
        equal = (
            (all(np.array_equal(sparse[k], dense[k]) for k in range(4)) and "yes")
            if epochs == probe.PROBE_EPOCHS
            else f"not compared ({epochs} epochs timed, scaled)"
        )
        print(
            f"| {name} | {x.shape[0]:,} × {x.shape[1]:,}, {100 * density:.2f} % | {scaled:.1f} | {sparse_s:.1f} | "
            f"{scaled / sparse_s:.1f}× | {equal or 'NO'} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
