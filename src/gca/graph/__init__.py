"""Graphs as training uses them: the checked graph and its sparse forms (:mod:`.core`), neighbourhood sampling for
mini-batches (:mod:`.sampling`) and random walks for the DeepWalk and node2vec baselines (:mod:`.walks`).

Names are imported on first use (PEP 562).
"""

from ..lazy import lazy_exports

_EXPORTS = {
    "Graph": "core",
    "GraphError": "core",
    "prepare_graph": "core",
    "SparseMatrix": "core",
    "DenseFeatures": "core",
    "normalized_adjacency": "core",
    "normalize_rows": "core",
    "NeighborSampler": "sampling",
    "SampledSubgraph": "sampling",
    "random_walks": "walks",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
