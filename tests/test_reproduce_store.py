"""The run store keeps gca's own records — a failed run's too — and refuses any other; one seed rule for repeated
trainings; the legends under a table are the ones its cells need (issue 52)."""

from __future__ import annotations

import csv
import hashlib
import json
import shutil

import pytest

import gca.reproduce.execute as execute
from gca.cli import main
from gca.reproduce import Mode, Reproduction, reproduce
from gca.reproduce.store import record_digest
from gca.train.loop import CollapseError

# one worker makes the module's finished table once (pytest-xdist would make it again in each worker)
pytestmark = pytest.mark.xdist_group("reproduce_store")

TINY = Mode(runs=1, max_epochs=5, grid=(0.1,), grid_runs=1, grid_max_epochs=5, quick=True)
COLLAPSED = "training collapsed: for all 5 updates the loss stayed at log(2N − 1) = 4.19"


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


def _records(out) -> dict[str, tuple]:
    """Row label → (file, record) of the authors-protocol runs of a Karate Table 3 (raw, Random-Init, GCA-*)."""
    short = {"degree": "DE", "pagerank": "PR", "eigenvector": "EV"}
    found = {}
    for path in sorted((out / "runs").glob("*.json")):
        record = json.loads(path.read_text())
        settings = record.get("settings", {})
        label = (
            record["method"]
            if record["method"] != "gca"
            else ("Random-Init" if settings.get("epochs") == 0 else "GCA-" + short[settings["centrality"]])
        )
        found[label] = (path, record)
    return found


def _rewrite(path, record, **changes):
    """Write ``record`` with ``changes`` back as gca would, its digest left as it was (an edit by hand)."""
    path.write_text(json.dumps({**record, **changes}, indent=2))


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A quick Karate Table 3 made once by the command line; tests tamper with copies of it."""
    out = tmp_path_factory.mktemp("finished") / "out"
    assert main(_cli_args(out)) == 0
    return out


@pytest.fixture
def copy(finished, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(finished, out)
    return out


# item 2, item 11: a record carries a digest of its content and its run key, checked on every read


def test_every_record_carries_the_sha256_of_its_canonical_json_and_run_key(copy):
    for path, record in _records(copy).values():
        body = {k: v for k, v in record.items() if k != "digest"}
        canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        expected = hashlib.sha256(f"{path.stem}\n{canonical}".encode()).hexdigest()
        assert record["digest"] == expected == record_digest(body, path.stem)


def _refused(out, path, capsys) -> str:
    assert main(_cli_args(out)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(path) in err[0] and "delete it" in err[0], err
    assert not (out / "table3.md").exists() or "99.90" not in (out / "table3.md").read_text()
    return err[0]


def test_a_baseline_record_edited_to_other_numbers_is_refused(copy, capsys):
    (copy / "table3.md").unlink()
    path, record = _records(copy)["raw"]
    _rewrite(
        path,
        record,
        accuracy={**record["accuracy"], "mean": 99.9, "std": 0.0, "runs": [99.9] * len(record["accuracy"]["runs"])},
    )
    assert "does not match its digest" in _refused(copy, path, capsys)


def test_a_gca_record_edited_by_ten_points_is_refused(copy, capsys):
    path, record = _records(copy)["GCA-DE"]
    accuracy = record["accuracy"]
    shift = 10 if max(accuracy["runs"]) <= 90 else -10  # still percentages: only the digest tells
    _rewrite(
        path,
        record,
        accuracy={**accuracy, "mean": accuracy["mean"] + shift, "runs": [v + shift for v in accuracy["runs"]]},
    )
    assert "does not match its digest" in _refused(copy, path, capsys)


def test_a_record_edited_to_a_failure_is_refused_not_read_as_a_failed_run(copy, capsys):
    path, record = _records(copy)["raw"]
    _rewrite(path, record, accuracy=None, error="loss diverged")
    assert "does not match its digest" in _refused(copy, path, capsys)


def test_a_record_without_a_digest_is_refused_with_what_to_do(copy, capsys):
    path, record = _records(copy)["GCA-PR"]
    path.write_text(json.dumps({k: v for k, v in record.items() if k != "digest"}))
    line = _refused(copy, path, capsys)
    assert "no digest" in line


def test_a_record_whose_digest_was_recomputed_for_another_file_is_refused(copy, capsys):
    records = _records(copy)
    de_path, de = records["GCA-DE"]
    pr_path, _ = records["GCA-PR"]
    body = {k: v for k, v in de.items() if k != "digest"}
    pr_path.write_text(json.dumps({**body, "digest": record_digest(body, de_path.stem)}))
    _refused(copy, pr_path, capsys)


def test_an_untouched_copy_is_read_whole(copy, capsys):
    assert main(_cli_args(copy)) == 0
    assert "0 runs trained, 5 reused" in capsys.readouterr().out


# item 1: a failed run's record is gca's own: kept, shown failed with its reason, reused


def _collapse_pagerank(monkeypatch) -> tuple[list, object]:
    """GCA-PR's trainings collapse; returns the trainings attempted (each a centrality) and the real run_gca."""
    real = execute.run_gca
    attempted = []

    def run_gca(estimator, *args, **kwargs):
        attempted.append(estimator.config.centrality)
        if estimator.config.centrality == "pagerank":
            raise CollapseError(COLLAPSED)
        return real(estimator, *args, **kwargs)

    monkeypatch.setattr(execute, "run_gca", run_gca)
    return attempted, real


def test_a_failed_gca_run_is_kept_shown_failed_with_its_reason_and_reused(tmp_path, monkeypatch, capsys):
    attempted, real = _collapse_pagerank(monkeypatch)
    out = tmp_path / "out"
    assert main(_cli_args(out)) == 0
    first = capsys.readouterr()
    path, record = _records(out)["GCA-PR"]
    assert record["accuracy"] is None and record["error"] == COLLAPSED and "config" in record
    failed = [line for line in first.err.splitlines() if "failed" in line]
    assert len(failed) == 1 and "GCA-PR" in failed[0] and COLLAPSED in failed[0] and path.name in failed[0], first.err
    table = (out / "table3.md").read_text()
    row = next(line for line in table.splitlines() if line.startswith("| GCA-PR"))
    assert "| failed |" in row and "diverged" not in table
    note = next(line for line in table.splitlines() if line.startswith("Failed runs"))
    assert "GCA-PR on Karate" in note and COLLAPSED in note and path.name in note
    rows = {r["method"]: r for r in csv.DictReader((out / "table3.csv").open())}
    assert rows["GCA-PR"]["status"] == "failed" and rows["GCA-PR"]["reason"] == COLLAPSED
    assert rows["GCA-PR"]["failed_runs"] == "1" and rows["GCA-DE"]["failed_runs"] == "0"
    # how the rows trained is read from the finished trainings only; the failed one is counted, never "on ?"
    training = next(line for line in table.splitlines() if line.startswith("Karate: "))
    assert " on ?" not in training and "(2 GCA trainings: " in training and "1 failed" in training, training
    # the same command reads the record again, trains nothing, says the failure again and writes the same table
    attempted.clear()
    assert main(_cli_args(out)) == 0
    again = capsys.readouterr()
    assert attempted == [] and "0 runs trained" in again.out and path.name in again.err
    assert (out / "table3.md").read_text() == table
    # deleting the file (as the note says) trains that run again
    monkeypatch.setattr(execute, "run_gca", real)
    path.unlink()
    assert main(_cli_args(out)) == 0
    assert "1 runs trained" in capsys.readouterr().out
    row = next(line for line in (out / "table3.md").read_text().splitlines() if line.startswith("| GCA-PR"))
    assert "failed" not in row and " ± " in row


def test_a_failed_baseline_record_is_kept_too(tmp_path, monkeypatch):
    from gca.reproduce import baselines
    from gca.train.loop import TrainingError

    def diverges(*args, **kwargs):
        raise TrainingError("the loss diverged (nan at epoch 3)")

    monkeypatch.setitem(baselines.BASELINES, "raw", (*baselines.BASELINES["raw"][:2], diverges))
    repro = Reproduction(
        tmp_path,
        ["Karate"],
        progress=False,
        plots=False,
        device="cpu",
        log=lambda m: None,
        mode=TINY,
        baselines=("raw",),
    )
    reproduce("table3", repro)
    reproduce("table3", repro)  # read again: not refused
    table = (tmp_path / "table3.md").read_text()
    assert "| Raw features | X | failed |" in table and "the loss diverged (nan at epoch 3)" in table


# item 5: legends only where a cell needs them; the CSV's count is named so


def test_a_table_without_paper_numbers_has_no_paper_legend(finished):
    table = (finished / "table3.md").read_text()
    assert "⚠" not in table and "Paper numbers" not in table


def test_the_flag_legend_stands_under_a_table_with_a_flagged_cell_only(tmp_path):
    from gca.reproduce import PAPER_TABLE3
    from gca.reproduce.report import write_table

    def ok(mean):
        return {
            "status": "ok",
            "mean": mean,
            "std": 0.1,
            "n": 20,
            "runs": 20,
            "training": "",
            "seconds": 1.0,
            "probe_last": (0, 20),
            "unconverged": False,
        }

    def table(mean):
        rows = [("GCA-DE", ["X, A"], {"Amazon-Photo": ok(mean)})]
        return write_table(
            tmp_path / "t", "T", rows, ["Method", "Training data"], ["Amazon-Photo"], PAPER_TABLE3, ["a note"]
        )

    near, far = table(92.5), table(80.0)
    assert "⚠" not in near and "Paper numbers: Zhu et al." in near
    assert "80.00 ± 0.10 ⚠" in far and "⚠: ours and the paper's differ by more than 2·√(s² + s_paper²)" in far
    header = next(csv.reader((tmp_path / "t.csv").open()))
    row = next(csv.DictReader((tmp_path / "t.csv").open()))
    assert "values" not in header and row["n_values"] == "20" and row["runs"] == "20"


# item 5: gca train --seeds K and gca reproduce train with the same seeds


def test_repeated_trainings_take_consecutive_seeds_from_the_first():
    from gca.seeds import MAX_SEED, training_seeds

    assert training_seeds(0, 3) == [0, 1, 2] and training_seeds(7, 1) == [7] and training_seeds(5, 0) == []
    assert training_seeds(MAX_SEED - 1, 3) == [MAX_SEED - 1, MAX_SEED, 0]  # wrapped into the 32-bit range
    with pytest.raises(ValueError, match="a seed must lie in"):
        training_seeds(-1, 2)


def test_gca_reproduce_and_gca_train_seeds_use_one_rule(tmp_path, capsys):
    from gca.reproduce import Planner
    from gca.seeds import training_seeds

    planned = Planner(Mode.create(quick=False, runs=3)).table3("Karate")
    assert [r.seed for r in planned[-1].runs] == training_seeds(0, 3)
    out = tmp_path / "t"
    assert (
        main(
            [
                "train",
                "--dataset",
                "Karate",
                "--seed",
                "5",
                "--seeds",
                "3",
                "--epochs",
                "2",
                "--splits",
                "2",
                "--device",
                "cpu",
                "--quiet",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    record = json.loads((out / "results.json").read_text())["pretrainings"]
    assert record["seeds"] == [5, 6, 7] == training_seeds(5, 3)
    assert "(seeds 5, 6, 7)" in capsys.readouterr().out
