"""The training loop takes its parts: batch sources and objectives plug in without editing it."""

from __future__ import annotations

import numpy as np
import torch
from conftest import path_graph

from gca import GCA, GCAConfig
from gca.augment.prepared import PreparedGraph, prepare
from gca.datasets import karate_club
from gca.graph.features import normalize_rows
from gca.nn.model import GCAModel
from gca.train.batches import Batch, BatchSource, FullGraphBatches
from gca.train.checkpoint import load_checkpoint
from gca.train.inference import encode_graph
from gca.train.loop import train


class TwoHalves(BatchSource):
    """Each epoch two steps, each on half the nodes as anchors (a stand-in for a mini-batch source); counts the
    batches it has served, which checkpoints must carry for an exact resume."""

    def __init__(self, prepared: PreparedGraph, device: torch.device) -> None:
        self.graph, self.views = prepared.graph.to(device), prepared.views
        self.served = 0
        self.epochs_seen: list[int] = []

    def batches(self, epoch, generator):
        self.epochs_seen.append(epoch)
        order = torch.randperm(self.graph.num_nodes, generator=generator)
        for anchors in order.chunk(2):
            self.served += 1
            yield Batch.of_graph(self.graph, self.views, anchors)

    def state_dict(self):
        return {"served": self.served}

    def load_state_dict(self, state):
        self.served = state["served"]


def test_the_loop_runs_any_batch_source_and_averages_its_steps():
    config = GCAConfig(epochs=3, hidden=8, proj_hidden=8, lr=0.01)
    prepared = prepare(karate_club(), config)
    model = GCAModel.from_config(34, config)
    before = [p.detach().clone() for p in model.parameters()]
    optimizer = torch.optim.Adam(model.parameters(), lr=config.lr)
    source = TwoHalves(prepared, torch.device("cpu"))
    seen = []
    losses = train(
        model,
        optimizer,
        source,
        3,
        torch.Generator().manual_seed(0),
        after_epoch=lambda e, ls: seen.append((e, len(ls))),
    )
    assert source.epochs_seen == [0, 1, 2] and source.served == 6 and seen == [(1, 1), (2, 2), (3, 3)]
    assert len(losses) == 3 and np.isfinite(losses).all()
    assert all(not torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))
    assert encode_graph(model, prepared.graph).shape == (34, 8)


def test_full_graph_source_is_algorithm_1():
    config = GCAConfig(epochs=2, hidden=4, proj_hidden=4)
    prepared = prepare(path_graph(5, torch.arange(15.0).reshape(5, 3)), config)  # dense features
    source = FullGraphBatches(prepared.graph, prepared.views)
    (batch,) = list(source.batches(0, torch.Generator()))
    (again,) = list(source.batches(1, torch.Generator()))
    assert again.features is batch.features and batch.num_nodes == 5 and batch.anchors is None  # built once
    expected = normalize_rows(prepared.graph.raw_features)  # the encoder's input: rows scaled to sum 1
    assert torch.equal(batch.features, torch.from_numpy(expected))
    assert source.state_dict() == {}


def test_estimator_takes_a_batch_source_and_checkpoints_its_state(tmp_path):
    config = GCAConfig(epochs=4, hidden=8, proj_hidden=8, lr=0.01, seed=3)
    sources = []

    def halves(prepared, device):
        sources.append(TwoHalves(prepared, device))
        return sources[-1]

    straight = GCA(config, device="cpu", batches=halves)
    z = straight.fit_transform(karate_club())
    assert len(straight.losses) == 4 and sources[-1].served == 8
    # stop after two epochs (a checkpoint every 2), then resume: the source continues from its saved position
    first = GCA(config.replace(epochs=2), device="cpu", batches=halves)
    first.fit(karate_club(), checkpoint=tmp_path / "c.pt", checkpoint_every=2)
    assert load_checkpoint(tmp_path / "c.pt")["batches"] == {"served": 4}
    resumed = GCA(config, device="cpu", batches=halves)
    z_resumed = resumed.fit_transform(karate_club(), checkpoint=tmp_path / "c.pt", checkpoint_every=2, resume=True)
    assert sources[-1].served == 8
    assert resumed.losses == straight.losses
    torch.testing.assert_close(z_resumed, z, rtol=0, atol=0)


def test_fit_takes_what_prepare_returned():
    estimator = GCA(GCAConfig(epochs=2, hidden=4, proj_hidden=4), device="cpu")
    prepared = estimator.prepare(karate_club())
    assert isinstance(prepared, PreparedGraph) and prepared.centrality is not None
    estimator.fit(prepared)
    assert estimator.prepared is prepared and estimator.graph is prepared.graph


def test_fit_transform_is_fit():
    from gca import GCA, GCAConfig

    data = karate_club()
    config = GCAConfig(epochs=3, hidden=8, proj_hidden=8)
    a = GCA(config, device="cpu").fit_transform(data)
    b = GCA(config, device="cpu").fit_transform(data)
    assert torch.equal(a, b)


# gca train's default on a CPU and --epochs (issue 52): the epochs given never change the training chosen


def test_epochs_keep_the_training_the_graphs_default_chooses_and_the_header_says_it_either_way(
    tmp_path, capsys, monkeypatch
):
    """Karate sent to mini-batches of 8 (5 updates an epoch) by an exact update estimated at 100 s: its setting's
    100 exact updates are 2.8 h, over the hour. ``--epochs 2`` (2 exact updates: 200 s, within it) used to switch
    to exact training, saying nothing; it stays 2 mini-batch epochs of 5 updates, and the header says so. Where the
    default keeps exact training (1 s an update), the header says that too, with the estimate of the epochs given."""
    import json

    from gca.cli import main
    from gca.train import fast

    monkeypatch.setattr(fast, "FAST_BATCH_SIZE", 8)
    monkeypatch.setattr(fast, "exact_update_seconds", lambda *args: 100.0)
    args = ["train", "--no-eval", "--quiet", "--set", "warmup_steps=0", "--epochs", "2"]
    assert main([*args, "--out", str(tmp_path / "a")]) == 0
    out = capsys.readouterr().out
    assert (
        "epochs=2, device=cpu" in out
        and "; mini-batches of 8 anchors, fan-out 10,10; 2 epochs of 5 updates "
        "(--epochs counts mini-batch epochs, each one pass over the nodes); mini-batches by default: the paper's "
        "exact training (100 updates of all 34 nodes) is estimated at about 2.8 h on 2 CPU cores, over 1 h "
        "(--exact keeps the paper's full-graph training)\n"
    ) in out
    record = json.loads((tmp_path / "a" / "results.json").read_text())
    assert (record["config"]["batch_size"], record["epochs"], len(record["losses"])) == (8, 2, 2)
    assert record["fast_path"]["training"] == "mini-batch" and record["fast_path"]["exact_estimate_seconds"] == 10_000
    assert "mini_batch_schedule" not in record  # the epochs are the user's, not derived from the setting's updates
    # within the bound: exact training, said in the header with the setting's estimate and the run's own
    monkeypatch.setattr(fast, "exact_update_seconds", lambda *args: 1.0)
    assert main([*args, "--out", str(tmp_path / "b")]) == 0
    out = capsys.readouterr().out
    assert (
        "; exact training (the whole graph at every update) by default: the paper's exact training (100 updates "
        "of all 34 nodes) is estimated at about 2 min on 2 CPU cores, within 1 h (--fast for mini-batches); "
        "this run's 2 updates of the whole graph: about 2.0 s\n"
    ) in out
    record = json.loads((tmp_path / "b" / "results.json").read_text())
    assert record["config"]["batch_size"] == 0 and record["fast_path"]["training"] == "exact"
    # without --epochs the setting's schedule, as before: its header gives no second estimate
    assert main([*args[:-2], "--out", str(tmp_path / "c")]) == 0
    out = capsys.readouterr().out
    assert "by default: the paper's exact training (100 updates" in out and "this run's" not in out
