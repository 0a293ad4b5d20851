"""``gca train`` asks for its run in one :class:`gca.run.train.TrainRequest`: the CLI parses, builds the request,
calls :func:`gca.run.train.train` and prints; a script makes the same run without argparse."""

from __future__ import annotations

import json

import pytest

from gca.cli.dispatch import build_parser
from gca.cli.train import run, train_request
from gca.run.inputs import GraphRequest
from gca.run.train import TrainRequest, train


def test_the_command_leaves_its_arguments_as_parsed(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("GCA_CACHE_DIR", str(tmp_path / "cache"))
    args = build_parser().parse_args(["train", "--epochs", "2", "--splits", "1", "--quiet", "--out", str(tmp_path)])
    parsed = dict(vars(args))
    assert run(args) == 0
    assert vars(args) == parsed
    assert capsys.readouterr().out.startswith("Karate: 34 nodes")


def test_the_request_holds_what_the_arguments_ask_for():
    args = build_parser().parse_args(["train", "--task", "cluster", "--exact", "--set", "tau=0.4", "--epochs", "3"])
    request = train_request(args)
    assert (request.task, request.training, request.splits, request.splits_given) == ("cluster", "exact", 10, False)
    assert request.overrides == {"tau": "0.4", "epochs": 3}
    assert request.graph == GraphRequest(feature_layout="auto")


def test_a_script_trains_from_a_request_without_argparse(tmp_path, monkeypatch, capsys):
    from gca.outputs.folder import RunOutputs

    monkeypatch.setenv("GCA_CACHE_DIR", str(tmp_path / "cache"))
    request = TrainRequest(GraphRequest(dataset="Karate"), overrides={"epochs": 2}, splits=1, out=str(tmp_path / "r"))
    request.check()
    outputs = RunOutputs(request.out, progress=False)
    try:
        outcome = train(request, outputs)
    finally:
        outputs.release()
    assert outcome is not None and outcome.centrality == "degree" and outcome.accuracy is not None
    record = json.loads((tmp_path / "r" / "results.json").read_text())
    assert record["evaluation_split"] == outcome.record["evaluation_split"]
    assert {p.name for p in outcome.written} >= {"embeddings.npy", "model.pt", "results.json"}


@pytest.mark.parametrize("training", ["auto", "config"])
def test_a_job_builds_its_configuration_once(training, monkeypatch):
    """The default choice reads the configuration Job.open built; a choice that changes nothing builds no other."""
    import gca.run.job
    from gca.datasets import load_dataset

    built = []
    original = gca.run.job.build_config
    monkeypatch.setattr(gca.run.job, "build_config", lambda *a, **k: built.append(a) or original(*a, **k))
    job = gca.run.job.Job.open(load_dataset("Karate"), None, {"tau": 0.4}, training=training)
    assert len(built) == 1 and job.config.tau == 0.4
