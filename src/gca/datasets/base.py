"""What every source of graphs shares: the loaded dataset, its error, and the checks that turn a file's arrays into
gca's tensors without silently changing them (float32 features, class labels, edge lists)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
import torch
from torch_geometric.data import Data

from ..environment import env_folder
from ..errors import UserError
from ..evaluate.splits import Split
from ..graph.sparse import remember_symmetric, scatter_positions

#: One split of the labelled nodes: (train, validation, test) node indices.


class DatasetError(UserError, RuntimeError):
    """A dataset cannot be found or read; the message is one line meant for the user."""


@dataclass
class LoadedDataset:
    """A graph plus what evaluation needs: ``splits`` are the splits its benchmark evaluates on (Wiki-CS's, OGB's)
    or ``None`` (random ones); ``public`` its public split where it has one (:mod:`gca.evaluate.splits`).

    ``named`` is true for the built-in and named datasets, whose shipped hyperparameters apply; a graph file
    read by path gets the defaults whatever its file is called.

    Parameters
    ----------
    name
        The dataset's display name (a file's stem for a graph read by path).
    data
        The graph: a PyG ``Data`` with ``x``, ``edge_index`` and, where labelled, ``y`` (−1 for an unlabelled node).
    splits
        The splits its benchmark evaluates on, each ``(train, val, test)`` arrays of node ids; ``None`` for random
        ones.
    public
        The dataset's public split (Planetoid's, Wiki-CS's, OGB's), if any.
    named
        Whether it is a built-in or named dataset (its shipped hyperparameters apply).
    node_ids
        The files' node id of row i (user files); ``None`` when ids are ``0..N-1``.
    directed
        ``None``: undirected exactly when every edge has its reverse; else as the graph was read.
    warnings
        One line each about the files read (repeated edges, unlabelled nodes, unread columns).
    class_names
        A label file's name of class number c, where the file named classes.
    feature_names
        The name of feature column j, where a sparse feature file named its features (words, tokens).
    """

    name: str
    data: Data
    splits: list[Split] | None = None
    public: list[Split] | None = None  # the dataset's public split (Planetoid's, Wiki-CS's, OGB's), if any
    named: bool = True
    #: the files' node id of row i (user files): an int64 array for integer ids, else a list of strings; None: 0..N-1
    node_ids: list[str] | np.ndarray | None = None
    directed: bool | None = None  # None: undirected exactly when every edge has its reverse
    warnings: list[str] = field(default_factory=list)  # one line each, about the files read
    class_names: list[str] | None = None  # a label file's name of class number c, where the file named them
    feature_names: list[str] | None = None  # a sparse feature file's name of column j, where it named them

    def __post_init__(self) -> None:
        # the Data carries the columns' names too, so a model fitted on it keeps them (GCA.feature_names_in_)
        if self.feature_names is not None and isinstance(self.data, Data):
            self.data.feature_names = list(self.feature_names)


def check_regular_file(path: Path, what: str) -> None:
    """A readable regular file: a FIFO, a device or a folder would block or fail in the middle of reading.

    Parameters
    ----------
    path
        The file to check; a missing path, a folder, a pipe or a device is a :class:`DatasetError`.
    what
        What the file holds, for the message (``"feature"``, ``"graph"``).
    """
    if not path.exists():
        raise DatasetError(f"{what} file {path} does not exist")
    if path.is_dir():
        raise DatasetError(f"{what} file {path} is a folder, not a file")
    if not path.is_file():
        raise DatasetError(f"{what} file {path} is not a regular file (a pipe or a device); give a file on disk")


#: The largest magnitude a float32 holds; features are trained on in float32.
FLOAT32_MAX = float(np.finfo(np.float32).max)


def float32_features(values: np.ndarray, path: str | Path) -> np.ndarray:
    """``values`` as float32, refusing what the cast would silently change: complex numbers (their imaginary part
    would be dropped) and magnitudes beyond float32's range (they would become infinite).

    Parameters
    ----------
    values
        The features as read.
    path
        The file they came from, for the message.
    """
    if values.dtype == np.float32:
        return values
    if np.iscomplexobj(values):
        raise DatasetError(f"feature file {path} holds complex numbers; give real-valued features")
    finite = values[np.isfinite(values)] if values.dtype.kind == "f" else values
    if finite.size and float(np.abs(finite).max()) > FLOAT32_MAX:
        raise DatasetError(
            f"feature file {path} holds values up to {float(np.abs(finite).max()):.3g}, beyond float32's range "
            f"(±{FLOAT32_MAX:.3g}); rescale the features"
        )
    return values.astype(np.float32)


def stored_features(values: np.ndarray, path: str | Path) -> np.ndarray:
    """A dense feature array as gca holds it: float16 stays float16 — half float32's memory, widened to float32 a
    block of rows at a time as it is read (:class:`gca.graph.features.DenseFeatures`) — and anything else becomes
    float32 (:func:`float32_features`).

    Parameters
    ----------
    values
        The features as read.
    path
        The file they came from, for the message.
    """
    return values if values.dtype == np.float16 else float32_features(values, path)


def class_labels(values: np.ndarray, path: str | Path, num_nodes: int) -> tuple[torch.Tensor, list[str]]:
    """One class number per node from a file's label column, and the warnings to print.

    Class numbers are the integers 0, 1, 2, …, stored as integers or as floats with an integral value. NaN marks
    a node without a label (OGB's files do): it becomes −1, is left out of evaluation, and a warning says how many.
    Anything else — a negative number, a fraction, an infinity, one label too many or too few — is an error naming
    the file and the first bad row, never a silent cast (−3 or 0.3 would otherwise become classes).

    Parameters
    ----------
    values
        The label column: one value per node.
    path
        The file it came from, for the message.
    num_nodes
        The graph's nodes (the number of labels required).
    """
    values = np.asarray(values)
    if values.ndim != 1 or values.shape[0] != num_nodes:
        raise DatasetError(f"{path}: the labels have shape {values.shape}; give one label per node ({num_nodes})")
    if values.dtype.kind not in "iuf" and values.dtype != np.bool_:
        raise DatasetError(f"{path}: the labels are {values.dtype} values; give class numbers 0, 1, 2, …")
    missing = np.isnan(values) if values.dtype.kind == "f" else np.zeros(num_nodes, dtype=bool)
    present = values[~missing]
    bad = (~np.isfinite(present) | (present < 0) | (present != np.floor(present))) if values.dtype.kind == "f" else (
        present < 0)  # fmt: skip
    if bad.any():
        row = int(np.flatnonzero(~missing)[np.argmax(bad)])
        raise DatasetError(
            f"{path}: the label of node {row} is {values[row].item()!r}; labels must be class numbers 0, 1, 2, … "
            "(NaN for a node without one)"
        )
    if present.size and float(present.max()) >= 2**31:
        raise DatasetError(f"{path}: a class number reaches {present.max():.0f}; number the classes 0, 1, 2, …")
    labels = np.full(num_nodes, -1, dtype=np.int64)
    labels[~missing] = present.astype(np.int64)
    count = int(missing.sum())
    notes = [f"{count} of {num_nodes} nodes in {path} have no label (NaN); they are left out of evaluation"] if count \
        else []  # fmt: skip
    return torch.from_numpy(labels), notes


def default_data_dir() -> Path:
    return env_folder("GCA_DATA_DIR", Path.home() / ".cache" / "gca" / "data")


def default_cache_dir() -> Path:
    return env_folder("GCA_CACHE_DIR", Path.home() / ".cache" / "gca")


def mask_splits(train_mask: torch.Tensor, val_mask: torch.Tensor, test_mask: torch.Tensor) -> list[Split]:
    """Public splits given as boolean masks of shape [N] or [N, S] (one column per split, as in Wiki-CS).

    Parameters
    ----------
    train_mask, val_mask, test_mask
        Boolean masks of shape ``[N]`` (one split) or ``[N, S]`` (S splits); a 1-D mask is shared by every split.

    Returns
    -------
    list[Split]
        ``(train, val, test)`` arrays of node ids, one triple per split.
    """

    def columns(mask: torch.Tensor, count: int) -> list[np.ndarray]:
        mask = mask.cpu().numpy().astype(bool)
        if mask.ndim == 1:
            return [np.flatnonzero(mask)] * count
        return [np.flatnonzero(mask[:, i]) for i in range(mask.shape[1])]

    count = max(m.shape[1] if m.dim() == 2 else 1 for m in (train_mask, val_mask, test_mask))
    return list(zip(columns(train_mask, count), columns(val_mask, count), columns(test_mask, count), strict=True))


def edge_list(source: np.ndarray, target: np.ndarray, num_nodes: int, directed: bool) -> tuple[torch.Tensor, int]:
    """(edge_index, how many listed edges repeat an earlier one) for the edges ``source[i] → target[i]``.

    A repeat is the same ordered pair listed again. On an undirected graph an edge and its reverse are the same
    edge, so a file listing both directions of every edge (the common export) has no repeats; the returned
    edge_index holds both directions of every edge once, sorted by source then target (int32 below 2³¹ nodes:
    :func:`undirected_edges`). A directed edge_index holds every listed pair once, sorted the same way: the
    repeats are merged here, so they are reported once, by the reader that counted them.

    Parameters
    ----------
    source, target
        The listed edges' endpoints, node ids in ``[0, num_nodes)``.
    num_nodes
        The graph's nodes.
    directed
        Keep each listed direction only; ``False`` adds every edge's reverse.
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
    :data:`EDGE_BLOCK` entries, for :func:`undirected_edges` — no whole row array.

    Parameters
    ----------
    indptr, indices
        The CSR arrays.
    """

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
    """Both directions of every listed edge, each once, sorted by (source, target) — a self-loop once — and how
    many listed ordered pairs repeat an earlier one, from ``blocks()``: an iterable of (source, target) arrays
    read twice, ``listed`` entries in all.

    Built a block at a time without a 64-bit array of the edges (on 3·10⁸ directed edges 3.4 GB, where SciPy's
    A + Aᵀ and a 64-bit edge list took about 7 GB): (1) each listed pair goes under its smaller endpoint (an
    int32 upper CSR and a direction byte per entry, counting-sort placed), (2) each row is sorted by (larger
    endpoint, direction) in blocks — equal neighbours are one edge, equal (neighbour, direction) a repeat —
    and compacted in place, (3) the upper rows are mirrored into the int32 ``[2, E]`` result, row u holding first
    the smaller neighbours (from the rows before it, in ascending order), then its own row.

    Parameters
    ----------
    blocks
        ``blocks()`` yields the listed edges as (source, target) arrays; it is called twice.
    num_nodes
        N.
    listed
        The listed entries in all.
    keep_loops
        Keep each self-loop once (``False``: leave them out — a GCN adds its own — and count them).
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
        span[local + (np.arange(low, high) - np.repeat(lower.indptr[row:stop], below[row:stop]))] = \
            lower.indices[low:high]  # fmt: skip
        own = np.repeat(full_ptr[row:stop] - full_ptr[row] + below[row:stop], counts[row:stop])
        first, last = int(upper_ptr[row]), int(upper_ptr[stop])
        span[own + (np.arange(first, last) - np.repeat(upper_ptr[row:stop], counts[row:stop]))] = upper[first:last]
    remember_symmetric(edge_index, n)  # built so: cleaning need not check it again
    return UndirectedEdges(edge_index, repeated, 0 if keep_loops else loops)


def repeated_edges_warning(path: str | Path, repeated: int, weighted: bool = False) -> str:
    return (f"{path} lists {repeated} duplicate edge{'s' if repeated != 1 else ''} (a pair listed again); merged"
            + (", their weights summed" if weighted else ""))  # fmt: skip


def edge_weights(values: np.ndarray, path: str | Path, where) -> np.ndarray | None:
    """A file's edge weights as float64, checked — or ``None`` when every one is 1, so that such a file is read,
    and trains, exactly as the same edges without weights.

    ``where(i)`` names listed edge i in a message (``line 7``, ``the adjacency entry at row 3, column 5``). Refused
    in one line naming the first such edge: values that are not real numbers, NaN or infinite weights, negative
    ones (a GCN's weights are non-negative; 0 is an edge that contributes nothing) and magnitudes beyond float32's
    range (the GCN's weights are float32: they would become infinite).

    Parameters
    ----------
    values
        The listed edges' weights.
    path
        The file they came from, for the message.
    where
        ``where(i)`` names listed edge i in a message.
    """
    values = np.asarray(values)
    if values.dtype.kind not in "biuf":
        raise DatasetError(f"{path}: the edge weights are {values.dtype} values; give real numbers")
    values = values.astype(np.float64, copy=False)
    if bool((values == 1).all()):
        return None
    for bad, what in ((~np.isfinite(values), "is not finite"), (values < 0, "is negative; weights must be ≥ 0"),
                      (np.abs(values) > FLOAT32_MAX, f"is beyond float32's range (±{FLOAT32_MAX:.4g}); rescale the "
                                                     "weights")):  # fmt: skip
        if bool(bad.any()):
            first = int(np.argmax(bad))
            raise DatasetError(f"{path}, {where(first)}: the edge weight {values[first]:g} {what}")
    return values


def weighted_edge_list(source: np.ndarray, target: np.ndarray, weight: np.ndarray, num_nodes: int, directed: bool,
                       path: str | Path, where, advice: str) -> tuple[torch.Tensor, torch.Tensor, int]:  # fmt: skip
    """(edge_index, edge_weight, how many listed edges repeat an earlier one): :func:`edge_list` for edges that
    carry the weights ``weight[i]`` (checked by :func:`edge_weights`), with the rules of ``Data.edge_weight``
    (:mod:`gca.graph.graph`).

    A repeated ordered pair is one edge whose weight is the **sum** of its listings'. On an undirected graph an
    edge and its reverse are the same edge: one listed in one direction gets the other with the same weight; one
    listed in both must carry the same weight both ways, or the file is refused naming the edge (``where(i)``) and
    what to do (``advice``).
    Returns both directions of every edge once, sorted by source then target, and float32 weights aligned with them.

    Parameters
    ----------
    source, target
        The listed edges' endpoints, node ids in ``[0, num_nodes)``.
    weight
        The listed edges' weights.
    num_nodes
        The graph's nodes.
    directed
        Keep each listed direction only; ``False`` adds every edge's reverse with the same weight.
    path
        The file the edges came from, for the messages.
    where
        ``where(i)`` names listed edge i in a message.
    advice
        What to do about unequal weights of an edge's two directions, for that message.
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
        raise DatasetError(f"{path}: the summed weights of repeated edges go beyond float32's range "
                           f"(±{FLOAT32_MAX:.4g}); rescale the weights")  # fmt: skip
    edge_index = torch.from_numpy(np.stack([pairs // n, pairs % n]))
    return edge_index, torch.from_numpy(sums.astype(np.float32)), repeated
