"""Adaptive graph augmentation (Section 3.2 of Zhu et al., WWW 2021).

Topology: an edge (u, v) is removed with probability

    p^e_uv = min( (s_max − s_uv) / (s_max − μ_s) · p_e , p_τ ),   s_uv = log w_uv,

where w_uv = (φ(u) + φ(v)) / 2 on undirected graphs and w_uv = φ(v) (the node the edge points to) on directed ones.
Attributes: one mask m ∈ {0, 1}^F per view, shared by all nodes, m_i ~ Bern(1 − p^f_i), with p^f_i given by the same
normalisation of s_i = log w_i, w_i = Σ_u x_ui φ(u) (binary features) or Σ_u |x_ui| φ(u) (dense features).

Edge cases, where the formula is undefined:

* **Constant weights** (s_max = μ_s: a regular graph under degree centrality, one edge): every probability min(p, p_τ).
* **All-zero feature columns** (w_i = 0, log w_i = −∞): p_τ, and left out of s_max and μ_s (taken over the rest).
* **No items** (a graph without edges): an empty probability vector; sampling returns no edges.

The uniform variants used in the ablations (GCA–T, GCA–A, and GCA–T–A = GRACE) give every item probability p.

**Weighted graphs.** A view's edge list carries each kept edge's own weight and features (an
:class:`~gca.graph.sparse.EdgeList`), so its GCN uses the weighted adjacency of the kept edges. Centrality φ is
computed on the unweighted graph, so a graph with weights and without drop the same edges with the same draws
(design notes: docs/design/core.md).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import scipy.sparse as sp
import torch

from ..graph.features import ROW_BLOCK
from ..graph.graph import Graph
from ..graph.sparse import edge_list, edge_values


def drop_probabilities(weights: torch.Tensor, p: float, p_tau: float) -> torch.Tensor:
    """One float64 p_i = min((s_max − s_i)/(s_max − μ_s) · p, p_τ) per weight, s = log w; zero weights get p_τ.

    Parameters
    ----------
    weights
        The importance weights w (edge or feature centralities), non-negative (a negative one is a ``ValueError``).
    p
        The mean probability p before the cut-off.
    p_tau
        p_τ, the cut-off.
    """
    weights = weights.to(torch.float64)
    return _probabilities(lambda: [weights], (p,), p_tau, torch.float64)[0]


def _probabilities(
    blocks: Callable[[], Iterable[torch.Tensor]], ps: Sequence[float], p_tau: float, dtype: torch.dtype
) -> list[torch.Tensor]:
    """:func:`drop_probabilities` for each mean probability of ``ps``, over the float64 weights that ``blocks()``
    yields block by block (called twice: max s and the mean of s = log w over weights w > 0 as a sum of block sums,
    then the probabilities), holding no array of all weights besides the results."""
    s_max, s_sum, informative, count = -math.inf, 0.0, 0, 0
    for weights in blocks():
        if weights.numel() and (weights < 0).any():
            raise ValueError("importance weights must be non-negative")
        count += weights.numel()
        logs = weights[weights > 0].log_()
        if logs.numel():
            s_max = max(s_max, float(logs.max()))
            s_sum += float(logs.sum())
            informative += logs.numel()
    results = [torch.full((count,), p_tau, dtype=dtype) for _ in ps]
    if not informative:
        return results
    spread = s_max - s_sum / informative
    flat = spread <= 1e-12 * max(1.0, abs(s_max))
    written = 0
    for weights in blocks():
        positive = weights > 0
        logs = weights[positive].log_()
        for out, p in zip(results, ps, strict=True):
            probs = torch.full_like(weights, p_tau)
            probs[positive] = _from_logs(logs.clone(), s_max, spread, flat, p, p_tau)
            out[written : written + weights.numel()] = probs
        written += weights.numel()
    return results


def _from_logs(logs: torch.Tensor, s_max, spread, flat: bool, p: float, p_tau: float) -> torch.Tensor | float:
    """min((s_max − s) / (s_max − μ_s) · p, p_τ) for the log-weights ``logs`` (overwritten); ``min(p, p_τ)`` for
    all when the log-weights do not spread (``flat``)."""
    return min(p, p_tau) if flat else logs.neg_().add_(s_max).div_(spread).mul_(p).clamp_(max=p_tau)


#: Edge units weighed at a time by :func:`edge_drop_probabilities`.
UNIT_BLOCK = 1 << 20


def edge_drop_probabilities(
    edge_index: torch.Tensor, centrality: torch.Tensor, symmetric: bool, p_e: tuple[float, ...], p_tau: float
) -> list[torch.Tensor]:
    """Each view's p^e_uv for the mean removal probabilities ``p_e``, from the ``[N]`` node centrality, as
    :func:`drop_probabilities` gives them (float32, in :func:`edge_units` order: the edges (u, v), u < v, of
    ``edge_index`` when ``symmetric``, else every edge), :data:`UNIT_BLOCK` units at a time."""
    centrality = centrality.to(torch.float64).cpu()
    source, target = edge_index.cpu()

    def blocks():
        for start in range(0, source.numel(), UNIT_BLOCK):
            s, t = source[start : start + UNIT_BLOCK], target[start : start + UNIT_BLOCK]
            if symmetric:
                forward = s < t
                s, t = s[forward], t[forward]
            yield edge_weights(torch.stack([s, t]), centrality, not symmetric, "paper" if symmetric else "authors")

    return _probabilities(blocks, p_e, p_tau, torch.float32)


def uniform_probabilities(count: int, p: float) -> torch.Tensor:
    """``count`` probabilities all equal to ``p`` (float64): uniform augmentation."""
    return torch.full((count,), float(p), dtype=torch.float64)


def edge_units(graph: Graph, scheme: str = "paper") -> tuple[torch.Tensor, bool]:
    """The edges that are kept or removed as one unit, and whether each unit stands for both directions.

    ``paper``: on undirected graphs each edge once (u < v), removed with both its directions, so every view stays
    undirected; ``authors``: every directed edge on its own, as the authors' code samples them; else a ``ValueError``.
    """
    if graph.directed or scheme == "authors":
        return graph.edge_index, False
    if scheme != "paper":
        raise ValueError(f"unknown edge scheme {scheme!r}")
    return graph.undirected_edges, True


def edge_weights(units: torch.Tensor, centrality: torch.Tensor, directed: bool, scheme: str = "paper") -> torch.Tensor:
    """Edge centrality w_uv of the ``[2, U]`` units: mean of both ends (undirected, paper), else φ of the node the edge
    points to."""
    centrality = centrality.to(torch.float64).cpu()
    source, target = units.cpu()
    if directed or scheme == "authors":
        return centrality[target]
    weights = centrality[source]
    weights += centrality[target]
    return weights.div_(2)


def is_binary(features: sp.csr_matrix | np.ndarray) -> bool:
    """Whether every value is 0 or 1; a dense matrix is read in row chunks, stopping at the first chunk holding another
    value."""
    if sp.issparse(features):
        return bool(np.isin(features.data, (0.0, 1.0)).all())
    values = np.asarray(features)
    for start in range(0, values.shape[0], ROW_BLOCK):
        chunk = values[start : start + ROW_BLOCK]
        if not ((chunk == 0) | (chunk == 1)).all():
            return False
    return True


def feature_weights(
    features: sp.csr_matrix | np.ndarray, centrality: torch.Tensor, weighting: str = "auto"
) -> torch.Tensor:
    """The ``[F]`` float64 weights w_i = Σ_u x_ui φ(u) over occurrences (``binary``: x_ui ≠ 0 counts as 1) or
    Σ_u |x_ui| φ(u) (``dense``).

    ``auto`` picks ``binary`` when every feature value is 0 or 1 — where both formulas agree — and ``dense`` otherwise.

    Parameters
    ----------
    features
        The raw features, one row per node (SciPy sparse or dense).
    centrality
        ``[N]`` node centrality φ_c.
    weighting
        ``"auto"``, ``"binary"`` or ``"dense"`` (another is a ``ValueError``).
    """
    if weighting == "auto":
        weighting = "binary" if is_binary(features) else "dense"
    if weighting not in ("binary", "dense"):
        raise ValueError(f"unknown feature weighting {weighting!r}")
    phi = centrality.to(torch.float64).cpu().numpy()
    if sp.issparse(features):
        magnitude = features.copy()
        magnitude.data = (magnitude.data != 0).astype(np.float64) if weighting == "binary" else np.abs(magnitude.data)
        weights = magnitude.T @ phi
    else:
        dense = np.asarray(features)
        weights = np.zeros(dense.shape[1], dtype=np.float64)
        for start in range(0, dense.shape[0], ROW_BLOCK):  # float64 one chunk at a time
            chunk = dense[start : start + ROW_BLOCK].astype(np.float64)
            chunk = (chunk != 0).astype(np.float64) if weighting == "binary" else np.abs(chunk, out=chunk)
            weights += chunk.T @ phi[start : start + ROW_BLOCK]
    return torch.from_numpy(np.asarray(weights, dtype=np.float64).ravel())


class EdgeDropper:
    """One view's topology augmentation: each unit — an edge, or on undirected graphs (``symmetric``) the pair (u, v),
    (v, u) — removed with its own probability (``prob``, ``[U]`` in :attr:`units` order), drawn afresh at every call.

    It holds the graph's coalesced ``edge_index`` (shared, not copied) and, when ``symmetric``, lists the units (u, v)
    with u < v from it on the first draw only.
    """

    def __init__(self, edge_index: torch.Tensor, symmetric: bool, prob: torch.Tensor) -> None:
        self.edge_index, self.symmetric, self.prob = edge_index, symmetric, prob  # prob: [U] removal probabilities
        self._units: torch.Tensor | None = None
        self._unit_values: tuple[torch.Tensor | None, torch.Tensor | None] = (None, None)

    @property
    def units(self) -> torch.Tensor:
        """[2, U]: the edges (u, v) with u < v in ``edge_index`` order when symmetric, else every edge."""
        if self._units is None:
            row, col = self.edge_index
            forward = row < col
            self._units = self.edge_index[:, forward] if self.symmetric else self.edge_index
            weight, attr = edge_values(self.edge_index)
            if self.symmetric:  # each unit's values: those of (u, v), equal to (v, u)'s on a cleaned graph
                weight = None if weight is None else weight[forward]
                attr = None if attr is None else attr[forward]
            self._unit_values = (weight, attr)
        return self._units

    def to(self, device: torch.device | str) -> EdgeDropper:
        """A copy on ``device``."""
        return EdgeDropper(self.edge_index.to(device), self.symmetric, self.prob.to(device))

    def draw(self, generator: torch.Generator | None = None) -> torch.Tensor:
        """[U] bool: which units one view keeps — one uniform draw r_u per unit from ``generator`` (``None``: PyTorch's
        global one), in ``units`` order, kept when r_u ≥ p_u. Every sampler of edges (this one's call,
        :mod:`gca.augment.transforms`) draws through here."""
        return torch.rand(self.prob.shape, generator=generator, device=self.prob.device) >= self.prob

    def __call__(self, generator: torch.Generator | None = None) -> torch.Tensor:
        """The kept edges' edge_index (both directions of each kept unit when units are symmetric); on a weighted
        graph an :class:`~gca.graph.sparse.EdgeList` carrying each kept edge's own weight and features."""
        keep = self.draw(generator)
        kept = self.units[:, keep]
        weight, attr = (None if v is None else v[keep] for v in self._unit_values)
        if not self.symmetric:
            return edge_list(kept, weight, attr)
        both = torch.cat([kept, kept.flip(0)], dim=1)
        return edge_list(
            both,
            None if weight is None else torch.cat([weight, weight]),
            None if attr is None else torch.cat([attr, attr]),
        )


@dataclass
class FeatureMasker:
    """One view's attribute masking: one mask m ∈ {0, 1}^F shared by all nodes, m_i ~ Bern(1 − p^f_i), ``prob`` the
    ``[F]`` p^f_i."""

    prob: torch.Tensor  # [F] masking probabilities

    def to(self, device: torch.device | str) -> FeatureMasker:
        return FeatureMasker(self.prob.to(device))

    def __call__(self, generator: torch.Generator | None = None) -> torch.Tensor:
        """m as float32 (multiplied into the features' columns)."""
        draw = torch.rand(self.prob.shape, generator=generator, device=self.prob.device)
        return (draw >= self.prob).to(torch.float32)


@dataclass
class ViewAugmentor:
    """Samples one view t ~ T: a kept edge set (:class:`EdgeDropper`) and a feature mask (:class:`FeatureMasker`), from
    probabilities computed once on the full graph."""

    edges: EdgeDropper
    features: FeatureMasker

    units = property(lambda self: self.edges.units)
    symmetric_units = property(lambda self: self.edges.symmetric)
    edge_prob = property(lambda self: self.edges.prob)
    feature_prob = property(lambda self: self.features.prob)

    @property
    def symmetric(self) -> bool:
        """Whether each drawn edge set holds both directions of every kept edge."""
        return self.edges.symmetric

    def to(self, device: torch.device | str) -> ViewAugmentor:
        return ViewAugmentor(self.edges.to(device), self.features.to(device))

    def sample_edges(self, generator: torch.Generator | None = None) -> torch.Tensor:
        """One view's kept edges (:class:`EdgeDropper`'s call)."""
        return self.edges(generator)

    def sample_feature_mask(self, generator: torch.Generator | None = None) -> torch.Tensor:
        """One view's feature mask m, ``[F]`` float32 (:class:`FeatureMasker`'s call)."""
        return self.features(generator)


def build_augmentors(
    graph: Graph,
    centrality: torch.Tensor | None,
    p_e: tuple[float, float],
    p_f: tuple[float, float],
    p_tau: float,
    edge_drop: str = "adaptive",
    feature_mask: str = "adaptive",
    edge_scheme: str = "paper",
    feature_weighting: str = "auto",
    edge_probabilities: EdgeProbabilities | None = None,
    feature_probabilities: FeatureProbabilities | None = None,
) -> tuple[ViewAugmentor, ViewAugmentor]:
    """The samplers of GCA's view 1 and view 2, their probabilities computed once from the original graph.

    Parameters
    ----------
    graph
        The cleaned graph.
    centrality
        ``[N]`` node centrality φ_c, or ``None`` for uniform augmentation.
    p_e, p_f
        (p_e1, p_e2) and (p_f1, p_f2): each view's mean edge removal and feature masking probability.
    p_tau
        p_τ, the cut-off no probability exceeds.
    edge_drop, feature_mask
        ``"adaptive"`` or ``"uniform"`` (the GCA–T and GCA–A ablations).
    edge_scheme
        ``"paper"`` (undirected edges dropped as one) or ``"authors"`` (each direction on its own, weighted by the tail
        node's centrality).
    feature_weighting
        ``"auto"``, ``"binary"`` or ``"dense"`` (:func:`feature_weights`).
    edge_probabilities, feature_probabilities
        Your own probabilities in place of the ones above (:func:`gca.augment.prepared.prepare`); ``None``: GCA's.
    """
    symmetric = not (graph.directed or edge_scheme == "authors")
    adaptive_edges = edge_drop == "adaptive" and centrality is not None and edge_probabilities is None
    adaptive_features = feature_mask == "adaptive" and centrality is not None and feature_probabilities is None
    if edge_probabilities is not None:
        units = graph.edge_index[:, graph.edge_index[0] < graph.edge_index[1]] if symmetric else graph.edge_index
        edge_probs = [_own(edge_probabilities(graph, units, view), units.shape[1], "edge") for view in (0, 1)]
    elif adaptive_edges:
        edge_probs = edge_drop_probabilities(graph.edge_index, centrality, symmetric, p_e, p_tau)
    else:
        count = int((graph.edge_index[0] < graph.edge_index[1]).sum()) if symmetric else graph.edge_index.shape[1]
        edge_probs = [uniform_probabilities(count, pe) for pe in p_e]
    f_weights = feature_weights(graph.raw_features, centrality, feature_weighting) if adaptive_features else None
    views = []
    for edge_prob, pf in zip(edge_probs, p_f, strict=True):
        if feature_probabilities is not None:
            feature_prob = _own(feature_probabilities(graph, len(views)), graph.num_features, "feature")
        elif adaptive_features:
            feature_prob = drop_probabilities(f_weights, pf, p_tau)
        else:
            feature_prob = uniform_probabilities(graph.num_features, pf)
        edges = EdgeDropper(graph.edge_index, symmetric, edge_prob.float())
        views.append(ViewAugmentor(edges, FeatureMasker(feature_prob.float())))
    return views[0], views[1]


#: ``edge_probabilities(graph, units, view)`` → ``[U]`` removal probabilities of view ``view`` (0 or 1) for the
#: ``[2, U]`` edge units (on an undirected graph the edges (u, v) with u < v, each standing for both directions).
EdgeProbabilities = Callable[[Graph, torch.Tensor, int], torch.Tensor]
#: ``feature_probabilities(graph, view)`` → ``[F]`` masking probabilities of view ``view``'s feature columns.
FeatureProbabilities = Callable[[Graph, int], torch.Tensor]


def _own(probabilities: Any, count: int, what: str) -> torch.Tensor:
    """A researcher's probabilities checked: ``count`` finite values in [0, 1], as float64 on the CPU."""
    name = f"{what}_probabilities"
    if not isinstance(probabilities, torch.Tensor) or probabilities.shape != (count,):
        shape = tuple(probabilities.shape) if isinstance(probabilities, torch.Tensor) else type(probabilities).__name__
        raise ValueError(f"{name} must return a tensor of {count} probabilities (one per {what} unit), got {shape}")
    probabilities = probabilities.detach().to("cpu", torch.float64)
    if not bool(torch.isfinite(probabilities).all()) or bool((probabilities < 0).any() | (probabilities > 1).any()):
        raise ValueError(f"{name} must return probabilities in [0, 1], got values outside it (or not finite)")
    return probabilities


class ViewSampler(Protocol):
    """Draws one view t ~ T of a batch: its kept edges and its feature mask."""

    @property
    def symmetric(self) -> bool:
        """Whether every edge set drawn holds both directions of each edge (a symmetric adjacency)."""

    def sample_edges(self, generator: torch.Generator | None = None) -> torch.Tensor: ...

    def sample_feature_mask(self, generator: torch.Generator | None = None) -> torch.Tensor: ...


@dataclass
class SubgraphView:
    """A view sampler of a sampled subgraph: each augmentation unit present in it is kept with probability
    1 − p (its full-graph probability), together with every sampled edge that belongs to it.

    Parameters
    ----------
    edge_index, unit, unit_prob
        ``[2, E]`` sampled edges (local ids), ``[E]`` index into ``unit_prob`` of each one's unit, and ``[U]``
        removal probability of each unit present.
    features
        The full graph's feature masker.
    edge_weight, edge_attr
        ``[E]`` each sampled edge's weight and ``[E, D]`` its features; ``None`` where the graph has none.
    """

    edge_index: torch.Tensor  # [2, E] sampled edges, local ids
    unit: torch.Tensor  # [E] index into unit_prob of each edge's unit
    unit_prob: torch.Tensor  # [U] removal probability of each unit present
    features: FeatureMasker  # the full graph's masking
    edge_weight: torch.Tensor | None = None  # [E] each sampled edge's weight (None: an unweighted graph)
    edge_attr: torch.Tensor | None = None  # [E, D] each sampled edge's features

    symmetric = False  # sampled edges point towards the anchors: the subgraph is directed

    def sample_edges(self, generator: torch.Generator | None = None) -> torch.Tensor:
        """The kept sampled edges; with their weights and features (an EdgeList) on a graph that has them."""
        keep = torch.rand(self.unit_prob.shape, generator=generator, device=self.unit_prob.device) >= self.unit_prob
        kept = keep[self.unit]
        return edge_list(
            self.edge_index[:, kept],
            None if self.edge_weight is None else self.edge_weight[kept],
            None if self.edge_attr is None else self.edge_attr[kept],
        )

    def sample_feature_mask(self, generator: torch.Generator | None = None) -> torch.Tensor:
        return self.features(generator)
