"""Deprecated name of :mod:`gca.run.store`: importing it gives that module itself (one module object), with a
:class:`DeprecationWarning`. Its names — :class:`~gca.run.store.PreparedStore`, ``CACHE_MIN_EDGES``, and
:class:`~gca.run.integrity.GraphSource`, :func:`~gca.run.integrity.input_digests`,
:func:`~gca.run.integrity.sampled_digest` and ``FORMAT`` from :mod:`gca.run.integrity` — are all found there."""

import sys
import warnings

from . import store

warnings.warn(
    "gca.run.cache is gca.run.store (and gca.run.integrity); import from there", DeprecationWarning, stacklevel=2
)
sys.modules[__name__] = store
