"""Edge-index utilities: the index dtype, counts and SciPy CSR forms of edge lists, the pairing of reverse edges,
content keys, and the checks of an edge list's order, self-loops and symmetry (remembered per edge list, so a
graph's symmetry is found once). Edge lists that carry weights, and the CSR tensors training multiplies by, are
:mod:`gca.graph.sparse`'s.
"""

from __future__ import annotations

import weakref
import zlib

import numpy as np
import scipy.sparse as sp
import torch


def index_dtype(num_nodes: int) -> torch.dtype:
    """The dtype a cleaned graph's edge list is kept in: int32 while node ids fit (N < 2³¹), else int64."""
    return torch.int32 if num_nodes < 2**31 else torch.long


def scatter_positions(cursor: np.ndarray, rows: np.ndarray, stable: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Positions for entries destined to ``rows`` (any order): each row's next free slots from ``cursor`` — in the
    entries' order within a row when ``stable`` —; ``cursor`` advances past them. Returns (order, positions): entry
    ``order[i]`` goes to ``positions[i]``."""
    if stable:  # ties in input order: one introsort of (row, position) keys, cheaper than a stable sort of rows
        order = np.argsort(rows.astype(np.int64) * max(rows.size, 1) + np.arange(rows.size))
    else:
        order = np.argsort(rows)
    ordered = rows[order]
    index = np.arange(ordered.size)
    first = np.empty(ordered.size, dtype=bool)
    first[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    heads = np.flatnonzero(first)
    positions = cursor[ordered] + (index - np.maximum.accumulate(np.where(first, index, 0)))
    cursor[ordered[heads]] += np.diff(np.append(heads, ordered.size))
    return order, positions


def edge_list_csr(edge_index: torch.Tensor, num_nodes: int, data: np.ndarray) -> sp.csr_matrix:
    """A (num_nodes × num_nodes) SciPy CSR whose row v holds the edges (v, u) of an ``edge_index`` sorted by source,
    with ``data`` (one value per edge) as its entries; indices int32 below 2³¹ edges and nodes. Its column array is the
    edge list's target row itself; only the row pointers are new."""
    kind = np.int32 if max(edge_index.shape[1], num_nodes) < 2**31 else np.int64
    source, target = edge_index.cpu().numpy()
    indptr = np.zeros(num_nodes + 1, dtype=kind)
    np.cumsum(np.bincount(source, minlength=num_nodes), out=indptr[1:])
    return sp.csr_matrix((data, np.asarray(target, dtype=kind), indptr), shape=(num_nodes, num_nodes))


#: Edges handled at a time by :func:`pair_reverse_edges`.
PAIR_BLOCK = 1 << 22


def pair_reverse_edges(edge_index: torch.Tensor, num_nodes: int, units: np.ndarray | None = None) -> bool:
    """Whether every edge (u, v) of a coalesced ``edge_index`` (sorted by source, then target, no repeats) has its
    reverse (v, u) — self-loops pair with themselves —; with ``units`` (E entries), also each non-loop edge's
    augmentation unit written there: the forward edges (u < v) numbered in ``edge_index`` order, (v, u) in the unit of
    (u, v).

    Reads :data:`PAIR_BLOCK` edges at a time with only node-sized counts (the method: docs/design/core.md).
    """
    source, target = edge_index.cpu().numpy()
    count = source.size
    step = min(PAIR_BLOCK, max(1 << 16, count // 8))  # a small graph's temporaries stay a fraction of its size
    before = np.zeros(num_nodes + 1, dtype=np.int64)  # F(u): forward edges in rows < u
    start_of = np.zeros(num_nodes + 1, dtype=np.int64)  # start(u): the row's first position
    lower = np.zeros(num_nodes, dtype=np.int64)  # L(u)
    for start in range(0, count, step):
        s, t = source[start : start + step], target[start : start + step]
        forward = s < t
        before[1:] += np.bincount(s[forward], minlength=num_nodes)
        lower += np.bincount(s[~forward], minlength=num_nodes)
        start_of[1:] += np.bincount(s, minlength=num_nodes)
    np.cumsum(before, out=before)
    np.cumsum(start_of, out=start_of)
    cursor = before[:-1].copy()
    seen = 0
    for start in range(0, count, step):
        s, t = source[start : start + step], target[start : start + step]
        forward = s < t
        number = int(forward.sum())
        if units is not None:
            units[start : start + s.size][forward] = seen + np.arange(number)
        seen += number
        backward = np.flatnonzero(s > t)  # (v, u), v > u: the reverse of a forward edge in an earlier row
        reached = t[backward]
        order, positions = scatter_positions(cursor, reached)
        reached = reached[order]
        if not (positions < before[1:][reached]).all():
            return False
        where = start_of[reached] + lower[reached] + (positions - before[reached])
        if not (target[where] == s[backward[order]]).all():
            return False
        if units is not None:
            units[start + backward[order]] = positions
    return bool(np.array_equal(cursor, before[1:]))


def content_key(tensor: torch.Tensor) -> tuple:
    """What a cache compares to tell whether ``tensor`` still holds the values it was computed from: its shape, dtype
    and layout, its version counter, and a CRC-32 of its bytes.

    The checksum is taken of every CPU tensor (a write through a NumPy view moves no version counter) and of an
    inference tensor elsewhere (it keeps no counter); other accelerator tensors are keyed by their version counter. A
    sparse tensor is keyed by its index and value arrays. A change that PyTorch's counter misses and that leaves the
    CRC-32 as it was goes unnoticed (probability 2⁻³²).
    """
    if tensor.layout == torch.sparse_coo:
        parts = (tensor._indices(), tensor._values())
    elif tensor.layout == torch.sparse_csr:
        parts = (tensor.crow_indices(), tensor.col_indices(), tensor.values())
    elif tensor.layout == torch.sparse_csc:
        parts = (tensor.ccol_indices(), tensor.row_indices(), tensor.values())
    else:
        parts = (tensor,)
    keys = []
    for part in parts:
        version = _version(part)
        checksum = None
        if part.device.type == "cpu" or version is None:
            flat = part.detach().cpu().contiguous().reshape(-1).view(torch.uint8)  # its bytes, whatever the dtype
            checksum = zlib.crc32(flat.numpy())
        keys.append((version, checksum))
    return tuple(tensor.shape), tensor.dtype, tensor.layout, tuple(keys)


def _version(tensor: torch.Tensor) -> int | None:
    """The tensor's version counter, which every in-place change PyTorch makes bumps; ``None`` for an inference
    tensor, which keeps none."""
    try:
        return tensor._version
    except RuntimeError:
        return None


def _is_symmetric(edge_index: torch.Tensor, num_nodes: int) -> bool:
    """Whether every edge of a coalesced ``edge_index`` has its reverse (:func:`pair_reverse_edges`: a block at a
    time, with no CSC form of A beside its CSR). The last answer is kept for the same tensor, unmodified
    (:func:`content_key`), and node count: cleaning a graph and its degree centrality both ask."""
    if edge_index.shape[1] == 0:
        return True
    held, key, nodes, answer = _LAST_SYMMETRY
    now = content_key(edge_index) if held is not None and held() is edge_index and nodes == num_nodes else None
    if now is not None and key == now:
        return answer
    answer = pair_reverse_edges(edge_index, num_nodes)
    _LAST_SYMMETRY[:] = [weakref.ref(edge_index), now or content_key(edge_index), num_nodes, answer]
    return answer


def has_reverse_edge(edge_index: torch.Tensor, num_nodes: int) -> bool:
    """Whether some edge (u, v), u ≠ v, of a coalesced ``edge_index`` has its reverse (v, u) — ``False`` when every edge
    is listed one way only. Looked up among the sorted keys u·N + v, :data:`PAIR_BLOCK` edges at a time, stopping at the
    first found."""
    source, target = edge_index.cpu().numpy()
    keys = source.astype(np.int64) * num_nodes + target
    for start in range(0, keys.size, PAIR_BLOCK):
        s, t = source[start : start + PAIR_BLOCK], target[start : start + PAIR_BLOCK]
        back = s > t  # (u, v) with u < v is found from its reverse, if that is listed
        query = t[back].astype(np.int64) * num_nodes + s[back]
        found = np.minimum(np.searchsorted(keys, query), keys.size - 1)
        if query.size and bool((keys[found] == query).any()):
            return True
    return False


def remember_symmetric(edge_index: torch.Tensor, num_nodes: int) -> None:
    """Record that the coalesced ``edge_index`` holds the reverse of every edge, where it was built so (the edge-list
    loaders' output): kept as a computed answer of :func:`_is_symmetric` is, while the tensor is unchanged."""
    _LAST_SYMMETRY[:] = [weakref.ref(edge_index), content_key(edge_index), num_nodes, True]


def known_symmetric(edge_index: torch.Tensor, num_nodes: int) -> bool:
    """Whether ``edge_index``, unchanged, is the one last found (or recorded) symmetric — a look-up, no check."""
    held, key, nodes, answer = _LAST_SYMMETRY
    return bool(
        answer and held is not None and held() is edge_index and nodes == num_nodes and key == content_key(edge_index)
    )


#: (weak reference to an edge_index, its content_key, node count, whether it is symmetric): _is_symmetric's last
#: answer
_LAST_SYMMETRY: list = [None, None, -1, False]


def _is_coalesced(edge_index: torch.Tensor, num_nodes: int) -> bool:
    """Sorted by (source, target) without repeats — what loaders usually give — so sorting again can be skipped.
    Compared pairwise a block at a time (each block overlapping the next by one edge): no 64-bit keys and no
    edge-sized flags."""
    count = edge_index.shape[1]
    for start in range(0, max(count - 1, 0), PAIR_BLOCK):
        row, col = edge_index[:, start : start + PAIR_BLOCK + 1]
        if not bool(((row[1:] > row[:-1]) | ((row[1:] == row[:-1]) & (col[1:] > col[:-1]))).all()):
            return False
    return True


def is_sorted(values: torch.Tensor) -> bool:
    """Whether the 1-D ``values`` never decrease, read a block at a time (blocks overlapping by one)."""
    windows = (values[s : s + PAIR_BLOCK + 1] for s in range(0, max(values.numel() - 1, 0), PAIR_BLOCK))
    return all(bool((w[1:] >= w[:-1]).all()) for w in windows)


def has_self_loops(edge_index: torch.Tensor) -> bool:
    """Whether some edge (u, u) is listed, read a block at a time."""
    return any(bool((block[0] == block[1]).any()) for block in edge_index.split(PAIR_BLOCK, dim=1))


def binary_adjacency(edge_index: torch.Tensor, num_nodes: int) -> sp.csr_matrix:
    """A with A[u, v] = 1 for every edge u → v as a float64 SciPy CSR matrix with sorted columns; duplicate edges count
    once and self-loops are dropped (for centrality and random walks, which take the graph as given)."""
    row, col = edge_index.cpu().numpy()
    keep = row != col
    adj = sp.csr_matrix((np.ones(int(keep.sum())), (row[keep], col[keep])), shape=(num_nodes, num_nodes))
    adj.data[:] = 1.0  # duplicate (u, v) pairs were summed: count them once
    adj.sort_indices()
    return adj


def count_ids(ids: torch.Tensor, num_nodes: int) -> torch.Tensor:
    """How often each node id occurs, counted 2²² ids at a time: no 64-bit copy of an int32 edge row."""
    counts = torch.zeros(num_nodes, dtype=torch.long, device=ids.device)
    for block in ids.split(1 << 22):
        counts += torch.bincount(block, minlength=num_nodes)
    return counts
