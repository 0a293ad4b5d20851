"""The authors' evaluator on the CPU: 20 splits fitted together against one split at a time, at 1 and 2 threads.

On GCA's encoder at its initial weights, per thread count: seconds of 20 one-split calls of
:func:`gca.evaluate.probe.adam_probe` against one call on all 20, their ratio, and whether every split's accuracies
and chosen epoch agree. ``--raw``: Table 3's Raw-features row, the dense path against the default sparse one
(``--dense-epochs K``: K of the dense path's 3,000 epochs, scaled).

    python benchmarks/probe.py --data-dir DATA [--dataset Amazon-Photo --dataset Coauthor-CS]
                               [--splits 20] [--threads 1,2] [--raw [--dense-epochs K]]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from harness import machine, table

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
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--dataset", action="append")
    parser.add_argument("--splits", type=int, default=20)
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--raw", action="store_true", help="time the raw-features row: dense path against sparse")
    parser.add_argument("--dense-epochs", type=int, default=None, help="with --raw: epochs of the dense path")
    args = parser.parse_args()
    if args.raw:
        return raw_rows(args)
    print(machine())
    row = table("dataset | N × d, classes | threads | one at a time (s) | together (s) | speed-up | equal")
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
            row(
                f"{name} | {z.shape[0]:,} × {z.shape[1]}, {classes} | {threads} | {alone_s:.1f} | {together_s:.1f} | "
                f"{alone_s / together_s:.1f}× | {'yes' if equal else 'NO'}"
            )


def raw_rows(args: argparse.Namespace) -> None:
    from gca.evaluate.classification import raw_feature_input

    print(machine())
    row = table("dataset | N × d, non-zero | dense path (s) | sparse path (s) | speed-up | equal")
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
        row(
            f"{name} | {x.shape[0]:,} × {x.shape[1]:,}, {100 * density:.2f} % | {scaled:.1f} | {sparse_s:.1f} | "
            f"{scaled / sparse_s:.1f}× | {equal or 'NO'}"
        )


if __name__ == "__main__":
    main()
