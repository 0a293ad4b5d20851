"""The ``gca`` command line: :mod:`.startup` (the command's first module), :mod:`.dispatch` (parser and dispatch),
:mod:`.guard` (signals, error lines, exit codes), :mod:`.common` (what commands share) and one module per command,
each adding its own arguments.

Names are imported on first use (PEP 562), so the startup module holds Ctrl-C before the rest loads.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

if TYPE_CHECKING:  # the names handed on, imported on first use at run time (gca.lazy)
    from .dispatch import entry as entry
    from .dispatch import main as main

__getattr__, __dir__, __all__ = lazy_exports(__name__, __file__)
