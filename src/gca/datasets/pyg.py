"""PyTorch Geometric's named datasets (the paper's five, the Planetoid three) and the built-in Karate club.

Each source is declared once in :data:`DATASETS`; PyG downloads the raw files when online. Where a data directory
is read-only, processed files go to a writable cache (``$GCA_CACHE_DIR``, default ``~/.cache/gca``) whose ``raw``
folders link back to the read-only files.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
from torch_geometric.data import Data

from ..errors import option
from ..io import file_identity
from .base import DatasetError, LoadedDataset, mask_splits

#: The two factions of Zachary's karate club after the split (Zachary, 1977): the nodes that followed the
#: instructor ("Mr. Hi", node 0); all others followed the administrator (node 33).
KARATE_INSTRUCTOR_FACTION = (0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 12, 13, 16, 17, 19, 21)
#: Names the built-in Karate club answers to (after :func:`gca.choices.canonical_name`).
KARATE_NAMES = ("karate", "karateclub")
#: The two leaders ("coaches" in the paper's Figure 3).
KARATE_LEADERS = (0, 33)


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


def load_spec(spec: _Spec, folder: Path, cache_dir: Path) -> LoadedDataset:
    """The dataset ``spec`` (an entry of :data:`DATASETS`) from ``folder`` (which holds ``raw/``), processed there or in
    ``cache_dir``."""
    created = _first_missing(folder)
    try:
        return _loaded(spec, _open(spec, folder, cache_dir))
    except BaseException:
        if created is not None:  # a failed download (say, a mistyped data folder offline) leaves no empty folders
            _remove_empty(created)
        raise


def _first_missing(folder: Path) -> Path | None:
    """The outermost of ``folder`` and its parents that does not exist yet (``None``: ``folder`` exists)."""
    missing = None
    for path in (folder, *folder.parents):
        if path.exists():
            return missing
        missing = path
    return missing


def _remove_empty(top: Path) -> None:
    """Remove ``top`` and the folders below it, bottom up, as far as they are empty (a file keeps its folders)."""
    if not top.is_dir():
        return
    for path in sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
        with contextlib.suppress(OSError):
            path.rmdir()
    with contextlib.suppress(OSError):
        top.rmdir()


def is_dataset_folder(folder: Path) -> bool:
    """Does ``folder/raw`` hold one named dataset's raw files?"""
    return _spec_of(folder) is not None


def load_folder(folder: Path, cache_dir: Path) -> LoadedDataset:
    """The named dataset whose raw files ``folder/raw`` holds, processed files in ``cache_dir`` where the folder cannot
    hold them."""
    spec = _spec_of(folder)
    if spec is None:
        raise DatasetError(f"{folder}/raw holds none of the named datasets' raw files")
    return load_spec(spec, folder, cache_dir)


def _spec_of(folder: Path) -> _Spec | None:
    return next((s for s in DATASETS.values() if all((folder / "raw" / f).is_file() for f in s.raw_files)), None)


def _loaded(spec: _Spec, dataset: object) -> LoadedDataset:
    data = dataset[0]
    public = None
    if all(hasattr(data, f"{part}_mask") for part in ("train", "val", "test")):  # Planetoid's, Wiki-CS's
        public = mask_splits(data.train_mask, data.val_mask, data.test_mask)
    splits = public if spec.name == "Wiki-CS" else None  # the paper evaluates Wiki-CS on its 20 public splits
    return LoadedDataset(spec.name, Data(x=data.x, edge_index=data.edge_index, y=data.y), splits, public=public)


def _writable(path: Path) -> bool:
    """Writable by us *and* not marked read-only: a folder without write bits (root may write anywhere) was made
    read-only on purpose."""
    while not path.exists():
        path = path.parent
    return os.access(path, os.W_OK) and bool(path.stat().st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


def _open(spec: _Spec, folder: Path, cache_dir: Path) -> object:
    """PyG's dataset for ``folder`` (which holds ``raw/``).

    Where the folder is read-only or named otherwise, processing happens in the cache, keyed by the raw folder's real
    path and its files' identity (:func:`_raw_stamp`): two folders never share processed files, and changed raw files
    are processed again. A folder's own ``processed/`` is used only where its stamp matches the raw files as they are.
    """
    raw_dir = folder / "raw"
    missing = [f for f in spec.raw_files if not (raw_dir / f).is_file()]
    root = folder.parent
    stamp = _raw_stamp(raw_dir, spec.raw_files) if not missing else ""
    own = folder / "processed"
    in_cache = not missing and (
        folder.name != spec.folder or not _writable(own) or (own.exists() and _stamp_of(own) != stamp)
    )
    if in_cache:
        digest = hashlib.sha1(f"{raw_dir.resolve()}\n{stamp}".encode()).hexdigest()[:12]
        root = cache_dir / "processed-data" / digest
        mirror = root / spec.folder / "raw"
        try:
            mirror.parent.mkdir(parents=True, exist_ok=True)
            if mirror.is_symlink() and mirror.resolve() != raw_dir.resolve():
                mirror.unlink()
            if not mirror.exists():
                mirror.symlink_to(raw_dir.resolve(), target_is_directory=True)
        except OSError as exc:
            raise DatasetError(_cache_message(cache_dir, exc)) from None
    elif missing and not _writable(raw_dir):
        raise DatasetError(_missing_message(spec, raw_dir, "the folder is not writable, so it cannot be downloaded"))
    try:
        dataset = spec.build(str(root))
    except (OSError, ValueError, RuntimeError) as exc:
        if missing:
            reason = f"the download failed: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
            raise DatasetError(_missing_message(spec, raw_dir, reason)) from None
        if in_cache and isinstance(exc, OSError) and exc.errno in _WRITE_ERRORS:  # the cache, not the raw files
            raise DatasetError(_cache_message(cache_dir, exc)) from None
        raise DatasetError(f"{spec.name}: cannot read the files in {raw_dir}: {exc}") from None
    processed = root / spec.folder / "processed"
    try:  # what the processed files were made from (the download's files, when it downloaded them)
        made_from = _raw_stamp(raw_dir, spec.raw_files)
        if _stamp_of(processed) != made_from:
            (processed / STAMP).write_text(made_from)
    except OSError:
        pass  # no stamp: the next run processes in the cache
    return dataset


#: The file in a ``processed/`` folder that says which raw files it was made from (:func:`_raw_stamp`).
STAMP = "gca-raw-files.json"


def _raw_stamp(raw_dir: Path, names: tuple[str, ...] | list[str]) -> str:
    """The raw files' identity (:func:`gca.io.file_identity`) as text."""
    return json.dumps(file_identity([raw_dir / name for name in names]))


def _stamp_of(processed: Path) -> str | None:
    try:
        return (processed / STAMP).read_text()
    except OSError:
        return None


_WRITE_ERRORS = {errno.ENOSPC, errno.EDQUOT, errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOTDIR}


def _cache_message(cache_dir: Path, exc: OSError) -> str:
    return (
        f"cannot write gca's cache folder {cache_dir} ({exc.strerror or exc}); free space there or set "
        "GCA_CACHE_DIR to a writable folder"
    )


def _missing_message(spec: _Spec, raw_dir: Path, reason: str) -> str:
    return (
        f"{spec.name} not found: expected {', '.join(spec.raw_files)} in {raw_dir} ({reason}); "
        f"get them from {spec.url} or pass {option('data_dir')} to the folder that holds {spec.folder}/raw/"
    )


def karate_club() -> Data:
    """Zachary's karate club: 34 nodes, 78 edges, identity features, labels = the two factions."""
    from torch_geometric.datasets import KarateClub

    data = KarateClub()[0]
    y = torch.ones(data.num_nodes, dtype=torch.long)
    y[list(KARATE_INSTRUCTOR_FACTION)] = 0
    return Data(x=data.x, edge_index=data.edge_index, y=y)
