"""Collapse (gca.objective.collapse): a loss that sits at log(2N − 1) — for a run of updates during training, or at
its end — ends training with one line naming the likely cause; healthy runs never trip it; warm-up is exact."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from conftest import path_graph, undirected
from torch_geometric.data import Data

import gca.nn.gcn as encoder
from gca import GCA, GCAConfig
from gca.cli import main
from gca.datasets import karate_club
from gca.objective import reference_loss
from gca.objective.collapse import COLLAPSE_UPDATES, CollapseWatch, likely_cause, uniform_loss
from gca.train.loop import CollapseError, warmup_schedule


def test_uniform_similarities_give_log_2n_minus_1_for_any_tau():
    same = torch.ones(7, 4)  # every projection identical: all cosines 1
    for tau in (0.1, 0.5, 2.0):
        assert float(reference_loss(same, same, tau)) == pytest.approx(math.log(13), abs=1e-5)
    assert uniform_loss(7) == math.log(13)


def test_the_watch_needs_consecutive_flat_updates():
    watch = CollapseWatch(patience=3, tolerance=1e-3)
    assert watch.update(1, 0.0, 5.0) is False and watch.update(1, 0.0005, 5.0) is False
    assert watch.update(2, 0.01, 5.0) is False  # moved away: the count starts again
    assert watch.update(2, float("nan"), 5.0) is False  # a NaN loss is not flat
    assert [watch.update(3, gap, 5.0) for gap in (-0.0002, 0.0002)] == [False, False]
    assert watch.update(4, 0.0, 5.5) is True  # three in a row, over two epochs; the full batch's value is shown
    assert watch.message().startswith(
        "training collapsed: from epoch 3 to 4 (3 updates) the loss stayed at log(2N-1) = 5.5000, the value when all"
    )
    assert watch.message("likely cause: X").endswith("carry no signal; likely cause: X")


def test_a_run_ends_collapsed_when_its_last_updates_were_flat():
    def ended(gaps, end_updates=3):
        watch = CollapseWatch(patience=100, end_updates=end_updates)
        for gap in gaps:
            watch.update(1, gap, 2.0)
        return watch.ended_collapsed()

    assert ended([0.5, 0.0, 0.0, 0.0]) and ended([0.0]) and ended([0.0, 0.0])  # a shorter run: all of its updates
    assert not ended([0.0, 0.0, 0.5]) and not ended([0.5, 0.0, 0.0]) and not ended([])
    assert not ended([0.0, 0.5, 0.0, 0.0])
    watch = CollapseWatch(patience=100, end_updates=2, advice="generic")
    for epoch, gap in [(7, 0.3), (8, 0.0), (8, 0.0), (9, 0.0)]:
        watch.update(epoch, gap, 2.0)
    assert watch.message(ended=True) == (
        "training collapsed: from epoch 8 to the end (epoch 9; 3 updates) the loss stayed at log(2N-1) = 2.0000, "
        "the value when all similarities are equal, so the embeddings carry no signal; generic"
    )


def test_the_likely_cause_comes_from_the_settings():
    assert likely_cause(0.5, 1e-5, False) == (
        "likely cause: the learning rate lr=0.5 is high; lower the learning rate or lengthen the warm-up (warmup_steps)"
    )
    assert likely_cause(0.001, 0.5, False) == (
        "likely cause: weight_decay=0.5 is high (it pulls every weight towards zero); lower weight_decay (the paper "
        "uses 1e-5)"
    )
    both = likely_cause(0.1, 0.01, False)
    assert "lr=0.1 is high and weight_decay=0.01 is high" in both
    assert likely_cause(5.0, 5.0, True).startswith("likely cause: every node's features are zero")  # it wins
    assert likely_cause(0.01, 1e-4, False, advice="generic") == "generic"  # at the thresholds: nothing stands out
    assert likely_cause(None, None, False).startswith("lower the learning rate")


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
    with pytest.raises(CollapseError, match=r"from epoch 1 to 20 \(20 updates\) .*= 4\.2047.*lower the learning"):
        estimator.fit(karate_club(), on_epoch=lambda epoch, embed: seen.append(epoch))
    assert seen == list(range(1, COLLAPSE_UPDATES))  # stopped at the 20th update (epoch), not after 200


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


def _karate_without_features():
    data = karate_club()
    data.x = torch.zeros_like(data.x)
    return data


def _two_communities(size: int = 20, seed: int = 0) -> Data:
    """A planted partition: two dense communities joined by a few edges, features a noisy community indicator."""
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1], size)
    upper = np.triu(rng.random((2 * size, 2 * size)) < np.where(y[:, None] == y[None, :], 0.3, 0.01), k=1)
    x = np.eye(2)[y] + rng.normal(0, 0.5, (2 * size, 2))
    x = np.concatenate([x, rng.random((2 * size, 6))], axis=1).astype(np.float32)
    return Data(
        x=torch.from_numpy(x),
        edge_index=undirected([tuple(e) for e in np.argwhere(upper).tolist()]),
        y=torch.from_numpy(y),
    )


#: Mini-batch training on Karate: 34 nodes at most 8 anchors a batch are 5 updates an epoch, of 7, 7, 7, 7 and 6
#: anchors (an even split), so a full batch's uniform loss is log(2·7 − 1) = log 13 = 2.5649.
MINI_BATCH = dict(batch_size=8, hidden=8, proj_hidden=8)


def test_a_mini_batch_run_is_judged_by_updates_not_epochs(dead_encoder):
    seen = []
    estimator = GCA(GCAConfig(epochs=200, activation="relu", **MINI_BATCH), device="cpu")
    with pytest.raises(CollapseError, match=r"^training collapsed: from epoch 1 to 4 \(20 updates\) .*= 2\.5649"):
        estimator.fit(karate_club(), on_epoch=lambda epoch, embed: seen.append(epoch))
    assert seen == [1, 2, 3]  # the 20th update is the 5th of epoch 4: stopped there, not after 20 epochs


@pytest.mark.parametrize("epochs", [1, 3])
def test_a_short_mini_batch_run_that_ends_collapsed_is_stopped(dead_encoder, epochs):
    # fewer updates (5 or 15) than the watch's 20: judged at the end, before the last epoch's hook
    seen = []
    estimator = GCA(GCAConfig(epochs=epochs, activation="relu", **MINI_BATCH), device="cpu")
    with pytest.raises(
        CollapseError,
        match=rf"^training collapsed: from epoch 1 to the end \(epoch {epochs}; "
        rf"{5 * epochs} updates\)",
    ):
        estimator.fit(karate_club(), on_epoch=lambda epoch, embed: seen.append(epoch))
    assert seen == list(range(1, epochs))


def test_all_zero_features_are_named_as_the_cause():
    # every node's input is zero, so every embedding is the encoder's bias: collapsed from the first update,
    # whatever the settings — a real collapse, no patched encoder
    for config in (GCAConfig(epochs=2, **MINI_BATCH), GCAConfig(epochs=2, hidden=8, proj_hidden=8, lr=0.5)):
        with pytest.raises(CollapseError) as caught:
            GCA(config, device="cpu").fit(_karate_without_features())
        message = str(caught.value)
        assert "to the end (epoch 2;" in message and "\n" not in message
        assert message.endswith(
            "likely cause: every node's features are zero, so all nodes look the same to the "
            "encoder; train on features that differ between nodes"
        )


@pytest.mark.parametrize(
    ("settings", "cause"),
    [
        (
            dict(lr=0.5),
            "likely cause: the learning rate lr=0.5 is high; lower the learning rate or lengthen the "
            "warm-up (warmup_steps)",
        ),
        (
            dict(weight_decay=0.5),
            "likely cause: weight_decay=0.5 is high (it pulls every weight towards zero); "
            "lower weight_decay (the paper uses 1e-5)",
        ),
    ],
)
def test_the_collapse_message_names_the_setting_at_fault(dead_encoder, settings, cause):
    config = GCAConfig(epochs=3, activation="relu", **MINI_BATCH, **settings)
    with pytest.raises(CollapseError) as caught:
        GCA(config, device="cpu").fit(karate_club())
    assert str(caught.value).endswith("so the embeddings carry no signal; " + cause)


def test_with_no_setting_at_fault_the_message_gives_the_generic_advice(dead_encoder):
    with pytest.raises(CollapseError) as caught:
        GCA(GCAConfig(epochs=3, activation="relu", **MINI_BATCH), device="cpu").fit(karate_club())
    assert "likely cause" not in str(caught.value) and "lower the learning rate (lr=0.0005)" in str(caught.value)


def test_gca_train_that_ends_collapsed_writes_nothing(dead_encoder, tmp_path, capsys):
    out = tmp_path / "run"
    out.mkdir()
    (out / "results.json").write_text('{"earlier": true}')
    (out / "embeddings.npy").write_bytes(b"earlier")
    argv = ["train", "--dataset", "Karate", "--epochs", "2", "--set", "batch_size=8", "--quiet", "--out", str(out)]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("gca: error: training collapsed: from epoch 1 to the end (epoch 2;")
    assert sorted(p.name for p in out.iterdir()) == ["embeddings.npy", "results.json"]
    assert (out / "results.json").read_text() == '{"earlier": true}'
    assert (out / "embeddings.npy").read_bytes() == b"earlier"


@pytest.mark.parametrize("epochs", [1, 10])
def test_short_healthy_runs_are_not_called_collapsed(epochs):
    karate = karate_club()
    GCA(GCAConfig(epochs=epochs, hidden=8, proj_hidden=8, lr=0.01), device="cpu").fit(karate)
    GCA(GCAConfig(epochs=epochs, lr=0.01, **MINI_BATCH), device="cpu").fit(karate)
    planted = _two_communities()
    GCA(GCAConfig(epochs=epochs, hidden=8, proj_hidden=8, lr=0.01), device="cpu").fit(planted)
    GCA(GCAConfig(epochs=epochs, lr=0.01, **MINI_BATCH), device="cpu").fit(planted)


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


def test_features_the_encoder_sees_as_identical_are_named_as_the_cause():
    """One feature column under feature_norm=row is 1 for every node that has a value: the rows differ as stored
    (3 and 5) but not as read; a sparse matrix of equal rows counts too, and rows that differ do not."""
    from gca.graph.features import RowNormalizedFeatures, identical_rows
    from gca.graph.sparse import SparseMatrix
    from gca.objective.collapse import likely_cause

    assert identical_rows(RowNormalizedFeatures.of(np.array([[3.0], [5.0], [0.5]], dtype=np.float32)))
    assert not identical_rows(RowNormalizedFeatures.of(np.array([[3.0, 1.0], [5.0, 1.0]], dtype=np.float32)))
    assert identical_rows(torch.ones(4, 3)) and not identical_rows(torch.eye(3))
    same = torch.tensor([[0.0, 2.0], [0.0, 2.0], [0.0, 2.0]]).to_sparse_csr()
    assert identical_rows(SparseMatrix(same)) and not identical_rows(SparseMatrix(torch.eye(3).to_sparse_csr()))
    message = likely_cause(5e-4, 1e-5, False, "generic", identical_features=True)
    assert "same features" in message and "feature_norm=none" in message and "generic" not in message


def test_embeddings_equal_for_every_node_are_a_collapse_even_when_the_loss_is_not_flat(tmp_path, capsys):
    """Identical features on a regular graph (a ring): the views differ in training, so the loss stays above
    log(2N − 1), yet every node embeds alike — refused with one line, nothing written."""
    n = 30
    ring = torch.tensor([[i, (i + 1) % n] for i in range(n)] + [[(i + 1) % n, i] for i in range(n)]).t()
    data = Data(x=torch.ones(n, 5), edge_index=ring)
    with pytest.raises(CollapseError, match="every node's embedding is the same.*same features"):
        GCA(GCAConfig(epochs=5, hidden=8, proj_hidden=8), device="cpu").fit(data)
