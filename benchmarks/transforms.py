"""What a call of gca's PyTorch Geometric transforms costs on Cora, cached and in an ordinary PyG pipeline.

Printed as medians of per-call times: a cache miss (everything computed, then one draw); the same graph again (the
draw alone); ``NormalizeFeatures`` alone and the ``Compose([NormalizeFeatures(), augment])`` pipeline, which hands
a new ``x`` of the same values at every call; what that pipeline would cost if every call missed, and its ratio to
the measured one; the number of graphs the transform holds. Use ``--threads 1`` where the cores are shared.

    python benchmarks/transforms.py --root /tmp/pl [--calls 300] [--threads 1]   # a writable root with Cora/raw/
"""

from __future__ import annotations

import argparse

import torch
import torch_geometric.transforms as T
from harness import machine, median_seconds, table
from torch_geometric.datasets import Planetoid

from gca.augment.transforms import AdaptiveAugmentation, AdaptiveEdgeDropping


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", default="/tmp/pl", help="Planetoid root holding Cora/raw/")
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's own)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    print(f"{machine()}; {args.calls} calls each")

    data = Planetoid(args.root, "Cora")[0]
    print(f"Cora: {data.num_nodes} nodes, {data.edge_index.shape[1]} directed edges, {data.x.shape[1]} features")
    rows = []
    for make in (AdaptiveAugmentation, AdaptiveEdgeDropping):
        cached, augment = make(), make()
        pipeline = Planetoid(args.root, "Cora", transform=T.Compose([T.NormalizeFeatures(), augment]))
        normalize_only = Planetoid(args.root, "Cora", transform=T.NormalizeFeatures())
        t_miss = median_seconds(lambda make=make: make()(data), max(3, args.calls // 30))  # new: nothing held
        t_cached = median_seconds(lambda cached=cached: cached(data), args.calls)
        t_pipeline = median_seconds(lambda pipeline=pipeline: pipeline[0], args.calls)
        t_normalize = median_seconds(lambda normalize_only=normalize_only: normalize_only[0], args.calls)
        rows.append((make.__name__, t_miss, t_cached, t_pipeline, t_normalize, len(augment._graphs)))

    row = table(
        "transform | cache miss ms | same graph ms | NormalizeFeatures alone ms | Compose ms | Compose if every call "
        "missed ms | missed / measured | graphs held"
    )
    for name, t_miss, t_cached, t_pipeline, t_normalize, held in rows:
        missed = t_normalize + t_miss  # what a pipeline cost whose every call recomputed everything
        row(
            f"{name} | {t_miss * 1e3:.1f} | {t_cached * 1e3:.2f} | {t_normalize * 1e3:.2f} | {t_pipeline * 1e3:.2f} | "
            f"{missed * 1e3:.1f} | {missed / t_pipeline:.1f}× | {held}"
        )


if __name__ == "__main__":
    main()
