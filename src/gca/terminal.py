"""Deprecated name of :mod:`gca.stderr`: importing it gives that module itself (one module object), with a
:class:`DeprecationWarning`."""

import sys
import warnings

from . import stderr

warnings.warn("gca.terminal is gca.stderr; import it from there", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = stderr
