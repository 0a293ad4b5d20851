"""Which run a checkpoint in --out belongs to: a refused --resume writes nothing, a run never adopts an in-progress
checkpoint it did not write, and after a run commits the folder holds no checkpoint of another run."""

from __future__ import annotations

import json

import pytest
import torch

from gca.cli import main
from gca.outputs.folder import IN_PROGRESS, OutputError, RunOutputs

TRAIN = ["train", "--dataset", "Karate", "--no-eval", "--quiet", "--seed", "5", "--set", "warmup_steps=0"]


def _files(folder) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def _hidden_and_epochs(out, name: str) -> tuple[int, int]:
    if name == "results.json":
        record = json.loads((out / name).read_text())
        return record["config"]["hidden"], record["epochs"]
    state = torch.load(out / name, weights_only=True)
    return state["config"]["hidden"], state.get("epoch", len(state["losses"]))


def test_a_refused_resume_leaves_nothing_that_a_later_plain_run_could_adopt(tmp_path, capsys):
    """The reported sequence: a hidden=8 run with checkpoints, a refused hidden=4 --resume, a plain hidden=4 run, and
    a --resume of that plain run."""
    out = tmp_path / "out"
    assert main([*TRAIN, "--epochs", "2", "--set", "hidden=8", "--checkpoint-every", "1", "--out", str(out)]) == 0
    first = _files(out)
    assert sorted(first) == ["checkpoint.pt", "embeddings.npy", "model.pt", "results.json"]
    capsys.readouterr()

    assert main([*TRAIN, "--epochs", "5", "--set", "hidden=4", "--resume", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"gca: error: cannot resume from {out / 'checkpoint.pt'}: the checkpoint was made with hidden=8 "
        "but this run has hidden=4; resume with the same settings or start without --resume"
    ]
    assert _files(out) == first  # decided before anything was copied: no checkpoint.in-progress.pt

    assert main([*TRAIN, "--epochs", "5", "--set", "hidden=4", "--out", str(out)]) == 0
    assert sorted(_files(out)) == ["embeddings.npy", "model.pt", "results.json"]  # the hidden=8 checkpoint is gone
    assert _hidden_and_epochs(out, "results.json") == _hidden_and_epochs(out, "model.pt") == (4, 5)
    capsys.readouterr()

    assert main([*TRAIN, "--epochs", "5", "--set", "hidden=4", "--resume", "--out", str(out)]) == 0
    assert f"no checkpoint yet in {out}" in capsys.readouterr().err


@pytest.mark.parametrize("every", [0, 2])
def test_a_plain_run_never_adopts_an_in_progress_checkpoint_it_did_not_write(tmp_path, every):
    """An interrupted hidden=8 run left its in-progress checkpoint; a plain hidden=4 run of 4 epochs commits with
    checkpoint.pt its own (written at epochs 2 and 4) or, without --checkpoint-every, with none."""
    out = tmp_path / "out"
    assert main([*TRAIN, "--epochs", "2", "--set", "hidden=8", "--checkpoint-every", "1", "--out", str(out)]) == 0
    (out / IN_PROGRESS).write_bytes((out / "checkpoint.pt").read_bytes())  # as a killed run leaves it
    extra = ["--checkpoint-every", str(every)] if every else []
    assert main([*TRAIN, "--epochs", "4", "--set", "hidden=4", *extra, "--out", str(out)]) == 0
    files = sorted(_files(out))
    if every:
        assert files == ["checkpoint.pt", "embeddings.npy", "model.pt", "results.json"]
        assert _hidden_and_epochs(out, "checkpoint.pt") == (4, 4)
    else:
        assert files == ["embeddings.npy", "model.pt", "results.json"]
    assert _hidden_and_epochs(out, "results.json") == (4, 4)


def test_a_failed_plain_run_keeps_an_interrupted_runs_progress_for_resume(tmp_path, capsys):
    """A plain run without checkpoints removes another run's in-progress file only when it commits: failing, it
    leaves it, and --resume with that run's settings continues it."""
    out = tmp_path / "out"
    assert main([*TRAIN, "--epochs", "2", "--checkpoint-every", "1", "--out", str(out)]) == 0
    (out / "checkpoint.pt").rename(out / IN_PROGRESS)  # an interrupted run's progress (no complete run)
    for name in ("results.json", "embeddings.npy", "model.pt"):
        (out / name).unlink()
    progress = (out / IN_PROGRESS).read_bytes()
    diverge = ["--set", "lr=10", "--set", "warmup_steps=0", "--set", "tau=0.01"]
    assert main([*TRAIN, "--epochs", "3", *diverge, "--out", str(out)]) == 2
    assert _files(out) == {IN_PROGRESS: progress}
    capsys.readouterr()
    assert main([*TRAIN, "--epochs", "3", "--resume", "--out", str(out)]) == 0
    assert f"resuming from {out / IN_PROGRESS}" in capsys.readouterr().err
    assert sorted(_files(out)) == ["checkpoint.pt", "embeddings.npy", "model.pt", "results.json"]


def test_a_resumed_run_keeps_the_checkpoint_it_continued_from(tmp_path):
    """Resumed without --checkpoint-every, the run's checkpoint.pt is the state it continued from (same settings)."""
    out = tmp_path / "out"
    assert main([*TRAIN, "--epochs", "2", "--checkpoint-every", "2", "--out", str(out)]) == 0
    continued = (out / "checkpoint.pt").read_bytes()
    assert main([*TRAIN, "--epochs", "3", "--resume", "--out", str(out)]) == 0
    assert sorted(_files(out)) == ["checkpoint.pt", "embeddings.npy", "model.pt", "results.json"]
    assert (out / "checkpoint.pt").read_bytes() == continued
    assert json.loads((out / "results.json").read_text())["epochs"] == 3


def _outputs_with_a_copy(tmp_path) -> tuple[RunOutputs, bytes]:
    out, held = tmp_path / "out", b"the complete run's training state"
    out.mkdir()
    (out / "checkpoint.pt").write_bytes(held)
    outputs = RunOutputs(out)
    checked = []
    path, note = outputs.training_checkpoint(True, 0, check=checked.append)
    assert path == out / IN_PROGRESS and note == f"resuming from {out / 'checkpoint.pt'}"
    assert checked == [out / "checkpoint.pt"] and (out / IN_PROGRESS).read_bytes() == held
    return outputs, held


def test_a_resume_that_fails_before_its_first_checkpoint_removes_its_copy(tmp_path):
    outputs, held = _outputs_with_a_copy(tmp_path)
    with pytest.raises(RuntimeError), outputs:
        raise RuntimeError("training failed before writing a checkpoint")
    outputs.release()
    assert _files(tmp_path / "out") == {"checkpoint.pt": held}  # the copy held nothing checkpoint.pt does not


def test_a_resume_that_fails_after_writing_a_checkpoint_keeps_it(tmp_path):
    outputs, held = _outputs_with_a_copy(tmp_path)
    with pytest.raises(RuntimeError), outputs:
        (tmp_path / "out" / IN_PROGRESS).write_bytes(b"two more epochs")
        raise RuntimeError("training failed later")
    outputs.release()
    assert _files(tmp_path / "out") == {"checkpoint.pt": held, IN_PROGRESS: b"two more epochs"}


def test_a_refusing_check_copies_nothing(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "checkpoint.pt").write_bytes(b"state")

    def refuse(path):
        raise OutputError(f"{path} does not fit")

    outputs = RunOutputs(out)
    try:
        with pytest.raises(OutputError, match="checkpoint.pt does not fit"):
            outputs.training_checkpoint(True, 1, check=refuse)
    finally:
        outputs.release()
    assert _files(out) == {"checkpoint.pt": b"state"}


def test_a_commit_removes_an_in_progress_checkpoint_the_run_does_not_own(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "checkpoint.pt").write_bytes(b"an earlier run's")
    (out / IN_PROGRESS).write_bytes(b"an interrupted run's")
    outputs = RunOutputs(out)
    try:
        assert outputs.training_checkpoint(False, 0) == (out / IN_PROGRESS, None)
        assert (out / IN_PROGRESS).exists()  # untouched while the run trains
        with outputs:
            outputs.write("results.json", lambda f: f.write(b"{}"))
            outputs.commit()
    finally:
        outputs.release()
    assert _files(out) == {"results.json": b"{}"}


def test_embed_refuses_a_folder_holding_a_runs_in_progress_checkpoint(tmp_path, capsys):
    run = tmp_path / "run"
    assert main([*TRAIN, "--epochs", "1", "--out", str(run)]) == 0
    out = tmp_path / "emb"
    out.mkdir()
    (out / IN_PROGRESS).write_bytes(b"a training run's")
    capsys.readouterr()
    assert main(["embed", "--checkpoint", str(run / "model.pt"), "--dataset", "Karate", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"gca: error: --out {out} holds another run's {IN_PROGRESS}; give gca embed a folder of its own"]
    assert _files(out) == {IN_PROGRESS: b"a training run's"}
