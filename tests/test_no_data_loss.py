"""A run that fails for any reason leaves the previous complete run in --out untouched; one run per folder at a time
(issue 19, families 1 and 5)."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import time

import pytest

from gca.cli import main

TRAIN = ["train", "--dataset", "Karate", "--no-eval", "--quiet", "--set", "warmup_steps=0"]
FILES = ("results.json", "embeddings.npy", "model.pt")


def _run_files(out) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.iterdir()) if p.is_file()}


def _complete(out, epochs: int) -> dict[str, bytes]:
    assert main([*TRAIN, "--epochs", str(epochs), "--checkpoint-every", "1", "--out", str(out)]) == 0
    files = _run_files(out)
    assert set(FILES) | {"checkpoint.pt"} == set(files)
    assert json.loads(files["results.json"])["epochs"] == epochs
    return files


# Each way a run can fail after the folder was chosen: (extra arguments, what to do to the folder first, words of
# the one-line error).
FAILURES = {
    "resume refused: other settings": (["--epochs", "4", "--resume", "--set", "tau=0.9"], None, "tau="),
    "resume refused: corrupt checkpoint": (
        ["--epochs", "4", "--resume"],
        lambda out: (out / "checkpoint.in-progress.pt").write_bytes(b"not a checkpoint"),
        "not a readable gca checkpoint",
    ),
    "training diverges after checkpoints were written": (
        ["--epochs", "6", "--set", "lr=10", "--set", "warmup_steps=0", "--set", "tau=0.01", "--checkpoint-every", "1"],
        None,
        "lower the learning rate",
    ),
}


@pytest.mark.parametrize("case", list(FAILURES))
def test_a_failing_run_leaves_the_previous_run_whole(tmp_path, capsys, case):
    out = tmp_path / "out"
    before = _complete(out, 4)
    extra, damage, words = FAILURES[case]
    if damage is not None:
        damage(out)
    damaged = _run_files(out)
    capsys.readouterr()
    assert main([*TRAIN, "--checkpoint-every", "2", *extra, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("gca: error: ") and words in err[-1], err
    assert all(line.startswith("gca: ") and "error" not in line for line in err[:-1]), err  # notes only before
    after = _run_files(out)
    assert {name: after[name] for name in before} == before  # every file of the earlier run, byte for byte
    if case.startswith("resume refused"):  # refused before anything was copied or written
        assert after == damaged and len(err) == 1, err


def test_any_two_runs_leave_the_last_successful_one(tmp_path):
    """Property: for every sequence of two runs (each succeeding or failing, with or without checkpoints), the
    folder holds exactly the files of the last run that succeeded."""
    succeed = [["--epochs", "2"], ["--epochs", "3", "--checkpoint-every", "1"]]
    diverge = ["--set", "lr=10", "--set", "warmup_steps=0", "--set", "tau=0.01"]  # NaN at epoch 2
    fail = [["--epochs", "3", *diverge, "--checkpoint-every", "1"], ["--epochs", "2", "--resume", "--set", "tau=0.9"]]
    for number, (first, second) in enumerate(itertools.product(succeed + fail, repeat=2)):
        out = tmp_path / f"case{number}"
        last = None
        for args in (first, second):
            if main([*TRAIN, *args, "--out", str(out)]) == 0:
                last = _run_files(out)
                assert json.loads(last["results.json"])["epochs"] == int(args[1])
        if last is None:
            assert not (out / "results.json").exists()
        else:
            after = _run_files(out)
            assert {n: after.get(n) for n in last} == last, (first, second)
            assert set(after) - set(last) <= {"checkpoint.in-progress.pt"}  # a failed run's state, for --resume
            if second is fail[1]:
                assert after == last, (first, second)  # a refused resume writes nothing


def test_a_second_run_on_the_same_folder_is_refused_while_the_first_runs(tmp_path):
    out = tmp_path / "out"
    first = subprocess.Popen(
        [sys.executable, "-m", "gca.cli", *TRAIN, "--epochs", "100000", "--checkpoint-every", "1", "--out", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.time() + 120
        while not (out / "checkpoint.in-progress.pt").exists() and first.poll() is None and time.time() < deadline:
            time.sleep(0.01)  # the first run is training once it wrote a checkpoint
        assert first.poll() is None, first.stderr.read() if first.stderr else ""
        second = subprocess.run(
            [sys.executable, "-m", "gca.cli", *TRAIN, "--epochs", "2", "--out", str(out)],
            capture_output=True,
            text=True,
        )
        assert second.returncode == 2
        lines = second.stderr.strip().splitlines()
        assert len(lines) == 1 and "is in use by another gca run" in lines[0] and str(first.pid) in lines[0]
        assert first.poll() is None  # the first run was not disturbed: its staging and checkpoint are its own
        assert (out / "checkpoint.in-progress.pt").exists()
    finally:
        first.terminate()
        first.wait(60)
    # once the first has ended, the folder is free again
    assert main([*TRAIN, "--epochs", "2", "--out", str(out)]) == 0
    assert not (out / ".gca-lock").exists()


@pytest.fixture
def small_disk(tmp_path):
    """A 3 MB file system (tmpfs), where the test runs as root and may mount one; skipped otherwise."""
    import os

    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    disk = tmp_path / "disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(disk)], capture_output=True).returncode:
        pytest.skip("this machine does not let the test mount a tmpfs")
    yield disk
    subprocess.run(["umount", "-l", str(disk)], capture_output=True)


@pytest.mark.parametrize("extra", [[], ["--checkpoint-every", "1"]])
def test_a_full_disk_is_one_line_and_keeps_the_previous_run(small_disk, capsys, extra):
    out = small_disk / "out"
    assert main([*TRAIN, "--epochs", "2", "--out", str(out)]) == 0
    before = _run_files(out)
    capsys.readouterr()
    # a 1,024-wide encoder's files (~40 MB) do not fit the 3 MB disk
    assert main([*TRAIN, "--epochs", "2", "--set", "hidden=1024", *extra, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "No space left on device" in err[0] and str(out) in err[0], err
    assert _run_files(out) == before and sorted(p.name for p in out.iterdir()) == sorted(before)


def test_reproduce_refuses_a_folder_another_run_holds(tmp_path, capsys):
    from gca.outputs.folder import hold_folder, release_folder

    held = hold_folder(tmp_path)  # as a running gca reproduce (or train) holds it
    try:
        args = [
            "reproduce",
            "table3",
            "--dataset",
            "Karate",
            "--quick",
            "--runs",
            "1",
            "--baselines",
            "none",
            "--quiet",
            "--out",
            str(tmp_path),
        ]
        assert main(args) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "is in use by another gca run" in err[0], err
        assert not (tmp_path / "runs").exists()
    finally:
        release_folder(held)


def test_write_run_commits_a_runs_files_together_and_drops_the_earlier_runs_others(tmp_path):
    import numpy as np
    import torch

    from gca.outputs.folder import RunOutputs

    out = tmp_path / "run"
    out.mkdir()
    (out / "tsne.png").write_bytes(b"an earlier run's map")
    outputs = RunOutputs(out, tmp_path / "z.csv")
    z = np.arange(6, dtype=np.float32).reshape(3, 2)
    try:
        with outputs:
            plot = outputs.stage_path("loss.png")
            plot.write_bytes(b"this run's curve")
            written = outputs.write_run(z, {"weights": torch.ones(2)}, {"accuracy": 81.5}, ["a", "b", "c"], [plot])
    finally:
        outputs.release()
    assert [p.name for p in written] == ["loss.png", "embeddings.npy", "model.pt", "results.json", "z.csv"]
    assert np.array_equal(np.load(out / "embeddings.npy"), z)
    assert torch.equal(torch.load(out / "model.pt", weights_only=True)["weights"], torch.ones(2))
    assert json.loads((out / "results.json").read_text()) == {"accuracy": 81.5}
    assert (tmp_path / "z.csv").read_text().splitlines()[1].startswith("a,")
    assert not (out / "tsne.png").exists()  # not this run's: a folder holds one run's files
    assert (out / "loss.png").read_bytes() == b"this run's curve"
    assert sorted(p.name for p in out.iterdir()) == ["embeddings.npy", "loss.png", "model.pt", "results.json"]


def test_a_first_run_that_fails_leaves_no_output_folder(tmp_path, capsys):
    """--out made by a run that then fails (a bad dataset, found after the folder was checked) is removed again;
    a folder that existed before the run stays."""
    from gca.cli import main

    out = tmp_path / "new" / "run"
    assert main(["train", "--dataset", str(tmp_path / "missing.npz"), "--out", str(out), "--quiet"]) != 0
    assert not out.exists() and (tmp_path / "new").is_dir()  # the parent it made is left: only the folder goes
    kept = tmp_path / "kept"
    kept.mkdir()
    assert main(["train", "--dataset", str(tmp_path / "missing.npz"), "--out", str(kept), "--quiet"]) != 0
    assert kept.is_dir() and list(kept.iterdir()) == []
    capsys.readouterr()
