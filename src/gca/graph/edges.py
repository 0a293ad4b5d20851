"""Edge lists built from the edges a file lists: both directions of every undirected edge once, sorted, repeats
counted (:func:`undirected_edges`, a block at a time), weighted edges with their rules (:func:`weighted_listed_edges`),
and the checks that refuse edge weights a GCN cannot train on (:func:`checked_edge_weights`)."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
import torch

from ..errors import DatasetError
from .csr import remember_symmetric, scatter_positions

#: The largest magnitude a float32 holds; features and edge weights are trained on in float32.
FLOAT32_MAX = float(np.finfo(np.float32).max)


def listed_edges(source: np.ndarray, target: np.ndarray, num_nodes: int, directed: bool) -> tuple[torch.Tensor, int]:
    """(edge_index, how many listed edges repeat an earlier one) for the edges ``source[i] → target[i]`` (node ids in
    ``[0, num_nodes)``).

    A repeat is the same ordered pair listed again. On an undirected graph (``directed=False``) an edge and its reverse
    are the same edge, so a file listing both directions of every edge has no repeats; the returned edge_index holds
    both directions of every edge once, sorted by source then target (int32 below 2³¹ nodes: :func:`undirected_edges`).
    A directed edge_index holds every listed pair once, sorted the same way: the repeats are merged here, and reported
    once, by the reader that counted them.
    """
    if directed:
        keys = torch.from_numpy(np.asarray(source, dtype=np.int64) * num_nodes + np.asarray(target, dtype=np.int64))
        unique = torch.unique(keys)  # sorted
        edge_index = torch.stack([unique // num_nodes, unique % num_nodes]) if num_nodes else unique.reshape(2, 0)
        return edge_index, int(keys.numel() - unique.numel())

    def blocks():
        for start in range(0, len(source), EDGE_BLOCK):
            yield source[start : start + EDGE_BLOCK], target[start : start + EDGE_BLOCK]

    edge_index, repeated, _ = undirected_edges(blocks, num_nodes, len(source))
    return edge_index, repeated


#: Listed edges handled at a time by :func:`undirected_edges`.
EDGE_BLOCK = 1 << 22


def csr_blocks(indptr: np.ndarray, indices: np.ndarray):
    """The edges of a CSR adjacency (a file's ``adj_indptr``/``adj_indices``) as (source, target) blocks of about
    :data:`EDGE_BLOCK` entries, for :func:`undirected_edges` — no whole row array."""

    def blocks():
        rows = len(indptr) - 1
        start = 0
        while start < rows:
            stop = max(start + 1, min(rows, int(np.searchsorted(indptr, indptr[start] + EDGE_BLOCK, "right")) - 1))
            low, high = int(indptr[start]), int(indptr[stop])
            yield np.repeat(np.arange(start, stop), np.diff(indptr[start : stop + 1])), indices[low:high]
            start = stop

    return blocks


class UndirectedEdges(NamedTuple):
    """:func:`undirected_edges`'s answer: the edge list, the listed pairs that repeat an earlier one, and the
    self-loops left out (``keep_loops=False``; else 0)."""

    edge_index: torch.Tensor
    repeated: int
    loops: int


def undirected_edges(blocks, num_nodes: int, listed: int, keep_loops: bool = True) -> UndirectedEdges:
    """Both directions of every listed edge, each once, sorted by (source, target) — a self-loop once, or left out and
    counted when not ``keep_loops`` — and how many listed ordered pairs repeat an earlier one, from ``blocks()``: an
    iterable of (source, target) arrays, called twice, ``listed`` entries in all.

    Built a block at a time without a 64-bit array of the edges or SciPy's A + Aᵀ (the method: docs/design/core.md).
    """
    n = num_nodes
    # a block's temporaries are some 40 bytes per entry: a small graph gets smaller blocks, so that they stay a
    # fraction of its own size (at most EDGE_BLOCK entries, for the largest)
    step = min(EDGE_BLOCK, max(1 << 16, listed // 8))
    given = blocks

    def blocks():  # the caller's blocks, cut to at most ``step`` entries
        for source, target in given():
            for start in range(0, len(source), step):
                yield source[start : start + step], target[start : start + step]

    kind = np.int32 if n < 2**31 else np.int64
    counts = np.zeros(n, dtype=np.int64)
    upper_form, last = True, None  # listed once, as (smaller, larger), sorted: the upper CSR already
    for source, target in blocks():  # (1) entries per smaller endpoint
        counts += np.bincount(np.minimum(source, target), minlength=n)
        if upper_form and source.size:
            later = (source[1:] > source[:-1]) | ((source[1:] == source[:-1]) & (target[1:] > target[:-1]))
            first_later = last is None or (source[0], target[0]) > last
            upper_form = bool((source < target).all() and later.all() and first_later)
            last = (source[-1], target[-1])
    upper_ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=upper_ptr[1:])
    upper = np.empty(listed, dtype=kind)  # the larger endpoint of each listed pair, grouped by the smaller
    repeated, written = 0, 0
    if upper_form:  # (1) and (2) are a copy: rows sorted, no repeats, no loops
        for _, target in blocks():
            upper[written : written + target.size] = target
            written += target.size
    else:
        forward = np.empty(listed, dtype=np.int8)  # listed smaller → larger (or a loop)
        cursor = upper_ptr[:-1].copy()
        for source, target in blocks():
            small, large = np.minimum(source, target), np.maximum(source, target)
            order, positions = scatter_positions(cursor, small, stable=False)  # (2) sorts each row
            upper[positions] = large[order]
            forward[positions] = (source <= target)[order]
        del cursor
        row = 0  # (2) sort each row, drop repeated neighbours, compact in place
        while row < n:
            reach = int(np.searchsorted(upper_ptr, upper_ptr[row] + step, "right")) - 1
            stop = max(row + 1, min(n, row + step, reach))
            low, high = int(upper_ptr[row]), int(upper_ptr[stop])
            local = np.repeat(np.arange(stop - row, dtype=np.int64), counts[row:stop])
            keys = (local * n + upper[low:high]) * 2 + forward[low:high]
            keys.sort()
            same = keys[1:] == keys[:-1]
            repeated += int(same.sum())
            pair = keys // 2  # local row · n + neighbour
            first = np.empty(pair.size, dtype=bool)
            first[:1] = True
            np.not_equal(pair[1:], pair[:-1], out=first[1:])
            kept = pair[first]
            upper[written : written + kept.size] = kept % n
            counts[row:stop] = np.bincount(kept // n, minlength=stop - row)
            written += kept.size
            row = stop
        del forward
    np.cumsum(counts, out=upper_ptr[1:])  # the distinct upper rows, upper[:written]
    # (3) mirror: row u = [its smaller neighbours v, ascending | its own upper row]. The smaller neighbours are the
    # transpose of the strict upper rows: SciPy's linear-time counting sort (tocsc, int32 below 2³¹ entries).
    strict, strict_ptr = upper[:written], upper_ptr
    # A loop is its own row's entry only, left out of the transpose. Row u's neighbours are ≥ u and ascending, so
    # its loop, if it has one, is its first entry: found per node, not per edge.
    firsts = upper_ptr[:-1]
    has_loop = counts > 0
    has_loop[has_loop] = upper[firsts[has_loop]] == np.flatnonzero(has_loop)
    loop_rows = has_loop.astype(np.int64)
    if has_loop.any():
        keep = np.ones(written, dtype=bool)
        keep[firsts[has_loop]] = False
        strict = upper[:written][keep]
        del keep
        strict_ptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(counts - loop_rows, out=strict_ptr[1:])
    loops = int(loop_rows.sum())
    if not keep_loops and loops:  # the rows without their loops are the rows from here on
        upper, upper_ptr, counts = strict, strict_ptr, counts - loop_rows
    lower = sp.csr_matrix((np.ones(strict.size, dtype=np.int8), strict, strict_ptr), shape=(n, n)).tocsc()
    del strict
    lower.data = None
    below = np.diff(lower.indptr)
    degree = counts + below
    total = int(degree.sum())
    edge_index = torch.empty(2, total, dtype=torch.int32 if kind is np.int32 else torch.long)
    pairs = edge_index.numpy()
    full_ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(degree, out=full_ptr[1:])
    del degree
    for row in range(0, n, 1 << 16):  # a block of nodes at a time: sources, smaller neighbours, own row
        stop = min(n, row + (1 << 16))
        sizes = np.diff(full_ptr[row : stop + 1])
        pairs[0, full_ptr[row] : full_ptr[stop]] = np.repeat(np.arange(row, stop, dtype=kind), sizes)
        local = np.repeat(full_ptr[row:stop] - full_ptr[row], below[row:stop])  # each row's first slot
        low, high = int(lower.indptr[row]), int(lower.indptr[stop])
        span = pairs[1, full_ptr[row] : full_ptr[stop]]
        span[local + (np.arange(low, high) - np.repeat(lower.indptr[row:stop], below[row:stop]))] = lower.indices[
            low:high
        ]
        own = np.repeat(full_ptr[row:stop] - full_ptr[row] + below[row:stop], counts[row:stop])
        first, last = int(upper_ptr[row]), int(upper_ptr[stop])
        span[own + (np.arange(first, last) - np.repeat(upper_ptr[row:stop], counts[row:stop]))] = upper[first:last]
    remember_symmetric(edge_index, n)  # built so: cleaning need not check it again
    return UndirectedEdges(edge_index, repeated, 0 if keep_loops else loops)


def repeated_edges_warning(path: str | Path, repeated: int, weighted: bool = False) -> str:
    return f"{path} lists {repeated} duplicate edge{'s' if repeated != 1 else ''} (a pair listed again); merged" + (
        ", their weights summed" if weighted else ""
    )


def checked_edge_weights(values: np.ndarray, path: str | Path, where) -> np.ndarray | None:
    """A file's edge weights as float64, checked — or ``None`` when every one is 1, so that such a file is read, and
    trains, exactly as the same edges without weights.

    Refused in one line naming the file (``path``) and the first such edge (``where(i)`` names listed edge i: ``line
    7``, ``the adjacency entry at row 3, column 5``): values that are not real numbers, NaN or infinite weights,
    negative ones (0 is an edge that contributes nothing) and magnitudes beyond float32's range (the GCN's weights are
    float32).
    """
    values = np.asarray(values)
    if values.dtype.kind not in "biuf":
        raise DatasetError(f"{path}: the edge weights are {values.dtype} values; give real numbers")
    values = values.astype(np.float64, copy=False)
    if bool((values == 1).all()):
        return None
    for bad, what in (
        (~np.isfinite(values), "is not finite"),
        (values < 0, "is negative; weights must be ≥ 0"),
        (np.abs(values) > FLOAT32_MAX, f"is beyond float32's range (±{FLOAT32_MAX:.4g}); rescale the weights"),
    ):
        if bool(bad.any()):
            first = int(np.argmax(bad))
            raise DatasetError(f"{path}, {where(first)}: the edge weight {values[first]:g} {what}")
    return values


def weighted_listed_edges(
    source: np.ndarray,
    target: np.ndarray,
    weight: np.ndarray,
    num_nodes: int,
    directed: bool,
    path: str | Path,
    where,
    advice: str,
) -> tuple[torch.Tensor, torch.Tensor, int]:
    """(edge_index, edge_weight, how many listed edges repeat an earlier one): :func:`listed_edges` for edges that carry
    the weights ``weight[i]`` (checked by :func:`checked_edge_weights`), with the rules of ``Data.edge_weight``
    (:mod:`gca.graph.graph`).

    A repeated ordered pair is one edge whose weight is the **sum** of its listings'. On an undirected graph an edge and
    its reverse are the same edge: one listed in one direction gets the other with the same weight; one listed in both
    must carry the same weight both ways, or the file (``path``) is refused naming the edge (``where(i)``) and what to
    do (``advice``). Returns both directions of every edge once, sorted by source then target, and float32 weights
    aligned with them.
    """
    n = max(num_nodes, 1)
    keys = np.asarray(source, dtype=np.int64) * n + np.asarray(target, dtype=np.int64)
    pairs, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    sums = np.bincount(inverse.reshape(-1), weights=weight, minlength=pairs.size)
    repeated = int(keys.size - pairs.size)
    if not directed:
        u, v = pairs // n, pairs % n
        reverse = v * n + u
        at = np.minimum(np.searchsorted(pairs, reverse), max(pairs.size - 1, 0))
        both = pairs[at] == reverse if pairs.size else np.zeros(0, dtype=bool)
        differ = both & (sums != sums[at])
        if bool(differ.any()):
            i = int(np.argmax(differ))
            raise DatasetError(
                f"{path}: the graph is undirected but edge ({u[i]}, {v[i]}) has weight {sums[i]:g} ({where(first[i])})"
                f" and ({v[i]}, {u[i]}) has {sums[at[i]]:g} ({where(first[at[i]])}); {advice}"
            )
        missing = ~both
        order = np.argsort(np.concatenate([pairs, reverse[missing]]), kind="stable")
        pairs = np.concatenate([pairs, reverse[missing]])[order]
        sums = np.concatenate([sums, sums[missing]])[order]
    if bool((np.abs(sums) > FLOAT32_MAX).any()):
        raise DatasetError(
            f"{path}: the summed weights of repeated edges go beyond float32's range "
            f"(±{FLOAT32_MAX:.4g}); rescale the weights"
        )
    edge_index = torch.from_numpy(np.stack([pairs // n, pairs % n]))
    return edge_index, torch.from_numpy(sums.astype(np.float32)), repeated
