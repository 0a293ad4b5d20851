"""GCA's trainable model: the shared encoder f, the projection head g and the objective (Section 3.1).

An encoder called as PyTorch Geometric's (``encoder(x, edge_index)``: gca's GAT, GraphSAGE and GIN, or a user's) has
every output checked — a floating-point tensor with one row per row of ``x``, as wide as the projection head's input
(:func:`gca.nn.encoders.check_encoder_output`) — so a wrong shape is one line, never a silently wrong result. The cache
of dense features such an encoder reads is not part of the model's state: ``copy.deepcopy`` and ``pickle`` leave it out.

A view's edges may carry per-edge values (an :class:`~gca.graph.sparse.EdgeList`): the GCN then uses the weighted
normalised adjacency (:mod:`gca.graph.sparse`), and an encoder called as PyTorch Geometric's gets ``edge_weight`` /
``edge_attr`` as keywords when its ``forward`` names them (:func:`gca.nn.encoders.edge_keywords`), row i of each
belonging to column i of that view's ``edge_index``.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import torch
from torch import nn
from torch.profiler import record_function
from torch_geometric.nn.inits import reset

from ..config import GCAConfig
from ..graph.sparse import SparseMatrix, edge_values, layered_normalized_adjacency, normalized_adjacency
from ..objective import ContrastiveObjective, ObjectiveShare
from .encoders import MessagePassingEncoder, check_encoder_output, dense_features, edge_arguments, edge_keywords
from .gcn import GCNEncoder, ProjectionHead


class GCAModel(nn.Module):
    """f, g and the objective, each passed in (as PyTorch Geometric's ``DeepGraphInfomax`` takes its encoder).

    ``model(x, edge_index)`` is the embedding H = f(X, A) used downstream, as PyTorch Geometric's models take a graph;
    ``model.loss(h1, h2)`` is the objective on the projections g(h1), g(h2) — −J of Eq. 2 with
    :class:`ContrastiveObjective`. :meth:`from_config` builds the paper's parts.

    Parameters
    ----------
    encoder
        f: gca's :class:`~gca.nn.gcn.GCNEncoder` (called with a normalised sparse adjacency), or any module called
        as PyTorch Geometric's, ``encoder(x, edge_index)``.
    projector
        g, applied to each view's embeddings before the objective (such as :class:`~gca.nn.gcn.ProjectionHead`).
    objective
        A module ``objective(u, v) → loss`` on the two views' projections.
    """

    def __init__(self, encoder: nn.Module, projector: nn.Module, objective: nn.Module) -> None:
        super().__init__()
        self.encoder = encoder
        self.projector = projector
        self.objective = objective
        self._dense: tuple | None = None  # (features, their dense form) for a message-passing encoder
        self._edge_arguments: dict[str, bool] | None = None  # the encoder's per-edge keywords, read once

    def __getstate__(self) -> dict:
        """The module's state without the dense-features cache (a copy of the input, and maybe of a sparse
        matrix that ``copy.deepcopy`` cannot copy): copies and pickles rebuild it on first use."""
        state = super().__getstate__()
        state["_dense"] = None
        state["_edge_arguments"] = None
        return state

    @classmethod
    def from_config(
        cls,
        in_channels: int,
        config: GCAConfig,
        objective: nn.Module | None = None,
        share: ObjectiveShare | None = None,
        encoder: nn.Module | None = None,
        edge_dim: int | None = None,
    ) -> GCAModel:
        """The encoder ``config`` names (or the one given) and the projection head sized by it; the paper's objective
        unless one is given.

        Parameters
        ----------
        in_channels
            The node features' width F.
        config
            Names the encoder and sizes it and the head (``encoder``, ``hidden``, ``proj_hidden``, ``layers``,
            ``activation``, ``first_layer_factor``, ``sage_aggregator``) and the objective (``tau``, ``block_size``,
            ``loss_backend``, ``precision``).
        objective
            A module ``objective(u, v) → loss`` to use instead of the paper's.
        share
            This process's share of the objective's rows under torch.distributed (:mod:`gca.train.distributed`);
            ``None`` for all of them.
        encoder
            A user's encoder module, called as ``encoder(x, edge_index)``, to use instead of the one ``config`` names.
        edge_dim
            The width of the graph's ``edge_attr`` (``Graph.edge_dim``), which the gat encoder's convolutions then read;
            the other encoders of ``config`` ignore it. ``None`` without edge features.
        """
        factor = config.first_layer_factor
        if encoder is None and config.encoder == "gcn":
            encoder = GCNEncoder(in_channels, config.hidden, config.layers, config.activation, factor)
        elif encoder is None:
            encoder = MessagePassingEncoder(
                config.encoder,
                in_channels,
                config.hidden,
                config.layers,
                config.activation,
                factor,
                config.sage_aggregator,
                edge_dim if config.encoder == "gat" else None,
            )
        projector = ProjectionHead(config.hidden, config.proj_hidden)
        objective = objective or ContrastiveObjective(
            config.tau, config.block_size, share=share, backend=config.loss_backend, precision=config.precision
        )
        return cls(encoder, projector, objective)

    @classmethod
    def from_weights(
        cls, weights: Any, in_channels: int, config: GCAConfig, encoder: nn.Module | None = None
    ) -> GCAModel:
        """The model ``config`` describes (for ``in_channels`` input features) holding ``weights``, a checkpoint's
        ``model`` state dict (``encoder``: a user's module of the same class and shape to load into). Names and shapes
        are compared on PyTorch's meta device first, so a huge claimed width is refused before anything is built; a
        mismatch raises ``ValueError`` or ``TypeError``."""
        if not isinstance(weights, dict) or not all(isinstance(v, torch.Tensor) for v in weights.values()):
            raise TypeError("its 'model' entry is not a table of tensors")
        if in_channels < 1:
            raise ValueError(f"in_channels is {in_channels}")
        edge_weight = weights.get("encoder.convs.0.lin_edge.weight") if encoder is None else None
        edge_dim = None if edge_weight is None or edge_weight.dim() != 2 else int(edge_weight.shape[1])  # gat's
        with torch.device("meta"):  # a user's encoder exists already, at its own size
            model = cls.from_config(in_channels, config, encoder=encoder, edge_dim=edge_dim)
            kinds = {k: v.is_floating_point() for k, v in model.state_dict().items()}
            expected = {k: tuple(v.shape) for k, v in model.state_dict().items()}
        found = {k: tuple(v.shape) for k, v in weights.items()}
        for name in sorted(set(expected) | set(found)):
            if expected.get(name) != found.get(name):
                raise ValueError(
                    f"its config needs {name} of shape {expected.get(name)}, the file holds {found.get(name)}"
                )
            if kinds[name] != weights[name].is_floating_point():  # integer weights would load truncated, silently
                raise ValueError(
                    f"{name} holds {str(weights[name].dtype).removeprefix('torch.')} values where the "
                    f"model keeps {'floating-point' if kinds[name] else 'integer'} ones"
                )
        model = cls.from_config(in_channels, config, encoder=encoder, edge_dim=edge_dim)
        model.load_state_dict(weights)
        return model

    def reset_parameters(self) -> None:
        for part in (self.encoder, self.projector, self.objective):
            reset(part)  # PyTorch Geometric's: the part's own reset_parameters, else each of its children's

    @property
    def takes_edge_index(self) -> bool:
        """Whether the encoder is called as PyTorch Geometric's, ``encoder(x, edge_index)`` (:mod:`gca.nn.encoders`),
        rather than with gca's normalised sparse adjacency."""
        return not isinstance(self.encoder, GCNEncoder)

    def encode(
        self,
        features: torch.Tensor | SparseMatrix,
        edge_index: torch.Tensor,
        num_nodes: int,
        symmetric: bool = False,
        layer_rows: Sequence[int] | None = None,
        feature_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """H = f(X̃, Ã) of one view given by its kept edges (``feature_mask`` m: ``None`` for none).

        The GCN gets D̂^{-1/2}(Ã + I)D̂^{-1/2} (weighted by the values ``edge_index`` carries), built for an undirected
        graph when ``symmetric``, one operator per layer on a sampled subgraph (``layer_rows``: the rows each layer's
        output is read at; ``None`` for the whole graph). A message-passing encoder gets the edges, masked features
        and, as the module docstring says, the edge values.
        """
        if self.takes_edge_index:
            if self._dense is None or self._dense[0] is not features:  # densified once per feature matrix
                self._dense = (features, dense_features(features))
            x = self._dense[1]
            if self._edge_arguments is None:
                self._edge_arguments = edge_arguments(self.encoder)
                encoder = self.encoder
                if (
                    isinstance(encoder, MessagePassingEncoder)
                    and encoder.kind == "gat"
                    and encoder.edge_dim is None
                    and edge_values(edge_index)[1] is not None
                ):
                    warnings.warn(
                        "edge_attr is not used by this gat encoder: it was built without edge_dim "
                        "(GCAModel.from_config(..., edge_dim=graph.edge_dim))",
                        stacklevel=2,
                    )
            keywords = edge_keywords(self.encoder, *edge_values(edge_index), self._edge_arguments)
            out = self.encoder(
                x if feature_mask is None else x * feature_mask, edge_index.long().as_subclass(torch.Tensor), **keywords
            )  # PyG's dtype; a plain tensor
            return check_encoder_output(self.encoder, out, x.shape[0], getattr(self.projector, "channels", None))
        with record_function("gca.operator"):
            if layer_rows is not None:  # a sampled subgraph: each layer only where its output is read
                adjacency = layered_normalized_adjacency(edge_index, num_nodes, layer_rows)
            else:
                adjacency = normalized_adjacency(edge_index, num_nodes, symmetric=symmetric)
        with record_function("gca.encoder"):
            return self.encoder(features, adjacency, feature_mask)

    def forward(
        self,
        features: torch.Tensor | SparseMatrix,
        edges: torch.Tensor | SparseMatrix | Sequence[SparseMatrix],
        feature_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Node embeddings H = f(X̃, Ã), used downstream: ``edges`` the ``edge_index`` (any encoder) or the GCN's
        normalised adjacency (a list: one per layer, :meth:`gca.nn.gcn.GCNEncoder.forward`); ``feature_mask`` m."""
        if isinstance(edges, torch.Tensor):
            return self.encode(features, edges, features.shape[0], feature_mask=feature_mask)
        return self.encoder(features, edges, feature_mask)

    def loss(self, h1: torch.Tensor, h2: torch.Tensor) -> torch.Tensor:
        """The objective on the projections g(h1), g(h2) of two views' embeddings: the scalar loss to minimise (−J of
        Eq. 2 with the paper's objective).

        Parameters
        ----------
        h1, h2
            The two views' embeddings of the same nodes, row i of each node i.
        """
        with record_function("gca.projection"):
            u, v = self.projector(h1), self.projector(h2)
        with record_function("gca.objective"):
            return self.objective(u, v)
