"""Training checkpoints: the checks that a checkpoint continues this very run, the training state restored from one,
and :class:`TrainingCheckpoints`, the periodic checkpoints of a fit and its resume.

The file itself (formats, atomic save, safe load, entry checks) is :mod:`gca.train.checkpoint_file`, importable from
here too. What depends on the run resuming a checkpoint (settings, graph, shapes of weights and moments, the training
generator's device) is checked by :func:`check_resume`, once per file: a command that copies or adopts a checkpoint
before training checks it with :class:`ResumeCheck` and hands the :class:`Resume` it read to ``GCA.fit(resume=…)``;
a fit given ``resume=True`` reads and checks the file in :meth:`TrainingCheckpoints.restore`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from ..errors import UserError, option, quoted
from ..io import hash_files
from .checkpoint_file import MODEL_FORMAT as MODEL_FORMAT
from .checkpoint_file import TRAINING_FORMAT as TRAINING_FORMAT
from .checkpoint_file import CheckpointError as CheckpointError
from .checkpoint_file import _one_line
from .checkpoint_file import check_checkpoint as check_checkpoint
from .checkpoint_file import global_rng_state as global_rng_state
from .checkpoint_file import load_checkpoint as load_checkpoint
from .checkpoint_file import model_state as model_state
from .checkpoint_file import save_checkpoint as save_checkpoint
from .checkpoint_file import set_global_rng_state as set_global_rng_state
from .checkpoint_file import training_state as training_state


def check_resumable(state: dict[str, Any], config: dict[str, Any], in_channels: int, graph_fingerprint: str) -> None:
    """Raise :class:`CheckpointError` unless ``state`` (checked by :func:`check_checkpoint`) continues this very
    run: same settings as ``config`` (``GCAConfig.to_dict()``; the number of epochs may grow, a setting the checkpoint
    lacks takes this run's value), same input width, same graph."""
    if state.get("format") != TRAINING_FORMAT:
        raise CheckpointError("the checkpoint holds a trained model, not a training state; it cannot be resumed")
    saved = state["config"]
    # a key the checkpoint lacks (a setting newer than the checkpoint): the run resumes with its own value
    changed = [k for k in config if k != "epochs" and k in saved and saved[k] != config[k]]
    if changed:
        k = changed[0]
        raise CheckpointError(
            f"the checkpoint was made with {k}={saved.get(k)!r} but this run has {k}={config[k]!r}; "
            f"resume with the same settings or start without {option('resume', True)}"
        )
    if int(state["in_channels"]) != in_channels:
        raise CheckpointError(
            f"the checkpoint was trained on {state['in_channels']} features but this graph has {in_channels}"
        )
    if state.get("graph") != graph_fingerprint:
        raise CheckpointError(
            "the checkpoint was made on another graph (its nodes, edges or features differ from this one); resume "
            f"on the graph it was trained on, or start without {option('resume', True)}"
        )
    if int(state["epoch"]) > int(config["epochs"]):
        raise CheckpointError(
            f"the checkpoint is at epoch {state['epoch']}, beyond this run's {config['epochs']} epochs"
        )


def check_fits(
    state: dict[str, Any],
    path: str | Path,
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    generator: torch.Generator,
) -> None:
    """Raise :class:`CheckpointError` (naming ``path``) unless ``state`` loads into these parts, which may be on
    PyTorch's meta device (only names and shapes are compared): the same weights, Adam's moments shaped as their
    parameters, the same optimiser settings, a training-generator state for ``generator``'s device."""
    mismatch = _weight_mismatch(model, state["model"])
    if mismatch is not None:
        name, expected, found = mismatch
        raise CheckpointError(
            f"cannot resume from {path}: this run's model needs {name} of shape {expected}, the file holds {found}"
        )
    saved, current = state["optimizer"], optimizer.state_dict()
    shape = [len(g["params"]) for g in saved["param_groups"]]
    if shape != [len(g["params"]) for g in current["param_groups"]]:
        raise CheckpointError(f"cannot resume from {path}: its optimiser state is for other parameters")
    parameters = {}  # the file's parameter number → this run's parameter (as torch.optim maps them)
    for group, mine in zip(saved["param_groups"], optimizer.param_groups, strict=True):
        parameters.update(zip(group["params"], mine["params"], strict=True))
        for key, value in group.items():
            if key not in ("params", "lr") and key in mine and _plain(value) != _plain(mine[key]):
                raise CheckpointError(
                    f"cannot resume from {path}: its optimiser has {key}={value!r}, this run {key}={mine[key]!r}"
                )
    for number, entries in saved["state"].items():
        for key, value in entries.items():
            if key != "step" and tuple(value.shape) != tuple(parameters[number].shape):
                raise CheckpointError(
                    f"cannot resume from {path}: its optimiser's {key} of parameter {number} has "
                    f"shape {tuple(value.shape)}, the parameter {tuple(parameters[number].shape)}"
                )
    try:
        torch.Generator(device=generator.device).set_state(state["rng"]["generator"])
    except (RuntimeError, TypeError, ValueError):
        raise CheckpointError(
            f"cannot resume from {path}: its 'rng.generator' is not a state of this run's "
            f"generator (on {generator.device})"
        ) from None
    cuda = state["rng"]["cuda"]
    if torch.cuda.is_available() and cuda:
        if len(cuda) > torch.cuda.device_count():
            raise CheckpointError(
                f"cannot resume from {path}: it holds the generators of {len(cuda)} GPUs, this "
                f"machine has {torch.cuda.device_count()}"
            )
        for device, value in enumerate(cuda):
            if value.shape != torch.cuda.get_rng_state(device).shape:
                raise CheckpointError(f"cannot resume from {path}: its 'rng.cuda[{device}]' is not a GPU generator's")


@dataclass(frozen=True)
class WarmStart:
    """An earlier model's file (``model.pt`` or a training checkpoint) read and checked once by
    :func:`load_checkpoint`: what ``GCA.fit(init_from=…)`` starts from, however many fits start from it."""

    path: str | Path
    state: dict[str, Any]

    @classmethod
    def read(cls, path: str | Path) -> WarmStart:
        """The file at ``path``, read; a missing, damaged or foreign file is a :class:`CheckpointError`."""
        return cls(path, load_checkpoint(path))


def load_initial_weights(source: str | Path | WarmStart, model: torch.nn.Module, in_channels: int) -> dict[str, Any]:
    """Start ``model`` from the weights of an earlier model (a file's path, or the :class:`WarmStart` read from it):
    a warm start, for retraining on a graph that changed a little. Only the weights are taken; the optimiser, the
    generators and the epochs start afresh. The file's feature width must be ``in_channels``, its weights shaped as
    ``model``'s; a damaged or foreign file is a :class:`CheckpointError`. Returns the file's checked state."""
    start = source if isinstance(source, WarmStart) else WarmStart.read(source)
    path, state = start.path, start.state
    if int(state["in_channels"]) != in_channels:
        raise CheckpointError(
            f"cannot start from {path}: its model was trained on {state['in_channels']} feature "
            f"columns, this graph has {in_channels}"
        )
    mismatch = _weight_mismatch(model, state["model"])
    if mismatch is not None:
        name, expected, found = mismatch
        raise CheckpointError(
            f"cannot start from {path}: this model needs {name} of shape {expected}, the file holds "
            f"{found} — train with the earlier model's settings (its encoder, widths and "
            "layers)"
        )
    model.load_state_dict(state["model"])
    return state


def _weight_mismatch(model: torch.nn.Module, weights: dict[str, torch.Tensor]) -> tuple[str, Any, Any] | None:
    """(name, shape the model needs, shape ``weights`` holds; ``None`` for a missing one) of the first weight, by
    name, that does not fit ``model``; ``None`` when all fit."""
    expected = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    found = {k: tuple(v.shape) for k, v in weights.items()}
    for name in sorted(set(expected) | set(found)):
        if expected.get(name) != found.get(name):
            return name, expected.get(name), found.get(name)
    return None


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def check_resume(
    path: str | Path,
    config: dict[str, Any],
    in_channels: int,
    fingerprint: str,
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    generator: torch.Generator,
    state: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The training state in ``path`` (or ``state``, read from it already) when this run (``config`` on a graph of
    ``in_channels`` features and this ``fingerprint``, with these parts) can continue it; otherwise one
    :class:`CheckpointError`: the file cannot be read or is damaged (:func:`load_checkpoint`), differs in settings
    or graph (:func:`check_resumable`) or does not load into the parts (:func:`check_fits`)."""
    state = load_checkpoint(path) if state is None else state
    try:
        check_resumable(state, config, in_channels, fingerprint)
    except CheckpointError as exc:
        raise CheckpointError(f"cannot resume from {path}: {quoted(exc)}") from None
    check_fits(state, path, model, optimizer, generator)
    return state


@dataclass(frozen=True)
class Resume:
    """A training checkpoint read and checked once, before its run starts (:class:`ResumeCheck`): what
    ``GCA.fit(resume=…)`` continues from without reading the file again. ``config`` (``GCAConfig.to_dict()``),
    ``graph`` and its ``fingerprint`` are those it was checked for; a fit of other settings or another graph checks
    ``state`` anew."""

    path: Path
    state: dict[str, Any]
    config: dict[str, Any]
    graph: Any
    fingerprint: str


class ResumeCheck:
    """``check(path)``: the :class:`Resume` that ``estimator.fit(prepared, resume=True)`` would continue from the
    checkpoint at ``path``, or the :class:`CheckpointError` it would refuse it with, raised before anything is
    written; the last one checked stays as :attr:`checked`. Model and optimiser are built on PyTorch's meta device
    (shapes only, no memory)."""

    def __init__(self, estimator: Any, prepared: Any) -> None:
        self.estimator, self.prepared = estimator, prepared
        self.checked: Resume | None = None

    def __call__(self, path: Path) -> Resume:
        from ..nn.model import GCAModel

        estimator, config, graph = self.estimator, self.estimator.config, self.prepared.graph
        with torch.device("meta"):
            model = GCAModel.from_config(graph.num_features, config, estimator.objective, None, estimator.encoder)
            optimizer = torch.optim.Adam(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
        generator = torch.Generator(device=estimator.device)
        fingerprint, settings = graph.fingerprint(), config.to_dict()
        state = check_resume(path, settings, graph.num_features, fingerprint, model, optimizer, generator)
        if estimator.batches is None and config.batch_size:  # gca's sampler: NeighborBatches.load_state_dict's rules
            batches, processes = state["batches"], 1 if estimator.placement is None else estimator.placement.world_size
            if batches.get("kind") != "neighbor":
                raise CheckpointError(
                    f"cannot resume from {path}: it was written by full-graph training, not mini-batch training"
                )
            if batches.get("world_size") != processes:
                raise CheckpointError(
                    f"cannot resume from {path}: it was written by a run of "
                    f"{batches.get('world_size')} processes; resume it with as many for an exact "
                    "continuation"
                )
        self.checked = Resume(Path(path), state, settings, graph, fingerprint)
        return self.checked


def resume_point(path: str | Path | None) -> tuple[int, str] | None:
    """Where a run resuming from ``path`` continues, for a distributed run's processes to compare before training
    (:meth:`gca.train.distributed.Placement.check_same_start`): ``(epoch, digest)`` — the checkpoint's epochs and the
    SHA-256 of its bytes —, or ``None`` without such a file. It never raises over the file's content, since every
    process must reach the comparison: an unreadable epoch gives −1 (resuming refuses it later), an unreadable file
    the digest ``"unreadable"``. Only the epoch is unpickled (tensors are mapped, not read)."""
    if path is None or not Path(path).is_file():
        return None
    try:
        digest = hash_files([Path(path)])[0]
    except OSError:
        return -1, "unreadable"
    try:
        epoch = int(torch.load(path, map_location="cpu", weights_only=True, mmap=True)["epoch"])
    except Exception:  # noqa: BLE001 - any file that is not a training checkpoint: refused when resuming
        epoch = -1
    return max(epoch, -1), digest


def restore_training_state(
    state: dict[str, Any], model: torch.nn.Module, optimizer: torch.optim.Optimizer, generator: torch.Generator
) -> None:
    """Load weights, optimiser moments and every generator's state from a checked training checkpoint."""
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    generator.set_state(state["rng"]["generator"])
    set_global_rng_state(state["rng"])


class TrainingCheckpoints:
    """Writes a training checkpoint to ``path`` every ``every`` epochs and, with ``resume``, continues from the one
    there, so the run ends exactly where an uninterrupted run with the same seed ends; a damaged checkpoint, or one of
    other settings or another graph, is refused (:func:`check_resume`). ``seconds`` counts training time across resumes.

    Parameters
    ----------
    path
        The training checkpoint file; ``None`` for none.
    every
        Write it after every this many epochs; ``0`` never (a negative number is a :class:`CheckpointError`).
    resume
        Continue from ``path`` when that file exists, or from the :class:`Resume` given (read and checked before).
    """

    def __init__(self, path: str | Path | None = None, every: int = 0, resume: bool | Resume = False) -> None:
        if every < 0:
            raise CheckpointError(f"checkpoint_every must be non-negative, got {every}")
        self.path = None if path is None else Path(path)
        self.every, self.resume = every, bool(resume)
        self.checked = resume if isinstance(resume, Resume) else None
        self.first_epoch, self.earlier_seconds = 0, 0.0
        self.started = time.perf_counter()

    @property
    def used(self) -> bool:
        """Whether checkpoints are written or read (only then is the graph's fingerprint worth computing)."""
        return self.path is not None and bool(self.every or self.resume)

    def fingerprint(self, graph: Any) -> str:
        """``graph``'s fingerprint where checkpoints are used (the checked :class:`Resume`'s for its own graph), else
        ``""``."""
        if self.checked is not None and self.checked.graph is graph:
            return self.checked.fingerprint
        return graph.fingerprint() if self.used else ""

    @property
    def seconds(self) -> float:
        """Training time so far, earlier runs of a resumed one included."""
        return self.earlier_seconds + time.perf_counter() - self.started

    def restore(
        self,
        config: dict[str, Any],
        in_channels: int,
        fingerprint: str,
        model: torch.nn.Module,
        optimizer: torch.optim.Optimizer,
        generator: torch.Generator,
        source: Any,
    ) -> list[float]:
        """When resuming, load the checkpoint into the run's parts and the batch ``source``'s state; the losses of
        the epochs it holds (empty for a fresh run). The clock starts here."""
        losses: list[float] = []
        checked, state = self.checked, None
        if checked is not None and (checked.config, checked.fingerprint) == (config, fingerprint):
            state = checked.state  # checked for this very run before it started
        elif checked is not None:
            state = check_resume(
                checked.path, config, in_channels, fingerprint, model, optimizer, generator, checked.state
            )
        elif self.resume and self.path is not None and self.path.is_file():
            state = check_resume(self.path, config, in_channels, fingerprint, model, optimizer, generator)
        if state is not None:
            try:
                restore_training_state(state, model, optimizer, generator)
                source.load_state_dict(state["batches"])
            except (KeyError, IndexError, TypeError, ValueError, RuntimeError) as exc:
                if isinstance(exc, UserError):
                    raise
                where = self.path or checked.path  # type: ignore[union-attr]
                raise CheckpointError(f"cannot resume from {where}: {_one_line(exc)}") from None
            losses = [float(v) for v in state["losses"]]
            self.first_epoch, self.earlier_seconds = int(state["epoch"]), float(state["train_seconds"])
        self.started = time.perf_counter()
        return losses

    def after_epoch(
        self,
        epoch: int,
        model_checkpoint: Any,
        optimizer: torch.optim.Optimizer,
        generator: torch.Generator,
        fingerprint: str,
        source: Any,
    ) -> None:
        """Write the training state after ``epoch`` finished epochs when one is due, with the optimiser's, the
        generators' and the batch ``source``'s state, extending the model checkpoint ``model_checkpoint()`` gives."""
        if self.path is None or not self.every or epoch % self.every:
            return
        state = training_state(
            model_checkpoint(), optimizer, generator, epoch, self.seconds, fingerprint, source.state_dict()
        )
        save_checkpoint(self.path, state)
