"""Graphs as training uses them: the checked graph (:mod:`.graph`), the edge lists built from a file's listed edges
(:mod:`.edges`), its sparse operators (:mod:`.sparse`), the CSR arrays and edge-list checks they are built from
(:mod:`.csr`), feature forms (:mod:`.features`), neighbourhood sampling for mini-batches (:mod:`.sampling`) and
random walks for the DeepWalk and node2vec baselines (:mod:`.walks`).
"""

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

if TYPE_CHECKING:  # the names handed on, imported on first use at run time (gca.lazy)
    from .csr import binary_adjacency as binary_adjacency
    from .csr import index_dtype as index_dtype
    from .features import DenseFeatures as DenseFeatures
    from .features import RowNormalizedFeatures as RowNormalizedFeatures
    from .features import dense_input as dense_input
    from .features import normalize_rows as normalize_rows
    from .features import read_rows as read_rows
    from .graph import Graph as Graph
    from .graph import GraphError as GraphError
    from .graph import prepare_graph as prepare_graph
    from .sampling import NeighborSampler as NeighborSampler
    from .sampling import SampledSubgraph as SampledSubgraph
    from .sparse import AdjacencyRows as AdjacencyRows
    from .sparse import SparseMatrix as SparseMatrix
    from .sparse import csr_tensor as csr_tensor
    from .sparse import layered_normalized_adjacency as layered_normalized_adjacency
    from .sparse import normalized_adjacency as normalized_adjacency
    from .sparse import scipy_to_sparse as scipy_to_sparse
    from .walks import random_walks as random_walks

__getattr__, __dir__, __all__ = lazy_exports(__name__, __file__)
