"""Deprecated name of :mod:`gca.datasets.files.tables`: importing it gives that module itself (one module object, so
a setting changed through either name is the setting the readers use), with a :class:`DeprecationWarning`."""

import sys
import warnings

from .files import tables

warnings.warn(
    "gca.datasets.tables is gca.datasets.files.tables; import it from there", DeprecationWarning, stacklevel=2
)
sys.modules[__name__] = tables
