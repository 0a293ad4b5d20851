"""Planted-class graphs of any size, written as .npz graph files that ``gca train --dataset FILE`` reads.

Each node gets one of C classes and a heavy-tailed activity a_i (log-normal), so degrees spread like a real
graph's. An edge's source is drawn with probability ∝ a; with probability ``homophily`` its target is drawn ∝ a
among the source's class, else among all nodes. Self-loops and repeated pairs are dropped and the draw is topped
up until exactly E distinct undirected edges remain. Features are dense: a class centroid (unit Gaussian) scaled
by ``signal`` plus unit Gaussian noise, as float32 (``--float16``: stored as float16). Everything is vectorised
over the edges — ogbn-products' size (2.4 M nodes, 61.9 M edges) takes 2.5 minutes and 7 GB on 2 cores.

    python benchmarks/synthetic.py arxiv runs/arxiv_size.npz       # 169,343 nodes, 1,166,243 edges, 128 features
    python benchmarks/synthetic.py products runs/products_size.npz # 2,449,029 nodes, 61,859,140 edges, 100 features
    python benchmarks/synthetic.py tenth runs/tenth_size.npz       # 10⁷ nodes, 1.5·10⁸ edges, 128 float16 features
    python benchmarks/synthetic.py custom OUT.npz --nodes 20000 --edges 100000 --features 64 --classes 10

``tenth`` (a tenth of ogbn-papers100M's nodes, 3·10⁸ directed edges) and ``--stream`` are written by
:func:`write_planted_npz` without holding the graph twice: the edges' keys (int64, once) are drawn a block at a
time into one buffer, sorted and deduplicated in place, and every member of the .npz — the features a block of
rows at a time, each block from its own seeded generator — is streamed into the (uncompressed) archive. Its
graphs are planted the same way but drawn from other random streams than :func:`planted_graph`'s.

The sizes are those of OGB's ogbn-arxiv, ogbn-products and ogbn-papers100M (Hu et al., NeurIPS 2020); the graphs
are not theirs. The adjacency is stored once per edge (upper triangle), which gca reads as undirected.
"""

from __future__ import annotations

import argparse
import time
import zipfile
from pathlib import Path

import numpy as np

SIZES = {
    "arxiv": dict(nodes=169_343, edges=1_166_243, features=128, classes=40),
    "products": dict(nodes=2_449_029, edges=61_859_140, features=100, classes=47),
    "tenth": dict(nodes=10_000_000, edges=150_000_000, features=128, classes=172),
}
#: Sizes written by write_planted_npz (streamed) with float16 features.
STREAMED = {"tenth"}

#: Edges drawn, and feature rows written, per block of the streamed writer.
BLOCK = 1 << 22


def planted_graph(
    nodes: int, edges: int, features: int, classes: int, homophily: float = 0.7, signal: float = 0.5, seed: int = 0
) -> dict[str, np.ndarray]:
    """The arrays of a planted-class graph in the npz graph layout (module docstring)."""
    if edges > nodes * (nodes - 1) // 4:
        raise ValueError("too many edges for this many nodes: the draw would be mostly repeats")
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, classes, size=nodes)
    sampler = _Sampler(labels, rng.lognormal(0.0, 1.0, size=nodes), classes)
    keys = np.empty(0, dtype=np.int64)
    while keys.size < edges:  # top up until E distinct keys min·N + max remain
        keys = np.unique(np.concatenate([keys, sampler.keys(rng, int((edges - keys.size) * 1.05) + 1000, homophily)]))
    keys = np.sort(rng.permutation(keys)[:edges])
    col = keys % nodes
    indptr = np.zeros(nodes + 1, dtype=np.int64)
    np.cumsum(np.bincount(keys // nodes, minlength=nodes), out=indptr[1:])
    del keys

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


class _Sampler:
    """Draws ∝ activity, overall or within a node's class (one ``searchsorted`` each)."""

    def __init__(self, labels: np.ndarray, activity: np.ndarray, classes: int) -> None:
        self.labels = labels
        self.by_class = np.argsort(labels, kind="stable")
        self.cumulative = np.cumsum(activity[self.by_class])
        counts = np.bincount(labels, minlength=classes)
        end = np.cumsum(counts)
        start = end - counts
        self.low = np.where(start > 0, self.cumulative[np.maximum(start - 1, 0)], 0.0)
        self.high = self.cumulative[end - 1]
        self.total = self.cumulative[-1]

    def pick(self, point: np.ndarray) -> np.ndarray:
        return self.by_class[np.searchsorted(self.cumulative, point, side="right").clip(max=len(self.labels) - 1)]

    def keys(self, rng: np.random.Generator, draw: int, homophily: float) -> np.ndarray:
        """``draw`` edge draws as keys min·N + max (self-loops dropped)."""
        source = self.pick(rng.random(draw) * self.total)
        c = self.labels[source]
        same = rng.random(draw) < homophily
        target = self.pick(
            np.where(same, self.low[c] + rng.random(draw) * (self.high[c] - self.low[c]), rng.random(draw) * self.total)
        )
        keep = source != target
        n = len(self.labels)
        return np.minimum(source[keep], target[keep]) * n + np.maximum(source[keep], target[keep])


def _compact(buffer: np.ndarray, size: int, keep) -> int:
    """Keep ``buffer[:size]``'s entries where ``keep(block, start)`` is True, in place and in order, a block at a
    time (the write position never passes the read position); returns the new size."""
    written = 0
    for start in range(0, size, BLOCK):
        block = buffer[start : min(start + BLOCK, size)]
        kept = block[keep(block, start)]
        buffer[written : written + kept.size] = kept
        written += kept.size
    return written


def _distinct_keys(sampler: _Sampler, rng: np.random.Generator, edges: int, homophily: float) -> np.ndarray:
    """Exactly ``edges`` distinct keys, sorted, in one int64 buffer drawn a block at a time."""
    buffer = np.empty(int(edges * 1.1) + 1000, dtype=np.int64)
    target, size = int(edges * 1.05) + 1000, 0
    while size < edges:
        while size < target:  # top up, a block of draws at a time
            keys = sampler.keys(rng, min(BLOCK, target - size), homophily)
            buffer[size : size + keys.size] = keys
            size += keys.size
        buffer[:size].sort()
        size = _deduplicated(buffer, size)
    excess = size - edges
    if excess:  # drop a random `excess` of them
        dropped = np.sort(rng.choice(size, size=excess, replace=False))
        size = _compact(
            buffer,
            size,
            lambda block, start: ~np.isin(np.arange(start, start + block.size), dropped, assume_unique=True),
        )
    return buffer[:edges]


def _deduplicated(buffer: np.ndarray, size: int) -> int:
    """Sorted ``buffer[:size]`` without repeats, in place, a block at a time; returns the new size. Each block is
    compared with the original entry before it (kept aside: the writes may already have reached it)."""
    written, before = 0, None
    for start in range(0, size, BLOCK):
        block = buffer[start : min(start + BLOCK, size)]
        fresh = np.empty(block.size, dtype=bool)
        fresh[0] = before is None or block[0] != before
        np.not_equal(block[1:], block[:-1], out=fresh[1:])
        before = block[-1]
        kept = block[fresh]
        buffer[written : written + kept.size] = kept
        written += kept.size
    return written


def _member(archive: zipfile.ZipFile, name: str, dtype, shape: tuple[int, ...], blocks) -> None:
    """Stream one .npy member: its header, then each block's bytes."""
    header = {"descr": np.lib.format.dtype_to_descr(np.dtype(dtype)), "fortran_order": False, "shape": shape}
    with archive.open(f"{name}.npy", "w", force_zip64=True) as f:
        np.lib.format.write_array_header_2_0(f, header)
        for block in blocks:
            f.write(np.ascontiguousarray(block, dtype=dtype).tobytes())


def write_planted_npz(
    path: Path,
    nodes: int,
    edges: int,
    features: int,
    classes: int,
    homophily: float = 0.7,
    signal: float = 0.5,
    seed: int = 0,
    feature_dtype=np.float16,
) -> None:
    """A planted-class graph (module docstring) written to ``path`` member by member, block by block."""
    if edges > nodes * (nodes - 1) // 4:
        raise ValueError("too many edges for this many nodes: the draw would be mostly repeats")
    streams = np.random.SeedSequence(seed).spawn(3)
    rng = np.random.default_rng(streams[0])
    labels = rng.integers(0, classes, size=nodes)
    sampler = _Sampler(labels, rng.lognormal(0.0, 1.0, size=nodes), classes)
    keys = _distinct_keys(sampler, np.random.default_rng(streams[1]), edges, homophily)
    del sampler
    indptr = np.zeros(nodes + 1, dtype=np.int64)
    for start in range(0, edges, BLOCK):
        indptr[1:] += np.bincount(keys[start : start + BLOCK] // nodes, minlength=nodes)
    np.cumsum(indptr, out=indptr)
    centroids = np.random.default_rng(streams[2]).standard_normal((classes, features)).astype(np.float32)
    rows = max(1, BLOCK // max(features, 1))

    def feature_blocks():
        for number, start in enumerate(range(0, nodes, rows)):  # each block from its own seeded generator
            block_rng = np.random.default_rng([seed, 2, number])
            x = block_rng.standard_normal((min(rows, nodes - start), features), dtype=np.float32)
            x += signal * centroids[labels[start : start + rows]]
            yield x

    partial = path.with_name(path.name + ".partial.npz")
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_STORED, allowZip64=True) as archive:
        _member(
            archive,
            "adj_data",
            np.float32,
            (edges,),
            (np.ones(min(BLOCK, edges - s), np.float32) for s in range(0, edges, BLOCK)),
        )
        _member(
            archive, "adj_indices", np.int32, (edges,), (keys[s : s + BLOCK] % nodes for s in range(0, edges, BLOCK))
        )
        _member(archive, "adj_indptr", np.int64, (nodes + 1,), [indptr])
        _member(archive, "adj_shape", np.int64, (2,), [np.array([nodes, nodes])])
        _member(archive, "attr_matrix", feature_dtype, (nodes, features), feature_blocks())
        _member(archive, "labels", np.int64, (nodes,), [labels])
    partial.replace(path)


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
    parser.add_argument("--stream", action="store_true", help="write block by block (write_planted_npz)")
    parser.add_argument("--float16", action="store_true", help="with --stream: float16 features")
    args = parser.parse_args()
    size = SIZES.get(args.size) or dict(
        nodes=args.nodes, edges=args.edges, features=args.features, classes=args.classes
    )
    start = time.perf_counter()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    streamed = args.stream or args.size in STREAMED
    if streamed:
        dtype = np.float16 if args.float16 or args.size in STREAMED else np.float32
        write_planted_npz(
            args.out, **size, homophily=args.homophily, signal=args.signal, seed=args.seed, feature_dtype=dtype
        )
    else:
        arrays = planted_graph(**size, homophily=args.homophily, signal=args.signal, seed=args.seed)
        partial = args.out.with_name(args.out.name + ".partial.npz")
        np.savez(partial, **arrays)
        partial.replace(args.out)
    kind = "float16" if streamed and (args.float16 or args.size in STREAMED) else "float32"
    print(
        f"wrote {args.out}: {size['nodes']:,} nodes, {size['edges']:,} edges, {size['features']} {kind} features, "
        f"{size['classes']} classes in {time.perf_counter() - start:.1f} s"
    )


if __name__ == "__main__":
    main()
