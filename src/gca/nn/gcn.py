"""The GCN encoder f and the projection head g (Section 3.1 and Eq. 11–12 of Zhu et al., WWW 2021).

    GC_i(X, A) = σ( D̂^{-1/2} Â D̂^{-1/2} X W_i ),   Â = A + I,
    f(X, A)    = GC_k( … GC_1(X, A) …, A ),
    g(h)       = W₂ ELU(W₁ h + b₁) + b₂.

All weights use Glorot initialisation (Appendix A). The first k − 1 layers are ``first_layer_factor`` times as
wide as the output (2× in the authors' code). Feature masking X̃ = X ∘ m (one mask shared by all nodes) enters the
first layer as X̃W = X (diag(m) W): the mask scales rows of W₁, so a sparse X is never copied or densified.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

import torch
from torch import nn
from torch.nn import functional as F

from ..graph.features import DenseFeatures, Features
from ..graph.sparse import SparseMatrix


def make_activation(name: str, channels: int) -> nn.Module:
    """ReLU, PReLU (one slope per channel of the ``channels``-wide layer it follows), RReLU or ELU as a module, by
    ``name`` (any case; another is a ``ValueError``)."""
    name = name.lower()
    if name == "relu":
        return nn.ReLU()
    if name == "prelu":
        return nn.PReLU(channels)
    if name == "rrelu":
        return nn.RReLU()
    if name == "elu":
        return nn.ELU()
    raise ValueError(f"unknown activation {name!r}; choose relu, prelu, rrelu or elu")


class GCNLayer(nn.Module):
    """One graph convolution σ(M H W + b) with M = D̂^{-1/2} Â D̂^{-1/2} given as a sparse operator; σ by name
    (:func:`make_activation`)."""

    def __init__(self, in_channels: int, out_channels: int, activation: str) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(in_channels, out_channels))
        self.bias = nn.Parameter(torch.empty(out_channels))
        self.activation = make_activation(activation, out_channels)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        nn.init.xavier_uniform_(self.weight)
        nn.init.zeros_(self.bias)
        if isinstance(self.activation, nn.PReLU):
            nn.init.constant_(self.activation.weight, 0.25)

    def forward(
        self, h: torch.Tensor | SparseMatrix, adjacency: SparseMatrix, feature_mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        weight = self.weight if feature_mask is None else self.weight * feature_mask.unsqueeze(1)
        if _aggregate_first(h, weight):
            return self.activation((adjacency @ h) @ weight + self.bias)
        # M (H W): a layer that maps F ≫ F' channels down (bag-of-words features) aggregates the narrow side.
        adjacency, hw = self.transformed(h, adjacency, feature_mask, weight)
        return self.activation(adjacency @ hw + self.bias)

    def transformed(
        self,
        h: torch.Tensor | SparseMatrix,
        adjacency: SparseMatrix,
        feature_mask: torch.Tensor | None = None,
        weight: torch.Tensor | None = None,
    ) -> tuple[SparseMatrix, torch.Tensor]:
        """(M′, H W) with M′ (H W) = M (H (diag(m) W)), as :meth:`forward` computes it, multiplying only what M reads
        (``weight``: diag(m) W when already formed; ``feature_mask`` m: ``None`` for none). A sparse H skips the entries
        whose terms are exact zeros or never read (:func:`_entries_read`; M′ = M); a dense H is multiplied at the rows M
        reads only, and M′ is M at those columns (:func:`_dense_rows_read`)."""
        if weight is None:
            weight = self.weight if feature_mask is None else self.weight * feature_mask.unsqueeze(1)
        if isinstance(h, SparseMatrix):
            return adjacency, _entries_read(h, adjacency, feature_mask) @ weight
        adjacency, h = _dense_rows_read(h, adjacency)
        return adjacency, h @ weight

    def transforms_first(self, h: torch.Tensor | SparseMatrix) -> bool:
        """Whether this layer computes M (H W) for the input ``h`` (else (M H) W)."""
        return not _aggregate_first(h, self.weight)

    @torch.no_grad()
    def output_rows(
        self,
        h: torch.Tensor | SparseMatrix | None,
        hw: torch.Tensor | None,
        adjacency: RowSlices,
        start: int,
        stop: int,
    ) -> torch.Tensor:
        """Rows start … stop − 1 of σ(M H W + b), M read a block of rows at a time: from H (aggregating first) or, when
        ``hw`` is given, from H W."""
        rows = adjacency.row_slice(start, stop)
        if hw is None:
            return self.activation((rows @ h) @ self.weight + self.bias)
        return self.activation(rows @ hw + self.bias)

    @torch.no_grad()
    def times_weight(
        self,
        h: torch.Tensor | SparseMatrix | DenseFeatures,
        rows: int,
        empty: Callable[..., torch.Tensor] | None = None,
        written: Callable[[torch.Tensor, int, int], None] | None = None,
        share: InferenceShare | None = None,
    ) -> torch.Tensor:
        """H W, ``rows`` rows at a time (a sparse H is sliced, never densified; stored dense features are read a block
        at a time), into ``empty((N, width), dtype)`` (``None``: ``torch.empty`` on the weight's device); ``written(HW,
        start, stop)`` after each block. ``share``: this process's rows under torchrun, then the others'."""
        n, shape, dtype = h.shape[0], (h.shape[0], self.weight.shape[1]), self.weight.dtype
        hw = empty(shape, dtype) if empty is not None else torch.empty(shape, dtype=dtype, device=self.weight.device)
        written = written or _nothing
        for start, stop in _blocks(n, rows, share):
            part = h[start:stop] if isinstance(h, torch.Tensor) else h.row_slice(start, stop)
            torch.matmul(part.to(self.weight.device), self.weight, out=hw[start:stop])
            written(hw, start, stop)
        if share is not None:
            share.complete(hw, rows, False, written)
        return hw


class RowSlices(Protocol):
    """A sparse operator M read a block of rows at a time (:class:`gca.graph.sparse.SparseMatrix`,
    :class:`gca.graph.sparse.AdjacencyRows`)."""

    shape: tuple[int, int]

    def row_slice(self, start: int, stop: int) -> torch.Tensor: ...


def _aggregate_first(h: torch.Tensor | SparseMatrix, weight: torch.Tensor) -> bool:
    """Whether to compute (M H) W rather than M (H W): for a dense H narrower than its output, so the sparse product —
    the layer's costly, memory-bound part — moves fewer columns, and on a sampled subgraph the dense product runs only
    on the rows kept. A sparse H (bag-of-words features) keeps M (H W), which also avoids a sparse × sparse product."""
    return isinstance(h, torch.Tensor) and not h.is_sparse and h.shape[1] < weight.shape[1]


def _rows_read_mask(h: torch.Tensor | SparseMatrix, adjacency: SparseMatrix) -> torch.Tensor | None:
    """The rows of H that an entry of M reads, as a boolean mask; ``None`` where M reads every row or may (it is not
    a sampled subgraph's first layer: a CSR block with fewer rows than columns, one column per row of H). The rows
    it does not read are the nodes of the last hop whose edges the view dropped."""
    operator = getattr(adjacency, "matrix", None)
    if not (
        isinstance(operator, torch.Tensor)
        and operator.layout == torch.sparse_csr
        and operator.shape[0] < operator.shape[1] == h.shape[0]
    ):
        return None
    rows = torch.zeros(h.shape[0], dtype=torch.bool, device=operator.device)
    rows[operator.col_indices()] = True
    return None if bool(rows.all()) else rows


def _dense_rows_read(h: torch.Tensor, adjacency: SparseMatrix) -> tuple[SparseMatrix, torch.Tensor]:
    """(M′, H′): the dense ``h`` at the rows M reads, and M at those columns (:meth:`SparseMatrix.read_columns`), so
    that M′ (H′ W) = M (H W) while the product and its weight gradient H′ᵀ G skip the unread rows. Each kept row is
    multiplied by the same weight — equal to the full product's up to its kernel's rounding, which may differ with the
    row count — and the aggregation sums the same terms in the same order."""
    read = _rows_read_mask(h, adjacency) if h.layout == torch.strided else None
    if read is None:
        return adjacency, h
    index = read.nonzero().squeeze(1)
    return adjacency.read_columns(index), h.index_select(0, index)


def _entries_read(h: SparseMatrix, adjacency: SparseMatrix, feature_mask: torch.Tensor | None) -> SparseMatrix:
    """The sparse input ``h`` without the entries whose terms of M (H (diag(m) W)) are exact zeros: in a feature
    column the mask zeroes, or a node row no entry of M reads (:func:`_rows_read_mask`; G is zero there), so with
    finite weights output and gradients are unchanged, bit for bit. The copy lives until backward: O(nnz of H)."""
    columns = None if feature_mask is None else feature_mask != 0
    if columns is not None and bool(columns.all()):
        columns = None
    rows = _rows_read_mask(h, adjacency)
    return h if rows is None and columns is None else h.keep(rows, columns)


class GCNEncoder(nn.Module):
    """f: k ≥ 2 GCN layers, widths in → factor·out → … → factor·out → out.

    Parameters
    ----------
    in_channels
        The node features' width F.
    out_channels
        The embeddings' width (config ``hidden``).
    num_layers
        k, at least 2 (else a ``ValueError``).
    activation
        The activation after every layer, by name (:func:`make_activation`).
    first_layer_factor
        The inner layers' width as a multiple of ``out_channels``.
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        num_layers: int = 2,
        activation: str = "relu",
        first_layer_factor: int = 2,
    ) -> None:
        super().__init__()
        if num_layers < 2:
            raise ValueError("the encoder needs at least two layers")
        inner = first_layer_factor * out_channels
        widths = [in_channels] + [inner] * (num_layers - 1) + [out_channels]
        self.layers = nn.ModuleList(GCNLayer(a, b, activation) for a, b in zip(widths[:-1], widths[1:], strict=True))

    def reset_parameters(self) -> None:
        for layer in self.layers:
            layer.reset_parameters()

    def forward(
        self,
        features: torch.Tensor | SparseMatrix,
        adjacency: SparseMatrix | Sequence[SparseMatrix],
        feature_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """f(X̃, Ã): the ``[N, out_channels]`` embeddings.

        Parameters
        ----------
        features
            X, one row per node (dense, or a sparse :class:`~gca.graph.sparse.SparseMatrix`).
        adjacency
            The normalised adjacency D̂^{-1/2}(Ã + I)D̂^{-1/2}, or one operator per layer, each restricted to the rows
            whose output is read later, as on a sampled subgraph
            (:func:`gca.graph.sparse.layered_normalized_adjacency`).
        feature_mask
            m, the view's ``[F]`` feature mask (X̃ = X diag(m)); ``None`` for none.
        """
        per_layer = adjacency if isinstance(adjacency, Sequence) else [adjacency] * len(self.layers)
        if len(per_layer) != len(self.layers):
            raise ValueError(f"{len(per_layer)} adjacency operators for {len(self.layers)} layers")
        h = self.layers[0](features, per_layer[0], feature_mask)
        for layer, operator in zip(self.layers[1:], per_layer[1:], strict=True):
            h = layer(h, operator)
        return h

    @torch.no_grad()
    def forward_in_chunks(
        self,
        features: Features,
        adjacency: RowSlices,
        rows: int,
        allocate: Allocate | None = None,
        share: InferenceShare | None = None,
        on_rows: Callable[[int], None] | None = None,
    ) -> torch.Tensor | None:
        """Inference over ``rows`` nodes at a time (no feature mask, no autograd), equal to :meth:`forward` up to
        float32 rounding, M (``adjacency``) read a block of rows at a time; the ``[N, out_channels]`` embeddings, or
        ``None`` on a process other than the first under ``share``. Design notes: docs/design/core.md.

        A layer whose successor computes M (H W) hands over H W, so the wider inner H is never held for all nodes.
        Stored dense features (:class:`~gca.graph.features.DenseFeatures`) are read a block of rows at a time, or, for
        a first layer that aggregates first, into one float32 matrix X̂.

        ``allocate(shape, dtype, final)`` gives each N-row matrix (``final``: the embeddings; ``None``: ``torch.empty``
        on the weights' device), written once in blocks of rows; its ``written(matrix, start, stop)``, where it has
        one, is told of every block, and its ``release(tensor)`` of stored dense features once read into X̂ or X W.

        ``share`` (:class:`InferenceShare`; under torchrun :class:`gca.train.distributed.RowRanges`): each process
        computes its own rows of every matrix, and the share completes it. ``on_rows(count)`` is told of every block of
        output rows computed, layer after layer.
        """
        n, last = adjacency.shape[0], len(self.layers) - 1
        device = self.layers[0].weight.device
        written = getattr(allocate, "written", None) or _nothing

        def empty(shape: tuple[int, int], dtype: torch.dtype, final: bool = False) -> torch.Tensor:
            return (
                allocate(shape, dtype, final)
                if allocate is not None
                else torch.empty(shape, dtype=dtype, device=device)
            )

        h, hw = features, None
        for i, layer in enumerate(self.layers):
            if isinstance(h, DenseFeatures):  # X̂ whole only where the layer aggregates it first
                h = h if not _aggregate_first(h.raw, layer.weight) else _filled(h, empty, rows, written, share)
            if hw is None and layer.transforms_first(h):
                hw, h = layer.times_weight(h, rows, empty, written, share), None
            if i == 0 and isinstance(features, DenseFeatures) and hasattr(allocate, "release"):
                allocate.release(features.raw)  # read whole into X̂ or X W: not read again
            following = self.layers[i + 1] if i < last else None
            # the next layer transforms first exactly when its input is no narrower than its output
            handover = following is not None and following.weight.shape[0] >= following.weight.shape[1]
            width = following.weight.shape[1] if handover else layer.weight.shape[1]
            out = empty((n, width), layer.weight.dtype, i == last)
            for start, stop in _blocks(n, rows, share):
                block = layer.output_rows(h, hw, adjacency, start, stop)
                if handover:
                    torch.matmul(block, following.weight, out=out[start:stop])
                else:
                    out[start:stop] = block
                written(out, start, stop)
                if on_rows is not None:
                    on_rows(stop - start)
            if share is not None:
                share.complete(out, rows, i == last, written)
            h, hw = (None, out) if handover else (out, None)
        if share is not None and not share.holds_result:
            return None
        return h if hw is None else hw


#: ``allocate(shape, dtype, final)``: an uninitialised N-row matrix for :meth:`GCNEncoder.forward_in_chunks`.
Allocate = Callable[[tuple[int, int], torch.dtype, bool], torch.Tensor]


def _nothing(matrix: torch.Tensor, start: int, stop: int) -> None:
    pass


class InferenceShare(Protocol):
    """How processes share the rows of inference (:meth:`GCNEncoder.forward_in_chunks`): ``blocks(n, rows)`` are
    this process's blocks of rows (start, stop) of an n-row matrix, at most ``rows`` each; ``complete(matrix, rows,
    final, written)`` gives it the rows the others computed (of the ``final`` one only to the process that
    :attr:`holds_result`), calling ``written(matrix, start, stop)`` per block received; ``row_range(n)`` the rows its
    blocks cover."""

    holds_result: bool

    def row_range(self, n: int) -> tuple[int, int]: ...

    def blocks(self, n: int, rows: int) -> list[tuple[int, int]]: ...

    def complete(
        self, matrix: torch.Tensor, rows: int, final: bool, written: Callable[[torch.Tensor, int, int], None]
    ) -> None: ...


def _blocks(n: int, rows: int, share: InferenceShare | None = None) -> list[tuple[int, int]]:
    """The blocks of rows this process computes: all of them, or its share's."""
    if share is not None:
        return share.blocks(n, rows)
    return [(start, min(start + rows, n)) for start in range(0, n, rows)]


def _filled(
    features: DenseFeatures,
    empty: Callable[..., torch.Tensor],
    rows: int,
    written: Callable[[torch.Tensor, int, int], None] = _nothing,
    share: InferenceShare | None = None,
) -> torch.Tensor:
    """X̂ as one float32 matrix, read ``rows`` rows at a time into ``empty((N, F), float32)`` — the same values as
    :meth:`DenseFeatures.to_dense`, bit for bit (``share``: this process's rows, then the others')."""
    n = features.shape[0]
    out = empty((n, features.shape[1]), torch.float32)
    for start, stop in _blocks(n, rows, share):
        out[start:stop] = features.row_slice(start, stop)
        written(out, start, stop)
    if share is not None:
        share.complete(out, rows, False, written)
    return out


class ProjectionHead(nn.Module):
    """g: the two-layer perceptron with ELU that maps embeddings into the space where the objective is computed.

    Parameters
    ----------
    channels
        The embeddings' width (input and output).
    hidden_channels
        The inner layer's width (config ``proj_hidden``).
    """

    def __init__(self, channels: int, hidden_channels: int) -> None:
        super().__init__()
        self.channels = channels  # the width of the embeddings it takes
        self.fc1 = nn.Linear(channels, hidden_channels)
        self.fc2 = nn.Linear(hidden_channels, channels)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        for fc in (self.fc1, self.fc2):
            nn.init.xavier_uniform_(fc.weight)
            nn.init.zeros_(fc.bias)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return self.fc2(F.elu(self.fc1(h)))
