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

from .lazy import lazy_exports

__version__ = "0.3.0"

_EXPORTS = {
    "train.estimator": ("GCA",),
    "config": ("GCAConfig", "build_config"),
    "nn.model": ("GCAModel",),
    "evaluate.classification": ("evaluate_embeddings", "linear_evaluation"),
    "datasets": ("load_dataset", "read_npz_graph"),
    "graph.graph": ("prepare_graph",),
    "evaluate.splits": ("random_splits",),
}
__getattr__, __dir__, __all__ = lazy_exports(__name__, _EXPORTS)
