"""gca — Graph Contrastive learning with Adaptive augmentation (Zhu et al., WWW 2021).

>>> from gca import GCA, GCAConfig, evaluate_embeddings, linear_evaluation, load_dataset, random_splits
>>> loaded = load_dataset("Cora", data_dir="data")                      # doctest: +SKIP
>>> z = GCA(GCAConfig(centrality="degree")).fit_transform(loaded.data)            # doctest: +SKIP
>>> print(linear_evaluation(z, loaded.data.y, random_splits(len(z))))   # doctest: +SKIP
>>> print(evaluate_embeddings(z, loaded.data.y, random_splits(len(z)), protocol="authors"))  # doctest: +SKIP

The names below are imported on first use (PEP 562), so that ``gca --help`` and argument errors answer without
loading PyTorch.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from .lazy import lazy_exports
from .version import __version__ as __version__

# A library configures no logging of its own: records under "gca" go nowhere until the application adds a handler
# (the logging HOWTO's rule for libraries; gca.loggers says what is logged).
logging.getLogger("gca").addHandler(logging.NullHandler())

if TYPE_CHECKING:  # the names handed on, imported on first use at run time (gca.lazy)
    from .config import GCAConfig as GCAConfig
    from .config import build_config as build_config
    from .datasets import load_dataset as load_dataset
    from .datasets import read_npz_graph as read_npz_graph
    from .evaluate.classification import evaluate_embeddings as evaluate_embeddings
    from .evaluate.classification import linear_evaluation as linear_evaluation
    from .evaluate.splits import random_splits as random_splits
    from .graph.graph import prepare_graph as prepare_graph
    from .nn.model import GCAModel as GCAModel
    from .train.estimator import GCA as GCA

__getattr__, __dir__, __all__ = lazy_exports(__name__, __file__)
