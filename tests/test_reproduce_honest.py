"""gca reproduce compared honestly: a run store that trusts only its own records, failure that scripts see, rows
named by their regime, Random-Init under both probes (issue 44)."""

from __future__ import annotations

import csv
import json
import shutil

import pytest
import torch

from gca.cli import main
from gca.reproduce import Mode, Reproduction, reproduce
from gca.reproduce.store import RunFileError, record_digest

SHORT = {"degree": "DE", "pagerank": "PR", "eigenvector": "EV"}
TINY = Mode(runs=1, max_epochs=5, grid=(0.1,), grid_runs=1, grid_max_epochs=5, quick=True)


def _table3(out, baselines=("raw",), datasets=("Karate",), **kwargs) -> Reproduction:
    repro = Reproduction(
        out,
        list(datasets),
        progress=False,
        plots=False,
        device="cpu",
        log=lambda m: None,
        mode=TINY,
        baselines=baselines,
        **kwargs,
    )
    reproduce("table3", repro)
    return repro


def _record_of(out, method_label: str) -> tuple:
    """(file, record) of the first run whose plot label / settings match: GCA rows by centrality."""
    for path in sorted((out / "runs").glob("*.json")):
        record = json.loads(path.read_text())
        settings = record.get("settings", {})
        label = (
            record["method"]
            if record["method"] != "gca"
            else ("Random-Init" if settings.get("epochs") == 0 else "GCA-" + SHORT[settings["centrality"]])
        )
        if label == method_label and settings.get("protocol", "authors") == "authors":
            return path, record
    raise AssertionError(method_label)


# 4. The store trusts only records it wrote for the file they are in


def test_an_emptied_record_is_refused_not_taken_as_a_diverged_run(tmp_path):
    _table3(tmp_path)
    path, _ = _record_of(tmp_path, "GCA-PR")
    path.write_text("{}")
    with pytest.raises(RunFileError, match=f"{path.name}.*names no run.*delete it"):
        _table3(tmp_path)


def test_a_record_copied_over_another_runs_file_is_refused(tmp_path):
    _table3(tmp_path)
    de_path, de_record = _record_of(tmp_path, "GCA-DE")
    pr_path, _ = _record_of(tmp_path, "GCA-PR")
    pr_path.write_text(de_path.read_text())  # GCA-DE's numbers would show as GCA-PR's
    with pytest.raises(RunFileError, match=f"{pr_path.name}.*record of run '{de_record['run']}'"):
        _table3(tmp_path)
    # a copy renamed consistently (its key edited to the file's) still carries GCA-DE's settings
    pr_path.write_text(json.dumps({**de_record, "run": pr_path.stem}))
    with pytest.raises(RunFileError, match="'settings' is not this run's"):
        _table3(tmp_path)


def _cli_args(out) -> list[str]:
    return [
        "reproduce",
        "table3",
        "--dataset",
        "Karate",
        "--quick",
        "--runs",
        "1",
        "--baselines",
        "raw",
        "--quiet",
        "--device",
        "cpu",
        "--no-plots",
        "--out",
        str(out),
    ]


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A quick Karate Table 3 made once by the command line; tests tamper with copies of it."""
    out = tmp_path_factory.mktemp("finished") / "out"
    assert main(_cli_args(out)) == 0
    return out


@pytest.mark.xdist_group("honest_finished")
@pytest.mark.parametrize(
    "edit",
    [
        lambda r: {k: v for k, v in r.items() if k != "accuracy"},
        lambda r: {**r, "accuracy": None},  # a diverged run without its error
        lambda r: {**r, "seed": r["seed"] + 1},
        lambda r: {**r, "config": {**r["config"], "tau": 0.123}},
        lambda r: {**r, "accuracy": {**r["accuracy"], "runs": [101.0]}},
    ],
)
def test_records_whose_fields_do_not_match_their_run_are_refused_in_one_line(finished, tmp_path, capsys, edit):
    out = tmp_path / "out"
    shutil.copytree(finished, out)
    assert main(_cli_args(out)) == 0 and "0 runs trained" in capsys.readouterr().out  # the copy is whole
    path, record = _record_of(out, "GCA-DE")
    path.write_text(json.dumps(edit(record)))
    assert main(_cli_args(out)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(path) in err[0] and "delete it" in err[0], err


@pytest.mark.xdist_group("honest_finished")
def test_a_run_two_rows_share_has_its_seconds_counted_once(finished, tmp_path):
    """Random-Init's runs stand in two rows (judged by both probes): the seconds the runs took count each once."""
    out = tmp_path / "out"
    shutil.copytree(finished, out)
    paths = sorted((out / "runs").glob("*.json"))
    total = gca_total = 0
    for index, path in enumerate(paths):
        record = json.loads(path.read_text())
        record["seconds"] = 1000.0 * 2**index  # every sum of distinct runs is its own number
        record["digest"] = record_digest(record, path.stem)  # sealed again, as gca would have written it
        path.write_text(json.dumps(record))
        total += record["seconds"]
        if record["method"] == "gca" and record["settings"].get("epochs"):
            gca_total += record["seconds"]
    assert main(_cli_args(out)) == 0
    note = next(line for line in (out / "table3.md").read_text().splitlines() if "Runs took" in line)
    assert f"Runs took {total:,.0f} s (3 GCA trainings: {gca_total:,.0f} s)" in note, note


# 5. Scripts see failure


def _reproduce_args(tmp_path, *datasets, data_dir=None):
    args = [
        "reproduce",
        "table3",
        "--quick",
        "--runs",
        "1",
        "--baselines",
        "raw",
        "--quiet",
        "--device",
        "cpu",
        "--no-plots",
        "--out",
        str(tmp_path / "out"),
    ]
    for d in datasets:
        args += ["--dataset", d]
    return args + (["--data-dir", str(data_dir)] if data_dir else [])


def test_an_unknown_dataset_name_is_an_error_with_the_closest_name(tmp_path, capsys):
    assert main(_reproduce_args(tmp_path, "Nosuch")) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown dataset 'Nosuch'" in err[0], err
    assert main(_reproduce_args(tmp_path, "Amazon-Fotos")) == 2
    assert "did you mean Amazon-Photo?" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()  # refused before anything is written


def test_a_table_in_which_no_dataset_ran_exits_non_zero(tmp_path, capsys, offline, cache_dir):
    empty = tmp_path / "no-data"
    empty.mkdir()
    assert main(_reproduce_args(tmp_path, "Amazon-Photo", data_dir=empty)) == 1
    err = capsys.readouterr().err
    assert "no dataset could run" in err and "Amazon-Photo" in err
    assert sorted(p.name for p in empty.iterdir()) == []  # nothing left behind in the data folder


def test_a_mistyped_data_dir_leaves_no_empty_folders(tmp_path, capsys, offline, cache_dir):
    typo = tmp_path / "shraed" / "data"
    assert main(_reproduce_args(tmp_path, "Amazon-Photo", data_dir=typo)) != 0
    assert not (tmp_path / "shraed").exists()


def test_one_dataset_named_twice_runs_once(tmp_path, capsys):
    assert main(_reproduce_args(tmp_path, "karate", "Karate")) == 0
    assert "5 runs trained" in capsys.readouterr().out  # raw, Random-Init ×2 protocols, GCA-DE/-PR/-EV: once each
    rows = list(csv.DictReader((tmp_path / "out" / "table3.csv").open()))
    assert len({r["dataset"] for r in rows}) == 1


# 2. Random-Init under both probes; a probe that had not converged is flagged


def test_a_probe_whose_best_check_is_its_last_on_most_splits_is_flagged_as_unconverged():
    from gca.evaluate.classification import EvaluationResult

    def judged(chosen: list[int]) -> EvaluationResult:
        return EvaluationResult(
            [70.0] * len(chosen),
            val_accuracies=[70.0] * len(chosen),
            protocol="authors",
            chosen_epochs=chosen,
            last_check=3000,
        )

    stopped = judged([3000, 3000, 3000, 1200])
    assert stopped.best_at_last_check == 3 and not stopped.probe_converged
    record = stopped.to_dict()
    assert (record["best_at_last_check"], record["last_check"], record["probe_converged"]) == (3, 3000, False)
    assert "the probe had not converged: its best check was its last on 3 of 4 splits" in str(stopped)
    half = judged([3000, 3000, 400, 1200])  # not most of them
    assert half.probe_converged and "converged" not in str(half)
    assert EvaluationResult([70.0], protocol="sklearn").probe_converged  # the solver runs to convergence


def test_the_authors_probe_records_its_checks(tmp_path):
    from gca.datasets import karate_club
    from gca.evaluate.classification import evaluate_embeddings
    from gca.evaluate.splits import random_splits

    data = karate_club()
    noise = torch.randn(34, 4, generator=torch.Generator().manual_seed(0))
    x = torch.nn.functional.one_hot(data.y, 4).float() + 0.3 * noise
    splits = random_splits(34, 4, 0.3, 0.3, seed=0, labels=data.y.numpy())
    result = evaluate_embeddings(x, data.y, splits, "authors")
    assert result.last_check == 3000 and len(result.chosen_epochs) == 4
    assert result.best_at_last_check == sum(e == 3000 for e in result.chosen_epochs) < 2 and result.probe_converged


def test_random_init_is_judged_by_both_probes_and_the_gain_names_its_protocol(tmp_path):
    _table3(tmp_path)
    de, de_record = _record_of(tmp_path, "GCA-DE")
    _, init = _record_of(tmp_path, "Random-Init")
    assert "sklearn_accuracy" in de_record and "sklearn_accuracy" in init  # the pair judged twice
    assert "sklearn_accuracy" not in _record_of(tmp_path, "GCA-PR")[1]
    rows = {r["method"]: r for r in csv.DictReader((tmp_path / "table3.csv").open())}
    assert float(rows["Random-Init (sklearn probe)"]["mean"]) == pytest.approx(init["sklearn_accuracy"]["mean"])
    assert float(rows["Random-Init"]["mean"]) == pytest.approx(init["accuracy"]["mean"])
    assert rows["Random-Init"]["probe_best_at_last_check"] == f"{init['accuracy']['best_at_last_check']}/1"
    table = (tmp_path / "table3.md").read_text()
    converged = init["accuracy"]["probe_converged"] and de_record["accuracy"]["probe_converged"]
    judged = "accuracy" if converged else "sklearn_accuracy"
    gain = de_record[judged]["mean"] - init[judged]["mean"]
    protocol = "authors" if converged else "sklearn"
    assert f"Karate {gain:+.2f} (1 pair) under the {protocol} protocol" in table


def test_a_mini_batch_row_is_named_so_and_the_paper_column_has_no_spread_of_zero(tmp_path):
    from gca.reproduce.plan import Cell, Run
    from gca.reproduce.report import _training, write_table

    config = {"batch_size": 1024, "fanout": [10], "layers": 2}
    cell = Cell("GCA-DE", "Amazon-Photo", [Run("Amazon-Photo", "gca", 0, (("epochs", 2000),))])
    assert _training(cell, [{"config": config}]) == "mini-batch B=1024, fan-out 10,10"
    assert _training(cell, [{"config": {**config, "fanout": [15, 5]}}]) == "mini-batch B=1024, fan-out 15,5"
    assert _training(cell, [{"config": {"batch_size": 0}}]) == "exact"

    def ok(mean, training=""):
        return {
            "status": "ok",
            "mean": mean,
            "std": 0.4,
            "n": 20,
            "runs": 1,
            "training": training,
            "seconds": 1.0,
            "probe_last": (0, 20),
            "unconverged": False,
        }

    mb = "mini-batch B=1024, fan-out 10,10"
    rows = [
        ("Raw features", ["X"], {"Amazon-Photo": ok(78.9), "Karate": ok(60.0)}),
        ("GCA-DE", ["X, A"], {"Amazon-Photo": ok(92.7, mb), "Karate": ok(70.0, mb)}),
        ("GCA-PR", ["X, A"], {"Amazon-Photo": ok(92.5, mb), "Karate": ok(71.0, "exact")}),
        ("GMI", ["X, A"], {"Amazon-Photo": ok(90.0), "Karate": ok(65.0)}),
    ]
    from gca.reproduce import PAPER_TABLE3

    md = write_table(
        tmp_path / "t", "T", rows, ["Method", "Training data"], ["Amazon-Photo", "Karate"], PAPER_TABLE3, []
    )
    lines = {line.split(" | ")[0][2:]: line for line in md.splitlines() if line.startswith("| ")}
    assert "| 78.53 |" in lines["Raw features"] and "± 0.00" not in md
    assert "GCA-DE (mini-batch)" in lines and "92.49 ± 0.09" in lines["GCA-DE (mini-batch)"]
    assert "92.50 ± 0.40 (mini-batch)" in lines["GCA-PR"] and "71.00 ± 0.40 |" in lines["GCA-PR"]
    rows_csv = {(r["method"], r["dataset"]): r for r in csv.DictReader((tmp_path / "t.csv").open())}
    assert rows_csv[("GCA-DE (mini-batch)", "Amazon-Photo")]["training"] == mb
    assert rows_csv[("Raw features", "Amazon-Photo")]["paper_std"] == "0.00"
