"""Encoders f from PyTorch Geometric's convolutions — GAT, GraphSAGE and GIN — and the rule for users' own.

They are called as PyTorch Geometric's, ``encoder(x, edge_index) → [N, out]``, on dense features (a view's dropped edges
absent from ``edge_index``, its mask multiplying x's columns); widths and activation follow the config as for gca's
default, the GCN of :mod:`gca.nn.gcn`: k layers, in → factor·hidden → … → hidden, the activation after every layer.

* ``gat`` — ``GATConv`` with :data:`GAT_HEADS` concatenated heads in the inner layers (one head in the last);
* ``sage`` — ``SAGEConv``, each layer's output ℓ2-normalised after its activation, as GraphSAGE's Algorithm 1 (line 7)
  does (Hamilton et al., 2017), with one of the paper's aggregators (§3.3; config ``sage_aggregator``): ``gcn`` (the
  default), h_v ← σ(W · mean({h_v} ∪ {h_u : u ∈ N(v)})), a self-loop added to every node and one weight; or ``mean``,
  σ(W₁ h_v + W₂ · mean{h_u : u ∈ N(v)}) (PyTorch Geometric's default);
* ``gin`` — ``GINConv`` around a two-layer perceptron with batch norm, as in GIN's experiments (Xu et al., 2019, §7).

A user's encoder (``GCA(config, encoder=module)``) is any ``torch.nn.Module`` with that call that returns a
floating-point ``[N, config.hidden]`` tensor, one row per row of ``x``. :func:`check_encoder` runs it once on the
first nodes before training, :func:`check_encoder_output` checks every output; anything else is a one-line
:class:`EncoderError` naming the encoder's class, the shape it returned and the shape it must return.

**Edge weights and edge features** (:mod:`gca.graph.graph`). An encoder gets a view's per-edge values, aligned with its
kept edges, through the keyword arguments its ``forward`` names (:func:`edge_arguments`): ``edge_weight`` ([E] float32)
and ``edge_attr`` ([E, D]), when the graph has them; one requiring an argument the graph lacks is an
:class:`EncoderError`. gca's ``gat`` built with ``edge_dim`` passes ``edge_attr`` to every ``GATConv``; gca's gat, sage
and gin ignore weights (their convolutions take no ``edge_weight``; :func:`unused_edge_values` warns).
"""

from __future__ import annotations

import copy
import inspect

import torch
from torch import nn
from torch.nn import functional as F

from ..errors import UserError
from ..graph.features import Features, read_rows
from ..graph.sparse import SparseMatrix, edge_values
from .gcn import make_activation


class EncoderError(UserError, ValueError):
    """A user's encoder returned something other than one ``hidden``-wide floating-point row per node."""


#: Attention heads of GAT's inner layers (concatenated, so each head is width / heads wide), as BGRL's GAT.
GAT_HEADS = 4


def dense_features(features: Features, mask: torch.Tensor | None = None) -> torch.Tensor:
    """X̃ = X ∘ m as a dense tensor (message-passing encoders take dense features); ``mask`` ``None`` for none."""
    x = features if isinstance(features, torch.Tensor) else features.to_dense()
    return x if mask is None else x * mask


#: The per-edge arguments an encoder's ``forward`` may take, by their PyTorch Geometric names.
EDGE_ARGUMENTS = ("edge_weight", "edge_attr")


def edge_arguments(module: nn.Module) -> dict[str, bool]:
    """The per-edge keyword arguments (:data:`EDGE_ARGUMENTS`) ``module.forward`` names (``**kwargs`` names none), each
    mapped to whether it is required (has no default)."""
    try:
        parameters = inspect.signature(module.forward).parameters
    except (TypeError, ValueError):  # a forward without a signature (a C extension): pass nothing
        return {}
    taken = {}
    for name in EDGE_ARGUMENTS:
        parameter = parameters.get(name)
        if parameter is not None and parameter.kind not in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            taken[name] = parameter.default is inspect.Parameter.empty
    return taken


def edge_keywords(
    encoder: nn.Module,
    edge_weight: torch.Tensor | None,
    edge_attr: torch.Tensor | None,
    taken: dict[str, bool] | None = None,
) -> dict[str, torch.Tensor]:
    """The keyword arguments ``encoder`` gets for a view whose edges carry ``edge_weight`` / ``edge_attr`` (either
    ``None``): those its ``forward`` names and the graph has; ``taken`` is its :func:`edge_arguments` computed before
    (``None``: computed here). A required one the graph lacks is an :class:`EncoderError`."""
    taken = edge_arguments(encoder) if taken is None else taken
    given = {"edge_weight": edge_weight, "edge_attr": edge_attr}
    out = {}
    for name, required in taken.items():
        if given[name] is not None:
            out[name] = given[name]
        elif required:
            raise EncoderError(
                f"encoder {type(encoder).__name__} requires {name} but the graph has none; give "
                f"the graph's Data a {name} (one row per edge) or give {name} a default of None"
            )
    return out


def unused_edge_values(encoder: nn.Module | str, has_weight: bool, has_attr: bool) -> list[str]:
    """Warnings naming the per-edge values a graph has (``has_weight``, ``has_attr``) that ``encoder`` (a module, or the
    name of gca's own: gcn, gat, sage, gin) does not use. gca's gat uses ``edge_attr`` when built with ``edge_dim``."""
    if isinstance(encoder, str):
        used = {"gcn": {"edge_weight"}, "gat": {"edge_attr"}}.get(encoder, set())
        name = encoder
    elif isinstance(encoder, MessagePassingEncoder):
        used = ({"edge_attr"} if encoder.edge_dim else set()) | (
            {"edge_weight"} if any("edge_weight" in edge_arguments(conv) for conv in encoder.convs) else set()
        )
        name = encoder.kind
    else:
        used, name = set(edge_arguments(encoder)), type(encoder).__name__
    notes = []
    if has_attr and "edge_attr" not in used:
        advice = (
            "use encoder=gat (edge_dim) or give edge_weight"
            if name == "gcn"
            else "use encoder=gat (edge_dim), or an encoder whose forward takes edge_attr"
        )
        notes.append(f"edge_attr is not used by the {name} encoder; {advice}")
    if has_weight and "edge_weight" not in used:
        notes.append(
            f"edge_weight is not used by the {name} encoder; use encoder=gcn, or an encoder whose forward "
            "takes edge_weight"
        )
    return notes


class MessagePassingEncoder(nn.Module):
    """k convolutions of one PyTorch Geometric kind, each followed by the activation.

    Parameters
    ----------
    kind
        ``"gat"``, ``"sage"`` or ``"gin"``.
    in_channels
        The node features' width F.
    hidden
        The embeddings' width.
    num_layers
        k, at least 2 (else a ``ValueError``).
    activation
        The activation after every layer, by name.
    first_layer_factor
        The inner layers' width as a multiple of ``hidden``.
    sage_aggregator
        ``sage`` only: ``"gcn"`` or ``"mean"`` (module docstring).
    edge_dim
        ``gat`` only: the width of the graph's ``edge_attr``, which every ``GATConv`` then reads (PyTorch Geometric's
        ``edge_dim``); ``None`` for none.
    """

    def __init__(
        self,
        kind: str,
        in_channels: int,
        hidden: int,
        num_layers: int,
        activation: str,
        first_layer_factor: int = 2,
        sage_aggregator: str = "gcn",
        edge_dim: int | None = None,
    ) -> None:
        super().__init__()
        if edge_dim is not None and kind != "gat":
            raise ValueError(f"edge_dim is for the gat encoder, not {kind}")
        self.edge_dim = edge_dim
        if num_layers < 2:
            raise ValueError("the encoder needs at least two layers")
        if sage_aggregator not in ("gcn", "mean"):
            raise ValueError(f"unknown GraphSAGE aggregator {sage_aggregator!r}; choose gcn or mean")
        inner = first_layer_factor * hidden
        widths = [in_channels] + [inner] * (num_layers - 1) + [hidden]
        self.kind = kind
        self.self_loops = kind == "sage" and sage_aggregator == "gcn"  # the node itself enters the mean
        self.convs = nn.ModuleList(
            _conv(kind, a, b, last=i == num_layers - 1, root_weight=not self.self_loops, edge_dim=edge_dim)
            for i, (a, b) in enumerate(zip(widths[:-1], widths[1:], strict=True))
        )
        self._takes_weight = [("edge_weight" in edge_arguments(conv)) for conv in self.convs]
        self.activations = nn.ModuleList(make_activation(activation, b) for b in widths[1:])

    def reset_parameters(self) -> None:
        for conv in self.convs:
            conv.reset_parameters()

    def forward(
        self,
        x: torch.Tensor,
        edge_index: torch.Tensor,
        edge_weight: torch.Tensor | None = None,
        edge_attr: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """The ``[N, hidden]`` embeddings.

        Parameters
        ----------
        x
            ``[N, F]`` dense node features.
        edge_index
            ``[2, E]`` edges.
        edge_weight
            ``[E]`` edge weights, passed to each convolution whose ``forward`` takes them (none of gat, sage, gin:
            ignored there).
        edge_attr
            ``[E, D]`` edge features, passed to each ``GATConv`` when built with ``edge_dim`` (required then).
        """
        extra: dict[str, torch.Tensor] = {}
        if self.edge_dim is not None:
            if edge_attr is None:
                raise EncoderError(
                    f"the gat encoder was built with edge_dim={self.edge_dim} but the graph has no "
                    "edge_attr; give the graph's Data an edge_attr or train without edge_dim"
                )
            attr = edge_attr.unsqueeze(1) if edge_attr.dim() == 1 else edge_attr
            if attr.shape[1] != self.edge_dim:
                raise EncoderError(
                    f"the gat encoder was built with edge_dim={self.edge_dim} but edge_attr has {attr.shape[1]} columns"
                )
            extra["edge_attr"] = attr.to(x.dtype)
        if self.self_loops:
            from torch_geometric.utils import add_self_loops

            edge_index, edge_weight = add_self_loops(edge_index, edge_weight, fill_value=1.0, num_nodes=x.shape[0])
        for conv, takes_weight, activation in zip(self.convs, self._takes_weight, self.activations, strict=True):
            keywords = dict(extra, edge_weight=edge_weight) if takes_weight and edge_weight is not None else extra
            x = activation(conv(x, edge_index, **keywords))
            if self.kind == "sage":
                x = F.normalize(x, dim=1)
        return x


def _conv(
    kind: str, in_channels: int, out_channels: int, last: bool, root_weight: bool = True, edge_dim: int | None = None
) -> nn.Module:
    from torch_geometric.nn import GATConv, GINConv, SAGEConv

    if kind == "gat":
        heads = 1 if last or out_channels % GAT_HEADS else GAT_HEADS
        if edge_dim is None:
            return GATConv(in_channels, out_channels // heads, heads=heads)
        return GATConv(in_channels, out_channels // heads, heads=heads, edge_dim=edge_dim)
    if kind == "sage":
        return SAGEConv(in_channels, out_channels, root_weight=root_weight)
    if kind == "gin":
        mlp = nn.Sequential(
            nn.Linear(in_channels, out_channels),
            nn.BatchNorm1d(out_channels),
            nn.ReLU(),
            nn.Linear(out_channels, out_channels),
        )
        return GINConv(mlp)
    raise ValueError(f"unknown encoder {kind!r}")


def check_encoder_output(encoder: nn.Module, out: object, rows: int, hidden: int | None = None) -> torch.Tensor:
    """``out``, what ``encoder`` returned for ``rows`` nodes, if it is a floating-point tensor of shape ``(rows,
    hidden)`` (any width when ``hidden`` is ``None``); else an :class:`EncoderError` naming the encoder and both shapes.
    """
    name = type(encoder).__name__
    wanted = f"({rows}, {'hidden' if hidden is None else hidden})"
    if not isinstance(out, torch.Tensor):
        raise EncoderError(
            f"encoder {name} returned a {type(out).__name__}, not a tensor, for {rows} nodes; it must "
            f"return one row per node: {wanted}"
        )
    shape = tuple(out.shape)
    if out.dim() != 2 or out.shape[0] != rows:
        raise EncoderError(
            f"encoder {name} returned shape {shape} for {rows} nodes; it must return one row per node: {wanted}"
        )
    if hidden is not None and out.shape[1] != hidden:
        raise EncoderError(
            f"encoder {name} returned shape {shape} for {rows} nodes, but the projection head "
            f"takes hidden = {hidden} columns: {wanted}; set hidden to the encoder's output "
            f"width"
        )
    if not out.is_floating_point():
        raise EncoderError(
            f"encoder {name} returned shape {shape} of dtype {out.dtype} for {rows} nodes; it must "
            f"return floating-point embeddings"
        )
    # the projection head and the objective take float32, or bf16 inside an update that computes in bf16
    # (gca.precision: autocast's products give bf16)
    in_bf16 = out.dtype == torch.bfloat16 and torch.is_autocast_enabled(out.device.type)
    if out.dtype != torch.float32 and not in_bf16:
        raise EncoderError(
            f"encoder {name} returned {str(out.dtype).removeprefix('torch.')} embeddings; return "
            "float32 (e.g. .float()), the precision the projection head and objective take"
        )
    return out


def check_encoder(encoder: nn.Module, features: Features, hidden: int, edges: torch.Tensor | None = None) -> None:
    """Refuse a user's encoder that holds a ``cached=True`` convolution (it would keep one view's edges for all) or
    whose output is not one ``hidden``-wide floating-point row per node, from one forward pass of a copy (eval mode,
    no autograd) on the first few nodes and no edges. ``edges`` (the graph's ``edge_index``) gives an encoder that
    takes ``edge_weight`` / ``edge_attr`` empty ones of the right width, and refuses one that requires a value the
    graph lacks; without it, such an encoder is checked at its first training step."""
    cached = [type(m).__name__ for m in encoder.modules() if getattr(m, "cached", None) is True]
    if cached:
        raise EncoderError(
            f"encoder {type(encoder).__name__} holds {cached[0]}(cached=True), which keeps the first graph it sees, "
            "but GCA's two views drop different edges at every update; build it with cached=False"
        )
    rows = min(4, features.shape[0])
    x = read_rows(features, torch.arange(rows))
    x = x.to_dense() if isinstance(x, SparseMatrix) else x
    taken = edge_arguments(encoder)
    if edges is None and any(taken.values()):
        return  # its edge values are unknown here; every output in training is checked
    weight, attr = edge_values(edges) if edges is not None else (None, None)
    keywords = {name: values[:0].to(x.device) for name, values in edge_keywords(encoder, weight, attr, taken).items()}
    with torch.no_grad():  # on a copy: the check leaves no state (a cache, a counter) in the encoder trained
        out = copy.deepcopy(encoder).eval()(x, torch.empty(2, 0, dtype=torch.long, device=x.device), **keywords)
    check_encoder_output(encoder, out, rows, hidden)
