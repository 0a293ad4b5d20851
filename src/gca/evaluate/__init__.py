"""Judging frozen embeddings: linear evaluation (:mod:`.classification`, Section 4.1 of Zhu et al., WWW 2021) and the
authors' probe (:mod:`.probe`) on evaluation splits (:mod:`.splits`), link prediction on edges held out before
training (:mod:`.linkpred`) and node clustering (:mod:`.clustering`).

Names are imported on first use (PEP 562).
"""

from ..lazy import lazy_exports

_EXPORTS = {
    "classification": (
        "EvaluationResult", "evaluate_embeddings", "linear_evaluation", "raw_feature_input",
        "validation_accuracy",
    ),
    "probe": ("adam_probe", "ProbeResult"),
    "splits": ("EvaluationError", "SplitSetting", "random_splits", "label_splits", "few_label_splits"),
    "linkpred": ("hold_out_edges", "score_links", "HeldOutEdges", "LinkResult"),
    "clustering": ("cluster_embeddings", "ClusterResult"),
}
__getattr__, __dir__, __all__ = lazy_exports(__name__, _EXPORTS)
