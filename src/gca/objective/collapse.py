"""Collapse: training that reaches the objective's value at uniform similarities and stays there.

When every pair of projections has the same cosine similarity c — in practice all projections pointing the same
way, c = 1 — each term of Eq. 1 is

    ℓ(u_i, v_i) = log e^{c/τ} / ((2N − 1) e^{c/τ}) = −log(2N − 1),

so the loss −J of Eq. 2 equals log(2N − 1) for N anchors, whatever τ. Training that sits there has learned
nothing the views can tell apart, and its gradients are too weak to leave (the projection head's units are
saturated or dead). It is no slower than a healthy run, so without a check it trains to the end and its
embeddings are judged as if they meant something.

:class:`CollapseWatch` spots such a run: after :data:`COLLAPSE_EPOCHS` consecutive epochs whose mean loss is
within :data:`COLLAPSE_TOLERANCE` of log(2N − 1) (per step, with each step's own N — mini-batches differ) it
returns a one-line message, and :func:`gca.train.loop.train` ends training with a
:class:`gca.train.loop.CollapseError`.
A healthy run passes that value at most briefly: at initialisation the loss starts below it (the views' own
similarities already favour the positive pairs) and it falls from there.
"""

from __future__ import annotations

import math

#: Consecutive epochs at the uniform value that count as collapse.
COLLAPSE_EPOCHS = 20
#: How close (absolute, in nats) an epoch's loss must be to log(2N − 1). A collapsed Amazon-Photo run sits within
#: 1e-5 of 9.6355; healthy runs move by more than this every few epochs.
COLLAPSE_TOLERANCE = 1e-3


def uniform_loss(anchors: int) -> float:
    """log(2N − 1): the loss −J when all 2N − 1 similarities of every anchor are equal."""
    if anchors < 1:
        raise ValueError(f"the objective needs at least one anchor, got {anchors}")
    return math.log(2 * anchors - 1)


class CollapseWatch:
    """Counts consecutive epochs whose loss sits at :func:`uniform_loss`; :meth:`update` says so, in one line,
    once there are ``patience`` of them."""

    def __init__(self, patience: int = COLLAPSE_EPOCHS, tolerance: float = COLLAPSE_TOLERANCE, advice: str = ""):
        self.patience = patience
        self.tolerance = tolerance
        self.advice = advice
        self.since: int | None = None  # first epoch (from 1) of the current run of flat epochs
        self.value = 0.0

    def update(self, epoch: int, gaps: list[float], value: float) -> str | None:
        """After epoch ``epoch`` (numbered from 1): ``gaps`` are each step's loss minus its uniform value,
        ``value`` the uniform value of a full step. Returns the message once training has collapsed, else None."""
        flat = bool(gaps) and abs(sum(gaps) / len(gaps)) < self.tolerance
        if not flat:
            self.since = None
            return None
        if self.since is None:
            self.since, self.value = epoch, value
        if epoch - self.since + 1 < self.patience:
            return None
        return (
            f"training collapsed: from epoch {self.since} to {epoch} the loss stayed at log(2N-1) = {self.value:.4f},"
            " the value when all similarities are equal, so the embeddings carry no signal"
            + (f"; {self.advice}" if self.advice else "")
        )
