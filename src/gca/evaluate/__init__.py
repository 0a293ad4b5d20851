"""Judging frozen embeddings: linear evaluation (:mod:`.classification`, Section 4.1 of Zhu et al., WWW 2021) and the
authors' probe (:mod:`.probe`) on evaluation splits (:mod:`.splits`), link prediction on edges held out before
training (:mod:`.linkpred`) and node clustering (:mod:`.clustering`); the simple baselines every embedding is judged
beside (:mod:`.feature_baselines`) and how far a retrained embedding moved from the previous one (:mod:`.stability`).
"""

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

if TYPE_CHECKING:  # the names handed on, imported on first use at run time (gca.lazy)
    from .classification import EvaluationResult as EvaluationResult
    from .classification import evaluate_embeddings as evaluate_embeddings
    from .classification import linear_evaluation as linear_evaluation
    from .classification import raw_feature_input as raw_feature_input
    from .classification import validation_accuracy as validation_accuracy
    from .clustering import ClusterResult as ClusterResult
    from .clustering import cluster_embeddings as cluster_embeddings
    from .feature_baselines import FeatureBaselines as FeatureBaselines
    from .feature_baselines import judge_feature_baselines as judge_feature_baselines
    from .feature_baselines import versus_baselines as versus_baselines
    from .linkpred import HeldOutEdges as HeldOutEdges
    from .linkpred import LinkResult as LinkResult
    from .linkpred import hold_out_edges as hold_out_edges
    from .linkpred import score_links as score_links
    from .probe import ProbeResult as ProbeResult
    from .probe import adam_probe as adam_probe
    from .splits import EvaluationError as EvaluationError
    from .splits import SplitSetting as SplitSetting
    from .splits import few_label_splits as few_label_splits
    from .splits import index_splits as index_splits
    from .splits import label_splits as label_splits
    from .splits import random_splits as random_splits
    from .stability import Alignment as Alignment
    from .stability import AlignmentError as AlignmentError
    from .stability import align_embeddings as align_embeddings
    from .stability import node_cosines as node_cosines
    from .stability import shared_rows as shared_rows

__getattr__, __dir__, __all__ = lazy_exports(__name__, __file__)
