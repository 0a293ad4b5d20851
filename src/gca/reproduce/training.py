"""How Table 3's unsupervised baselines train (:mod:`gca.reproduce.baselines`, :mod:`gca.reproduce.gmi`,
:mod:`gca.reproduce.mvgrl`): their inputs, seeded; the loop of full-graph Adam steps with early stopping on the
loss; and what a training did, kept in its run record (:class:`TrainingHistory`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import torch
from torch import nn
from torch_geometric import seed_everything
from torch_geometric.data import Data

from ..graph.features import normalize_rows
from ..progress import phase
from ..train.loop import TrainingError


def row_normalized_features(data: Data, device: torch.device) -> torch.Tensor:
    """The features ``data.x`` (dense or sparse) as a dense tensor on ``device``, rows scaled as GCA's encoder
    input (:func:`gca.graph.features.normalize_rows`)."""
    x = data.x.to_dense() if data.x.is_sparse else data.x
    return torch.from_numpy(normalize_rows(x.float().numpy())).to(device)


def seeded_inputs(data: Data, seed: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """Every generator seeded, then the row-normalised features and the edge index on ``device``."""
    seed_everything(seed)
    return row_normalized_features(data, device), data.edge_index.to(device)


@dataclass
class TrainingHistory:
    """What one training of an unsupervised baseline did, for its run record: the loss of every epoch, the cap and
    the patience it ran under, and the epoch whose weights give the embeddings.

    Parameters
    ----------
    losses
        The loss of each epoch's step, computed before that step's update, in epoch order.
    patience
        Epochs without a new lowest loss that end training (0: none; the last epoch's weights are kept).
    kept_epoch
        The epoch (from 1) right after whose update the kept weights were taken.
    stopped_early
        Whether early stopping ended training, also on its last allowed epoch.
    details
        What else the baseline's record says of its training (MVGRL: how its diffusion was kept).
    """

    losses: list[float]
    max_epochs: int
    patience: int
    kept_epoch: int
    stopped_early: bool = False
    details: dict = field(default_factory=dict)

    @property
    def epochs_run(self) -> int:
        return len(self.losses)

    def to_dict(self) -> dict:
        kept = (
            f"right after epoch {self.kept_epoch}'s update, the epoch of the lowest loss"
            if self.patience
            else "last epoch"
        )
        return {
            "epochs_run": self.epochs_run,
            "max_epochs": self.max_epochs,
            "patience": self.patience,
            "stopping_epoch": self.epochs_run if self.stopped_early else None,
            "kept_weights": kept,
            "kept_epoch": self.kept_epoch,
            **self.details,
            "losses": list(self.losses),
        }


class Trained(NamedTuple):
    """A baseline's embeddings of every node and the training that made them."""

    embeddings: torch.Tensor
    training: TrainingHistory


def fit(
    name: str,
    model: nn.Module,
    loss_of: Callable[[nn.Module], torch.Tensor],
    lr: float,
    epochs: int,
    patience: int = 0,
    progress: bool = False,
) -> TrainingHistory:
    """The loop the unsupervised baselines train by: Adam at ``lr``, one full-graph step of ``loss_of(model)`` per
    epoch; a :class:`TrainingHistory`. With ``patience`` (DGI's reference setting) the weights right after the lowest
    loss's step are kept and training stops after ``patience`` epochs without a new lowest; without, the last weights
    are kept. A loss that is not finite stops it with a one-line error. ``progress`` shows epochs and loss on stderr."""
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    best, best_state, waited, kept, stopped = float("inf"), None, 0, 0, False
    losses: list[float] = []
    with contextlib.closing(phase(epochs, f"{name} training", "epoch", enabled=progress)) as bar:
        for epoch in range(epochs):
            model.train()
            optimizer.zero_grad()
            loss = loss_of(model)
            value = loss.item()
            if not np.isfinite(value):
                raise TrainingError(f"{name}'s loss became {value} at epoch {epoch + 1}")
            losses.append(value)
            loss.backward()
            optimizer.step()
            bar.update(loss=f"{value:.4f}")
            if patience and value < best:
                best, waited, kept = value, 0, epoch + 1
                best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
            elif patience:
                waited += 1
                if waited == patience:
                    stopped = True
                    break
    if best_state is not None:
        model.load_state_dict(best_state)
    model.eval()
    return TrainingHistory(losses, epochs, patience, kept if best_state is not None else len(losses), stopped)
