"""GCA's augmentation as PyTorch Geometric transforms equals gca's own view sampler for the same generator.

The transforms return the input's edges in the input's order; gca's sampler returns its units, then their reverses.
On karate club (already clean) both keep the same edges, so the oracle is the input's edges that the sampler kept.
"""

from __future__ import annotations

import torch

from gca import GCAConfig
from gca.augment.prepared import prepare
from gca.augment.transforms import AdaptiveAugmentation, AdaptiveEdgeDropping, AdaptiveFeatureMasking
from gca.datasets import karate_club


def _gca_view(p_e: float, p_f: float, centrality: str = "pagerank"):
    return prepare(karate_club(), GCAConfig(p_e1=p_e, p_f1=p_f, p_tau=0.7, centrality=centrality)).views[0]


def _input_edges_in(edge_index: torch.Tensor, sampled: torch.Tensor) -> torch.Tensor:
    """The columns of ``edge_index`` that ``sampled`` holds, in ``edge_index``'s order."""
    chosen = set(map(tuple, sampled.t().tolist()))
    assert len(chosen) == sampled.shape[1]  # the sampler returns each kept edge once
    return edge_index[:, [i for i, e in enumerate(edge_index.t().tolist()) if tuple(e) in chosen]]


def test_the_augmentation_draws_what_gcas_view_sampler_draws_from_the_same_generator():
    data, ours = karate_club(), _gca_view(0.4, 0.2)
    g1, g2 = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    view = AdaptiveAugmentation(0.4, 0.2, 0.7, "pagerank", g1)
    for _ in range(3):  # the cache serves the later calls; the draws go on from the same generator
        out = view(data)
        edges, mask = ours.sample_edges(g2), ours.sample_feature_mask(g2)
        assert out.edge_index.shape[1] == edges.shape[1] < 156
        assert torch.equal(out.edge_index, _input_edges_in(data.edge_index, edges))
        assert torch.equal(out.x, data.x * mask)
    assert out.y is data.y and data.edge_index.shape[1] == 156  # the input is left as it was


def test_edge_dropping_and_feature_masking_alone_equal_gcas_parts():
    data = karate_club()
    edges_only, mask_only = _gca_view(0.3, 0.0, "degree"), _gca_view(0.0, 0.3, "degree")
    g1, g2 = torch.Generator().manual_seed(0), torch.Generator().manual_seed(0)
    kept = AdaptiveEdgeDropping(0.3, generator=g1)(data).edge_index
    assert torch.equal(kept, _input_edges_in(data.edge_index, edges_only.edges(g2)))
    assert torch.equal(AdaptiveFeatureMasking(0.3, generator=g1)(data).x, data.x * mask_only.features(g2))


def test_probabilities_are_computed_once_per_graph():
    data = karate_club()
    drop = AdaptiveEdgeDropping(0.3)
    first = drop.view(data)
    assert drop.view(data) is first
    assert drop.view(karate_club()) is not first
    assert "p_e=0.3" in repr(drop)
