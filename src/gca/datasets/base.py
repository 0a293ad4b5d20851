"""What every source of graphs shares: the loaded dataset, its error, and the checks that turn a file's arrays into
gca's tensors without silently changing them (float32 features, class labels; edge lists: :mod:`gca.graph.edges`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch_geometric.data import Data

from ..environment import env_folder
from ..errors import DatasetError
from ..evaluate.splits import Split
from ..graph.edges import FLOAT32_MAX
from ..io import check_regular_file as check_regular_file


@dataclass
class LoadedDataset:
    """A graph plus what evaluation needs (splits: :mod:`gca.evaluate.splits`).

    Parameters
    ----------
    name
        The dataset's display name (a file's stem for a graph read by path).
    data
        The graph: a PyG ``Data`` with ``x``, ``edge_index`` and, where labelled, ``y`` (−1 for an unlabelled node).
    splits, public
        The splits its benchmark evaluates on (Wiki-CS's, OGB's), each ``(train, val, test)`` arrays of node ids
        (``None`` for random ones), and its public split (Planetoid's, Wiki-CS's, OGB's), if any.
    named
        A built-in or named dataset, whose shipped hyperparameters apply; a graph file read by path gets the
        defaults whatever its file is called.
    node_ids
        The files' node id of row i (user files); ``None`` when ids are ``0..N-1``.
    directed
        ``None``: undirected exactly when every edge has its reverse; else as the graph was read.
    warnings
        One line each about the files read (repeated edges, unlabelled nodes, unread columns).
    class_names, feature_names
        A label file's name of class c, and a sparse feature file's name of feature column j, where the file named
        them.
    """

    name: str
    data: Data
    splits: list[Split] | None = None
    public: list[Split] | None = None  # the dataset's public split (Planetoid's, Wiki-CS's, OGB's), if any
    named: bool = True
    #: the files' node id of row i (user files): an int64 array for integer ids, else a list of strings; None: 0..N-1
    node_ids: list[str] | np.ndarray | None = None
    directed: bool | None = None  # None: undirected exactly when every edge has its reverse
    warnings: list[str] = field(default_factory=list)  # one line each, about the files read
    class_names: list[str] | None = None  # a label file's name of class number c, where the file named them
    feature_names: list[str] | None = None  # a sparse feature file's name of column j, where it named them

    def __post_init__(self) -> None:
        # the Data carries the columns' names too, so a model fitted on it keeps them (GCA.feature_names_in_)
        if self.feature_names is not None and isinstance(self.data, Data):
            self.data.feature_names = list(self.feature_names)


def float32_features(values: np.ndarray, path: str | Path) -> np.ndarray:
    """``values`` as float32, refusing what the cast would silently change: complex numbers and magnitudes beyond
    float32's range."""
    if values.dtype == np.float32:
        return values
    if np.iscomplexobj(values):
        raise DatasetError(f"feature file {path} holds complex numbers; give real-valued features")
    finite = values[np.isfinite(values)] if values.dtype.kind == "f" else values
    if finite.size and float(np.abs(finite).max()) > FLOAT32_MAX:
        raise DatasetError(
            f"feature file {path} holds values up to {float(np.abs(finite).max()):.3g}, beyond float32's range "
            f"(±{FLOAT32_MAX:.3g}); rescale the features"
        )
    return values.astype(np.float32)


def stored_features(values: np.ndarray, path: str | Path) -> np.ndarray:
    """A dense feature array as gca holds it: float16 stays float16 (widened a block of rows at a time as read,
    :class:`gca.graph.features.DenseFeatures`), anything else becomes float32 (:func:`float32_features`)."""
    return values if values.dtype == np.float16 else float32_features(values, path)


def class_labels(values: np.ndarray, path: str | Path, num_nodes: int) -> tuple[torch.Tensor, list[str]]:
    """One class number per node from a file's label column, and the warnings to print.

    Class numbers are the integers 0, 1, 2, …, stored as integers or integral floats; NaN marks a node without a label
    (−1, counted in a warning). Anything else — negative, a fraction, infinite, a label too many or too few — is an
    error naming the file and the first bad row, never a silent cast.
    """
    values = np.asarray(values)
    if values.ndim != 1 or values.shape[0] != num_nodes:
        raise DatasetError(f"{path}: the labels have shape {values.shape}; give one label per node ({num_nodes})")
    if values.dtype.kind not in "iuf" and values.dtype != np.bool_:
        raise DatasetError(f"{path}: the labels are {values.dtype} values; give class numbers 0, 1, 2, …")
    missing = np.isnan(values) if values.dtype.kind == "f" else np.zeros(num_nodes, dtype=bool)
    present = values[~missing]
    bad = (
        (~np.isfinite(present) | (present < 0) | (present != np.floor(present)))
        if values.dtype.kind == "f"
        else (present < 0)
    )
    if bad.any():
        row = int(np.flatnonzero(~missing)[np.argmax(bad)])
        raise DatasetError(
            f"{path}: the label of node {row} is {values[row].item()!r}; labels must be class numbers 0, 1, 2, … "
            "(NaN for a node without one)"
        )
    if present.size and float(present.max()) >= 2**31:
        raise DatasetError(f"{path}: a class number reaches {present.max():.0f}; number the classes 0, 1, 2, …")
    labels = np.full(num_nodes, -1, dtype=np.int64)
    labels[~missing] = present.astype(np.int64)
    count = int(missing.sum())
    notes = (
        [f"{count} of {num_nodes} nodes in {path} have no label (NaN); they are left out of evaluation"]
        if count
        else []
    )
    return torch.from_numpy(labels), notes


def default_data_dir() -> Path:
    return env_folder("GCA_DATA_DIR", Path.home() / ".cache" / "gca" / "data")


def default_cache_dir() -> Path:
    return env_folder("GCA_CACHE_DIR", Path.home() / ".cache" / "gca")


def mask_splits(train_mask: torch.Tensor, val_mask: torch.Tensor, test_mask: torch.Tensor) -> list[Split]:
    """Public splits as ``(train, val, test)`` node-id arrays, from boolean masks of shape ``[N]`` (shared by every
    split) or ``[N, S]`` (one column per split, as in Wiki-CS)."""

    def columns(mask: torch.Tensor, count: int) -> list[np.ndarray]:
        mask = mask.cpu().numpy().astype(bool)
        if mask.ndim == 1:
            return [np.flatnonzero(mask)] * count
        return [np.flatnonzero(mask[:, i]) for i in range(mask.shape[1])]

    count = max(m.shape[1] if m.dim() == 2 else 1 for m in (train_mask, val_mask, test_mask))
    return list(zip(columns(train_mask, count), columns(val_mask, count), columns(test_mask, count), strict=True))
