"""The fast path (issue 33): exact or mini-batch training chosen from the graph's size and the device, the user's own
settings kept, and what was chosen said in the header, results.json and gca reproduce's tables."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
import torch

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
    assert exact.record() == {
        "training": "exact",
        "batch_size": 0,
        "fanout": [],
        "reason": exact.reason,
        "chosen": {"training": "exact", "batch_size": 0, "fanout": []},
        "kept_user_keys": [],
        "chosen_by": "--fast",
    }
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
        "training": "exact",
        "batch_size": 0,
        "fanout": [],
        "reason": "",
        "kept_user_keys": ["batch_size"],
        "chosen": {"training": "mini-batch", "batch_size": 8, "fanout": [10, 10]},
        "chosen_by": "--fast",
    }
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
    assert record["fast_path"] | {"reason": ""} == {
        "training": "mini-batch",
        "batch_size": 8,
        "fanout": [10, 10],
        "chosen": {"training": "mini-batch", "batch_size": 8, "fanout": [10, 10]},  # per layer, as trained
        "reason": "",
        "kept_user_keys": [],
        "chosen_by": "--fast",
    }
    assert record["config"]["batch_size"] == 8 and len(record["losses"]) == 2  # --epochs is obeyed
    assert (
        "mini-batches of 8 anchors, fan-out 10,10; 2 epochs of 5 updates (--epochs counts mini-batch epochs, each "
        "one pass over the nodes); --fast chose mini-batches: 34 nodes"
    ) in capsys.readouterr().out


TINY = Mode(runs=1, max_epochs=5, grid=(0.1, 0.5), grid_runs=1, grid_max_epochs=5, quick=True)


def test_reproduce_fast_plans_mini_batch_runs_and_shares_exact_ones(small_thresholds):
    choice = fast_choice(34, "cpu")
    plain = Planner(TINY, baselines=()).table3("Karate")
    planned = Planner(TINY, baselines=(), training=lambda name: (choice, 34)).table3("Karate")
    init, plain_init = planned[0].runs[0], plain[0].runs[0]
    assert init == plain_init  # Random-Init trains nothing: the same run with or without --fast
    run = planned[2].runs[0]  # after Random-Init under both probes: GCA-DE
    config = dict(run.config)
    assert (config["batch_size"], tuple(config["fanout"])) == (8, (10,))
    assert config["epochs"] == 1 and dict(run.settings)["epochs"] == 5  # ⌈5 / 5 updates an epoch⌉
    assert dict(run.settings)["training"] == "mini-batch B=8, fan-out 10"
    exact = FastChoice(0, (), "test")
    assert Planner(TINY, baselines=(), training=lambda name: (exact, 34)).table3("Karate") == plain


def test_reproduce_fast_tables_say_which_training_made_each_row(tmp_path, small_thresholds):
    repro = Reproduction(
        tmp_path,
        ["Karate"],
        progress=False,
        plots=False,
        device="cpu",
        log=lambda m: None,
        mode=TINY,
        baselines=("raw",),
        fast=True,
    )
    repro.run("table3")
    table = (tmp_path / "table3.md").read_text()
    said = (
        "Karate: GCA trained in mini-batches of B = 8 anchors, fan-out 10,10: 1 epoch of 5 = 5 updates (the "
        "setting's 5 epochs of the whole graph) on cpu"
    )
    assert said in table
    rows = list(csv.DictReader((tmp_path / "table3.csv").open()))
    training = {row["method"]: row["training"] for row in rows}
    # the rows trained in mini-batches say so in their names, and the fan-out of every layer (two here)
    both = "mini-batch B=8, fan-out 10,10"
    assert training == {
        "Raw features": "",
        "Random-Init": "untrained",
        "Random-Init (sklearn probe)": "untrained",
        "GCA-DE (mini-batch)": both,
        "GCA-PR (mini-batch)": both,
        "GCA-EV (mini-batch)": both,
    }
    assert all(np.isfinite(float(row["mean"])) for row in rows)
    plain = tmp_path / "plain"
    full = Mode(runs=1, max_epochs=5, grid=(0.1,), grid_runs=1, grid_max_epochs=5, quick=False)  # quick is --fast
    Reproduction(
        plain,
        ["Karate"],
        progress=False,
        plots=False,
        device="cpu",
        log=lambda m: None,
        mode=full,
        baselines=(),
        fast=False,
    ).run("table3")
    assert "--fast" not in (plain / "table3.md").read_text()
    assert {row["training"] for row in csv.DictReader((plain / "table3.csv").open())} == {"exact", "untrained"}


def test_link_prediction_records_the_fast_paths_choice_as_the_other_tasks_do(tmp_path, small_thresholds):
    args = ["train", "--fast", "--task", "link", "--splits", "1", "--epochs", "1", "--quiet", "--out", str(tmp_path)]
    assert main(args) == 0
    record = json.loads((tmp_path / "results.json").read_text())
    assert record["fast_path"]["training"] == "mini-batch" and record["config"]["batch_size"] == 8


# gca train's default on a CPU (issue 43): mini-batches where the exact schedule is estimated over the bound


@pytest.fixture
def exact_estimate(monkeypatch):
    """An exact update estimated at ``seconds`` whatever the graph (the cost model's answer, set by the test)."""

    def estimate(seconds: float) -> None:
        monkeypatch.setattr(fast, "exact_update_seconds", lambda *args: seconds)

    return estimate


def test_the_default_estimates_the_exact_schedule_from_the_graph_and_the_setting():
    from gca.train.fast import EXACT_BOUND_SECONDS, default_choice, exact_update_seconds

    x = torch.zeros(40_000, 100)
    x[:, :10] = 1.0
    users = build_config(None, None, {"epochs": 500})  # 40,000 nodes, 500 epochs of the default widths
    choice = default_choice(40_000, 800_000, x, users, "cpu")
    assert choice.mini_batch and choice.by == "default" and choice.exact_seconds > EXACT_BOUND_SECONDS
    assert choice.layer() == {"batch_size": FAST_BATCH_SIZE, "fanout": (10,)}
    assert choice.describe().startswith(
        "mini-batches by default: the paper's exact training (500 updates of all 40,000 nodes) is estimated at about "
    )
    assert "(--exact keeps the paper's full-graph training)" in choice.describe()
    small = default_choice(2_708, 10_556, torch.ones(2_708, 16), build_config("Cora"), "cpu")  # Cora's size
    assert not small.mini_batch and small.exact_seconds < EXACT_BOUND_SECONDS
    assert default_choice(40_000, 800_000, x, users, "cuda") is None  # a GPU keeps the configuration
    assert default_choice(40_000, 800_000, x, users.replace(epochs=20), "cpu").batch_size == 0  # a short run
    # four processes share each exact update
    per_process = default_choice(40_000, 800_000, x, users, "cpu", world_size=4).exact_seconds
    assert per_process == pytest.approx(choice.exact_seconds / 4)
    # the estimate grows with the graph and the width
    assert exact_update_seconds(20_000, 0, 100, None, users) > exact_update_seconds(10_000, 0, 100, None, users)
    assert exact_update_seconds(10_000, 0, 100, None, users.replace(hidden=256)) > exact_update_seconds(
        10_000, 0, 100, None, users
    )


def test_one_function_chooses_for_every_training_and_each_case_is_its_rule():
    from torch_geometric.data import Data

    from gca.train.fast import choose_training, default_choice

    x = torch.zeros(40_000, 100)
    x[:, :10] = 1.0
    data = Data(x=x, edge_index=torch.zeros(2, 800_000, dtype=torch.long), num_nodes=40_000)
    users = build_config(None, None, {"epochs": 500})
    for device in ("cpu", "cuda", "mps"):
        assert choose_training("fast", data, device) == fast_choice(40_000, device)
        assert choose_training("auto", data, device, users) == default_choice(40_000, 800_000, x, users, device)
        assert choose_training("exact", data, device, users) is None
        assert choose_training("config", data, device, users) is None
    assert choose_training("auto", data, "cpu", users, 4) == default_choice(40_000, 800_000, x, users, "cpu", 4)
    assert choose_training("auto", Data(x=x[:50], num_nodes=50), "cpu", users).batch_size == 0  # no edges at all
    with pytest.raises(ValueError, match="pass config"):
        choose_training("auto", data, "cpu")
    with pytest.raises(ValueError, match="training must be"):
        choose_training("Fast", data, "cpu", users)  # not silently the configuration's


def test_the_default_estimates_the_runs_own_epochs_as_the_exact_schedule_of_those_epochs():
    from gca.train.fast import exact_schedule_seconds

    karate = load_dataset("Karate")
    edges = int(karate.data.edge_index.shape[1])
    for world in (1, 2):
        setting = Job.open(karate, None, {}, world_size=world, training="auto")
        assert setting.exact_seconds == pytest.approx(setting.fast.exact_seconds)  # the setting's own epochs
        own = Job.open(karate, None, {"epochs": 7}, world_size=world, training="auto")
        expected = exact_schedule_seconds(karate.data.num_nodes, edges, karate.data.x, own.config, world)
        assert own.config.epochs == 7 and own.exact_seconds == pytest.approx(expected, rel=1e-12)
        assert own.fast.exact_seconds == pytest.approx(setting.fast.exact_seconds)  # the choice: the setting's


def test_gca_train_trains_in_mini_batches_by_default_where_exact_would_take_too_long(
    tmp_path, capsys, small_thresholds, exact_estimate
):
    exact_estimate(100.0)  # Karate's 100 epochs × 100 s: 2.8 h
    args = ["train", "--no-eval", "--quiet", "--set", "warmup_steps=0"]
    assert main([*args, "--out", str(tmp_path / "a")]) == 0
    out = capsys.readouterr().out
    assert (
        "mini-batches of 8 anchors, fan-out 10,10; 20 epochs of 5 updates keep the full-graph setting's 100 updates"
    ) in out
    assert (
        "mini-batches by default: the paper's exact training (100 updates of all 34 nodes) is estimated at about "
        "2.8 h on 2 CPU cores, over 1 h (--exact keeps the paper's full-graph training)"
    ) in out
    record = json.loads((tmp_path / "a" / "results.json").read_text())["fast_path"]
    assert record["training"] == "mini-batch" and record["chosen_by"] == "default"
    assert record["exact_estimate_seconds"] == 10_000.0
    # --exact keeps the paper's training, and says nothing of the estimate
    assert main([*args, "--exact", "--out", str(tmp_path / "b")]) == 0
    out = capsys.readouterr().out
    assert "by default" not in out and "; exact training (the whole graph at every update)" in out
    record = json.loads((tmp_path / "b" / "results.json").read_text())
    assert record["config"]["batch_size"] == 0 and "fast_path" not in record
    # a batch_size of the user's makes no choice; a fanout of theirs is kept
    assert main([*args, "--set", "batch_size=0", "--out", str(tmp_path / "c")]) == 0
    record = json.loads((tmp_path / "c" / "results.json").read_text())
    assert record["config"]["batch_size"] == 0 and "fast_path" not in record
    assert main([*args, "--set", "fanout=3", "--out", str(tmp_path / "d")]) == 0
    record = json.loads((tmp_path / "d" / "results.json").read_text())
    assert record["config"]["fanout"] == [3] and record["fast_path"]["kept_user_keys"] == ["fanout"]
    # within the bound the default keeps exact training, says so in the header, and results.json says why
    capsys.readouterr()
    exact_estimate(1.0)
    assert main([*args, "--out", str(tmp_path / "e")]) == 0
    assert "exact training (the whole graph at every update) by default: " in capsys.readouterr().out
    record = json.loads((tmp_path / "e" / "results.json").read_text())
    assert record["config"]["batch_size"] == 0 and record["fast_path"]["chosen_by"] == "default"
    assert record["fast_path"]["training"] == "exact" and record["fast_path"]["exact_estimate_seconds"] == 100.0


def test_fast_and_exact_together_and_exact_with_a_batch_size_are_refused_in_one_line(tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["train", "--fast", "--exact", "--out", str(tmp_path / "a")])
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert stop.value.code == 2
    assert err == ["gca: error: argument --exact: not allowed with argument --fast (see gca train --help)"]
    assert main(["train", "--exact", "--set", "batch_size=8", "--quiet", "--out", str(tmp_path / "b")]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert err == [
        "gca: error: --exact trains on the whole graph at every update, and batch_size=8 asks for "
        "mini-batches; leave out one of them"
    ]


def test_the_python_api_and_gca_reproduce_keep_their_configuration(small_thresholds, exact_estimate):
    exact_estimate(1e6)
    karate = load_dataset("Karate")
    job = Job.open(karate)  # a script's job: the configuration as it is
    assert job.config.batch_size == 0 and job.fast is None
    assert Job.open(karate, training="auto").config.batch_size == 8  # what gca train asks for
    assert Job.open(karate, training="exact").config.batch_size == 0
    with pytest.raises(ValueError, match="training must be one of"):
        Job.open(karate, training="quick")
    runs = [run for cell in Planner(TINY, baselines=()).table3("Karate") for run in cell.runs]
    assert runs and all(dict(run.config)["batch_size"] == 0 for run in runs)  # gca reproduce: its own defaults


def test_an_estimate_that_rounds_to_nothing_is_said_to_be_under_a_second():
    from gca.train import fast

    assert fast._estimate(0.2) == "under 1 s" and fast._estimate(40.0) == "about 40 s"
    assert fast._estimate(2 * 3600) == "about 2 h"
