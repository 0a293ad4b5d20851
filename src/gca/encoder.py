"""The GCN encoder f and the projection head g (Section 3.1 and Eq. 11–12 of Zhu et al., WWW 2021).

    GC_i(X, A) = σ( D̂^{-1/2} Â D̂^{-1/2} X W_i ),   Â = A + I,
    f(X, A)    = GC_k( … GC_1(X, A) …, A ),
    g(h)       = W₂ ELU(W₁ h + b₁) + b₂.

All weights use Glorot initialisation (Appendix A). The first k − 1 layers are ``first_layer_factor`` times as
wide as the output (2× in the authors' code). Feature masking X̃ = X ∘ m (one mask shared by all nodes) enters the
first layer as X̃W = X (diag(m) W): the mask scales rows of W₁, so a sparse X is never copied or densified.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn
from torch.nn import functional as F

from .graph import SparseMatrix


def make_activation(name: str, channels: int) -> nn.Module:
    """ReLU, PReLU (one slope per channel), RReLU or ELU as a module."""
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
    """One graph convolution σ(M H W + b) with M = D̂^{-1/2} Â D̂^{-1/2} given as a sparse operator."""

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
        self,
        h: torch.Tensor | SparseMatrix,
        adjacency: SparseMatrix,
        feature_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        weight = self.weight if feature_mask is None else self.weight * feature_mask.unsqueeze(1)
        if _aggregate_first(h, weight):
            return self.activation((adjacency @ h) @ weight + self.bias)
        # M (H W): a layer that maps F ≫ F' channels down (bag-of-words features) aggregates the narrow side.
        return self.activation(adjacency @ (h @ weight) + self.bias)


    @torch.no_grad()
    def forward_in_chunks(self, h: torch.Tensor | SparseMatrix, adjacency: SparseMatrix, rows: int) -> torch.Tensor:
        """The same output as :meth:`forward`, computed ``rows`` nodes at a time without autograd: besides the
        input, only H W and the output are held (N × width each), never a product's temporaries for all nodes."""
        n = adjacency.shape[0]
        if _aggregate_first(h, self.weight):
            out = torch.empty(n, self.weight.shape[1], dtype=self.weight.dtype, device=self.weight.device)
            for start in range(0, n, rows):
                stop = min(start + rows, n)
                out[start:stop] = self.activation((adjacency.row_slice(start, stop) @ h) @ self.weight + self.bias)
            return out
        hw = torch.empty(n, self.weight.shape[1], dtype=self.weight.dtype, device=self.weight.device)
        for start in range(0, n, rows):
            stop = min(start + rows, n)
            part = h.row_slice(start, stop) if isinstance(h, SparseMatrix) else h[start:stop]
            torch.matmul(part, self.weight, out=hw[start:stop])
        out = torch.empty_like(hw)
        for start in range(0, n, rows):
            stop = min(start + rows, n)
            out[start:stop] = self.activation(adjacency.row_slice(start, stop) @ hw + self.bias)
        return out


def _aggregate_first(h: torch.Tensor | SparseMatrix, weight: torch.Tensor) -> bool:
    """Whether to compute (M H) W rather than M (H W): for a dense H narrower than its output, so the sparse
    product — the layer's costly, memory-bound part — moves fewer columns (100 instead of 256 at ogbn-products),
    and on a sampled subgraph the dense product runs only on the rows kept. A sparse H (bag-of-words features)
    keeps M (H W), which also avoids a sparse × sparse product."""
    return isinstance(h, torch.Tensor) and not h.is_sparse and h.shape[1] < weight.shape[1]


class GCNEncoder(nn.Module):
    """f: k ≥ 2 GCN layers, widths in → factor·out → … → factor·out → out."""

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
        """f(X̃, Ã). ``adjacency`` is one operator for every layer, or one per layer — each restricted to the rows
        whose output is read later, as on a sampled subgraph (:func:`gca.graph.layered_normalized_adjacency`)."""
        per_layer = adjacency if isinstance(adjacency, Sequence) else [adjacency] * len(self.layers)
        if len(per_layer) != len(self.layers):
            raise ValueError(f"{len(per_layer)} adjacency operators for {len(self.layers)} layers")
        h = self.layers[0](features, per_layer[0], feature_mask)
        for layer, operator in zip(self.layers[1:], per_layer[1:], strict=True):
            h = layer(h, operator)
        return h

    @torch.no_grad()
    def forward_in_chunks(
        self, features: torch.Tensor | SparseMatrix, adjacency: SparseMatrix, rows: int
    ) -> torch.Tensor:
        """Inference layer by layer over ``rows`` nodes at a time (no feature mask, no autograd): memory is about
        two of one layer's activations, whatever the number of nodes."""
        h = features
        for layer in self.layers:
            h = layer.forward_in_chunks(h, adjacency, rows)
        return h


class ProjectionHead(nn.Module):
    """g: the two-layer perceptron with ELU that maps embeddings into the space where the objective is computed."""

    def __init__(self, channels: int, hidden_channels: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(channels, hidden_channels)
        self.fc2 = nn.Linear(hidden_channels, channels)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        for fc in (self.fc1, self.fc2):
            nn.init.xavier_uniform_(fc.weight)
            nn.init.zeros_(fc.bias)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return self.fc2(F.elu(self.fc1(h)))
