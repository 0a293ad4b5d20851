"""Baselines of Table 3: the random-walk sampler, diverging baselines, and the shared feature normalisation."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import path_graph, undirected
from torch_geometric.data import Data

from gca.datasets import karate_club
from gca.evaluate.splits import random_splits
from gca.graph.csr import binary_adjacency
from gca.graph.graph import prepare_graph
from gca.graph.walks import random_walks
from gca.reproduce.baselines import deepwalk, dgi, node2vec
from gca.reproduce.training import row_normalized_features
from gca.train.loop import TrainingError


def test_uniform_walks_follow_edges_and_stop_at_dead_ends():
    data = karate_club()
    adjacency = binary_adjacency(data.edge_index, data.num_nodes)
    walks = random_walks(adjacency, walk_length=12, walks_per_node=3, seed=1)
    assert walks.shape == (34 * 3, 12)
    assert (walks[:, 0] == np.tile(np.arange(34), 3)).all()
    dense = adjacency.toarray()
    assert (dense[walks[:, :-1], walks[:, 1:]] == 1).all()  # every step is an edge
    # a directed path 0 → 1 → 2: walks from 2 stop at once, walks from 0 after two steps
    chain = binary_adjacency(torch.tensor([[0, 1], [1, 2]]), 3)
    walks = random_walks(chain, walk_length=4, walks_per_node=1, p=0.5, q=2.0)
    assert walks.tolist() == [[0, 1, 2, -1], [1, 2, -1, -1], [2, -1, -1, -1]]


def test_node2vec_second_order_bias_matches_its_definition():
    """Triangle t–v–a plus a pendant v–b. Having moved t → v, node2vec moves to t with weight 1/p, to a (a
    neighbour of t) with weight 1 and to b with weight 1/q (Grover & Leskovec, 2016, Eq. 2)."""
    t, v, a, b = 0, 1, 2, 3
    adjacency = binary_adjacency(undirected([(t, v), (v, a), (a, t), (v, b)]), 4)
    p, q = 0.5, 2.0
    walks = random_walks(adjacency, walk_length=3, walks_per_node=60_000, p=p, q=q, seed=0)
    from_t_via_v = walks[(walks[:, 0] == t) & (walks[:, 1] == v), 2]
    counts = np.bincount(from_t_via_v, minlength=4) / from_t_via_v.size
    weights = np.array([1 / p, 0, 1, 1 / q])  # t, v (never), a, b
    np.testing.assert_allclose(counts, weights / weights.sum(), atol=0.015)
    # p = q = 1 is DeepWalk: every neighbour of v equally likely
    walks = random_walks(adjacency, walk_length=3, walks_per_node=60_000, seed=0)
    uniform = walks[(walks[:, 0] == t) & (walks[:, 1] == v), 2]
    np.testing.assert_allclose(np.bincount(uniform, minlength=4) / uniform.size, [1 / 3, 0, 1 / 3, 1 / 3], atol=0.015)


def _two_communities(size: int = 40, seed: int = 0) -> Data:
    """Two dense communities joined by a few edges; the community is the label."""
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1], size)
    same = y[:, None] == y[None, :]
    upper = np.triu(rng.random((2 * size, 2 * size)) < np.where(same, 0.3, 0.005), k=1)
    edges = np.argwhere(upper)
    return Data(x=torch.eye(2 * size), edge_index=undirected([tuple(e) for e in edges.tolist()]), y=torch.from_numpy(y))


def test_walk_baselines_find_planted_communities():
    data = _two_communities()
    split = random_splits(80, 1, train=0.2, seed=0, labels=data.y)[0]
    assert deepwalk(data, [split], 0, True, torch.device("cpu")).evaluation.accuracies[0] >= 90.0
    assert node2vec(data, [split], 0, True, torch.device("cpu"))[0] >= 90.0


def test_a_baseline_whose_loss_is_nan_from_the_start_is_an_error_not_a_crash(monkeypatch):
    """DGI kept the state of its best loss; a NaN first loss left none, and loading it crashed."""
    from torch_geometric.nn import DeepGraphInfomax

    original = DeepGraphInfomax.loss
    monkeypatch.setattr(DeepGraphInfomax, "loss", lambda self, *a: original(self, *a) * float("nan"))
    data = Data(
        x=torch.rand(6, 3), edge_index=undirected([(0, 1), (1, 2), (3, 4), (4, 5)]), y=torch.tensor([0, 0, 0, 1, 1, 1])
    )
    split = (np.array([0, 3]), np.array([1, 4]), np.array([2, 5]))
    with pytest.raises(TrainingError, match="nan"):
        dgi(data, [split], 0, True, torch.device("cpu"))


def test_baselines_and_gca_see_the_same_row_normalised_features():
    """Signed features: rows scale by the sum of absolute values (a signed sum can be ~0 and blow rows up)."""
    x = torch.tensor([[1.0, -1.0, 2.0], [0.0, 0.0, 0.0], [3.0, -3.0, 0.5]])
    data = path_graph(3, x)
    baseline = row_normalized_features(data, torch.device("cpu"))
    gca_input = prepare_graph(data, feature_norm="row").features
    gca_input = gca_input.to_dense() if not isinstance(gca_input, torch.Tensor) else gca_input
    torch.testing.assert_close(baseline, gca_input)
    torch.testing.assert_close(baseline[0], torch.tensor([0.25, -0.25, 0.5]))


class _Scripted(torch.nn.Module):
    """One weight; its loss follows a script, plus 10⁻³ · w so that Adam moves w by about lr every step."""

    def __init__(self, script: list[float]) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.zeros(()))
        self.script, self.step = script, 0

    def loss(self) -> torch.Tensor:
        value = self.script[self.step]
        self.step += 1
        return value + 1e-3 * self.w


def test_fit_records_its_epochs_stopping_epoch_losses_and_kept_weights():
    from gca.reproduce.training import fit

    script = [5.0, 4.0, 3.0, 3.5, 3.2, 3.1, 3.6, 2.0]
    model = _Scripted(script)
    history = fit("scripted", model, lambda m: m.loss(), lr=0.1, epochs=len(script), patience=3)
    # epoch 3 is the lowest; epochs 4, 5, 6 are not lower, so the third of them ends training, before epoch 8's 2.0
    assert history.epochs_run == 6 and history.stopped_early and history.kept_epoch == 3
    assert history.losses == pytest.approx([5.0, 4.0, 3.0, 3.5, 3.2, 3.1], abs=1e-3)  # plus 10⁻³ · w
    assert model.w.item() == pytest.approx(-0.3, abs=1e-3)  # the weights right after epoch 3's step, not epoch 6's
    record = history.to_dict()
    assert record["stopping_epoch"] == 6 and record["max_epochs"] == 8 and record["kept_epoch"] == 3
    assert "lowest loss" in record["kept_weights"] and len(record["losses"]) == 6
    # patience running out on the last allowed epoch is early stopping too
    history = fit("scripted", _Scripted(script), lambda m: m.loss(), lr=0.1, epochs=6, patience=3)
    assert history.epochs_run == 6 and history.stopped_early and history.to_dict()["stopping_epoch"] == 6

    model = _Scripted(script)
    history = fit("scripted", model, lambda m: m.loss(), lr=0.1, epochs=4)  # no patience: every epoch, last weights
    assert history.to_dict()["stopping_epoch"] is None and history.kept_epoch == 4
    assert history.to_dict()["kept_weights"] == "last epoch" and model.w.item() == pytest.approx(-0.4, abs=1e-3)


def test_a_trained_baselines_record_carries_its_training():
    data = karate_club()
    splits = random_splits(data.num_nodes, 2, seed=0)
    record = dgi(data, splits, 0, True, torch.device("cpu"), protocol="sklearn").record()
    training = record["training"]
    assert len(training["losses"]) == training["epochs_run"] <= training["max_epochs"] == 100
    assert training["stopping_epoch"] in (None, training["epochs_run"]) and 1 <= training["kept_epoch"] <= 100
    assert record["accuracy"]["runs"] and np.isfinite(training["losses"]).all()


def test_a_baselines_training_and_evaluation_show_their_progress(monkeypatch, capsys):
    import gca.progress

    monkeypatch.setattr(gca.progress, "PHASE_DELAY", 0.0)  # show at once: the lines a log gets on a long run
    data = karate_club()
    dgi(data, random_splits(data.num_nodes, 2, seed=0), 0, True, torch.device("cpu"), "authors", progress=True)
    err = capsys.readouterr().err
    assert "DGI training: " in err and " epochs, loss " in err and "evaluate (2 splits): " in err
    dgi(data, random_splits(data.num_nodes, 2, seed=0), 0, True, torch.device("cpu"), "authors")
    assert capsys.readouterr().err == ""  # off by default
