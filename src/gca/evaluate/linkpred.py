"""Link prediction with frozen embeddings, without leakage.

Held out *before* pre-training (:func:`hold_out_edges`, PyTorch Geometric's ``RandomLinkSplit``): a ``val`` share
(default 5 %) and a ``test`` share (10 %) of the edges — an undirected edge counts once and leaves with both its
directions — with as many sampled non-edges (negatives, :func:`sample_non_edges`: distinct pairs, an undirected
pair counted once, none in both validation and testing). The encoder trains on the edges that are left, and every
node is embedded on that training graph, so no held-out edge reaches an embedding through message passing either.
A graph with too few non-edges (a complete graph has none) is refused with one line.

Held-out pairs are scored two ways (:func:`score_links`): ``cosine``, the cosine similarity of the two embeddings;
``hadamard``, a logistic regression on z_u ⊙ z_v trained on training edges and as many pairs that are neither edges
nor held out (at most :data:`MAX_CLASSIFIER_PAIRS` of each), its C chosen on the validation pairs' ROC-AUC. Metrics
are ROC-AUC and average precision on the test pairs, mean ± std over hold-outs (one per seed, each trained anew).
"""

from __future__ import annotations

import contextlib
import random
import warnings
from dataclasses import dataclass, field

import numpy as np
import torch
from torch_geometric.data import Data

from ..errors import option
from .splits import EvaluationError

#: Training pairs of each class for the Hadamard classifier, at most (a seeded sample).
MAX_CLASSIFIER_PAIRS = 20_000
#: Inverse regularisation strengths searched on the validation pairs.
C_GRID = (0.01, 0.1, 1.0, 10.0, 100.0)
SCORERS = ("cosine", "hadamard")


@dataclass
class HeldOutEdges:
    """One hold-out: the edges the encoder sees (``train_edge_index``, both directions of undirected edges) and the
    labelled pairs to judge (held-out edges ``*_pos``, non-edges ``*_neg``), each ``[2, k]`` node pairs."""

    train_edge_index: torch.Tensor  # what the encoder sees (both directions of undirected edges)
    val_pos: torch.Tensor
    val_neg: torch.Tensor
    test_pos: torch.Tensor
    test_neg: torch.Tensor
    directed: bool = False

    def training_data(self, data: Data) -> Data:
        """``data`` with its edges replaced by the training edges (features and labels kept)."""
        return Data(x=data.x, edge_index=self.train_edge_index, y=getattr(data, "y", None), num_nodes=data.num_nodes)


def hold_out_edges(
    edge_index: torch.Tensor,
    num_nodes: int,
    val: float = 0.05,
    test: float = 0.1,
    seed: int = 0,
    directed: bool = False,
) -> HeldOutEdges:
    """Split the edges of a cleaned graph (no self-loops, no repeats; both directions of every undirected edge) as
    ``RandomLinkSplit(num_val=val, num_test=test, is_undirected=not directed)`` does, with as many non-edges.

    Parameters
    ----------
    edge_index
        The cleaned graph's edges, ``[2, E]``.
    num_nodes
        The graph's nodes.
    val, test
        The shares of the edges (an undirected edge counted once) held out for validation and testing; each in
        (0, 1), together below 1, and each leaving at least one edge.
    seed
        Seeds the split and the negatives.
    directed
        Whether the graph is directed (an undirected edge is held out in both directions).
    """
    from torch_geometric.transforms import RandomLinkSplit

    if not (0 < val < 1 and 0 < test < 1 and val + test < 1):
        raise EvaluationError(
            f"the held-out edge shares must lie in (0, 1) and leave edges to train on, got {val:g} and {test:g}"
        )
    units = edge_index.shape[1] if directed else int((edge_index[0] < edge_index[1]).sum())
    if int(val * units) < 1 or int(test * units) < 1 or units - int(val * units) - int(test * units) < 1:
        kind = "directed" if directed else "undirected"
        raise EvaluationError(
            f"the graph has {units} {kind} edges: too few to hold out {val:.0%} for validation and "
            f"{test:.0%} for testing and train on the rest"
        )
    split = RandomLinkSplit(
        num_val=val,
        num_test=test,
        is_undirected=not directed,
        split_labels=True,
        add_negative_train_samples=False,
        neg_sampling_ratio=0.0,
    )
    with _seeded(seed):
        train, valid, tested = split(Data(edge_index=edge_index.long(), num_nodes=num_nodes))
    val_pos, test_pos = valid.pos_edge_label_index, tested.pos_edge_label_index
    negatives = sample_non_edges(
        edge_index, num_nodes, val_pos.shape[1] + test_pos.shape[1], seed, directed, purpose="held-out negatives"
    )
    return HeldOutEdges(
        train.edge_index,
        val_pos,
        negatives[:, : val_pos.shape[1]],
        test_pos,
        negatives[:, val_pos.shape[1] :],
        directed,
    )


#: Pair sets up to this size are enumerated when drawing non-edges; above it pairs are drawn and rejected.
_ENUMERATE_PAIRS = 4_000_000


def _pair_keys(pairs: np.ndarray, num_nodes: int, directed: bool) -> np.ndarray:
    """One int64 key per node pair, ``u·N + v``; an undirected pair keyed by its smaller node first."""
    u, v = pairs[0].astype(np.int64), pairs[1].astype(np.int64)
    if not directed:
        u, v = np.minimum(u, v), np.maximum(u, v)
    return u * num_nodes + v


def sample_non_edges(
    taken: torch.Tensor,
    num_nodes: int,
    count: int,
    seed: int,
    directed: bool = False,
    at_most: bool = False,
    purpose: str = "negatives",
) -> torch.Tensor:
    """``count`` distinct node pairs ``[2, count]`` neither in ``taken`` (``[2, k]``: the edges and any pair already
    used) nor self-loops, drawn uniformly from ``seed``. On an undirected graph a pair is unordered (returned once,
    smaller node first; ``taken`` holds it either way). Where fewer exist: with ``at_most`` all of them, else an
    :class:`EvaluationError` naming the pairs' ``purpose``."""
    rng = np.random.default_rng(seed)
    taken_keys = np.unique(_pair_keys(taken.cpu().numpy(), num_nodes, directed))
    total = num_nodes * (num_nodes - 1) // (1 if directed else 2)
    available = total - taken_keys.size  # taken pairs are never self-loops on a cleaned graph
    if available < count and not at_most:
        raise EvaluationError(
            f"link prediction needs {count} node pairs without an edge as {purpose}, and the graph has {available} "
            f"({'a complete graph' if available <= 0 else 'nearly complete'}); give a sparser graph or smaller "
            f"{option('hold_out_edges.val')}/{option('hold_out_edges.test')} shares"
        )
    count = min(count, max(available, 0))
    if count == 0:
        return torch.empty(2, 0, dtype=torch.long)
    if total <= _ENUMERATE_PAIRS:  # small or dense: every pair enumerated, the free ones chosen without repeats
        u, v = np.nonzero(~np.eye(num_nodes, dtype=bool)) if directed else np.triu_indices(num_nodes, 1)
        keys = u.astype(np.int64) * num_nodes + v
        free = keys[~np.isin(keys, taken_keys, assume_unique=True)]
        chosen = rng.choice(free, size=count, replace=False)
    else:  # large and sparse: draw pairs, drop self-loops, taken pairs and repeats, until enough
        chosen = np.empty(0, dtype=np.int64)
        for _ in range(1000):
            u, v = rng.integers(0, num_nodes, size=(2, 2 * (count - chosen.size) + 16))
            keep = u != v
            keys = _pair_keys(np.vstack([u[keep], v[keep]]), num_nodes, directed)
            keys = keys[~np.isin(keys, taken_keys)]
            merged = np.concatenate([chosen, keys])
            _, first = np.unique(merged, return_index=True)
            chosen = merged[np.sort(first)][:count]  # first draws kept, in the order drawn
            if chosen.size == count:
                break
        else:
            raise EvaluationError(
                f"could not draw {count} node pairs without an edge as {purpose}; the graph is "
                "too dense for link prediction"
            )
    return torch.from_numpy(np.vstack([chosen // num_nodes, chosen % num_nodes]))


@contextlib.contextmanager
def _seeded(seed: int):
    """Seed the global generators (torch's and Python's, which PyG's link split draws from) for the block, then
    restore them."""
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
    from sklearn.metrics import average_precision_score, roc_auc_score

    auc, ap = roc_auc_score(labels, scores), average_precision_score(labels, scores)
    return {"auc": 100.0 * float(auc), "ap": 100.0 * float(ap)}


def score_links(embeddings: torch.Tensor, held: HeldOutEdges, seed: int = 0) -> dict[str, dict[str, float]]:
    """ROC-AUC and average precision (in %) of each scorer on the test pairs,
    ``{"cosine": {"auc", "ap"}, "hadamard": {"auc", "ap", "chosen_C", "val_auc"}}``: the Hadamard classifier's with the
    C chosen and its validation AUC.

    Parameters
    ----------
    embeddings
        One row per node, from a model pre-trained on ``held.train_edge_index`` only.
    held
        The hold-out whose test pairs are scored.
    seed
        Seeds the sample of training pairs the Hadamard classifier is fitted on.
    """
    from sklearn import exceptions, linear_model, metrics

    z = torch.nn.functional.normalize(embeddings.detach().float().cpu(), dim=1).numpy()
    val_pairs, val_y = _pairs_and_labels(held.val_pos, held.val_neg)
    test_pairs, test_y = _pairs_and_labels(held.test_pos, held.test_neg)
    result = {"cosine": _metrics(test_y, (z[test_pairs[0]] * z[test_pairs[1]]).sum(1))}
    rng = np.random.default_rng(seed)
    train = held.train_edge_index
    train = train if held.directed else train[:, train[0] < train[1]]  # an undirected edge once
    keep = rng.permutation(train.shape[1])[:MAX_CLASSIFIER_PAIRS]
    # the classifier's negatives: no edge of the graph and no held-out pair, positive or negative, is among them
    held_out = torch.cat([held.train_edge_index, held.val_pos, held.val_neg, held.test_pos, held.test_neg], dim=1)
    negatives = sample_non_edges(held_out, z.shape[0], len(keep), seed, held.directed, at_most=True)
    if negatives.shape[1] == 0:
        raise EvaluationError(
            "every node pair is an edge or held out; the Hadamard classifier has no negative pair "
            f"to train on — give a sparser graph or smaller {option('hold_out_edges.val')}/"
            f"{option('hold_out_edges.test')} shares"
        )
    fit_pairs, fit_y = _pairs_and_labels(train[:, torch.from_numpy(keep)], negatives)
    best = (-1.0, None, None)
    for c in C_GRID:
        clf = linear_model.LogisticRegression(C=c, max_iter=1000)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", category=exceptions.ConvergenceWarning)
            clf.fit(z[fit_pairs[0]] * z[fit_pairs[1]], fit_y)
        auc = float(metrics.roc_auc_score(val_y, clf.decision_function(z[val_pairs[0]] * z[val_pairs[1]])))
        if auc > best[0]:
            best = (auc, c, clf)
    auc, c, clf = best
    scores = clf.decision_function(z[test_pairs[0]] * z[test_pairs[1]])
    result["hadamard"] = {**_metrics(test_y, scores), "chosen_C": c, "val_auc": 100.0 * auc}
    return result


@dataclass
class LinkResult:
    """Test ROC-AUC and AP (in %) of each scorer over hold-outs (one per seed).

    Parameters
    ----------
    runs
        Per hold-out, ``{scorer: {"auc", "ap", …}}`` as :func:`score_links` gives it.
    """

    runs: list[dict[str, dict[str, float]]] = field(default_factory=list)

    def summary(self, scorer: str, metric: str) -> tuple[float, float]:
        values = [run[scorer][metric] for run in self.runs]
        return float(np.mean(values)), float(np.std(values))

    def to_dict(self) -> dict:
        return {
            "task": "link",
            "runs": self.runs,
            **{
                f"{scorer}_{metric}": dict(zip(("mean", "std"), self.summary(scorer, metric), strict=True))
                for scorer in SCORERS
                for metric in ("auc", "ap")
            },
        }

    def __str__(self) -> str:
        parts = []
        for scorer in SCORERS:
            (auc, auc_sd), (ap, ap_sd) = self.summary(scorer, "auc"), self.summary(scorer, "ap")
            parts.append(f"{scorer}: ROC-AUC {auc:.2f} ± {auc_sd:.2f}, AP {ap:.2f} ± {ap_sd:.2f}")
        return "; ".join(parts) + f" % over {len(self.runs)} hold-out{'s' if len(self.runs) != 1 else ''}"
