"""Linear evaluation of frozen embeddings (Section 4.1 of Zhu et al., WWW 2021; Veličković et al., 2019).

An ℓ2-regularised logistic regression is trained on the embeddings of the training nodes; its regularisation
strength is chosen on the validation nodes; accuracy is measured on the test nodes. This repeats over 20 random
10 % / 10 % / 80 % splits (or a dataset's public splits) and reports mean ± standard deviation; on very large
graphs the classifier is fitted on at most :data:`MAX_TRAIN_NODES` training nodes per split.

Two protocols judge the same splits (:data:`PROTOCOLS`, :func:`evaluate_embeddings`):

* ``sklearn`` (the default) — the logistic regression above on ℓ2-normalised inputs, C chosen on validation;
* ``authors`` — what the GCA authors' public script does (:mod:`gca.evaluate.probe`): a linear layer trained with
  Adam on the unnormalised embeddings, test accuracy at the best of the validation checks made every 20 epochs.

They give different numbers for the same embeddings: name the protocol of each figure (docs/design/training.md).
"""

from __future__ import annotations

import contextlib
import copy
import warnings
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
import torch

from ..choices import PROTOCOLS
from ..errors import option
from ..progress import phase
from .splits import PARTS, EvaluationError, Split, index_splits, renumber_classes, unlabelled_in

#: Inverse regularisation strengths C = 1/λ searched on the validation split.
DEFAULT_C_GRID = tuple(float(c) for c in np.logspace(-2, 4, 7))

#: Where the best C is an end of the grid, the search goes on past it a factor of 10 at a time while validation
#: accuracy strictly improves, at most this many steps: a choice at the grid's edge says only that the optimum lies
#: beyond it (raw bag-of-words features often want C > 10⁴). A choice still at the end of what was searched is
#: counted in the record (``C_at_edge``).
C_GRID_EXTENSIONS = 3

#: Above this many training nodes a split's classifier is fitted on a seeded random sample of this many of them
#: (test accuracy still counts every test node), and the C grid is walked with warm starts: evaluation then takes
#: bounded time on graphs of 10^5–10^6 labelled nodes (ogbn-products' official split trains on 196,615).
MAX_TRAIN_NODES = 50_000


@dataclass
class EvaluationResult:
    """Test accuracy per split under one ``protocol``, and what each split's validation nodes chose.

    Parameters
    ----------
    accuracies, val_accuracies
        Test accuracy, and the validation accuracy of what was chosen (in %), per split.
    chosen_c, chosen_epochs
        What each split's validation chose: the C (``sklearn``), or the check reported (``authors``).
    fitted_on
        How many training nodes each split's classifier was fitted on.
    last_check
        ``authors``: the probe's last check; a split whose best check is the last had not converged.
    micro_f1, macro_f1
        Micro-F1 (equal to accuracy for one label per node) and macro-F1 (the unweighted mean of the classes' F1),
        in %, per split.
    c_extended
        ``sklearn``: per split, whether the best C of the grid was one of its ends and the search went past it
        (:data:`C_GRID_EXTENSIONS`).
    c_at_edge
        ``sklearn``: per split, whether the chosen C is an end of every value searched (the optimum may lie further).
    """

    accuracies: list[float]
    chosen_c: list[float] = field(default_factory=list)
    val_accuracies: list[float] = field(default_factory=list)
    fitted_on: list[int] = field(default_factory=list)  # training nodes each split's classifier was fitted on
    protocol: str = "sklearn"
    chosen_epochs: list[int] = field(default_factory=list)  # authors: the check each split reports
    last_check: int = 0  # authors: the probe's last check
    micro_f1: list[float] = field(default_factory=list)  # in %; equal to accuracy for one label per node
    macro_f1: list[float] = field(default_factory=list)  # in %; the unweighted mean of the classes' F1
    c_extended: list[bool] = field(default_factory=list)  # sklearn: the search went past the grid's end
    c_at_edge: list[bool] = field(default_factory=list)  # sklearn: the choice is an end of what was searched

    @property
    def mean(self) -> float:
        return float(np.mean(self.accuracies))

    @property
    def std(self) -> float:
        return float(np.std(self.accuracies))

    @property
    def best_at_last_check(self) -> int:
        """``authors``: on how many splits the best validation check was the probe's last (0 otherwise)."""
        return sum(e == self.last_check for e in self.chosen_epochs) if self.last_check else 0

    @property
    def probe_converged(self) -> bool:
        """False when the authors' probe's best check was its last on most splits: it was still improving when it
        stopped (always True under ``sklearn``, whose solver runs to convergence)."""
        return 2 * self.best_at_last_check <= len(self.chosen_epochs)

    def to_dict(self) -> dict:
        chosen = (
            {
                "chosen_epoch": list(self.chosen_epochs),
                "last_check": self.last_check,
                "best_at_last_check": self.best_at_last_check,
                "probe_converged": self.probe_converged,
            }
            if self.protocol == "authors"
            else {"chosen_C": list(self.chosen_c), "C_extended": sum(self.c_extended), "C_at_edge": sum(self.c_at_edge)}
        )
        return {
            "protocol": self.protocol,
            "mean": self.mean,
            "std": self.std,
            "runs": list(self.accuracies),
            **chosen,
            "val_mean": float(np.mean(self.val_accuracies)) if self.val_accuracies else None,
            "fitted_on": list(self.fitted_on),
            **{name: _summary(getattr(self, name)) for name in ("micro_f1", "macro_f1") if getattr(self, name)},
        }

    def __str__(self) -> str:
        """``mean ± std % … over N splits``; a single split has no spread to give: ``75.90 % … on 1 split``. A probe
        that had not converged (:attr:`probe_converged`), or a C chosen at the end of its search, is said after it."""
        unconverged = (
            ""
            if self.probe_converged
            else (
                f"; the probe had not converged: its best check was its last on {self.best_at_last_check} of "
                f"{len(self.chosen_epochs)} splits"
            )
        )
        if any(self.c_at_edge):
            unconverged += f"; C at the end of its search on {sum(self.c_at_edge)} of {len(self.c_at_edge)} splits"
        if len(self.accuracies) == 1:
            f1 = f", macro-F1 {self.macro_f1[0]:.2f}" if self.macro_f1 else ""
            return f"{self.mean:.2f} %{f1} on 1 split ({self.protocol} protocol{unconverged})"
        f1 = f", macro-F1 {np.mean(self.macro_f1):.2f} ± {np.std(self.macro_f1):.2f}" if self.macro_f1 else ""
        return (
            f"{self.mean:.2f} ± {self.std:.2f} %{f1} over {len(self.accuracies)} splits ({self.protocol} "
            f"protocol{unconverged})"
        )


def _summary(values: list[float]) -> dict:
    return {"mean": float(np.mean(values)), "std": float(np.std(values)), "runs": list(values)}


def check_protocol(protocol: str) -> str:
    """``protocol`` if it is one of :data:`PROTOCOLS`, else an :class:`EvaluationError` naming them."""
    if protocol not in PROTOCOLS:
        raise EvaluationError(f"unknown evaluation protocol {protocol!r}; choose {' or '.join(PROTOCOLS)}")
    return protocol


def evaluate_embeddings(
    features: torch.Tensor | np.ndarray | sp.spmatrix,
    labels: torch.Tensor | np.ndarray,
    splits: list[Split],
    protocol: str = "sklearn",
    device: str | torch.device | None = None,
    progress: bool = False,
    desc: str = "evaluate",
) -> EvaluationResult:
    """Test accuracy of ``features`` on ``splits`` under ``protocol``: an :class:`EvaluationResult` of the
    accuracy (in %) per split, with micro- and macro-F1 and what each split's validation chose.

    Parameters
    ----------
    features
        One row per node: the embeddings (a tensor, a NumPy array or a mapped ``.npy``) or raw features (dense or
        SciPy sparse).
    labels
        One class number per node (integers, or floats with integral values; −1 for a node without a label), any
        values: they are renumbered 0 … C−1. Another shape or a fraction is an :class:`EvaluationError`.
    splits
        ``(train, val, test)`` node indices or boolean masks (:func:`~gca.evaluate.splits.index_splits`), one triple
        per split (:meth:`SplitSetting.draw <gca.evaluate.splits.SplitSetting.draw>`): labelled nodes only, and two
        classes in every training part.
    protocol
        ``"sklearn"``: :func:`linear_evaluation`; ``"authors"``: the authors' Adam-trained linear probe
        (:mod:`gca.evaluate.probe`). Another name is an :class:`EvaluationError`.
    device
        Where the authors' probe trains; ``None`` for where ``features`` lie. scikit-learn runs on the CPU.
    progress, desc
        Show the splits (``sklearn``) or the probe's epochs (``authors``) on stderr once the evaluation has run a few
        seconds (:func:`gca.progress.phase`), as ``desc``.
    """
    splits = index_splits(splits, features.shape[0])
    if check_protocol(protocol) == "sklearn":
        return linear_evaluation(features, labels, splits, progress=progress, desc=desc)
    from .probe import CHECK_EVERY, PROBE_EPOCHS, adam_probe

    y = _checked_labels(features, labels, splits)
    test, val, epochs, macro = adam_probe(
        features,
        y,
        splits,
        device=device,
        progress=progress,
        desc=f"{desc} ({len(splits)} split{'s' if len(splits) > 1 else ''})",
    )
    return EvaluationResult(
        [100.0 * float(a) for a in test],
        val_accuracies=[100.0 * float(a) for a in val],
        fitted_on=[len(s[0]) for s in splits],
        protocol="authors",
        chosen_epochs=[int(e) for e in epochs],
        last_check=PROBE_EPOCHS - PROBE_EPOCHS % CHECK_EVERY,
        micro_f1=[100.0 * float(a) for a in test],
        macro_f1=[100.0 * float(f) for f in macro],
    )


def raw_feature_input(raw: np.ndarray | sp.spmatrix, protocol: str) -> np.ndarray | sp.spmatrix:
    """The raw features as each protocol judges them: as stored under ``sklearn`` (which ℓ2-normalises rows
    itself); under ``authors`` scaled to row sum 1, as the authors' pipeline holds them (PyTorch Geometric's
    ``NormalizeFeatures`` on every dataset)."""
    if check_protocol(protocol) == "sklearn":
        return raw
    from ..graph.features import normalize_rows

    return normalize_rows(raw)


def _checked_labels(features, labels, splits: list[Split] | None = None, parts: tuple[str, ...] = PARTS) -> np.ndarray:
    """One class number per node, renumbered 0 … C−1 in the order of the class values (−1, no label, stays −1; 0
    and 10⁹ cost two classes), with ``splits`` checked to hold labelled nodes only in the ``parts`` read
    (:func:`gca.evaluate.splits.drop_unlabelled` removes them) and two classes in every training part."""
    y = labels.cpu().numpy() if isinstance(labels, torch.Tensor) else np.asarray(labels)
    if y.ndim != 1 or y.shape[0] != features.shape[0]:
        raise EvaluationError(f"expected one label per node ({features.shape[0]}), got shape {y.shape}")
    integral = y.dtype.kind in "iub" or (y.dtype.kind == "f" and bool(np.all(np.isfinite(y) & (y == np.round(y)))))
    if not integral:
        raise EvaluationError(
            f"labels must be class numbers 0, 1, 2, … (−1 for a node without one), got {y.dtype} "
            "values that are not all whole numbers"
        )
    renumbered = renumber_classes(y)
    if splits is not None:
        found = unlabelled_in(splits, renumbered, parts)
        if found:
            number, part, count = found
            raise EvaluationError(
                f"the {part} part of split {number} holds {count} node(s) without a label (−1); "
                "evaluation scores labelled nodes only — remove them (gca.evaluate.splits."
                "drop_unlabelled)"
            )
        for number, (train_idx, _, _) in enumerate(splits, start=1):  # one check for both protocols
            _two_training_classes(renumbered, train_idx, number)
    return renumbered


class NormalizedRows:
    """The rows of ``features`` ℓ2-normalised in float64 (one C grid suits inputs of any scale), read only where
    indexed (``rows[index]``), a block at a time: never an N × d float64 copy (mapped embeddings stay file-backed)."""

    def __init__(self, features: torch.Tensor | np.ndarray | sp.spmatrix) -> None:
        if isinstance(features, torch.Tensor):
            features = features.detach().cpu()
            features = features.to_dense() if features.is_sparse else features
        self.features = sp.csr_matrix(features) if sp.issparse(features) else features
        self.shape = tuple(features.shape)

    def __getitem__(self, index: np.ndarray) -> np.ndarray | sp.csr_matrix:
        from sklearn.preprocessing import normalize  # scikit-learn, where an evaluation runs: 1 s of a start-up

        index = np.asarray(index, dtype=np.int64)
        if isinstance(self.features, torch.Tensor):
            return normalize(self.features[torch.from_numpy(index)].double().numpy())
        if sp.issparse(self.features):
            return normalize(self.features[index].astype(np.float64))
        return normalize(np.asarray(self.features[index], dtype=np.float64))


#: Rows predicted at a time (validation and test nodes).
PREDICT_BLOCK = 65_536


def _predict(clf, x: NormalizedRows, index: np.ndarray) -> np.ndarray:
    """``clf``'s classes for the rows ``index``, a block of :data:`PREDICT_BLOCK` at a time."""
    if len(index) <= PREDICT_BLOCK:
        return clf.predict(x[index])
    return np.concatenate([clf.predict(x[index[i : i + PREDICT_BLOCK]]) for i in range(0, len(index), PREDICT_BLOCK)])


def _inputs(features, labels, splits: list[Split], parts: tuple[str, ...] = PARTS) -> tuple[NormalizedRows, np.ndarray]:
    """Normalised features (read where indexed) and labels as NumPy, with labels and splits checked."""
    x = NormalizedRows(features)
    return x, _checked_labels(x, labels, splits, parts)


def linear_evaluation(
    features: torch.Tensor | np.ndarray | sp.spmatrix,
    labels: torch.Tensor | np.ndarray,
    splits: list[Split],
    c_grid: tuple[float, ...] = DEFAULT_C_GRID,
    max_iter: int = 1000,
    max_train: int = MAX_TRAIN_NODES,
    progress: bool = False,
    desc: str = "evaluate",
) -> EvaluationResult:
    """Test accuracy of ℓ2 logistic regression on ``features`` (rows ℓ2-normalised in float64), C chosen per split
    on validation: an :class:`EvaluationResult`.

    Parameters
    ----------
    features, labels, splits
        As :func:`evaluate_embeddings` takes them: one row and one class number (−1: none) per node, and
        ``(train, val, test)`` node indices or masks per split.
    c_grid
        The inverse regularisation strengths C = 1/λ tried; the one of best validation accuracy is used on the test
        nodes (of equal ones, the first tried: in the grid's order, or ascending for a large split). Where it is
        the grid's smallest or largest, the search goes on past that end (:data:`C_GRID_EXTENSIONS`).
    max_iter
        The iterations each logistic regression may take.
    max_train
        A split with more training nodes than this fits on a random sample of this many (seeded by the split's
        number), walking the C grid from strong to weak regularisation with warm starts; test accuracy still counts
        every test node.
    progress, desc
        Show the splits on stderr once the evaluation has run a few seconds (:func:`gca.progress.phase`), as ``desc``.
    """
    from sklearn.metrics import f1_score

    splits = index_splits(splits, features.shape[0])
    x, y = _inputs(features, labels, splits)
    result = EvaluationResult([])
    with contextlib.closing(phase(len(splits), desc, "split", enabled=progress)) as bar:
        for number, (train_idx, val_idx, test_idx) in enumerate(splits, start=1):
            val_acc, c, clf, fitted_on, searched = _chosen_on_validation(
                x, y, train_idx, val_idx, number, c_grid, max_iter, max_train
            )
            predicted = _predict(clf, x, test_idx)
            result.accuracies.append(100.0 * float((predicted == y[test_idx]).mean()))
            result.micro_f1.append(100.0 * float(f1_score(y[test_idx], predicted, average="micro")))
            result.macro_f1.append(100.0 * float(f1_score(y[test_idx], predicted, average="macro", zero_division=0)))
            result.chosen_c.append(c)
            result.c_extended.append(searched[0] < min(c_grid) or searched[-1] > max(c_grid))
            result.c_at_edge.append(len(searched) > 1 and c in (searched[0], searched[-1]))
            result.val_accuracies.append(100.0 * val_acc)
            result.fitted_on.append(fitted_on)
            bar.update(1)
    return result


def validation_accuracy(
    features: torch.Tensor | np.ndarray | sp.spmatrix,
    labels: torch.Tensor | np.ndarray,
    splits: list[Split],
    c_grid: tuple[float, ...] = DEFAULT_C_GRID,
    max_iter: int = 1000,
    max_train: int = MAX_TRAIN_NODES,
    protocol: str = "sklearn",
) -> float:
    """Mean over ``splits`` of the validation accuracy (in %) of the C chosen on it (``authors``: of the probe's best
    check) — :func:`linear_evaluation` without its test part.

    Parameters
    ----------
    features, labels, splits
        As :func:`evaluate_embeddings` takes them (the test parts' labels are not read).
    c_grid, max_iter, max_train
        As :func:`linear_evaluation` takes them (``sklearn`` only).
    protocol
        ``"sklearn"`` or ``"authors"``.
    """
    splits = index_splits(splits, features.shape[0])
    if check_protocol(protocol) == "authors":
        from .probe import adam_probe

        y = _checked_labels(features, labels, splits, parts=("train", "val"))  # test labels are not read
        blind = [(train, val, val[:1]) for train, val, _ in splits]  # no test node's label enters the search
        return 100.0 * float(np.mean(adam_probe(features, y, blind)[1]))
    x, y = _inputs(features, labels, splits, parts=("train", "val"))  # test labels are not read
    scores = [
        _chosen_on_validation(x, y, train_idx, val_idx, number, c_grid, max_iter, max_train)[0]
        for number, (train_idx, val_idx, _) in enumerate(splits, start=1)
    ]
    return 100.0 * float(np.mean(scores))


def _two_training_classes(y: np.ndarray, train_idx: np.ndarray, number: int) -> None:
    """A classifier needs two classes among a split's training nodes, under either protocol (the authors' probe
    would otherwise report the majority class's share as an accuracy)."""
    if np.unique(y[train_idx]).shape[0] < 2:
        raise EvaluationError(
            f"the training part of split {number} ({len(train_idx)} nodes) holds only one of the labels' "
            f"{np.unique(y[y >= 0]).shape[0]} classes; a classifier needs two — label more nodes, or use another "
            f"split ({option('SplitSetting.scheme', 'random')} with a larger {option('SplitSetting.train')})"
        )


def _chosen_on_validation(x, y, train_idx, val_idx, number, c_grid, max_iter, max_train):
    """(validation accuracy, C, classifier, training nodes fitted on, every C searched in ascending order) of the C
    that does best on ``val_idx``: the grid, then, where its best is an end of it, a factor of 10 further out at a
    time while validation accuracy strictly improves (:data:`C_GRID_EXTENSIONS`)."""
    from sklearn import exceptions, linear_model

    large = len(train_idx) > max_train
    if large:
        train_idx = np.random.default_rng(number).choice(train_idx, size=max_train, replace=False)
    best = (-1.0, None, None)
    clf = linear_model.LogisticRegression(max_iter=max_iter, warm_start=large)

    def tried(c: float) -> bool:
        nonlocal best, clf
        clf = clf.set_params(C=c) if large else linear_model.LogisticRegression(C=c, max_iter=max_iter)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", category=exceptions.ConvergenceWarning)
            clf.fit(x[train_idx], y[train_idx])
        val_acc = float((_predict(clf, x, val_idx) == y[val_idx]).mean())
        if val_acc > best[0]:
            best = (val_acc, c, copy.deepcopy(clf) if large else clf)
            return True
        return False

    for c in sorted(c_grid) if large else c_grid:
        tried(c)
    searched = sorted(c_grid)
    if len(searched) > 1 and best[1] in (searched[0], searched[-1]):
        step = 10.0 if best[1] == searched[-1] else 0.1
        for _ in range(C_GRID_EXTENSIONS):
            c = best[1] * step
            searched = sorted([*searched, c])
            if not tried(c):
                break
    return (*best, len(train_idx), searched)
