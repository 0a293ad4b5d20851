"""Sources of training batches: what each optimisation step of Algorithm 1 trains on.

A :class:`BatchSource` yields, for each epoch, the :class:`Batch` es of that epoch. A batch is a graph, the two
view samplers whose probabilities belong to it, and the rows whose embeddings enter the objective. Today's source
is the whole graph once per epoch (:class:`FullGraphBatches`, the paper's full-batch training); sampled subgraphs
around anchor nodes, or each process's share of the rows, are further sources with the same interface — the
training loop (:func:`gca.train.train`) does not change for them.

A source that keeps state across epochs (a sampler's position) exposes it through ``state_dict`` /
``load_state_dict``, and training checkpoints carry it, so ``--resume`` continues exactly.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch

from .augment import ViewAugmentor
from .graph import Graph


@dataclass
class Batch:
    """One step's input: views are sampled on ``graph`` by ``views``; the objective runs over ``anchors``."""

    graph: Graph
    views: tuple[ViewAugmentor, ViewAugmentor]
    anchors: torch.Tensor | None = None  # row indices into the batch graph's embeddings; None: every node


class BatchSource(ABC):
    """Yields the batches of one epoch; may keep state for exact resumption."""

    @abstractmethod
    def batches(self, epoch: int, generator: torch.Generator) -> Iterator[Batch]:
        """The batches of ``epoch`` (0-based); random choices draw from ``generator``."""

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:  # noqa: B027 - stateless sources need nothing
        pass


class FullGraphBatches(BatchSource):
    """The whole graph, one step per epoch, every node an anchor (Algorithm 1 as the paper states it)."""

    def __init__(self, graph: Graph, views: tuple[ViewAugmentor, ViewAugmentor]) -> None:
        self.batch = Batch(graph, views)

    def batches(self, epoch: int, generator: torch.Generator) -> Iterator[Batch]:
        yield self.batch
