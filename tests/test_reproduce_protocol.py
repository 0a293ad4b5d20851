"""gca reproduce as a researcher reads it: the paper's protocol by default, a quick mode that keeps every GCA row's
updates, Random-Init beside every row with what training adds, notes made from what ran; and the authors' evaluator
and seeds on every split (issue 39)."""

from __future__ import annotations

import csv
import json
import math

import numpy as np
import pytest
import torch

from gca.cli import main
from gca.config import build_config
from gca.evaluate.probe import adam_probe, initial_weights
from gca.evaluate.splits import EvaluationError, SplitSetting, random_splits
from gca.reproduce import Mode, Planner, Reproduction, reproduce, write_table
from gca.reproduce.plan import QUICK_SPLITS
from gca.seeds import run_seeds
from gca.train.fast import fast_choice


def _run(tmp_path, mode, task="table3", baselines=("raw",), **kwargs):
    repro = Reproduction(
        tmp_path,
        ["Karate"],
        progress=False,
        plots=False,
        device="cpu",
        log=lambda m: None,
        mode=mode,
        baselines=baselines,
        **kwargs,
    )
    reproduce(task, repro)
    return repro


def _records(tmp_path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((tmp_path / "runs").glob("*.json"))]


# 1. The paper's protocol where the paper is compared


def test_gca_reproduce_judges_under_the_authors_protocol_by_default(tmp_path):
    out = tmp_path / "r"
    args = [
        "reproduce",
        "table3",
        "--dataset",
        "Karate",
        "--runs",
        "1",
        "--baselines",
        "raw",
        "--quiet",
        "--no-plots",
        "--device",
        "cpu",
        "--out",
        str(out),
    ]
    assert main(args) == 0
    records = _records(out)
    assert records and all(r["accuracy"]["protocol"] == "authors" for r in records if r["method"] == "gca")
    assert all(r["settings"]["protocol"] == "authors" for r in records)
    table = (out / "table3.md").read_text()
    assert table.startswith("# Table 3 — node classification accuracy (%) (authors protocol)")
    assert "Judged under the authors' protocol" in table


def test_under_the_sklearn_protocol_the_papers_column_is_labelled_and_never_compared(tmp_path):
    far = {"status": "ok", "mean": 50.0, "std": 0.1, "n": 20, "runs": 20, "seconds": 1.0}
    rows = [("GCA-DE", ["X, A"], {"Amazon-Photo": far})]
    paper = {"GCA-DE": {"Amazon-Photo": (92.49, 0.09)}}
    compared = write_table(tmp_path / "a", "T", rows, ["Method", "Data"], ["Amazon-Photo"], paper, [], True)
    assert "50.00 ± 0.10 ⚠" in compared and "Amazon-Photo (paper)" in compared
    other = write_table(tmp_path / "b", "T", rows, ["Method", "Data"], ["Amazon-Photo"], paper, [], False)
    assert "⚠" not in other and "Amazon-Photo (paper, authors' protocol: not comparable)" in other
    row = next(csv.DictReader((tmp_path / "b.csv").open()))
    assert row["compared"] == "false" and row["differs_by_more_than_2_std"] == "false"


# 2. A quick mode that means something


def test_quick_mode_keeps_every_gca_rows_updates_and_saves_on_trainings_and_baselines():
    quick = Mode.create(True)
    assert (quick.runs, quick.splits_per_run, quick.max_epochs, quick.protocol) == (1, QUICK_SPLITS, None, "authors")
    photo = fast_choice(7650, "cpu")  # Amazon-Photo's node count: mini-batches on a CPU
    planner = Planner(quick, (), training=lambda name: (photo, 7650))
    for cell in planner.table3("Amazon-Photo")[2:]:  # after Random-Init (both probes): GCA-DE, -PR, -EV
        run = cell.runs[0]
        config = dict(run.config)
        assert dict(run.settings)["epochs"] == 2000 == build_config("Amazon-Photo").epochs  # Table 5's
        assert config["batch_size"] == 1024 and config["epochs"] * math.ceil(7650 / 1024) >= 2000  # its updates
    repro = Reproduction("unused", ["Karate"], quick=True, progress=False, plots=False, device="cpu")
    assert repro.fast and repro.baselines == ("raw", "propagated-1", "propagated-2", "propagated-3", "gmi", "mvgrl")
    assert Reproduction("unused", ["Karate"], quick=True, baselines=["dgi"], progress=False).baselines == ("dgi",)


def test_a_shortened_row_is_marked_in_the_row_and_not_compared(tmp_path):
    capped = Mode(runs=1, max_epochs=5, grid=(0.1,), grid_runs=1, grid_max_epochs=5, quick=True)
    _run(tmp_path, capped, baselines=("raw", "dgi"))
    rows = {row["method"]: row for row in csv.DictReader((tmp_path / "table3.csv").open())}
    assert rows["GCA-DE"]["shortened"] == "5 of Table 5's 100 epochs" and rows["GCA-DE"]["compared"] == "false"
    assert rows["DGI"]["shortened"] == "quick mode's shortened schedule"
    assert rows["Raw features"]["shortened"] == "" and rows["Random-Init"]["shortened"] == ""
    table = (tmp_path / "table3.md").read_text()
    line = next(line for line in table.splitlines() if line.startswith("| GCA-DE |"))
    assert "‡" in line and "‡: trained on a shortened schedule" in table


def test_a_baseline_that_early_stopping_ended_before_quick_modes_cap_is_not_shortened(tmp_path, monkeypatch):
    """Stopped early before the cap, the quick run is the full schedule's run epoch for epoch: no ‡; a run that
    reached the cap is shortened."""
    from gca.evaluate.classification import evaluate_embeddings
    from gca.reproduce import baselines
    from gca.reproduce.training import TrainingHistory

    def trained(stopped: bool):
        def run(data, splits, seed, quick, device, protocol="sklearn", progress=False):
            z = torch.rand(data.num_nodes, 4, generator=torch.Generator().manual_seed(0))
            history = TrainingHistory([1.0] * 40, 100, 20, 20, stopped_early=stopped)
            return baselines.BaselineResult(evaluate_embeddings(z, data.y, splits, protocol), history)

        return run

    monkeypatch.setitem(baselines.BASELINES, "dgi", (*baselines.BASELINES["dgi"][:2], trained(True)))
    monkeypatch.setitem(baselines.BASELINES, "gmi", (*baselines.BASELINES["gmi"][:2], trained(False)))
    capped = Mode(runs=1, max_epochs=5, grid=(0.1,), grid_runs=1, grid_max_epochs=5, quick=True)
    _run(tmp_path, capped, baselines=("dgi", "gmi"))
    rows = {row["method"]: row for row in csv.DictReader((tmp_path / "table3.csv").open())}
    assert rows["DGI"]["shortened"] == "" and rows["GMI"]["shortened"] == "quick mode's shortened schedule"
    assert "DGI on Karate: 40 of at most 100 epochs (early stopping ended it)" in (tmp_path / "table3.md").read_text()


# 3. What training adds, beside every row; notes made from what ran


def test_random_init_stands_in_both_tables_and_the_gain_is_the_paired_difference(tmp_path):
    two = Mode(runs=2, max_epochs=20, grid=(0.1,), grid_runs=1, grid_max_epochs=5, quick=False, protocol="sklearn")
    _run(tmp_path, two, task="table4")
    table = (tmp_path / "table4.md").read_text()
    assert "| Random-Init | untrained | untrained |" in table
    by_key = {}
    for record in _records(tmp_path):
        untrained = record["settings"]["epochs"] == 0
        switches = (record["settings"]["edge_drop"], record["settings"]["feature_mask"])
        if untrained or switches == ("adaptive", "adaptive"):
            by_key[("init" if untrained else "gca", record["seed"])] = record["accuracy"]["mean"]
    gains = [by_key[("gca", s)] - by_key[("init", s)] for s in (0, 1)]
    expected = f"Karate {np.mean(gains):+.2f} ± {np.std(gains):.2f} (2 pairs)"
    assert expected in table and "What training adds (GCA − Random-Init" in table


def test_notes_say_what_ran_and_one_value_is_never_a_spread_of_zero(tmp_path):
    one = Mode(runs=1, max_epochs=None, grid=(0.1,), grid_runs=1, grid_max_epochs=5, quick=False)
    _run(tmp_path, one)
    table = (tmp_path / "table3.md").read_text()
    assert "± 0.00" not in table and "1 runs" not in table and "1 splits" not in table
    assert "full mode: 1 training per cell (seed 0), training i judged on split i" in table
    assert "Karate: GCA trained exactly (the whole graph at every update): 100 epochs = 100 updates on cpu" in table
    rows = {row["method"]: row for row in csv.DictReader((tmp_path / "table3.csv").open())}
    assert rows["GCA-DE"]["n_values"] == "1" and rows["GCA-DE"]["std"] == ""


def test_quick_runs_are_judged_on_several_splits_and_their_values_pair_by_split(tmp_path):
    quick = Mode(
        runs=1, max_epochs=None, grid=(0.1,), grid_runs=1, grid_max_epochs=5, quick=True, split=SplitSetting(count=4)
    )
    _run(tmp_path, quick)
    records = _records(tmp_path)
    assert all(len(r["accuracy"]["runs"]) == 4 for r in records)  # raw, Random-Init, GCA-DE/-PR/-EV
    table = (tmp_path / "table3.md").read_text()
    assert "1 training per cell (seed 0), each judged on 4 splits drawn from its seed" in table
    assert "(4 pairs)" in table


# 4 and 8. The authors' evaluator, exactly, at CPU speed


def test_the_probe_starts_from_xavier_uniform_weights_and_zero_bias():
    weight, bias = initial_weights(3, 100, 2, seed=0)
    assert weight.shape == (3, 100, 2) and bias.shape == (3, 1, 2) and not bias.any()
    bound = math.sqrt(6 / (100 + 2))  # Xavier-uniform: 0.2425; torch.nn.Linear's default would be 1/√100 = 0.1
    assert float(weight.abs().max()) <= bound and float(weight.abs().max()) > 0.2
    assert abs(float(weight.std()) - bound / math.sqrt(3)) < 0.01  # U(−a, a) has std a/√3
    # split s draws from its own seed: the same weights whatever the other splits
    alone, _ = initial_weights(1, 100, 2, seed=run_seeds(0, 3)[2])
    assert torch.equal(weight[2], alone[0])


def test_all_splits_together_equal_each_split_on_its_own():
    generator = torch.Generator().manual_seed(0)
    y = torch.randint(0, 3, (200,), generator=generator)
    x = torch.randn(200, 16, generator=generator) + torch.nn.functional.one_hot(y, 16).float()
    splits = random_splits(200, 4, seed=1, labels=y)
    together = adam_probe(x, y, splits, epochs=200, seed=5)
    for s, split in enumerate(splits):
        alone = adam_probe(x, y, [split], epochs=200, seed=run_seeds(5, 4)[s])
        for a, b in zip(together, alone, strict=True):
            np.testing.assert_allclose(a[s], b[0], rtol=0, atol=1e-12)


def test_the_authors_protocol_cuts_split_parts_with_int():
    train, val, test = random_splits(2708, 1, sizes="floor")[0]  # Cora under the authors' script
    assert (len(train), len(val), len(test)) == (270, 270, 2168)
    train, val, test = random_splits(2708, 1)[0]
    assert (len(train), len(val), len(test)) == (271, 271, 2166)
    assert (
        SplitSetting().for_protocol("authors").sizes == "floor"
        and SplitSetting().for_protocol("sklearn").sizes == "round"
    )
    with pytest.raises(EvaluationError, match="unknown split sizes"):
        random_splits(10, 1, sizes="ceil")


def test_gca_train_draws_int_sized_parts_under_the_authors_protocol(tmp_path):
    sizes, cut = {}, {}
    for protocol in ("authors", "sklearn"):
        out = tmp_path / protocol
        assert (
            main(
                [
                    "train",
                    "--epochs",
                    "2",
                    "--quiet",
                    "--splits",
                    "1",
                    "--train-frac",
                    "0.2",
                    "--val-frac",
                    "0.2",
                    "--eval-protocol",
                    protocol,
                    "--out",
                    str(out),
                ]
            )
            == 0
        )
        record = json.loads((out / "results.json").read_text())["evaluation_split"]
        sizes[protocol], cut[protocol] = record["sizes"], record.get("cut")
    assert sizes == {"authors": [6, 6, 22], "sklearn": [7, 7, 20]}  # 0.2 · 34 = 6.8
    assert cut == {"authors": "floor", "sklearn": None}  # the rule kept beside the sizes it gave


def test_a_split_record_keeps_the_cut_and_the_part_sizes_apart():
    setting = SplitSetting("random", 2, train=0.2, val=0.2).for_protocol("authors")
    record = setting.record(setting.draw(np.arange(34) % 2))
    assert record == {
        "scheme": "random",
        "train": 0.2,
        "val": 0.2,
        "test": None,
        "cut": "floor",
        "count": 2,
        "sizes": [6, 6, 22],
        "unlabelled_removed": {"train": 0, "val": 0, "test": 0},
    }
    assert setting.record() == {"scheme": "random", "train": 0.2, "val": 0.2, "test": None, "cut": "floor"}
    assert "cut" not in SplitSetting("random", 2).record()  # round(), the default, is not said


# 5. Seeds on every split


def test_public_split_with_seeds_reports_mean_and_std_over_pretrainings(tmp_path, shared_data, cache_dir, capsys):
    out = tmp_path / "cora"
    assert (
        main(
            [
                "train",
                "--dataset",
                "Cora",
                "--data-dir",
                str(shared_data),
                "--eval-split",
                "public",
                "--seeds",
                "3",
                "--epochs",
                "3",
                "--quiet",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    record = json.loads((out / "results.json").read_text())["pretrainings"]
    assert record["count"] == 3 and record["seeds"] == [0, 1, 2] and record["splits_each"] == 1
    assert len(set(record["accuracy"])) > 1  # three different pretrainings
    assert record["mean"] == pytest.approx(np.mean(record["accuracy"])) and record["std"] > 0
    printed = capsys.readouterr().out
    assert f"{record['mean']:.2f} ± {record['std']:.2f} % over 3 pretrainings" in printed
    # the first pretraining is the plain run's: --seeds changes nothing of it
    plain = tmp_path / "plain"
    assert (
        main(
            [
                "train",
                "--dataset",
                "Cora",
                "--data-dir",
                str(shared_data),
                "--eval-split",
                "public",
                "--epochs",
                "3",
                "--quiet",
                "--out",
                str(plain),
            ]
        )
        == 0
    )
    first = json.loads((plain / "results.json").read_text())["accuracy"]["mean"]
    assert record["accuracy"][0] == first


def test_a_split_count_a_public_split_cannot_follow_is_refused(tmp_path, shared_data, cache_dir, capsys):
    assert (
        main(
            [
                "train",
                "--dataset",
                "Cora",
                "--data-dir",
                str(shared_data),
                "--eval-split",
                "public",
                "--splits",
                "5",
                "--epochs",
                "1",
                "--quiet",
                "--out",
                str(tmp_path / "o"),
            ]
        )
        == 2
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--splits 5 cannot apply: Cora is judged on 1 split of its own" in err[0]
    assert "--seeds K" in err[0] and not (tmp_path / "o" / "results.json").exists()
    for bad, said in (
        (["--seeds", "0"], "--seeds must be at least 1"),
        (["--seeds", "2", "--task", "cluster"], "goes with --task classify"),
        (["--seeds", "2", "--checkpoint-every", "1"], "takes no --checkpoint-every"),
    ):
        assert main(["train", "--epochs", "1", "--quiet", "--out", str(tmp_path / "x"), *bad]) == 2
        assert said in capsys.readouterr().err


def test_the_python_public_split_call_works_on_what_load_dataset_returns(shared_data, cache_dir):
    from gca.datasets import load_dataset

    loaded = load_dataset("Cora", data_dir=shared_data)
    ((train, val, test),) = SplitSetting("public").draw(loaded)
    assert (len(train), len(val), len(test)) == (140, 500, 1000)
    with pytest.raises(EvaluationError, match=r"pass the loaded dataset, draw\(loaded\)"):
        SplitSetting("public").draw(loaded.data.y)


# 6. Schedules said as they run


def test_a_run_shorter_than_its_warm_up_says_so_in_one_line(tmp_path, capsys):
    assert (
        main(["train", "--epochs", "10", "--set", "lr=0.1", "--no-eval", "--quiet", "--out", str(tmp_path / "a")]) == 0
    )
    lines = [line for line in capsys.readouterr().err.splitlines() if "warm-up" in line]
    assert lines == [
        "gca: warning: the run makes 10 updates, fewer than its learning-rate warm-up of 100: it ends at "
        "lr 0.01, never reaching lr 0.1 (more --epochs, or --set warmup_steps=N)"
    ]
    assert main(["train", "--epochs", "10", "--no-eval", "--quiet", "--out", str(tmp_path / "b")]) == 0
    assert "warm-up" not in capsys.readouterr().err  # lr 0.01: a warm-up of 10 updates, all made


def test_the_notes_count_the_splits_that_judged_a_run_not_the_ones_asked(tmp_path, shared_data, cache_dir):
    """Cora has one public split: asked for 3 per training, each training is judged on that one, and says so."""
    public = Mode(
        runs=1,
        max_epochs=2,
        grid=(0.1,),
        grid_runs=1,
        grid_max_epochs=2,
        quick=True,
        protocol="sklearn",
        split=SplitSetting("public", count=3),
    )
    repro = Reproduction(
        tmp_path,
        ["Cora"],
        data_dir=shared_data,
        progress=False,
        plots=False,
        device="cpu",
        log=lambda m: None,
        mode=public,
        baselines=("raw",),
    )
    reproduce("table3", repro)
    assert all(len(r["accuracy"]["runs"]) == 1 for r in _records(tmp_path))
    table = (tmp_path / "table3.md").read_text()
    assert "1 training per cell (seed 0), training i judged on split i (the dataset's public split)" in table
    assert "3 splits" not in table
