"""The checkpoint file: its two formats, atomic save, safe load, and the checks of every entry that is read from it.

Two kinds of file, both plain dicts of tensors and Python values (so ``torch.load(weights_only=True)`` reads
them and a crafted file cannot run code):

* a **model** checkpoint (``model.pt``): the configuration, the input width, the weights, the losses per epoch and,
  optionally, where the model came from (``provenance``: :mod:`gca.provenance`);
* a **training** checkpoint (``checkpoint.pt``): a model checkpoint plus everything needed to continue exactly —
  the epoch, the training time, Adam's moments, every random-number generator's state, the batch source's
  position and a fingerprint of the graph trained on.

:func:`load_checkpoint` checks every entry ever read from a file (:func:`check_checkpoint`) before returning it; a
file that fails is a one-line :class:`CheckpointError` naming file and entry, never a later ``KeyError`` or
``ValueError``.
"""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..errors import UserError
from ..io import atomic_write

MODEL_FORMAT = "gca-checkpoint-1"
TRAINING_FORMAT = "gca-training-checkpoint-1"


class CheckpointError(UserError, RuntimeError):
    """A checkpoint cannot be read, or does not fit this run; the message is one line meant for the user."""


def save_checkpoint(path: str | Path, state: dict[str, Any]) -> None:
    """``torch.save`` through a temporary file and a rename: a kill leaves the old checkpoint or the new one.

    Parameters
    ----------
    path
        The file to write (replaced).
    state
        The checkpoint: tensors and plain Python values only (:func:`model_state`, :func:`training_state`).
    """
    atomic_write(path, lambda f: torch.save(state, f))


def load_checkpoint(path: str | Path) -> dict[str, Any]:
    """Read a gca checkpoint with ``torch.load(weights_only=True)`` (a crafted file cannot run code) and return it
    checked, its tensors on the CPU; truncated, foreign, crafted or damaged files (any entry missing, of the wrong type
    or not finite: :func:`check_checkpoint`) raise :class:`CheckpointError`.

    Parameters
    ----------
    path
        A file written by :func:`save_checkpoint`.
    """
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"checkpoint {path} does not exist" if not path.exists() else f"{path} is not a file")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - any unreadable file is the same user error
        text = str(exc)
        if "GLOBAL" in text:  # the unpickler met a reference to code (a class or function) and refused it
            reason = "it refers to Python objects other than tensors and plain values, which are never loaded"
        else:
            reason = f"truncated, or not written by torch.save: {type(exc).__name__}"
        raise CheckpointError(f"{path} is not a readable gca checkpoint ({reason}); nothing in it was run") from None
    if not isinstance(state, dict) or state.get("format") not in (MODEL_FORMAT, TRAINING_FORMAT):
        raise CheckpointError(f"{path} is not a gca checkpoint (no gca format marker)")
    return check_checkpoint(state, path)


# ---------------------------------------------------------------------------------------------------------------
# Checking what a file holds: one place for every entry that is read from a checkpoint


def _damaged(path: str | Path, problem: str) -> CheckpointError:
    return CheckpointError(f"{path} is a damaged gca checkpoint ({_one_line(problem)})")


def _one_line(text: Any) -> str:
    return " ".join(str(text).split())


def _shown(value: Any) -> str:
    """A short description of a value found in a file: its repr, cut short when long."""
    if isinstance(value, torch.Tensor):
        text = f"a tensor of shape {tuple(value.shape)}" if value.numel() != 1 else f"a tensor holding {value.item()!r}"
    else:
        text = repr(value)
    return text if len(text) <= 40 else text[:37] + "…"


def _entry(table: dict, key: str, path: str | Path, where: str = "") -> Any:
    if key not in table:
        raise _damaged(path, f"no '{where}{key}' entry")
    return table[key]


def _count(value: Any, name: str, path: str | Path, low: int = 0) -> int:
    """A whole number ≥ ``low`` (a bool is not one)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise _damaged(path, f"'{name}' is {_shown(value)}, not a whole number ≥ {low}")
    return value


def _finite(value: Any) -> bool:
    """Whether ``value`` is a real number (not a bool) with a finite float value (an int too large for one is not)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def _number(value: Any, name: str, path: str | Path, low: float | None = None) -> None:
    """A finite real number (≥ ``low`` when given)."""
    if not _finite(value) or (low is not None and value < low):
        bound = "" if low is None else f" ≥ {low:g}"
        raise _damaged(path, f"'{name}' is {_shown(value)}, not a finite number{bound}")


def _table(value: Any, name: str, path: str | Path, what: str = "a table") -> dict:
    if not isinstance(value, dict):
        raise _damaged(path, f"'{name}' is {_shown(value)}, not {what}")
    return value


def _tensor(value: Any, name: str, path: str | Path, dtype: torch.dtype | None = None) -> torch.Tensor:
    """A dense tensor (of ``dtype`` when given) whose floating-point values are all finite."""
    if not isinstance(value, torch.Tensor) or value.layout != torch.strided or value.is_meta or value.is_quantized:
        raise _damaged(path, f"'{name}' is {_shown(value)}, not a dense tensor")
    if dtype is not None and value.dtype != dtype:
        raise _damaged(path, f"'{name}' is a {value.dtype} tensor, not {dtype}")
    if (value.is_floating_point() or value.is_complex()) and not bool(torch.isfinite(value).all()):
        raise _damaged(path, f"'{name}' holds values that are not finite")
    return value


def _json_like(value: Any, depth: int = 0) -> bool:
    """Whether ``value`` is made of JSON's values only — text, finite numbers, booleans, ``None``, lists and tables
    with text keys — nested at most 16 deep (what a run's record can copy into its ``results.json``)."""
    if value is None or isinstance(value, (str, bool, int)):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if depth >= 16:
        return False
    if isinstance(value, list):
        return all(_json_like(item, depth + 1) for item in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _json_like(v, depth + 1) for k, v in value.items())
    return False


def check_checkpoint(state: dict[str, Any], path: str | Path) -> dict[str, Any]:
    """``state`` (a checkpoint read from ``path``) when every entry that gca reads from it is sound, else a
    :class:`CheckpointError` of one line naming ``path`` and the entry. Both kinds: ``config`` (a configuration
    :class:`~gca.config.GCAConfig` accepts), ``in_channels`` (≥ 1), ``model`` (a non-empty table of finite
    tensors), ``losses`` (finite numbers), and where present ``user_encoder`` (text), ``feature_names`` (a list of
    text) and ``provenance`` (a table of JSON's plain values). A training checkpoint also: ``epoch`` (0 … its
    config's epochs, one loss each), ``train_seconds`` (finite, ≥ 0), ``graph`` (text), ``batches`` (a table),
    ``optimizer`` (Adam's state: parameter groups of finite settings, per-parameter moments that are finite tensors
    and a step count) and ``rng`` (generator states that the generators accept). Shapes that depend on the run
    resuming it are :func:`check_resume`'s."""
    from dataclasses import fields

    from ..config import GCAConfig  # here: the configuration module is not needed to read a format marker

    config = _table(_entry(state, "config", path), "config", path, "a table of settings")
    known = {f.name for f in fields(GCAConfig)}
    unknown = [k for k in config if k not in known]
    if unknown:
        raise _damaged(path, f"'config' has a setting this version of gca does not know: {_shown(unknown[0])}")
    try:
        GCAConfig.from_saved(config)
    except (TypeError, ValueError, ArithmeticError, UserError) as exc:  # ArithmeticError: an int too large
        raise _damaged(path, f"'config' is not a valid configuration: {exc}") from None
    _count(_entry(state, "in_channels", path), "in_channels", path, low=1)
    weights = _table(_entry(state, "model", path), "model", path, "a table of tensors")
    if not weights:
        raise _damaged(path, "'model' holds no weights")
    for name, value in weights.items():
        if not isinstance(name, str):
            raise _damaged(path, f"'model' has a key {_shown(name)} that is not text")
        _tensor(value, f"model.{name}", path)
    losses = _entry(state, "losses", path)
    if not isinstance(losses, list):
        raise _damaged(path, f"'losses' is {_shown(losses)}, not a list of numbers")
    for number, loss in enumerate(losses):
        _number(loss, f"losses[{number}]", path)
    user = state.get("user_encoder")
    if user is not None and not isinstance(user, str):
        raise _damaged(path, f"'user_encoder' is {_shown(user)}, not the name of a class")
    names = state.get("feature_names")  # optional: the columns' names, where a sparse feature file named them
    if names is not None and not (isinstance(names, list) and all(isinstance(n, str) for n in names)):
        raise _damaged(path, f"'feature_names' is {_shown(names)}, not a list of names")
    provenance = state.get("provenance")  # optional: a file may have none
    if provenance is not None and not (isinstance(provenance, dict) and _json_like(provenance)):
        raise _damaged(path, f"'provenance' is {_shown(provenance)}, not a table of plain values")
    if state["format"] == TRAINING_FORMAT:
        _check_training_entries(state, path, config)
    return state


def _check_training_entries(state: dict[str, Any], path: str | Path, config: dict[str, Any]) -> None:
    epoch = _count(_entry(state, "epoch", path), "epoch", path)
    epochs = config.get("epochs")
    if isinstance(epochs, int) and epoch > epochs:
        raise _damaged(path, f"'epoch' is {_shown(epoch)}, beyond the {epochs} epochs of its own config")
    if len(state["losses"]) != epoch:
        count = len(state["losses"])
        raise _damaged(path, f"'losses' holds {count} value{'' if count == 1 else 's'} for {epoch} finished epochs")
    _number(_entry(state, "train_seconds", path), "train_seconds", path, low=0.0)
    if not isinstance(_entry(state, "graph", path), str):
        raise _damaged(path, f"'graph' is {_shown(state['graph'])}, not a fingerprint")
    batches = _table(_entry(state, "batches", path), "batches", path)
    if not all(isinstance(k, str) for k in batches):
        raise _damaged(path, "'batches' has a key that is not text")
    _check_optimizer(_entry(state, "optimizer", path), path)
    _check_rng(_entry(state, "rng", path), path)


def _check_optimizer(optimizer: Any, path: str | Path) -> None:
    """Adam's ``state_dict()``: parameter groups (finite settings, distinct parameter numbers) and, per parameter,
    a step count and moments that are finite tensors."""
    _table(optimizer, "optimizer", path, "an optimiser state")
    groups = _entry(optimizer, "param_groups", path, "optimizer.")
    if not isinstance(groups, list) or not groups:
        raise _damaged(path, f"'optimizer.param_groups' is {_shown(groups)}, not a list of parameter groups")
    numbers: list[int] = []
    for g, group in enumerate(groups):
        where = f"optimizer.param_groups[{g}]"
        _table(group, where, path, "a parameter group")
        params = _entry(group, "params", path, f"{where}.")
        if not isinstance(params, list):
            raise _damaged(path, f"'{where}.params' is {_shown(params)}, not a list of parameter numbers")
        numbers += [_count(p, f"{where}.params", path) for p in params]
        _number(_entry(group, "lr", path, f"{where}."), f"{where}.lr", path, low=0.0)
        for key, value in group.items():
            if key in ("params", "lr"):
                continue
            for item in value if isinstance(value, (tuple, list)) else (value,):
                if isinstance(item, (int, float)) and not isinstance(item, bool):
                    _number(item, f"{where}.{key}", path)
    if len(set(numbers)) != len(numbers):
        raise _damaged(path, "'optimizer.param_groups' names a parameter twice")
    moments = _table(_entry(optimizer, "state", path, "optimizer."), "optimizer.state", path, "a table")
    for number, entries in moments.items():
        where = f"optimizer.state[{_shown(number)}]"
        if number not in numbers or isinstance(number, bool):
            raise _damaged(path, f"'{where}' is for a parameter that no parameter group holds")
        _table(entries, where, path, "a table of tensors")
        for key, value in entries.items():
            if key == "step":
                step = _tensor(value, f"{where}.step", path) if isinstance(value, torch.Tensor) else value
                count = step.item() if isinstance(step, torch.Tensor) and step.numel() == 1 else step
                if not _finite(count) or count < 0 or count != int(count):
                    raise _damaged(path, f"'{where}.step' is {_shown(value)}, not a count of updates")
            else:
                _tensor(value, f"{where}.{key}", path)


def _check_rng(rng: Any, path: str | Path) -> None:
    """Every generator state, set on a generator of its own kind made for the test (the run's are untouched)."""
    _table(rng, "rng", path, "a table of generator states")
    _tensor(_entry(rng, "generator", path, "rng."), "rng.generator", path, torch.uint8)  # its device: check_resume
    cpu = _tensor(_entry(rng, "torch", path, "rng."), "rng.torch", path, torch.uint8)
    try:
        torch.Generator().set_state(cpu)
    except (RuntimeError, TypeError, ValueError):
        raise _damaged(path, "'rng.torch' is not a state of PyTorch's generator") from None
    cuda = _entry(rng, "cuda", path, "rng.")
    if not isinstance(cuda, list):
        raise _damaged(path, f"'rng.cuda' is {_shown(cuda)}, not a list of generator states")
    for device, value in enumerate(cuda):
        _tensor(value, f"rng.cuda[{device}]", path, torch.uint8)
    python = _entry(rng, "python", path, "rng.")
    try:
        version, internal, gauss = python
        random.Random().setstate((version, tuple(internal), gauss))
    except (TypeError, ValueError, IndexError, OverflowError):
        raise _damaged(path, "'rng.python' is not a state of Python's generator") from None
    numpy = _table(_entry(rng, "numpy", path, "rng."), "rng.numpy", path, "a table")
    keys = _tensor(_entry(numpy, "keys", path, "rng.numpy."), "rng.numpy.keys", path, torch.int64)
    try:
        if keys.shape != (624,) or bool((keys < 0).any()) or bool((keys >= 2**32).any()):  # MT19937's 624 words
            raise ValueError("keys out of range")
        parts = [_entry(numpy, k, path, "rng.numpy.") for k in ("name", "pos", "has_gauss", "cached")]
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in parts[1:]):
            raise TypeError("not numbers")
        name, pos, has_gauss, cached = parts
        np.random.RandomState().set_state((name, keys.numpy().astype(np.uint32), pos, has_gauss, cached))  # noqa: NPY002
    except (TypeError, ValueError, IndexError, OverflowError):
        raise _damaged(path, "'rng.numpy' is not a state of NumPy's generator") from None


# ---------------------------------------------------------------------------------------------------------------
# Writing


def model_state(
    config: dict[str, Any],
    in_channels: int,
    model: torch.nn.Module,
    losses: list[float],
    user_encoder: str | None = None,
    provenance: dict[str, Any] | None = None,
) -> dict:
    """A model checkpoint: what :meth:`gca.train.estimator.GCA.load` needs to embed graphs — ``config``
    (``GCAConfig.to_dict()``), the input width, the weights and each epoch's loss. ``user_encoder``: ``module.Class`` of
    a user's encoder the model was trained with (its weights need an instance of it; ``None`` for gca's own).
    ``provenance``: where the model came from (:mod:`gca.provenance`), plain JSON values; ``None`` for none."""
    return {
        "format": MODEL_FORMAT,
        "config": dict(config),
        "in_channels": int(in_channels),
        "model": {k: v.detach().cpu() for k, v in model.state_dict().items()},
        "losses": [float(v) for v in losses],
        **({"user_encoder": str(user_encoder)} if user_encoder else {}),
        **({"provenance": provenance} if provenance is not None else {}),
    }


def training_state(
    model_checkpoint: dict[str, Any],
    optimizer: torch.optim.Optimizer,
    generator: torch.Generator,
    epoch: int,
    seconds: float,
    graph_fingerprint: str,
    source_state: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A training checkpoint after ``epoch`` finished epochs: ``model_checkpoint`` (:func:`model_state`) with the
    optimiser's state, the training generator's and the global generators' states, the training seconds so far, the
    graph's :meth:`~gca.graph.graph.Graph.fingerprint` and ``source_state``, the batch source's (``None`` for none)."""
    return {
        **model_checkpoint,
        "format": TRAINING_FORMAT,
        "epoch": int(epoch),
        "train_seconds": float(seconds),
        "optimizer": optimizer.state_dict(),
        "rng": {"generator": generator.get_state(), **global_rng_state()},
        "graph": graph_fingerprint,
        "batches": source_state or {},
    }


def global_rng_state() -> dict[str, Any]:
    """The process-wide generators that :func:`torch_geometric.seed_everything` seeds: torch (CPU and CUDA),
    Python's ``random`` and NumPy's legacy global generator — as tensors and plain values."""
    version, internal, gauss = random.getstate()
    name, keys, pos, has_gauss, cached = np.random.get_state()  # noqa: NPY002 - the legacy RNG seed_everything sets
    return {
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
        "python": [version, list(internal), gauss],
        "numpy": {
            "name": name,
            "keys": torch.from_numpy(keys.astype(np.int64)),
            "pos": int(pos),
            "has_gauss": int(has_gauss),
            "cached": float(cached),
        },
    }


def set_global_rng_state(state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    if torch.cuda.is_available() and state["cuda"]:
        torch.cuda.set_rng_state_all(state["cuda"])
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    numpy = state["numpy"]
    keys = numpy["keys"].numpy().astype(np.uint32)
    np.random.set_state((numpy["name"], keys, numpy["pos"], numpy["has_gauss"], numpy["cached"]))  # noqa: NPY002
