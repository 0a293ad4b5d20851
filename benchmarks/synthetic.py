"""Planted-class graphs of any size, written as .npz graph files that ``gca train --dataset FILE`` reads.

Each node gets one of C classes and a heavy-tailed activity a_i (log-normal), so degrees spread like a real
graph's. An edge's source is drawn with probability ∝ a; with probability ``homophily`` its target is drawn ∝ a
among the source's class, else among all nodes. Self-loops and repeated pairs are dropped and the draw is topped
up until exactly E distinct undirected edges remain. Features are dense: a class centroid (unit Gaussian) scaled
by ``signal`` plus unit Gaussian noise, as float32. Everything is vectorised over the edges — ogbn-products' size
(2.4 M nodes, 61.9 M edges) takes 2.5 minutes and 7 GB on 2 cores.

    python benchmarks/synthetic.py arxiv runs/arxiv_size.npz       # 169,343 nodes, 1,166,243 edges, 128 features
    python benchmarks/synthetic.py products runs/products_size.npz # 2,449,029 nodes, 61,859,140 edges, 100 features
    python benchmarks/synthetic.py custom OUT.npz --nodes 20000 --edges 100000 --features 64 --classes 10

The sizes are those of OGB's ogbn-arxiv and ogbn-products (Hu et al., NeurIPS 2020); the graphs are not theirs.
The adjacency is stored once per edge (upper triangle), which gca reads as undirected.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

SIZES = {
    "arxiv": dict(nodes=169_343, edges=1_166_243, features=128, classes=40),
    "products": dict(nodes=2_449_029, edges=61_859_140, features=100, classes=47),
}


def planted_graph(
    nodes: int,
    edges: int,
    features: int,
    classes: int,
    homophily: float = 0.7,
    signal: float = 0.5,
    seed: int = 0,
) -> dict[str, np.ndarray]:
    """The arrays of a planted-class graph in the npz graph layout (module docstring)."""
    if edges > nodes * (nodes - 1) // 4:
        raise ValueError("too many edges for this many nodes: the draw would be mostly repeats")
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, classes, size=nodes)
    activity = rng.lognormal(0.0, 1.0, size=nodes)
    # nodes grouped by class, with cumulative activity, so a draw ∝ activity inside a class is one searchsorted
    by_class = np.argsort(labels, kind="stable")
    cumulative = np.cumsum(activity[by_class])
    class_end = np.cumsum(np.bincount(labels, minlength=classes))
    class_start = class_end - np.bincount(labels, minlength=classes)
    low = np.where(class_start > 0, cumulative[np.maximum(class_start - 1, 0)], 0.0)
    high = cumulative[class_end - 1]
    total = cumulative[-1]

    keys = np.empty(0, dtype=np.int64)
    while keys.size < edges:
        draw = int((edges - keys.size) * 1.05) + 1000
        source = by_class[np.searchsorted(cumulative, rng.random(draw) * total, side="right").clip(max=nodes - 1)]
        same = rng.random(draw) < homophily
        c = labels[source]
        point = np.where(same, low[c] + rng.random(draw) * (high[c] - low[c]), rng.random(draw) * total)
        target = by_class[np.searchsorted(cumulative, point, side="right").clip(max=nodes - 1)]
        del point, same, c
        keep = source != target
        a, b = np.minimum(source[keep], target[keep]), np.maximum(source[keep], target[keep])
        keys = np.unique(np.concatenate([keys, a.astype(np.int64) * nodes + b]))
    keys = rng.permutation(keys)[:edges]
    keys.sort()
    row, col = keys // nodes, keys % nodes
    del keys
    indptr = np.zeros(nodes + 1, dtype=np.int64)
    np.cumsum(np.bincount(row, minlength=nodes), out=indptr[1:])

    centroids = rng.standard_normal((classes, features)).astype(np.float32)
    x = rng.standard_normal((nodes, features), dtype=np.float32)
    x += signal * centroids[labels]
    return {
        "adj_data": np.ones(edges, dtype=np.float32),
        "adj_indices": col.astype(np.int32),
        "adj_indptr": indptr,
        "adj_shape": np.array([nodes, nodes]),
        "attr_matrix": x,
        "labels": labels.astype(np.int64),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("size", choices=[*SIZES, "custom"])
    parser.add_argument("out", type=Path)
    parser.add_argument("--nodes", type=int, default=20_000)
    parser.add_argument("--edges", type=int, default=100_000)
    parser.add_argument("--features", type=int, default=64)
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--homophily", type=float, default=0.7)
    parser.add_argument("--signal", type=float, default=0.5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    size = SIZES.get(args.size) or dict(nodes=args.nodes, edges=args.edges, features=args.features,
                                        classes=args.classes)  # fmt: skip
    start = time.perf_counter()
    arrays = planted_graph(**size, homophily=args.homophily, signal=args.signal, seed=args.seed)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    partial = args.out.with_name(args.out.name + ".partial.npz")
    np.savez(partial, **arrays)
    partial.replace(args.out)
    print(f"wrote {args.out}: {size['nodes']:,} nodes, {size['edges']:,} edges, {size['features']} features, "
          f"{size['classes']} classes in {time.perf_counter() - start:.1f} s")  # fmt: skip


if __name__ == "__main__":
    main()
