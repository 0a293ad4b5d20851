"""Evaluation splits: which labelled nodes train, validate and test the classifier that judges frozen embeddings.

A :class:`SplitSetting` names a scheme (:data:`gca.choices.SPLIT_SCHEMES`) and draws ``count`` splits from a seed:

* ``random`` — each split a random permutation of the labelled nodes cut into fractions ``train`` / ``val`` /
  ``test`` (default 0.1 / 0.1 / the rest: the protocol of GRACE and GCA); a draw whose training part misses a class
  is drawn again. Part sizes are ``round(fraction · n)``, or ``int(fraction · n)`` as the GCA authors' script cuts
  them (``sizes = "floor"``, what the ``authors`` protocol draws: :meth:`SplitSetting.for_protocol`).
* ``public`` — the dataset's own split (Planetoid's 20 nodes per class for training, 500 for validation, 1,000 for
  testing; Wiki-CS's 20 splits; OGB's official one); one public split gives one split, whatever ``count`` asks.
* ``fewshot`` — ``shots`` = k labelled nodes of every class for training (drawn per split), validation a ``val``
  fraction of the labelled nodes drawn from the rest, testing the rest (or a ``test`` fraction of all); ``k``
  above the smallest class's size is refused.
* ``auto`` (the default) — the dataset's own splits where its benchmark prescribes them (Wiki-CS, OGB), else
  ``random``.

Nodes labelled −1 (unlabelled; a NaN in a file's labels) are never in a split: a dataset's own split has them
removed from each part (:func:`drop_unlabelled`; counted in :attr:`DrawnSplits.removed`). A part left empty is an
error. A split is a tuple ``(train, val, test)`` of node indices. Design notes: docs/design/training.md.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..choices import SPLIT_SCHEMES, TASK_COUNTS
from ..errors import UserError, option

#: (train, validation, test) node indices.
Split = tuple[np.ndarray, np.ndarray, np.ndarray]
PARTS = ("train", "val", "test")
#: How a random split's part sizes are cut from its fractions: ``round`` (gca's default) or ``floor`` (``int()``, the
#: GCA authors' script).
SIZES = ("round", "floor")


class DrawnSplits(list):
    """The splits drawn (a list of :data:`Split`); :attr:`removed`, the unlabelled nodes removed from each part of
    the dataset's own split, summed over its splits (``None``: none); ``own``, whether they are the dataset's own."""

    def __init__(self, splits, removed: dict[str, int] | None = None, own: bool = False):
        super().__init__(splits)
        self.removed = removed or dict.fromkeys(PARTS, 0)
        self.own = own  # the dataset's own split (public, Wiki-CS's, OGB's official one), not drawn by gca


class EvaluationError(UserError, ValueError):
    """Evaluation cannot run on these labels or splits; the message is one line meant for the user."""


def _as_numpy(labels) -> np.ndarray:
    """Labels as NumPy; a tensor is read without importing PyTorch here (the command line checks before it loads)."""
    return labels.cpu().numpy() if hasattr(labels, "cpu") else np.asarray(labels)


def index_splits(splits, num_nodes: int, disjoint: bool = True) -> list[Split]:
    """``splits`` (``(train, val, test)`` triples, one per split) with every part as an int64 array of node indices,
    the one form evaluation reads; splits already so are returned as they are (the same object).

    A part is **node indices** (integers in ``[0, num_nodes)``, any order: an array, a tensor or a list) or a **boolean
    mask** of one entry per node (``data.train_mask``), which becomes the indices of its ``True`` entries. Anything
    else is one line (:class:`EvaluationError`): a mask of another length, floats, more than one dimension (a
    ``[N, S]`` mask holds S splits: one triple per column, :func:`gca.datasets.base.mask_splits`), ids outside
    ``[0, num_nodes)``, an integer part of exactly ``num_nodes`` zeros and ones (give ``mask.bool()``), an empty part,
    two parts of one split that share a node, a split of other than three parts, or one triple not wrapped in a list.

    Parameters
    ----------
    disjoint
        Refuse two parts of a split that share a node (the default); ``False`` only where a caller builds such a
        split on purpose (:func:`~gca.evaluate.classification.validation_accuracy` hands the probe a validation
        node as its unread test part).
    """
    splits = splits if hasattr(splits, "__len__") else list(splits)
    if len(splits) == 3 and all(getattr(part, "ndim", 0) == 1 for part in splits):  # arrays, not triples
        raise EvaluationError(
            "splits is a list of (train, val, test) triples, one per split, but got one triple of "
            "arrays; pass [(train, val, test)]"
        )
    converted, changed = [], False
    for number, split in enumerate(splits, start=1):
        if len(split) != len(PARTS):
            raise EvaluationError(
                f"split {number} has {len(split)} parts; each split is (train, val, test) node indices or boolean masks"
            )
        parts = tuple(_node_indices(part, num_nodes, name, number) for name, part in zip(PARTS, split, strict=True))
        _check_parts(parts, num_nodes, number, disjoint)
        changed = changed or any(new is not old for new, old in zip(parts, split, strict=True))
        converted.append(parts)
    if not changed:
        return splits
    if isinstance(splits, DrawnSplits):
        return DrawnSplits(converted, splits.removed, splits.own)
    return converted


def _check_parts(parts: Split, num_nodes: int, number: int, disjoint: bool) -> None:
    """An :class:`EvaluationError` where a part of split ``number`` holds no node (an all-``False`` mask) or, with
    ``disjoint``, two parts share a node (a test accuracy on training nodes would read as a sound one)."""
    for name, part in zip(PARTS, parts, strict=True):
        if part.size == 0:
            raise EvaluationError(
                f"the {name} part of split {number} holds no node (an empty index array or a mask "
                "with no True entry); every part needs at least one"
            )
    if not disjoint:
        return
    seen = np.full(num_nodes, -1, dtype=np.int8)  # the part each node was first seen in
    for which, part in enumerate(parts):
        before = seen[part]
        shared = before[(before >= 0) & (before != which)]
        if shared.size:
            count = int(np.unique(part[(before >= 0) & (before != which)]).size)
            raise EvaluationError(
                f"the {PARTS[int(shared[0])]} and {PARTS[which]} parts of split {number} share "
                f"{count} node{'s' if count != 1 else ''}; a node may be in one part only"
            )
        seen[part] = which


def _node_indices(part, num_nodes: int, name: str, number: int) -> np.ndarray:
    """One part of a split as int64 node indices (:func:`index_splits`); an int64 array is returned as it is."""
    values = _as_numpy(part.detach() if hasattr(part, "detach") else part)
    where = f"the {name} part of split {number}"
    if values.ndim != 1:
        raise EvaluationError(
            f"{where} has shape {values.shape}; give a 1-D array of node indices or a boolean mask "
            f"of {num_nodes} entries (a [N, S] mask holds S splits: one triple per column)"
        )
    if values.dtype == np.bool_:
        if values.shape[0] != num_nodes:
            raise EvaluationError(
                f"{where} is a boolean mask of {values.shape[0]} entries but there are {num_nodes} "
                "nodes; a mask needs one entry per node (or give node indices)"
            )
        return np.flatnonzero(values)
    if values.size == 0:
        return values if values.dtype == np.int64 else np.empty(0, dtype=np.int64)
    if values.dtype.kind not in "iu":
        raise EvaluationError(
            f"{where} holds {values.dtype} values; give node indices (integers) or a boolean mask "
            f"of {num_nodes} entries"
        )
    low, high = int(values.min()), int(values.max())
    if low < 0 or high >= num_nodes:
        raise EvaluationError(
            f"{where} holds node ids in [{low}, {high}], outside [0, {num_nodes - 1}] for {num_nodes} nodes"
        )
    if values.shape[0] == num_nodes > 2 and high <= 1:
        raise EvaluationError(
            f"{where} is {num_nodes} zeros and ones, one per node: a mask stored as integers? give "
            "it as booleans (mask.bool()) or as node indices"
        )
    return part if isinstance(part, np.ndarray) and part.dtype == np.int64 else values.astype(np.int64)


def random_splits(
    num_nodes: int,
    num_splits: int = TASK_COUNTS["classify"],
    train: float = 0.1,
    val: float = 0.1,
    seed: int = 0,
    labels: np.ndarray | None = None,
    test: float | None = None,
    sizes: str = "round",
) -> list[Split]:
    """``num_splits`` random (train, val, test) index splits of ``range(num_nodes)``, disjoint within a split; with
    ``labels``, a draw whose training part misses a class is drawn again (at most 1,000 times).

    Parameters
    ----------
    num_nodes
        n, the nodes to split (``range(n)``); fewer than 3 is an :class:`EvaluationError`.
    num_splits
        How many splits to draw.
    train, val
        The fractions of the n nodes in the training and validation parts (each part at least one node).
    seed
        Seeds NumPy's generator: the same seed gives the same splits.
    labels
        The n nodes' labels; given, each training part holds every class (as far as its size allows).
    test
        The fraction in the test part; ``None``: every node not in training or validation.
    sizes
        ``"round"``: parts of ``round(fraction · n)`` nodes; ``"floor"``: ``int(fraction · n)``.
    """
    if num_nodes < 3:
        raise EvaluationError(f"linear evaluation needs at least 3 labelled nodes, got {num_nodes}")
    if sizes not in SIZES:
        raise EvaluationError(f"unknown split sizes {sizes!r}; choose {' or '.join(SIZES)}")
    cut = (lambda f: int(f * num_nodes)) if sizes == "floor" else (lambda f: int(round(f * num_nodes)))  # noqa: E731
    rng = np.random.default_rng(seed)
    n_train = max(1, cut(train))
    n_val = max(1, cut(val))
    n_test = num_nodes - n_train - n_val if test is None else cut(test)
    if n_test < 1 or n_train + n_val + n_test > num_nodes:
        raise EvaluationError(
            f"the fractions {train:g} / {val:g} / {test if test is not None else 'rest'} leave no "
            f"test nodes among {num_nodes}, or add up to more than 1"
        )
    y = None if labels is None else _as_numpy(labels)
    num_classes = None if y is None else np.unique(y).shape[0]
    splits = []
    for _ in range(num_splits):
        perm = rng.permutation(num_nodes)
        for _ in range(1000):
            if y is None or np.unique(y[perm[:n_train]]).shape[0] == min(num_classes, n_train):
                break
            perm = rng.permutation(num_nodes)
        end = n_train + n_val
        splits.append((perm[:n_train], perm[n_train:end], perm[end : end + n_test]))
    return splits


def renumber_classes(labels) -> np.ndarray:
    """Class numbers 0 … C−1 in the order of the class values (0 and 10⁹ are two classes); −1 (no label) stays −1."""
    y = _as_numpy(labels).astype(np.int64)
    labelled = y >= 0
    renumbered = np.full(y.shape, -1, dtype=np.int64)
    renumbered[labelled] = np.unique(y[labelled], return_inverse=True)[1]
    return renumbered


def drop_unlabelled(splits: list[Split], labels, dataset: str = "the graph") -> DrawnSplits:
    """``splits`` (a dataset's own) with every node labelled −1 removed from each part, and how many were removed
    from each part. A part that holds no labelled node is an :class:`EvaluationError` naming ``dataset``."""
    y = _as_numpy(labels)
    splits = index_splits(splits, y.shape[0])
    removed = dict.fromkeys(PARTS, 0)
    kept = []
    for number, split in enumerate(splits, start=1):
        parts = []
        for name, part in zip(PARTS, split, strict=True):
            part = np.asarray(part)
            labelled = part[y[part] >= 0]
            removed[name] += int(part.size - labelled.size)
            if labelled.size == 0:
                raise EvaluationError(
                    f"the {name} part of {dataset}'s split {number} holds no labelled node "
                    f"({part.size} nodes, all without a label); use {option('SplitSetting.scheme', 'random')}"
                )
            parts.append(labelled)
        kept.append(tuple(parts))
    return DrawnSplits(kept, removed, own=True)


def unlabelled_in(splits: list[Split], labels, parts: tuple[str, ...] = PARTS) -> tuple[int, str, int] | None:
    """(split number, part, count) of the first of ``parts`` (``"train"``, ``"val"``, ``"test"``) of ``splits``
    that holds nodes labelled −1, else ``None``."""
    y = _as_numpy(labels)
    for number, split in enumerate(index_splits(splits, y.shape[0]), start=1):
        for name, part in zip(PARTS, split, strict=True):
            if name not in parts:
                continue
            count = int((y[np.asarray(part)] < 0).sum())
            if count:
                return number, name, count
    return None


def few_label_splits(
    labels: np.ndarray,
    num_splits: int,
    shots: int,
    val: float = 0.1,
    seed: int = 0,
    test: float | None = None,
    class_names: list[str] | None = None,
) -> list[Split]:
    """``num_splits`` splits with exactly ``shots`` training nodes of every class (``labels`` all ≥ 0).

    Parameters
    ----------
    labels
        The labelled nodes' class numbers (all ≥ 0).
    num_splits
        How many splits to draw.
    shots
        k, the training nodes of every class; at least 1 and fewer than the smallest class's size.
    val
        The fraction of the nodes in the validation part (drawn from the nodes not in training).
    seed
        Seeds NumPy's generator.
    test
        The fraction of the nodes in the test part; ``None``: every node not in training or validation.
    class_names
        How the user's files name class number c, for the messages (``None``: the number).
    """
    classes, sizes = np.unique(labels, return_counts=True)
    named_as = (lambda c: repr(class_names[c])) if class_names else str  # noqa: E731
    if shots < 1:
        raise EvaluationError(f"few-label splits need at least 1 training node per class, got {shots}")
    if shots >= sizes.min():
        small = classes[sizes <= shots]
        named = ", ".join(named_as(c) for c in small[:5]) + (f" and {small.size - 5} more" if small.size > 5 else "")
        what = f"class{'es' if small.size > 1 else ''} {named}"
        if sizes.min() == 1:  # no number of shots helps: a class of one node has nothing left to test on
            single = classes[sizes == 1]
            raise EvaluationError(
                f"class {named_as(single[0])} has a single labelled node ({single.size} such class"
                f"{'es' if single.size > 1 else ''}), so no {option('shots')} leaves one of it for "
                f"validation and testing; label more nodes of it or use {option('SplitSetting.scheme', 'random')}"
            )
        raise EvaluationError(
            f"{shots} training nodes per class leave no node of {what} (smallest: class "
            f"{named_as(classes[sizes.argmin()])}, {sizes.min()} nodes) for validation and testing; "
            f"give {option('shots', int(sizes.min() - 1))} or fewer"
        )
    n = labels.shape[0]
    n_val = max(1, int(round(val * n)))
    rng = np.random.default_rng(seed)
    splits = []
    for _ in range(num_splits):
        train = np.concatenate([rng.choice(np.flatnonzero(labels == c), size=shots, replace=False) for c in classes])
        rest = rng.permutation(np.setdiff1d(np.arange(n), train))
        n_test = rest.size - n_val if test is None else int(round(test * n))
        if n_test < 1 or n_val + n_test > rest.size:
            raise EvaluationError(
                f"after {train.size} training nodes, {rest.size} are left: too few for a "
                f"validation fraction of {val:g} and a test part"
            )
        splits.append((train, rest[:n_val], rest[n_val : n_val + n_test]))
    return splits


@dataclass(frozen=True)
class SplitSetting:
    """How evaluation splits are drawn (the schemes: module docstring).

    Parameters
    ----------
    scheme
        ``"auto"``, ``"random"``, ``"public"`` or ``"fewshot"``.
    count
        How many splits to draw (1 to 1,000); a dataset with one public split gives one.
    train, val
        The training and validation fractions of the labelled nodes (``random``; ``val`` also for ``fewshot``).
    test
        The test fraction; ``None``: every labelled node not in training or validation.
    shots
        ``fewshot``: the training nodes of every class (and only there).
    sizes
        ``random``: ``"round"`` or ``"floor"`` (module docstring).
    """

    scheme: str = "auto"
    count: int = TASK_COUNTS["classify"]
    train: float = 0.1
    val: float = 0.1
    test: float | None = None  # None: every labelled node not in training or validation
    shots: int = 0  # fewshot: training nodes per class
    sizes: str = "round"  # random: part sizes round(fraction · n), or "floor": int(fraction · n) as the authors cut

    def for_protocol(self, protocol: str) -> SplitSetting:
        """The setting as ``protocol`` draws it: ``sizes = "floor"`` under ``authors``, as given under ``sklearn``."""
        return replace(self, sizes="floor") if protocol == "authors" else self

    def check(self) -> SplitSetting:
        """Refuse a setting that cannot draw a split, before any data is read."""
        if self.scheme not in SPLIT_SCHEMES:
            raise EvaluationError(f"unknown split scheme {self.scheme!r}; choose one of {', '.join(SPLIT_SCHEMES)}")
        if self.sizes not in SIZES:
            raise EvaluationError(f"unknown split sizes {self.sizes!r}; choose {' or '.join(SIZES)}")
        if not 1 <= self.count <= 1000:
            raise EvaluationError(f"{option('SplitSetting.count')} must lie in [1, 1000], got {self.count}")
        for name in ("train", "val") + (("test",) if self.test is not None else ()):
            value = getattr(self, name)
            if not 0 < value < 1:
                raise EvaluationError(f"the {name} fraction must lie in (0, 1), got {value}")
        total = self.train + self.val + (self.test or 0)
        if total > 1 + 1e-9 or (self.test is None and total >= 1):
            parts = f"{self.train:g} + {self.val:g}" + (f" + {self.test:g}" if self.test is not None else "")
            raise EvaluationError(
                f"the train, validation and test fractions add up to more than 1 or leave no test nodes: {parts}"
            )
        if (self.scheme == "fewshot") != (self.shots > 0):
            raise EvaluationError(
                f"{option('shots')} (training nodes per class) goes with {option('SplitSetting.scheme', 'fewshot')}, "
                "which needs it"
            )
        return self

    def draw(
        self,
        labels,
        seed: int = 0,
        prescribed: list[Split] | None = None,
        public: list[Split] | None = None,
        dataset: str = "the graph",
        class_names: list[str] | None = None,
    ) -> DrawnSplits:
        """The splits of the labelled nodes (label ≥ 0), a :class:`DrawnSplits`. ``labels`` may be what
        :func:`gca.datasets.load_dataset` returned, read for labels, splits, name and class names:
        ``SplitSetting("public").draw(loaded)``.

        Parameters
        ----------
        labels
            One label per node (−1: no label), or a :class:`~gca.datasets.base.LoadedDataset`.
        seed
            Seeds the random and few-label draws.
        prescribed
            The splits the dataset's benchmark evaluates on (taken by ``auto``).
        public
            The dataset's public split (taken by ``public``).
        dataset, class_names
            The dataset's name and how its files name class number c, for the messages.
        """
        self.check()
        if hasattr(labels, "data") and hasattr(labels, "public"):  # a LoadedDataset: everything it knows
            loaded = labels
            labels, prescribed, public = loaded.data.y, loaded.splits, loaded.public
            dataset, class_names = loaded.name, loaded.class_names
        if self.scheme == "public" or (self.scheme == "auto" and prescribed):
            own = prescribed if self.scheme == "auto" else public
            if not own:
                # labels alone, in Python: the split may be there, kept apart by load_dataset
                hint = (
                    (
                        "; load_dataset keeps a dataset's public split apart from its labels: pass the loaded dataset, "
                        "draw(loaded), or public=loaded.public"
                    )
                    if dataset == "the graph"
                    else ""
                )
                raise EvaluationError(
                    f"{dataset} has no public split (Planetoid's Cora, CiteSeer and PubMed, Wiki-CS "
                    f"and OGB datasets have one){hint}; use {option('SplitSetting.scheme', 'random')} or "
                    f"{option('SplitSetting.scheme', 'fewshot')}"
                )
            return drop_unlabelled(own, labels, dataset)
        y = _as_numpy(labels)
        labelled = np.flatnonzero(y >= 0)
        classes = np.unique(y[labelled])
        if classes.size < 2:
            what = f"only one class ({classes[0]})" if classes.size else "no labelled node"
            raise EvaluationError(
                f"the labels hold {what}; evaluation needs two or more classes (or use {option('evaluate', False)})"
            )
        if self.scheme == "fewshot":
            inner = few_label_splits(y[labelled], self.count, self.shots, self.val, seed, self.test, class_names)
        else:
            inner = random_splits(
                labelled.size, self.count, self.train, self.val, seed, y[labelled], self.test, self.sizes
            )
        if labelled.size == y.shape[0]:
            return DrawnSplits(inner)
        return DrawnSplits([tuple(labelled[part] for part in split) for split in inner])

    def record(self, splits: list[Split] | None = None) -> dict:
        """What ``results.json`` says of the splits: the scheme, its fractions, ``cut`` where it is not ``round``,
        and, given the ``splits`` drawn, their count and the node counts of the first split's parts (``sizes``)."""
        entry: dict = {"scheme": self.scheme}
        if getattr(splits, "own", False):  # the dataset's own split: no fraction of gca's played a part
            entry["used"] = "the dataset's own split"
        elif self.scheme == "fewshot":
            entry.update(shots=self.shots, val=self.val, test=self.test)
        elif self.scheme != "public":
            entry.update(train=self.train, val=self.val, test=self.test)
            if self.sizes != "round":  # only when not the default: a default record has no "cut"
                entry["cut"] = self.sizes
        if splits:
            entry.update(count=len(splits), sizes=[len(part) for part in splits[0]])
            entry["unlabelled_removed"] = dict(getattr(splits, "removed", None) or dict.fromkeys(PARTS, 0))
        return entry


def label_splits(labels, count: int, seed: int) -> list[Split]:
    """``count`` random 10/10/80 splits over the labelled nodes (label −1 marks a node without one), drawn from
    ``seed``, checked first: evaluation needs two classes among the labelled nodes."""
    return SplitSetting("random", count).draw(labels, seed)
