"""GCA's trainable model: the shared encoder f, the projection head g and the objective (Section 3.1)."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from .config import GCAConfig
from .encoder import GCNEncoder, ProjectionHead
from .graph import SparseMatrix
from .objective import ContrastiveObjective


class GCAModel(nn.Module):
    """f, g and the objective, each passed in (as PyTorch Geometric's ``DeepGraphInfomax`` takes its encoder).

    ``model(features, adjacency, mask)`` is the embedding H = f(X̃, Ã) used downstream; ``model.loss(h1, h2)``
    is the objective on the projections g(h1), g(h2) — −J of Eq. 2 with :class:`ContrastiveObjective`.
    :meth:`from_config` builds the paper's parts.
    """

    def __init__(self, encoder: nn.Module, projector: nn.Module, objective: nn.Module) -> None:
        super().__init__()
        self.encoder = encoder
        self.projector = projector
        self.objective = objective

    @classmethod
    def from_config(cls, in_channels: int, config: GCAConfig, objective: nn.Module | None = None) -> GCAModel:
        """The paper's encoder and projection head sized by ``config``; its objective unless one is given."""
        encoder = GCNEncoder(in_channels, config.hidden, config.layers, config.activation, config.first_layer_factor)
        projector = ProjectionHead(config.hidden, config.proj_hidden)
        objective = objective or ContrastiveObjective(
            config.tau, config.block_size, backend=config.loss_backend, precision=config.precision
        )
        return cls(encoder, projector, objective)

    def reset_parameters(self) -> None:
        self.encoder.reset_parameters()
        self.projector.reset_parameters()

    def forward(
        self,
        features: torch.Tensor | SparseMatrix,
        adjacency: SparseMatrix | Sequence[SparseMatrix],
        feature_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Node embeddings H = f(X̃, Ã) (the representation used downstream); ``adjacency`` may be one operator
        per layer (:meth:`gca.encoder.GCNEncoder.forward`)."""
        return self.encoder(features, adjacency, feature_mask)

    def loss(self, h1: torch.Tensor, h2: torch.Tensor) -> torch.Tensor:
        """The objective on the projections g(h1), g(h2) of two views' embeddings."""
        return self.objective(self.projector(h1), self.projector(h2))
