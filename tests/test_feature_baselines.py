"""Propagated-feature baselines (gca.graph.propagate, gca.evaluate.feature_baselines): the operator against a
hand-built one, the SVD projection's commutation, and rows judged on the embedding's own splits."""

import numpy as np
import pytest
import torch
from torch_geometric.data import Data

from gca.evaluate.classification import linear_evaluation
from gca.evaluate.feature_baselines import judge_feature_baselines, propagated_label, verdict, versus_baselines
from gca.evaluate.splits import random_splits
from gca.graph.graph import prepare_graph
from gca.graph.propagate import propagated_features, reduced_features


def _dense_operator(edges, n, weights=None):
    """D̂^-1/2 (A + I) D̂^-1/2 written out: A[v, u] = w for an edge u → v, D̂ the in-degree plus the self-loop."""
    a = np.eye(n)
    for (u, v), w in zip(edges, weights if weights is not None else [1.0] * len(edges), strict=True):
        a[v, u] += w
    d = a.sum(axis=1)
    return a / np.sqrt(d)[:, None] / np.sqrt(d)[None, :]


def test_propagation_is_the_normalised_adjacency_power_of_the_row_normalised_features():
    edges = [(0, 1), (1, 0), (1, 2), (2, 1), (2, 3), (3, 2)]
    x = np.array([[1.0, 3.0], [2.0, 2.0], [0.0, 5.0], [4.0, 0.0]])
    graph = prepare_graph(Data(x=torch.tensor(x, dtype=torch.float32), edge_index=torch.tensor(edges).T))
    got = propagated_features(graph, (1, 3), feature_norm="row")
    a, xr = _dense_operator(edges, 4), x / x.sum(axis=1, keepdims=True)
    assert sorted(got) == [1, 3]
    np.testing.assert_allclose(got[1].numpy(), a @ xr, rtol=1e-6)
    np.testing.assert_allclose(got[3].numpy(), a @ a @ a @ xr, rtol=1e-5)
    raw = propagated_features(graph, (2,), feature_norm="none")[2]
    np.testing.assert_allclose(raw.numpy(), a @ a @ x, rtol=1e-6)


def test_weighted_edges_weigh_in_the_propagation_as_in_the_encoder():
    edges = [(0, 1), (1, 0), (1, 2), (2, 1)]
    weights = [2.0, 2.0, 0.5, 0.5]
    x = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    data = Data(x=x, edge_index=torch.tensor(edges).T, edge_weight=torch.tensor(weights))
    got = propagated_features(prepare_graph(data), (1,), feature_norm="none")[1]
    np.testing.assert_allclose(got.numpy(), _dense_operator(edges, 3, weights) @ x.numpy(), rtol=1e-6)


def test_projecting_to_the_width_first_equals_projecting_the_propagated_features():
    rng = np.random.default_rng(0)
    n, f, width = 60, 20, 5
    edge_index = torch.tensor(rng.integers(0, n, (2, 200)))
    edge_index = torch.cat([edge_index, edge_index.flip(0)], 1)
    x = rng.random((n, f)).astype(np.float32)
    graph = prepare_graph(Data(x=torch.from_numpy(x), edge_index=edge_index))
    got = propagated_features(graph, (2,), feature_norm="none", width=width, seed=3)[2].numpy()
    assert got.shape == (n, width)
    a = _dense_operator(graph.edge_index.T.tolist(), n)
    projected = reduced_features(x, width, seed=3)  # X V
    np.testing.assert_allclose(got, a @ a @ projected, rtol=1e-4, atol=1e-5)
    assert propagated_features(graph, (1,), feature_norm="none", width=f + 5)[1].shape == (n, f)  # narrower: as is


def test_bad_hops_and_widths_are_refused():
    graph = prepare_graph(Data(x=torch.ones(3, 2), edge_index=torch.tensor([[0, 1], [1, 0]])))
    with pytest.raises(ValueError, match="hops"):
        propagated_features(graph, (0,))
    with pytest.raises(ValueError, match="width"):
        reduced_features(np.ones((3, 2)), 0)


def _planted(n=400, seed=0):
    """Two planted classes: homophilous edges, features that carry the class only weakly (averaging neighbours
    recovers it)."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 2
    same = rng.random((n, n)) < 0.05
    other = rng.random((n, n)) < 0.005
    adj = np.where(y[:, None] == y[None, :], same, other)
    adj = np.triu(adj, 1)
    edge_index = torch.tensor(np.argwhere(adj | adj.T).T)
    x = rng.random((n, 30)) + 0.15 * y[:, None] * (np.arange(30) < 3)
    return Data(x=torch.tensor(x, dtype=torch.float32), edge_index=edge_index), y


def test_propagated_rows_are_judged_on_the_same_splits_and_beat_raw_features_on_a_homophilous_graph():
    data, y = _planted()
    graph = prepare_graph(data)
    splits = random_splits(len(y), num_splits=4, seed=0, labels=y)
    baselines = judge_feature_baselines(graph, y, splits, width=8)
    assert list(baselines.rows()) == ["raw features", "Â¹X", "Â²X", "Â³X"]
    assert baselines.propagated[2].mean > baselines.raw.mean + 10
    again = linear_evaluation(propagated_features(graph, (2,), width=8)[2], y, splits)  # the same row, by hand
    assert again.accuracies == baselines.propagated[2].accuracies
    assert baselines.propagation()["width"] == 8 and "8 leading" in baselines.propagation()["reduced"]
    weak = versus_baselines(baselines.raw, baselines)  # the raw row against the best: it does not beat it
    assert weak["best_baseline"] in ("Â¹X", "Â²X", "Â³X") and not weak["beats_best_baseline"]
    assert weak["paired_difference"]["splits"] == 4
    paired = np.asarray(baselines.raw.accuracies) - np.asarray(baselines.rows()[weak["best_baseline"]].accuracies)
    assert weak["paired_difference"]["mean"] == pytest.approx(paired.mean())
    assert "does not beat the best feature baseline" in verdict(weak)


def test_labels_of_propagated_rows():
    assert [propagated_label(k) for k in (1, 2, 12)] == ["Â¹X", "Â²X", "Â¹²X"]
