"""Names a package hands on from its modules, imported on first use (PEP 562).

A package's ``__init__`` says where each of its public names lives and imports nothing until one is asked for: the
command line checks its arguments with light modules such as :mod:`gca.evaluate.splits` before PyTorch loads, and
importing one module of a package must not load the package's heavy neighbours.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Any


def lazy_exports(package: str, exports: dict[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``, whose public name ``n`` lives in its module ``exports[n]``."""

    def __getattr__(name: str) -> Any:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f".{exports[name]}", package), name)
        setattr(sys.modules[package], name, value)  # found directly from now on
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *exports})

    return __getattr__, __dir__
