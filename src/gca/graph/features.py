"""Node features in the forms training reads: sparse CSR, dense, or dense as stored (float16 included) and widened
to float32 a block of :data:`ROW_BLOCK` rows at a time, row-normalised on the fly where asked.

:func:`feature_forms` picks the form once per graph (sparse at most :data:`SPARSE_FEATURE_DENSITY` non-zeros);
:func:`dense_input` and :func:`read_rows` are how the encoders read any of them.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import torch

from .sparse import SparseMatrix, scipy_to_sparse

#: Node features with at most this fraction of non-zeros are kept as a sparse matrix.
SPARSE_FEATURE_DENSITY = 0.25

#: Rows of a dense N × F matrix handled at a time wherever gca scans, scales or sums one (row norms, zero columns,
#: binary checks, feature weights), so none makes a whole temporary of it: a float64 copy of ogbn-products'
#: 2.4 M × 100 features would be 2 GB.
ROW_BLOCK = 65_536


class DenseFeatures:
    """Dense features X held as stored and read as float32: float16 from a file that keeps them so is widened row block
    by row block as it is read.

    Mini-batch steps read the rows they sample (:meth:`take_rows`); whole-graph training, message-passing encoders and
    the first layer of inference build the float32 matrix once (:meth:`to_dense`) and let it go when done. ``raw``:
    float32 or float16.
    """

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
    """X̂ = X / ‖x_v‖₁ row by row (all-zero rows stay zero) for dense features X kept as stored (float32 or float16):
    the encoder's input under ``feature_norm = "row"``, with rows divided as they are read.

    ``norms`` are the ``[N, 1]`` float32 row sums of ``|x|`` (1 for an all-zero row). Every value equals
    :func:`normalize_rows`'s, bit for bit (of float16 features: of their float32 values).
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
    """The rows ``index`` of the encoder's input, in that order and of the same kind (a sampled subgraph's features)."""
    return features[index] if isinstance(features, torch.Tensor) else features.take_rows(index)


def feature_forms(x: torch.Tensor, feature_norm: str = "none") -> tuple[Features, sp.csr_matrix | np.ndarray]:
    """(encoder input, raw features) of ``Data.x`` (dense or sparse). Sparse data becomes a CSR :class:`SparseMatrix`:
    X̃W = X(diag(m)W) then needs no masked copy of X. Dense data is the raw array itself — float16 stays float16 —
    normalised as it is read under "row" (``feature_norm`` is "row" or "none": :func:`gca.graph.graph.prepare_graph`
    checks it)."""
    if feature_norm not in ("row", "none"):
        raise ValueError(f"feature_norm must be 'row' or 'none', got {feature_norm!r}")
    if x.is_sparse or x.layout == torch.sparse_csr:
        coo = x.to_sparse_coo().coalesce()
        rows, cols = coo.indices().numpy()
        raw = sp.csr_matrix((coo.values().float().numpy(), (rows, cols)), shape=tuple(x.shape))
        raw.sort_indices()
    else:
        dense = (x if x.dtype == torch.float16 else x.float()).numpy()
        nnz = int(np.count_nonzero(dense))
        raw = (
            np.ascontiguousarray(dense)
            if nnz > SPARSE_FEATURE_DENSITY * dense.size
            else sp.csr_matrix(dense, dtype=np.float32)
        )
    return encoder_input(raw, feature_norm), raw


def encoder_input(raw: sp.csr_matrix | np.ndarray, feature_norm: str = "none") -> Features:
    """The encoder's input formed from raw features as :func:`feature_forms` keeps them (a CSR matrix, or a dense
    float32/float16 array, which is used as it is, not copied) — also what a stored prepared graph
    (:mod:`gca.run.store`) is opened with."""
    if sp.issparse(raw):
        return scipy_to_sparse(normalize_rows(raw) if feature_norm == "row" else raw)
    if feature_norm == "row":
        return RowNormalizedFeatures.of(raw)
    stored = torch.from_numpy(raw)
    return DenseFeatures(stored) if raw.dtype == np.float16 else stored


def nonzero_columns(features: sp.csr_matrix | np.ndarray) -> np.ndarray:
    """Which feature columns hold a non-zero value; a dense matrix is read a block of rows at a time."""
    if sp.issparse(features):
        return np.bincount(features.indices[features.data != 0], minlength=features.shape[1]) > 0
    seen = np.zeros(features.shape[1], dtype=bool)
    for start in range(0, features.shape[0], ROW_BLOCK):
        seen |= (features[start : start + ROW_BLOCK] != 0).any(axis=0)
    return seen


def normalize_rows(x: np.ndarray | sp.spmatrix) -> np.ndarray | sp.csr_matrix:
    """Each row divided by the sum of its absolute values (all-zero rows stay zero): the usual GCN preprocessing.

    The arithmetic of scikit-learn's ``normalize(norm="l1")`` (each sparse row summed in float64 in its order, each
    value divided in float64 and stored in its dtype; a dense matrix scaled :data:`ROW_BLOCK` rows at a time into one
    new array), without its 1 s of import. Dense or SciPy sparse in, the same kind out; ``x`` is not changed.
    """
    if sp.issparse(x):
        kind = sp.csr_array if isinstance(x, sp.sparray) else sp.csr_matrix  # the container it came in
        x = kind(x, dtype=x.dtype if x.dtype in (np.float32, np.float64) else np.float64, copy=True)
        rows = np.repeat(np.arange(x.shape[0]), np.diff(x.indptr))
        sums = np.bincount(rows, weights=np.abs(x.data), minlength=x.shape[0])  # float64, each row in order
        x.data[:] = x.data / np.where(sums == 0, 1.0, sums)[rows]
        return x
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


def identical_rows(features: Features | SparseMatrix) -> bool:
    """Whether every row of ``features`` (as the encoder reads them) equals the first (a dense matrix read
    :data:`ROW_BLOCK` rows at a time; a sparse one compared by its rows' columns and values)."""
    if isinstance(features, SparseMatrix):
        matrix = features.matrix
        if matrix.layout != torch.sparse_csr:
            return False
        counts = matrix.crow_indices().diff()
        if counts.numel() == 0 or not bool((counts == counts[0]).all()):
            return False
        width = int(counts[0])
        columns, values = matrix.col_indices().view(-1, width), matrix.values().view(-1, width)
        return bool((columns == columns[:1]).all()) and bool((values == values[:1]).all())
    if isinstance(features, DenseFeatures):  # rows as read: row-normalised ones divided as the encoder sees them
        n = features.shape[0]
        if n == 0:
            return False
        first = features.row_slice(0, 1)
        return all(bool((features.row_slice(i, min(i + ROW_BLOCK, n)) == first).all()) for i in range(0, n, ROW_BLOCK))
    if not isinstance(features, torch.Tensor) or features.layout != torch.strided or features.dim() != 2:
        return False
    return features.shape[0] > 0 and all(bool((block == features[:1]).all()) for block in features.split(ROW_BLOCK))


def all_zero(features: Features | SparseMatrix) -> bool:
    """Whether every value of ``features`` is zero (a dense matrix read :data:`ROW_BLOCK` rows at a time)."""
    if isinstance(features, SparseMatrix):
        return not bool(features.matrix.values().any())
    raw = features.raw if isinstance(features, DenseFeatures) else features
    if not isinstance(raw, torch.Tensor):
        return False
    if raw.layout != torch.strided:
        raw = raw.to_sparse_coo().coalesce().values()
    return not any(bool(block.any()) for block in (raw.split(ROW_BLOCK) if raw.dim() else (raw,)))
