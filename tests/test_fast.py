"""The fast path (issue 33): exact or mini-batch training chosen from the graph's size and the device, the user's own
settings kept, and what was chosen said in the header, results.json and gca reproduce's tables."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

import gca.train.fast as fast
from gca import GCA
from gca.cli import main
from gca.config import build_config, mini_batch_epochs
from gca.datasets import load_dataset
from gca.reproduce import Mode, Planner, Reproduction
from gca.run.job import Job
from gca.train.fast import CPU_MIN_NODES, CUDA_MAX_EXACT_NODES, FAST_BATCH_SIZE, FastChoice, fast_choice


def test_the_rule_reads_the_node_count_and_the_device_only():
    assert not fast_choice(CPU_MIN_NODES - 1, "cpu").mini_batch  # Cora's size on a CPU: exact
    at = fast_choice(CPU_MIN_NODES, "cpu")
    assert at.mini_batch and at.batch_size == FAST_BATCH_SIZE == 1024 and at.fanout == (10,)
    assert at.layer() == {"batch_size": 1024, "fanout": (10,)}
    assert fast_choice(10**8, "cpu").layer() == at.layer()
    assert fast_choice(CPU_MIN_NODES, "cuda").layer() == {"batch_size": 0}  # on CUDA an exact update is cheaper
    assert not fast_choice(CUDA_MAX_EXACT_NODES, "cuda:0").mini_batch
    assert fast_choice(CUDA_MAX_EXACT_NODES + 1, "cuda").mini_batch
    assert fast_choice(7650, "cpu").reason.startswith("7,650 nodes on the CPU")
    with pytest.raises(ValueError, match="non-negative"):
        fast_choice(-1)


def test_a_mini_batch_choice_keeps_the_settings_number_of_updates_and_the_users_keys():
    cfg = build_config("Amazon-Photo")  # Table 5: 2,000 full-graph epochs
    choice = fast_choice(7650, "cpu")
    applied = choice.apply(cfg, 7650)
    assert (applied.batch_size, applied.fanout) == (1024, (10,))
    assert applied.epochs == mini_batch_epochs(2000, 7650, 1024)[0] == 250  # 250 epochs of 8 updates
    assert applied.replace(batch_size=0, fanout=cfg.fanout, epochs=2000) == cfg  # nothing else changed
    kept = choice.keeping(["fanout", "lr"])
    assert kept.kept == ("fanout",) and kept.layer() == {"batch_size": 1024}
    assert "your fanout kept" in kept.describe()
    exact = fast_choice(2708, "cpu")
    assert exact.apply(cfg, 2708) == cfg.replace(batch_size=0)
    assert exact.record() == {"training": "exact", "batch_size": 0, "fanout": [], "reason": exact.reason,
                              "chosen": {"training": "exact", "batch_size": 0, "fanout": []},
                              "kept_user_keys": []}  # fmt: skip
    assert fast_choice(7650, "mps").reason.startswith("7,650 nodes on mps")


@pytest.fixture
def small_thresholds(monkeypatch):
    """Karate (34 nodes) sent to mini-batches of 8: the wiring, without a graph of thousands of nodes."""
    monkeypatch.setattr(fast, "FAST_BATCH_SIZE", 8)
    monkeypatch.setattr(fast, "CPU_MIN_NODES", 32)


def test_a_job_takes_the_choice_between_the_datasets_setting_and_the_users(tmp_path, small_thresholds):
    karate = load_dataset("Karate")  # shipped setting: 100 full-graph epochs
    job = Job.open(karate, None, {}, fast=True, device="cpu")
    assert (job.config.batch_size, job.config.fanout) == (8, (10,))
    assert job.config.epochs == 20 and job.schedule["full_graph_epochs"] == 100  # ⌈34 / 8⌉ = 5 updates an epoch
    assert job.record()["fast_path"]["training"] == "mini-batch"
    mine = Job.open(karate, None, {"batch_size": 0}, fast=True, device="cpu")
    assert mine.config.batch_size == 0 and mine.fast.kept == ("batch_size",)  # the user's value wins …
    assert mine.record()["fast_path"] | {"reason": ""} == {  # … and results.json says what trained
        "training": "exact", "batch_size": 0, "fanout": [], "reason": "", "kept_user_keys": ["batch_size"],
        "chosen": {"training": "mini-batch", "batch_size": 8, "fanout": [10, 10]}}  # fmt: skip
    mine = Job.open(karate, None, {"batch_size": 4}, fast=True, device="cpu")
    assert mine.config.batch_size == 4 and mine.fast.kept == ("batch_size",)
    assert mine.fast.describe().startswith("--fast kept your batch_size (it would have chosen mini-batches")
    own = tmp_path / "mine.toml"
    own.write_text("fanout = [3, 3]\n")
    assert Job.open(karate, str(own), fast=True, device="cpu").config.fanout == (3, 3)
    assert Job.open(karate, None, {"epochs": 7}, fast=True, device="cpu").config.epochs == 7  # obeyed
    assert Job.open(karate, None, {}, fast=True, device="cuda").config.batch_size == 0  # no CUDA needed to decide
    assert Job.open(karate).fast is None and "fast_path" not in Job.open(karate).record()
    job.prepare(GCA(job.config, device="cpu"))
    assert "--fast chose mini-batches: 34 nodes on the CPU, at least 32" in job.summary(GCA(job.config))


def test_gca_train_fast_says_what_it_chose_in_the_header_and_results_json(tmp_path, capsys):
    assert main(["train", "--fast", "--epochs", "1", "--no-eval", "--quiet", "--out", str(tmp_path / "a")]) == 0
    out = capsys.readouterr().out
    assert "--fast chose exact training (the whole graph at every update): 34 nodes on the CPU" in out
    record = json.loads((tmp_path / "a" / "results.json").read_text())
    assert record["fast_path"]["training"] == "exact" and record["config"]["batch_size"] == 0


def test_gca_train_fast_trains_in_mini_batches_above_the_threshold(tmp_path, capsys, small_thresholds):
    assert main(["train", "--fast", "--epochs", "2", "--no-eval", "--quiet", "--out", str(tmp_path / "b")]) == 0
    record = json.loads((tmp_path / "b" / "results.json").read_text())
    assert record["fast_path"] | {"reason": ""} == {"training": "mini-batch", "batch_size": 8, "fanout": [10, 10],
                                                   "chosen": {"training": "mini-batch", "batch_size": 8,
                                                              "fanout": [10, 10]},  # per layer, as trained
                                                   "reason": "", "kept_user_keys": []}  # fmt: skip
    assert record["config"]["batch_size"] == 8 and len(record["losses"]) == 2  # --epochs is obeyed
    assert "mini-batches of 8 anchors, fan-out 10,10; --fast chose mini-batches: 34 nodes" in capsys.readouterr().out


TINY = Mode(runs=1, max_epochs=5, grid=(0.1, 0.5), grid_runs=1, grid_max_epochs=5, quick=True)


def test_reproduce_fast_plans_mini_batch_runs_and_shares_exact_ones(small_thresholds):
    choice = fast_choice(34, "cpu")
    plain = Planner(TINY, baselines=()).table3("Karate")
    planned = Planner(TINY, baselines=(), training=lambda name: (choice, 34)).table3("Karate")
    init, plain_init = planned[0].runs[0], plain[0].runs[0]
    assert init == plain_init  # Random-Init trains nothing: the same run with or without --fast
    run = planned[1].runs[0]
    config = dict(run.config)
    assert (config["batch_size"], tuple(config["fanout"])) == (8, (10,))
    assert config["epochs"] == 1 and dict(run.settings)["epochs"] == 5  # ⌈5 / 5 updates an epoch⌉
    assert dict(run.settings)["training"] == "mini-batch B=8, fan-out 10"
    exact = FastChoice(0, (), "test")
    assert Planner(TINY, baselines=(), training=lambda name: (exact, 34)).table3("Karate") == plain


def test_reproduce_fast_tables_say_which_training_made_each_row(tmp_path, small_thresholds):
    repro = Reproduction(tmp_path, ["Karate"], progress=False, plots=False, device="cpu", log=lambda m: None,
                         mode=TINY, baselines=("raw",), fast=True)  # fmt: skip
    repro.run("table3")
    table = (tmp_path / "table3.md").read_text()
    said = ("Karate: GCA trained in mini-batches of B = 8 anchors, fan-out 10,10: 1 epoch of 5 = 5 updates (the "
            "setting's 5 epochs of the whole graph) on cpu")
    assert said in table
    rows = list(csv.DictReader((tmp_path / "table3.csv").open()))
    training = {row["method"]: row["training"] for row in rows}
    assert training == {"Raw features": "", "Random-Init": "untrained", "GCA-DE": "mini-batch B=8, fan-out 10",
                        "GCA-PR": "mini-batch B=8, fan-out 10", "GCA-EV": "mini-batch B=8, fan-out 10"}  # fmt: skip
    assert all(np.isfinite(float(row["mean"])) for row in rows)
    plain = tmp_path / "plain"
    full = Mode(runs=1, max_epochs=5, grid=(0.1,), grid_runs=1, grid_max_epochs=5, quick=False)  # quick is --fast
    Reproduction(plain, ["Karate"], progress=False, plots=False, device="cpu", log=lambda m: None, mode=full,
                 baselines=(), fast=False).run("table3")  # fmt: skip
    assert "--fast" not in (plain / "table3.md").read_text()
    assert {row["training"] for row in csv.DictReader((plain / "table3.csv").open())} == {"exact", "untrained"}


def test_link_prediction_records_the_fast_paths_choice_as_the_other_tasks_do(tmp_path, small_thresholds):
    args = ["train", "--fast", "--task", "link", "--splits", "1", "--epochs", "1", "--quiet", "--out", str(tmp_path)]
    assert main(args) == 0
    record = json.loads((tmp_path / "results.json").read_text())
    assert record["fast_path"]["training"] == "mini-batch" and record["config"]["batch_size"] == 8
