import math

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from conftest import path_graph, star_graph, undirected
from torch_geometric.data import Data

from gca.augment.augmentors import build_augmentors, drop_probabilities, edge_units, edge_weights, feature_weights
from gca.augment.centrality import degree_centrality
from gca.graph.graph import prepare_graph


def test_path_graph_edge_probabilities_by_hand():
    # P4: degrees 1,2,2,1 → w = 1.5, 2, 1.5; s_max − μ_s = (2/3)(log 2 − log 1.5) → ends get 1.5·p_e, middle 0.
    graph = prepare_graph(path_graph(4))
    units, symmetric = edge_units(graph)
    assert symmetric and units.tolist() == [[0, 1, 2], [1, 2, 3]]
    w = edge_weights(units, degree_centrality(graph.edge_index, 4), directed=False)
    assert w.tolist() == [1.5, 2.0, 1.5]
    p = drop_probabilities(w, p=0.4, p_tau=0.7)
    np.testing.assert_allclose(p.numpy(), [0.6, 0.0, 0.6], atol=1e-12)
    # the cut-off: 1.5 · 0.5 = 0.75 is truncated to p_τ = 0.7
    np.testing.assert_allclose(drop_probabilities(w, p=0.5, p_tau=0.7).numpy(), [0.7, 0.0, 0.7], atol=1e-12)


def test_directed_graph_uses_the_centrality_of_the_node_pointed_to():
    data = Data(x=torch.eye(3), edge_index=torch.tensor([[0, 0, 1, 2], [1, 2, 2, 0]]))
    graph = prepare_graph(data)
    assert graph.directed
    units, symmetric = edge_units(graph)
    assert not symmetric
    phi = degree_centrality(graph.edge_index, 3, directed=True)  # in-degree [1, 1, 2]
    w = edge_weights(units, phi, directed=True)
    # coalesced order: (0,1), (0,2), (1,2), (2,0) → φ(target) = 1, 2, 2, 1
    assert units.tolist() == [[0, 0, 1, 2], [1, 2, 2, 0]]
    assert w.tolist() == [1, 2, 2, 1]
    # s = [0, log2, log2, 0]: s_max − μ = log2/2 → p = 2·p_e for the two edges into low-degree nodes
    np.testing.assert_allclose(drop_probabilities(w, 0.3, 0.7).numpy(), [0.6, 0, 0, 0.6], atol=1e-12)


def test_authors_scheme_samples_each_direction_with_tail_centrality():
    graph = prepare_graph(path_graph(3))  # degrees 1, 2, 1
    units, symmetric = edge_units(graph, "authors")
    assert not symmetric and units.shape[1] == 4
    w = edge_weights(units, degree_centrality(graph.edge_index, 3), directed=False, scheme="authors")
    assert w.tolist() == [2, 1, 1, 2]  # (0,1)→φ(1), (1,0)→φ(0), (1,2)→φ(2), (2,1)→φ(1)


def test_constant_centrality_gives_uniform_probability():
    graph = prepare_graph(star_graph(5))  # every edge joins the centre (5) and a leaf (1): all equal
    w = edge_weights(*edge_units(graph)[:1], degree_centrality(graph.edge_index, 6), directed=False)
    np.testing.assert_allclose(drop_probabilities(w, 0.3, 0.7).numpy(), 0.3)
    np.testing.assert_allclose(drop_probabilities(w, 0.9, 0.7).numpy(), 0.7)  # still cut off


def test_feature_weights_by_hand_binary_and_dense():
    x = np.array([[1, 0, 1], [1, 1, 0], [0, 0, 1]], dtype=float)
    phi = torch.tensor([1.0, 2.0, 4.0], dtype=torch.float64)
    assert feature_weights(x, phi).tolist() == [3, 2, 5]
    assert feature_weights(sp.csr_matrix(x), phi).tolist() == [3, 2, 5]
    dense = np.array([[-0.5, 0.0], [2.0, 1.0], [0.0, -3.0]])
    assert feature_weights(dense, phi).tolist() == [4.5, -2 * -1 + 12]  # Σ |x| φ = [0.5+4, 2+12]
    # binary weighting on count data counts occurrences
    counts = np.array([[3.0, 0.0], [1.0, 2.0], [0.0, 0.0]])
    assert feature_weights(counts, phi, "binary").tolist() == [3, 2]
    assert feature_weights(counts, phi, "dense").tolist() == [5, 4]


def test_all_zero_feature_column_gets_p_tau_and_others_stay_finite():
    x = torch.tensor([[1.0, 0.0, 1.0, 0.0], [1.0, 0.0, 0.0, 1.0], [0.0, 0.0, 1.0, 1.0]])
    graph = prepare_graph(path_graph(3, features=x))
    v1, _ = build_augmentors(graph, degree_centrality(graph.edge_index, 3), (0.2, 0.4), (0.3, 0.4), 0.7)
    p = v1.feature_prob
    assert torch.isfinite(p).all()
    assert p[1] == pytest.approx(0.7)
    # the other three columns have w = φ0+φ1 = 3, φ0+φ2 = 2, φ1+φ2 = 3 → normalised without the zero column
    s = np.log([3.0, 2.0, 3.0])
    expected = np.minimum((s.max() - s) / (s.max() - s.mean()) * 0.3, 0.7)
    np.testing.assert_allclose(p[[0, 2, 3]].numpy(), expected, rtol=1e-6)


def test_one_node_graph_is_finite():
    graph = prepare_graph(Data(x=torch.tensor([[1.0, 0.0, 2.0]]), edge_index=torch.empty(2, 0, dtype=torch.long)))
    v1, v2 = build_augmentors(graph, degree_centrality(graph.edge_index, 1), (0.2, 0.4), (0.3, 0.4), 0.7)
    assert v1.edge_prob.numel() == 0 and v1.sample_edges().shape == (2, 0)
    assert torch.isfinite(v1.feature_prob).all()
    # dense weights |x|·φ = [1, 0, 2]: s = [0, log 2] → p = [2·0.3, 0]; the empty column gets p_τ
    np.testing.assert_allclose(v1.feature_prob.numpy(), [0.6, 0.7, 0.0], atol=1e-6)
    binary = prepare_graph(Data(x=torch.tensor([[1.0, 0.0, 1.0]]), edge_index=torch.empty(2, 0, dtype=torch.long)))
    v1, _ = build_augmentors(binary, degree_centrality(binary.edge_index, 1), (0.2, 0.4), (0.3, 0.4), 0.7)
    np.testing.assert_allclose(v1.feature_prob.numpy(), [0.3, 0.7, 0.3], atol=1e-6)  # constant: p_f


def test_probabilities_never_exceed_cut_off_or_go_negative():
    rng = np.random.default_rng(3)
    for _ in range(20):
        w = torch.from_numpy(rng.lognormal(size=50))
        p = drop_probabilities(w, rng.uniform(0, 0.99), 0.7)
        assert ((p >= 0) & (p <= 0.7)).all()
        # the most central item is never removed
        assert p[w.argmax()] == 0


def test_mean_of_uncut_probabilities_is_p():
    w = torch.tensor([1.0, 2.0, 3.0, 5.0, 8.0], dtype=torch.float64)
    p = drop_probabilities(w, 0.1, 0.99)
    assert float(p.mean()) == pytest.approx(0.1)


def test_uniform_variants():
    graph = prepare_graph(path_graph(5))
    phi = degree_centrality(graph.edge_index, 5)
    v1, _ = build_augmentors(graph, phi, (0.2, 0.4), (0.3, 0.4), 0.7, edge_drop="uniform")
    assert torch.all(v1.edge_prob == 0.2) and not torch.all(v1.feature_prob == v1.feature_prob[0])
    v1, _ = build_augmentors(graph, phi, (0.2, 0.4), (0.3, 0.4), 0.7, feature_mask="uniform")
    assert torch.all(v1.feature_prob == 0.3) and not torch.all(v1.edge_prob == 0.2)
    v1, v2 = build_augmentors(graph, None, (0.2, 0.4), (0.3, 0.4), 0.7)
    assert torch.all(v2.edge_prob == 0.4) and torch.all(v2.feature_prob == 0.4)


def test_empirical_rates_match_probabilities_and_views_stay_symmetric():
    rng = np.random.default_rng(0)
    n = 30
    pairs = {(int(min(a, b)), int(max(a, b))) for a, b in rng.integers(0, n, size=(80, 2)) if a != b}
    x = torch.from_numpy((rng.random((n, 12)) < 0.3).astype(np.float32))
    graph = prepare_graph(Data(x=x, edge_index=undirected(sorted(pairs))))
    view, _ = build_augmentors(graph, degree_centrality(graph.edge_index, n), (0.4, 0.4), (0.4, 0.4), 0.7)
    units = view.units
    gen = torch.Generator().manual_seed(0)
    trials = 4000
    kept = torch.zeros(units.shape[1])
    masked = torch.zeros(x.shape[1])
    unit_id = {(int(u), int(v)): i for i, (u, v) in enumerate(units.t().tolist())}
    for _ in range(trials):
        edges = view.sample_edges(gen)
        forward = edges[:, edges[0] < edges[1]]
        backward = edges[:, edges[0] > edges[1]].flip(0)
        assert sorted(map(tuple, forward.t().tolist())) == sorted(map(tuple, backward.t().tolist()))
        for u, v in forward.t().tolist():
            kept[unit_id[(u, v)]] += 1
        masked += 1 - view.sample_feature_mask(gen)
    removal = 1 - kept / trials
    p = view.edge_prob
    tolerance = 5 * torch.sqrt(p * (1 - p) / trials) + 1e-9
    assert torch.all((removal - p).abs() <= tolerance)
    q = view.feature_prob
    assert torch.all((masked / trials - q).abs() <= 5 * torch.sqrt(q * (1 - q) / trials) + 1e-9)


def test_log_is_natural_but_any_base_gives_same_probabilities():
    w = torch.tensor([1.0, 4.0, 9.0], dtype=torch.float64)
    s = np.log10(w.numpy())
    expected = np.minimum((s.max() - s) / (s.max() - s.mean()) * 0.2, 0.7)
    np.testing.assert_allclose(drop_probabilities(w, 0.2, 0.7).numpy(), expected)
    assert math.isfinite(float(drop_probabilities(w, 0.2, 0.7).sum()))


def test_dense_features_are_weighed_chunk_by_chunk_like_all_at_once(monkeypatch):
    import gca.augment.augmentors as augment

    rng = np.random.default_rng(0)
    x = rng.normal(size=(11, 4)).astype(np.float32)
    binary = (rng.random((11, 4)) < 0.3).astype(np.float32)
    phi = torch.from_numpy(rng.random(11))
    whole = [feature_weights(m, phi, w) for m in (x, binary) for w in ("dense", "binary")]
    late = binary.copy()
    late[10, 3] = 0.5  # the only non-binary value, in the last chunk
    monkeypatch.setattr(augment, "ROW_BLOCK", 3)
    chunked = [feature_weights(m, phi, w) for m in (x, binary) for w in ("dense", "binary")]
    for a, b in zip(whole, chunked, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=0)
    assert augment.is_binary(binary) and not augment.is_binary(late) and not augment.is_binary(x)


def test_the_view_sampler_is_its_two_parts_composed():
    from gca.augment.augmentors import EdgeDropper, FeatureMasker, ViewAugmentor

    units = torch.tensor([[0, 1, 2], [1, 2, 3]])
    both = torch.tensor([[0, 1, 1, 2, 2, 3], [1, 0, 2, 1, 3, 2]])  # a coalesced undirected edge_index
    edges = EdgeDropper(both, True, torch.tensor([0.0, 1.0, 0.0]))  # keep, drop, keep
    assert torch.equal(edges.units, units)  # listed from the edge_index, u < v
    kept = edges(torch.Generator().manual_seed(0))
    assert kept.tolist() == [[0, 2, 1, 3], [1, 3, 0, 2]]  # the kept units, then their reverses
    assert FeatureMasker(torch.tensor([1.0, 0.0, 1.0]))().tolist() == [0.0, 1.0, 0.0]
    view = ViewAugmentor(EdgeDropper(units, False, torch.full((3,), 0.5)), FeatureMasker(torch.full((64,), 0.5)))
    g1, g2 = torch.Generator().manual_seed(7), torch.Generator().manual_seed(7)
    assert torch.equal(view.sample_edges(g1), view.edges(g2))  # one draw per unit, in the same order
    assert torch.equal(view.sample_feature_mask(g1), view.features(g2))
    assert view.to("cpu").edge_prob is not None and not view.symmetric


def test_a_researchers_own_probabilities_drive_the_views_and_the_training():
    """``prepare(..., edge_probabilities=f, feature_probabilities=g)``: every edge touching node 0 is removed in view
    0 and kept in view 1, every other edge kept; view 1 masks feature 0 always and no other — drawn, in exact and in
    mini-batch training, and GCA trains on the prepared graph and embeds it. Shapes or values that are no
    probabilities are refused."""
    from gca import GCA, GCAConfig
    from gca.augment.prepared import prepare
    from gca.datasets import karate_club

    def edges(graph, units, view):
        touches = (units[0] == 0) | (units[1] == 0)
        return touches.double() if view == 0 else torch.zeros(units.shape[1], dtype=torch.float64)

    def features(graph, view):
        return torch.nn.functional.one_hot(torch.tensor(0), graph.num_features).double() * view

    data = karate_club()
    for batch_size in (0, 12):
        config = GCAConfig(hidden=8, proj_hidden=8, epochs=2, batch_size=batch_size)
        prepared = prepare(data, config, edge_probabilities=edges, feature_probabilities=features)
        first, second = prepared.views
        generator = torch.Generator().manual_seed(0)
        kept = first.sample_edges(generator)
        assert not bool(((kept[0] == 0) | (kept[1] == 0)).any()) and kept.shape[1] == prepared.graph.edge_index.shape[
            1
        ] - 2 * int((prepared.graph.edge_index[0] == 0).sum())
        assert second.sample_edges(generator).shape == prepared.graph.edge_index.shape
        assert bool(first.sample_feature_mask(generator).all())
        mask = second.sample_feature_mask(generator)
        assert not bool(mask[0]) and bool(mask[1:].all())
        model = GCA(config, device="cpu").fit(prepared)
        assert model.embedding_.shape == (34, 8) and bool(torch.isfinite(model.embedding_).all())
        assert torch.equal(model.transform(prepared), model.embedding_)  # scikit-learn's fit(X).transform(X)
    with pytest.raises(ValueError, match="edge_probabilities must return a tensor of"):
        prepare(data, GCAConfig(), edge_probabilities=lambda graph, units, view: torch.zeros(3))
    with pytest.raises(ValueError, match=r"feature_probabilities must return probabilities in \[0, 1\]"):
        prepare(data, GCAConfig(), feature_probabilities=lambda graph, view: torch.full((graph.num_features,), 1.5))
