"""Planted-class graphs of any size, written as .npz graph files that ``gca train --dataset FILE`` reads.

Degrees spread by a log-normal activity, an edge stays within its class with probability ``homophily``, features
are a class centroid times ``signal`` plus noise; all drawn and written a block at a time. The sizes are those of
ogbn-arxiv, ogbn-products and a tenth of ogbn-papers100M (not their graphs). Prints the file, its sizes, seconds.

    python benchmarks/synthetic.py arxiv|products|tenth OUT.npz
    python benchmarks/synthetic.py custom OUT.npz --nodes 20000 --edges 100000 --features 64 --classes 10 [--float16]
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
BLOCK = 1 << 22  # edges drawn, and feature values written, per block


def _edge_draws(labels: np.ndarray, activity: np.ndarray, classes: int):
    """``draw(rng, count, homophily)``: edges as keys min·N + max (self-loops dropped), ends drawn ∝ activity."""
    n, by_class = len(labels), np.argsort(labels, kind="stable")
    cumulative = np.cumsum(activity[by_class])
    counts = np.bincount(labels, minlength=classes)
    end = np.cumsum(counts)
    low = np.where(end > counts, cumulative[np.maximum(end - counts - 1, 0)], 0.0)  # where each class starts in the sum
    high, total = cumulative[end - 1], cumulative[-1]

    def pick(point: np.ndarray) -> np.ndarray:
        return by_class[np.searchsorted(cumulative, point, side="right").clip(max=n - 1)]

    def draw(rng: np.random.Generator, count: int, homophily: float) -> np.ndarray:
        source = pick(rng.random(count) * total)
        c, same = labels[source], rng.random(count) < homophily
        target = pick(np.where(same, low[c] + rng.random(count) * (high[c] - low[c]), rng.random(count) * total))
        keep = source != target
        return np.minimum(source[keep], target[keep]) * n + np.maximum(source[keep], target[keep])

    return draw


def _compact(buffer: np.ndarray, size: int, kept: np.ndarray | None = None) -> int:
    """Keeps ``buffer[:size]`` where ``kept`` (default: sorted entries' first of each run) in place; the new size."""
    written, last = 0, None  # last: the entry before the block, read before the writes may reach it
    for start in range(0, size, BLOCK):
        block = buffer[start : min(start + BLOCK, size)]
        if kept is None:
            mask = np.empty(block.size, dtype=bool)
            mask[0] = last is None or block[0] != last
            np.not_equal(block[1:], block[:-1], out=mask[1:])
        else:
            mask = kept[start : start + block.size]
        last, block = block[-1], block[mask]
        buffer[written : written + block.size] = block
        written += block.size
    return written


def _distinct_keys(draw, rng: np.random.Generator, edges: int, homophily: float) -> np.ndarray:
    """Exactly ``edges`` distinct keys, sorted, in one int64 buffer drawn a block at a time."""
    buffer = np.empty(int(edges * 1.1) + 1000, dtype=np.int64)
    target, size = int(edges * 1.05) + 1000, 0
    while size < edges:
        while size < target:  # top up, a block of draws at a time
            keys = draw(rng, min(BLOCK, target - size), homophily)
            buffer[size : size + keys.size] = keys
            size += keys.size
        buffer[:size].sort()
        size = _compact(buffer, size)
    if size > edges:  # drop a random excess of them
        kept = np.ones(size, dtype=bool)
        kept[rng.choice(size, size=size - edges, replace=False)] = False
        _compact(buffer, size, kept)
    return buffer[:edges]


def _member(archive: zipfile.ZipFile, name: str, dtype, shape: tuple[int, ...], blocks) -> None:
    """Streams one .npy member: its header, then each block's bytes."""
    header = {"descr": np.lib.format.dtype_to_descr(np.dtype(dtype)), "fortran_order": False, "shape": shape}
    with archive.open(f"{name}.npy", "w", force_zip64=True) as f:
        np.lib.format.write_array_header_2_0(f, header)
        for block in blocks:
            f.write(np.ascontiguousarray(block, dtype=dtype).tobytes())


def write_planted_npz(
    path: Path, nodes: int, edges: int, features: int, classes: int, homophily: float, signal: float, seed: int, dtype
) -> None:
    """A planted-class graph (module docstring) written to ``path`` member by member, block by block."""
    if edges > nodes * (nodes - 1) // 4:
        raise ValueError("too many edges for this many nodes: the draw would be mostly repeats")
    streams = np.random.SeedSequence(seed).spawn(3)
    rng = np.random.default_rng(streams[0])
    labels = rng.integers(0, classes, size=nodes)
    draw = _edge_draws(labels, rng.lognormal(0.0, 1.0, size=nodes), classes)
    keys = _distinct_keys(draw, np.random.default_rng(streams[1]), edges, homophily)
    del draw
    indptr = np.zeros(nodes + 1, dtype=np.int64)
    for start in range(0, edges, BLOCK):
        indptr[1:] += np.bincount(keys[start : start + BLOCK] // nodes, minlength=nodes)
    np.cumsum(indptr, out=indptr)
    centroids = np.random.default_rng(streams[2]).standard_normal((classes, features)).astype(np.float32)
    rows = max(1, BLOCK // max(features, 1))

    def feature_blocks():
        for number, start in enumerate(range(0, nodes, rows)):  # each block from its own seeded generator
            x = np.random.default_rng([seed, 2, number]).standard_normal((min(rows, nodes - start), features), "f4")
            yield x + signal * centroids[labels[start : start + rows]]

    parts = range(0, edges, BLOCK)
    partial = path.with_name(path.name + ".partial.npz")
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_STORED, allowZip64=True) as archive:
        _member(archive, "adj_data", np.float32, (edges,), (np.ones(min(BLOCK, edges - s), "f4") for s in parts))
        _member(archive, "adj_indices", np.int32, (edges,), (keys[s : s + BLOCK] % nodes for s in parts))
        _member(archive, "adj_indptr", np.int64, (nodes + 1,), [indptr])
        _member(archive, "adj_shape", np.int64, (2,), [np.array([nodes, nodes])])
        _member(archive, "attr_matrix", dtype, (nodes, features), feature_blocks())
        _member(archive, "labels", np.int64, (nodes,), [labels])
    partial.replace(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("size", choices=[*SIZES, "custom"])
    parser.add_argument("out", type=Path)
    parser.add_argument("--nodes", type=int, default=20_000)
    parser.add_argument("--edges", type=int, default=100_000)
    parser.add_argument("--features", type=int, default=64)
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--homophily", type=float, default=0.7)
    parser.add_argument("--signal", type=float, default=0.5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--float16", action="store_true", help="float16 features (tenth: always)")
    args = parser.parse_args()
    size = SIZES.get(args.size) or dict(
        nodes=args.nodes, edges=args.edges, features=args.features, classes=args.classes
    )
    half, start = args.float16 or args.size == "tenth", time.perf_counter()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    dtype = np.float16 if half else np.float32
    write_planted_npz(args.out, **size, homophily=args.homophily, signal=args.signal, seed=args.seed, dtype=dtype)
    print(
        f"wrote {args.out}: {size['nodes']:,} nodes, {size['edges']:,} edges, {size['features']} "
        f"{'float16' if half else 'float32'} features, {size['classes']} classes in {time.perf_counter() - start:.1f} s"
    )


if __name__ == "__main__":
    main()
