"""The simple baselines an embedding is judged beside: the raw features and the propagated features Â^k X (SGC;
:mod:`gca.graph.propagate`).

:func:`judge_feature_baselines` judges both with the embedding's own protocol on the embedding's own splits, and
:func:`versus_baselines` says whether the embedding beats the best of them: the paired difference over the splits
(each split's embedding accuracy minus the baseline's on the same test nodes), its mean and standard deviation.
Design notes: docs/design/training.md.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from ..graph.graph import Graph
from ..graph.propagate import PROPAGATION_HOPS, propagated_features
from .classification import EvaluationResult, evaluate_embeddings, raw_feature_input
from .splits import Split

_SUPERSCRIPTS = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


def propagated_label(k: int) -> str:
    """The row name of Â^k X: ``Â²X`` for k = 2."""
    return f"Â{str(k).translate(_SUPERSCRIPTS)}X"


@dataclass
class FeatureBaselines:
    """The raw features' evaluation (``raw``) and each propagated row's (``propagated``: per power k, the
    evaluation of Â^k X), with what they were computed from.

    Parameters
    ----------
    width
        The columns X was projected onto before propagating (its leading right singular vectors); ``None``: all.
    feature_norm
        How X was formed from the raw features (``"row"``: rows scaled to sum 1; ``"none"``).
    seconds
        Propagation and evaluation of the propagated rows, in seconds.
    """

    raw: EvaluationResult
    propagated: dict[int, EvaluationResult] = field(default_factory=dict)
    width: int | None = None
    input_width: int = 0
    feature_norm: str = "row"
    seconds: float = 0.0

    def rows(self) -> dict[str, EvaluationResult]:
        """Every row by its name: ``raw features``, then ``Â¹X``, ``Â²X``, …"""
        return {"raw features": self.raw, **{propagated_label(k): r for k, r in sorted(self.propagated.items())}}

    def propagation(self) -> dict:
        """What the propagated rows are, for a record."""
        reduced = self.width is not None and self.width < self.input_width
        return {
            "operator": "Â^k X, Â = D̂^-1/2 (A + I) D̂^-1/2 (SGC; the encoder's propagation without weights)",
            "hops": sorted(self.propagated),
            "input": "rows scaled to sum 1" if self.feature_norm == "row" else "as stored",
            "width": self.width if reduced else self.input_width,
            "reduced": (
                f"X projected onto its {self.width} leading right singular vectors (randomized SVD) before propagating"
                if reduced
                else None
            ),
            "seconds": round(self.seconds, 3),
        }


def judge_feature_baselines(
    graph: Graph,
    labels: torch.Tensor | np.ndarray,
    splits: list[Split],
    protocol: str = "sklearn",
    feature_norm: str = "row",
    width: int | None = None,
    hops: Sequence[int] = PROPAGATION_HOPS,
    device: str | torch.device | None = None,
    progress: bool = False,
) -> FeatureBaselines:
    """The raw features and Â^k X for each of ``hops``, each judged on ``splits`` (those the embedding was
    judged on) under ``protocol``, with ``labels`` one class number per node (−1: none).

    Parameters
    ----------
    feature_norm
        How the encoder's input is formed from the raw features (``"row"`` or ``"none"``); the propagated rows
        start from it.
    width
        Project X onto this many leading right singular vectors before propagating where it is wider (the
        embedding's width); ``None`` keeps every column.
    device
        Where the authors' probe trains.
    """
    raw = evaluate_embeddings(
        raw_feature_input(graph.raw_features, protocol),
        labels,
        splits,
        protocol,
        device=device,
        progress=progress,
        desc="evaluate raw features",
    )
    start = time.perf_counter()
    propagated = {
        k: evaluate_embeddings(
            x, labels, splits, protocol, device=device, progress=progress, desc=f"evaluate {propagated_label(k)}"
        )
        for k, x in propagated_features(graph, hops, feature_norm, width).items()
    }
    return FeatureBaselines(
        raw, propagated, width, graph.raw_features.shape[1], feature_norm, time.perf_counter() - start
    )


def versus_baselines(evaluation: EvaluationResult, baselines: FeatureBaselines) -> dict:
    """Whether ``evaluation`` beats the best of ``baselines`` (the row of highest mean accuracy, judged on the
    same splits): the paired differences over the splits, in points."""
    name, best = max(baselines.rows().items(), key=lambda item: item[1].mean)
    if len(best.accuracies) != len(evaluation.accuracies):
        raise ValueError(
            f"the baselines were judged on {len(best.accuracies)} splits, the embedding on {len(evaluation.accuracies)}"
        )
    differences = np.asarray(evaluation.accuracies) - np.asarray(best.accuracies)
    return {
        "best_baseline": name,
        "best_baseline_mean": best.mean,
        "mean": evaluation.mean,
        "paired_difference": {
            "mean": float(differences.mean()),
            "std": float(differences.std()),
            "splits": int(differences.size),
        },
        "beats_best_baseline": bool(differences.mean() > 0),
    }


def verdict(comparison: dict, what: str = "GCA") -> str:
    """One line saying whether ``what`` (the embedding's name) beats the best baseline, from
    :func:`versus_baselines`'s ``comparison``."""
    paired = comparison["paired_difference"]
    gap = f"{paired['mean']:+.2f} ± {paired['std']:.2f} points, paired over {paired['splits']} splits"
    best = f"{comparison['best_baseline']} ({comparison['best_baseline_mean']:.2f} %)"
    if comparison["beats_best_baseline"]:
        return f"{what} beats the best feature baseline, {best}: {gap}"
    return (
        f"{what} does not beat the best feature baseline, {best}: {gap} — on this graph the parameter-free "
        "features do at least as well as the embeddings"
    )
