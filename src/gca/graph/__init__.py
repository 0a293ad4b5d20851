"""Graphs as training uses them: the checked graph (:mod:`.graph`), its sparse operators (:mod:`.sparse`) and
feature forms (:mod:`.features`), neighbourhood sampling for mini-batches (:mod:`.sampling`) and random walks for the
DeepWalk and node2vec baselines (:mod:`.walks`).

Names are imported on first use (PEP 562).
"""

from ..lazy import lazy_exports

_EXPORTS = {
    "Graph": "graph",
    "GraphError": "graph",
    "prepare_graph": "graph",
    "SparseMatrix": "sparse",
    "normalized_adjacency": "sparse",
    "DenseFeatures": "features",
    "normalize_rows": "features",
    "NeighborSampler": "sampling",
    "SampledSubgraph": "sampling",
    "random_walks": "walks",
    "RowNormalizedFeatures": "features",
    "dense_input": "features",
    "read_rows": "features",
    "AdjacencyRows": "sparse",
    "layered_normalized_adjacency": "sparse",
    "index_dtype": "sparse",
    "csr_tensor": "sparse",
    "scipy_to_sparse": "sparse",
    "binary_adjacency": "sparse",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
