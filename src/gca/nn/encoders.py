"""Encoders f from PyTorch Geometric's convolutions — GAT, GraphSAGE and GIN — and the rule for users' own.

The paper's framework is encoder-agnostic ("a GNN encoder f"); its experiments, and gca's default, use the GCN of
:mod:`gca.nn.gcn`, which keeps gca's own sparse path. The encoders here are called as PyTorch Geometric's are,
``encoder(x, edge_index) → [N, out]``, on dense features: a view's dropped edges are absent from ``edge_index``
and its feature mask multiplies x's columns. Widths and activation follow the config as for the GCN: k layers,
in → factor·hidden → … → hidden, the activation after every layer.

* ``gat`` — ``GATConv`` with :data:`GAT_HEADS` concatenated heads in the inner layers (one head in the last);
* ``sage`` — ``SAGEConv``, each layer's output ℓ2-normalised after its activation, as GraphSAGE's Algorithm 1
  (line 7) does (Hamilton et al., 2017), with one of the paper's aggregators (§3.3; config ``sage_aggregator``):
  ``gcn`` (the default), h_v ← σ(W · mean({h_v} ∪ {h_u : u ∈ N(v)})), a self-loop added to every node and one
  weight; or ``mean``, σ(W₁ h_v + W₂ · mean{h_u : u ∈ N(v)}), the neighbours' mean beside the node's own weight
  (PyTorch Geometric's default). On Cora the first matched the GCN (83.99 against 83.81 %) and the second came
  3.5 points below it (docs/benchmarks.md);
* ``gin`` — ``GINConv`` around a two-layer perceptron with batch normalisation, as in the GIN paper's experiments
  (Xu et al., 2019, §7).

A user's encoder (``GCA(config, encoder=module)``) is any ``torch.nn.Module`` with that call that returns one row per
row of ``x`` — a floating-point ``[N, config.hidden]`` tensor, ``config.hidden`` being the projection head's input
width. :func:`check_encoder` runs it once on the graph's first nodes before training, and
:func:`check_encoder_output` checks every output it gives in training and inference (the whole graph's nodes, or a
sampled subgraph's in mini-batch mode); anything else is an :class:`EncoderError` of one line naming the encoder's
class, the shape it returned and the shape it must return.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from ..errors import UserError
from ..graph.features import Features, read_rows
from ..graph.sparse import SparseMatrix
from .gcn import make_activation


class EncoderError(UserError, ValueError):
    """A user's encoder returned something other than one ``hidden``-wide floating-point row per node."""


#: Attention heads of GAT's inner layers (concatenated, so each head is width / heads wide), as BGRL's GAT.
GAT_HEADS = 4


def dense_features(features: Features, mask: torch.Tensor | None = None
                   ) -> torch.Tensor:  # fmt: skip
    """X̃ = X ∘ m as a dense tensor (message-passing encoders take dense features)."""
    x = features if isinstance(features, torch.Tensor) else features.to_dense()
    return x if mask is None else x * mask


class MessagePassingEncoder(nn.Module):
    """k convolutions of one PyTorch Geometric kind, each followed by the activation."""

    def __init__(self, kind: str, in_channels: int, hidden: int, num_layers: int, activation: str,
                 first_layer_factor: int = 2, sage_aggregator: str = "gcn") -> None:  # fmt: skip
        super().__init__()
        if num_layers < 2:
            raise ValueError("the encoder needs at least two layers")
        if sage_aggregator not in ("gcn", "mean"):
            raise ValueError(f"unknown GraphSAGE aggregator {sage_aggregator!r}; choose gcn or mean")
        inner = first_layer_factor * hidden
        widths = [in_channels] + [inner] * (num_layers - 1) + [hidden]
        self.kind = kind
        self.self_loops = kind == "sage" and sage_aggregator == "gcn"  # the node itself enters the mean
        self.convs = nn.ModuleList(_conv(kind, a, b, last=i == num_layers - 1, root_weight=not self.self_loops)
                                   for i, (a, b) in enumerate(zip(widths[:-1], widths[1:], strict=True)))  # fmt: skip
        self.activations = nn.ModuleList(make_activation(activation, b) for b in widths[1:])

    def reset_parameters(self) -> None:
        for conv in self.convs:
            conv.reset_parameters()

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        if self.self_loops:
            from torch_geometric.utils import add_self_loops

            edge_index = add_self_loops(edge_index, num_nodes=x.shape[0])[0]
        for conv, activation in zip(self.convs, self.activations, strict=True):
            x = activation(conv(x, edge_index))
            if self.kind == "sage":
                x = F.normalize(x, dim=1)
        return x


def _conv(kind: str, in_channels: int, out_channels: int, last: bool, root_weight: bool = True) -> nn.Module:
    from torch_geometric.nn import GATConv, GINConv, SAGEConv

    if kind == "gat":
        heads = 1 if last or out_channels % GAT_HEADS else GAT_HEADS
        return GATConv(in_channels, out_channels // heads, heads=heads)
    if kind == "sage":
        return SAGEConv(in_channels, out_channels, root_weight=root_weight)
    if kind == "gin":
        mlp = nn.Sequential(nn.Linear(in_channels, out_channels), nn.BatchNorm1d(out_channels), nn.ReLU(),
                            nn.Linear(out_channels, out_channels))  # fmt: skip
        return GINConv(mlp)
    raise ValueError(f"unknown encoder {kind!r}")


def check_encoder_output(encoder: nn.Module, out: object, rows: int, hidden: int | None = None) -> torch.Tensor:
    """``out``, what ``encoder`` returned for ``rows`` nodes, if it is a floating-point tensor of shape
    ``(rows, hidden)`` (any width when ``hidden`` is ``None``); else an :class:`EncoderError` naming both shapes."""
    name = type(encoder).__name__
    wanted = f"({rows}, {'hidden' if hidden is None else hidden})"
    if not isinstance(out, torch.Tensor):
        raise EncoderError(f"encoder {name} returned a {type(out).__name__}, not a tensor, for {rows} nodes; it must "
                           f"return one row per node: {wanted}")  # fmt: skip
    shape = tuple(out.shape)
    if out.dim() != 2 or out.shape[0] != rows:
        raise EncoderError(f"encoder {name} returned shape {shape} for {rows} nodes; it must return one row per node: "
                           f"{wanted}")  # fmt: skip
    if hidden is not None and out.shape[1] != hidden:
        raise EncoderError(f"encoder {name} returned shape {shape} for {rows} nodes, but the projection head "
                           f"takes hidden = {hidden} columns: {wanted}; set hidden to the encoder's output "
                           f"width")  # fmt: skip
    if not out.is_floating_point():
        raise EncoderError(f"encoder {name} returned shape {shape} of dtype {out.dtype} for {rows} nodes; it must "
                           f"return floating-point embeddings")  # fmt: skip
    return out


def check_encoder(encoder: nn.Module, features: Features, hidden: int) -> None:
    """Refuse a user's encoder whose output is not one ``hidden``-wide floating-point row per node, from one
    forward pass (in eval mode, without autograd) on the first few nodes and no edges."""
    rows = min(4, features.shape[0])
    x = read_rows(features, torch.arange(rows))
    x = x.to_dense() if isinstance(x, SparseMatrix) else x
    training = encoder.training
    try:
        with torch.no_grad():
            out = encoder.eval()(x, torch.empty(2, 0, dtype=torch.long, device=x.device))
    finally:
        encoder.train(training)
    check_encoder_output(encoder, out, rows, hidden)
