"""Judging frozen embeddings: linear evaluation (:mod:`.classification`, Section 4.1 of Zhu et al., WWW 2021) and the
authors' probe (:mod:`.probe`) on evaluation splits (:mod:`.splits`), link prediction on edges held out before
training (:mod:`.linkpred`) and node clustering (:mod:`.clustering`).

Names are imported on first use (PEP 562).
"""

from ..lazy import lazy_exports

_EXPORTS = {
    "EvaluationResult": "classification",
    "evaluate_embeddings": "classification",
    "linear_evaluation": "classification",
    "adam_probe": "probe",
    "EvaluationError": "splits",
    "SplitSetting": "splits",
    "random_splits": "splits",
    "hold_out_edges": "linkpred",
    "score_links": "linkpred",
    "cluster_embeddings": "clustering",
    "label_splits": "splits",
    "few_label_splits": "splits",
    "raw_feature_input": "classification",
    "validation_accuracy": "classification",
    "ProbeResult": "probe",
    "HeldOutEdges": "linkpred",
    "LinkResult": "linkpred",
    "ClusterResult": "clustering",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
