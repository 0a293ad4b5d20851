"""gca tune: the search reads only its splits' training and validation labels, prunes, resumes and round-trips."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

optuna = pytest.importorskip("optuna", reason="gca tune needs the tune extra (installed by make test)")

from gca.config import GCAConfig, read_config_file  # noqa: E402
from gca.datasets import karate_club  # noqa: E402
from gca.evaluate.splits import label_splits  # noqa: E402
from gca.graph.graph import prepare_graph  # noqa: E402
from gca.tune import DEFAULT_SPACE, Search, SearchSettings, TuneError, best_toml, read_space  # noqa: E402

GCA_BIN = str(Path(sys.executable).with_name("gca"))


def _search(folder: Path, labels: torch.Tensor, space=None, max_epochs: int = 10, every: int = 5) -> Search:
    data = karate_club()
    splits = label_splits(data.y, 20, seed=0)[:2]
    space = space or {key: dict(spec) for key, spec in DEFAULT_SPACE.items()}
    base = {k: v for k, v in GCAConfig().to_dict().items() if k not in space}
    settings = SearchSettings("Karate", max_epochs, every, len(splits), base, space)
    folder.mkdir(parents=True, exist_ok=True)
    return Search(folder, settings, prepare_graph(data), labels, splits, device="cpu", seed=0, log=None)


def test_the_search_never_reads_a_label_outside_its_splits_training_and_validation_nodes(tmp_path):
    true = karate_club().y
    splits = label_splits(true, 20, seed=0)[:2]
    seen = torch.zeros(34, dtype=torch.bool)
    for train, val, _ in splits:
        seen[torch.from_numpy(train)] = True
        seen[torch.from_numpy(val)] = True
    assert 0 < int(seen.sum()) < 34
    scrambled = true.clone()
    scrambled[~seen] = 1 - scrambled[~seen]  # every label the search must not read, flipped
    one, two = _search(tmp_path / "a", true), _search(tmp_path / "b", scrambled)
    assert bool((one.labels[~seen] == -1).all()) and torch.equal(one.labels[seen], true[seen])
    one.run(3)
    two.run(3)
    values = [[t.value for t in s.study.trials] for s in (one, two)]
    assert values[0] == values[1] and len(values[0]) == 3


def test_a_pruned_trial_stops_at_the_check_that_pruned_it(tmp_path):
    search = _search(tmp_path, karate_club().y, max_epochs=40, every=5)
    search.study.pruner = optuna.pruners.ThresholdPruner(lower=101.0)  # every check falls short: prune at once
    search.run(1)
    (trial,) = search.study.trials
    assert trial.state == optuna.trial.TrialState.PRUNED
    assert list(trial.intermediate_values) == [5]  # one check, at epoch 5 of 40; training ended there


def test_best_toml_round_trips_through_gca_train_config_files(tmp_path):
    config = GCAConfig(tau=0.37, lr=0.0123, activation="prelu", fanout=(5, 3), epochs=140, seed=4)
    path = tmp_path / "best.toml"
    path.write_bytes(best_toml(config, ["tau", "lr", "activation"], "a note\nover two lines"))
    assert GCAConfig(**read_config_file(path)) == config


def test_search_space_files_replace_single_keys_and_are_checked(tmp_path):
    good = tmp_path / "space.toml"
    good.write_text(
        '[tau]\nlow = 0.2\nhigh = 0.8\n[activation]\nchoices = ["relu"]\n[centrality]\nchoices = '
        '["degree", "pagerank"]\n'
    )
    space = read_space(good)
    assert space["tau"] == {"low": 0.2, "high": 0.8} and space["lr"] == DEFAULT_SPACE["lr"]
    assert space["centrality"] == {"choices": ["degree", "pagerank"]}
    for text, message in [
        ("[tau]\nlow = 0.9\nhigh = 0.2\n", "low must be below high"),
        ("[p_e1]\nlow = 0.1\nhigh = 1.5\n", "p_e1 must be a probability"),
        ("[lr]\nlow = 0\nhigh = 0.1\nlog = true\n", "lr must be a finite number"),
        ("[epochs]\nvalue = 10\n", "epochs is not searched"),
        ("[tua]\nvalue = 0.5\n", "unknown config key 'tua'"),
        ("[tau]\nlow = 0.2\n", "exactly one of"),
        ("[batch_size]\nlow = 0\nhigh = 1024\n", "the range holds 1, which the config refuses"),  # inner value
        ("[hidden]\nlow = 64.0\nhigh = 256.0\n", "low and high must be integers"),
        ("[tau]\nlow = true\nhigh = 0.5\n", "tau must be a number"),
    ]:
        bad = tmp_path / "bad.toml"
        bad.write_text(text)
        with pytest.raises(TuneError, match=message):
            read_space(bad)
    bad.write_text("[batch_size]\nlow = 0\nhigh = 16\n")  # from the command line: before any study exists
    done = subprocess.run(
        [sys.executable, "-m", "gca", "tune", "--dataset", "Karate", "--space", str(bad), "--out", str(tmp_path / "o")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1 and "holds 1" in done.stderr
    assert not (tmp_path / "o" / "study.db").exists()


def test_a_folder_holds_one_search(tmp_path):
    _search(tmp_path, karate_club().y)
    with pytest.raises(TuneError, match="max_epochs differ"):
        _search(tmp_path, karate_club().y, max_epochs=20)


def _finished(db: Path) -> list[tuple[int, str]]:
    try:
        with sqlite3.connect(db) as connection:
            rows = connection.execute("select number, state from trials order by number").fetchall()
    except sqlite3.OperationalError:  # the file exists before Optuna has created its tables
        return []
    return [(number, state) for number, state in rows if state in ("COMPLETE", "PRUNED")]


@pytest.mark.skipif(not Path(GCA_BIN).exists(), reason="needs the installed gca command")
def test_kill_9_and_the_same_command_continues_without_repeating_finished_trials(tmp_path):
    out = tmp_path / "study"
    command = [
        GCA_BIN,
        "tune",
        "--dataset",
        "Karate",
        "--trials",
        "6",
        "--max-epochs",
        "30",
        "--eval-every",
        "10",
        "--search-splits",
        "2",
        "--out",
        str(out),
        "--quiet",
    ]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    deadline = time.time() + 180
    while time.time() < deadline and process.poll() is None:
        if (out / "study.db").exists() and len(_finished(out / "study.db")) >= 2:
            break
        time.sleep(0.2)
    assert process.poll() is None, "the search ended before it could be killed"
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    before = _finished(out / "study.db")
    assert 2 <= len(before) < 6
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    after = _finished(out / "study.db")
    assert len(after) == 6 and after[: len(before)] == before  # finished trials kept, none run again
    assert (out / "best.toml").is_file() and (out / "trials.csv").read_text().count("\n") >= 7
    assert (out / "trials.png").is_file()
    assert "test accuracy of that setting" in done.stdout


def test_tune_errors_are_one_line(tmp_path):
    for extra, message in [
        (["--trials", "0"], "--trials must be at least 1"),
        (["--max-epochs", "10", "--eval-every", "20"], "--eval-every must lie in"),
        (["--set", "tau=7e9"], "tau must be"),
    ]:
        done = subprocess.run(
            [sys.executable, "-m", "gca", "tune", "--dataset", "Karate", "--out", str(tmp_path / "o"), *extra],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 2 and done.stderr.startswith("gca: error:") and message in done.stderr, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1


def test_a_collapsing_trial_is_pruned_at_once_with_its_reason(tmp_path, monkeypatch):
    import gca.nn.gcn as encoder

    def zero(self):  # every weight 0: ReLU passes no gradient, the loss sits at log(2N − 1) from the first epoch
        torch.nn.init.zeros_(self.weight)
        torch.nn.init.zeros_(self.bias)

    monkeypatch.setattr(encoder.GCNLayer, "reset_parameters", zero)
    space = {key: dict(spec) for key, spec in DEFAULT_SPACE.items()} | {"activation": {"value": "relu"}}
    search = _search(tmp_path, karate_club().y, space=space, max_epochs=200, every=100)
    search.run(1)
    (trial,) = search.study.trials
    assert trial.state == optuna.trial.TrialState.PRUNED
    assert trial.user_attrs["stopped"].startswith("training collapsed: from epoch 1 to 20")
    assert list(trial.intermediate_values) == []  # stopped at epoch 20, before the first check at 100


@pytest.mark.parametrize("kind", ["random bytes", "text", "another program's SQLite"])
def test_a_study_file_that_is_not_a_study_is_refused_untouched(tmp_path, kind):
    db = tmp_path / "study.db"
    if kind == "random bytes":
        db.write_bytes(bytes(range(256)) * 20)
    elif kind == "text":
        db.write_text("hello\n")
    else:
        with sqlite3.connect(db) as connection:
            connection.execute("create table accounts(id integer, balance real)")
    before = db.read_bytes()
    with pytest.raises(TuneError, match="study.db is (not a study database|another program's SQLite)"):
        _search(tmp_path, karate_club().y)
    assert db.read_bytes() == before  # never written into


@pytest.mark.skipif(not Path(GCA_BIN).exists(), reason="needs the installed gca command")
def test_two_searches_started_together_on_a_fresh_folder_share_the_study(tmp_path):
    out = tmp_path / "study"
    command = [
        GCA_BIN,
        "tune",
        "--dataset",
        "Karate",
        "--trials",
        "4",
        "--max-epochs",
        "10",
        "--eval-every",
        "5",
        "--search-splits",
        "2",
        "--out",
        str(out),
        "--quiet",
    ]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    processes = [
        subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
        for _ in range(2)
    ]
    results = [(p.wait(300), p.stderr.read()) for p in processes]
    assert all(code == 0 for code, _ in results), results
    assert len(_finished(out / "study.db")) >= 4  # one study: the second process counts the first one's trials


def test_a_key_fixed_with_set_leaves_the_search_space(tmp_path, capsys):
    from gca.cli import main

    out = tmp_path / "fixed"
    assert (
        main(
            [
                "tune",
                "--dataset",
                "Karate",
                "--trials",
                "1",
                "--max-epochs",
                "2",
                "--eval-every",
                "1",
                "--search-splits",
                "2",
                "--splits",
                "2",
                "--out",
                str(out),
                "--quiet",
                "--set",
                "tau=0.9",
                "--set",
                "lr=0.001",
            ]
        )
        == 0
    )
    captured = capsys.readouterr()
    best = (out / "best.toml").read_text()
    searched = best.split("# searched", 1)[1].split("# fixed", 1)[0]
    assert "tau = 0.9" in best and "lr = 0.001" in best and "tau" not in searched and "lr =" not in searched
    assert "(trial 0, 2 splits)" in captured.out


def test_the_wide_space_holds_every_table_5_value_and_graces_uniform_drops():
    """``--space wide``, the tuned settings' space: Table 5's value of every searched key on every paper dataset
    lies inside it, and so do GRACE's uniform drops and widths up to 512."""
    from gca.config import shipped_config

    space = read_space("wide")
    assert "uniform" in space["centrality"]["choices"] and max(space["hidden"]["choices"]) == 512
    assert space["tau"] == {"low": 0.1, "high": 1.0} and (space["lr"]["low"], space["lr"]["high"]) == (1e-4, 1e-1)
    for dataset in ("Amazon-Photo", "Amazon-Computers", "Coauthor-CS", "Coauthor-Physics", "Wiki-CS"):
        for key, value in shipped_config(dataset).items():
            spec = space.get(key)
            if spec is None:
                continue
            inside = (
                value == spec["value"]
                if "value" in spec
                else value in spec["choices"]
                if "choices" in spec
                else spec["low"] <= value <= spec["high"]
            )
            assert inside, (dataset, key, value, spec)


def test_trials_train_as_gca_train_would_mini_batches_where_its_default_chooses_them(tmp_path, monkeypatch):
    """A search over a graph whose exact schedule the default estimates as too long on a CPU trains every trial
    in mini-batches, as ``gca train`` would; its best.toml says so."""
    from gca.cli import main
    from gca.train import fast

    monkeypatch.setattr(fast, "EXACT_BOUND_SECONDS", 0.0)  # every exact schedule is "too long" here
    out = tmp_path / "s"
    args = ["tune", "--dataset", "Karate", "--trials", "1", "--max-epochs", "2", "--eval-every", "1"]
    args += ["--search-splits", "2", "--splits", "2", "--out", str(out), "--quiet", "--device", "cpu"]
    assert main(args) == 0
    assert read_config_file(out / "best.toml")["batch_size"] == fast.FAST_BATCH_SIZE


def test_the_cross_graph_rule_takes_the_best_mean_validation_rank_and_reads_no_other_graph():
    """Hand-computed: on graphs a and b, x ranks (1, 2.5) → 1.75, y (2, 2.5) → 2.25, z (3, 1) → 2; a tie in mean rank
    goes to the higher mean accuracy. Leaving graph c out, its scores (which would favour z) are never read."""
    from gca.tune import mean_rank_choice

    scores = {
        "x": {"a": 90.0, "b": 80.0, "c": 10.0},
        "y": {"a": 85.0, "b": 80.0, "c": 20.0},
        "z": {"a": 70.0, "b": 95.0, "c": 99.0},
    }
    assert mean_rank_choice(scores, ["a", "b"]) == "x"
    assert mean_rank_choice(scores, ["a", "b", "c"]) == "z"  # ranks x 1+2.5+3, y 2+2.5+2, z 3+1+1
    # y and z: ranks (1, 2) and (2, 1), mean accuracies 82.5 each: the candidate listed first
    assert mean_rank_choice(scores, ["a", "b"], candidates=["y", "z"]) == "y"
    assert mean_rank_choice(scores, ["a", "b"], candidates=["z", "y"]) == "z"
    tied = {"p": {"a": 90.0, "b": 70.0}, "q": {"a": 62.0, "b": 99.0}}
    assert mean_rank_choice(tied, ["a", "b"]) == "q"  # both mean rank 1.5: q's mean accuracy (80.5) is higher
    with pytest.raises(TuneError, match="no validation accuracy"):
        mean_rank_choice({"x": {"a": 1.0}}, ["a", "b"])
