"""Atomic checkpoints, resuming after kill -9, and safe loading (issue 5, part 3)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import torch

from gca.cli import main
from gca.train.checkpoint import CheckpointError, load_checkpoint
from gca.train.estimator import GCA

TRAIN = ["train", "--dataset", "Karate", "--no-eval", "--quiet", "--seed", "7", "--set", "warmup_steps=0"]


def test_kill_9_then_resume_gives_the_uninterrupted_result(tmp_path):
    epochs = "300"
    killed = tmp_path / "killed"
    assert main([*TRAIN, "--epochs", "3", "--out", str(killed)]) == 0  # a complete earlier run in the folder
    earlier = {name: (killed / name).read_bytes() for name in ("results.json", "embeddings.npy", "model.pt")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "gca.cli", *TRAIN, "--epochs", epochs, "--checkpoint-every", "10", "--out", str(killed)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    checkpoint = killed / "checkpoint.in-progress.pt"
    deadline = time.time() + 120
    while not checkpoint.exists() and proc.poll() is None and time.time() < deadline:
        time.sleep(0.005)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL, "the run ended before it could be killed"
    state = load_checkpoint(checkpoint)  # never half-written: it loads whatever moment the kill came
    assert 0 < state["epoch"] < int(epochs)
    assert {name: (killed / name).read_bytes() for name in earlier} == earlier  # the earlier run is whole

    assert main([*TRAIN, "--epochs", epochs, "--checkpoint-every", "10", "--resume", "--out", str(killed)]) == 0
    straight = tmp_path / "straight"
    assert main([*TRAIN, "--epochs", epochs, "--out", str(straight)]) == 0
    resumed_losses = GCA.load(killed / "model.pt", device="cpu").losses
    straight_losses = GCA.load(straight / "model.pt", device="cpu").losses
    assert len(resumed_losses) == int(epochs) and resumed_losses == straight_losses
    np.testing.assert_array_equal(np.load(killed / "embeddings.npy"), np.load(straight / "embeddings.npy"))
    a, b = (json.loads((d / "results.json").read_text()) for d in (killed, straight))
    assert a["final_loss"] == b["final_loss"]
    assert not checkpoint.exists() and load_checkpoint(killed / "checkpoint.pt")["epoch"] == int(epochs)


def test_resume_refuses_other_settings(tmp_path, capsys):
    out = str(tmp_path)
    assert main([*TRAIN, "--epochs", "4", "--checkpoint-every", "2", "--out", out]) == 0
    assert main([*TRAIN, "--epochs", "4", "--resume", "--set", "tau=0.9", "--out", out]) == 2
    err = capsys.readouterr().err
    assert "tau=" in err and "Traceback" not in err


def test_resume_without_checkpoint_starts_from_scratch(tmp_path, capsys):
    assert main([*TRAIN, "--epochs", "3", "--resume", "--out", str(tmp_path)]) == 0
    assert "no checkpoint yet" in capsys.readouterr().err


class _Payload:
    """Unpickling this calls os.system — what a crafted checkpoint would do."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_malicious_checkpoint_runs_nothing(tmp_path, capsys):
    marker = tmp_path / "pwned"
    evil = tmp_path / "evil.pt"
    torch.save({"format": "gca-checkpoint-1", "model": _Payload(str(marker))}, evil)
    with pytest.raises(CheckpointError, match="nothing in it was run"):
        load_checkpoint(evil)
    assert main(["embed", "--checkpoint", str(evil), "--dataset", "Karate", "--out", str(tmp_path / "o")]) == 2
    assert "not a readable gca checkpoint" in capsys.readouterr().err
    assert not marker.exists()


def test_truncated_and_foreign_checkpoints_are_clear_errors(tmp_path):
    good = tmp_path / "run"
    assert main([*TRAIN, "--epochs", "2", "--out", str(good)]) == 0
    blob = (good / "model.pt").read_bytes()
    (tmp_path / "truncated.pt").write_bytes(blob[: len(blob) // 2])
    (tmp_path / "text.pt").write_text("hello")
    torch.save({"weights": torch.zeros(2)}, tmp_path / "foreign.pt")
    for name, words in (
        ("truncated.pt", "not a readable"),
        ("text.pt", "not a readable"),
        ("foreign.pt", "not a gca checkpoint"),
        ("absent.pt", "does not exist"),
    ):
        with pytest.raises(CheckpointError, match=words):
            GCA.load(tmp_path / name, device="cpu")


def test_embed_with_a_trained_encoder(tmp_path, capsys):
    run = tmp_path / "run"
    assert main([*TRAIN, "--epochs", "3", "--out", str(run)]) == 0
    out = tmp_path / "emb"
    assert main(["embed", "--checkpoint", str(run / "model.pt"), "--dataset", "Karate", "--out", str(out)]) == 0
    np.testing.assert_allclose(np.load(out / "embeddings.npy"), np.load(run / "embeddings.npy"), atol=1e-6)
    # a training checkpoint serves as well
    assert main([*TRAIN, "--epochs", "4", "--checkpoint-every", "2", "--out", str(run)]) == 0
    assert main(["embed", "--checkpoint", str(run / "checkpoint.pt"), "--dataset", "Karate", "--out", str(out)]) == 0
    np.testing.assert_allclose(np.load(out / "embeddings.npy"), np.load(run / "embeddings.npy"), atol=1e-6)


def test_embed_feature_width_mismatch(tmp_path, capsys):
    run = tmp_path / "run"
    assert main([*TRAIN, "--epochs", "2", "--out", str(run)]) == 0
    (tmp_path / "e.csv").write_text("0,1\n1,2\n")
    np.save(tmp_path / "x.npy", np.ones((3, 5), dtype=np.float32))
    args = [
        "embed",
        "--checkpoint",
        str(run / "model.pt"),
        "--edges",
        str(tmp_path / "e.csv"),
        "--features",
        str(tmp_path / "x.npy"),
        "--out",
        str(tmp_path / "o"),
    ]
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "5 features per node" in err[0] and "trained on 34" in err[0]


def test_resume_refuses_another_graph_of_the_same_width(tmp_path, capsys):
    """Same settings and the same 34 feature columns, but other edges: resuming would silently mix two graphs."""
    out = str(tmp_path / "run")
    assert main([*TRAIN, "--epochs", "4", "--checkpoint-every", "2", "--out", out]) == 0
    np.save(tmp_path / "x.npy", np.eye(34, dtype=np.float32))
    (tmp_path / "e.csv").write_text("".join(f"{i},{i + 1}\n" for i in range(33)))  # a path, not the club
    other = [
        "train",
        "--edges",
        str(tmp_path / "e.csv"),
        "--features",
        str(tmp_path / "x.npy"),
        "--no-eval",
        "--quiet",
        "--seed",
        "7",
        "--set",
        "warmup_steps=0",
        "--config",
        str(tmp_path / "karate.toml"),
    ]
    from gca.config import shipped_config

    (tmp_path / "karate.toml").write_text(
        "".join(f"{k} = {v!r}\n".replace("'", '"') for k, v in shipped_config("Karate").items())
    )
    capsys.readouterr()
    assert main([*other, "--epochs", "4", "--resume", "--out", out]) == 2
    err = capsys.readouterr().err.strip().splitlines()  # refused before it is copied: no "resuming from" note
    assert len(err) == 1 and err[0].startswith(
        f"gca: error: cannot resume from {out}/checkpoint.pt: the checkpoint was made on another graph"
    ), err
    assert not (tmp_path / "run" / "checkpoint.in-progress.pt").exists()
    # the graph it was made on resumes
    assert main([*TRAIN, "--epochs", "6", "--checkpoint-every", "2", "--resume", "--out", out]) == 0


def test_a_crafted_small_checkpoint_claiming_a_huge_model_is_refused_before_allocating(tmp_path):
    run = tmp_path / "run"
    assert main([*TRAIN, "--epochs", "1", "--out", str(run)]) == 0
    state = torch.load(run / "model.pt", weights_only=True)
    state["config"]["hidden"] = 65536  # a 65,536-wide encoder: gigabytes, if it were built before the check
    state["in_channels"] = 10**6
    torch.save(state, tmp_path / "huge.pt")
    assert (tmp_path / "huge.pt").stat().st_size < 100_000
    import resource

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(CheckpointError, match="huge.pt is a damaged gca checkpoint.*shape"):
        GCA.load(tmp_path / "huge.pt", device="cpu")
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 200_000  # kB: nothing near 2^36 bytes


@pytest.mark.parametrize(
    "damage",
    [
        lambda s: s.pop("model"),
        lambda s: s.__setitem__("model", [1, 2]),
        lambda s: s.__setitem__("in_channels", "many"),
        lambda s: s["config"].__setitem__("hidden", "wide"),
        lambda s: s["model"].pop(next(iter(s["model"]))),
    ],
)
def test_checkpoints_with_missing_keys_or_wrong_types_are_one_line(tmp_path, capsys, damage):
    run = tmp_path / "run"
    assert main([*TRAIN, "--epochs", "1", "--out", str(run)]) == 0
    state = torch.load(run / "model.pt", weights_only=True)
    damage(state)
    torch.save(state, tmp_path / "bad.pt")
    capsys.readouterr()
    assert (
        main(["embed", "--checkpoint", str(tmp_path / "bad.pt"), "--dataset", "Karate", "--out", str(tmp_path / "o")])
        == 2
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "bad.pt is a damaged gca checkpoint" in err[0], err


def test_a_resumed_run_reads_and_checks_its_checkpoint_once_and_continues_as_from_the_file(tmp_path, monkeypatch):
    """``gca train --resume`` reads the checkpoint once (the check before anything is written is the state training
    continues from) and fingerprints the graph once; a :class:`Resume` continues a fit exactly as ``resume=True`` on
    its file does, and a fit of other settings checks it anew and refuses it."""
    import gca.graph.graph as graphs
    import gca.train.checkpoint as checkpoint

    out = tmp_path / "run"
    assert main([*TRAIN, "--epochs", "4", "--checkpoint-every", "2", "--out", str(out)]) == 0
    reads, load = [], checkpoint.load_checkpoint
    prints, fingerprint = [], graphs.Graph.fingerprint
    monkeypatch.setattr(checkpoint, "load_checkpoint", lambda path: reads.append(path) or load(path))
    monkeypatch.setattr(graphs.Graph, "fingerprint", lambda graph: prints.append(1) or fingerprint(graph))
    assert main([*TRAIN, "--epochs", "6", "--checkpoint-every", "2", "--resume", "--out", str(out)]) == 0
    assert reads == [out / "checkpoint.pt"] and len(prints) == 1
    monkeypatch.undo()
    assert load_checkpoint(out / "checkpoint.pt")["epoch"] == 6

    from gca.config import build_config
    from gca.datasets import load_dataset

    data = load_dataset("Karate").data
    config = build_config("Karate", overrides={"epochs": 4, "warmup_steps": 0, "seed": 3})
    GCA(config, device="cpu").fit(data, checkpoint=tmp_path / "a.pt", checkpoint_every=2)
    longer = GCA(config.replace(epochs=6), device="cpu")
    prepared = longer.prepare(data)
    checked = checkpoint.ResumeCheck(longer, prepared)(tmp_path / "a.pt")
    from_checked = longer.fit(prepared, checkpoint=tmp_path / "b.pt", resume=checked).embedding_
    from_file = GCA(config.replace(epochs=6), device="cpu").fit(data, checkpoint=tmp_path / "a.pt", resume=True)
    assert torch.equal(from_checked, from_file.embedding_) and longer.losses == from_file.losses
    with pytest.raises(CheckpointError, match="tau="):
        GCA(config.replace(epochs=6, tau=0.9), device="cpu").fit(prepared, resume=checked)
