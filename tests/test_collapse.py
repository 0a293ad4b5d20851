"""Collapse (gca.objective.collapse): a loss that sits at log(2N − 1) ends training with one line; warm-up is exact."""

from __future__ import annotations

import math

import pytest
import torch
from conftest import path_graph

import gca.nn.gcn as encoder
from gca import GCA, GCAConfig
from gca.cli import main
from gca.datasets import karate_club
from gca.objective import reference_loss
from gca.objective.collapse import COLLAPSE_EPOCHS, CollapseWatch, uniform_loss
from gca.train.loop import CollapseError, warmup_schedule


def test_uniform_similarities_give_log_2n_minus_1_for_any_tau():
    same = torch.ones(7, 4)  # every projection identical: all cosines 1
    for tau in (0.1, 0.5, 2.0):
        assert float(reference_loss(same, same, tau)) == pytest.approx(math.log(13), abs=1e-5)
    assert uniform_loss(7) == math.log(13)


def test_the_watch_needs_consecutive_flat_epochs():
    watch = CollapseWatch(patience=3, tolerance=1e-3)
    assert watch.update(1, [0.0], 5.0) is None and watch.update(2, [0.0005], 5.0) is None
    assert watch.update(3, [0.01], 5.0) is None  # moved away: the count starts again
    assert [watch.update(e, [-0.0002, 0.0002], 5.0) for e in (4, 5)] == [None, None]
    message = watch.update(6, [0.0], 5.0)
    assert message.startswith("training collapsed: from epoch 4 to 6 the loss stayed at log(2N-1) = 5.0000")


@pytest.fixture
def dead_encoder(monkeypatch):
    """An encoder whose weights start at zero: ReLU(0) passes no gradient, so every node's embedding stays 0, every
    projection is the same vector and the loss is log(2N − 1) at every epoch — a run that collapses for sure."""

    def zero(self):
        torch.nn.init.zeros_(self.weight)
        torch.nn.init.zeros_(self.bias)

    monkeypatch.setattr(encoder.GCNLayer, "reset_parameters", zero)


def test_a_collapsing_run_ends_after_the_patience_with_advice(dead_encoder):
    estimator = GCA(GCAConfig(epochs=200, hidden=4, proj_hidden=4, activation="relu"), device="cpu")
    seen = []
    with pytest.raises(CollapseError, match=r"from epoch 1 to 20 .*= 4\.2047.*lower the learning rate"):
        estimator.fit(karate_club(), on_epoch=lambda epoch, embed: seen.append(epoch))
    assert seen == list(range(1, COLLAPSE_EPOCHS))  # stopped at the 20th epoch, not after 200


def test_gca_train_says_collapse_in_one_line_and_keeps_the_previous_run(dead_encoder, tmp_path, capsys):
    out = tmp_path / "run"
    out.mkdir()
    (out / "results.json").write_text('{"earlier": true}')
    assert main(["train", "--dataset", "Karate", "--set", "activation=relu", "--quiet", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("gca: error: training collapsed") and "warmup_steps" in err[0]
    assert (out / "results.json").read_text() == '{"earlier": true}'


def test_healthy_runs_do_not_trip_the_watch():
    # the demo's setting and a small graph with a high learning rate train through without a collapse report
    GCA(GCAConfig(epochs=60, hidden=8, proj_hidden=8, lr=0.01), device="cpu").fit(karate_club())
    GCA(GCAConfig(epochs=60, hidden=4, proj_hidden=4, lr=0.05), device="cpu").fit(path_graph(12))


def test_warmup_rises_linearly_then_holds_and_resume_is_exact(tmp_path):
    schedule = warmup_schedule(0.1, 4)
    assert [schedule(e) for e in range(6)] == pytest.approx([0.025, 0.05, 0.075, 0.1, 0.1, 0.1])
    assert warmup_schedule(0.1, 0) is None and warmup_schedule(0.1, 1) is None
    config = GCAConfig(epochs=12, hidden=8, proj_hidden=8, lr=0.01, warmup_steps=8)
    straight = GCA(config, device="cpu")
    straight.fit(karate_club())
    first = GCA(config.replace(epochs=12), device="cpu")
    checkpoint = tmp_path / "checkpoint.pt"
    interrupted = GCA(config.replace(epochs=5), device="cpu")
    interrupted.fit(karate_club(), checkpoint=checkpoint, checkpoint_every=5)
    first.fit(karate_club(), checkpoint=checkpoint, checkpoint_every=5, resume=True)
    assert first.losses == straight.losses  # keyed on Adam's step count, which the checkpoint holds: exact resume
    no_warmup = GCA(config.replace(warmup_steps=0), device="cpu")
    no_warmup.fit(karate_club())
    assert no_warmup.losses[1:] != straight.losses[1:]


def test_warmup_counts_updates_not_epochs():
    from gca.augment.prepared import prepare
    from gca.nn.model import GCAModel
    from gca.train.batches import Batch, BatchSource
    from gca.train.loop import train

    config = GCAConfig(hidden=4, proj_hidden=4)
    prepared = prepare(karate_club(), config)

    class ThreeSteps(BatchSource):
        def batches(self, epoch, generator):
            for anchors in torch.randperm(34, generator=generator).chunk(3):
                yield Batch.of_graph(prepared.graph, prepared.views, anchors)

    model = GCAModel.from_config(34, config)
    optimizer = torch.optim.Adam(model.parameters(), lr=1.0)
    rates = []
    step = optimizer.step
    optimizer.step = lambda *a, **k: (rates.append(optimizer.param_groups[0]["lr"]), step(*a, **k))[1]
    train(model, optimizer, ThreeSteps(), 2, torch.Generator().manual_seed(0), learning_rate=warmup_schedule(0.3, 4))
    assert rates == pytest.approx([0.075, 0.15, 0.225, 0.3, 0.3, 0.3])
