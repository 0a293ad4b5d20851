"""What GCA computes once per graph before training: the cleaned graph, node centrality and both views' samplers.

:func:`prepare` cleans the graph (:func:`gca.graph.graph.prepare_graph`, unless it is a :class:`~gca.graph.graph.Graph`
already), computes node centrality φ_c (:mod:`gca.augment.centrality`) when the augmentation is adaptive, and builds
the two views' removal and masking probabilities (:func:`gca.augment.augmentors.build_augmentors`). Training
(:mod:`gca.train`) and the PyTorch Geometric transforms (:mod:`gca.augment.transforms`) start from it.

A graph with ``edge_weight`` or ``edge_attr`` (:mod:`gca.graph.graph`) gets a line in ``Graph.warnings`` for each of
them that the encoder does not use (:func:`gca.nn.encoders.unused_edge_values`): e.g. "edge_attr is not used by the
gcn encoder; use encoder=gat (edge_dim) or give edge_weight". Centrality, and so every removal probability, is
computed on the unweighted graph whether or not it has weights.
"""

from __future__ import annotations

import logging
import time
import warnings
from dataclasses import dataclass

import torch
from torch import nn
from torch_geometric.data import Data

from ..config import GCAConfig
from ..graph.graph import Graph, prepare_graph
from ..nn.encoders import unused_edge_values
from .augmentors import ViewAugmentor, build_augmentors
from .centrality import node_centrality


@dataclass
class PreparedGraph:
    """What GCA computes once per graph: the cleaned graph, node centrality (``None`` for uniform augmentation)
    and the two view samplers with their per-edge and per-feature probabilities."""

    graph: Graph
    centrality: torch.Tensor | None
    views: tuple[ViewAugmentor, ViewAugmentor]
    seconds: float = 0.0


def prepare(data: Data | Graph, config: GCAConfig, directed: bool | None = None,
            encoder: nn.Module | None = None) -> PreparedGraph:  # fmt: skip
    """Clean ``data`` (unless it is a :class:`Graph` already) and compute centrality and both views' probabilities.
    ``encoder``: a user's encoder, else the one ``config.encoder`` names, for the warnings on unused edge values."""
    start = time.perf_counter()
    graph = data if isinstance(data, Graph) else prepare_graph(data, directed, config.feature_norm)
    for note in unused_edge_values(encoder if encoder is not None else config.encoder,
                                   graph.edge_weight is not None, graph.edge_attr is not None):  # fmt: skip
        if note not in graph.warnings:
            graph.warnings.append(note)
            # said to a Python user too (the command line prints graph.warnings itself and hides Python's warnings)
            warnings.warn(note, UserWarning, stacklevel=3)
            logging.getLogger("gca.augment").warning(note)
    adaptive = config.centrality != "uniform" and "adaptive" in (config.edge_drop, config.feature_mask)
    centrality = None
    if adaptive:
        centrality = node_centrality(config.centrality, graph.edge_index, graph.num_nodes, graph.directed)
    views = build_augmentors(
        graph, centrality, (config.p_e1, config.p_e2), (config.p_f1, config.p_f2), config.p_tau,
        edge_drop=config.edge_drop, feature_mask=config.feature_mask, edge_scheme=config.edge_scheme,
        feature_weighting=config.feature_weighting,
    )  # fmt: skip
    return PreparedGraph(graph, centrality, views, time.perf_counter() - start)

