"""Link prediction with frozen embeddings, without leakage.

Held out *before* pre-training (:func:`hold_out_edges`, PyTorch Geometric's ``RandomLinkSplit``): a ``val`` share
(default 5 %) and a ``test`` share (10 %) of the edges — an undirected edge counts once and leaves with both its
directions — together with as many sampled node pairs that are not edges of the graph (negatives). The encoder
trains on the edges that are left; every node is then embedded on that training graph, so no held-out edge reaches
an embedding through message passing either.

Held-out pairs are scored two ways (:func:`score_links`):

* ``cosine`` — the cosine similarity of the two embeddings (no parameters);
* ``hadamard`` — a logistic regression on the element-wise product z_u ⊙ z_v, trained on training edges and as
  many pairs that are not training edges (at most :data:`MAX_CLASSIFIER_PAIRS` of each), its C chosen on the
  validation pairs' ROC-AUC.

Metrics are scikit-learn's ROC-AUC and average precision on the test pairs; over several hold-outs (one per seed,
each with its own training) they are reported as mean ± std.
"""

from __future__ import annotations

import contextlib
import random
import warnings
from dataclasses import dataclass, field

import numpy as np
import torch
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import average_precision_score, roc_auc_score
from torch_geometric.data import Data

from .splits import EvaluationError

#: Training pairs of each class for the Hadamard classifier, at most (a seeded sample).
MAX_CLASSIFIER_PAIRS = 20_000
#: Inverse regularisation strengths searched on the validation pairs.
C_GRID = (0.01, 0.1, 1.0, 10.0, 100.0)
SCORERS = ("cosine", "hadamard")


@dataclass
class HeldOutEdges:
    """One hold-out: the graph to pre-train on and the labelled pairs to judge, each ``[2, k]`` node pairs."""

    train_edge_index: torch.Tensor  # what the encoder sees (both directions of undirected edges)
    val_pos: torch.Tensor
    val_neg: torch.Tensor
    test_pos: torch.Tensor
    test_neg: torch.Tensor
    directed: bool = False

    def training_data(self, data: Data) -> Data:
        """``data`` with its edges replaced by the training edges (features and labels kept)."""
        return Data(x=data.x, edge_index=self.train_edge_index, y=getattr(data, "y", None), num_nodes=data.num_nodes)


def hold_out_edges(edge_index: torch.Tensor, num_nodes: int, val: float = 0.05, test: float = 0.1, seed: int = 0,
                   directed: bool = False) -> HeldOutEdges:  # fmt: skip
    """Split the edges of a cleaned graph (no self-loops, no repeats; both directions of every undirected edge) as
    PyG's ``RandomLinkSplit(num_val=val, num_test=test, is_undirected=not directed)`` does, drawn from ``seed``."""
    from torch_geometric.transforms import RandomLinkSplit

    if not (0 < val < 1 and 0 < test < 1 and val + test < 1):
        raise EvaluationError(f"the held-out edge shares must lie in (0, 1) and leave edges to train on, got "
                              f"{val:g} and {test:g}")  # fmt: skip
    units = edge_index.shape[1] if directed else int((edge_index[0] < edge_index[1]).sum())
    if int(val * units) < 1 or int(test * units) < 1 or units - int(val * units) - int(test * units) < 1:
        kind = "directed" if directed else "undirected"
        raise EvaluationError(f"the graph has {units} {kind} edges: too few to hold out {val:.0%} for validation and "
                              f"{test:.0%} for testing and train on the rest")  # fmt: skip
    split = RandomLinkSplit(num_val=val, num_test=test, is_undirected=not directed, split_labels=True,
                            add_negative_train_samples=False)  # fmt: skip
    with _seeded(seed):
        train, valid, tested = split(Data(edge_index=edge_index.long(), num_nodes=num_nodes))
    return HeldOutEdges(train.edge_index, valid.pos_edge_label_index, valid.neg_edge_label_index,
                        tested.pos_edge_label_index, tested.neg_edge_label_index, directed)  # fmt: skip


@contextlib.contextmanager
def _seeded(seed: int):
    """PyG's link split and negative sampling draw from the global generators (torch's and Python's): seed them
    for the block and give every generator its state back afterwards."""
    state = random.getstate()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        random.seed(seed)
        try:
            yield
        finally:
            random.setstate(state)


def _pairs_and_labels(pos: torch.Tensor, neg: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    pairs = torch.cat([pos, neg], dim=1).numpy()
    return pairs, np.concatenate([np.ones(pos.shape[1]), np.zeros(neg.shape[1])])


def _metrics(labels: np.ndarray, scores: np.ndarray) -> dict[str, float]:
    auc, ap = roc_auc_score(labels, scores), average_precision_score(labels, scores)
    return {"auc": 100.0 * float(auc), "ap": 100.0 * float(ap)}


def score_links(embeddings: torch.Tensor, held: HeldOutEdges, seed: int = 0) -> dict[str, dict[str, float]]:
    """ROC-AUC and average precision (in %) of each scorer on the test pairs: ``{scorer: {"auc", "ap"}}``; the
    Hadamard classifier also records the C chosen and its validation AUC."""
    from torch_geometric.utils import negative_sampling

    z = torch.nn.functional.normalize(embeddings.detach().float().cpu(), dim=1).numpy()
    val_pairs, val_y = _pairs_and_labels(held.val_pos, held.val_neg)
    test_pairs, test_y = _pairs_and_labels(held.test_pos, held.test_neg)
    result = {"cosine": _metrics(test_y, (z[test_pairs[0]] * z[test_pairs[1]]).sum(1))}
    rng = np.random.default_rng(seed)
    train = held.train_edge_index
    train = train if held.directed else train[:, train[0] < train[1]]  # an undirected edge once
    keep = rng.permutation(train.shape[1])[:MAX_CLASSIFIER_PAIRS]
    with _seeded(seed):
        negatives = negative_sampling(held.train_edge_index, num_nodes=z.shape[0], num_neg_samples=len(keep))
    fit_pairs, fit_y = _pairs_and_labels(train[:, torch.from_numpy(keep)], negatives)
    best = (-1.0, None, None)
    for c in C_GRID:
        clf = LogisticRegression(C=c, max_iter=1000)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", category=ConvergenceWarning)
            clf.fit(z[fit_pairs[0]] * z[fit_pairs[1]], fit_y)
        auc = float(roc_auc_score(val_y, clf.decision_function(z[val_pairs[0]] * z[val_pairs[1]])))
        if auc > best[0]:
            best = (auc, c, clf)
    auc, c, clf = best
    scores = clf.decision_function(z[test_pairs[0]] * z[test_pairs[1]])
    result["hadamard"] = {**_metrics(test_y, scores), "chosen_C": c, "val_auc": 100.0 * auc}
    return result


@dataclass
class LinkResult:
    """Test ROC-AUC and AP (in %) of each scorer over hold-outs (one per seed)."""

    runs: list[dict[str, dict[str, float]]] = field(default_factory=list)

    def summary(self, scorer: str, metric: str) -> tuple[float, float]:
        values = [run[scorer][metric] for run in self.runs]
        return float(np.mean(values)), float(np.std(values))

    def to_dict(self) -> dict:
        return {"task": "link", "runs": self.runs,
                **{f"{scorer}_{metric}": dict(zip(("mean", "std"), self.summary(scorer, metric), strict=True))
                   for scorer in SCORERS for metric in ("auc", "ap")}}  # fmt: skip

    def __str__(self) -> str:
        parts = []
        for scorer in SCORERS:
            (auc, auc_sd), (ap, ap_sd) = self.summary(scorer, "auc"), self.summary(scorer, "ap")
            parts.append(f"{scorer}: ROC-AUC {auc:.2f} ± {auc_sd:.2f}, AP {ap:.2f} ± {ap_sd:.2f}")
        return "; ".join(parts) + f" % over {len(self.runs)} hold-out{'s' if len(self.runs) != 1 else ''}"
