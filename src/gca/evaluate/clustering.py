"""Node clustering with frozen embeddings: k-means (scikit-learn) on the ℓ2-normalised embeddings of the labelled
nodes with k = the number of classes, judged against the classes by normalised mutual information (NMI) and the
adjusted Rand index (ARI), each mean ± std over ``seeds`` k-means initialisations (default 10).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from ..choices import TASK_COUNTS
from ..seeds import run_seeds
from .splits import EvaluationError


@dataclass
class ClusterResult:
    """NMI and ARI (in %) per k-means seed, of ``clusters`` = k clusters (the classes among the labelled nodes)."""

    nmi: list[float] = field(default_factory=list)
    ari: list[float] = field(default_factory=list)
    clusters: int = 0

    def to_dict(self) -> dict:
        return {
            "task": "cluster",
            "clusters": self.clusters,
            **{
                name: {"mean": float(np.mean(v)), "std": float(np.std(v)), "runs": list(v)}
                for name, v in (("nmi", self.nmi), ("ari", self.ari))
            },
        }

    def __str__(self) -> str:
        return (
            f"NMI {np.mean(self.nmi):.2f} ± {np.std(self.nmi):.2f}, ARI {np.mean(self.ari):.2f} ± "
            f"{np.std(self.ari):.2f} % over {len(self.nmi)} k-means seeds (k = {self.clusters})"
        )


def cluster_embeddings(
    embeddings: torch.Tensor | np.ndarray,
    labels: torch.Tensor | np.ndarray,
    seeds: int = TASK_COUNTS["cluster"],
    first_seed: int = 0,
) -> ClusterResult:
    """NMI and ARI (in %) of k-means with k = the number of classes among the labelled nodes (label ≥ 0), run
    ``seeds`` times with initialisations seeded :func:`gca.seeds.run_seeds` ``(first_seed, seeds)``.

    Parameters
    ----------
    embeddings
        One row per node.
    labels
        One class number per node (−1: no label; such nodes are left out).
    seeds
        How many k-means runs (each seeded differently).
    first_seed
        The first run's seed.
    """
    z = embeddings.detach().cpu().numpy() if isinstance(embeddings, torch.Tensor) else np.asarray(embeddings)
    y = labels.cpu().numpy() if isinstance(labels, torch.Tensor) else np.asarray(labels)
    if y.shape[0] != z.shape[0]:
        raise EvaluationError(f"expected one label per node ({z.shape[0]}), got {y.shape[0]}")
    labelled = y >= 0
    k = np.unique(y[labelled]).shape[0]
    if k < 2 or labelled.sum() <= k:
        raise EvaluationError(
            f"clustering needs two or more classes and more labelled nodes than classes; the labels "
            f"hold {k} class{'es' if k != 1 else ''} over {int(labelled.sum())} nodes"
        )
    from sklearn.cluster import KMeans
    from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score
    from sklearn.preprocessing import normalize

    x = normalize(z[labelled].astype(np.float64))
    result = ClusterResult(clusters=k)
    for seed in run_seeds(first_seed, seeds):
        assigned = KMeans(n_clusters=k, n_init=10, random_state=seed).fit_predict(x)
        result.nmi.append(100.0 * float(normalized_mutual_info_score(y[labelled], assigned)))
        result.ari.append(100.0 * float(adjusted_rand_score(y[labelled], assigned)))
    return result
