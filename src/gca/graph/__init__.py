"""Graphs as training uses them: the checked graph (:mod:`.graph`), its sparse operators (:mod:`.sparse`) and
feature forms (:mod:`.features`), neighbourhood sampling for mini-batches (:mod:`.sampling`) and random walks for the
DeepWalk and node2vec baselines (:mod:`.walks`).

Names are imported on first use (PEP 562).
"""

from ..lazy import lazy_exports

_EXPORTS = {
    "graph": ("Graph", "GraphError", "prepare_graph"),
    "sparse": (
        "SparseMatrix", "normalized_adjacency", "AdjacencyRows", "layered_normalized_adjacency", "index_dtype",
        "csr_tensor", "scipy_to_sparse", "binary_adjacency",
    ),
    "features": ("DenseFeatures", "normalize_rows", "RowNormalizedFeatures", "dense_input", "read_rows"),
    "sampling": ("NeighborSampler", "SampledSubgraph"),
    "walks": ("random_walks",),
}
__getattr__, __dir__, __all__ = lazy_exports(__name__, _EXPORTS)
