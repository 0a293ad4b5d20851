"""gca — Graph Contrastive learning with Adaptive augmentation (Zhu et al., WWW 2021).

>>> from gca import GCA, GCAConfig, evaluate_embeddings, linear_evaluation, load_dataset, random_splits
>>> loaded = load_dataset("Cora", data_dir="data")                      # doctest: +SKIP
>>> z = GCA(GCAConfig(centrality="degree")).fit(loaded.data)            # doctest: +SKIP
>>> print(linear_evaluation(z, loaded.data.y, random_splits(len(z))))   # doctest: +SKIP
>>> print(evaluate_embeddings(z, loaded.data.y, random_splits(len(z)), protocol="authors"))  # doctest: +SKIP

The names below are imported on first use (PEP 562), so that ``gca --help`` and argument errors answer without
loading PyTorch.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.3.0"

_EXPORTS = {
    "GCA": "train",
    "GCAConfig": "config",
    "GCAModel": "model",
    "build_config": "config",
    "evaluate_embeddings": "evaluate",
    "linear_evaluation": "evaluate",
    "load_dataset": "datasets",
    "prepare_graph": "graph",
    "random_splits": "evaluate",
    "read_npz_graph": "datasets",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'gca' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
