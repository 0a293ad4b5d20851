"""Seeds of repeated runs: two rules, one for repeated trainings and one for what a run draws several of.

A run's ``seed`` may be any integer in [0, 2³² − 1] (:data:`gca.config.RANGES`).

**Repeated trainings** — a run's K pretrainings from ``seed`` S (the command line's ``gca train --seed S --seeds
K``) and a reproduction's trainings of a cell (seeds 0 … runs − 1) — take consecutive seeds from
:func:`training_seeds`: S, S + 1, …, S + K − 1 (past 2³² − 1 they wrap to 0). So training i of a reproduction is the
one training with seed i, and K pretrainings train as a reproduction's ``runs=K`` do.

**Draws within a run** — link prediction's hold-outs (each its own training), clustering's k-means
initialisations, the authors' probe's per-split generators — take the seed of repeat ``i`` from :func:`run_seeds`:

* repeat 0 uses ``seed`` itself, so one repeat equals the plain run with that seed
  (link prediction with one hold-out and seed s trains the model a plain run with seed s would, on the edges left);
* repeat i ≥ 1 uses the i-th child of ``numpy.random.SeedSequence(seed)``, read as one 32-bit word.

Every accepted seed gives accepted seeds (why two rules: docs/design/application.md). Kept free of PyTorch, so the
command line can use it before PyTorch loads.
"""

from __future__ import annotations

import numpy as np

#: The largest seed accepted: the 32-bit range that NumPy, scikit-learn and PyTorch all take.
MAX_SEED = 2**32 - 1


def _check(seed: int) -> int:
    if not 0 <= int(seed) <= MAX_SEED:
        raise ValueError(f"a seed must lie in [0, {MAX_SEED}], got {seed}")
    return int(seed)


def training_seeds(seed: int, count: int) -> list[int]:
    """The seeds of ``count`` trainings repeated from ``seed`` (module docstring): ``seed``, ``seed + 1``, …, each
    taken modulo 2³² so that it lies in [0, :data:`MAX_SEED`]; a ``seed`` outside that range is a ``ValueError``."""
    first = _check(seed)
    return [(first + i) % (MAX_SEED + 1) for i in range(max(count, 0))]


def run_seeds(seed: int, count: int) -> list[int]:
    """The seeds of ``count`` draws within a run seeded ``seed`` — hold-outs, k-means initialisations, probe
    generators (module docstring); each in [0, :data:`MAX_SEED`], as ``seed`` must be (else a ``ValueError``)."""
    seed = _check(seed)
    if count < 1:
        return []
    children = np.random.SeedSequence(seed).spawn(count - 1)
    return [int(seed)] + [int(child.generate_state(1, dtype=np.uint32)[0]) for child in children]
