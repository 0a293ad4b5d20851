"""The ``gca`` command line: :mod:`.console` (the command's first module), :mod:`.dispatch` (parser and dispatch),
:mod:`.shell` (signals, error lines, exit codes), :mod:`.common` (what commands share) and one module per command,
each adding its own arguments.

Names are imported on first use (PEP 562), so the console module holds Ctrl-C before the rest loads.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {"main": "dispatch", "entry": "dispatch", "LongRunHint": "train"}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(f"module 'gca.cli' has no attribute {name!r}")
