"""Every entry read from a checkpoint is checked before use: crafted files give one line naming the file and the entry,
exit status 2 and nothing written, through ``gca train --resume`` and ``gca embed --checkpoint``."""

from __future__ import annotations

import copy
import math

import pytest
import torch

from gca.cli import main
from gca.train.checkpoint import MODEL_FORMAT, TRAINING_FORMAT, CheckpointError, load_checkpoint

TRAIN = [
    "train",
    "--dataset",
    "Karate",
    "--no-eval",
    "--quiet",
    "--seed",
    "3",
    "--set",
    "hidden=8",
    "--set",
    "proj_hidden=8",
    "--set",
    "warmup_steps=0",
]


@pytest.fixture(scope="module")
def sound(tmp_path_factory):
    """A sound training checkpoint (2 epochs, one saved after each) and model checkpoint of the same run."""
    out = tmp_path_factory.mktemp("sound")
    assert main([*TRAIN, "--epochs", "2", "--checkpoint-every", "1", "--out", str(out)]) == 0
    return torch.load(out / "checkpoint.pt", weights_only=True), torch.load(out / "model.pt", weights_only=True)


def _files(folder) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def _set(*keys_and_value):
    """A damage that sets ``state[k1][k2]… = value``."""
    *keys, value = keys_and_value

    def damage(state):
        for key in keys[:-1]:
            state = state[key]
        state[keys[-1]] = value

    return damage


def _drop(*keys):
    def damage(state):
        for key in keys[:-1]:
            state = state[key]
        del state[keys[-1]]

    return damage


def _first_weight(transform):
    def damage(state):
        name = next(iter(state["model"]))
        state["model"][name] = transform(state["model"][name])

    return damage


def _first_moment(key, transform):
    def damage(state):
        moments = state["optimizer"]["state"][0]
        moments[key] = transform(moments[key])

    return damage


def _epoch(epoch, losses):
    def damage(state):
        state["epoch"], state["losses"] = epoch, losses

    return damage


# (damage to a sound training checkpoint, words of the one-line error besides the file's name)
TRAINING_DAMAGE = {
    "format marker only": (lambda s: [s.pop(k) for k in list(s) if k != "format"], "no 'config' entry"),
    "no config": (_drop("config"), "no 'config' entry"),
    "config a list": (_set("config", [1, 2]), "'config' is [1, 2], not a table of settings"),
    "config value of the wrong type": (_set("config", "hidden", "wide"), "'config' is not a valid configuration"),
    "in_channels text": (_set("in_channels", "many"), "'in_channels' is 'many', not a whole number ≥ 1"),
    "in_channels a bool": (_set("in_channels", True), "'in_channels' is True"),
    "losses as text": (_set("losses", ["0.5", "0.4"]), "'losses[0]' is '0.5', not a finite number"),
    "a loss NaN": (_set("losses", [0.5, math.nan]), "'losses[1]' is nan, not a finite number"),
    "a loss infinite": (_set("losses", [math.inf, 0.5]), "'losses[0]' is inf"),
    "losses not a list": (_set("losses", 0.5), "'losses' is 0.5, not a list of numbers"),
    "no losses": (_drop("losses"), "no 'losses' entry"),
    "fewer losses than epochs": (_set("losses", [0.5]), "'losses' holds 1 value for 2 finished epochs"),
    "epoch negative": (_epoch(-1, []), "'epoch' is -1, not a whole number ≥ 0"),
    "epoch fractional": (_epoch(1.5, [0.5]), "'epoch' is 1.5, not a whole number"),
    "epoch a bool": (_epoch(True, [0.5]), "'epoch' is True, not a whole number"),
    "epoch beyond its config": (_epoch(3, [0.5, 0.4, 0.3]), "'epoch' is 3, beyond the 2 epochs of its own config"),
    "no epoch": (_drop("epoch"), "no 'epoch' entry"),
    "train_seconds NaN": (_set("train_seconds", math.nan), "'train_seconds' is nan, not a finite number ≥ 0"),
    "train_seconds negative": (_set("train_seconds", -1.0), "'train_seconds' is -1.0"),
    "no optimizer": (_drop("optimizer"), "no 'optimizer' entry"),
    "optimizer a list": (_set("optimizer", [1]), "'optimizer' is [1], not an optimiser state"),
    "no optimizer state": (_drop("optimizer", "state"), "no 'optimizer.state' entry"),
    "no parameter groups": (_set("optimizer", "param_groups", []), "'optimizer.param_groups' is []"),
    "a moment NaN": (_first_moment("exp_avg", lambda t: t * math.nan), "'optimizer.state[0].exp_avg' holds values"),
    "a moment as text": (_first_moment("exp_avg_sq", lambda t: "big"), "'optimizer.state[0].exp_avg_sq' is 'big'"),
    "a step count negative": (
        _first_moment("step", lambda t: t * 0 - 1),
        "'optimizer.state[0].step' is a tensor holding -1.0, not a count of updates",
    ),
    "a learning rate NaN": (_set("optimizer", "param_groups", 0, "lr", math.nan), "'optimizer.param_groups[0].lr'"),
    "a weight NaN": (_first_weight(lambda t: t * math.nan), "holds values that are not finite"),
    "a weight as a list": (_first_weight(lambda t: t.tolist()), "not a dense tensor"),
    "no weights": (_set("model", {}), "'model' holds no weights"),
    "no rng": (_drop("rng"), "no 'rng' entry"),
    "python's generator state garbage": (_set("rng", "python", [3, [1, 2], None]), "'rng.python' is not a state"),
    "numpy's generator keys out of range": (
        lambda s: s["rng"]["numpy"].__setitem__("keys", s["rng"]["numpy"]["keys"] - 2**40),
        "'rng.numpy' is not a state of NumPy's generator",
    ),
    "torch's generator state cut short": (_set("rng", "torch", torch.zeros(8, dtype=torch.uint8)), "'rng.torch'"),
    "no graph fingerprint": (_drop("graph"), "no 'graph' entry"),
    "graph fingerprint a number": (_set("graph", 7), "'graph' is 7, not a fingerprint"),
    "batches a list": (_set("batches", [1]), "'batches' is [1], not a table"),
}

# Damage that only the run resuming the file can see: its weights and moments must fit the model of its settings.
FIT_DAMAGE = {
    "a weight of another shape": (_first_weight(lambda t: torch.zeros(3, 3)), "of shape"),
    "a moment of another shape": (_first_moment("exp_avg", lambda t: torch.zeros(3, 3)), "exp_avg of parameter 0"),
    "another optimiser setting": (_set("optimizer", "param_groups", 0, "amsgrad", True), "amsgrad=True"),
    "the generator state cut short": (_set("rng", "generator", torch.zeros(8, dtype=torch.uint8)), "rng.generator"),
}


def _resume(tmp_path, capsys, state) -> tuple[list[str], dict, dict]:
    out = tmp_path / "out"
    out.mkdir()
    torch.save(state, out / "checkpoint.pt")
    before = _files(out)
    capsys.readouterr()
    code = main([*TRAIN, "--epochs", "4", "--checkpoint-every", "1", "--resume", "--out", str(out)])
    assert code == 2
    return capsys.readouterr().err.strip().splitlines(), before, _files(out)


@pytest.mark.parametrize("case", list(TRAINING_DAMAGE))
def test_a_damaged_training_checkpoint_is_one_line_and_writes_nothing(tmp_path, capsys, sound, case):
    damage, words = TRAINING_DAMAGE[case]
    state = copy.deepcopy(sound[0])
    damage(state)
    err, before, after = _resume(tmp_path, capsys, state)
    path = tmp_path / "out" / "checkpoint.pt"
    assert len(err) == 1 and err[0].startswith(f"gca: error: {path} is a damaged gca checkpoint ("), err
    assert words in err[0], err
    assert after == before  # nothing copied, written or removed


@pytest.mark.parametrize("case", list(FIT_DAMAGE))
def test_a_training_checkpoint_that_does_not_fit_the_model_is_refused_before_anything_is_written(
    tmp_path, capsys, sound, case
):
    damage, words = FIT_DAMAGE[case]
    state = copy.deepcopy(sound[0])
    damage(state)
    err, before, after = _resume(tmp_path, capsys, state)
    path = tmp_path / "out" / "checkpoint.pt"
    assert len(err) == 1 and err[0].startswith(f"gca: error: cannot resume from {path}: "), err
    assert words in err[0], err
    assert after == before


def test_the_sound_checkpoints_pass(tmp_path, capsys, sound):
    """The oracle for the damage above: the undamaged files resume and embed."""
    out = tmp_path / "out"
    out.mkdir()
    torch.save(sound[0], out / "checkpoint.pt")
    assert main([*TRAIN, "--epochs", "3", "--resume", "--out", str(out)]) == 0
    assert "resuming from" in capsys.readouterr().err
    torch.save(sound[1], tmp_path / "model.pt")
    assert (
        main(
            ["embed", "--checkpoint", str(tmp_path / "model.pt"), "--dataset", "Karate", "--out", str(tmp_path / "emb")]
        )
        == 0
    )


# (damage to a sound model checkpoint, words of the one-line error besides the file's name)
MODEL_DAMAGE = {
    "format marker only": (lambda s: [s.pop(k) for k in list(s) if k != "format"], "no 'config' entry"),
    "config a number": (_set("config", 3), "'config' is 3, not a table of settings"),
    "config with an unknown key": (
        _set("config", "wings", 2),
        "'config' has a setting this version of gca does not know: 'wings'",
    ),
    "losses as text": (_set("losses", ["a", "b"]), "'losses[0]' is 'a', not a finite number"),
    "a loss NaN": (_set("losses", [0.5, math.nan]), "'losses[1]' is nan"),
    "a loss a bool": (_set("losses", [True, 0.5]), "'losses[0]' is True"),
    "losses a tensor": (_set("losses", torch.ones(2)), "'losses' is a tensor of shape (2,), not a list"),
    "no losses": (_drop("losses"), "no 'losses' entry"),
    "in_channels zero": (_set("in_channels", 0), "'in_channels' is 0, not a whole number ≥ 1"),
    "in_channels fractional": (_set("in_channels", 34.0), "'in_channels' is 34.0"),
    "a weight NaN": (_first_weight(lambda t: t * math.nan), "holds values that are not finite"),
    "a weight infinite": (_first_weight(lambda t: t + math.inf), "holds values that are not finite"),
    "provenance a tensor": (_set("provenance", torch.ones(2)), "'provenance' is a tensor of shape (2,), not a table"),
    "provenance holding a NaN": (_set("provenance", "started", math.nan), "not a table of plain values"),
}


@pytest.mark.parametrize("case", list(MODEL_DAMAGE))
def test_a_damaged_model_checkpoint_is_one_line_and_embeds_nothing(tmp_path, capsys, sound, case):
    damage, words = MODEL_DAMAGE[case]
    state = copy.deepcopy(sound[1])
    damage(state)
    torch.save(state, tmp_path / "bad.pt")
    out = tmp_path / "emb"
    capsys.readouterr()
    assert main(["embed", "--checkpoint", str(tmp_path / "bad.pt"), "--dataset", "Karate", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"gca: error: {tmp_path / 'bad.pt'} is a damaged gca checkpoint ("), err
    assert words in err[0], err
    assert not out.exists()  # nothing written: the folder the run made is gone too


def test_the_library_loader_checks_the_same_entries(tmp_path, sound):
    """GCA.load and load_checkpoint read through the same check: no KeyError or ValueError from a crafted file."""
    from gca.train.estimator import GCA

    for fmt in (MODEL_FORMAT, TRAINING_FORMAT):
        torch.save({"format": fmt}, tmp_path / "marker.pt")
        for load in (load_checkpoint, lambda p: GCA.load(p, device="cpu")):
            with pytest.raises(CheckpointError, match=r"marker\.pt is a damaged gca checkpoint \(no 'config' entry\)"):
                load(tmp_path / "marker.pt")
    state = copy.deepcopy(sound[1])
    state["losses"] = ["a"]
    torch.save(state, tmp_path / "text.pt")
    with pytest.raises(CheckpointError, match=r"'losses\[0\]' is 'a'"):
        GCA.load(tmp_path / "text.pt", device="cpu")
    torch.save(sound[1], tmp_path / "good.pt")
    assert GCA.load(tmp_path / "good.pt", device="cpu").losses == sound[1]["losses"]


@pytest.mark.parametrize(
    ("batches", "words"),
    [
        ({}, "it was written by full-graph training, not mini-batch training"),
        (
            {"kind": "neighbor", "world_size": 2},
            "it was written by a run of 2 processes; resume it with as many for an exact continuation",
        ),
    ],
)
def test_a_mini_batch_position_of_another_kind_is_refused_before_anything_is_written(tmp_path, capsys, batches, words):
    out = tmp_path / "out"
    mini = [*TRAIN, "--set", "batch_size=8"]
    assert main([*mini, "--epochs", "1", "--checkpoint-every", "1", "--out", str(out)]) == 0
    state = torch.load(out / "checkpoint.pt", weights_only=True)
    state["batches"] = batches
    torch.save(state, out / "checkpoint.pt")
    before = _files(out)
    capsys.readouterr()
    assert main([*mini, "--epochs", "2", "--resume", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"gca: error: cannot resume from {out / 'checkpoint.pt'}: {words}"]
    assert _files(out) == before


def test_integer_weights_in_a_model_file_are_refused_not_truncated(tmp_path):
    from gca import GCA, GCAConfig
    from gca.datasets import karate_club
    from gca.train.checkpoint import CheckpointError

    estimator = GCA(GCAConfig(epochs=1, hidden=8, proj_hidden=8), device="cpu")
    estimator.fit(karate_club())
    state = estimator.state()
    name = next(iter(state["model"]))
    state["model"][name] = state["model"][name].long()
    torch.save(state, tmp_path / "m.pt")
    with pytest.raises(CheckpointError, match=f"{name} holds int64 values where the model keeps floating-point"):
        GCA.load(tmp_path / "m.pt", device="cpu")
