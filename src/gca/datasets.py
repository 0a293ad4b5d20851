"""Datasets by the paper's names, graph files in the gnn-benchmark npz layout, and the built-in Karate club.

Named datasets go through PyTorch Geometric's dataset classes, which download their raw files when online. A
data directory may be read-only: processed files then go to a writable cache (``$GCA_CACHE_DIR``, default
``~/.cache/gca``) whose ``raw`` folders link back to the read-only files.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp
import torch
from torch_geometric.data import Data
from torch_geometric.utils import to_undirected

from .evaluate import Split, mask_splits

#: The two factions of Zachary's karate club after the split (Zachary, 1977): the nodes that followed the
#: instructor ("Mr. Hi", node 0); all others followed the administrator (node 33).
KARATE_INSTRUCTOR_FACTION = (0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 12, 13, 16, 17, 19, 21)
#: The two leaders ("coaches" in the paper's Figure 3).
KARATE_LEADERS = (0, 33)


class DatasetError(RuntimeError):
    """A dataset cannot be found or read; the message is one line meant for the user."""


@dataclass
class LoadedDataset:
    """A graph plus what evaluation needs: ``splits`` are public splits or ``None`` (use 20 random ones).

    ``named`` is true for the built-in and named datasets, whose shipped hyperparameters apply; a graph file
    read by path gets the defaults whatever its file is called.
    """

    name: str
    data: Data
    splits: list[Split] | None = None
    named: bool = True
    node_ids: list[str] | None = None  # the files' node ids for row i (user files), else None (ids are 0..N-1)
    directed: bool | None = None  # None: undirected exactly when every edge has its reverse


@dataclass(frozen=True)
class _Spec:
    name: str  # the paper's name
    folder: str  # sub-folder of the data directory that holds raw/ (and processed/)
    raw_files: tuple[str, ...]
    url: str
    build: Callable[[str], object]  # root → PyG dataset


def _planetoid(name: str) -> Callable[[str], object]:
    def build(root: str) -> object:
        from torch_geometric.datasets import Planetoid

        return Planetoid(root, name)

    return build


def _amazon(name: str) -> Callable[[str], object]:
    def build(root: str) -> object:
        from torch_geometric.datasets import Amazon

        return Amazon(root, name)

    return build


def _coauthor(name: str) -> Callable[[str], object]:
    def build(root: str) -> object:
        from torch_geometric.datasets import Coauthor

        return Coauthor(root, name)

    return build


def _wikics(root: str) -> object:
    from torch_geometric.datasets import WikiCS

    return WikiCS(os.path.join(root, "WikiCS"), is_undirected=True)


_GNN_BENCHMARK = "https://github.com/shchur/gnn-benchmark/raw/master/data/npz/"
_PLANETOID = "https://github.com/kimiyoung/planetoid/raw/master/data/"


def _planetoid_spec(name: str) -> _Spec:
    parts = ("x", "tx", "allx", "y", "ty", "ally", "graph", "test.index")
    files = tuple(f"ind.{name.lower()}.{part}" for part in parts)
    return _Spec(name, name, files, _PLANETOID, _planetoid(name))


DATASETS: dict[str, _Spec] = {
    "wikics": _Spec(
        "Wiki-CS", "WikiCS", ("data.json",), "https://github.com/pmernyei/wiki-cs-dataset/raw/master/dataset/", _wikics
    ),
    "amazoncomputers": _Spec(
        "Amazon-Computers", "Computers", ("amazon_electronics_computers.npz",), _GNN_BENCHMARK, _amazon("Computers")
    ),
    "amazonphoto": _Spec("Amazon-Photo", "Photo", ("amazon_electronics_photo.npz",), _GNN_BENCHMARK, _amazon("Photo")),
    "coauthorcs": _Spec("Coauthor-CS", "CS", ("ms_academic_cs.npz",), _GNN_BENCHMARK, _coauthor("CS")),
    "coauthorphysics": _Spec(
        "Coauthor-Physics", "Physics", ("ms_academic_phy.npz",), _GNN_BENCHMARK, _coauthor("Physics")
    ),
    "cora": _planetoid_spec("Cora"),
    "citeseer": _planetoid_spec("CiteSeer"),
    "pubmed": _planetoid_spec("PubMed"),
}
DATASET_NAMES = ("Karate", *(spec.name for spec in DATASETS.values()))


def canonical_name(name: str) -> str:
    """'Amazon-Photo', 'amazon_photo', 'AmazonPhoto' → 'amazonphoto'."""
    return re.sub(r"[^a-z0-9]", "", name.lower())


def default_data_dir() -> Path:
    return Path(os.environ.get("GCA_DATA_DIR", Path.home() / ".cache" / "gca" / "data"))


def default_cache_dir() -> Path:
    return Path(os.environ.get("GCA_CACHE_DIR", Path.home() / ".cache" / "gca"))


def load_dataset(name: str, data_dir: str | Path | None = None, cache_dir: str | Path | None = None) -> LoadedDataset:
    """Load ``Karate``, a dataset of :data:`DATASET_NAMES`, or a graph file ``*.npz`` by path."""
    if name.lower().endswith(".npz") or os.sep in name:
        path = Path(name)
        return LoadedDataset(path.stem, read_npz_graph(path), named=False)
    key = canonical_name(name)
    if key in ("karate", "karateclub"):
        return LoadedDataset("Karate", karate_club())
    if key not in DATASETS:
        raise DatasetError(
            f"unknown dataset {name!r}; choose one of {', '.join(DATASET_NAMES)} or give a path to an .npz graph file"
        )
    spec = DATASETS[key]
    data_dir = Path(data_dir) if data_dir is not None else default_data_dir()
    cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    dataset = _open(spec, data_dir, cache_dir)
    data = dataset[0]
    splits = None
    if key == "wikics":
        splits = mask_splits(data.train_mask, data.val_mask, data.test_mask)
    return LoadedDataset(spec.name, Data(x=data.x, edge_index=data.edge_index, y=data.y), splits)


def _writable(path: Path) -> bool:
    """Writable by us *and* not marked read-only: root may write anywhere, but a folder without write bits
    was made read-only on purpose, and processed files must not land in it."""
    while not path.exists():
        path = path.parent
    return os.access(path, os.W_OK) and bool(path.stat().st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


def _open(spec: _Spec, data_dir: Path, cache_dir: Path) -> object:
    raw_dir = data_dir / spec.folder / "raw"
    missing = [f for f in spec.raw_files if not (raw_dir / f).is_file()]
    root = data_dir
    if not missing and not _writable(data_dir / spec.folder / "processed"):
        # Read-only data: process into the cache, reading the raw files through a link.
        root = cache_dir / "processed-data"
        mirror = root / spec.folder / "raw"
        mirror.parent.mkdir(parents=True, exist_ok=True)
        if mirror.is_symlink() and mirror.resolve() != raw_dir.resolve():
            mirror.unlink()
        if not mirror.exists():
            mirror.symlink_to(raw_dir.resolve(), target_is_directory=True)
    elif missing and not _writable(raw_dir):
        raise DatasetError(_missing_message(spec, raw_dir, "the folder is not writable, so it cannot be downloaded"))
    try:
        return spec.build(str(root))
    except (OSError, ValueError, RuntimeError) as exc:
        if missing:
            reason = f"the download failed: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
            raise DatasetError(_missing_message(spec, raw_dir, reason)) from None
        raise DatasetError(f"{spec.name}: cannot read the files in {raw_dir}: {exc}") from None


def _missing_message(spec: _Spec, raw_dir: Path, reason: str) -> str:
    return (
        f"{spec.name} not found: expected {', '.join(spec.raw_files)} in {raw_dir} ({reason}); "
        f"get them from {spec.url} or pass --data-dir to the folder that holds {spec.folder}/raw/"
    )


def read_npz_graph(path: str | Path, directed: bool = False) -> Data:
    """A graph in the gnn-benchmark npz layout (``adj_*``, ``attr_*`` CSR arrays, optional ``labels``).

    Features stay sparse and keep their values. Unless ``directed``, edges are made undirected (as the
    Amazon/Coauthor files are used in the paper).
    """
    path = Path(path)
    if not path.is_file():
        raise DatasetError(f"graph file {path} does not exist")
    try:
        with np.load(path, allow_pickle=False) as f:
            arrays = {k: f[k] for k in f.files if k not in ("node_names", "attr_names", "class_names", "idx_to_node")}
    except Exception as exc:  # noqa: BLE001 - any unreadable file is the same user error
        raise DatasetError(f"cannot read {path} as an .npz graph file ({type(exc).__name__}: {exc})") from None
    try:
        adj = sp.csr_matrix(
            (arrays["adj_data"], arrays["adj_indices"], arrays["adj_indptr"]), shape=tuple(arrays["adj_shape"])
        )
        if "attr_data" in arrays:
            attr = sp.csr_matrix(
                (arrays["attr_data"], arrays["attr_indices"], arrays["attr_indptr"]),
                shape=tuple(arrays["attr_shape"]),
            )
        elif "attr_matrix" in arrays:
            attr = sp.csr_matrix(arrays["attr_matrix"])
        else:
            raise KeyError("attr_data")
    except KeyError as exc:
        raise DatasetError(
            f"{path} lacks the array {exc.args[0]!r}: an npz graph needs adj_data/adj_indices/adj_indptr/adj_shape "
            "and attr_data/attr_indices/attr_indptr/attr_shape (or attr_matrix)"
        ) from None
    except ValueError as exc:
        raise DatasetError(f"{path} holds malformed sparse arrays: {exc}") from None
    if adj.shape[0] != adj.shape[1] or adj.shape[0] != attr.shape[0]:
        raise DatasetError(f"{path}: adjacency {adj.shape} and features {attr.shape} do not describe the same nodes")
    coo = adj.tocoo()
    edge_index = torch.from_numpy(np.vstack([coo.row, coo.col]).astype(np.int64))
    if not directed:
        edge_index = to_undirected(edge_index, num_nodes=adj.shape[0])
    attr = attr.tocoo()
    x = torch.sparse_coo_tensor(
        torch.from_numpy(np.vstack([attr.row, attr.col]).astype(np.int64)),
        torch.from_numpy(attr.data.astype(np.float32)),
        size=attr.shape,
    ).coalesce()
    data = Data(x=x, edge_index=edge_index, num_nodes=adj.shape[0])
    if "labels" in arrays:
        labels = np.asarray(arrays["labels"])
        if labels.ndim == 1 and labels.shape[0] == adj.shape[0]:
            data.y = torch.from_numpy(labels.astype(np.int64))
    return data


def karate_club() -> Data:
    """Zachary's karate club: 34 nodes, 78 edges, identity features, labels = the two factions."""
    from torch_geometric.datasets import KarateClub

    data = KarateClub()[0]
    y = torch.ones(data.num_nodes, dtype=torch.long)
    y[list(KARATE_INSTRUCTOR_FACTION)] = 0
    return Data(x=data.x, edge_index=data.edge_index, y=y)
