"""GCA's adaptive augmentation as PyTorch Geometric transforms, for pipelines that keep their own trainer.

>>> from gca.augment.transforms import AdaptiveAugmentation
>>> view = AdaptiveAugmentation(p_e=0.3, p_f=0.2, centrality="degree")
>>> v1, v2 = view(data), view(data)    # two views of a torch_geometric.data.Data  # doctest: +SKIP

:class:`AdaptiveEdgeDropping` removes each edge (an undirected edge with both its directions) with the probability
of Eq. (3)–(6) of Zhu et al. (WWW 2021) for the chosen centrality; :class:`AdaptiveFeatureMasking` zeroes each
feature column with the probability of Eq. (7)–(10); :class:`AdaptiveAugmentation` does both, as one GCA view.
The probabilities are computed once per graph — on the graph cleaned as gca cleans it (self-loops and repeated
edges dropped) — and cached for as long as its ``edge_index`` and ``x`` tensors live, so every later call only
draws. Both depend on the *original* graph (centrality on its edges, feature weights on its features), so give
each transform the original graph — not the output of the other; :class:`AdaptiveAugmentation` is the two
together. Given a ``generator``, a transform draws exactly what gca's own view sampler
(:class:`gca.augment.augmentors.ViewAugmentor`) draws from it. The returned ``Data`` shares everything but the changed
attributes with the input.
"""

from __future__ import annotations

import copy
import weakref

import torch
from torch_geometric.data import Data
from torch_geometric.transforms import BaseTransform

from ..config import GCAConfig
from .augmentors import ViewAugmentor
from .prepared import prepare


class _AdaptiveTransform(BaseTransform):
    def __init__(self, p_e: float, p_f: float, p_tau: float, centrality: str,
                 generator: torch.Generator | None) -> None:  # fmt: skip
        self.config = GCAConfig(p_e1=p_e, p_f1=p_f, p_tau=p_tau, centrality=centrality)  # checks the values
        self.generator = generator
        self._views: dict[tuple[int, int], tuple] = {}  # ids of edge_index and x → (their weak refs, the sampler)

    def view(self, data: Data) -> ViewAugmentor:
        """The view sampler of ``data`` (computed on the first call for this graph, then cached)."""
        key = (id(data.edge_index), id(data.x))
        held = self._views.get(key)
        if held is not None and held[0]() is data.edge_index and held[1]() is data.x:
            return held[2]
        view = prepare(data, self.config).views[0]
        self._views[key] = (weakref.ref(data.edge_index), weakref.ref(data.x), view)
        weakref.finalize(data.edge_index, self._views.pop, key, None)  # forgotten with the graph
        return view

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(p_e={self.config.p_e1}, p_f={self.config.p_f1}, p_tau={self.config.p_tau}, "
                f"{self.config.centrality})")  # fmt: skip


class AdaptiveEdgeDropping(_AdaptiveTransform):
    """Drop edges with GCA's adaptive probabilities: p^e_uv = min((s_max − s_uv)/(s_max − μ_s) · p, p_τ)."""

    def __init__(self, p: float = 0.3, p_tau: float = 0.7, centrality: str = "degree",
                 generator: torch.Generator | None = None) -> None:  # fmt: skip
        super().__init__(p, 0.0, p_tau, centrality, generator)

    def forward(self, data: Data) -> Data:
        out = copy.copy(data)  # shallow: the other attributes are shared
        out.edge_index = self.view(data).sample_edges(self.generator).long()  # PyG's dtype, not gca's compact one
        return out


class AdaptiveFeatureMasking(_AdaptiveTransform):
    """Mask feature columns with GCA's adaptive probabilities: p^f_i = min((s_max − s_i)/(s_max − μ_s) · p, p_τ)."""

    def __init__(self, p: float = 0.3, p_tau: float = 0.7, centrality: str = "degree",
                 generator: torch.Generator | None = None) -> None:  # fmt: skip
        super().__init__(0.0, p, p_tau, centrality, generator)

    def forward(self, data: Data) -> Data:
        return _masked(data, self.view(data).sample_feature_mask(self.generator))


class AdaptiveAugmentation(_AdaptiveTransform):
    """One GCA view: adaptive edge dropping with ``p_e``, then adaptive feature masking with ``p_f``."""

    def __init__(self, p_e: float = 0.3, p_f: float = 0.3, p_tau: float = 0.7, centrality: str = "degree",
                 generator: torch.Generator | None = None) -> None:  # fmt: skip
        super().__init__(p_e, p_f, p_tau, centrality, generator)

    def forward(self, data: Data) -> Data:
        view = self.view(data)
        edges = view.sample_edges(self.generator).long()  # in gca's order: the edges, then the mask
        out = _masked(data, view.sample_feature_mask(self.generator))
        out.edge_index = edges
        return out


def _masked(data: Data, mask: torch.Tensor) -> Data:
    """A shallow copy of ``data`` with X ∘ m (dense)."""
    out = copy.copy(data)
    x = data.x.to_dense() if data.x.is_sparse else data.x
    out.x = x * mask.to(x.dtype)
    return out
