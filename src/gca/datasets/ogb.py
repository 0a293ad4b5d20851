"""Graphs in OGB's node-property layout (ogbn-arxiv, ogbn-products, …), read without the ``ogb`` package.

OGB's archives unpack into a folder such as ``ogbn_arxiv/`` holding::

    raw/edge.csv.gz         one "source,target" pair per line, no header
    raw/node-feat.csv.gz    one row of comma-separated features per node
    raw/node-label.csv.gz   one label per node (optional)
    split/<type>/{train,valid,test}.csv.gz   node indices, one per line (e.g. split/time/ for arxiv)

Edges are made undirected; the official split is the dataset's one public split (C chosen on ``valid``, accuracy
measured on ``test``). Design notes: docs/design/data-and-runs.md.
"""

from __future__ import annotations

import gzip
import itertools
import zipfile
from pathlib import Path

import numpy as np
import torch
from torch_geometric.data import Data

from ..errors import option
from ..graph.edges import listed_edges
from .base import DatasetError, LoadedDataset, class_labels, float32_features

#: canonical name → (OGB's name, folder the archive unpacks into, archive URL)
OGB_DATASETS = {
    "ogbnarxiv": ("ogbn-arxiv", "ogbn_arxiv", "http://snap.stanford.edu/ogb/data/nodeproppred/arxiv.zip"),
    "ogbnproducts": ("ogbn-products", "ogbn_products", "http://snap.stanford.edu/ogb/data/nodeproppred/products.zip"),
}
REQUIRED = ("raw/edge.csv.gz", "raw/node-feat.csv.gz")


def is_ogb_folder(folder: Path) -> bool:
    return all((folder / name).is_file() for name in REQUIRED)


def load_named(key: str, data_dir: Path) -> LoadedDataset:
    """A named OGB dataset (``key``: ``"ogbnarxiv"``, …) from ``data_dir``, downloaded there when missing and online."""
    name, folder_name, url = OGB_DATASETS[key]
    folder = data_dir / folder_name
    if not is_ogb_folder(folder):
        _download(name, url, data_dir, folder)
    return read_ogb_folder(folder, name)


def _download(name: str, url: str, data_dir: Path, folder: Path) -> None:
    from torch_geometric.data import download_url

    expected = f"{', '.join(REQUIRED)} in {folder}"
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        archive = Path(download_url(url, str(data_dir), log=False))
        with zipfile.ZipFile(archive) as zf:
            zf.extractall(data_dir)  # the archive's top folder is e.g. arxiv/
        unpacked = data_dir / Path(url).stem
        if unpacked.is_dir() and not folder.exists():
            unpacked.rename(folder)
        archive.unlink(missing_ok=True)
    except (OSError, ValueError, zipfile.BadZipFile) as exc:
        reason = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        raise DatasetError(
            f"{name} not found: expected {expected} (the download failed: {reason}); get {url} and unpack it into "
            f"{data_dir}, or pass {option('data_dir')} to the folder that holds {folder.name}/"
        ) from None
    if not is_ogb_folder(folder):
        raise DatasetError(f"{name}: the archive from {url} did not unpack into {folder} as expected")


def _table(path: Path, dtype: type) -> np.ndarray:
    try:
        with gzip.open(path, "rt") as f:
            return np.loadtxt(f, delimiter=",", dtype=dtype, ndmin=2)
    except (OSError, ValueError, EOFError) as exc:
        raise DatasetError(f"cannot read {path} as OGB's comma-separated table ({type(exc).__name__})") from None


def read_ogb_folder(folder: str | Path, name: str | None = None) -> LoadedDataset:
    """A folder in OGB's node-property layout as a :class:`LoadedDataset` with its official split (``name``:
    ``None`` for the folder's)."""
    folder = Path(folder)
    if not is_ogb_folder(folder):
        raise DatasetError(f"{folder} is not in OGB's layout: expected {', '.join(REQUIRED)}")
    x = float32_features(_table(folder / "raw" / "node-feat.csv.gz", np.float64), folder / "raw" / "node-feat.csv.gz")
    num_nodes = x.shape[0]
    edges = _table(folder / "raw" / "edge.csv.gz", np.int64)
    if edges.shape[1] != 2 or (edges.size and (edges.min() < 0 or edges.max() >= num_nodes)):
        raise DatasetError(f"{folder}/raw/edge.csv.gz must list node pairs in [0, {num_nodes - 1}]")
    edge_index, _ = listed_edges(edges[:, 0], edges[:, 1], num_nodes, directed=False)
    y, notes = None, []
    labels = folder / "raw" / "node-label.csv.gz"
    if labels.is_file():
        table = _table(labels, np.float64)
        if table.shape[1] != 1:
            raise DatasetError(f"{labels} has {table.shape[1]} columns; give one label per line")
        y, notes = class_labels(table[:, 0], labels, num_nodes)
    splits = _official_split(folder, num_nodes)
    data = Data(x=torch.from_numpy(x), edge_index=edge_index, y=y, num_nodes=num_nodes)
    # By name the dataset's shipped settings apply; a folder given by path starts from the defaults.
    return LoadedDataset(
        name or folder.name, data, splits=splits, public=splits, named=name is not None, warnings=notes
    )


def _official_split(folder: Path, num_nodes: int) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]] | None:
    kinds = sorted(p for p in (folder / "split").glob("*") if p.is_dir()) if (folder / "split").is_dir() else []
    for kind in kinds:
        parts = [kind / f"{part}.csv.gz" for part in ("train", "valid", "test")]
        if all(p.is_file() for p in parts):
            indices = [_table(p, np.int64)[:, 0] for p in parts]
            if any(i.size and (i.min() < 0 or i.max() >= num_nodes) for i in indices):
                raise DatasetError(f"{kind} holds node indices outside [0, {num_nodes - 1}]")
            for path, part in zip(parts, indices, strict=True):
                if part.size == 0:
                    raise DatasetError(f"{path} lists no node; an official split needs nodes in each part")
                values, counts = np.unique(part, return_counts=True)
                if (counts > 1).any():
                    raise DatasetError(f"{path} lists node {values[counts > 1][0]} twice; list each node once")
            for (a, first), (b, second) in itertools.combinations(zip(parts, indices, strict=True), 2):
                shared = np.intersect1d(first, second)
                if shared.size:
                    raise DatasetError(
                        f"{a} and {b} share {shared.size} nodes (e.g. node {shared[0]}); the parts "
                        "of a split must be disjoint"
                    )
            return [tuple(indices)]
    return None
