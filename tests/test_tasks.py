"""Link prediction without leakage and node clustering: hand-checked cases and the command line."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
import torch
from torch_geometric.data import Data
from torch_geometric.transforms import RandomLinkSplit

from gca.datasets import karate_club
from gca.evaluate.clustering import cluster_embeddings
from gca.evaluate.linkpred import hold_out_edges, score_links
from gca.evaluate.splits import EvaluationError
from gca.graph.graph import prepare_graph


def _pairs(edge_index: torch.Tensor) -> set[tuple[int, int]]:
    return set(map(tuple, edge_index.t().tolist()))


def test_held_out_edges_never_appear_in_the_training_graph_in_either_direction():
    graph = prepare_graph(karate_club())
    held = hold_out_edges(graph.edge_index, graph.num_nodes, val=0.1, test=0.2, seed=3)
    train = _pairs(held.train_edge_index)
    for pos in (held.val_pos, held.test_pos):
        for u, v in pos.t().tolist():
            assert (u, v) not in train and (v, u) not in train
    assert all((v, u) in train for u, v in train)  # the training graph stays undirected
    assert held.val_pos.shape == held.val_neg.shape and held.test_pos.shape == held.test_neg.shape
    everything = _pairs(graph.edge_index)
    for neg in (held.val_neg, held.test_neg):  # negatives are not edges of the graph
        assert not any(pair in everything for pair in _pairs(neg))
    # 78 undirected edges: int(0.1·78) = 7 for validation, int(0.2·78) = 15 for testing, both directions removed
    assert (held.val_pos.shape[1], held.test_pos.shape[1]) == (7, 15)
    assert held.train_edge_index.shape[1] == 2 * (78 - 7 - 15)


def test_the_hold_out_is_deterministic_per_seed_and_equals_pygs_random_link_split():
    graph = prepare_graph(karate_club())
    a = hold_out_edges(graph.edge_index, graph.num_nodes, seed=1)
    b = hold_out_edges(graph.edge_index, graph.num_nodes, seed=1)
    c = hold_out_edges(graph.edge_index, graph.num_nodes, seed=2)
    assert torch.equal(a.test_pos, b.test_pos) and torch.equal(a.test_neg, b.test_neg)
    assert not torch.equal(a.test_pos, c.test_pos)
    torch.manual_seed(1)
    random.seed(1)
    split = RandomLinkSplit(
        num_val=0.05, num_test=0.1, is_undirected=True, split_labels=True, add_negative_train_samples=False
    )
    reference = split(Data(edge_index=graph.edge_index, num_nodes=34))
    assert torch.equal(reference[2].pos_edge_label_index, a.test_pos)
    assert torch.equal(reference[0].edge_index, a.train_edge_index)


def test_a_graph_too_small_to_hold_edges_out_is_one_line():
    edges = torch.tensor([[0, 1, 1, 2], [1, 0, 2, 1]])
    with pytest.raises(EvaluationError, match="too few to hold out"):
        hold_out_edges(edges, 3)


def test_embeddings_that_encode_the_edges_score_perfectly_and_noise_scores_about_half():
    graph = prepare_graph(karate_club())
    held = hold_out_edges(graph.edge_index, graph.num_nodes, val=0.1, test=0.2, seed=0)
    adjacency = torch.zeros(34, 34)
    adjacency[graph.edge_index[0], graph.edge_index[1]] = 1
    oracle = adjacency + 30 * torch.eye(34)  # each row: itself strongly, its neighbours weakly
    scores = score_links(oracle, held)
    assert scores["cosine"]["auc"] > 90
    noise = score_links(torch.randn(34, 16, generator=torch.Generator().manual_seed(0)), held)
    assert 20 < noise["cosine"]["auc"] < 80 and set(noise["hadamard"]) >= {"auc", "ap", "chosen_C", "val_auc"}


def test_clustering_finds_well_separated_classes_and_scores_a_permuted_labelling_the_same():
    y = np.repeat([0, 1, 2], 20)
    z = np.eye(3)[y] * 5 + np.random.default_rng(0).normal(size=(60, 3)) * 0.1
    result = cluster_embeddings(z, y, seeds=3)
    assert result.nmi == pytest.approx([100.0] * 3) and result.ari == pytest.approx([100.0] * 3)
    assert cluster_embeddings(z, (y + 1) % 3, seeds=1).nmi[0] == pytest.approx(100.0)
    y_unlabelled = y.copy()
    y_unlabelled[::5] = -1  # left out, not a class
    assert cluster_embeddings(z, y_unlabelled, seeds=1).clusters == 3
    with pytest.raises(EvaluationError, match="two or more classes"):
        cluster_embeddings(z, np.zeros(60, dtype=int))


def test_gca_train_runs_the_link_and_cluster_tasks(tmp_path, capsys):
    from gca.cli import main

    assert (
        main(
            [
                "train",
                "--task",
                "link",
                "--epochs",
                "3",
                "--splits",
                "2",
                "--link-val",
                "0.1",
                "--link-test",
                "0.2",
                "--quiet",
                "--out",
                str(tmp_path / "link"),
            ]
        )
        == 0
    )
    record = json.loads((tmp_path / "link" / "results.json").read_text())
    assert record["task"] == "link" and len(record["link_prediction"]["runs"]) == 2
    assert set(record["link_prediction"]) >= {"cosine_auc", "cosine_ap", "hadamard_auc", "hadamard_ap"}
    assert "ROC-AUC" in capsys.readouterr().out
    assert (
        main(
            [
                "train",
                "--task",
                "cluster",
                "--epochs",
                "3",
                "--splits",
                "2",
                "--quiet",
                "--out",
                str(tmp_path / "cluster"),
            ]
        )
        == 0
    )
    clustering = json.loads((tmp_path / "cluster" / "results.json").read_text())["clustering"]
    assert clustering["clusters"] == 2 and len(clustering["nmi"]["runs"]) == 2
    assert main(["train", "--task", "link", "--resume", "--out", str(tmp_path / "x")]) == 2
    assert "--task link" in capsys.readouterr().err


def test_the_run_path_clusters_the_embeddings_it_trained_and_records_the_same_scores():
    from gca.config import GCAConfig
    from gca.run.pipeline import run_gca
    from gca.train.estimator import GCA

    data = karate_club()
    estimator = GCA(GCAConfig(epochs=3, hidden=16, proj_hidden=16, seed=5))
    result = run_gca(estimator, estimator.prepare(data), dataset="Karate", labels=data.y, clusters=3)
    expected = cluster_embeddings(result.embeddings, data.y, seeds=3, first_seed=5)
    assert result.clusters.nmi == pytest.approx(expected.nmi) and result.clusters.ari == pytest.approx(expected.ari)
    assert result.record["clustering"] == expected.to_dict() and result.evaluation is None
    unjudged = run_gca(
        GCA(GCAConfig(epochs=1, hidden=16, proj_hidden=16)), estimator.prepare(data), dataset="Karate", labels=data.y
    )
    assert unjudged.clusters is None and "clustering" not in unjudged.record


def test_clone_is_an_untrained_copy_with_the_same_parts_and_the_changes():
    from torch_geometric.nn import GCNConv

    from gca.config import GCAConfig
    from gca.train.estimator import GCA, clone

    encoder = GCNConv(34, 8)
    original = GCA(GCAConfig(epochs=2, hidden=8, proj_hidden=8, seed=3), device="cpu", encoder=encoder)
    before = encoder.lin.weight.detach().clone()
    copy = clone(original, seed=5, epochs=1)
    assert copy.config == original.config.replace(seed=5, epochs=1) and original.config.seed == 3
    assert copy.model is None and copy.device == original.device and copy.progress == original.progress
    assert copy.encoder is not encoder and torch.equal(copy.encoder.lin.weight, before)
    copy.fit(karate_club())
    assert torch.equal(encoder.lin.weight, before)  # training the copy leaves the original's encoder as it was
    assert len(copy.losses) == 1 and original.model is None


def test_link_prediction_trains_a_fresh_copy_of_the_given_estimator_per_hold_out():
    from torch_geometric.nn import GCNConv

    from gca.datasets import load_dataset
    from gca.run.job import Job
    from gca.run.tasks import link_prediction
    from gca.train.estimator import GCA

    job = Job.open(load_dataset("Karate"), None, {"epochs": 2, "hidden": 8, "proj_hidden": 8, "seed": 4})
    encoder = GCNConv(34, 8)
    template = GCA(job.config, device="cpu", encoder=encoder)
    job.clean(job.config.feature_norm)
    result, first, embeddings, record = link_prediction(job, template, runs=2, val=0.1, test=0.2)
    assert template.model is None  # the template is not trained; each hold-out trains its own copy
    assert first.encoder is not encoder and first.config.seed == 4 and len(first.losses) == 2
    assert embeddings.shape == (34, 8) and len(result.runs) == 2
    # hold-out 0 is drawn from the seed itself, as its training is seeded
    held = hold_out_edges(job.graph.edge_index, 34, 0.1, 0.2, seed=4)
    assert record["held_out"]["train_edges"] == held.train_edge_index.shape[1]
    assert record["config"]["seed"] == 4 and record["task"] == "link"


def _complete(n: int, missing: tuple[tuple[int, int], ...] = ()) -> torch.Tensor:
    pairs = [(u, v) for u in range(n) for v in range(n) if u != v and (min(u, v), max(u, v)) not in missing]
    return torch.tensor(pairs).t()


def test_a_complete_graph_has_no_negatives_and_is_refused_with_one_line(tmp_path, capsys):
    from gca.cli import main

    with pytest.raises(EvaluationError, match="complete graph"):
        hold_out_edges(_complete(8), 8, val=0.1, test=0.2)
    edges = tmp_path / "edges.csv"
    edges.write_text("".join(f"{u},{v}\n" for u, v in _complete(8).t().tolist() if u < v))
    features = tmp_path / "x.csv"
    features.write_text("".join(f"{i},{i % 3},{i % 2}\n" for i in range(8)))
    out = tmp_path / "out"
    assert (
        main(
            [
                "train",
                "--task",
                "link",
                "--edges",
                str(edges),
                "--features",
                str(features),
                "--epochs",
                "1",
                "--link-val",
                "0.1",
                "--link-test",
                "0.2",
                "--quiet",
                "--out",
                str(out),
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "complete graph" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not out.exists() or not any(out.iterdir())


def test_held_out_negatives_are_distinct_undirected_pairs_even_on_a_nearly_complete_graph():
    """K_12 less 8 edges: exactly 8 non-edges exist and validation plus testing need 2 + 5 = 7 of them; each must be
    a different unordered pair, none an edge, none in both parts."""
    missing = ((0, 1), (2, 3), (4, 5), (6, 7), (8, 9), (10, 11), (0, 11), (3, 8))
    graph_edges = _complete(12, missing)
    for seed in range(20):
        held = hold_out_edges(graph_edges, 12, val=0.04, test=0.1, seed=seed)
        negatives = torch.cat([held.val_neg, held.test_neg], dim=1).t().tolist()
        unordered = {(min(u, v), max(u, v)) for u, v in negatives}
        assert len(unordered) == len(negatives) == held.val_pos.shape[1] + held.test_pos.shape[1]
        assert unordered <= set(missing)


def test_the_hadamard_classifier_never_trains_on_a_held_out_pair(monkeypatch):
    from sklearn.linear_model import LogisticRegression

    graph = prepare_graph(karate_club())
    held = hold_out_edges(graph.edge_index, 34, val=0.1, test=0.2, seed=0)
    seen = []
    original = LogisticRegression.fit

    def record_fit(self, x, y):
        seen.append(x)
        return original(self, x, y)

    monkeypatch.setattr(LogisticRegression, "fit", record_fit)
    # embeddings with ids encoded: z_u ⊙ z_v is a one-hot of the unordered pair, so training rows name their pairs
    index = {pair: i for i, pair in enumerate((u, v) for u in range(34) for v in range(u + 1, 34))}
    z = torch.zeros(34, len(index))
    for (u, v), i in index.items():
        z[u, i], z[v, i] = 1.0, 1.0
    score_links(z, held, seed=0)
    trained_on = {int(i) for i in np.flatnonzero(np.asarray(seen[0]).max(0) > 0)}
    held_out = torch.cat([held.val_pos, held.val_neg, held.test_pos, held.test_neg], dim=1).t().tolist()
    assert not trained_on & {index[(min(u, v), max(u, v))] for u, v in held_out}


def test_the_largest_seed_works_in_every_repeated_task(tmp_path):
    from gca.cli import main
    from gca.seeds import MAX_SEED, run_seeds

    seeds = run_seeds(MAX_SEED, 5)
    assert seeds[0] == MAX_SEED and len(set(seeds)) == 5 and all(0 <= s <= MAX_SEED for s in seeds)
    assert run_seeds(7, 3) == run_seeds(7, 3) and run_seeds(7, 1) == [7]
    for task in ("link", "cluster"):
        assert (
            main(
                [
                    "train",
                    "--task",
                    task,
                    "--seed",
                    str(MAX_SEED),
                    "--epochs",
                    "1",
                    "--splits",
                    "2",
                    "--quiet",
                    "--set",
                    "hidden=8",
                    "--set",
                    "proj_hidden=8",
                    "--out",
                    str(tmp_path / task),
                ]
            )
            == 0
        )


def test_each_task_has_one_default_count_on_the_command_line(tmp_path, capsys):
    from gca.choices import TASK_COUNTS
    from gca.cli import main

    assert TASK_COUNTS == {"classify": 20, "link": 3, "cluster": 10}
    assert (
        main(
            [
                "train",
                "--task",
                "link",
                "--epochs",
                "1",
                "--quiet",
                "--set",
                "hidden=8",
                "--set",
                "proj_hidden=8",
                "--out",
                str(tmp_path / "link"),
            ]
        )
        == 0
    )
    assert "over 3 hold-outs" in capsys.readouterr().out
    assert len(json.loads((tmp_path / "link" / "results.json").read_text())["link_prediction"]["runs"]) == 3
    assert (
        main(
            [
                "train",
                "--task",
                "cluster",
                "--epochs",
                "1",
                "--quiet",
                "--set",
                "hidden=8",
                "--set",
                "proj_hidden=8",
                "--out",
                str(tmp_path / "cluster"),
            ]
        )
        == 0
    )
    assert len(json.loads((tmp_path / "cluster" / "results.json").read_text())["clustering"]["nmi"]["runs"]) == 10
    assert (
        main(
            [
                "train",
                "--epochs",
                "1",
                "--quiet",
                "--set",
                "hidden=8",
                "--set",
                "proj_hidden=8",
                "--out",
                str(tmp_path / "classify"),
            ]
        )
        == 0
    )
    assert len(json.loads((tmp_path / "classify" / "results.json").read_text())["accuracy"]["runs"]) == 20


def test_seeds_that_cannot_be_drawn_or_judged_are_refused_in_one_line_before_anything_trains(tmp_path, capsys):
    from gca.cli import main

    out = tmp_path / "o"
    assert main(["train", "--epochs", "1", "--splits", "2", "--quiet", "--out", str(out)]) == 0  # an earlier run
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    capsys.readouterr()
    (tmp_path / "e.csv").write_text("0,1\n1,2\n2,3\n3,0\n")
    np.save(tmp_path / "x.npy", np.eye(4, dtype=np.float32))
    unlabelled = ["--edges", str(tmp_path / "e.csv"), "--features", str(tmp_path / "x.npy")]
    for extra, said in (
        (["--seeds", "100000000000000000000"], "--seeds must be at most 1000"),
        (
            [*unlabelled, "--seeds", "3"],
            "--seeds 3 repeats a pretraining to judge its accuracy, and the graph e has no labels to judge it by",
        ),
    ):
        assert main(["train", "--epochs", "1", "--quiet", "--out", str(out), *extra]) == 2
        printed = capsys.readouterr()
        err = printed.err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("gca: error: ") and said in err[0], err
        assert "Traceback" not in printed.err and printed.out == ""  # nothing trained, nothing said of training
        assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # the earlier run whole
