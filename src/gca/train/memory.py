"""Deprecated name of :mod:`gca.train.fit_cache`: importing it gives that module itself (one module object), with a
:class:`DeprecationWarning`."""

import sys
import warnings

from . import fit_cache

warnings.warn("gca.train.memory is gca.train.fit_cache; import it from there", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = fit_cache
