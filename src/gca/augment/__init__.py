"""Adaptive augmentation (Section 3.2 of Zhu et al., WWW 2021): node centrality φ_c (:mod:`.centrality`), the removal
and masking probabilities of Eq. 3–10 and the view samplers drawn from them (:mod:`.augmentors`), what is computed
once per graph (:mod:`.prepared`), and the same augmentation as PyTorch Geometric transforms (:mod:`.transforms`).
"""

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

if TYPE_CHECKING:  # the names handed on, imported on first use at run time (gca.lazy)
    from .augmentors import EdgeDropper as EdgeDropper
    from .augmentors import FeatureMasker as FeatureMasker
    from .augmentors import ViewAugmentor as ViewAugmentor
    from .augmentors import build_augmentors as build_augmentors
    from .augmentors import drop_probabilities as drop_probabilities
    from .augmentors import edge_weights as edge_weights
    from .augmentors import feature_weights as feature_weights
    from .centrality import node_centrality as node_centrality
    from .prepared import PreparedGraph as PreparedGraph
    from .prepared import prepare as prepare
    from .transforms import AdaptiveAugmentation as AdaptiveAugmentation
    from .transforms import AdaptiveEdgeDropping as AdaptiveEdgeDropping
    from .transforms import AdaptiveFeatureMasking as AdaptiveFeatureMasking

__getattr__, __dir__, __all__ = lazy_exports(__name__, __file__)
