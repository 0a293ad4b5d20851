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
    assert writer.log_dir == str(tmp_path / "tb" / "version_0") and writer.closed
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
    assert str(tensorboard.value) == ("TensorBoard logging needs the tensorboard package: pip install tensorboard")
    assert str(wandb.value) == "Weights & Biases logging needs the wandb package: pip install wandb"


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
    args = ["train", "--epochs", "3", "--no-eval", "--quiet", "--set", "warmup_steps=0", "--out", str(out)]
    assert main(args) == 0
    plain = capsys.readouterr()
    assert main([*args, "--log-csv", str(log)]) == 0
    logged = capsys.readouterr()
    assert logged.err == plain.err == ""
    assert logged.out == plain.out + f"logged to {log}\n"  # what it printed before, and where it logged
    losses = json.loads((out / "results.json").read_text())["losses"]
    header, *rows = _rows(log)
    assert header == ["epoch", "loss", "lr"] and [float(r[1]) for r in rows] == losses
    assert main(args) == 0 and log.is_file()  # a later run leaves it: it is no file of the run's


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--log-csv", "{out}/results.json"], "lies inside --out"),
        (["--log-csv", "{out}/losses.csv"], "lies inside --out"),
        (["--tensorboard", "{out}/tb"], "lies inside --out"),
        (["--log-csv", "{out}"], "lies inside --out"),
        (["--log-csv", "{out}-dir"], "is a folder"),
        (["--log-csv", "{out}-file/log.csv"], "run-file is a file, not a folder"),  # not "does not exist"
        (["--log-csv", "{out}-file/deeper/log.csv"], "run-file is a file, not a folder"),
        (["--tensorboard", "{out}-file/tb"], "run-file is a file, not a folder"),
        (["--log-csv", "{out}-dir/log.csv", "--features", "{out}-dir/log.hparams.json"], "writes"),
        (["--task", "link", "--log-csv", "{out}/l.csv"], "--task link trains once per hold-out; it takes no --log-csv"),
        (["--tensorboard", "{out}-tb"], "pip install tensorboard"),
        (["--wandb", "project"], "pip install wandb"),
    ],
)
def test_gca_train_refuses_unusable_logs_in_one_line(tmp_path, capsys, monkeypatch, extra, message):
    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", None)
    monkeypatch.setitem(sys.modules, "wandb", None)
    out = tmp_path / "run"
    (tmp_path / "run-dir").mkdir()
    (tmp_path / "run-file").write_text("a file where a folder is named\n")
    extra = [a.format(out=out) for a in extra]
    if "--features" in extra:  # a graph from files whose feature file is where the CSV log's hyperparameters go
        (tmp_path / "e.csv").write_text("0,1\n")
        (tmp_path / "run-dir" / "log.hparams.json").write_text("0.5\n0.25\n")
        extra += ["--edges", str(tmp_path / "e.csv")]
    assert main(["train", "--epochs", "2", "--no-eval", "--quiet", "--out", str(out), *extra]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("gca: error: ") and message in err[0], err
    assert not out.exists() or not any(out.iterdir())
    # nothing else was made: no OUT-wandb/ of a refused --wandb, no TensorBoard folder
    assert {p.name for p in tmp_path.iterdir()} <= {"run", "run-dir", "run-file", "e.csv"}
    assert sorted(p.name for p in (tmp_path / "run-dir").iterdir()) in ([], ["log.hparams.json"])


# --- a run as Lightning logs it: hyperparameters first, the epochs, the evaluation's numbers, each run its own ---


class RunRecorder(Recorder):
    """A logger that also takes hyperparameters, keeping every call in order."""

    def __init__(self) -> None:
        super().__init__()
        self.events = []

    def log_hyperparams(self, params):
        self.events.append(("hparams", dict(params)))

    def log(self, metrics, step):
        super().log(metrics, step)
        self.events.append(("log", dict(metrics), step))

    def close(self):
        super().close()
        self.events.append(("close",))


def _karate_run(loggers, epochs=3, clusters=0, splits=2):
    from gca.evaluate.splits import random_splits
    from gca.run.pipeline import run_gca

    data = karate_club()
    estimator = GCA(GCAConfig(epochs=epochs, **SMALL), device="cpu", loggers=loggers)
    prepared = estimator.prepare(data)
    chosen = random_splits(data.num_nodes, splits, train=0.3, labels=data.y.numpy()) if splits else None
    return estimator, run_gca(estimator, prepared, dataset="karate", labels=data.y, splits=chosen, clusters=clusters)


def test_final_metrics_are_the_numbers_of_the_record_by_their_path():
    from gca.loggers import final_metrics

    record = {
        "accuracy": {
            "protocol": "sklearn",
            "mean": 81.25,
            "std": 2.5,
            "runs": [80.0, 82.5],
            "val_mean": None,
            "macro_f1": {"mean": 70.0, "std": 0.0, "runs": [70.0, 70.0]},
        },
        "clustering": {"task": "cluster", "clusters": 4, "nmi": {"mean": float("nan"), "std": 1.0}},
        "raw_features_accuracy": None,
        "final_loss": 3.0,
        "embeddings_out_of_core": False,
    }
    assert final_metrics(record, ("accuracy", "raw_features_accuracy", "clustering", "missing")) == {
        "accuracy/mean": 81.25,
        "accuracy/std": 2.5,
        "accuracy/macro_f1/mean": 70.0,
        "accuracy/macro_f1/std": 0.0,
        "clustering/clusters": 4,
        "clustering/nmi/std": 1.0,
    }


def test_a_run_logs_hyperparams_then_its_epochs_then_its_evaluation_and_closes_once():
    seen = RunRecorder()
    estimator, result = _karate_run([seen], epochs=3, clusters=2)
    hparams, *logs, close = seen.events
    # the config's fields, those left to "auto" as the run resolved them (on a CPU: the blocked kernel in fp32)
    resolved = {"loss_backend": "blocked", "precision": "fp32", "warmup_steps": estimator.config.warmup_updates}
    assert hparams == ("hparams", {"dataset": "karate", **estimator.config.to_dict(), **resolved})
    assert [e[2] for e in logs] == [1, 2, 3, 3] and [e[1]["loss"] for e in logs[:3]] == estimator.losses
    final = logs[-1][1]
    accuracy, clustering = result.record["accuracy"], result.record["clustering"]
    assert final["accuracy/mean"] == result.evaluation.mean == accuracy["mean"]
    assert final["accuracy/std"] == accuracy["std"] and final["accuracy/val_mean"] == accuracy["val_mean"]
    assert (
        final["clustering/nmi/mean"] == clustering["nmi"]["mean"]
        and final["clustering/ari/std"] == (clustering["ari"]["std"])
    )
    assert not any(name.endswith("/runs") or name.endswith("protocol") for name in final)
    assert close == ("close",) and seen.closed == 1  # after the evaluation, not when fit ended
    assert "logged_to" not in result.record or result.record["logged_to"] == []


def test_a_run_without_evaluation_logs_no_final_row_and_a_failed_run_still_closes():
    seen = RunRecorder()
    _karate_run([seen], epochs=2, splits=0)
    assert [e[0] for e in seen.events] == ["hparams", "log", "log", "close"]
    failing = RunRecorder()
    with pytest.raises(ValueError, match="embeddings_file"):
        from gca.run.pipeline import run_gca

        estimator = GCA(GCAConfig(epochs=2, **SMALL), device="cpu", loggers=[failing])
        run_gca(estimator, estimator.prepare(karate_club()), dataset="karate", embeddings_file=__file__)
    assert [e[0] for e in failing.events] == ["hparams", "close"]


def test_the_csv_log_of_a_run_has_its_hyperparameters_beside_it_and_the_evaluation_as_its_last_row(tmp_path):
    log = tmp_path / "losses.csv"
    estimator, result = _karate_run([CSVLogger(log)], epochs=3)
    params = json.loads((tmp_path / "losses.hparams.json").read_text())
    resolved = {"loss_backend": "blocked", "precision": "fp32", "warmup_steps": 1}  # lr 5e-4: no warm-up
    assert params == json.loads(json.dumps({"dataset": "karate", **estimator.config.to_dict(), **resolved}))
    header, *rows = _rows(log)
    assert header[:3] == ["epoch", "loss", "lr"] and "accuracy/mean" in header and "accuracy/runs" not in header
    assert [r[0] for r in rows] == ["1", "2", "3", "3"]
    assert [float(r[1]) for r in rows[:3]] == estimator.losses and rows[3][1:3] == ["", ""]
    assert all(cell == "" for r in rows[:3] for cell in r[3:])  # the epochs' rows padded
    final = dict(zip(header, rows[3], strict=True))
    assert float(final["accuracy/mean"]) == result.record["accuracy"]["mean"]  # exact: written with repr
    assert float(final["accuracy/std"]) == result.record["accuracy"]["std"]
    assert result.record["logged_to"] == [str(log)]


def test_a_csv_log_widens_its_header_for_metrics_with_new_names(tmp_path):
    path = tmp_path / "l.csv"
    logger = CSVLogger(path)
    logger.log({"loss": 1.5, "lr": 0.25}, 1)
    logger.log({"loss": 1.0, "lr": 0.5}, 2)
    logger.log({"acc": 0.75, "lr": 0.5}, 2)
    logger.log({"loss": 0.5}, 3)
    assert path.read_text() == "epoch,loss,lr,acc\n1,1.5,0.25,\n2,1.0,0.5,\n2,,0.5,0.75\n3,0.5,,\n"


def test_next_version_counts_on_from_the_largest_and_never_gives_one_twice(tmp_path):
    import threading

    from gca.loggers import next_version

    root = tmp_path / "tb"
    (root / "version_3").mkdir(parents=True)
    (root / "version_x").mkdir()
    (root / "other").mkdir()
    assert next_version(root) == (4, root / "version_4") and (root / "version_4").is_dir()
    fresh = tmp_path / "fresh" / "deeper"
    assert next_version(fresh) == (0, fresh / "version_0")
    taken, barrier = [], threading.Barrier(8)

    def start():
        barrier.wait()
        taken.append(next_version(root)[0])

    threads = [threading.Thread(target=start) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(taken) == list(range(5, 13))


def test_each_fit_of_a_tensorboard_logger_is_a_new_version_unless_one_is_fixed(monkeypatch, tmp_path):
    made = []

    class SummaryWriter:
        def __init__(self, log_dir):
            self.log_dir, self.steps = log_dir, []
            made.append(self)

        def add_scalar(self, tag, value, step):
            self.steps.append((tag, step))

        def flush(self):
            pass

        def close(self):
            pass

    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", types.SimpleNamespace(SummaryWriter=SummaryWriter))
    logger = TensorBoardLogger(tmp_path / "tb")
    assert logger.version is None and logger.location is None
    estimator = GCA(GCAConfig(epochs=2, **SMALL), device="cpu", loggers=[logger])
    estimator.fit(karate_club())
    assert logger.version == 0 and logger.location == tmp_path / "tb" / "version_0"
    estimator.fit(karate_club())
    assert logger.version == 1 and [w.log_dir for w in made] == [str(tmp_path / "tb" / f"version_{v}") for v in (0, 1)]
    for writer in made:  # each run's own curve: no step twice
        assert [step for tag, step in writer.steps if tag == "loss"] == [1, 2]
    fixed = TensorBoardLogger(tmp_path / "tb", version="mine")
    GCA(GCAConfig(epochs=2, **SMALL), device="cpu", loggers=[fixed]).fit(karate_club())
    assert made[-1].log_dir == str(tmp_path / "tb" / "mine") and fixed.version == "mine"
    with pytest.raises(LoggerError, match="^version must be"):
        TensorBoardLogger(tmp_path / "tb", version="a/b")


def test_a_fake_wandb_run_gets_its_config_epochs_and_evaluation_and_makes_its_folder_when_it_starts(
    monkeypatch, tmp_path
):
    calls = []

    class Config:
        def update(self, params, allow_val_change=False):
            calls.append(("config", dict(params)))

    fake = types.ModuleType("wandb")
    fake.init = lambda **kwargs: calls.append(("init", kwargs)) or types.SimpleNamespace(config=Config(), url="u")
    fake.config = Config()
    fake.log = lambda metrics, step=None: calls.append(("log", sorted(metrics), step))
    fake.finish = lambda: calls.append(("finish",))
    monkeypatch.setitem(sys.modules, "wandb", fake)
    folder = tmp_path / "run-wandb"
    logger = WandbLogger(project="p", dir=str(folder))
    assert not folder.exists()  # made when the run starts, not before
    estimator, result = _karate_run([logger], epochs=2)
    assert folder.is_dir()
    assert calls[0] == ("init", {"project": "p", "dir": str(folder)})
    from gca.run.pipeline import logged_params

    assert calls[1] == ("config", logged_params(estimator, "karate"))
    assert calls[2:4] == [("log", ["loss", "lr"], 1), ("log", ["loss", "lr"], 2)]
    assert calls[4][0] == "log" and calls[4][2] == 2 and "accuracy/mean" in calls[4][1]
    assert calls[5:] == [("finish",)] and result.record["logged_to"] == ["u"]


def _has_tensorboard() -> bool:
    import importlib.util

    return importlib.util.find_spec("tensorboard") is not None


@pytest.mark.skipif(not _has_tensorboard(), reason="tensorboard is not installed")
def test_two_gca_train_runs_into_one_tensorboard_folder_are_two_versions_with_hparams_and_accuracy(tmp_path, capsys):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.plugins.hparams import plugin_data_pb2

    root = tmp_path / "tb"
    results = []
    for run in ("a", "b"):
        out = tmp_path / run
        assert (
            main(
                [
                    "train",
                    "--epochs",
                    "3",
                    "--splits",
                    "2",
                    "--quiet",
                    "--out",
                    str(out),
                    "--tensorboard",
                    str(root),
                    "--set",
                    f"lr={0.001 if run == 'a' else 0.002}",
                ]
            )
            == 0
        )
        printed = capsys.readouterr().out
        results.append(json.loads((out / "results.json").read_text()))
        assert f"logged to {root / ('version_0' if run == 'a' else 'version_1')}" in printed
        assert results[-1]["logged_to"] == [str(root / ("version_0" if run == "a" else "version_1"))]
    assert sorted(p.name for p in root.iterdir()) == ["version_0", "version_1"]
    for version, result in enumerate(results):
        events = EventAccumulator(str(root / f"version_{version}"), size_guidance={"tensors": 0}).Reload()
        losses = events.Scalars("loss")
        assert [e.step for e in losses] == [1, 2, 3]  # one curve, no step twice
        assert [e.value for e in losses] == pytest.approx(result["losses"], rel=1e-6)  # stored as float32
        (final,) = events.Scalars("accuracy/mean")
        assert final.step == 3 and final.value == pytest.approx(result["accuracy"]["mean"])
        start = events.PluginTagToContent("hparams")["_hparams_/session_start_info"]
        hparams = plugin_data_pb2.HParamsPluginData.FromString(start).session_start_info.hparams
        assert hparams["lr"].number_value == result["config"]["lr"]
        assert hparams["dataset"].string_value == result["dataset"]
        assert hparams["fanout"].string_value == json.dumps(result["config"]["fanout"])


# --- runs logged whole: --seeds K, a resumed run, a missing folder, the hyperparameters as they ran ---


class FakeBoard:
    """``torch.utils.tensorboard`` as far as gca uses it, without the tensorboard package: each writer's folder,
    purge step, scalars and hyperparameters, in the order the writers were opened."""

    def __init__(self) -> None:
        self.writers = []
        board = self

        class SummaryWriter:
            def __init__(self, log_dir, purge_step=None):
                self.log_dir, self.purge_step, self.scalars, self.hparams = log_dir, purge_step, [], []
                self.file_writer = types.SimpleNamespace(add_summary=self.hparams.append)
                board.writers.append(self)

            def add_scalar(self, tag, value, step):
                self.scalars.append((tag, value, step))

            def flush(self):
                pass

            def close(self):
                pass

        self.module = types.SimpleNamespace(SummaryWriter=SummaryWriter)
        # hparams(params, metrics) → (experiment, session start, session end); the start is what a writer adds
        self.summary = types.SimpleNamespace(hparams=lambda params, metrics: (None, dict(params), None))

    def install(self, monkeypatch) -> FakeBoard:
        monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", self.module)
        monkeypatch.setitem(sys.modules, "torch.utils.tensorboard.summary", self.summary)
        return self

    def steps(self, index, tag):
        return [step for name, _, step in self.writers[index].scalars if name == tag]


def _table(path):
    header, *rows = _rows(path)
    return header, [dict(zip(header, row, strict=True)) for row in rows]


def test_a_resumed_csv_log_keeps_the_earlier_epochs_under_a_header_widened_by_their_evaluation(tmp_path):
    path = tmp_path / "l.csv"
    finished = "epoch,loss,lr,accuracy/mean\n1,4.0,0.001,\n2,3.5,0.002,\n2,,,80.0\n"  # a finished 2-epoch run
    path.write_text(finished)
    logger = CSVLogger(path)
    logger.log({"loss": 3.0, "lr": 0.003}, 3)  # resumed from its checkpoint of epoch 2
    logger.log({"accuracy/mean": 85.0}, 3)
    assert path.read_text() == finished + "3,3.0,0.003,\n3,,,85.0\n"  # the header as it was
    again = CSVLogger(path)
    again.log({"accuracy/mean": 86.0}, 3)  # resumed with no epoch left to train: epoch 3's rows stay
    assert path.read_text() == finished + "3,3.0,0.003,\n3,,,85.0\n3,,,86.0\n"


def test_gca_train_makes_the_csv_logs_folder_and_logs_the_hyperparameters_as_they_ran(tmp_path):
    log = tmp_path / "logs" / "deeper" / "l.csv"  # neither folder exists yet
    assert (
        main(
            [
                "train",
                "--epochs",
                "2",
                "--no-eval",
                "--quiet",
                "--set",
                "lr=0.004",
                "--out",
                str(tmp_path / "run"),
                "--log-csv",
                str(log),
            ]
        )
        == 0
    )
    record = json.loads((tmp_path / "run" / "results.json").read_text())
    params = json.loads((log.parent / "l.hparams.json").read_text())
    assert record["config"]["loss_backend"] == record["config"]["precision"] == "auto"  # as given
    assert record["config"]["warmup_steps"] == -1
    assert f"{params['loss_backend']} {params['precision']}" == record["objective"] == "blocked fp32"  # as they ran
    assert params["warmup_steps"] == record["warmup_updates"] == 4  # ⌈0.004 / 0.001⌉
    assert [float(row[1]) for row in _rows(log)[1:]] == record["losses"]


def test_seeds_log_each_pretraining_then_their_summary(tmp_path, monkeypatch, capsys):
    board = FakeBoard().install(monkeypatch)
    log, root, out = tmp_path / "seeds.csv", tmp_path / "tb", tmp_path / "run"
    assert (
        main(
            [
                "train",
                "--epochs",
                "2",
                "--splits",
                "2",
                "--seeds",
                "3",
                "--quiet",
                "--out",
                str(out),
                "--tensorboard",
                str(root),
                "--log-csv",
                str(log),
            ]
        )
        == 0
    )
    record = json.loads((out / "results.json").read_text())
    summary = record["pretrainings"]
    seeds = summary["seeds"]
    versions = [str(root / f"version_{v}") for v in range(4)]  # the three pretrainings, then their summary
    assert [writer.log_dir for writer in board.writers] == versions
    assert record["logged_to"] == [str(log), *versions]
    assert capsys.readouterr().out.endswith(f"logged to {', '.join(record['logged_to'])}\n")
    for index, (seed, accuracy) in enumerate(zip(seeds, summary["accuracy"], strict=True)):
        (params,) = board.writers[index].hparams  # one HPARAMS row each, with its own seed
        assert params["seed"] == seed and (params["loss_backend"], params["precision"]) == ("blocked", "fp32")
        assert board.steps(index, "loss") == [1, 2] and board.steps(index, "accuracy/mean") == [2]
        assert [v for t, v, _ in board.writers[index].scalars if t == "accuracy/mean"] == [accuracy]
    (params,) = board.writers[3].hparams
    assert params["seeds"] == json.dumps(seeds) and params["seed"] == seeds[0]
    assert {t: (v, s) for t, v, s in board.writers[3].scalars} == {
        "pretrainings/mean": (summary["mean"], 2),
        "pretrainings/std": (summary["std"], 2),
        "pretrainings/count": (3, 2),
        "pretrainings/splits_each": (2, 2),
    }
    # the CSV log: one file, a seed column naming each row's pretraining, the summary last
    header, table = _table(log)
    assert header[:4] == ["epoch", "seed", "loss", "lr"]
    assert [(r["epoch"], r["seed"]) for r in table] == [(e, str(s)) for s in seeds for e in "122"] + [("2", "")]
    assert [float(r["loss"]) for r in table[:2]] == record["losses"]  # the first pretraining: the run's files
    for seed, accuracy in zip(seeds, summary["accuracy"], strict=True):
        (final,) = [r for r in table if r["seed"] == str(seed) and r["loss"] == ""]
        assert float(final["accuracy/mean"]) == accuracy
    assert float(table[-1]["pretrainings/mean"]) == summary["mean"]
    assert float(table[-1]["pretrainings/std"]) == summary["std"] and table[-1]["accuracy/mean"] == ""
    params = json.loads((log.parent / "seeds.hparams.json").read_text())
    assert params["seeds"] == seeds and params["seed"] == seeds[0] and params["precision"] == "fp32"


def _resumable(tmp_path, *extra):
    out, root, log = tmp_path / "run", tmp_path / "tb", tmp_path / "run.csv"
    return (
        out,
        root,
        log,
        [
            "train",
            "--splits",
            "2",
            "--quiet",
            "--checkpoint-every",
            "1",
            "--out",
            str(out),
            "--tensorboard",
            str(root),
            "--log-csv",
            str(log),
            *extra,
        ],
    )


def test_a_run_resumed_to_more_epochs_goes_on_in_its_tensorboard_version_and_csv_log(tmp_path, monkeypatch):
    board = FakeBoard().install(monkeypatch)
    out, root, log, args = _resumable(tmp_path)
    assert main([*args, "--epochs", "2"]) == 0
    header = _rows(log)[0]
    assert "accuracy/mean" in header  # the 2-epoch run's evaluation widened the header
    assert main([*args, "--epochs", "4", "--resume"]) == 0
    record = json.loads((out / "results.json").read_text())
    assert [writer.log_dir for writer in board.writers] == [str(root / "version_0")] * 2  # not a version_1
    assert sorted(p.name for p in root.iterdir()) == ["version_0"] and record["logged_to"][1] == str(root / "version_0")
    assert board.writers[1].purge_step == 3  # from the first update after the checkpoint of epoch 2
    assert board.steps(1, "loss") == [3, 4] and board.steps(1, "accuracy/mean") == [4]
    again, table = _table(log)
    assert again == header  # unchanged
    assert [(r["epoch"], r["loss"] != "") for r in table] == [
        ("1", True),
        ("2", True),
        ("2", False),
        ("3", True),
        ("4", True),
        ("4", False),
    ]
    assert [float(r["loss"]) for r in table if r["loss"]] == record["losses"]
    assert float(table[-1]["accuracy/mean"]) == record["accuracy"]["mean"]


def _stop_after_epoch(monkeypatch, epoch):
    """A stop (SIGTERM, Ctrl-C: a KeyboardInterrupt in gca train) just after ``epoch`` was logged, before its
    checkpoint is written: the log holds an epoch that the resumed run trains again."""
    logged = TensorBoardLogger.log

    def log(self, metrics, step):
        logged(self, metrics, step)
        if "loss" in metrics and step == epoch:
            raise KeyboardInterrupt

    monkeypatch.setattr(TensorBoardLogger, "log", log)


def test_a_stopped_run_resumed_holds_every_epoch_once_in_its_version_and_csv_log(tmp_path, monkeypatch, capsys):
    board = FakeBoard().install(monkeypatch)
    out, root, log, args = _resumable(tmp_path, "--epochs", "4")
    with monkeypatch.context() as stopped:
        _stop_after_epoch(stopped, 3)
        assert main(args) == 130
    assert "checkpoint.in-progress.pt stays" in capsys.readouterr().err
    assert [int(r[0]) for r in _rows(log)[1:]] == [1, 2, 3] and board.steps(0, "loss") == [1, 2, 3]
    assert main([*args, "--resume"]) == 0
    record = json.loads((out / "results.json").read_text())
    assert [writer.log_dir for writer in board.writers] == [str(root / "version_0")] * 2
    assert board.writers[1].purge_step == 3 and board.steps(1, "loss") == [3, 4]  # epoch 3 of the stop: hidden
    header, table = _table(log)
    assert header[:3] == ["epoch", "loss", "lr"] and [r["epoch"] for r in table] == ["1", "2", "3", "4", "4"]
    assert [float(r["loss"]) for r in table[:4]] == record["losses"]


@pytest.mark.skipif(not _has_tensorboard(), reason="tensorboard is not installed")
@pytest.mark.parametrize("checkpointed", [False, True])  # stopped before epoch 3's checkpoint, or just after it
def test_a_stopped_run_resumed_is_one_tensorboard_version_with_every_epoch_once(
    tmp_path, monkeypatch, capsys, checkpointed
):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.plugins.hparams import plugin_data_pb2

    out, root, _, args = _resumable(tmp_path, "--epochs", "4")
    with monkeypatch.context() as stopped:
        (_stop_after_checkpoint if checkpointed else _stop_after_epoch)(stopped, 3)
        assert main(args) == 130
    assert main([*args, "--resume"]) == 0
    record = json.loads((out / "results.json").read_text())
    assert sorted(p.name for p in root.iterdir()) == ["version_0"]
    events = EventAccumulator(str(root / "version_0"), size_guidance={"tensors": 0, "scalars": 0}).Reload()
    losses = events.Scalars("loss")
    assert [e.step for e in losses] == [1, 2, 3, 4]  # epoch 3, logged before the stop and again after: once
    assert [e.value for e in losses] == pytest.approx(record["losses"], rel=1e-6)
    assert [e.step for e in events.Scalars("loss/update")] == [1, 2, 3, 4]
    (final,) = events.Scalars("accuracy/mean")
    assert final.step == 4 and final.value == pytest.approx(record["accuracy"]["mean"])
    start = events.PluginTagToContent("hparams")["_hparams_/session_start_info"]
    hparams = plugin_data_pb2.HParamsPluginData.FromString(start).session_start_info.hparams
    assert (hparams["loss_backend"].string_value, hparams["precision"].string_value) == ("blocked", "fp32")
    assert hparams["warmup_steps"].number_value == record["warmup_updates"]


@pytest.mark.skipif(not _has_tensorboard(), reason="tensorboard is not installed")
def test_seeds_are_a_tensorboard_version_each_and_one_for_their_summary(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    root, out = tmp_path / "tb", tmp_path / "run"
    assert (
        main(
            [
                "train",
                "--epochs",
                "2",
                "--splits",
                "2",
                "--seeds",
                "3",
                "--quiet",
                "--out",
                str(out),
                "--tensorboard",
                str(root),
            ]
        )
        == 0
    )
    summary = json.loads((out / "results.json").read_text())["pretrainings"]
    assert sorted(p.name for p in root.iterdir()) == [f"version_{v}" for v in range(4)]
    for version, accuracy in enumerate(summary["accuracy"]):
        events = EventAccumulator(str(root / f"version_{version}")).Reload()
        assert [e.step for e in events.Scalars("loss")] == [1, 2]
        assert [e.value for e in events.Scalars("accuracy/mean")] == pytest.approx([accuracy])
    events = EventAccumulator(str(root / "version_3")).Reload()
    assert [(e.step, e.value) for e in events.Scalars("pretrainings/mean")] == [(2, pytest.approx(summary["mean"]))]
    assert [e.value for e in events.Scalars("pretrainings/std")] == pytest.approx([summary["std"]])


def test_continue_version_sends_the_next_run_alone_to_that_folder_from_its_step(tmp_path, monkeypatch):
    board = FakeBoard().install(monkeypatch)
    logger = TensorBoardLogger(tmp_path / "tb")
    estimator = GCA(GCAConfig(epochs=2, **SMALL), device="cpu", loggers=[logger])
    estimator.fit(karate_club())
    logger.continue_version(0, 2)
    estimator.fit(karate_club())
    estimator.fit(karate_club())
    assert [(w.log_dir, w.purge_step) for w in board.writers] == [
        (str(tmp_path / "tb" / "version_0"), None),
        (str(tmp_path / "tb" / "version_0"), 2),
        (str(tmp_path / "tb" / "version_1"), None),
    ]
    for version, step in (("a/b", 1), (True, 1), (0, 0), (0, 1.5)):
        with pytest.raises(LoggerError):
            logger.continue_version(version, step)


def _stop_after_checkpoint(monkeypatch, epoch, killed=False):
    """A stop (SIGTERM, Ctrl-C) that lands just after the checkpoint of ``epoch`` was written, before the TensorBoard
    version recorded it (:class:`gca.run.logs.CheckpointLink` hashing the new file): the log holds ``epoch``, the
    in-progress checkpoint is at ``epoch``. ``killed``: the run never records it (as a SIGKILL there)."""
    import gca.run.logs

    hashed = gca.run.logs.hash_files
    stopped = []

    def hash_files(files, *args, **kwargs):
        if (killed or not stopped) and torch.load(files[0], weights_only=True)["epoch"] == epoch:
            stopped.append(epoch)
            raise KeyboardInterrupt
        return hashed(files, *args, **kwargs)

    monkeypatch.setattr(gca.run.logs, "hash_files", hash_files)


@pytest.mark.parametrize("per_epoch", [1, 5])  # full-batch; mini-batches of 8 of Karate's 34 anchors
def test_a_run_stopped_just_after_a_checkpoint_resumes_in_its_version_whose_record_names_that_epoch(
    tmp_path, monkeypatch, per_epoch
):
    """One run is one TensorBoard version wherever the stop lands: after the checkpoint of epoch 2 was written and
    before the version recorded it, the version's record names that checkpoint once the run has stopped, and the
    resumed run goes on in it from the update after it."""
    from gca.run.logs import MARKER

    board = FakeBoard().install(monkeypatch)
    batches = ["--set", "batch_size=8"] if per_epoch > 1 else []
    out, root, log, args = _resumable(tmp_path, "--epochs", "4", *batches)
    with monkeypatch.context() as stopped:
        _stop_after_checkpoint(stopped, 2)
        assert main(args) == 130
    marker = json.loads((root / "version_0" / MARKER).read_text())
    assert (marker["epoch"], marker["updates"]) == (2, 2 * per_epoch)  # the checkpoint the run reached
    assert torch.load(out / "checkpoint.in-progress.pt", weights_only=True)["epoch"] == 2
    assert main([*args, "--resume"]) == 0
    record = json.loads((out / "results.json").read_text())
    assert sorted(p.name for p in root.iterdir()) == ["version_0"]
    assert [(w.log_dir, w.purge_step) for w in board.writers] == [
        (str(root / "version_0"), None),
        (str(root / "version_0"), 2 * per_epoch + 1),
    ]
    assert board.steps(0, "loss") == [1, 2] and board.steps(1, "loss") == [3, 4]
    assert board.steps(1, "loss/update") == list(range(2 * per_epoch + 1, 4 * per_epoch + 1))
    assert len(board.writers[1].hparams) == 1 and record["logged_to"][1] == str(root / "version_0")
    assert json.loads((root / "version_0" / MARKER).read_text())["epoch"] == 4


def test_a_run_killed_before_recording_its_checkpoint_resumes_in_its_version_and_another_runs_does_not(
    tmp_path, monkeypatch
):
    """The version records the checkpoint of epoch 1 and never that of epoch 2 (the run was killed in between): the
    checkpoint of epoch 2, whose losses begin with those the record names, is the same run's, and goes on in its
    version from the update after it. Another run's checkpoint in the same --out (another seed, not logged to
    TensorBoard) is a new version."""
    from gca.run.logs import MARKER

    board = FakeBoard().install(monkeypatch)
    out, root, log, args = _resumable(tmp_path, "--epochs", "4")
    with monkeypatch.context() as stopped:
        _stop_after_checkpoint(stopped, 2, killed=True)
        assert main(args) == 130
    assert json.loads((root / "version_0" / MARKER).read_text())["epoch"] == 1  # the checkpoint of epoch 2 unrecorded
    assert main([*args, "--resume"]) == 0
    assert [(w.log_dir, w.purge_step) for w in board.writers] == [
        (str(root / "version_0"), None),
        (str(root / "version_0"), 3),
    ]
    assert board.steps(1, "loss") == [3, 4] and sorted(p.name for p in root.iterdir()) == ["version_0"]
    # another seed's finished run in the same --out, not logged to TensorBoard, resumed to more epochs
    other = [a for a in args if a not in ("--tensorboard", str(root), "--epochs", "4")]
    assert main([*other, "--seed", "1", "--epochs", "2"]) == 0
    assert main([*args, "--seed", "1", "--resume"]) == 0
    assert [(w.log_dir, w.purge_step) for w in board.writers[2:]] == [(str(root / "version_1"), None)]
    assert board.steps(2, "loss") == [3, 4]
