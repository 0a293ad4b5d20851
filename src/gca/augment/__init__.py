"""Adaptive augmentation (Section 3.2 of Zhu et al., WWW 2021): node centrality φ_c (:mod:`.centrality`), the removal
and masking probabilities of Eq. 3–10 and the view samplers drawn from them (:mod:`.augmentors`), what is computed
once per graph (:mod:`.prepared`), and the same augmentation as PyTorch Geometric transforms (:mod:`.transforms`).

Names are imported on first use (PEP 562).
"""

from ..lazy import lazy_exports

_EXPORTS = {
    "node_centrality": "centrality",
    "EdgeDropper": "augmentors",
    "FeatureMasker": "augmentors",
    "ViewAugmentor": "augmentors",
    "build_augmentors": "augmentors",
    "drop_probabilities": "augmentors",
    "edge_weights": "augmentors",
    "feature_weights": "augmentors",
    "PreparedGraph": "prepared",
    "prepare": "prepared",
    "AdaptiveAugmentation": "transforms",
    "AdaptiveEdgeDropping": "transforms",
    "AdaptiveFeatureMasking": "transforms",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
