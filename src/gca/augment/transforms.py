"""GCA's adaptive augmentation as PyTorch Geometric transforms, for pipelines that keep their own trainer.

>>> from gca.augment.transforms import AdaptiveAugmentation
>>> view = AdaptiveAugmentation(p_e=0.3, p_f=0.2, centrality="degree")
>>> v1, v2 = view(data), view(data)    # two views of a torch_geometric.data.Data  # doctest: +SKIP

:class:`AdaptiveEdgeDropping` removes edges with the probability of Eq. (3)–(6) of Zhu et al. (WWW 2021),
:class:`AdaptiveFeatureMasking` zeroes feature columns with that of Eq. (7)–(10), :class:`AdaptiveAugmentation` does
both, as one GCA view. Both probabilities belong to the *original* graph: give each transform the original graph, not
the other's output. The rules:

* **Input.** A homogeneous ``Data`` (a ``Batch`` is one graph) with ``edge_index``, and ``x`` for masking; anything else
  is refused in one line (:class:`TransformError`), as is a graph gca cannot use (:class:`~gca.graph.graph.GraphError`).
* **Which edges go.** Each *unit* of the graph as :func:`~gca.graph.graph.prepare_graph` cleans it (an undirected edge
  {u, v}, or a directed edge) goes or stays with all its input edges (both directions, repeats); self-loops stay.
* **What is returned.** The kept input edges in the input's order, dtype and device, with every per-edge attribute
  (``Data.is_edge_attr``; not keys naming ``edge_label``) and a ``Batch``'s edge slices indexed alike; the rest is
  shared with the unchanged input. Edge dropping refuses a ``Data`` that also holds ``adj`` or ``adj_t``.
* **What is computed once.** Centrality and edge probabilities per ``edge_index`` tensor and node count, feature
  probabilities per values of ``x``, for at most ``cache_size`` (4) graphs, each forgotten when its ``edge_index`` is
  freed; a change in place is noticed (:func:`~gca.graph.csr.content_key`). Copies and pickles start with nothing held.
* **What is drawn.** One uniform number per unit, in the cleaned graph's unit order
  (:meth:`~gca.augment.augmentors.EdgeDropper.draw`), then (when it masks) one per feature column: with a ``generator``,
  what :class:`~gca.augment.augmentors.ViewAugmentor` draws from it, keeping on a clean graph the very edges it keeps.
"""

from __future__ import annotations

import copy
import weakref
from collections import OrderedDict
from typing import Any

import numpy as np
import scipy.sparse as sp
import torch
from torch_geometric.data import Batch, Data, HeteroData
from torch_geometric.transforms import BaseTransform
from torch_geometric.utils import select

from ..config import ConfigError, GCAConfig
from ..errors import UserError
from ..graph.csr import content_key
from ..graph.features import ROW_BLOCK, feature_forms
from ..graph.graph import GraphError, prepare_graph
from .augmentors import (
    EdgeDropper,
    FeatureMasker,
    ViewAugmentor,
    drop_probabilities,
    feature_weights,
    uniform_probabilities,
)
from .prepared import prepare


class TransformError(UserError, TypeError):
    """A transform was given something it cannot take; the message is one line meant for the user."""


class _GraphPart:
    """What a transform keeps for one graph: the edge part (from ``edge_index`` and the node count alone) and the
    view of the latest ``x`` seen with it."""

    def __init__(self, edge_index: torch.Tensor, num_nodes: int, config: GCAConfig) -> None:
        # The edges as gca cleans them; the one-column stand-in for x is never read (centrality needs no features).
        graph = prepare_graph(Data(x=torch.ones(num_nodes, 1), edge_index=edge_index))
        if graph.edge_index.untyped_storage().data_ptr() == edge_index.untyped_storage().data_ptr():
            graph.edge_index = graph.edge_index.clone()  # clean input in gca's dtype: held by us, not the caller's
        prepared = prepare(graph, config)
        self.edges: EdgeDropper = prepared.views[0].edges
        self.centrality = prepared.centrality
        self.num_nodes = num_nodes
        self.ref = weakref.ref(edge_index)
        self.key = content_key(edge_index)
        self.finalizer: weakref.finalize | None = None
        self.view: tuple[torch.Tensor, tuple, ViewAugmentor] | None = None  # (latest x, its content_key, the view)
        self._unit_of: torch.Tensor | None = None  # made by the first edge draw: feature masking needs none

    def holds(self, edge_index: torch.Tensor, num_nodes: int) -> bool:
        return self.ref() is edge_index and self.num_nodes == num_nodes and self.key == content_key(edge_index)

    def unit_of(self, edge_index: torch.Tensor) -> torch.Tensor:
        """[E] int64: for each edge of ``edge_index`` (the one this part :meth:`holds`), the position of its unit in
        ``edges.units``; −1 for a self-loop."""
        if self._unit_of is None:
            self._unit_of = _unit_positions(edge_index, self.edges, self.num_nodes)
        return self._unit_of


def _unit_positions(edge_index: torch.Tensor, edges: EdgeDropper, num_nodes: int) -> torch.Tensor:
    """Each input edge's unit: (min, max) of its ends on undirected graphs, the edge itself on directed ones; found
    by binary search in the units, which the cleaned (coalesced) graph lists sorted by (source, target)."""
    source, target = edge_index.detach().cpu().long()
    if edges.symmetric:
        source, target = torch.minimum(source, target), torch.maximum(source, target)
    keys = source * num_nodes + target
    units = edges.units.cpu().long()
    unit_keys = units[0] * num_nodes + units[1]
    loops = source == target
    found = torch.searchsorted(unit_keys, keys)
    if unit_keys.numel():
        matched = unit_keys[found.clamp_(max=unit_keys.numel() - 1)] == keys
    else:
        matched = torch.zeros_like(loops)
    if not bool((matched | loops).all()):  # cannot happen: every edge that is no self-loop is in the cleaned graph
        raise RuntimeError("an input edge has no unit in the cleaned graph")
    return found.masked_fill_(loops, -1)


def _forget(transform_ref: weakref.ref, key: int) -> None:
    """Called when a cached graph's ``edge_index`` is freed."""
    transform = transform_ref()
    if transform is not None:
        transform._graphs.pop(key, None)


class _AdaptiveTransform(BaseTransform):
    #: Graphs whose probabilities a transform holds at once; the least recently used is dropped first.
    cache_size: int = 4

    def __init__(
        self, p_e: float, p_f: float, p_tau: float, centrality: str, generator: torch.Generator | None
    ) -> None:
        try:  # checks the values; the message names the transform's own arguments, not the config's keys
            self.config = GCAConfig(p_e1=p_e, p_f1=p_f, p_tau=p_tau, centrality=centrality)
        except ConfigError as exc:
            names = (
                {"p_e1": "p_e", "p_f1": "p_f"}
                if type(self).__name__ == "AdaptiveAugmentation"
                else {"p_e1": "p", "p_f1": "p"}
            )
            message = str(exc)
            for key, name in names.items():
                message = message.replace(key, name)
            raise ConfigError(f"{type(self).__name__}: {message}") from None
        self.generator = generator
        self._graphs: OrderedDict[int, _GraphPart] = OrderedDict()  # id of edge_index → its part, oldest first

    def view(self, data: Data) -> ViewAugmentor:
        """The view sampler of ``data`` (a homogeneous ``Data`` with ``edge_index`` and ``x``), computed on the first
        call for this graph, then cached."""
        return self._view(data, self._graph(data))

    def _graph(self, data: Data) -> _GraphPart:
        edge_index, num_nodes = self._checked(data)
        key = id(edge_index)
        held = self._graphs.get(key)
        if held is not None and held.holds(edge_index, num_nodes):
            self._graphs.move_to_end(key)
            return held
        if held is not None:  # changed in place, or another node count: replaced
            self._drop(key)
        held = _GraphPart(edge_index, num_nodes, self.config)
        held.finalizer = weakref.finalize(edge_index, _forget, weakref.ref(self), key)  # forgotten with the graph
        self._graphs[key] = held
        while len(self._graphs) > self.cache_size:
            self._drop(next(iter(self._graphs)))  # the least recently used
        return held

    def _drop(self, key: int) -> None:
        held = self._graphs.pop(key, None)  # a finaliser may have run since the key was read
        if held is not None and held.finalizer is not None:
            held.finalizer.detach()  # no finaliser outlives its entry

    def _view(self, data: Data, graph: _GraphPart) -> ViewAugmentor:
        x = data.x
        held = graph.view
        # x is the held x or equal to it, and the held x is unchanged since its view was made: the view is x's (the
        # held x stays the one compared with: its key is known, a new x's would cost a pass over it)
        if held is not None and _same_values(x, held[0]) and held[1] == content_key(held[0]):
            return held[2]
        view = ViewAugmentor(graph.edges, _feature_masker(x, graph, self.config))
        graph.view = (x, content_key(x), view)
        return view

    def _checked(self, data: Any) -> tuple[torch.Tensor, int]:
        name = type(self).__name__
        if isinstance(data, HeteroData):
            raise TransformError(
                f"{name} takes a homogeneous Data, not HeteroData: convert it with data.to_homogeneous() (node_type "
                "and edge_type come along), or apply it to a Data holding one node type and its edges"
            )
        if not isinstance(data, Data):
            raise TransformError(f"{name} takes a torch_geometric.data.Data, got {type(data).__name__}")
        edge_index = data.edge_index
        if edge_index is None:
            raise TransformError(
                f"{name} needs data.edge_index, the edges as a [2, E] tensor (ToSparseTensor removes it: apply "
                f"{name} before ToSparseTensor)"
            )
        if not isinstance(edge_index, torch.Tensor) or edge_index.layout != torch.strided:
            got = type(edge_index).__name__
            raise TransformError(f"{name} needs data.edge_index as a dense [2, E] tensor, got {got}")
        num_nodes = data.num_nodes
        if not num_nodes:
            raise TransformError(f"{name} needs a graph with nodes; data.num_nodes is {num_nodes}")
        return edge_index, int(num_nodes)

    def _refuse_adjacency(self, data: Data) -> None:
        for key in ("adj", "adj_t"):
            if key in data:
                raise TransformError(
                    f"{type(self).__name__} drops edges from data.edge_index, but data.{key} holds them too and would "
                    f"keep them all; apply {type(self).__name__} before ToSparseTensor, or delete data.{key}"
                )

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state["_graphs"] = OrderedDict()  # copies and pickles start with an empty cache
        return state

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(p_e={self.config.p_e1}, p_f={self.config.p_f1}, p_tau={self.config.p_tau}, "
            f"{self.config.centrality})"
        )


class AdaptiveEdgeDropping(_AdaptiveTransform):
    """Drop edges with GCA's adaptive probabilities: p^e_uv = min((s_max − s_uv)/(s_max − μ_s) · p, p_τ).

    Parameters
    ----------
    p
        p_e, the mean removal probability before the cut-off (in [0, 1)).
    p_tau
        p_τ, the cut-off no probability exceeds (in (0, 1)).
    centrality
        φ_c: ``"degree"``, ``"eigenvector"``, ``"pagerank"``, or ``"uniform"`` (GRACE's: every unit ``p``).
    generator
        Every draw's ``torch.Generator`` (then it draws what gca's view sampler draws); ``None``: the global one.
    """

    def __init__(
        self, p: float = 0.3, p_tau: float = 0.7, centrality: str = "degree", generator: torch.Generator | None = None
    ) -> None:
        super().__init__(p, 0.0, p_tau, centrality, generator)

    def forward(self, data: Data) -> Data:
        """One draw: a new ``Data`` with the kept edges and their per-edge attributes; the rest shared with ``data``.

        Parameters
        ----------
        data
            A homogeneous ``Data`` (or ``Batch``) with ``edge_index``; it is not changed.
        """
        graph = self._graph(data)
        self._refuse_adjacency(data)
        return _kept(data, graph, graph.edges.draw(self.generator))


class AdaptiveFeatureMasking(_AdaptiveTransform):
    """Mask feature columns with GCA's adaptive probabilities: p^f_i = min((s_max − s_i)/(s_max − μ_s) · p, p_τ).

    Parameters
    ----------
    p
        p_f, the mean masking probability before the cut-off (in [0, 1)).
    p_tau
        p_τ, the cut-off no probability exceeds (in (0, 1)).
    centrality
        φ_c: ``"degree"``, ``"eigenvector"``, ``"pagerank"``, or ``"uniform"`` (GRACE's: every column ``p``).
    generator
        Every draw's ``torch.Generator`` (then it draws what gca's view sampler draws); ``None``: the global one.
    """

    def __init__(
        self, p: float = 0.3, p_tau: float = 0.7, centrality: str = "degree", generator: torch.Generator | None = None
    ) -> None:
        super().__init__(0.0, p, p_tau, centrality, generator)

    def forward(self, data: Data) -> Data:
        """One draw: a new ``Data`` whose ``x`` has the masked columns zeroed; the rest shared with ``data``.

        Parameters
        ----------
        data
            A homogeneous ``Data`` with ``x`` and ``edge_index``; it is not changed.
        """
        return _masked(data, self.view(data).sample_feature_mask(self.generator))


class AdaptiveAugmentation(_AdaptiveTransform):
    """One GCA view: adaptive edge dropping with ``p_e``, then adaptive feature masking with ``p_f``.

    Parameters
    ----------
    p_e
        The mean edge removal probability before the cut-off (in [0, 1)).
    p_f
        The mean feature masking probability before the cut-off (in [0, 1)).
    p_tau
        p_τ, the cut-off no probability exceeds (in (0, 1)).
    centrality
        φ_c: ``"degree"``, ``"eigenvector"``, ``"pagerank"``, or ``"uniform"`` (GRACE's: ``p_e``, ``p_f`` for all).
    generator
        Every draw's ``torch.Generator`` (then it draws what gca's view sampler draws); ``None``: the global one.
    """

    def __init__(
        self,
        p_e: float = 0.3,
        p_f: float = 0.3,
        p_tau: float = 0.7,
        centrality: str = "degree",
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__(p_e, p_f, p_tau, centrality, generator)

    def forward(self, data: Data) -> Data:
        """One draw: a GCA view of ``data``, its kept edges with their attributes and its masked columns zeroed.

        Parameters
        ----------
        data
            A homogeneous ``Data`` (or ``Batch``) with ``x`` and ``edge_index``; it is not changed.
        """
        graph = self._graph(data)
        self._refuse_adjacency(data)
        view = self._view(data, graph)
        keep = graph.edges.draw(self.generator)  # in gca's order: the edges, then the mask
        return _masked(_kept(data, graph, keep), view.sample_feature_mask(self.generator))


def _same_values(x: Any, held: torch.Tensor) -> bool:
    """Whether ``x`` is ``held`` or a dense tensor equal to it (one comparison; sparse ones are not compared)."""
    if x is held:
        return True
    return (
        isinstance(x, torch.Tensor)
        and x.layout == held.layout == torch.strided
        and x.dtype == held.dtype
        and x.shape == held.shape
        and x.device == held.device
        and torch.equal(x, held)
    )


def _feature_masker(x: Any, graph: _GraphPart, config: GCAConfig) -> FeatureMasker:
    """The masking probabilities of ``x`` for the graph's centrality, as :func:`~gca.augment.prepared.prepare`
    computes them (the same feature form, weights and normalisation), with prepare_graph's checks of ``x``."""
    if x is None:
        raise GraphError("the graph has no node features (data.x is None); pass a feature matrix")
    if not isinstance(x, torch.Tensor) or x.dim() != 2 or x.shape[1] == 0:
        shape = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
        raise GraphError(f"node features must be a non-empty 2-D matrix, got {shape}")
    if x.shape[0] != graph.num_nodes:
        raise GraphError(f"the graph has {graph.num_nodes} nodes but {x.shape[0]} feature rows")
    raw = feature_forms(x.detach().cpu(), "none")[1]
    if not _finite(raw):
        raise GraphError("node features contain NaN or infinite values; clean or impute them first")
    if config.feature_mask == "adaptive" and graph.centrality is not None:
        weights = feature_weights(raw, graph.centrality, config.feature_weighting)
        prob = drop_probabilities(weights, config.p_f1, config.p_tau)
    else:
        prob = uniform_probabilities(raw.shape[1], config.p_f1)
    return FeatureMasker(prob.float())


def _finite(raw: sp.csr_matrix | np.ndarray) -> bool:
    if sp.issparse(raw):
        return bool(np.isfinite(raw.data).all())
    return all(np.isfinite(raw[start : start + ROW_BLOCK]).all() for start in range(0, raw.shape[0], ROW_BLOCK))


def _kept(data: Data, graph: _GraphPart, keep_units: torch.Tensor) -> Data:
    """A shallow copy of ``data`` with the input edges whose unit is kept (self-loops always) and every per-edge
    attribute indexed alike."""
    unit_of = graph.unit_of(data.edge_index)
    keep = torch.cat([keep_units.cpu(), torch.ones(1, dtype=torch.bool)])[unit_of]  # −1, a self-loop: kept
    positions = keep.nonzero().view(-1)
    out = copy.copy(data)
    edge_keys = ["edge_index"]
    slices = getattr(data, "_slice_dict", None) if isinstance(data, Batch) else None
    edges = data.edge_index.shape[1]
    for key, value in data:
        if (
            key.startswith("edge_")
            and key != "edge_index"
            and "edge_label" not in key
            and isinstance(value, torch.Tensor)
            and value.dim()
            and value.shape[data.__cat_dim__(key, value)] != edges
        ):
            # PyG's is_edge_attr calls such a tensor no edge attribute, and it would stay beside fewer edges
            raise TransformError(
                f"{key} has {value.shape[data.__cat_dim__(key, value)]} rows but the graph has "
                f"{edges} edges; give one row per edge"
            )
        if key == "edge_index" or "edge_label" in key or not data.is_edge_attr(key):
            continue
        if slices is not None and not (key in slices and _same(slices[key], slices.get("edge_index"))):
            continue  # in a Batch, only what was batched edge by edge (not ptr, which may have E entries)
        out[key] = _select(value, positions, data.__cat_dim__(key, value))
        edge_keys.append(key)
    out.edge_index = _select(data.edge_index, positions, 1)
    if slices is not None and "edge_index" in slices:  # each graph's edges: the kept ones before its end
        before = torch.cat([torch.zeros(1, dtype=torch.long), keep.long().cumsum(0)])
        out._slice_dict = {**slices, **{key: before[slices[key]] for key in edge_keys}}
    return out


def _same(a: Any, b: Any) -> bool:
    return isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and torch.equal(a, b)


def _select(value: Any, positions: torch.Tensor, dim: int) -> Any:
    if isinstance(value, torch.Tensor):
        return value.index_select(dim, positions.to(value.device))
    if isinstance(value, np.ndarray):
        return np.take(value, positions.numpy(), axis=dim)
    return select(value, positions, dim)  # lists, tuples, TensorFrames: PyG's own selection


def _masked(data: Data, mask: torch.Tensor) -> Data:
    """A shallow copy of ``data`` with X ∘ m (dense)."""
    out = copy.copy(data)
    x = data.x.to_dense() if data.x.is_sparse else data.x
    out.x = x * mask.to(device=x.device, dtype=x.dtype)
    return out
