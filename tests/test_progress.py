"""Progress reports: the long-run hint projected from the first updates, the plain lines of a log file, every phase's
progress when it shows (forced here by a zero delay) and none under --quiet, and the library's line writer."""

from __future__ import annotations

import io
import json

import pytest

import gca.progress as progress
from gca.cli import main
from gca.cli.flags import FLAGS
from gca.progress import Progress, phase, to_stderr
from gca.stderr import name_options
from gca.train.fast import LongRunHint


class Clock:
    """A clock that moves only when told."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _hint_lines(
    config, nodes: int, update_seconds: float, updates: int, done: int = 0, calls: int = 5, **options
) -> list[str]:
    """The lines as the command line says them (the flags of gca.cli.flags)."""
    clock, lines = Clock(), []
    hint = LongRunHint(config, nodes, clock=clock, emit=lines.append, **options)
    name_options(FLAGS)
    try:
        for update in range(done + 1, done + 1 + calls):
            clock.now += update_seconds
            hint(update, updates)
    finally:
        name_options(None)
    return lines


def test_a_run_projected_past_an_hour_says_so_once_with_what_shortens_it():
    from gca import GCAConfig

    exact = GCAConfig(epochs=500)
    assert _hint_lines(exact, 169_343, 7.0, 500) == []  # 499 × 7 s = 58 min: no warning
    (line,) = _hint_lines(exact, 169_343, 8.0, 500)  # decided after the first update: 499 × 8 s = 1.1 h
    assert line.startswith("gca: warning: the first epoch took 8.0 s, so the other 499 epochs need about 1.1 h")
    assert "338,686² pairs" in line and "--fast trains in mini-batches" in line and "--exact" not in line
    (line,) = _hint_lines(exact, 169_343, 8.0, 500, exact_asked=True)
    assert "--fast instead of --exact" in line
    (line,) = _hint_lines(exact, 2_000, 8.0, 500)  # a small graph: mini-batches are not the answer
    assert "--epochs" in line and "--fast" not in line
    (line,) = _hint_lines(exact, 169_343, 30.0, 500, done=300)  # resumed at update 300: 199 are left
    assert "the other 199 epochs need about 1.7 h" in line


def test_a_mini_batch_run_is_projected_from_its_first_updates_within_an_epoch():
    from gca import GCAConfig

    config = GCAConfig(epochs=10, batch_size=1024)  # 1,465 updates an epoch at 1.5·10⁶ nodes
    updates = 10 * 1465
    (line,) = _hint_lines(config, 1_500_000, 0.3, updates)  # three updates of 0.3 s: 14,647 × 0.3 s = 1.2 h
    assert line.startswith(
        "gca: warning: the first 3 updates took 0.9 s, so the other 14,647 updates need about "
        "1.2 h; each epoch makes 1,465 updates"
    )
    assert _hint_lines(config, 1_500_000, 0.2, updates) == []  # 48 min
    assert _hint_lines(config, 1_500_000, 0.3, None) == []  # a source that does not say how many: no projection


def _lines(**options) -> tuple[Progress, Clock, io.StringIO]:
    clock, stream = Clock(), io.StringIO()
    return Progress(stream=stream, clock=clock, **options), clock, stream


def test_without_a_terminal_a_line_every_tenth_every_minute_and_at_the_end_with_the_time_left():
    bar, clock, stream = _lines(total=100, desc="GCA", unit="update")
    for _ in range(20):
        clock.now += 0.5
        bar.update(1, epoch="1/1")
    assert stream.getvalue().splitlines() == [
        "GCA: 10/100 updates, epoch 1/1, 5.0 s, about 45.0 s left",
        "GCA: 20/100 updates, epoch 1/1, 10.0 s, about 40.0 s left",
    ]
    clock.now += 70  # a slow update: a line after a minute without one, not only at the next tenth
    bar.update(1)
    assert stream.getvalue().splitlines()[-1].startswith("GCA: 21/100 updates, epoch 1/1, 1.3 min, about ")
    bar.update(79)
    assert stream.getvalue().splitlines()[-1] == "GCA: 100/100 updates, epoch 1/1, 1.3 min"


def test_a_short_phase_shows_nothing_and_a_long_one_shows_from_its_delay_on():
    bar, clock, stream = _lines(total=20, desc="evaluate", unit="split", delay=3.0)
    for _ in range(20):
        clock.now += 0.1
        bar.update(1)
    bar.close()
    assert stream.getvalue() == ""  # 2 s in all
    bar, clock, stream = _lines(total=20, desc="evaluate", unit="split", delay=3.0)
    for _ in range(20):
        clock.now += 1.0
        bar.update(1)
    lines = stream.getvalue().splitlines()
    assert lines[0] == "evaluate: 3/20 splits, 3.0 s, about 17.0 s left"  # as soon as it shows, then each tenth
    assert lines[1].startswith("evaluate: 4/20 splits") and lines[-1] == "evaluate: 20/20 splits, 20.0 s"
    bar, clock, stream = _lines(total=20, desc="evaluate", unit="split", delay=0.0, enabled=False)
    bar.update(20)
    assert stream.getvalue() == ""


@pytest.fixture
def every_phase(monkeypatch):
    """Phases show their progress at once, whatever they take (their delay is 0)."""
    monkeypatch.setattr(progress, "PHASE_DELAY", 0.0)


def _phases(err: str) -> set[str]:
    return {line.split(":")[0] for line in err.splitlines() if ":" in line and not line.startswith("gca")}


def test_every_phase_of_gca_train_shows_its_progress_and_none_under_quiet(tmp_path, capsys, monkeypatch, every_phase):
    monkeypatch.setenv("GCA_INFERENCE_ROWS", "16")  # Karate's 34 nodes embedded in blocks, as a large graph's
    args = ["train", "--epochs", "3", "--splits", "2", "--eval-raw", "--set", "warmup_steps=0"]
    assert main([*args, "--out", str(tmp_path / "a")]) == 0
    err = capsys.readouterr().err
    assert _phases(err) == {
        "prepare",
        "GCA",
        "embed (2 layers)",
        "evaluate",
        "evaluate raw features",
        "evaluate Â¹X",
        "evaluate Â²X",
        "evaluate Â³X",
    }, err
    assert "prepare: 3/3 steps, done views' probabilities, " in err and "GCA: 3/3 epochs, loss " in err
    assert "embed (2 layers): 68/68 rows, " in err and "evaluate: 2/2 splits, " in err
    record = json.loads((tmp_path / "a" / "results.json").read_text())
    assert record["raw_eval_seconds"] >= 0 and record["eval_seconds"] >= 0
    assert main([*args, "--quiet", "--out", str(tmp_path / "b")]) == 0
    assert _phases(capsys.readouterr().err) == set()


def test_the_authors_probe_and_mini_batch_epochs_show_their_progress(tmp_path, capsys, every_phase):
    args = [
        "train",
        "--epochs",
        "2",
        "--set",
        "batch_size=8",
        "--set",
        "warmup_steps=0",
        "--splits",
        "2",
        "--eval-protocol",
        "authors",
        "--out",
        str(tmp_path),
    ]
    assert main(args) == 0
    err = capsys.readouterr().err
    assert "GCA: 5/10 updates, epoch 1/2, loss " in err  # Karate: 5 updates an epoch, counted within it
    assert "evaluate (2 splits): 3,000/3,000 epochs, " in err


def test_gca_prepare_and_gca_embed_show_their_steps_unless_quiet(tmp_path, capsys, monkeypatch, every_phase):
    import numpy as np

    from gca.datasets import karate_club

    data = karate_club()
    edges, features = tmp_path / "edges.csv", tmp_path / "features.npy"
    edges.write_text("\n".join(f"{u},{v}" for u, v in data.edge_index.t().tolist()) + "\n")
    np.save(features, data.x.numpy())
    monkeypatch.setenv("GCA_CACHE_DIR", str(tmp_path / "cache"))
    graph = ["--edges", str(edges), "--features", str(features)]
    assert main(["prepare", *graph]) == 0
    assert "prepare: 3/3 steps" in capsys.readouterr().err
    assert main(["prepare", *graph, "--quiet", "--set", "p_e1=0.1"]) == 0
    assert "prepare:" not in capsys.readouterr().err
    assert main(["train", *graph, "--epochs", "1", "--no-eval", "--quiet", "--out", str(tmp_path / "run")]) == 0
    monkeypatch.setenv("GCA_INFERENCE_ROWS", "16")
    checkpoint = ["--checkpoint", str(tmp_path / "run" / "model.pt")]
    assert main(["embed", *checkpoint, *graph, "--out", str(tmp_path / "e1")]) == 0
    assert "embed (2 layers): 68/68 rows" in capsys.readouterr().err
    assert main(["embed", *checkpoint, *graph, "--quiet", "--out", str(tmp_path / "e2")]) == 0
    assert "embed" not in capsys.readouterr().err


def test_phase_reads_its_delay_when_it_starts(monkeypatch):
    monkeypatch.setattr(progress, "PHASE_DELAY", 7.5)
    assert phase(3, "evaluate", "split").delay == 7.5


def test_the_library_reports_lines_on_stderr_by_default_and_nothing_when_told(tmp_path, capsys):
    import inspect

    from gca.reproduce import Reproduction
    from gca.tune import Search

    to_stderr("trial 3: 81.2")
    assert capsys.readouterr() == ("", "trial 3: 81.2\n")  # stdout stays the command's results
    for kind in (Search, Reproduction):
        assert inspect.signature(kind).parameters["log"].default is to_stderr


class _Timer:
    """A timer that fires only when the test says so."""

    made: list[_Timer] = []

    def __init__(self, seconds: float, function) -> None:
        self.seconds, self.function, self.cancelled = seconds, function, False
        _Timer.made.append(self)

    def start(self) -> None:
        pass

    def cancel(self) -> None:
        self.cancelled = True


def test_a_step_says_it_is_under_way_after_its_delay_and_when_it_is_done_and_nothing_when_short():
    clock, lines = Clock(), []
    with progress.step("storing", clock=clock, timer=_Timer, emit=lines.append, delay=3.0):
        clock.now += 1.0
    assert lines == [] and _Timer.made[-1].cancelled and _Timer.made[-1].seconds == 3.0  # short: nothing said
    with progress.step("building the edge list", clock=clock, timer=_Timer, emit=lines.append, delay=3.0):
        clock.now += 3.0
        _Timer.made[-1].function()  # the timer fires while the step runs
        clock.now += 9.5
    assert lines == ["building the edge list: under way, 3.0 s", "building the edge list: done, 12.5 s"]
    lines.clear()
    with progress.step("late", clock=clock, timer=_Timer, emit=lines.append, delay=3.0):
        fire = _Timer.made[-1].function
    fire()  # a timer that fires after its step ended says nothing
    assert lines == []
    with progress.step("quiet", enabled=False, clock=clock, timer=_Timer, emit=lines.append):
        pass
    assert lines == []


def test_a_step_whose_work_raised_is_said_stopped_not_done():
    clock, lines = Clock(), []
    with (
        pytest.raises(OSError),
        progress.step("export x.parquet", clock=clock, timer=_Timer, emit=lines.append, delay=0),
    ):
        clock.now += 2.0
        raise OSError(28, "No space left on device")
    assert lines == ["export x.parquet: under way, 0.0 s", "export x.parquet: stopped, 2.0 s"]


def test_the_edge_readers_clock_starts_when_the_edges_are_read_not_before_the_features(tmp_path, monkeypatch):
    import gca.datasets.files as files

    clock, stream = Clock(), io.StringIO()

    class Timed(Progress):  # the readers' bars on the test's clock, into the test's stream
        def __init__(self, *args, **options) -> None:
            super().__init__(*args, stream=stream, clock=clock, **options)

    read_features = files.feature_input

    def slow_features(*args, **options):
        clock.now += 100.0  # the features take 100 s
        return read_features(*args, **options)

    monkeypatch.setattr(progress, "Progress", Timed)
    monkeypatch.setattr(files, "feature_input", slow_features)
    monkeypatch.setattr(files, "PROGRESS_BYTES", 1)
    edges, features = tmp_path / "edges.csv", tmp_path / "features.csv"
    edges.write_text("source,target\n" + "".join(f"n{i},n{(i + 1) % 40}\n" for i in range(40)))
    features.write_text("id,f0\n" + "".join(f"n{i},{i}\n" for i in range(40)))
    files.load_files(edges, features, progress=True)
    said = [line for line in stream.getvalue().splitlines() if line.startswith("reading edges")]
    assert said == ["reading edges edges.csv: 1/1 MBs, 0.0 s"], stream.getvalue()


def test_gca_prepare_says_each_phase_after_the_features_and_export_says_what_it_writes(
    tmp_path, capsys, monkeypatch, every_phase
):
    from gca.datasets import karate_club

    data = karate_club()
    edges, features = tmp_path / "edges.csv", tmp_path / "features.csv"
    edges.write_text("".join(f"{u},{v}\n" for u, v in data.edge_index.t().tolist() if u < v))
    features.write_text("".join(f"{i},{','.join(map(str, row))}\n" for i, row in enumerate(data.x.tolist())))
    monkeypatch.setenv("GCA_CACHE_DIR", str(tmp_path / "cache"))
    graph = ["--edges", str(edges), "--features", str(features)]
    assert main(["prepare", *graph]) == 0
    err = capsys.readouterr().err
    assert "building the undirected edge list of 78 listed edges: under way, " in err, err
    assert "building the undirected edge list of 78 listed edges: done, " in err
    assert "storing the prepared graph in " in err and ": done, " in err
    assert main(["prepare", *graph, "--quiet", "--set", "p_e1=0.1"]) == 0
    assert "under way" not in capsys.readouterr().err
    run = ["train", *graph, "--epochs", "3", "--no-eval", "--set", "warmup_steps=0"]
    assert main([*run, "--out", str(tmp_path / "a"), "--export", str(tmp_path / "emb.csv")]) == 0
    assert "export emb.csv: 34/34 rows, " in capsys.readouterr().err
    assert main([*run, "--out", str(tmp_path / "b"), "--export", str(tmp_path / "emb.parquet")]) == 0
    err = capsys.readouterr().err
    assert "export emb.parquet (34 rows): under way, " in err and "export emb.parquet (34 rows): done, " in err
    assert main([*run, "--quiet", "--out", str(tmp_path / "c"), "--export", str(tmp_path / "quiet.csv")]) == 0
    assert "export" not in capsys.readouterr().err
