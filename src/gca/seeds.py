"""Seeds of repeated runs: one rule for every task that repeats something from one seed.

A run's ``seed`` may be any integer in [0, 2³² − 1] (:data:`gca.config.RANGES`). A task that repeats a run —
link prediction's hold-outs (each its own training), clustering's k-means initialisations — takes the seed of
repeat ``i`` from :func:`run_seeds`:

* repeat 0 uses ``seed`` itself, so one repeat equals the plain run with that seed
  (``gca train --task link --splits 1 --seed s`` trains the model ``gca train --seed s`` would, on the edges left);
* repeat i ≥ 1 uses the i-th child of ``numpy.random.SeedSequence(seed)``, read as one 32-bit word.

Every accepted seed gives accepted seeds: ``seed + i``, as before, overflowed at 2³² − 1. The children are
statistically independent streams (NumPy's ``SeedSequence`` hashing), unlike consecutive integers. Kept free of
PyTorch, so the command line can use it before PyTorch loads.
"""

from __future__ import annotations

import numpy as np

#: The largest seed accepted: the 32-bit range that NumPy, scikit-learn and PyTorch all take.
MAX_SEED = 2**32 - 1


def run_seeds(seed: int, count: int) -> list[int]:
    """The seeds of ``count`` repeats of a run seeded ``seed`` (module docstring); each in [0, :data:`MAX_SEED`].

    Parameters
    ----------
    seed
        The run's seed, in [0, :data:`MAX_SEED`] (else a ``ValueError``).
    count
        How many repeats.
    """
    if not 0 <= int(seed) <= MAX_SEED:
        raise ValueError(f"a seed must lie in [0, {MAX_SEED}], got {seed}")
    if count < 1:
        return []
    children = np.random.SeedSequence(int(seed)).spawn(count - 1)
    return [int(seed)] + [int(child.generate_state(1, dtype=np.uint32)[0]) for child in children]
