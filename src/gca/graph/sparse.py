"""Sparse operators on a graph: the sparse matrix training multiplies by, and the GCN's normalised adjacency.

:func:`normalized_adjacency` builds D̂^{-1/2}(A + I)D̂^{-1/2} once per view as a :class:`SparseMatrix` (a CSR tensor
whose product with dense features has its own backward); :func:`layered_normalized_adjacency` builds a sampled
subgraph's operator hop by hop, and :class:`AdjacencyRows` an undirected graph's a block of rows at a time; the CSR
tensors they are built from (:func:`square_csr`, :func:`csr_transpose`) are made here too.

**Weighted graphs.** An edge list may be an :class:`EdgeList` carrying one non-negative weight per edge
(``edge_weight``) and optionally ``[E, D]`` edge features (``edge_attr``). Every operator here then uses the weighted
adjacency, as PyTorch Geometric's ``GCNConv`` with ``edge_weight`` does:

    M = D̃^{-1/2} (A_w + I) D̃^{-1/2},   (A_w)_vu = w_uv for every edge u → v,   D̃_vv = 1 + Σ_{u → v} w_uv,

so M_vu = w_uv / sqrt(D̃_uu D̃_vv) and every self-loop has weight 1. An edge of weight 0 contributes nothing. Without
weights every w_uv is 1; with every weight 1.0 the operators equal the unweighted ones bit for bit.

Design notes: docs/design/core.md.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp
import torch

from .csr import count_ids


class EdgeList(torch.Tensor):
    """A ``[2, E]`` edge index that carries its edges' values: ``edge_weight`` ([E] float32 or ``None``) and
    ``edge_attr`` ([E, …] or ``None``), row i belonging to column i.

    Made with :func:`edge_list`. Torch operations on it return plain tensors (its torch-function override is disabled),
    so an indexed, permuted or concatenated copy never keeps values that no longer line up with its columns; :meth:`to`,
    :meth:`cpu` and :meth:`long`, which keep the column order, carry them along. Read them with :func:`edge_values`.
    """

    __torch_function__ = torch._C._disabled_torch_function_impl

    edge_weight: torch.Tensor | None
    edge_attr: torch.Tensor | None

    def _carried(self, out: torch.Tensor) -> torch.Tensor:
        if out is self:
            return self
        device = out.device
        weight, attr = self.edge_weight, self.edge_attr
        return edge_list(out, None if weight is None else weight.to(device), None if attr is None else attr.to(device))

    def to(self, *args, **kwargs) -> torch.Tensor:  # type: ignore[override]
        return self._carried(torch.Tensor.to(self, *args, **kwargs))

    def cpu(self, *args, **kwargs) -> torch.Tensor:  # type: ignore[override]
        return self._carried(torch.Tensor.cpu(self, *args, **kwargs))

    def long(self, *args, **kwargs) -> torch.Tensor:  # type: ignore[override]
        return self._carried(torch.Tensor.long(self, *args, **kwargs))

    def __deepcopy__(self, memo: dict) -> torch.Tensor:
        import copy

        return edge_list(
            torch.Tensor.clone(self), copy.deepcopy(self.edge_weight, memo), copy.deepcopy(self.edge_attr, memo)
        )


def edge_list(
    edge_index: torch.Tensor, edge_weight: torch.Tensor | None = None, edge_attr: torch.Tensor | None = None
) -> torch.Tensor:
    """``edge_index`` ([2, E]) carrying ``edge_weight`` ([E]) and ``edge_attr`` ([E, D]) as an :class:`EdgeList`;
    ``edge_index`` itself (a plain tensor) when both are ``None``. The index's storage is shared, not copied."""
    if edge_weight is None and edge_attr is None:
        return edge_index.as_subclass(torch.Tensor) if isinstance(edge_index, EdgeList) else edge_index
    count = edge_index.shape[1]
    for name, values in (("edge_weight", edge_weight), ("edge_attr", edge_attr)):
        if values is not None and values.shape[0] != count:
            raise ValueError(f"{name} has {values.shape[0]} rows for {count} edges")
    out = (
        edge_index.as_subclass(EdgeList)
        if not isinstance(edge_index, EdgeList)
        else edge_index.as_subclass(torch.Tensor).as_subclass(EdgeList)
    )  # a new object: never relabel the caller's
    out.edge_weight, out.edge_attr = edge_weight, edge_attr
    return out


def edge_values(edge_index: torch.Tensor) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    """``(edge_weight, edge_attr)`` carried by an :class:`EdgeList`; ``(None, None)`` for a plain tensor."""
    return getattr(edge_index, "edge_weight", None), getattr(edge_index, "edge_attr", None)


def csr_tensor(crow: torch.Tensor, col: torch.Tensor, values: torch.Tensor, size: tuple[int, int]) -> torch.Tensor:
    """A torch CSR tensor from arrays built here (columns sorted within rows, in range), without torch's beta-feature
    warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return torch.sparse_csr_tensor(crow, col, values, size=size, check_invariants=False)


def square_csr(
    row: torch.Tensor, col: torch.Tensor, values: torch.Tensor, n: int, columns: int | None = None
) -> torch.Tensor:
    """The n×n (or n×``columns``) CSR tensor with entries ``values`` at (row, col) (no duplicates), columns sorted
    within rows."""
    columns = n if columns is None else columns
    order = torch.argsort(row * columns + col)
    row, col, values = row[order], col[order], values[order]
    crow = torch.zeros(n + 1, dtype=torch.long, device=row.device)
    crow[1:] = torch.cumsum(torch.bincount(row, minlength=n), 0)
    return csr_tensor(crow, col, values, (n, columns))


def csr_transpose(crow: torch.Tensor, col: torch.Tensor, values: torch.Tensor, size: tuple[int, int]) -> torch.Tensor:
    """The CSR tensor of Mᵀ for the CSR arrays of M (``size`` = M's shape), rows ascending within each of its rows — the
    arrays :func:`square_csr` gives, entry for entry. On the CPU SciPy's linear-time counting sort (``tocsc``);
    elsewhere a stable sort of the columns."""
    rows, columns = size
    if (
        crow.device.type == "cpu"
        and values.dtype in (torch.float32, torch.float64)
        and max(col.numel(), rows, columns) < 2**31
    ):
        csc = sp.csr_matrix(
            (values.detach().numpy(), col.numpy().astype(np.int32), crow.numpy().astype(np.int32)), shape=size
        ).tocsc()
        return csr_tensor(
            torch.from_numpy(csc.indptr.astype(np.int64)),
            torch.from_numpy(csc.indices.astype(np.int64)),
            torch.from_numpy(csc.data),
            (columns, rows),
        )
    return _sorted_transpose(crow, col, values, size)


def _sorted_transpose(
    crow: torch.Tensor, col: torch.Tensor, values: torch.Tensor, size: tuple[int, int]
) -> torch.Tensor:
    """:func:`csr_transpose` on any device: a stable sort of the columns keeps each column's entries in row order."""
    rows, columns = size
    order = torch.sort(col, stable=True).indices
    row = torch.repeat_interleave(torch.arange(rows, device=crow.device), crow.diff(), output_size=col.numel())
    out_crow = torch.zeros(columns + 1, dtype=torch.long, device=crow.device)
    torch.cumsum(torch.bincount(col, minlength=columns), 0, out=out_crow[1:])
    return csr_tensor(out_crow, row[order], values[order], (columns, rows))


def segment_ranges(start: torch.Tensor, length: torch.Tensor) -> torch.Tensor:
    """concat(arange(s, s + l) for s, l in zip(start, length)), computed without a Python loop."""
    total = int(length.sum())
    if total == 0:
        return torch.empty(0, dtype=torch.long, device=start.device)
    offsets = torch.cumsum(length, 0) - length  # where each segment begins in the output
    within = torch.arange(total, device=start.device) - torch.repeat_interleave(offsets, length)
    return torch.repeat_interleave(start, length) + within


def _inverse_sqrt_degree(index: torch.Tensor, num_nodes: int, weight: torch.Tensor | None) -> torch.Tensor:
    """D̃^{-1/2} with D̃_vv = 1 + (number of entries of ``index`` equal to v), or 1 + the sum of their weights (summed
    in float64, so whole-number weights give exactly the unweighted degrees)."""
    if weight is None:
        return (torch.bincount(index, minlength=num_nodes) + 1).to(torch.float32).rsqrt()
    degree = torch.ones(num_nodes, dtype=torch.float64, device=index.device)
    degree.index_add_(0, index, weight.to(device=index.device, dtype=torch.float64))
    return degree.to(torch.float32).rsqrt()


def _weighted(values: torch.Tensor, weight: torch.Tensor | None) -> torch.Tensor:
    """Entries times their edges' weights (unchanged without weights)."""
    return values if weight is None else values * weight.to(device=values.device, dtype=values.dtype)


class SparseMatrix:
    """A constant sparse matrix M (CSR) with its transpose, so that ``M @ dense`` has a cheap backward pass.

    Autograd flows to the dense operand only: ∂(M H)/∂H applied to G is Mᵀ G, computed with the stored transpose.
    ``matrix`` is converted to CSR; ``transpose`` is Mᵀ as CSR when at hand (``None``: computed, or M itself when
    ``symmetric``).
    """

    def __init__(self, matrix: torch.Tensor, transpose: torch.Tensor | None = None, symmetric: bool = False):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # torch: "sparse CSR support is in beta"
            self.matrix = matrix.to_sparse_csr() if matrix.layout != torch.sparse_csr else matrix
            if symmetric:
                self.transpose = self.matrix
            elif transpose is None:
                self.transpose = self.matrix.to_sparse_coo().t().coalesce().to_sparse_csr()
            else:
                self.transpose = transpose
        self.shape = tuple(self.matrix.shape)

    def __matmul__(self, dense: torch.Tensor) -> torch.Tensor:
        return _SparseDenseMatmul.apply(self.matrix, self.transpose, dense)

    def to(self, device: torch.device | str) -> SparseMatrix:
        out = object.__new__(SparseMatrix)
        out.matrix = self.matrix.to(device)
        out.transpose = out.matrix if self.transpose is self.matrix else self.transpose.to(device)
        out.shape = self.shape
        return out

    def to_dense(self) -> torch.Tensor:
        return self.matrix.to_dense()

    def row_slice(self, start: int, stop: int) -> torch.Tensor:
        """Rows start … stop − 1 as a CSR tensor sharing this matrix's arrays (for products without autograd)."""
        crow, col, values = self.matrix.crow_indices(), self.matrix.col_indices(), self.matrix.values()
        low, high = int(crow[start]), int(crow[stop])
        return csr_tensor(crow[start : stop + 1] - low, col[low:high], values[low:high], (stop - start, self.shape[1]))

    def take_rows(self, index: torch.Tensor) -> SparseMatrix:
        """The rows ``index`` (in that order) as a new matrix with its own transpose, for a sampled subgraph's features;
        gathered with tensor operations, no loop over rows."""
        crow, col, values = self.matrix.crow_indices(), self.matrix.col_indices(), self.matrix.values()
        index = index.to(device=crow.device, dtype=torch.long)
        start = crow[index]
        length = crow[index + 1] - start
        out_crow = torch.zeros(index.numel() + 1, dtype=torch.long, device=crow.device)
        torch.cumsum(length, 0, out=out_crow[1:])
        positions = segment_ranges(start, length)
        size = (index.numel(), self.shape[1])
        columns, entries = col[positions], values[positions]
        transpose = csr_transpose(out_crow, columns, entries, size)  # shared by both views' weight gradients
        return SparseMatrix(csr_tensor(out_crow, columns, entries, size), transpose)

    def read_columns(self, index: torch.Tensor) -> SparseMatrix:
        """The columns ``index`` (ascending) of a matrix that has no entry in any other column, numbered from 0: M H
        equals this matrix times the rows ``index`` of H. Entries keep their order, so each row of the product sums the
        same terms in the same order; the transpose drops its empty rows (no sort)."""
        col = self.matrix.col_indices()
        position = torch.full((self.shape[1],), -1, dtype=col.dtype, device=col.device)
        position[index] = torch.arange(index.numel(), dtype=col.dtype, device=col.device)
        renumbered = position[col]
        if renumbered.numel() and bool((renumbered < 0).any()):
            raise ValueError("read_columns: an entry lies in a column not in index; give every column that holds one")
        matrix = csr_tensor(
            self.matrix.crow_indices(), renumbered, self.matrix.values(), (self.shape[0], index.numel())
        )
        starts = self.transpose.crow_indices()  # a kept row of Mᵀ ends where the next starts: none between has entries
        transpose = csr_tensor(
            torch.cat([starts[index], starts[-1:]]),
            self.transpose.col_indices(),
            self.transpose.values(),
            (index.numel(), self.shape[0]),
        )
        return SparseMatrix(matrix, transpose)

    def keep(self, rows: torch.Tensor | None = None, columns: torch.Tensor | None = None) -> SparseMatrix:
        """The same-shaped matrix holding only the entries in the ``rows`` and ``columns`` marked true (boolean masks;
        ``None``: every one), in their order, with its transpose filtered from the stored one (no sort)."""
        return SparseMatrix(_keep_entries(self.matrix, rows, columns), _keep_entries(self.transpose, columns, rows))


def _keep_entries(matrix: torch.Tensor, rows: torch.Tensor | None, columns: torch.Tensor | None) -> torch.Tensor:
    """The CSR ``matrix`` without its entries outside the rows and columns marked true (:meth:`SparseMatrix.keep`);
    the kept entries stay in their order, so a product's row sums run over the same terms, less the dropped ones."""
    crow, col, values = matrix.crow_indices(), matrix.col_indices(), matrix.values()
    keep = None if columns is None else columns[col]
    if rows is not None:
        in_row = torch.repeat_interleave(rows, crow.diff(), output_size=col.numel())
        keep = in_row if keep is None else keep & in_row
    if keep is None:
        return matrix
    before = torch.zeros(col.numel() + 1, dtype=crow.dtype, device=crow.device)  # kept entries before each one
    torch.cumsum(keep, 0, out=before[1:])
    kept = keep.nonzero().squeeze(1)  # once for both arrays: boolean indexing would find them twice, slower
    return csr_tensor(before[crow], col.index_select(0, kept), values.index_select(0, kept), tuple(matrix.shape))


class _SparseDenseMatmul(torch.autograd.Function):
    """M H in M's precision (fp32), also inside a bf16 autocast region (:mod:`gca.precision`): a sparse product is
    memory-bound, has no bf16 kernel on CPUs, and carries the degree scaling; a bf16 H is widened first."""

    @staticmethod
    def forward(ctx, matrix: torch.Tensor, transpose: torch.Tensor, dense: torch.Tensor) -> torch.Tensor:
        ctx.transpose = transpose
        with torch.autocast(dense.device.type, enabled=False):
            return matrix @ dense.to(matrix.dtype)

    @staticmethod
    def backward(ctx, grad_out: torch.Tensor):
        if not ctx.needs_input_grad[2]:  # input features: no gradient, no transposed product
            return None, None, None
        return None, None, ctx.transpose @ grad_out.contiguous()


def scipy_to_sparse(matrix: sp.spmatrix) -> SparseMatrix:
    """A SciPy sparse matrix as a float32 :class:`SparseMatrix`."""
    csr = sp.csr_matrix(matrix, dtype=np.float32)
    csr.sort_indices()
    csc = csr.tocsc()  # the CSC arrays of M are the CSR arrays of Mᵀ
    as_csr = csr_tensor(
        torch.from_numpy(csr.indptr.astype(np.int64)),
        torch.from_numpy(csr.indices.astype(np.int64)),
        torch.from_numpy(csr.data),
        csr.shape,
    )
    as_csr_t = csr_tensor(
        torch.from_numpy(csc.indptr.astype(np.int64)),
        torch.from_numpy(csc.indices.astype(np.int64)),
        torch.from_numpy(csc.data),
        (csr.shape[1], csr.shape[0]),
    )
    return SparseMatrix(as_csr, as_csr_t)


def normalized_adjacency(
    edge_index: torch.Tensor, num_nodes: int, symmetric: bool, coalesced: bool = False
) -> SparseMatrix:
    """D̂^{-1/2} Â D̂^{-1/2} with Â = A + I, as the N × N operator M with (M H)_v = Σ_{u → v} M_vu h_u.

    D̂ counts incoming edges plus the self-loop (the degree on undirected graphs). ``edge_index`` must be free of
    self-loops and duplicates; ``symmetric`` says it holds both directions of every edge, ``coalesced`` that it is also
    sorted by (source, target), as a :class:`~gca.graph.graph.Graph`'s is, which lets a symmetric matrix be built
    without sorting. An :class:`EdgeList` with weights gives the weighted operator (module docstring); ``symmetric``
    then also asserts that both directions of an edge carry the same weight.
    """
    weight = edge_values(edge_index)[0]
    edge_index = edge_index.long()
    if symmetric and coalesced:
        return _symmetric_normalized_adjacency(edge_index, num_nodes, weight)
    source, target, values = _normalized_entries(edge_index, num_nodes, weight)
    matrix = square_csr(target, source, values, num_nodes)
    transpose = None if symmetric else square_csr(source, target, values, num_nodes)
    return SparseMatrix(matrix, transpose, symmetric=symmetric)


def normalized_adjacency_entries(edge_index: torch.Tensor, num_nodes: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The unweighted operator of :func:`normalized_adjacency` as its entries: a ``[2, E + N]`` (row, column) index —
    row v holds v's in-neighbours u (edges u → v), then one entry per node for its self-loop — and the float32 values. A
    self-loop listed in ``edge_index`` is dropped (each node has the one of I, weight 1); a repeated edge counts as
    often as it is listed; edge weights are not read. The entries and their order are PyTorch Geometric's
    ``gcn_norm(..., add_self_loops=True)``, transposed."""
    edge_index = edge_index.as_subclass(torch.Tensor).long()
    edge_index = edge_index[:, edge_index[0] != edge_index[1]]
    source, target, values = _normalized_entries(edge_index, num_nodes)
    return torch.stack([target, source]), values


def _normalized_entries(
    edge_index: torch.Tensor, num_nodes: int, weight: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(source, target, value) of every entry of D̂^{-1/2} Â D̂^{-1/2}: the edges, then one self-loop per node;
    D̂ counts incoming edges plus the self-loop (with ``weight``, sums the incoming weights plus 1)."""
    loops = torch.arange(num_nodes, device=edge_index.device)
    source = torch.cat([edge_index[0], loops])
    target = torch.cat([edge_index[1], loops])
    if weight is None:
        inv_sqrt = torch.bincount(target, minlength=num_nodes).to(torch.float32).rsqrt()
        return source, target, inv_sqrt[source] * inv_sqrt[target]
    inv_sqrt = _inverse_sqrt_degree(edge_index[1], num_nodes, weight)
    weight = torch.cat(
        [
            weight.to(device=loops.device, dtype=torch.float32),
            torch.ones(num_nodes, dtype=torch.float32, device=loops.device),
        ]
    )
    return source, target, _weighted(inv_sqrt[source] * inv_sqrt[target], weight)


def layered_normalized_adjacency(
    edge_index: torch.Tensor, num_nodes: int, layer_rows: Sequence[int]
) -> list[SparseMatrix]:
    """Per encoder layer, the rows of :func:`normalized_adjacency` whose output is read later, for a sampled subgraph
    whose ``num_nodes`` nodes are numbered hop by hop (anchors first).

    Layer i of an L-layer encoder is needed only at the ``layer_rows[i]`` leading nodes (those within L − 1 − i hops of
    the anchors), and reads the previous layer's output only at its ``layer_rows[i − 1]`` leading nodes (all nodes for
    the first layer). From the last layer back, each layer keeps only the rows the next one reads (ascending) — a view
    reads fewer where it dropped edges — and the next layer's columns are renumbered to them (:func:`_read_rows_only`);
    the last layer keeps every anchor, in order. The degrees are the whole subgraph's, so every kept entry equals the
    full matrix's. An entry outside the block (nodes not numbered hop by hop) is a :class:`ValueError`. An
    :class:`EdgeList` with weights gives the weighted operator's rows.
    """
    growing = any(later > earlier for earlier, later in zip(layer_rows, layer_rows[1:], strict=False))
    if growing or layer_rows[0] > num_nodes:
        raise ValueError(
            f"layer rows {tuple(layer_rows)} must not grow from layer to layer, nor exceed the {num_nodes} nodes"
        )
    source, target, values = _normalized_entries(edge_index.long(), num_nodes, edge_values(edge_index)[0])
    keep = target < layer_rows[0]
    first = square_csr(target[keep], source[keep], values[keep], layer_rows[0], num_nodes)
    crow, col, val = first.crow_indices(), first.col_indices(), first.values()
    blocks, columns = [], num_nodes
    for rows in layer_rows:
        # a later layer's rows lead the first layer's: its block is a prefix of the first block's arrays (no sort)
        end = int(crow[rows])
        block = (crow[: rows + 1], col[:end], val[:end], (rows, columns))
        if end and int(block[1].max()) >= columns:
            raise ValueError(
                f"a node below row {rows} reads node {int(block[1].max())} beyond the {columns} "
                "computed: the subgraph's nodes are not numbered hop by hop"
            )
        blocks.append(block)
        columns = rows
    # each transpose by a counting sort (csr_transpose): the arrays a sort of the entries gives, entry for entry
    return [SparseMatrix(csr_tensor(*block), csr_transpose(*block)) for block in _read_rows_only(blocks)[0]]


CsrArrays = tuple[torch.Tensor, torch.Tensor, torch.Tensor, tuple[int, int]]  # crow, col, values, shape


def _read_rows_only(blocks: list[CsrArrays]) -> tuple[list[CsrArrays], list[torch.Tensor | None]]:
    """The layers' blocks (CSR arrays; block i + 1's columns are block i's rows) with, from the last back, each
    block but the last at the rows the next one reads, and the next one's columns renumbered to them; and per block
    the original rows kept (``None``: all). Every kept row keeps its entries in their order."""
    blocks, kept = list(blocks), [None] * len(blocks)
    for i in range(len(blocks) - 1, 0, -1):
        crow, col, values, (rows, columns) = blocks[i]
        read = torch.zeros(columns, dtype=torch.bool, device=col.device)
        read[col] = True
        if bool(read.all()):
            continue
        index = read.nonzero().squeeze(1)
        position = torch.full((columns,), -1, dtype=col.dtype, device=col.device)
        position[index] = torch.arange(index.numel(), dtype=col.dtype, device=col.device)
        blocks[i] = (crow, position[col], values, (rows, index.numel()))
        crow, col, values, (_, columns) = blocks[i - 1]
        start = crow[index]
        length = crow[index + 1] - start
        kept_crow = torch.zeros(index.numel() + 1, dtype=crow.dtype, device=crow.device)
        torch.cumsum(length, 0, out=kept_crow[1:])
        positions = segment_ranges(start, length)
        blocks[i - 1] = (kept_crow, col[positions], values[positions], (index.numel(), columns))
        kept[i - 1] = index
    return blocks, kept


def _symmetric_normalized_adjacency(
    edge_index: torch.Tensor, num_nodes: int, weight: torch.Tensor | None = None
) -> SparseMatrix:
    """:func:`normalized_adjacency` of a symmetric, coalesced edge_index without a sort: each row's self-loop is slotted
    in after the row's columns below the diagonal. ``weight`` (symmetric: w_uv = w_vu) gives the weighted operator."""
    device = edge_index.device
    row, col = edge_index
    counts = torch.bincount(row, minlength=num_nodes)
    below = torch.bincount(row[col < row], minlength=num_nodes)  # columns before the diagonal, per row
    crow = torch.zeros(num_nodes + 1, dtype=torch.long, device=device)
    torch.cumsum(counts + 1, 0, out=crow[1:])
    inv_sqrt = (
        (counts + 1).to(torch.float32).rsqrt() if weight is None else _inverse_sqrt_degree(row, num_nodes, weight)
    )
    total = row.numel() + num_nodes
    columns = torch.empty(total, dtype=torch.long, device=device)
    values = torch.empty(total, dtype=torch.float32, device=device)
    # an edge moves right by one slot per earlier row's self-loop, and by one more if it lies above the diagonal
    slot = torch.arange(row.numel(), device=device) + row + (col > row)
    columns[slot] = col
    values[slot] = _weighted(inv_sqrt[row] * inv_sqrt[col], weight)
    del slot
    nodes = torch.arange(num_nodes, device=device)
    diagonal = crow[:-1] + below
    columns[diagonal] = nodes
    values[diagonal] = inv_sqrt * inv_sqrt
    return SparseMatrix(csr_tensor(crow, columns, values, (num_nodes, num_nodes)), symmetric=True)


class AdjacencyRows:
    """D̂^{-1/2} Â D̂^{-1/2} of an undirected graph, built a block of rows at a time (:meth:`row_slice`) from its
    coalesced ``edge_index`` (both directions of every edge, sorted by source — a :class:`~gca.graph.graph.Graph`'s).

    Only the row pointers and D̂^{-1/2} (N values each) are kept besides the edge list, whose target row is the CSR
    column array. Each block equals the same rows of :func:`normalized_adjacency`, entry for entry — weighted when
    ``edge_index`` is an :class:`EdgeList` with (symmetric) weights.
    """

    def __init__(self, edge_index: torch.Tensor, num_nodes: int) -> None:
        self.weight = edge_values(edge_index)[0]
        source, self.columns = edge_index[0], edge_index[1]
        counts = count_ids(source, num_nodes)  # a block at a time: no 64-bit copy of the source row
        self.indptr = torch.zeros(num_nodes + 1, dtype=torch.long, device=source.device)
        torch.cumsum(counts, 0, out=self.indptr[1:])
        self.inv_sqrt = (
            (counts + 1).to(torch.float32).rsqrt()
            if self.weight is None
            else _inverse_sqrt_degree(source, num_nodes, self.weight)
        )
        self.shape = (num_nodes, num_nodes)

    def row_slice(self, start: int, stop: int) -> torch.Tensor:
        """Rows start … stop − 1 (self-loops included) as a CSR tensor with sorted columns, built without a sort as
        :func:`_symmetric_normalized_adjacency` builds the whole matrix."""
        low, high, device = int(self.indptr[start]), int(self.indptr[stop]), self.columns.device
        counts = self.indptr[start + 1 : stop + 1] - self.indptr[start:stop]
        local = torch.repeat_interleave(torch.arange(stop - start, device=device), counts)
        row, col = local + start, self.columns[low:high].long()
        crow = torch.zeros(stop - start + 1, dtype=torch.long, device=device)
        torch.cumsum(counts + 1, 0, out=crow[1:])
        columns = torch.empty(int(crow[-1]), dtype=torch.long, device=device)
        values = torch.empty(int(crow[-1]), dtype=torch.float32, device=device)
        slot = torch.arange(high - low, device=device) + local + (col > row)
        columns[slot] = col
        values[slot] = _weighted(
            self.inv_sqrt[row] * self.inv_sqrt[col], None if self.weight is None else self.weight[low:high]
        )
        diagonal = crow[:-1] + torch.bincount(local[col < row], minlength=stop - start)
        nodes = torch.arange(start, stop, device=device)
        columns[diagonal] = nodes
        values[diagonal] = self.inv_sqrt[nodes] * self.inv_sqrt[nodes]
        return csr_tensor(crow, columns, values, (stop - start, self.shape[1]))
