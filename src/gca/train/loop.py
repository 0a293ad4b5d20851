"""Training: Algorithm 1 of Zhu et al., WWW 2021, one step and the loop over epochs.

Every step of :func:`train` (:func:`train_step`) runs on a batch from a :class:`~gca.train.batches.BatchSource` (the
whole graph every epoch, or sampled subgraphs):

1. sample two views t, t' ~ T of the batch's graph — kept edges and a feature mask each (:mod:`gca.augment`);
2. build each view's normalised adjacency D̂^{-1/2}(Ã + I)D̂^{-1/2} (:mod:`gca.graph.sparse`; other encoders take the
   kept edges, :meth:`gca.nn.model.GCAModel.encode`);
3. embed both views with the shared encoder f (:mod:`gca.nn.gcn`);
4. compute the objective (−J of Eq. 2) on the projections g(·) of the batch's anchors (:mod:`gca.objective`);
5. take one optimiser step.

The loop's hooks: ``after_epoch`` (checkpoints), the learning rate's warm-up, the collapse watch and metric loggers.
It logs to ``"gca.train.loop"``: each epoch at DEBUG, the end at INFO, a collapse or a diverged loss at WARNING.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from torch.profiler import record_function

from ..errors import UserError
from ..graph.features import all_zero, identical_rows
from ..logger_protocol import LOG
from ..nn.model import GCAModel
from ..objective.collapse import CollapseWatch, likely_cause
from ..precision import update_precision
from ..progress import Progress
from .batches import Batch, BatchSource
from .compiled import CompiledParts

log = LOG.getChild("train.loop")


class TrainingError(UserError, RuntimeError):
    """Training cannot go on (e.g. the loss diverged); the message is one line meant for the user."""


class CollapseError(TrainingError):
    """Training collapsed: the loss sat at its value for uniform similarities (:mod:`gca.objective.collapse`)."""


def train_step(
    model: GCAModel, optimizer: torch.optim.Optimizer, batch: Batch, generator: torch.Generator, precision: str = "fp32"
) -> float:
    """One iteration of Algorithm 1 on ``batch``; returns the objective's value before the update.

    Parameters
    ----------
    model, optimizer
        The model trained and its optimiser (one step is taken).
    batch
        The step's input: features, the two view samplers, the anchors.
    generator
        The generator every random choice draws from (views, batches).
    precision
        What the forward pass computes in: ``"fp32"``, ``"tf32"`` or ``"bf16"`` (:func:`gca.precision.update_precision`:
        under bf16 the dense products in bf16, the sparse ones, the loss and the weights in fp32).
    """
    model.train()
    embeddings = []
    with update_precision(precision, next(model.parameters()).device):
        for view in batch.views:
            with record_function("gca.view"):  # named for the profiler (benchmarks/profile_update.py)
                edges, mask = view.sample_edges(generator), view.sample_feature_mask(generator)
            h = model.encode(batch.features, edges, batch.num_nodes, view.symmetric, batch.layer_rows, mask)
            embeddings.append(h if batch.anchors is None else h[batch.anchors])
        loss = _scalar(model.loss(*embeddings), model.objective)
    optimizer.zero_grad(set_to_none=True)
    with record_function("gca.backward"):
        loss.backward()
    with record_function("gca.optimizer"):
        optimizer.step()
    return float(loss.detach())


def _scalar(loss: object, objective: torch.nn.Module) -> torch.Tensor:
    """``loss`` if it is a scalar tensor autograd tracks, as ``loss.backward()`` needs; else a one-line error."""
    if isinstance(loss, torch.Tensor) and loss.dim() == 0 and loss.requires_grad:
        return loss
    what = f"a tensor of shape {tuple(loss.shape)}" if isinstance(loss, torch.Tensor) else f"a {type(loss).__name__}"
    raise TrainingError(f"objective {type(objective).__name__} returned {what}, not a scalar loss autograd tracks")


def train(
    model: GCAModel,
    optimizer: torch.optim.Optimizer,
    source: BatchSource,
    epochs: int,
    generator: torch.Generator,
    first_epoch: int = 0,
    after_epoch: Callable[[int, list[float]], None] | None = None,
    progress: bool = False,
    learning_rate: Callable[[int], float] | None = None,
    collapse: CollapseWatch | None = None,
    loggers: Sequence[Any] = (),
    on_update: Callable[[int, int | None], None] | None = None,
    precision: str = "fp32",
    compiled: CompiledParts | None = None,
) -> list[float]:
    """Epochs ``first_epoch … epochs − 1`` of Algorithm 1; returns each epoch's mean loss over its batches.

    A loss that is not finite stops training with a :class:`TrainingError`; one that sits at its value for uniform
    similarities (collapse, watched update by update when the objective knows that value) with a
    :class:`CollapseError` naming the likely cause (:func:`collapse_cause`) — after a run of flat updates, or after the
    last update when the run ended collapsed.

    Parameters
    ----------
    model, optimizer
        The model trained and its optimiser.
    source
        Where each epoch's batches come from.
    epochs
        The run's total epochs (from 0).
    generator
        The generator every random choice draws from (views, batches); a mini-batch source re-seeds it at each epoch
        from its own seed, the epoch and the process (:class:`~gca.train.batches.NeighborBatches`).
    first_epoch
        The epochs already done (a resumed run).
    after_epoch
        ``after_epoch(finished_epochs, losses)`` after every epoch (checkpoints); ``None`` for nothing.
    progress
        Show the epochs (the updates, where an epoch makes several) on stderr (:class:`gca.progress.Progress`).
    learning_rate
        ``learning_rate(t)``: the rate set before update t, the optimiser's own count, so a resumed run follows the
        same schedule (:func:`warmup_schedule`); ``None`` keeps the optimiser's.
    collapse
        The collapse watch; ``None`` for the default :class:`~gca.objective.collapse.CollapseWatch`.
    loggers
        Metric loggers: ``log({"loss", "lr"}, step=epoch)`` after every epoch that does not stop training (before
        ``after_epoch``); those with a true ``per_update`` also ``log({"loss/update"}, step=update)`` per update.
    on_update
        ``on_update(update, updates)`` after every update (from 1, on from the optimiser's count when resumed), with
        the planned updates (``None`` where the source does not say); ``None`` for nothing.
    precision
        What each update's forward pass computes in (:func:`train_step`).
    compiled
        The model's parts compiled (:class:`gca.train.compiled.CompiledParts`); ``None``: eager.
    """
    losses: list[float] = []
    per_update = [logger for logger in loggers if getattr(logger, "per_update", False)]
    update = updates_taken(optimizer)
    steps = source.steps  # updates an epoch makes, where the source says
    planned = epochs * steps if steps else None
    uniform = getattr(model.objective, "uniform_loss", None)
    collapse = collapse or CollapseWatch()
    per_epoch = steps or 1  # the bar counts updates where an epoch makes several, else epochs
    bar = Progress(
        epochs * per_epoch,
        "GCA",
        "epoch" if per_epoch == 1 else "update",
        enabled=progress,
        initial=first_epoch * per_epoch,
    )
    batch = None
    for epoch in range(first_epoch, epochs):
        step_losses = []
        for batch in source.batches(epoch, generator):
            if learning_rate is not None:
                rate = learning_rate(updates_taken(optimizer))
                for group in optimizer.param_groups:
                    group["lr"] = rate
            if compiled is None:
                step_losses.append(train_step(model, optimizer, batch, generator, precision))
            else:
                step_losses.append(
                    compiled.step(
                        functools.partial(train_step, model, optimizer, batch, generator, precision), generator
                    )
                )
            update += 1
            for logger in per_update:
                logger.log({"loss/update": step_losses[-1]}, update)
            if per_epoch > 1:
                bar.update(1, epoch=f"{epoch + 1}/{epochs}", loss=f"{np.mean(step_losses):.4f}")
            if on_update is not None:
                on_update(update, planned)
            if uniform is not None:
                flat = uniform(batch.num_nodes if batch.anchors is None else len(batch.anchors))
                if collapse.update(epoch + 1, step_losses[-1] - flat, flat):
                    bar.close()
                    raise _stopped(
                        CollapseError(collapse.message(collapse_cause(optimizer, source, batch, collapse.advice)))
                    )
        if not step_losses:
            bar.close()
            raise _stopped(TrainingError(f"{type(source).__name__} gave no batch to train on in epoch {epoch + 1}"))
        loss = float(np.mean(step_losses))
        if not np.isfinite(loss):
            bar.close()
            initial = update == len(step_losses) and not np.isfinite(step_losses[0])  # the initial weights' loss
            not_finite = "the encoder or the objective computes values that are not finite"
            advice = not_finite if initial else "lower the learning rate or raise tau"
            raise _stopped(TrainingError(f"the loss became {loss} at epoch {epoch + 1}; {advice}"))
        if epoch + 1 == epochs and uniform is not None and collapse.ended_collapsed():
            bar.close()
            cause = collapse_cause(optimizer, source, batch, collapse.advice)
            raise _stopped(CollapseError(collapse.message(cause, ended=True)))
        losses.append(loss)
        rate = float(optimizer.param_groups[0]["lr"])
        log.debug("epoch %d/%d: loss %.6f, lr %g", epoch + 1, epochs, loss, rate)
        for logger in loggers:
            logger.log({"loss": loss, "lr": rate}, epoch + 1)
        if per_epoch == 1:
            bar.update(loss=f"{loss:.4f}")
        if after_epoch is not None:
            after_epoch(epoch + 1, losses)
    bar.close()
    if losses:
        log.info("trained epochs %d to %d: final loss %.6f", first_epoch + 1, epochs, losses[-1])
    return losses


def _stopped(error: TrainingError) -> TrainingError:
    """``error``, reported at WARNING on the package's logger first (the command line prints it itself)."""
    log.warning("%s", error)
    return error


def collapse_cause(optimizer: torch.optim.Optimizer, source: BatchSource, batch: Batch | None, advice: str = "") -> str:
    """What a collapse message advises (:func:`gca.objective.collapse.likely_cause`), from the optimiser's own
    settings — the learning rate it was made with (a warm-up lowers the current one), its largest weight decay —
    and whether the graph's features (the source's ``features`` if it has them, else the last batch's) are all
    zero or all rows alike. ``advice``: what to add about the run's own settings."""
    lr = optimizer.defaults.get("lr")
    decays = [float(group.get("weight_decay", 0.0) or 0.0) for group in optimizer.param_groups]
    features = getattr(source, "features", None)
    if features is None:
        features = getattr(getattr(source, "batch", None), "features", None)
    if features is None and batch is not None:
        features = batch.features
    zero = features is not None and all_zero(features)
    same = features is not None and not zero and identical_rows(features)
    return likely_cause(None if lr is None else float(lr), max(decays, default=None), zero, advice, same)


def warmup_schedule(lr: float, warmup_steps: int) -> Callable[[int], float] | None:
    """The learning rate of update t (from 0): rising linearly to ``lr`` over the first ``warmup_steps`` updates,
    then constant — or ``None`` (Adam at ``lr`` throughout, as Algorithm 1) when ``warmup_steps`` is 0 or 1."""
    if warmup_steps <= 1:
        return None
    return lambda step: lr * min(1.0, (step + 1) / warmup_steps)


def updates_taken(optimizer: torch.optim.Optimizer) -> int:
    """How many updates ``optimizer`` has made — Adam's own step count, which checkpoints carry, so a resumed run
    continues a schedule keyed on it exactly."""
    for state in optimizer.state.values():
        if "step" in state:
            return int(state["step"])
    return 0
