"""Sources of training batches: what each optimisation step of Algorithm 1 trains on.

A :class:`BatchSource` yields each epoch's :class:`Batch` es: a graph's node features, the two view samplers of it,
and the rows whose embeddings enter the objective. Two sources ship:

* :class:`FullGraphBatches` — the whole graph once per epoch, every node an anchor: Algorithm 1 as the paper
  states it (exact; the objective is O(N²·d));
* :class:`NeighborBatches` — mini-batch GCA: each step B anchor nodes (a fresh permutation each epoch), their
  L-hop neighbourhood sampled with fixed fan-outs (:mod:`gca.graph.sampling`), both views drawn on that subgraph with
  the probabilities computed once on the full graph, and the objective over the 2B anchor embeddings — in-batch
  inter- and intra-view negatives. O(B²·d) per step.

A sampled subgraph's edges carry the weights and features of the full graph's edges they stand for, so its GCN
operator is weighted as the whole graph's (degrees, as unweighted, are the subgraph's). A source's state across
epochs (``state_dict`` / ``load_state_dict``) is kept in training checkpoints.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch

from ..augment.augmentors import SubgraphView, ViewAugmentor, ViewSampler
from ..graph.features import Features, dense_input, read_rows
from ..graph.graph import Graph
from ..graph.sampling import NeighborSampler, SampledSubgraph


@dataclass
class Batch:
    """One step's input: the encoder reads ``features``, ``views`` draw the two views' edges among the batch
    graph's ``num_nodes`` nodes, and the objective runs over the rows ``anchors``.

    Parameters
    ----------
    features, num_nodes
        One row per node of the batch's graph, and its number of nodes.
    views
        The two view samplers.
    anchors
        The rows the objective runs over; ``None`` for every node.
    layer_rows
        Per encoder layer, how many leading nodes' outputs are read later; ``None`` for every node's.
    """

    features: Features
    num_nodes: int
    views: tuple[ViewSampler, ViewSampler]
    anchors: torch.Tensor | None = None  # row indices into the batch graph's embeddings; None: every node
    #: per encoder layer, how many leading nodes' outputs are read later (nodes numbered hop by hop, anchors
    #: first); None: every node's (:func:`gca.graph.sparse.layered_normalized_adjacency`)
    layer_rows: tuple[int, ...] | None = None

    @classmethod
    def of_graph(
        cls, graph: Graph, views: tuple[ViewSampler, ViewSampler], anchors: torch.Tensor | None = None
    ) -> Batch:
        """The whole graph's batch; row-normalised features are built whole at each call (keep the batch).
        ``anchors``: the rows the objective runs over; ``None`` for every node."""
        return cls(dense_input(graph.features), graph.num_nodes, views, anchors)


class BatchSource(ABC):
    """Yields the batches of one epoch; may keep state for exact resumption."""

    @abstractmethod
    def batches(self, epoch: int, generator: torch.Generator) -> Iterator[Batch]:
        """The batches of ``epoch`` (from 0); random choices draw from ``generator``."""

    @property
    def steps(self) -> int | None:
        """The batches (updates) of an epoch, where known: progress counts updates by it; ``None`` where an epoch's
        number of batches is not known before it runs."""
        return None

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:  # noqa: B027 - stateless sources need nothing
        pass


class FullGraphBatches(BatchSource):
    """The whole graph (on the training device), one step per epoch, every node an anchor (Algorithm 1)."""

    def __init__(self, graph: Graph, views: tuple[ViewAugmentor, ViewAugmentor]) -> None:
        self.batch = Batch.of_graph(graph, views)  # X̂ built once for every epoch

    steps = 1  # one update of the whole graph an epoch

    def batches(self, epoch: int, generator: torch.Generator) -> Iterator[Batch]:
        yield self.batch


def _epoch_seed(seed: int, epoch: int, rank: int) -> int:
    """A seed for one epoch of one process, so each epoch's draws depend on (seed, epoch, rank) only."""
    mixed = seed * 0x9E3779B97F4A7C15 + (epoch + 1) * 0xBF58476D1CE4E5B9 + (rank + 1) * 0x94D049BB133111EB
    return mixed % (2**63 - 1)


class NeighborBatches(BatchSource):
    """Mini-batch GCA on sampled subgraphs (module docstring).

    Each epoch draws a permutation of the nodes from ``(seed, epoch)`` alone — the same on every process — and
    cuts it into batches of at most ``batch_size`` (B) anchors: with ``steps_per_epoch = 0`` one pass over all nodes
    in ⌈N / B⌉ near-equal batches, else ``steps_per_epoch`` batches of exactly B (a fresh permutation follows when
    they need more nodes than one holds; a batch never holds a node twice). Of ``world_size`` (K) processes, process
    r takes batches r, r + K, … of ``steps × K``, so each step — gradients averaged — sees K·B anchors and an epoch
    still passes over every node once.

    Each epoch re-seeds the training generator from (seed, epoch, rank), so a run resumed from a checkpoint at an
    epoch boundary continues exactly, on every process; checkpoints keep that seed and the layout.

    Parameters
    ----------
    graph, views
        The cleaned graph, on the training device, and the two view samplers of the whole graph.
    batch_size
        B, anchors per batch (at least 2).
    fanouts
        Neighbours sampled per node at each hop (−1: all).
    unit_ids
        The edges' augmentation units computed before; ``None``: computed.
    """

    def __init__(
        self,
        graph: Graph,
        views: tuple[ViewAugmentor, ViewAugmentor],
        batch_size: int,
        fanouts: tuple[int, ...],
        steps_per_epoch: int = 0,
        seed: int = 0,
        rank: int = 0,
        world_size: int = 1,
        unit_ids: torch.Tensor | None = None,
    ) -> None:
        if batch_size < 2:
            raise ValueError("a mini-batch needs at least two anchors")
        self.graph = graph
        self.features = graph.features
        self.batch_size = batch_size
        self.steps_per_epoch = steps_per_epoch
        self.seed, self.rank, self.world_size = seed, rank, world_size
        self.sampler = NeighborSampler(
            graph.edge_index,
            graph.num_nodes,
            fanouts,
            undirected=not graph.directed,
            symmetric_units=views[0].symmetric_units,
            units=unit_ids,
        )
        self.edge_prob = tuple(view.edge_prob for view in views)
        self.maskers = tuple(view.features for view in views)

    @property
    def steps(self) -> int:
        """Optimiser steps per epoch (per process)."""
        if self.steps_per_epoch:
            return self.steps_per_epoch
        return max(1, math.ceil(self.graph.num_nodes / (self.batch_size * self.world_size)))

    def anchor_batches(self, epoch: int) -> list[torch.Tensor]:
        """This process's anchors for each step of ``epoch``."""
        n, device = self.graph.num_nodes, self.sampler.indptr.device
        order_generator = torch.Generator(device=device).manual_seed(_epoch_seed(self.seed, epoch, -1))
        total = self.steps * self.world_size
        if self.steps_per_epoch:
            size = min(self.batch_size, n)
            per_round = n // size  # whole batches per permutation: a batch never repeats a node
            chunks = []
            while len(chunks) < total:
                order = torch.randperm(n, generator=order_generator, device=device)
                chunks.extend(order[: per_round * size].view(per_round, size).unbind(0))
            chunks = chunks[:total]
        else:
            chunks = torch.tensor_split(torch.randperm(n, generator=order_generator, device=device), total)
        return list(chunks[self.rank :: self.world_size])

    def batches(self, epoch: int, generator: torch.Generator) -> Iterator[Batch]:
        generator.manual_seed(_epoch_seed(self.seed, epoch, self.rank))
        for anchors in self.anchor_batches(epoch):
            yield self.batch(self.sampler.sample(anchors, generator))

    def batch(self, sub: SampledSubgraph) -> Batch:
        """The training batch of one sampled subgraph: its features, its two view samplers and its anchors."""
        present, unit = torch.unique(sub.units, return_inverse=True)
        weight, attr = self.graph.edge_weight, self.graph.edge_attr
        if (weight is not None or attr is not None) and sub.edge_ids is None:
            raise ValueError("the sampler gave no edge ids: a weighted graph's subgraph cannot carry its weights")
        weight = None if weight is None else weight[sub.edge_ids]
        attr = None if attr is None else attr[sub.edge_ids]
        views = tuple(
            SubgraphView(sub.edge_index, unit, edge_prob[present], masker, weight, attr)
            for edge_prob, masker in zip(self.edge_prob, self.maskers, strict=True)
        )
        rows = read_rows(self.features, sub.nodes)
        anchors = torch.arange(sub.num_anchors, device=sub.nodes.device)
        layer_rows = tuple(reversed(sub.hop_sizes[:-1]))  # layer i of L is read within L − 1 − i hops
        return Batch(rows, sub.num_nodes, views, anchors, layer_rows)

    def state_dict(self) -> dict[str, Any]:
        return {
            "kind": "neighbor",
            "seed": self.seed,
            "world_size": self.world_size,
            "batch_size": self.batch_size,
            "steps": self.steps,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if state.get("kind") != "neighbor":
            raise ValueError("the checkpoint was written by full-graph training, not mini-batch training")
        if int(state["world_size"]) != self.world_size:
            raise ValueError(
                f"the checkpoint was written by a run of {state['world_size']} processes; resume it with as many "
                "for an exact continuation"
            )


def batch_source(
    graph: Graph,
    views: tuple[ViewAugmentor, ViewAugmentor],
    config: Any,
    device: torch.device,
    rank: int = 0,
    world_size: int = 1,
    unit_ids: torch.Tensor | None = None,
) -> BatchSource:
    """The source ``config`` asks for, on ``device``: sampled subgraphs when it sets a ``batch_size``, else the
    whole graph every epoch.

    Parameters
    ----------
    graph, views
        The cleaned graph and the two view samplers of the whole graph.
    config
        The run's configuration (``batch_size``, ``fanout``, ``steps_per_epoch``, ``seed``).
    device
        Where training runs (the graph and views are moved there).
    rank, world_size
        This process's rank among the ``world_size`` training together: its share of the sampled subgraphs.
    unit_ids
        The sampler's augmentation unit of every edge, where a stored prepared graph kept it
        (:class:`gca.augment.prepared.PreparedGraph`); ``None``: computed.
    """
    views = (views[0].to(device), views[1].to(device))
    if config.batch_size:
        return NeighborBatches(
            graph.to(device),
            views,
            config.batch_size,
            config.fanouts,
            config.steps_per_epoch,
            config.seed,
            rank,
            world_size,
            unit_ids,
        )
    return FullGraphBatches(graph.to(device), views)
