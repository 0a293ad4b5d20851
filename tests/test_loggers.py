"""Metric loggers (gca.loggers): CSV rows and TensorBoard scalars equal the estimator's losses epoch by epoch, the
optional packages are one line when missing, ``on_epoch`` hooks old and new, the package's ``logging`` logger, and
``gca train --log-csv/--tensorboard/--wandb``."""

from __future__ import annotations

import copy
import csv
import json
import logging
import pickle
import sys
import types

import pytest
import torch

from gca import GCA, GCAConfig
from gca.cli import main
from gca.datasets import karate_club
from gca.loggers import CSVLogger, LoggerError, TensorBoardLogger, WandbLogger
from gca.train.estimator import clone
from gca.train.loop import CollapseError

SMALL = dict(hidden=8, proj_hidden=8)
#: Karate in mini-batches of at most 8 anchors: 5 updates an epoch.
MINI_BATCH = dict(batch_size=8, **SMALL)


class Recorder:
    """A logger that keeps every call."""

    def __init__(self, per_update: bool = False) -> None:
        self.per_update, self.calls, self.closed = per_update, [], 0

    def log(self, metrics, step):
        self.calls.append((dict(metrics), step))

    def close(self):
        self.closed += 1


def _rows(path):
    with open(path, newline="") as f:
        return list(csv.reader(f))


def test_csv_rows_are_the_losses_of_each_epoch_exactly(tmp_path):
    path = tmp_path / "losses.csv"
    estimator = GCA(GCAConfig(epochs=5, lr=0.01, warmup_steps=4, **SMALL), device="cpu", loggers=[CSVLogger(path)])
    estimator.fit(karate_club())
    header, *rows = _rows(path)
    assert header == ["epoch", "loss", "lr"]
    assert [int(r[0]) for r in rows] == [1, 2, 3, 4, 5]
    assert [float(r[1]) for r in rows] == estimator.losses  # exact: floats written with repr
    # the rate of each epoch's (only) update under a 4-update warm-up
    assert [float(r[2]) for r in rows] == pytest.approx([0.0025, 0.005, 0.0075, 0.01, 0.01])
    estimator.fit(karate_club())  # a second fit starts the file afresh
    assert len(_rows(path)) == 6


def test_epoch_and_update_metrics_reach_a_logger_with_their_steps():
    every, epochs = Recorder(per_update=True), Recorder()
    estimator = GCA(GCAConfig(epochs=2, **MINI_BATCH), device="cpu", loggers=[every, epochs])
    estimator.fit(karate_club())
    assert [step for _, step in epochs.calls] == [1, 2]
    assert [m["loss"] for m, _ in epochs.calls] == estimator.losses
    updates = [(m["loss/update"], step) for m, step in every.calls if "loss/update" in m]
    assert [step for _, step in updates] == list(range(1, 11))  # 5 updates an epoch, counted over the run
    import numpy as np

    assert float(np.mean([v for v, _ in updates[:5]])) == estimator.losses[0]
    assert every.closed == epochs.closed == 1


def test_loggers_are_closed_when_training_fails_and_the_failed_epoch_is_not_logged():
    seen = Recorder()
    data = karate_club()
    data.x = torch.zeros_like(data.x)  # every embedding the same: collapsed from the first update
    with pytest.raises(CollapseError):
        GCA(GCAConfig(epochs=2, **MINI_BATCH), device="cpu", loggers=[seen]).fit(data)
    assert [step for _, step in seen.calls] == [1] and seen.closed == 1


def test_a_csv_log_keeps_the_earlier_epochs_of_a_resumed_run_and_drops_a_cut_row(tmp_path):
    path = tmp_path / "losses.csv"
    path.write_text("epoch,loss,lr\n1,4.0,0.001\n2,3.5,0.001\n3,3.25,0.001\n4,3.1")  # killed while writing row 4
    logger = CSVLogger(path)
    logger.log({"loss": 3.0, "lr": 0.001}, 3)  # resumed from the checkpoint of epoch 2
    assert path.read_text() == "epoch,loss,lr\n1,4.0,0.001\n2,3.5,0.001\n3,3.0,0.001\n"
    other = CSVLogger(path)
    other.log({"loss": 9.0, "loss2": 1.0}, 2)  # another header: nothing of the old file is kept
    assert path.read_text() == "epoch,loss,loss2\n2,9.0,1.0\n"


def test_a_fake_tensorboard_writer_gets_every_epochs_loss(monkeypatch, tmp_path):
    made = []

    class SummaryWriter:
        def __init__(self, log_dir):
            self.log_dir, self.scalars, self.closed = log_dir, [], False
            made.append(self)

        def add_scalar(self, tag, value, step):
            self.scalars.append((tag, value, step))

        def flush(self):
            pass

        def close(self):
            self.closed = True

    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", types.SimpleNamespace(SummaryWriter=SummaryWriter))
    estimator = GCA(GCAConfig(epochs=4, **SMALL), device="cpu", loggers=[TensorBoardLogger(tmp_path / "tb")])
    estimator.fit(karate_club())
    (writer,) = made
    assert writer.log_dir == str(tmp_path / "tb") and writer.closed
    losses = [(value, step) for tag, value, step in writer.scalars if tag == "loss"]
    assert losses == [(loss, epoch) for epoch, loss in enumerate(estimator.losses, start=1)]
    assert [step for tag, _, step in writer.scalars if tag == "loss/update"] == [1, 2, 3, 4]  # one update an epoch
    assert [step for tag, _, step in writer.scalars if tag == "lr"] == [1, 2, 3, 4]


def test_missing_packages_are_one_line(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", None)  # import fails as without tensorboard
    monkeypatch.setitem(sys.modules, "wandb", None)
    with pytest.raises(LoggerError) as tensorboard:
        TensorBoardLogger(tmp_path)
    with pytest.raises(LoggerError) as wandb:
        WandbLogger(project="gca")
    assert str(tensorboard.value) == ("TensorBoard logging needs the tensorboard package: "
                                      "pip install 'gca-graph[tensorboard]'")  # fmt: skip
    assert str(wandb.value) == "Weights & Biases logging needs the wandb package: pip install 'gca-graph[wandb]'"


def test_a_fake_wandb_gets_each_epoch_at_its_step(monkeypatch):
    calls = []
    fake = types.ModuleType("wandb")
    fake.init = lambda **kwargs: calls.append(("init", kwargs))
    fake.log = lambda metrics, step=None: calls.append(("log", metrics, step))
    fake.finish = lambda: calls.append(("finish",))
    monkeypatch.setitem(sys.modules, "wandb", fake)
    estimator = GCA(GCAConfig(epochs=3, **SMALL), device="cpu", loggers=[WandbLogger(project="p", dir="d")])
    estimator.fit(karate_club())
    assert calls[0] == ("init", {"project": "p", "dir": "d"}) and calls[-1] == ("finish",)
    logged = calls[1:-1]
    assert [(c[0], c[2]) for c in logged] == [("log", 1), ("log", 2), ("log", 3)]
    assert [c[1]["loss"] for c in logged] == estimator.losses


def test_old_and_new_on_epoch_hooks(tmp_path):
    old, new, keyword = [], [], []
    estimator = GCA(GCAConfig(epochs=3, **SMALL), device="cpu")
    estimator.fit(karate_club(), on_epoch=lambda epoch, embed: old.append(epoch))
    assert old == [1, 2, 3]

    def hook(epoch, embed, loss=None):
        new.append((epoch, loss, tuple(embed().shape)))

    estimator.fit(karate_club(), on_epoch=hook)
    assert new == [(e, estimator.losses[e - 1], (34, 8)) for e in (1, 2, 3)]
    estimator.fit(karate_club(), on_epoch=lambda epoch, embed, **extra: keyword.append(extra["loss"]))
    assert keyword == estimator.losses


def test_the_package_logger_has_only_a_null_handler_and_warns_on_collapse(caplog):
    package = logging.getLogger("gca")
    assert any(isinstance(h, logging.NullHandler) for h in package.handlers)
    assert not [h for h in package.handlers if not isinstance(h, logging.NullHandler)]
    data = karate_club()
    data.x = torch.zeros_like(data.x)
    with caplog.at_level(logging.DEBUG, logger="gca"), pytest.raises(CollapseError) as caught:
        GCA(GCAConfig(epochs=2, **MINI_BATCH), device="cpu").fit(data)
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and warnings[0].name == "gca.train.loop"
    assert warnings[0].getMessage() == str(caught.value)
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="gca"):
        estimator = GCA(GCAConfig(epochs=2, **SMALL), device="cpu").fit(karate_club())
    debug = [r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG]
    lr = estimator.config.lr
    assert debug == [f"epoch {e}/2: loss {estimator.losses[e - 1]:.6f}, lr {lr:g}" for e in (1, 2)]
    assert any(r.levelno == logging.INFO and r.name.startswith("gca.") for r in caplog.records)


def test_get_params_clone_and_copies_carry_the_loggers(tmp_path):
    from sklearn.base import clone as sklearn_clone

    loggers = [CSVLogger(tmp_path / "a.csv"), Recorder()]
    estimator = GCA(GCAConfig(epochs=2, **SMALL), device="cpu", loggers=loggers)
    assert estimator.get_params(deep=False)["loggers"] is loggers
    assert clone(estimator).get_params(deep=False)["loggers"] is loggers
    assert sklearn_clone(estimator).loggers == loggers
    assert "loggers=[CSVLogger, Recorder]" in repr(estimator)
    assert estimator.set_params(loggers=None).loggers == [] and estimator.set_params(lr=0.01).loggers == []
    fitted = GCA(GCAConfig(epochs=2, **SMALL), device="cpu", loggers=[CSVLogger(tmp_path / "b.csv")])
    fitted.fit(karate_club())
    for twin in (copy.deepcopy(fitted), pickle.loads(pickle.dumps(fitted))):
        assert torch.equal(twin.embed(), fitted.embed()) and twin.loggers[0].path == tmp_path / "b.csv"
    with pytest.raises(LoggerError, match="^the logger object has no log"):
        GCA(loggers=[object()])


def test_gca_train_writes_the_csv_log_beside_out(tmp_path, capsys):
    out = tmp_path / "run"
    out.mkdir()
    log = tmp_path / "losses.csv"
    args = ["train", "--epochs", "3", "--no-eval", "--quiet", "--out", str(out)]
    assert main(args) == 0
    plain = capsys.readouterr()
    assert main([*args, "--log-csv", str(log)]) == 0
    logged = capsys.readouterr()
    assert logged.err == plain.err == "" and logged.out == plain.out  # the command prints what it printed before
    losses = json.loads((out / "results.json").read_text())["losses"]
    header, *rows = _rows(log)
    assert header == ["epoch", "loss", "lr"] and [float(r[1]) for r in rows] == losses
    assert main(args) == 0 and log.is_file()  # a later run leaves it: it is no file of the run's


@pytest.mark.parametrize("extra, message", [
    (["--log-csv", "{out}/results.json"], "lies inside --out"),
    (["--log-csv", "{out}/losses.csv"], "lies inside --out"),
    (["--tensorboard", "{out}/tb"], "lies inside --out"),
    (["--log-csv", "{out}"], "lies inside --out"),
    (["--log-csv", "{out}-no/such.csv"], "does not exist"),
    (["--log-csv", "{out}-dir"], "is a folder"),
    (["--task", "link", "--log-csv", "{out}/l.csv"], "--task link trains once per hold-out; it takes no --log-csv"),
    (["--tensorboard", "{out}-tb"], "pip install 'gca-graph[tensorboard]'"),
    (["--wandb", "project"], "pip install 'gca-graph[wandb]'"),
])  # fmt: skip
def test_gca_train_refuses_unusable_logs_in_one_line(tmp_path, capsys, monkeypatch, extra, message):
    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", None)
    monkeypatch.setitem(sys.modules, "wandb", None)
    out = tmp_path / "run"
    (tmp_path / "run-dir").mkdir()
    extra = [a.format(out=out) for a in extra]
    assert main(["train", "--epochs", "2", "--no-eval", "--quiet", "--out", str(out), *extra]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("gca: error: ") and message in err[0], err
    assert not out.exists() or not any(out.iterdir())
