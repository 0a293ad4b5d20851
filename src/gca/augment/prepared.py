"""What GCA computes once per graph before training: the cleaned graph, node centrality and both views' samplers.

:func:`prepare` cleans the graph (:func:`gca.graph.graph.prepare_graph`), computes node centrality φ_c
(:mod:`gca.augment.centrality`) when the augmentation is adaptive, and builds the two views' removal and masking
probabilities (:func:`gca.augment.augmentors.build_augmentors`); training and the PyTorch Geometric transforms start
from it. ``Graph.warnings`` gets a line for ``edge_weight`` or ``edge_attr`` the encoder does not use
(:func:`gca.nn.encoders.unused_edge_values`). Centrality, and so every removal probability, ignores edge weights.
"""

from __future__ import annotations

import functools
import logging
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import torch
from torch import nn
from torch_geometric.data import Data

from ..config import GCAConfig
from ..graph.csr import has_reverse_edge
from ..graph.graph import Graph, prepare_graph
from ..graph.sampling import edge_unit_ids
from ..io import key_digest
from ..mapped import trim_heap
from ..nn.encoders import unused_edge_values
from .augmentors import (
    EdgeDropper,
    EdgeProbabilities,
    FeatureMasker,
    FeatureProbabilities,
    ViewAugmentor,
    build_augmentors,
)
from .centrality import node_centrality


@dataclass
class PreparedGraph:
    """What GCA computes once per graph: the cleaned graph, node centrality and the two view samplers.

    Parameters
    ----------
    graph
        The cleaned graph.
    centrality
        ``[N]`` node centrality, or ``None`` for uniform augmentation.
    views
        The two view samplers.
    seconds
        The time preparing took.
    unit_ids
        The neighbour sampler's augmentation unit of every edge, where stored.
    """

    graph: Graph
    centrality: torch.Tensor | None
    views: tuple[ViewAugmentor, ViewAugmentor]
    seconds: float = 0.0
    #: the neighbour sampler's augmentation unit of every edge (:func:`gca.graph.sampling.edge_unit_ids`), where a
    #: stored prepared graph keeps it; ``None``: the sampler computes it
    unit_ids: torch.Tensor | None = None


class Kept(Protocol):
    """Where arrays computed once per graph are kept between runs (:class:`gca.run.store.PreparedStore`):
    ``kept(name, compute, shape)`` gives the array stored under ``name`` (when of ``shape``), else computes, stores
    and gives it."""

    def kept(
        self, name: str, compute: Callable[[], torch.Tensor], shape: tuple[int, ...] | None = None
    ) -> torch.Tensor: ...


def one_way_note(edges: int) -> str:
    """The warning for a graph of ``edges`` edges given without ``directed`` whose every edge is listed one way only: it
    is trained as a directed graph, which a graph exported without ``to_undirected`` is not meant to be."""
    return (
        f"every edge of the graph is listed one way only (none of its {edges} edges has its reverse), so it is "
        "trained as a directed graph; pass directed=False if it is undirected (each edge then gets its reverse), "
        "or directed=True to keep it directed without this warning"
    )


def preparation_steps(config: GCAConfig, clean: bool = True) -> list[str]:
    """The steps :func:`prepare` names to ``on_step``, in order: cleaning (``clean``: given a ``Data``), centrality
    (adaptive augmentation), the views' probabilities."""
    steps = ["cleaned"] if clean else []
    if _adaptive(config):
        steps.append(f"centrality {config.centrality}")
    return [*steps, "views' probabilities"]


def _adaptive(config: GCAConfig) -> bool:
    """Whether the views' probabilities read the centrality."""
    return config.centrality != "uniform" and "adaptive" in (config.edge_drop, config.feature_mask)


def prepare(
    data: Data | Graph,
    config: GCAConfig,
    directed: bool | None = None,
    encoder: nn.Module | None = None,
    store: Kept | None = None,
    on_step: Callable[[str], None] | None = None,
    edge_probabilities: EdgeProbabilities | None = None,
    feature_probabilities: FeatureProbabilities | None = None,
) -> PreparedGraph:
    """The :class:`PreparedGraph` of ``data``: cleaned (unless it is a :class:`Graph` already), its centrality and both
    views' samplers — GCA's, or with removal and masking probabilities of your own, which :meth:`gca.GCA.fit` then
    trains with (``GCA(config).fit(prepare(data, config, edge_probabilities=mine))``).

    Parameters
    ----------
    data
        A PyG ``Data`` (cleaned by :func:`~gca.graph.graph.prepare_graph`) or a cleaned :class:`~gca.graph.graph.Graph`.
    config
        The settings the probabilities depend on (centrality, p_e, p_f, p_τ, schemes, ``feature_norm``).
    directed
        How a ``Data`` is read, as :meth:`gca.GCA.fit` reads it.
    encoder
        A user's encoder, for the warnings on edge weights or features it does not read; ``None`` for
        ``config.encoder``.
    store
        Where centrality, the probabilities and (mini-batch training, undirected graph) the sampler's unit ids are read
        from when an earlier run kept them, and kept when not (:class:`Kept`), each under a name that says all it
        depends on besides the graph; ``None``: computed here.
    on_step
        Told the name of each step (:func:`preparation_steps`) once it is done; ``None`` for nothing.
    edge_probabilities
        ``edge_probabilities(graph, units, view)`` → a ``[U]`` tensor: view ``view``'s (0 or 1) removal probability
        of each of the ``[2, U]`` edge units — on an undirected graph each edge (u, v) with u < v, removed with its
        reverse — in place of Eq. 3's p^e; ``None`` for GCA's (or the uniform ones ``config`` asks for). Values
        outside [0, 1] are a ``ValueError``.
    feature_probabilities
        ``feature_probabilities(graph, view)`` → a ``[F]`` tensor: view ``view``'s masking probability of each
        feature column, in place of Eq. 5's p^f; ``None`` for GCA's.
    """
    start = time.perf_counter()
    done = on_step or (lambda name: None)
    graph = data if isinstance(data, Graph) else prepare_graph(data, directed, config.feature_norm)
    notes = []
    if not isinstance(data, Graph):
        done("cleaned")
        if directed is None and graph.directed and not has_reverse_edge(graph.edge_index, graph.num_nodes):
            notes.append(one_way_note(graph.edge_index.shape[1]))
    notes += unused_edge_values(
        encoder if encoder is not None else config.encoder, graph.edge_weight is not None, graph.edge_attr is not None
    )
    for note in notes:
        if note not in graph.warnings:
            graph.warnings.append(note)
            # said to a Python user too (the command line prints graph.warnings itself and hides Python's warnings)
            warnings.warn(note, UserWarning, stacklevel=3)
            logging.getLogger("gca.augment").warning(note)
    centrality = None
    if _adaptive(config):
        centrality = _kept(
            store,
            f"centrality-{config.centrality}",
            lambda: node_centrality(config.centrality, graph.edge_index, graph.num_nodes, graph.directed),
            (graph.num_nodes,),
        )
        done(f"centrality {config.centrality}")

    def build() -> tuple[ViewAugmentor, ViewAugmentor]:
        return build_augmentors(
            graph,
            centrality,
            (config.p_e1, config.p_e2),
            (config.p_f1, config.p_f2),
            config.p_tau,
            edge_drop=config.edge_drop,
            feature_mask=config.feature_mask,
            edge_scheme=config.edge_scheme,
            feature_weighting=config.feature_weighting,
            edge_probabilities=edge_probabilities,
            feature_probabilities=feature_probabilities,
        )

    trim_heap()  # the cleaning's freed blocks back to the kernel before the views' temporaries are made
    own = edge_probabilities is not None or feature_probabilities is not None  # not kept: no name says what they are
    views = build() if store is None or own else _kept_views(store, graph, config, build)
    unit_ids = None
    if store is not None and config.batch_size and views[0].symmetric_units:
        unit_ids = store.kept(
            "sampler-units",
            lambda: edge_unit_ids(graph.edge_index, graph.num_nodes, True),
            (graph.edge_index.shape[1],),
        )
    done("views' probabilities")
    return PreparedGraph(graph, centrality, views, time.perf_counter() - start, unit_ids)


#: The settings the views' probabilities depend on besides the graph (and the centrality, named by ``centrality``).
VIEW_SETTINGS = (
    "centrality",
    "edge_drop",
    "feature_mask",
    "edge_scheme",
    "feature_weighting",
    "p_e1",
    "p_e2",
    "p_f1",
    "p_f2",
    "p_tau",
)


def _kept(store: Kept | None, name: str, compute: Callable[[], torch.Tensor], shape: tuple[int, ...]) -> torch.Tensor:
    return compute() if store is None else store.kept(name, compute, shape)


Views = tuple[ViewAugmentor, ViewAugmentor]


def _kept_views(store: Kept, graph: Graph, config: GCAConfig, build: Callable[[], Views]) -> Views:
    """The two views' samplers, their four probability vectors read from ``store`` when kept for these settings;
    ``build()`` (called at most once) computes them where they are not."""
    key = key_digest({k: getattr(config, k) for k in VIEW_SETTINGS}, size=8)
    views = functools.cache(build)

    symmetric = not (graph.directed or config.edge_scheme == "authors")
    # one unit per undirected edge — half the directed ones of a cleaned graph (both directions, no loops) — or
    # per directed edge
    units = graph.edge_index.shape[1] // 2 if symmetric else graph.edge_index.shape[1]
    out = []
    for i in (0, 1):
        edge = store.kept(f"views-{key}-edge{i + 1}", lambda i=i: views()[i].edge_prob, (units,))
        feature = store.kept(f"views-{key}-feature{i + 1}", lambda i=i: views()[i].feature_prob, (graph.num_features,))
        out.append(ViewAugmentor(EdgeDropper(graph.edge_index, symmetric, edge), FeatureMasker(feature)))
    return out[0], out[1]
