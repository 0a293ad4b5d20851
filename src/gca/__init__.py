"""gca — Graph Contrastive learning with Adaptive augmentation (Zhu et al., WWW 2021).

>>> from gca import GCA, GCAConfig, load_dataset, linear_evaluation, random_splits
>>> loaded = load_dataset("Cora", data_dir="data")                      # doctest: +SKIP
>>> z = GCA(GCAConfig(centrality="degree")).fit(loaded.data)            # doctest: +SKIP
>>> print(linear_evaluation(z, loaded.data.y, random_splits(len(z))))   # doctest: +SKIP
"""

__version__ = "0.2.0"

from .config import GCAConfig, build_config
from .datasets import load_dataset, read_npz_graph
from .evaluate import linear_evaluation, random_splits
from .graph import prepare_graph
from .model import GCAModel
from .train import GCA

__all__ = [
    "GCA",
    "GCAConfig",
    "GCAModel",
    "build_config",
    "linear_evaluation",
    "load_dataset",
    "prepare_graph",
    "random_splits",
    "read_npz_graph",
]
