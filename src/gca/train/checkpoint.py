"""Checkpoints: the file format, atomic save, safe load, and the training state a resumed run continues from.

Two kinds of file, both plain dicts of tensors and Python values (so ``torch.load(weights_only=True)`` reads
them and a crafted file cannot run code):

* a **model** checkpoint (``model.pt``): the configuration, the input width and the weights;
* a **training** checkpoint (``checkpoint.pt``): a model checkpoint plus everything needed to continue exactly —
  the epoch, the losses so far, Adam's moments, every random-number generator's state, the batch source's
  position and a fingerprint of the graph trained on.
"""

from __future__ import annotations

import random
import time
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
    """``torch.save`` through a temporary file and a rename: a kill leaves the old checkpoint or the new one."""
    atomic_write(path, lambda f: torch.save(state, f))


def load_checkpoint(path: str | Path) -> dict[str, Any]:
    """Read a gca checkpoint with ``torch.load(weights_only=True)``: only tensors and plain Python values are
    unpickled, so a crafted file cannot run code; truncated, foreign or crafted files raise :class:`CheckpointError`."""
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
    return state


def model_state(config: dict[str, Any], in_channels: int, model: torch.nn.Module, losses: list[float]) -> dict:
    """A model checkpoint: what :meth:`gca.train.estimator.GCA.load` needs to embed graphs."""
    return {
        "format": MODEL_FORMAT,
        "config": dict(config),
        "in_channels": int(in_channels),
        "model": {k: v.detach().cpu() for k, v in model.state_dict().items()},
        "losses": [float(v) for v in losses],
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
    """A training checkpoint after ``epoch`` finished epochs."""
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


def check_resumable(
    state: dict[str, Any], config: dict[str, Any], in_channels: int, graph_fingerprint: str
) -> None:
    """Raise :class:`CheckpointError` unless ``state`` continues this very run: same settings (the number of
    epochs may grow), same input width, same graph."""
    if state.get("format") != TRAINING_FORMAT:
        raise CheckpointError("the checkpoint holds a trained model, not a training state; it cannot be resumed")
    saved = state["config"]
    # a key the checkpoint lacks was added to the config after it was made; the run then resumes with its value
    changed = [k for k in config if k != "epochs" and k in saved and saved[k] != config[k]]
    if changed:
        k = changed[0]
        raise CheckpointError(
            f"the checkpoint was made with {k}={saved.get(k)!r} but this run has {k}={config[k]!r}; "
            "resume with the same settings or start without --resume"
        )
    if int(state["in_channels"]) != in_channels:
        raise CheckpointError(
            f"the checkpoint was trained on {state['in_channels']} features but this graph has {in_channels}"
        )
    if state.get("graph") != graph_fingerprint:
        raise CheckpointError(
            "the checkpoint was made on another graph (its nodes, edges or features differ from this one); resume "
            "on the graph it was trained on, or start without --resume"
        )
    if int(state["epoch"]) > int(config["epochs"]):
        raise CheckpointError(
            f"the checkpoint is at epoch {state['epoch']}, beyond this run's {config['epochs']} epochs"
        )


def restore_training_state(
    state: dict[str, Any], model: torch.nn.Module, optimizer: torch.optim.Optimizer, generator: torch.Generator
) -> None:
    """Load weights, optimiser moments and every generator's state from a checked training checkpoint."""
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    generator.set_state(state["rng"]["generator"])
    set_global_rng_state(state["rng"])


def global_rng_state() -> dict[str, Any]:
    """The process-wide generators that :func:`torch_geometric.seed_everything` seeds: torch (CPU and CUDA),
    Python's ``random`` and NumPy's legacy global generator — as tensors and plain values."""
    version, internal, gauss = random.getstate()
    name, keys, pos, has_gauss, cached = np.random.get_state()  # noqa: NPY002 - the legacy RNG seed_everything sets
    return {
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
        "python": [version, list(internal), gauss],
        "numpy": {"name": name, "keys": torch.from_numpy(keys.astype(np.int64)), "pos": int(pos),
                  "has_gauss": int(has_gauss), "cached": float(cached)},  # fmt: skip
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


class TrainingCheckpoints:
    """The part of a training run that writes a training checkpoint to ``path`` every ``every`` epochs and, with
    ``resume``, continues from the one there — so the run ends exactly where an uninterrupted run with the same seed
    ends. A checkpoint made with other settings or on another graph is refused (:func:`check_resumable`).

    The run hands it what a checkpoint holds; it keeps the clock, so ``seconds`` counts training time across resumes.
    """

    def __init__(self, path: str | Path | None = None, every: int = 0, resume: bool = False) -> None:
        if every < 0:
            raise CheckpointError(f"checkpoint_every must be non-negative, got {every}")
        self.path = None if path is None else Path(path)
        self.every, self.resume = every, resume
        self.first_epoch, self.earlier_seconds = 0, 0.0
        self.started = time.perf_counter()

    @property
    def used(self) -> bool:
        """Whether checkpoints are written or read (only then is the graph's fingerprint worth computing)."""
        return self.path is not None and bool(self.every or self.resume)

    @property
    def seconds(self) -> float:
        """Training time so far, earlier runs of a resumed one included."""
        return self.earlier_seconds + time.perf_counter() - self.started

    def restore(self, config: dict[str, Any], in_channels: int, fingerprint: str, model: torch.nn.Module,
                optimizer: torch.optim.Optimizer, generator: torch.Generator, source: Any) -> list[float]:
        """Load the checkpoint into the run's parts when resuming from one; the losses of the epochs it holds
        (empty for a fresh run). The clock starts here."""
        losses: list[float] = []
        if self.resume and self.path is not None and self.path.is_file():
            state = load_checkpoint(self.path)
            check_resumable(state, config, in_channels, fingerprint)
            restore_training_state(state, model, optimizer, generator)
            try:
                source.load_state_dict(state["batches"])
            except (KeyError, TypeError, ValueError) as exc:
                raise CheckpointError(f"cannot resume from {self.path}: {exc}") from None
            losses = [float(v) for v in state["losses"]]
            self.first_epoch, self.earlier_seconds = int(state["epoch"]), float(state["train_seconds"])
        self.started = time.perf_counter()
        return losses

    def after_epoch(self, epoch: int, model_checkpoint: Any, optimizer: torch.optim.Optimizer,
                    generator: torch.Generator, fingerprint: str, source: Any) -> None:
        """Write the training state after ``epoch`` finished epochs when one is due; ``model_checkpoint()`` gives
        the model checkpoint it extends (called only then)."""
        if self.path is None or not self.every or epoch % self.every:
            return
        state = training_state(model_checkpoint(), optimizer, generator, epoch, self.seconds, fingerprint,
                               source.state_dict())  # fmt: skip
        save_checkpoint(self.path, state)
