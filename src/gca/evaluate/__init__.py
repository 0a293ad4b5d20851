"""Judging frozen embeddings: linear evaluation (:mod:`.classification`, Section 4.1 of Zhu et al., WWW 2021) and the
authors' probe (:mod:`.probe`) on evaluation splits (:mod:`.splits`), link prediction on edges held out before
training (:mod:`.linkpred`) and node clustering (:mod:`.clustering`).

Names are imported on first use (PEP 562).
"""

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

_EXPORTS = {
    "classification": (
        "EvaluationResult", "evaluate_embeddings", "linear_evaluation", "raw_feature_input",
        "validation_accuracy",
    ),
    "probe": ("adam_probe", "ProbeResult"),
    "splits": ("EvaluationError", "SplitSetting", "random_splits", "label_splits", "few_label_splits", "index_splits"),
    "linkpred": ("hold_out_edges", "score_links", "HeldOutEdges", "LinkResult"),
    "clustering": ("cluster_embeddings", "ClusterResult"),
}

if TYPE_CHECKING:  # the same names, imported for type checkers and IDEs (checked by tests/test_layout.py)
    from .classification import EvaluationResult as EvaluationResult
    from .classification import evaluate_embeddings as evaluate_embeddings
    from .classification import linear_evaluation as linear_evaluation
    from .classification import raw_feature_input as raw_feature_input
    from .classification import validation_accuracy as validation_accuracy
    from .clustering import ClusterResult as ClusterResult
    from .clustering import cluster_embeddings as cluster_embeddings
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

__getattr__, __dir__, __all__ = lazy_exports(__name__, _EXPORTS)
