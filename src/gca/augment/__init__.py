"""Adaptive augmentation (Section 3.2 of Zhu et al., WWW 2021): node centrality φ_c (:mod:`.centrality`), the removal
and masking probabilities of Eq. 3–10 and the view samplers drawn from them (:mod:`.augmentors`), what is computed
once per graph (:mod:`.prepared`), and the same augmentation as PyTorch Geometric transforms (:mod:`.transforms`).

Names are imported on first use (PEP 562).
"""

from ..lazy import lazy_exports

_EXPORTS = {
    "centrality": ("node_centrality",),
    "augmentors": (
        "EdgeDropper", "FeatureMasker", "ViewAugmentor", "build_augmentors", "drop_probabilities",
        "edge_weights", "feature_weights",
    ),
    "prepared": ("PreparedGraph", "prepare"),
    "transforms": ("AdaptiveAugmentation", "AdaptiveEdgeDropping", "AdaptiveFeatureMasking"),
}
__getattr__, __dir__, __all__ = lazy_exports(__name__, _EXPORTS)
