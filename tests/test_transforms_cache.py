"""What the transforms compute once: centrality and edge probabilities per ``edge_index`` tensor, feature
probabilities per values of ``x``; at most ``cache_size`` graphs, each forgotten with its ``edge_index``."""

from __future__ import annotations

import copy
import gc
import pickle
import weakref

import torch
import torch_geometric.transforms as T
from torch_geometric.data import Data

from gca import GCAConfig
from gca.augment.prepared import prepare
from gca.augment.transforms import AdaptiveAugmentation, AdaptiveEdgeDropping, AdaptiveFeatureMasking
from gca.datasets import karate_club


def _counting(monkeypatch, name: str = "prepare") -> list[int]:
    """Calls of ``gca.augment.transforms.<name>``: ``prepare`` computes the edge part, ``_feature_masker`` the
    feature part."""
    import gca.augment.transforms as transforms

    calls, real = [], getattr(transforms, name)
    monkeypatch.setattr(transforms, name, lambda *args, **kwargs: calls.append(1) or real(*args, **kwargs))
    return calls


def _graded_karate() -> Data:
    data = karate_club()
    data.x = data.x + torch.arange(34.0).reshape(-1, 1) % 5 / 10  # real values: NormalizeFeatures changes them
    return data


def test_a_new_x_at_every_call_reuses_centrality_and_draws_what_gca_draws(monkeypatch):
    calls, weighed = _counting(monkeypatch), _counting(monkeypatch, "_feature_masker")
    data = _graded_karate()
    normalized = T.NormalizeFeatures()(data)
    ours = prepare(normalized, GCAConfig(p_e1=0.3, p_f1=0.2, p_tau=0.7, centrality="degree")).views[0]
    g1, g2 = torch.Generator().manual_seed(4), torch.Generator().manual_seed(4)
    augment = AdaptiveAugmentation(0.3, 0.2, generator=g1)
    pipeline = T.Compose([T.NormalizeFeatures(), augment])
    for _ in range(300):
        out = pipeline(data)
    assert calls == weighed == [1] and len(augment._graphs) == 1  # 300 new x tensors of the same values
    assert torch.equal(augment.view(normalized).feature_prob, ours.feature_prob)  # as prepare computes them
    assert out.x is not data.x and data.x.shape == (34, 34)
    g1.manual_seed(5), g2.manual_seed(5)
    out, edges, mask = pipeline(data), ours.sample_edges(g2), ours.sample_feature_mask(g2)
    assert sorted(map(tuple, out.edge_index.t().tolist())) == sorted(map(tuple, edges.t().tolist()))
    assert torch.equal(out.x, normalized.x * mask)


def test_the_cache_holds_at_most_cache_size_graphs_and_no_more_finalizers(monkeypatch):
    calls = _counting(monkeypatch)
    data, drop = karate_club(), AdaptiveEdgeDropping(0.3)
    registered = len(weakref.finalize._registry)
    alive = []
    for _ in range(300):  # fresh tensors each call, all kept alive: only the last cache_size are held
        alive.append(Data(x=data.x.clone(), edge_index=data.edge_index.clone()))
        drop(alive[-1])
    assert len(calls) == 300 and len(drop._graphs) == drop.cache_size == 4
    assert len(weakref.finalize._registry) - registered == drop.cache_size  # evicted entries' finalizers detached
    drop(alive[-1])
    assert len(calls) == 300  # the most recent is served from the cache
    del alive
    gc.collect()
    assert not drop._graphs and len(weakref.finalize._registry) == registered  # forgotten with their graphs


def test_a_freed_graph_is_forgotten_even_when_its_edges_are_already_clean():
    data = karate_club()
    data.edge_index = data.edge_index.int()  # gca's own dtype: the cleaned graph must not hold the caller's tensor
    mask = AdaptiveFeatureMasking(0.3)
    mask(data)
    assert len(mask._graphs) == 1
    del data
    gc.collect()
    assert not mask._graphs


def test_a_new_x_of_other_values_is_weighed_afresh(monkeypatch):
    weighed = _counting(monkeypatch, "_feature_masker")
    data = _graded_karate()
    augment = AdaptiveFeatureMasking(0.4)
    first = augment.view(data)
    same = augment.view(Data(x=data.x.clone(), edge_index=data.edge_index))
    assert same is first and len(weighed) == 1
    other = Data(x=data.x.clone(), edge_index=data.edge_index)
    other.x[:5, 7] = 3.0
    view = augment.view(other)
    assert len(weighed) == 2 and view.edges is first.edges
    assert torch.equal(view.feature_prob, prepare(other, augment.config).views[0].feature_prob)
    assert not torch.equal(view.feature_prob, first.feature_prob)
    assert augment.view(Data(x=other.x.double(), edge_index=data.edge_index)) is not view  # another dtype: weighed
    assert len(weighed) == 3


def test_changes_in_place_are_noticed(monkeypatch):
    calls = _counting(monkeypatch)
    data = _graded_karate()
    augment = AdaptiveAugmentation(0.3, 0.4)
    first = augment.view(data)
    data.x[:, 3] = 0.0  # the feature part only
    second = augment.view(data)
    assert calls == [1] and second is not first and second.edges is first.edges
    fresh = prepare(data, augment.config).views[0]
    assert torch.equal(second.feature_prob, fresh.feature_prob) and second.feature_prob[3] == 0.7  # p_τ
    data.edge_index[:, :2] = data.edge_index[:, 2:4].clone()  # another graph in the same tensor
    third = augment.view(data)
    assert len(calls) == 2 and torch.equal(third.edge_prob, prepare(data, augment.config).views[0].edge_prob)
    assert augment.view(data) is third


def test_another_node_count_is_another_graph():
    edge_index = torch.tensor([[0, 1, 1, 2], [1, 0, 2, 1]])
    drop = AdaptiveEdgeDropping(0.3, centrality="pagerank")
    small = drop.view(Data(x=torch.eye(3), edge_index=edge_index))
    large = drop.view(Data(x=torch.eye(5), edge_index=edge_index))  # isolated nodes change PageRank's teleport
    assert large is not small and len(drop._graphs) == 1


def test_copies_and_pickles_start_with_an_empty_cache_and_draw_alike():
    data = karate_club()
    augment = AdaptiveAugmentation(0.3, 0.2, generator=torch.Generator().manual_seed(0))
    augment(data)
    for other in (copy.deepcopy(augment), pickle.loads(pickle.dumps(augment)), copy.copy(augment)):
        assert not other._graphs and len(augment._graphs) == 1
        other.generator = torch.Generator().manual_seed(9)
        augment.generator = torch.Generator().manual_seed(9)
        a, b = augment(data), other(data)
        assert torch.equal(a.edge_index, b.edge_index) and torch.equal(a.x, b.x)


def test_writes_through_numpy_are_noticed(monkeypatch):
    """A NumPy view's writes move no version counter: the held probabilities must still be those of the values
    the tensors hold now (a fresh transform's), for the features and for relabelled edges."""
    calls, weighed = _counting(monkeypatch), _counting(monkeypatch, "_feature_masker")
    data = _graded_karate()
    augment = AdaptiveAugmentation(0.3, 0.4)

    def fresh():
        return AdaptiveAugmentation(0.3, 0.4).view(Data(x=data.x.clone(), edge_index=data.edge_index.clone()))

    first = augment.view(data)
    data.x.numpy()[:, 0] = 5.0  # column 0 now the same large value everywhere: its weight changes
    second = augment.view(data)
    assert (len(calls), len(weighed)) == (1, 2) and second.edges is first.edges
    assert torch.equal(second.feature_prob, fresh().feature_prob)
    assert not torch.equal(second.feature_prob, first.feature_prob)
    relabel = torch.roll(torch.arange(34), 5).numpy()  # node i is now node i + 5: other degrees at each id
    data.edge_index.numpy()[:] = relabel[data.edge_index.numpy()]
    calls.clear(), weighed.clear()
    third = augment.view(data)
    assert (len(calls), len(weighed)) == (1, 1)
    assert augment.view(data) is third and (len(calls), len(weighed)) == (1, 1)  # unchanged: held again
    assert torch.equal(third.units, fresh().units) and torch.equal(third.edge_prob, fresh().edge_prob)
    assert not torch.equal(third.units, first.units)


def test_inference_mode_tensors_are_transformed_and_their_changes_noticed():
    """Tensors made under torch.inference_mode() keep no version counter (reading it raises): the transforms and
    GCA.transform take them, give what they give for the same values made normally, and notice a write."""
    from torch_geometric.utils import to_undirected

    from gca import GCA

    base = karate_club()
    clean = to_undirected(base.edge_index).int()  # already clean in gca's dtype: used as it is, not copied
    with torch.inference_mode():
        frozen = Data(x=base.x.clone() + torch.arange(34.0).reshape(-1, 1) % 3, edge_index=clean.clone())
    normal = Data(x=frozen.x.clone(), edge_index=clean.clone())
    g1, g2 = torch.Generator().manual_seed(2), torch.Generator().manual_seed(2)
    a, b = AdaptiveAugmentation(0.3, 0.3, generator=g1)(frozen), AdaptiveAugmentation(0.3, 0.3, generator=g2)(normal)
    assert torch.equal(a.edge_index, b.edge_index) and torch.equal(a.x, b.x)
    augment = AdaptiveFeatureMasking(0.4)
    first = augment.view(frozen)
    with torch.inference_mode():
        frozen.x[:, 1] = 7.0
    assert not torch.equal(augment.view(frozen).feature_prob, first.feature_prob)
    model = GCA(GCAConfig(epochs=2, hidden=8, proj_hidden=8, seed=0)).fit(normal)
    assert torch.equal(model.transform(frozen), model.transform(Data(x=frozen.x.clone(), edge_index=clean.clone())))
