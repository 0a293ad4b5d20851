"""Names a package hands on from its modules, imported on first use (PEP 562).

A package's ``__init__`` says where each of its public names lives and imports nothing until one is asked for: the
command line checks its arguments with light modules such as :mod:`gca.evaluate.splits` before PyTorch loads, and
importing one module of a package must not load the package's heavy neighbours. (``gca.objective``,
``gca.datasets`` and ``gca.reproduce`` import their modules at once: none of them is needed before PyTorch is.)
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Any


def lazy_exports(
    package: str, exports: dict[str, tuple[str, ...]]
) -> tuple[Callable[[str], Any], Callable[[], list[str]], list[str]]:
    """``__getattr__``, ``__dir__`` and ``__all__`` for ``package``, whose public names ``exports[m]`` live in its
    module ``m`` (or, written with two leading dots, in a module of a sibling package: ``"..augment.prepared"``)."""
    where = {name: module for module, names in exports.items() for name in names}

    def __getattr__(name: str) -> Any:
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module_path(where[name]), package), name)
        setattr(sys.modules[package], name, value)  # found directly from now on
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *where})

    return __getattr__, __dir__, sorted(where)


def module_path(module: str) -> str:
    """The relative import path of an ``exports`` entry: a module of the package, or of a sibling package."""
    return module if module.startswith("..") else f".{module}"
