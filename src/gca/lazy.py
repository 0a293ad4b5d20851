"""Names a package hands on from its modules, imported on first use (PEP 562).

A package's ``__init__`` lists its public names once, as the imports of its ``if TYPE_CHECKING:`` block (``from
.module import Name as Name``), which type checkers and IDEs read; :func:`lazy_exports` reads the same block from the
file and imports nothing until a name is asked for: the command line checks its arguments with light modules such as
:mod:`gca.evaluate.splits` before PyTorch loads, and importing one module of a package must not load its heavy
neighbours.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any


def declared_exports(init_file: str | Path) -> dict[str, str]:
    """Name → relative module path (``".graph"``, ``"..augment.prepared"``) of each import in the ``if
    TYPE_CHECKING:`` block of a package's ``__init__.py``."""
    tree = ast.parse(Path(init_file).read_text(encoding="utf-8"))
    where = {}
    for node in tree.body:
        if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING":
            for imported in node.body:
                if isinstance(imported, ast.ImportFrom):
                    for alias in imported.names:
                        where[alias.asname or alias.name] = "." * imported.level + (imported.module or "")
    return where


def lazy_exports(package: str, init_file: str) -> tuple[Callable[[str], Any], Callable[[], list[str]], list[str]]:
    """``__getattr__``, ``__dir__`` and ``__all__`` for ``package``, whose public names are the imports of the
    ``if TYPE_CHECKING:`` block of its ``init_file`` (:func:`declared_exports`); its modules are attributes too."""
    where = declared_exports(init_file)

    def __getattr__(name: str) -> Any:
        if name not in where:
            if not name.startswith("_") and importlib.util.find_spec(f"{package}.{name}"):
                return importlib.import_module(f"{package}.{name}")  # a module of the package, as `import gca.nn`
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(where[name], package), name)
        setattr(sys.modules[package], name, value)  # found directly from now on
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *where})

    return __getattr__, __dir__, sorted(where)
