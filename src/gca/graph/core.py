"""Checks a PyTorch Geometric ``Data`` object and prepares the sparse forms that training uses.

Nothing here is specific to one view: :func:`prepare_graph` runs once per graph, and
:func:`normalized_adjacency` runs once per view to build D̂^{-1/2}(A + I)D̂^{-1/2} as a sparse matrix.
"""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
import torch
from torch_geometric.data import Data
from torch_geometric.utils import coalesce, remove_self_loops

from ..errors import UserError

#: Node features with at most this fraction of non-zeros are kept as a sparse matrix.
SPARSE_FEATURE_DENSITY = 0.25


def index_dtype(num_nodes: int) -> torch.dtype:
    """The dtype a cleaned graph's edge list is kept in: int32 while node ids fit (N < 2³¹), else int64 — half
    the bytes per edge on every graph that exists today (ogbn-papers100M has 1.1·10⁸ nodes)."""
    return torch.int32 if num_nodes < 2**31 else torch.long


class GraphError(UserError, ValueError):
    """The input graph cannot be used; the message is one line meant for the user."""


class SparseMatrix:
    """A constant sparse matrix M (CSR) with its transpose, so that ``M @ dense`` has a cheap backward pass.

    Autograd flows to the dense operand only: ∂(M H)/∂H applied to G is Mᵀ G, computed with the stored
    transpose instead of transposing a CSR matrix on every step.
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
        """Rows start…stop − 1 as a CSR tensor sharing this matrix's arrays (for products without autograd)."""
        crow, col, values = self.matrix.crow_indices(), self.matrix.col_indices(), self.matrix.values()
        low, high = int(crow[start]), int(crow[stop])
        return csr_tensor(crow[start : stop + 1] - low, col[low:high], values[low:high], (stop - start, self.shape[1]))

    def take_rows(self, index: torch.Tensor) -> SparseMatrix:
        """The rows ``index`` (in that order) as a new matrix with its own transpose, for a sampled subgraph's
        features; gathered with tensor operations, no loop over rows."""
        crow, col, values = self.matrix.crow_indices(), self.matrix.col_indices(), self.matrix.values()
        index = index.to(device=crow.device, dtype=torch.long)
        start = crow[index]
        length = crow[index + 1] - start
        out_crow = torch.zeros(index.numel() + 1, dtype=torch.long, device=crow.device)
        torch.cumsum(length, 0, out=out_crow[1:])
        positions = segment_ranges(start, length)
        row = torch.repeat_interleave(torch.arange(index.numel(), device=crow.device), length)
        size = (index.numel(), self.shape[1])
        rows = csr_tensor(out_crow, col[positions], values[positions], size)
        transpose = square_csr(col[positions], row, values[positions], size[1], size[0])
        return SparseMatrix(rows, transpose)


class _SparseDenseMatmul(torch.autograd.Function):
    @staticmethod
    def forward(ctx, matrix: torch.Tensor, transpose: torch.Tensor, dense: torch.Tensor) -> torch.Tensor:
        ctx.transpose = transpose
        return matrix @ dense

    @staticmethod
    def backward(ctx, grad_out: torch.Tensor):
        if not ctx.needs_input_grad[2]:  # input features: no gradient, no transposed product
            return None, None, None
        return None, None, ctx.transpose @ grad_out.contiguous()


class DenseFeatures:
    """Dense features X held as stored and read as float32: float16 from a file that keeps them so (half the
    memory of float32; ogbn-products' 2.4 M × 100 features take 0.49 GB instead of 0.98) is widened row block by
    row block as it is read. Mini-batch steps read the rows they sample (:meth:`take_rows`); whole-graph training,
    message-passing encoders and the first layer of inference build the float32 matrix once (:meth:`to_dense`)
    and let it go when done."""

    def __init__(self, raw: torch.Tensor) -> None:
        self.raw = raw
        self.shape = tuple(raw.shape)

    def _read(self, rows: torch.Tensor, where: torch.Tensor | slice) -> torch.Tensor:
        return rows.float()

    def take_rows(self, index: torch.Tensor) -> torch.Tensor:
        index = index.to(self.raw.device)
        return self._read(self.raw[index], index)

    def row_slice(self, start: int, stop: int) -> torch.Tensor:
        return self._read(self.raw[start:stop], slice(start, stop))

    def to_dense(self) -> torch.Tensor:
        return self._read(self.raw, slice(None))

    def to(self, device: torch.device | str) -> DenseFeatures:
        return DenseFeatures(self.raw.to(device))


class RowNormalizedFeatures(DenseFeatures):
    """X̂ = X / ‖x_v‖₁ row by row (all-zero rows stay zero) for dense features X kept as stored: the encoder's
    input under ``feature_norm = "row"``, with rows divided as they are read.

    The augmentation's feature weights need X itself, so holding X̂ as well would keep two copies of the features
    for the whole run (1 GB more at ogbn-products' size). Every value equals :func:`normalize_rows`'s, bit for bit
    (of float16 features: of their float32 values).
    """

    def __init__(self, raw: torch.Tensor, norms: torch.Tensor) -> None:
        super().__init__(raw)
        self.norms = norms  # [N, 1] float32 row sums of |x|, 1 for all-zero rows

    @classmethod
    def of(cls, raw: np.ndarray) -> RowNormalizedFeatures:
        """``raw`` (float32 or float16, C-contiguous; shared, not copied) with its row norms, computed in blocks."""
        norms = np.empty((raw.shape[0], 1), dtype=np.float32)
        for start in range(0, raw.shape[0], ROW_BLOCK):
            norms[start : start + ROW_BLOCK] = _l1_norms(raw[start : start + ROW_BLOCK].astype(np.float32, copy=False))
        return cls(torch.from_numpy(raw), torch.from_numpy(norms))

    def _read(self, rows: torch.Tensor, where: torch.Tensor | slice) -> torch.Tensor:
        return torch.div(rows, self.norms[where])  # float16 rows are widened by the division itself: no second copy

    def to(self, device: torch.device | str) -> RowNormalizedFeatures:
        return RowNormalizedFeatures(self.raw.to(device), self.norms.to(device))


Features = torch.Tensor | SparseMatrix | DenseFeatures  # what a Graph holds as the encoder's input


def dense_input(features: Features) -> torch.Tensor | SparseMatrix:
    """The encoder's input as a tensor or a :class:`SparseMatrix` (dense features held as stored: built whole)."""
    return features.to_dense() if isinstance(features, DenseFeatures) else features


def read_rows(features: Features, index: torch.Tensor) -> torch.Tensor | SparseMatrix:
    """The rows ``index`` of the encoder's input, of the same kind (a sampled subgraph's features)."""
    return features[index] if isinstance(features, torch.Tensor) else features.take_rows(index)


#: Edge ids hashed at a time by :meth:`Graph.fingerprint` (as int64, so a digest never depends on the dtype kept).
_DIGEST_CHUNK = 1 << 24


@dataclass
class Graph:
    """A cleaned graph ready for GCA.

    ``edge_index`` is coalesced and free of self-loops, in :func:`index_dtype` (int32 below 2³¹ nodes; operators
    built from it index in int64). On undirected graphs it holds both directions of every edge, sorted by source —
    the CSR of A that the sampler and inference read without a copy — and ``undirected_edges`` holds each edge once
    as (u, v) with u < v — the unit that topology augmentation keeps or removes. ``features`` is a
    :class:`SparseMatrix` (sparse bag-of-words data), a dense tensor, or dense rows normalised as they are read
    (:class:`RowNormalizedFeatures`; :func:`dense_input` and :func:`read_rows` take any of the three).
    """

    num_nodes: int
    edge_index: torch.Tensor
    directed: bool
    features: Features
    raw_features: sp.csr_matrix | np.ndarray
    y: torch.Tensor | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def num_features(self) -> int:
        return int(self.features.shape[1])

    @property
    def undirected_edges(self) -> torch.Tensor:
        row, col = self.edge_index
        return self.edge_index[:, row < col]

    def fingerprint(self) -> str:
        """A digest of the graph as trained on — node count, direction, edges and raw feature values — so a
        training checkpoint can tell the graph it was made on from any other."""
        digest = hashlib.blake2b(digest_size=16)
        digest.update(f"{self.num_nodes},{self.directed},{self.edge_index.shape[1]}".encode())
        flat = self.edge_index.cpu().reshape(-1)
        for start in range(0, flat.numel(), _DIGEST_CHUNK):  # the bytes of int64 ids, whatever the dtype kept
            digest.update(flat[start : start + _DIGEST_CHUNK].long().numpy().tobytes())
        raw = self.raw_features
        parts = (raw.indptr, raw.indices, raw.data) if sp.issparse(raw) else (np.ascontiguousarray(raw),)
        digest.update(str(raw.shape).encode())
        for part in parts:
            digest.update(np.ascontiguousarray(part).tobytes())
        return digest.hexdigest()

    def to(self, device: torch.device | str) -> Graph:
        return Graph(
            num_nodes=self.num_nodes,
            edge_index=self.edge_index.to(device),
            directed=self.directed,
            features=self.features.to(device),
            raw_features=self.raw_features,
            y=None if self.y is None else self.y.to(device),
            warnings=list(self.warnings),
        )


def prepare_graph(data: Data, directed: bool | None = None, feature_norm: str = "none") -> Graph:
    """Validate ``data`` and build a :class:`Graph`.

    ``directed=None`` treats the graph as undirected exactly when every edge has its reverse. Duplicate edges and
    self-loops are removed (GCN adds its own self-loops) and reported in ``Graph.warnings``; NaN/inf features,
    out-of-range edge ids and size mismatches raise :class:`GraphError`. ``feature_norm="row"`` scales each row of
    the encoder's input to sum to 1 in absolute value (all-zero rows stay zero, :func:`normalize_rows`);
    ``raw_features`` keeps the raw values, from which the feature weights w_i of the augmentation are computed.
    """
    if data.x is None:
        raise GraphError("the graph has no node features (data.x is None); pass a feature matrix")
    x = data.x
    num_nodes = int(x.shape[0])
    if x.dim() != 2 or num_nodes == 0 or x.shape[1] == 0:
        raise GraphError(f"node features must be a non-empty 2-D matrix, got shape {tuple(x.shape)}")
    if data.num_nodes is not None and int(data.num_nodes) != num_nodes:
        raise GraphError(f"the graph has {int(data.num_nodes)} nodes but {num_nodes} feature rows")
    values = x.coalesce().values() if x.is_sparse else x
    if not torch.isfinite(values).all():
        raise GraphError("node features contain NaN or infinite values; clean or impute them first")

    edge_index = data.edge_index if data.edge_index is not None else torch.empty(2, 0, dtype=torch.long)
    if edge_index.dim() != 2 or edge_index.shape[0] != 2:
        raise GraphError(f"edge_index must have shape [2, E], got {tuple(edge_index.shape)}")
    edge_index = edge_index.cpu()
    if edge_index.is_floating_point() or edge_index.is_complex():
        edge_index = edge_index.long()
    if edge_index.numel() and (edge_index.min() < 0 or edge_index.max() >= num_nodes):
        raise GraphError(
            f"edge ids must lie in [0, {num_nodes - 1}] for {num_nodes} nodes; found ids in "
            f"[{int(edge_index.min())}, {int(edge_index.max())}]"
        )
    edge_index = edge_index.to(index_dtype(num_nodes))  # compact from here on: the caller's copy can go
    warnings: list[str] = []
    num_raw = edge_index.shape[1]
    loops = edge_index[0] == edge_index[1]
    without_loops = remove_self_loops(edge_index)[0] if bool(loops.any()) else edge_index
    del loops
    if without_loops.shape[1] < num_raw:
        warnings.append(f"removed {num_raw - without_loops.shape[1]} self-loops (GCN adds its own)")
    edge_index = without_loops if _is_coalesced(without_loops, num_nodes) else coalesce(
        without_loops.long(), num_nodes=num_nodes).to(without_loops.dtype)  # PyG sorts 64-bit keys  # fmt: skip
    if directed is None:
        directed = not _is_symmetric(edge_index, num_nodes)
    if edge_index.shape[1] < without_loops.shape[1]:
        # On an undirected graph an edge is one pair in both directions: count duplicate pairs, not directed copies.
        if directed:
            merged = without_loops.shape[1] - edge_index.shape[1]
        else:
            merged = int((without_loops[0] < without_loops[1]).sum() - (edge_index[0] < edge_index[1]).sum())
        warnings.append(f"merged {merged} duplicate edge{'s' if merged != 1 else ''}")
    isolated = num_nodes - int((torch.bincount(edge_index.reshape(-1), minlength=num_nodes) > 0).sum())
    if isolated:
        warnings.append(
            f"{isolated} of {num_nodes} nodes have no edges; they are embedded from their own features only"
        )

    y = data.y if getattr(data, "y", None) is not None else None
    if y is not None and y.shape[0] != num_nodes:
        raise GraphError(f"the graph has {num_nodes} nodes but {y.shape[0]} labels")

    features, raw_features = _feature_forms(x, feature_norm)
    zero_columns = int((~_nonzero_columns(raw_features)).sum())
    if zero_columns:
        warnings.append(
            f"{zero_columns} of {x.shape[1]} feature columns are zero for every node; they carry no information "
            "(masking probability p_tau)"
        )
    return Graph(num_nodes, edge_index, bool(directed), features, raw_features, y, warnings)


def _nonzero_columns(features: sp.csr_matrix | np.ndarray) -> np.ndarray:
    """Which feature columns hold a non-zero value; a dense matrix is read a block of rows at a time (``abs(X)``
    would be a second copy of it)."""
    if sp.issparse(features):
        return np.bincount(features.indices[features.data != 0], minlength=features.shape[1]) > 0
    seen = np.zeros(features.shape[1], dtype=bool)
    for start in range(0, features.shape[0], ROW_BLOCK):
        seen |= (features[start : start + ROW_BLOCK] != 0).any(axis=0)
    return seen


def edge_list_csr(edge_index: torch.Tensor, num_nodes: int, data: np.ndarray) -> sp.csr_matrix:
    """A (num_nodes × num_nodes) SciPy CSR whose row v holds the edges (v, u) of an ``edge_index`` sorted by
    source, with ``data`` (one value per edge) as its entries; indices int32 below 2³¹ edges and nodes. The
    target column is the column array itself (no copy for a compact graph); only the row pointers are new. Its
    ``tocsc()`` (SciPy's linear-time counting sort) is the cheap transpose that symmetry checks and reverse
    positions read."""
    kind = np.int32 if max(edge_index.shape[1], num_nodes) < 2**31 else np.int64
    source, target = edge_index.cpu().numpy()
    indptr = np.zeros(num_nodes + 1, dtype=kind)
    np.cumsum(np.bincount(source, minlength=num_nodes), out=indptr[1:])
    return sp.csr_matrix((data, np.asarray(target, dtype=kind), indptr), shape=(num_nodes, num_nodes))


def _is_symmetric(edge_index: torch.Tensor, num_nodes: int) -> bool:
    """Whether every edge of a coalesced ``edge_index`` has its reverse: exactly when A's CSR and CSC forms hold
    the same arrays. SciPy's linear-time counting sort builds the CSC; sorting 64-bit keys twice, as
    ``torch_geometric.utils.is_undirected`` does, took 20 s of the 53 s that loading and preparing a graph of
    ogbn-products' size (124 M directed edges) took on 2 cores."""
    count = edge_index.shape[1]
    if count == 0:
        return True
    csr = edge_list_csr(edge_index, num_nodes, np.ones(count, dtype=np.int8))
    csc = csr.tocsc()  # rows ascending within each column: a symmetric A gives back its own CSR arrays
    return np.array_equal(csc.indptr, csr.indptr) and np.array_equal(csc.indices, csr.indices)


def _is_coalesced(edge_index: torch.Tensor, num_nodes: int) -> bool:
    """Sorted by (source, target) without repeats — what loaders usually give — so sorting again can be skipped."""
    if edge_index.shape[1] < 2:
        return True
    row, col = edge_index
    # sorted by source, and by target within a source: compared pairwise without 64-bit keys for every edge
    rising_row = row[1:] > row[:-1]
    return bool((rising_row | ((row[1:] == row[:-1]) & (col[1:] > col[:-1]))).all())


def _feature_forms(
    x: torch.Tensor, feature_norm: str = "none"
) -> tuple[Features, sp.csr_matrix | np.ndarray]:
    """(encoder input, raw features). Sparse data becomes a CSR :class:`SparseMatrix`: X̃W = X(diag(m)W) then
    needs no masked copy of X. Dense data is the raw array itself — float16 stays float16 — normalised as it is
    read under "row"."""
    if feature_norm not in ("row", "none"):
        raise GraphError(f"feature_norm must be 'row' or 'none', got {feature_norm!r}")
    if x.is_sparse or x.layout == torch.sparse_csr:
        coo = x.to_sparse_coo().coalesce()
        rows, cols = coo.indices().numpy()
        raw = sp.csr_matrix((coo.values().float().numpy(), (rows, cols)), shape=tuple(x.shape))
        raw.sort_indices()
    else:
        dense = (x if x.dtype == torch.float16 else x.float()).numpy()
        nnz = int(np.count_nonzero(dense))
        if nnz > SPARSE_FEATURE_DENSITY * dense.size:
            dense = np.ascontiguousarray(dense)
            if feature_norm == "row":
                return RowNormalizedFeatures.of(dense), dense
            stored = torch.from_numpy(dense)
            return (DenseFeatures(stored) if dense.dtype == np.float16 else stored), dense
        raw = sp.csr_matrix(dense, dtype=np.float32)
    return scipy_to_sparse(normalize_rows(raw) if feature_norm == "row" else raw), raw


def normalize_rows(x: np.ndarray | sp.spmatrix) -> np.ndarray | sp.csr_matrix:
    """Each row divided by the sum of its absolute values (all-zero rows stay zero): the usual GCN preprocessing.

    scikit-learn's ``normalize(norm="l1")`` — for sparse input that very call; a dense matrix is scaled
    :data:`ROW_BLOCK` rows at a time into one new array with the same arithmetic (scikit-learn's holds
    a whole |X| besides its copy: 1 GB more at ogbn-products' size). Dense or SciPy sparse in, the same kind out.
    """
    if sp.issparse(x):
        from sklearn.preprocessing import normalize

        return normalize(x, norm="l1", axis=1, copy=True)
    x = np.asarray(x)
    out = np.empty(x.shape, dtype=np.result_type(x.dtype, np.float32) if x.dtype.kind == "f" else np.float64)
    for start in range(0, x.shape[0], ROW_BLOCK):
        block = x[start : start + ROW_BLOCK]
        np.divide(block, _l1_norms(block).astype(out.dtype, copy=False), out=out[start : start + ROW_BLOCK])
    return out


def _l1_norms(block: np.ndarray) -> np.ndarray:
    """Σ_i |x_vi| of each row as a column, 1 for an all-zero row (as scikit-learn's ``normalize``)."""
    norms = np.abs(block).sum(axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return norms


#: Rows of a dense N × F matrix handled at a time wherever gca scans, scales or sums one (row norms, zero columns,
#: binary checks, feature weights), so none makes a whole temporary of it: a float64 copy of ogbn-products'
#: 2.4 M × 100 features would be 2 GB.
ROW_BLOCK = 65_536


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


def csr_tensor(crow: torch.Tensor, col: torch.Tensor, values: torch.Tensor, size: tuple[int, int]) -> torch.Tensor:
    """A torch CSR tensor from arrays built here (sorted, in range), without torch's beta-feature warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return torch.sparse_csr_tensor(crow, col, values, size=size, check_invariants=False)


def binary_adjacency(edge_index: torch.Tensor, num_nodes: int) -> sp.csr_matrix:
    """A with A[u, v] = 1 for every edge u → v as a float64 SciPy CSR matrix with sorted columns; duplicate edges
    count once and self-loops are dropped (for centrality and random walks, which take the graph as given)."""
    row, col = edge_index.cpu().numpy()
    keep = row != col
    adj = sp.csr_matrix((np.ones(int(keep.sum())), (row[keep], col[keep])), shape=(num_nodes, num_nodes))
    adj.data[:] = 1.0  # duplicate (u, v) pairs were summed: count them once
    adj.sort_indices()
    return adj


def normalized_adjacency(
    edge_index: torch.Tensor, num_nodes: int, symmetric: bool, coalesced: bool = False
) -> SparseMatrix:
    """D̂^{-1/2} Â D̂^{-1/2} with Â = A + I, as the sparse operator M with (M H)_v = Σ_{u → v} M_vu h_u.

    D̂ counts incoming edges plus the self-loop (the degree on undirected graphs). ``edge_index`` must be free of
    self-loops and duplicates; ``coalesced`` says it is also sorted by (source, target), as a :class:`Graph`'s
    is, which lets a symmetric matrix be built without sorting. Built with vectorised tensor operations only.
    """
    edge_index = edge_index.long()
    if symmetric and coalesced:
        return _symmetric_normalized_adjacency(edge_index, num_nodes)
    source, target, values = _normalized_entries(edge_index, num_nodes)
    matrix = square_csr(target, source, values, num_nodes)
    transpose = None if symmetric else square_csr(source, target, values, num_nodes)
    return SparseMatrix(matrix, transpose, symmetric=symmetric)


def _normalized_entries(
    edge_index: torch.Tensor, num_nodes: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(source, target, value) of every entry of D̂^{-1/2} Â D̂^{-1/2}: the edges, then one self-loop per node;
    D̂ counts incoming edges plus the self-loop."""
    loops = torch.arange(num_nodes, device=edge_index.device)
    source = torch.cat([edge_index[0], loops])
    target = torch.cat([edge_index[1], loops])
    inv_sqrt = torch.bincount(target, minlength=num_nodes).to(torch.float32).rsqrt()
    return source, target, inv_sqrt[source] * inv_sqrt[target]


def layered_normalized_adjacency(
    edge_index: torch.Tensor, num_nodes: int, layer_rows: Sequence[int]
) -> list[SparseMatrix]:
    """Per encoder layer, the rows of :func:`normalized_adjacency` whose output is read later, for a sampled
    subgraph whose nodes are numbered hop by hop (anchors first).

    Layer i of an L-layer encoder is needed only at the ``layer_rows[i]`` leading nodes (those within L − 1 − i
    hops of the anchors; the last layer at the anchors alone), and it reads the previous layer's output only at
    its own ``layer_rows[i − 1]`` leading nodes (all nodes for the first layer). The degrees are those of the
    whole subgraph, so every kept entry equals the full matrix's and the anchors' embeddings are unchanged — while
    the second layer of a 2-layer encoder with fan-out 10 computes about 1/7 of the rows. An entry outside the
    block means the nodes are not numbered hop by hop: a :class:`ValueError`.
    """
    source, target, values = _normalized_entries(edge_index.long(), num_nodes)
    blocks, columns = [], num_nodes
    for rows in layer_rows:
        keep = target < rows
        s, t, v = source[keep], target[keep], values[keep]
        if s.numel() and int(s.max()) >= columns:
            raise ValueError(f"a node below row {rows} reads node {int(s.max())} beyond the {columns} computed: "
                             "the subgraph's nodes are not numbered hop by hop")  # fmt: skip
        blocks.append(SparseMatrix(square_csr(t, s, v, rows, columns), square_csr(s, t, v, columns, rows)))
        source, target, values, columns = s, t, v, rows
    return blocks


def _symmetric_normalized_adjacency(edge_index: torch.Tensor, num_nodes: int) -> SparseMatrix:
    """:func:`normalized_adjacency` of a symmetric, coalesced edge_index without a sort: each row's self-loop is
    slotted in after the row's columns below the diagonal. On 10^8 edges this saves a 64-bit sort's memory."""
    device = edge_index.device
    row, col = edge_index
    counts = torch.bincount(row, minlength=num_nodes)
    below = torch.bincount(row[col < row], minlength=num_nodes)  # columns before the diagonal, per row
    crow = torch.zeros(num_nodes + 1, dtype=torch.long, device=device)
    torch.cumsum(counts + 1, 0, out=crow[1:])
    inv_sqrt = (counts + 1).to(torch.float32).rsqrt()
    total = row.numel() + num_nodes
    columns = torch.empty(total, dtype=torch.long, device=device)
    values = torch.empty(total, dtype=torch.float32, device=device)
    # an edge moves right by one slot per earlier row's self-loop, and by one more if it lies above the diagonal
    slot = torch.arange(row.numel(), device=device) + row + (col > row)
    columns[slot] = col
    values[slot] = inv_sqrt[row] * inv_sqrt[col]
    del slot
    nodes = torch.arange(num_nodes, device=device)
    diagonal = crow[:-1] + below
    columns[diagonal] = nodes
    values[diagonal] = inv_sqrt * inv_sqrt
    return SparseMatrix(csr_tensor(crow, columns, values, (num_nodes, num_nodes)), symmetric=True)


class AdjacencyRows:
    """D̂^{-1/2} Â D̂^{-1/2} of an undirected graph, built a block of rows at a time from its coalesced
    ``edge_index`` (both directions of every edge, sorted by source — a :class:`Graph`'s).

    Inference on a large graph reads the operator one block at a time (:meth:`row_slice`), so its N + E entries
    and their 64-bit column indices are never held at once: the edge list's own target column is the CSR column
    array, and only the row pointers and D̂^{-1/2} (N values each) are kept. Each block equals the same rows of
    :func:`normalized_adjacency`, entry for entry.
    """

    def __init__(self, edge_index: torch.Tensor, num_nodes: int) -> None:
        source, self.columns = edge_index[0], edge_index[1]
        counts = torch.bincount(source, minlength=num_nodes)
        self.indptr = torch.zeros(num_nodes + 1, dtype=torch.long, device=source.device)
        torch.cumsum(counts, 0, out=self.indptr[1:])
        self.inv_sqrt = (counts + 1).to(torch.float32).rsqrt()
        self.shape = (num_nodes, num_nodes)

    def row_slice(self, start: int, stop: int) -> torch.Tensor:
        """Rows start … stop − 1 (self-loops included) as a CSR tensor with sorted columns, built without a sort:
        each row's self-loop is slotted in after its columns below the diagonal, as
        :func:`_symmetric_normalized_adjacency` does for the whole matrix."""
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
        values[slot] = self.inv_sqrt[row] * self.inv_sqrt[col]
        diagonal = crow[:-1] + torch.bincount(local[col < row], minlength=stop - start)
        nodes = torch.arange(start, stop, device=device)
        columns[diagonal] = nodes
        values[diagonal] = self.inv_sqrt[nodes] * self.inv_sqrt[nodes]
        return csr_tensor(crow, columns, values, (stop - start, self.shape[1]))


def square_csr(
    row: torch.Tensor, col: torch.Tensor, values: torch.Tensor, n: int, columns: int | None = None
) -> torch.Tensor:
    """The n×n (or n×``columns``) CSR tensor with entries ``values`` at (row, col) (no duplicates), columns
    sorted within rows."""
    columns = n if columns is None else columns
    order = torch.argsort(row * columns + col)
    row, col, values = row[order], col[order], values[order]
    crow = torch.zeros(n + 1, dtype=torch.long, device=row.device)
    crow[1:] = torch.cumsum(torch.bincount(row, minlength=n), 0)
    return csr_tensor(crow, col, values, (n, columns))


def segment_ranges(start: torch.Tensor, length: torch.Tensor) -> torch.Tensor:
    """concat(arange(s, s + l) for s, l in zip(start, length)), computed without a Python loop."""
    total = int(length.sum())
    if total == 0:
        return torch.empty(0, dtype=torch.long, device=start.device)
    offsets = torch.cumsum(length, 0) - length  # where each segment begins in the output
    within = torch.arange(total, device=start.device) - torch.repeat_interleave(offsets, length)
    return torch.repeat_interleave(start, length) + within
