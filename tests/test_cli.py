import json
import subprocess
import sys

import numpy as np
import pytest
import torch

from gca.cli import main
from gca.train.estimator import GCA


def test_train_on_karate_writes_results(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["train", "--epochs", "20", "--out", str(out), "--quiet", "--eval-raw", "--splits", "3"]) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["dataset"] == "Karate" and results["centrality"] == "degree" and results["epochs"] == 20
    assert results["train_seconds"] > 0
    assert len(results["accuracy"]["runs"]) == 3 and 0 <= results["accuracy"]["mean"] <= 100
    assert "raw_features_accuracy" in results
    propagated = results["propagated_features_accuracy"]
    assert sorted(propagated) == ["1", "2", "3"] and all(len(r["runs"]) == 3 for r in propagated.values())
    assert results["propagation"]["width"] == 8  # Karate's 34 one-hot columns projected to the embedding's width
    versus = results["versus_feature_baselines"]
    best = max([results["raw_features_accuracy"], *propagated.values()], key=lambda r: r["mean"])
    assert versus["best_baseline_mean"] == best["mean"] and versus["paired_difference"]["splits"] == 3
    assert versus["paired_difference"]["mean"] == pytest.approx(results["accuracy"]["mean"] - best["mean"])
    embeddings = np.load(out / "embeddings.npy")
    assert embeddings.shape == (34, 8) and np.isfinite(embeddings).all()
    restored = GCA.load(out / "model.pt", device="cpu")
    from gca.datasets import karate_club

    again = restored.embed(karate_club()).numpy()
    np.testing.assert_allclose(again, embeddings, atol=1e-5)
    assert not list(out.glob(".*"))  # no temporary files left behind
    printed = capsys.readouterr().out
    assert "accuracy (GCA, degree)" in printed and "accuracy (Â²X):" in printed
    assert "the best feature baseline" in printed


def test_no_eval_and_seed_repeatability(tmp_path):
    runs = []
    for name in ("a", "b"):
        out = tmp_path / name
        args = [
            "train",
            "--epochs",
            "5",
            "--seed",
            "3",
            "--no-eval",
            "--quiet",
            "--out",
            str(out),
            "--centrality",
            "pagerank",
            "--set",
            "p_e1=0.3",
        ]
        assert main(args) == 0
        results = json.loads((out / "results.json").read_text())
        assert results["accuracy"] is None and results["config"]["p_e1"] == 0.3
        runs.append((results["final_loss"], np.load(out / "embeddings.npy")))
    assert runs[0][0] == runs[1][0]
    np.testing.assert_array_equal(runs[0][1], runs[1][1])


def test_user_errors_are_one_line_without_traceback(tmp_path, capsys):
    """Each error is one line and exit 2. The two that load data run as a user runs them (a new process, whose
    stderr holds whatever the libraries print as well); the others through :func:`gca.cli.main` in this one."""
    (tmp_path / "ro").mkdir(mode=0o555)
    in_new_processes = [
        ["train", "--dataset", "Nope"],
        ["train", "--dataset", "Amazon-Photo", "--data-dir", str(tmp_path / "ro"), "--epochs", "1"],
    ]
    for args in in_new_processes:
        proc = subprocess.run(
            [sys.executable, "-m", "gca.cli", *args, "--out", str(tmp_path / "o")],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 2, (args, proc.stderr)
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and lines[0].startswith("gca: error:"), (args, proc.stderr)
        assert "Traceback" not in proc.stderr
    in_this_process = [
        ["train", "--set", "ptau=0.5"],
        ["train", "--set", "tau=0"],
        ["train", "--dataset", str(tmp_path / "missing.npz")],
        ["train", "--config", str(tmp_path / "missing.toml")],
        ["train", "--device", "tpu9", "--epochs", "1"],
    ]
    for args in in_this_process:
        assert main([*args, "--out", str(tmp_path / "o")]) == 2, args
        err = capsys.readouterr().err
        lines = [line for line in err.splitlines() if line.strip()]
        assert len(lines) == 1 and lines[0].startswith("gca: error:"), (args, err)
    assert not (tmp_path / "o" / "results.json").exists()


def test_cuda_request_without_gpu_is_a_clear_error(tmp_path, capsys):
    if torch.cuda.is_available():
        return
    assert main(["train", "--device", "cuda", "--epochs", "1", "--out", str(tmp_path)]) == 2
    assert "no CUDA device" in capsys.readouterr().err


def test_train_plots_write_loss_curve_and_tsne(tmp_path):
    out = tmp_path / "run"
    assert main(["train", "--epochs", "5", "--splits", "2", "--quiet", "--plots", "--out", str(out)]) == 0
    for name in ("loss.png", "tsne.png"):
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("inherited", ["default", "ignored"])
def test_stop_signals_are_held_and_handled_unless_the_process_started_ignoring_them(inherited, monkeypatch):
    import signal
    from types import SimpleNamespace

    from gca.cli import dispatch, train
    from gca.cli.guard import Stop
    from gca.cli.signals import signals_held

    start = signal.default_int_handler if inherited == "default" else signal.SIG_IGN
    previous = signal.signal(signal.SIGINT, start)
    try:
        with signals_held() as held:  # while libraries load: recorded, not acted on
            signal.raise_signal(signal.SIGINT)
        seen = {}

        def run(args):
            seen.update({number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGTERM)})
            return 0

        monkeypatch.setitem(dispatch.COMMANDS, "train", SimpleNamespace(add_parser=train.add_parser, run=run))
        assert dispatch.main(["train"]) == 0
        after = signal.getsignal(signal.SIGINT)
    finally:
        signal.signal(signal.SIGINT, previous)
    if inherited == "default":
        assert held == [signal.SIGINT] and isinstance(seen[signal.SIGINT], Stop)  # a Ctrl-C in a finalizer is not lost
    else:  # a background job of a script: a Ctrl-C meant for the foreground is none of its business
        assert held == [] and seen[signal.SIGINT] is signal.SIG_IGN
    assert isinstance(seen[signal.SIGTERM], Stop) and after is start


def test_sigterm_inside_a_finalizer_is_sent_again_not_swallowed(monkeypatch):
    import signal
    import sys
    import time

    import gca.cli.guard as cli

    sent = []
    monkeypatch.setattr(cli.os, "kill", lambda pid, signum: sent.append(signum))
    stop, outcome = cli.Stop(), []

    class Finalized:
        def __del__(self):  # Python would print and swallow an exception raised here
            try:
                stop(signal.SIGTERM, sys._getframe())
                outcome.append("deferred")
            except KeyboardInterrupt:
                outcome.append("raised")

    Finalized()
    deadline = time.time() + 5
    while not sent and time.time() < deadline:
        time.sleep(0.01)
    assert outcome == ["deferred"] and sent == [signal.SIGTERM]
    with pytest.raises(KeyboardInterrupt):  # anywhere else it ends the command at once
        stop(signal.SIGTERM, sys._getframe())


def test_a_stop_signal_while_an_error_is_handled_waits_for_the_handling_then_ends_the_command(monkeypatch):
    """torchrun stops the other processes the moment one fails: a SIGTERM landing in a failing command's cleanup is
    sent again once the cleanup is over (not raised inside it), within a bound; after the command, it is ignored."""
    import signal
    import sys
    import time

    import gca.cli.guard as cli

    sent = []
    monkeypatch.setattr(cli.os, "kill", lambda pid, signum: sent.append(signum))
    stop = cli.Stop()
    try:
        raise ValueError("the command failed")
    except ValueError:
        stop(signal.SIGTERM, sys._getframe())  # no KeyboardInterrupt here: the handling goes on
        handled = True
    assert handled
    deadline = time.time() + 5
    while not sent and time.time() < deadline:
        time.sleep(0.01)
    assert sent == [signal.SIGTERM]
    with pytest.raises(KeyboardInterrupt):  # the signal sent again, outside the handling, ends the command
        stop(signal.SIGTERM, sys._getframe())
    stop.patience_s = 0.0  # a handler that goes on working past the bound is interrupted after all
    with pytest.raises(KeyboardInterrupt):
        try:
            raise ValueError("the command failed")
        except ValueError:
            stop(signal.SIGTERM, sys._getframe())
    stop.ended = True  # the command has returned: its status stands
    assert stop(signal.SIGTERM, sys._getframe()) is None and sent == [signal.SIGTERM]


def test_a_sigterm_during_a_failed_runs_cleanup_keeps_its_error_line_and_removes_the_folder_it_made(
    tmp_path, monkeypatch, capsys
):
    """The command fails (its graph file is missing); torchrun's SIGTERM lands while it releases its output folder.
    Before, the interrupt cut the release short — the empty folder the run had made stayed — and the line said
    "interrupted" instead of the error."""
    import signal

    import gca.cli.guard as cli
    from gca.outputs.folder import RunOutputs

    release = RunOutputs.release

    def signalled(self):
        signal.raise_signal(signal.SIGTERM)
        release(self)

    monkeypatch.setattr(RunOutputs, "release", signalled)
    monkeypatch.setattr(cli.Stop, "again_s", 60.0)  # sent again only after the command: cancelled by then
    out = tmp_path / "out"
    code = main(
        [
            "train",
            "--dataset",
            str(tmp_path / "missing.npz"),
            "--epochs",
            "1",
            "--no-eval",
            "--quiet",
            "--out",
            str(out),
        ]
    )
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("gca:")]
    assert code == 2 and len(lines) == 1 and lines[0].startswith("gca: error:") and "missing.npz" in lines[0], err
    assert not out.exists()


def test_gca_version_prints_the_package_version(capsys):
    import gca
    from gca.cli import main

    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0 and capsys.readouterr().out.strip() == f"gca {gca.__version__}"


def test_train_help_names_every_dataset_the_registry_knows(capsys, monkeypatch):
    from gca.datasets.registry import DATASET_NAMES

    monkeypatch.setenv("COLUMNS", "2000")  # argparse wraps at hyphens otherwise

    with pytest.raises(SystemExit):
        main(["train", "--help"])
    shown = " ".join(capsys.readouterr().out.split())  # argparse wraps the help text
    assert [name for name in DATASET_NAMES if name not in shown] == []


def test_an_interrupt_during_a_commands_imports_waits_for_them():
    """Ctrl-C landing while a command imports (inside a native extension's initialisation it would abort the
    interpreter or surface as a TypeError) is held until the block ends, then raised as KeyboardInterrupt. The
    process is given Python's own Ctrl-C handler first: a test runner's worker, or a shell's background job, may
    have started with Ctrl-C ignored, which gca leaves alone (tests/test_hostile.py)."""
    import os
    import signal

    from gca.cli.guard import imports_held

    reached = []
    earlier = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            with imports_held():
                os.kill(os.getpid(), signal.SIGINT)
                reached.append("the rest of the block ran")
    finally:
        signal.signal(signal.SIGINT, earlier)
    assert reached == ["the rest of the block ran"]
