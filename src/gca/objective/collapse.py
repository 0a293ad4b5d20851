"""Collapse: training that reaches the objective's value at uniform similarities and stays there.

When every pair of projections has the same cosine similarity c (in practice c = 1), each term of Eq. 1 is

    ℓ(u_i, v_i) = log e^{c/τ} / ((2N − 1) e^{c/τ}) = −log(2N − 1),

so the loss −J of Eq. 2 equals log(2N − 1) for N anchors, whatever τ. :class:`CollapseWatch` spots a run there:

* An update is *flat* when its loss is within :data:`COLLAPSE_TOLERANCE` of log(2N − 1), N that update's own number of
  anchors (mini-batches differ). Updates are optimiser steps, not epochs.
* During training, :data:`COLLAPSE_UPDATES` flat updates in a row are collapse.
* At the end of training, a run whose last :data:`COLLAPSE_END_UPDATES` updates were flat — or every one of its updates,
  when it made fewer — ended collapsed, however short the flat stretch was.

Either way :func:`gca.train.loop.train` stops with a one-line :class:`gca.train.loop.CollapseError`, so nothing from the
run is saved. Its message names the likely cause (:func:`likely_cause`): node features that are all zero or identical, a
learning rate above :data:`HIGH_LR`, a weight decay of at least :data:`HIGH_WEIGHT_DECAY` — else the generic advice.
Design notes: docs/design/core.md.
"""

from __future__ import annotations

import math

#: Consecutive flat updates (optimiser steps) during training that count as collapse.
COLLAPSE_UPDATES = 20
#: Flat updates at the end of training (or all of a shorter run's) that count as a run ended collapsed.
COLLAPSE_END_UPDATES = 5
#: How close (absolute, in nats) an update's loss must be to log(2N − 1) to be flat. A collapsed Amazon-Photo run
#: sits within 1e-5 of 9.6355; healthy runs are more than this away after their first few updates.
COLLAPSE_TOLERANCE = 1e-3
#: A learning rate above this is named as the likely cause of a collapse: the paper's settings use at most 0.01,
#: except Amazon-Photo's 0.1, which collapses without its warm-up.
HIGH_LR = 0.01
#: A weight decay at least this is named as the likely cause: it pulls every weight towards zero, where all
#: embeddings are alike (the paper uses 1e-5 throughout).
HIGH_WEIGHT_DECAY = 1e-3


def uniform_loss(anchors: int) -> float:
    """log(2N − 1): the loss −J when all 2N − 1 similarities of each of the N ``anchors`` per view are equal."""
    if anchors < 1:
        raise ValueError(f"the objective needs at least one anchor, got {anchors}")
    return math.log(2 * anchors - 1)


def likely_cause(
    lr: float | None,
    weight_decay: float | None,
    zero_features: bool,
    advice: str = "",
    identical_features: bool = False,
) -> str:
    """The part of a collapse message that says what to change, from the run's settings (``lr``, the largest
    ``weight_decay``; ``None``: unknown): all-zero or identical features first (nothing else can help), then a high
    learning rate and/or weight decay, else ``advice`` (the generic one)."""
    if zero_features:
        return (
            "likely cause: every node's features are zero, so all nodes look the same to the encoder; "
            "train on features that differ between nodes"
        )
    if identical_features:
        return (
            "likely cause: every node has the same features as the encoder reads them (rows scaled to sum 1 "
            "under feature_norm=row: a single feature column becomes 1 everywhere), so all nodes look the same "
            "to the encoder; train on features that differ between nodes, or set feature_norm=none"
        )
    causes, remedies = [], []
    if lr is not None and lr > HIGH_LR:
        causes.append(f"the learning rate lr={lr:g} is high")
        remedies.append("lower the learning rate or lengthen the warm-up (warmup_steps)")
    if weight_decay is not None and weight_decay >= HIGH_WEIGHT_DECAY:
        causes.append(f"weight_decay={weight_decay:g} is high (it pulls every weight towards zero)")
        remedies.append("lower weight_decay (the paper uses 1e-5)")
    if causes:
        return f"likely cause: {' and '.join(causes)}; {', '.join(remedies)}"
    return advice or "lower the learning rate or lengthen the warm-up (warmup_steps), or try another seed"


class CollapseWatch:
    """Counts consecutive flat updates (module docstring, with ``patience``, ``tolerance`` and ``end_updates``):
    :meth:`update` after each optimiser step says whether training has collapsed, :meth:`ended_collapsed` after the
    last whether the run ended so, and :meth:`message` says it in one line, ``advice`` the generic advice."""

    def __init__(
        self,
        patience: int = COLLAPSE_UPDATES,
        tolerance: float = COLLAPSE_TOLERANCE,
        advice: str = "",
        end_updates: int = COLLAPSE_END_UPDATES,
    ) -> None:
        self.patience = patience
        self.tolerance = tolerance
        self.advice = advice
        self.end_updates = end_updates
        self.updates = 0  # updates seen
        self.flat = 0  # length of the current run of flat updates
        self.since: int | None = None  # epoch (from 1) of the current run's first flat update
        self.epoch = 0  # epoch of the latest update
        self.value = 0.0  # the largest log(2N − 1) in the current run (a full batch's)

    def update(self, epoch: int, gap: float, value: float) -> bool:
        """After one update in epoch ``epoch`` (from 1): ``gap`` is its loss minus ``value``, its anchors' log(2N − 1).
        True once :attr:`patience` updates in a row have been flat."""
        self.updates += 1
        self.epoch = epoch
        if not abs(gap) < self.tolerance:  # a NaN gap is not flat
            self.flat, self.since = 0, None
            return False
        if self.flat == 0:
            self.since, self.value = epoch, value
        self.flat += 1
        self.value = max(self.value, value)
        return self.flat >= self.patience

    def ended_collapsed(self) -> bool:
        """After the last update: whether the last :attr:`end_updates` updates (all, if fewer) were flat."""
        return self.updates > 0 and self.flat >= min(self.end_updates, self.updates)

    def message(self, cause: str = "", ended: bool = False) -> str:
        """The one-line report of the current flat run; ``cause`` (:func:`likely_cause`; ``""``: the generic advice)
        replaces the advice, ``ended``: the run ended collapsed (rather than stopped during training)."""
        span = f"from epoch {self.since} to " + (f"the end (epoch {self.epoch}; " if ended else f"{self.epoch} (")
        return (
            f"training collapsed: {span}{self.flat} update{'s' if self.flat != 1 else ''}) the loss stayed at "
            f"log(2N-1) = {self.value:.4f}, the value when all similarities are equal, so the embeddings carry no "
            "signal" + (f"; {cause or self.advice}" if cause or self.advice else "")
        )
