"""GCA's trainable model: the shared GCN encoder f and the projection head g (Section 3.1)."""

from __future__ import annotations

import torch
from torch import nn

from .config import GCAConfig
from .encoder import GCNEncoder, ProjectionHead
from .graph import SparseMatrix
from .objective import contrastive_loss


class GCAModel(nn.Module):
    """f and g; :meth:`loss` is −J of Eq. 2 for the embeddings of two views."""

    def __init__(
        self,
        in_channels: int,
        hidden: int = 128,
        proj_hidden: int = 128,
        num_layers: int = 2,
        activation: str = "relu",
        first_layer_factor: int = 2,
        tau: float = 0.4,
        block_size: int = 0,
    ) -> None:
        super().__init__()
        self.encoder = GCNEncoder(in_channels, hidden, num_layers, activation, first_layer_factor)
        self.projector = ProjectionHead(hidden, proj_hidden)
        self.tau = tau
        self.block_size = block_size

    @classmethod
    def from_config(cls, in_channels: int, config: GCAConfig) -> GCAModel:
        return cls(
            in_channels,
            hidden=config.hidden,
            proj_hidden=config.proj_hidden,
            num_layers=config.layers,
            activation=config.activation,
            first_layer_factor=config.first_layer_factor,
            tau=config.tau,
            block_size=config.block_size,
        )

    def reset_parameters(self) -> None:
        self.encoder.reset_parameters()
        self.projector.reset_parameters()

    def forward(
        self,
        features: torch.Tensor | SparseMatrix,
        adjacency: SparseMatrix,
        feature_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Node embeddings H = f(X̃, Ã) (the representation used downstream)."""
        return self.encoder(features, adjacency, feature_mask)

    def loss(self, h1: torch.Tensor, h2: torch.Tensor) -> torch.Tensor:
        """−J: the negated objective of Eq. 2 on the projections g(h1), g(h2)."""
        return contrastive_loss(self.projector(h1), self.projector(h2), self.tau, self.block_size)
