"""Datasets by the paper's names, graph files in the gnn-benchmark npz layout, and the built-in Karate club.

Named datasets go through PyTorch Geometric's dataset classes, which download their raw files when online. A
data directory may be read-only: processed files then go to a writable cache (``$GCA_CACHE_DIR``, default
``~/.cache/gca``) whose ``raw`` folders link back to the read-only files.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import scipy.sparse as sp
import torch
from torch_geometric.data import Data

from .environment import env_folder
from .errors import UserError
from .evaluate import Split, mask_splits
from .names import canonical_name

#: The two factions of Zachary's karate club after the split (Zachary, 1977): the nodes that followed the
#: instructor ("Mr. Hi", node 0); all others followed the administrator (node 33).
KARATE_INSTRUCTOR_FACTION = (0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 12, 13, 16, 17, 19, 21)
#: Names the built-in Karate club answers to (after :func:`gca.names.canonical_name`).
KARATE_NAMES = ("karate", "karateclub")
#: The two leaders ("coaches" in the paper's Figure 3).
KARATE_LEADERS = (0, 33)


class DatasetError(UserError, RuntimeError):
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
    warnings: list[str] = field(default_factory=list)  # one line each, about the files read


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
DATASET_NAMES = ("Karate", *(spec.name for spec in DATASETS.values()), "ogbn-arxiv", "ogbn-products")


def check_regular_file(path: Path, what: str) -> None:
    """A readable regular file: a FIFO, a device or a folder would block or fail in the middle of reading."""
    if not path.exists():
        raise DatasetError(f"{what} file {path} does not exist")
    if path.is_dir():
        raise DatasetError(f"{what} file {path} is a folder, not a file")
    if not path.is_file():
        raise DatasetError(f"{what} file {path} is not a regular file (a pipe or a device); give a file on disk")


#: The largest magnitude a float32 holds; features are trained on in float32.
FLOAT32_MAX = float(np.finfo(np.float32).max)


def float32_features(values: np.ndarray, path: str | Path) -> np.ndarray:
    """``values`` as float32, refusing what the cast would silently change: complex numbers (their imaginary part
    would be dropped) and magnitudes beyond float32's range (they would become infinite)."""
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


def class_labels(values: np.ndarray, path: str | Path, num_nodes: int) -> tuple[torch.Tensor, list[str]]:
    """One class number per node from a file's label column, and the warnings to print.

    Class numbers are the integers 0, 1, 2, …, stored as integers or as floats with an integral value. NaN marks
    a node without a label (OGB's files do): it becomes −1, is left out of evaluation, and a warning says how many.
    Anything else — a negative number, a fraction, an infinity, one label too many or too few — is an error naming
    the file and the first bad row, never a silent cast (−3 or 0.3 would otherwise become classes)."""
    values = np.asarray(values)
    if values.ndim != 1 or values.shape[0] != num_nodes:
        raise DatasetError(f"{path}: the labels have shape {values.shape}; give one label per node ({num_nodes})")
    if values.dtype.kind not in "iuf" and values.dtype != np.bool_:
        raise DatasetError(f"{path}: the labels are {values.dtype} values; give class numbers 0, 1, 2, …")
    missing = np.isnan(values) if values.dtype.kind == "f" else np.zeros(num_nodes, dtype=bool)
    present = values[~missing]
    bad = (~np.isfinite(present) | (present < 0) | (present != np.floor(present))) if values.dtype.kind == "f" else (
        present < 0)  # fmt: skip
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
    notes = [f"{count} of {num_nodes} nodes in {path} have no label (NaN); they are left out of evaluation"] if count \
        else []  # fmt: skip
    return torch.from_numpy(labels), notes


def default_data_dir() -> Path:
    return env_folder("GCA_DATA_DIR", Path.home() / ".cache" / "gca" / "data")


def default_cache_dir() -> Path:
    return env_folder("GCA_CACHE_DIR", Path.home() / ".cache" / "gca")


def dataset_display_name(name: str) -> str:
    """The paper's spelling of a named dataset ('amazon photo' → 'Amazon-Photo'); other text is returned as is."""
    from .ogb import OGB_DATASETS

    key = canonical_name(name)
    if key in KARATE_NAMES:
        return "Karate"
    if key in OGB_DATASETS:
        return OGB_DATASETS[key][0]
    return DATASETS[key].name if key in DATASETS else name


def load_dataset(name: str, data_dir: str | Path | None = None, cache_dir: str | Path | None = None) -> LoadedDataset:
    """Load a graph by path or by name.

    What exists on disk decides: an existing file is read as an ``.npz`` graph file, an existing folder as one
    dataset's folder in PyTorch Geometric's layout (``FOLDER/raw/…``, e.g. ``data/Cora``); anything else is a name —
    ``Karate`` or one of :data:`DATASET_NAMES` (case, spaces and dashes do not matter), read from ``data_dir``.
    A folder in OGB's node-property layout (:mod:`gca.ogb`) loads with its official split.
    """
    cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    path = Path(name).expanduser()
    if path.is_file():
        data, notes = _read_npz(path, directed=False)
        return LoadedDataset(path.stem, data, named=False, warnings=notes)
    if path.is_dir():
        return _load_folder(path, cache_dir)
    if path.exists():
        check_regular_file(path, "graph")
    from .ogb import OGB_DATASETS, load_named

    key = canonical_name(name)
    if key in KARATE_NAMES:
        return LoadedDataset("Karate", karate_club())
    if key in OGB_DATASETS:
        return load_named(key, Path(data_dir) if data_dir is not None else default_data_dir())
    if key not in DATASETS:
        raise DatasetError(
            f"unknown dataset {name!r} (no file or folder of that name exists either); choose one of "
            f"{', '.join(DATASET_NAMES)}, or give the path of an .npz graph file or of a dataset folder"
        )
    spec = DATASETS[key]
    data_dir = Path(data_dir) if data_dir is not None else default_data_dir()
    return _loaded(spec, _open(spec, data_dir / spec.folder, cache_dir))


def _load_folder(folder: Path, cache_dir: Path) -> LoadedDataset:
    """A folder given by path: OGB's node-property layout, or the dataset whose raw files its ``raw/`` holds."""
    from .ogb import is_ogb_folder, read_ogb_folder

    if is_ogb_folder(folder):
        return read_ogb_folder(folder)
    for spec in DATASETS.values():
        if all((folder / "raw" / f).is_file() for f in spec.raw_files):
            return _loaded(spec, _open(spec, folder, cache_dir))
    raise DatasetError(
        f"{folder} is a folder but holds none of the datasets gca knows in its raw/ sub-folder (e.g. "
        f"raw/ind.cora.x for Cora, raw/amazon_electronics_photo.npz for Amazon-Photo); give a dataset folder, "
        "an .npz graph file, or --edges/--features"
    )


def _loaded(spec: _Spec, dataset: object) -> LoadedDataset:
    data = dataset[0]
    splits = None
    if spec.name == "Wiki-CS":
        splits = mask_splits(data.train_mask, data.val_mask, data.test_mask)
    return LoadedDataset(spec.name, Data(x=data.x, edge_index=data.edge_index, y=data.y), splits)


def _writable(path: Path) -> bool:
    """Writable by us *and* not marked read-only: root may write anywhere, but a folder without write bits
    was made read-only on purpose, and processed files must not land in it."""
    while not path.exists():
        path = path.parent
    return os.access(path, os.W_OK) and bool(path.stat().st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


def _open(spec: _Spec, folder: Path, cache_dir: Path) -> object:
    """PyG's dataset for ``folder`` (which holds ``raw/``).

    PyG reads ``ROOT/<spec.folder>/raw`` and writes ``ROOT/<spec.folder>/processed``. Where the folder is read-only
    or named otherwise, processing happens in the cache, whose ``raw`` links back to the folder's; the cache entry
    is keyed by the raw folder's real path, so two folders never share processed files.
    """
    raw_dir = folder / "raw"
    missing = [f for f in spec.raw_files if not (raw_dir / f).is_file()]
    root = folder.parent
    in_cache = not missing and (folder.name != spec.folder or not _writable(folder / "processed"))
    if in_cache:
        digest = hashlib.sha1(str(raw_dir.resolve()).encode()).hexdigest()[:12]
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
        return spec.build(str(root))
    except (OSError, ValueError, RuntimeError) as exc:
        if missing:
            reason = f"the download failed: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
            raise DatasetError(_missing_message(spec, raw_dir, reason)) from None
        if in_cache and isinstance(exc, OSError) and exc.errno in _WRITE_ERRORS:  # the cache, not the raw files
            raise DatasetError(_cache_message(cache_dir, exc)) from None
        raise DatasetError(f"{spec.name}: cannot read the files in {raw_dir}: {exc}") from None


_WRITE_ERRORS = {errno.ENOSPC, errno.EDQUOT, errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOTDIR}


def _cache_message(cache_dir: Path, exc: OSError) -> str:
    return (f"cannot write gca's cache folder {cache_dir} ({exc.strerror or exc}); free space there or set "
            "GCA_CACHE_DIR to a writable folder")


def _missing_message(spec: _Spec, raw_dir: Path, reason: str) -> str:
    return (
        f"{spec.name} not found: expected {', '.join(spec.raw_files)} in {raw_dir} ({reason}); "
        f"get them from {spec.url} or pass --data-dir to the folder that holds {spec.folder}/raw/"
    )


def read_npz_graph(path: str | Path, directed: bool = False) -> Data:
    """A graph in the gnn-benchmark npz layout (``adj_*``, ``attr_*`` CSR arrays, optional ``labels``).

    Features stay sparse and keep their values. Unless ``directed``, edges are made undirected (as the
    Amazon/Coauthor files are used in the paper): an edge listed in both directions is one edge.
    """
    return _read_npz(Path(path), directed)[0]


def _read_npz(path: Path, directed: bool) -> tuple[Data, list[str]]:
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
            attr = np.asarray(arrays.pop("attr_matrix"))  # dense features stay dense
            if attr.ndim != 2:
                raise ValueError(f"attr_matrix must be 2-D, got shape {attr.shape}")
        else:
            raise KeyError("attr_data")
        adj.check_format(full_check=True)  # indices inside the shape, monotone index pointers
        if sp.issparse(attr):
            attr.check_format(full_check=True)
    except KeyError as exc:
        raise DatasetError(
            f"{path} lacks the array {exc.args[0]!r}: an npz graph needs adj_data/adj_indices/adj_indptr/adj_shape "
            "and attr_data/attr_indices/attr_indptr/attr_shape (or attr_matrix)"
        ) from None
    except (ValueError, TypeError) as exc:
        raise DatasetError(f"{path} holds malformed sparse arrays: {exc}") from None
    if adj.shape[0] != adj.shape[1] or adj.shape[0] != attr.shape[0]:
        raise DatasetError(f"{path}: adjacency {adj.shape} and features {attr.shape} do not describe the same nodes")
    coo = adj.tocoo()
    del adj, arrays["adj_data"], arrays["adj_indices"]
    edge_index, repeated = edge_list(coo.row, coo.col, coo.shape[0], directed)
    num_nodes = coo.shape[0]
    del coo
    if sp.issparse(attr):
        attr = attr.tocoo()
        attr.sum_duplicates()
        attr.data = float32_features(attr.data, path)
        x = torch.sparse_coo_tensor(
            torch.from_numpy(np.vstack([attr.row, attr.col]).astype(np.int64)),
            torch.from_numpy(attr.data.astype(np.float32)),
            size=attr.shape,
            check_invariants=True,
        ).coalesce()
    else:
        x = torch.from_numpy(np.ascontiguousarray(float32_features(attr, path)))
    data = Data(x=x, edge_index=edge_index, num_nodes=num_nodes)
    notes = [repeated_edges_warning(path, repeated)] if repeated else []
    if "labels" in arrays:
        data.y, label_notes = class_labels(arrays["labels"], path, num_nodes)
        notes += label_notes
    return data, notes


def edge_list(source: np.ndarray, target: np.ndarray, num_nodes: int, directed: bool) -> tuple[torch.Tensor, int]:
    """(edge_index, how many listed edges repeat an earlier one) for the edges ``source[i] → target[i]``.

    A repeat is the same ordered pair listed again. On an undirected graph an edge and its reverse are the same
    edge, so a file listing both directions of every edge (the common export) has no repeats; the returned
    edge_index holds both directions of every edge once. A directed edge_index keeps the repeats (and
    :func:`gca.graph.prepare_graph` merges them).
    """
    if directed:
        pairs = torch.from_numpy(np.vstack([source, target]).astype(np.int64))
        repeated = int(pairs.shape[1] - torch.unique(pairs[0] * num_nodes + pairs[1]).numel()) if pairs.numel() else 0
        return pairs, repeated
    # SciPy's CSR construction sums repeated pairs and its transpose is a linear-time counting sort, with 32-bit
    # indices: on 10^8 edges a few times less memory than sorting 64-bit keys.
    listed = sp.csr_matrix((np.ones(len(source), dtype=np.float32), (source, target)), shape=(num_nodes, num_nodes))
    repeated = int(len(source) - listed.nnz)
    both = (listed + listed.T).tocsr()
    del listed
    both.sort_indices()
    row = torch.repeat_interleave(torch.arange(num_nodes), torch.from_numpy(np.diff(both.indptr).astype(np.int64)))
    return torch.stack([row, torch.from_numpy(both.indices.astype(np.int64))]), repeated


def repeated_edges_warning(path: str | Path, repeated: int) -> str:
    return f"{path} lists {repeated} duplicate edge{'s' if repeated != 1 else ''} (a pair listed again); merged"


def karate_club() -> Data:
    """Zachary's karate club: 34 nodes, 78 edges, identity features, labels = the two factions."""
    from torch_geometric.datasets import KarateClub

    data = KarateClub()[0]
    y = torch.ones(data.num_nodes, dtype=torch.long)
    y[list(KARATE_INSTRUCTOR_FACTION)] = 0
    return Data(x=data.x, edge_index=data.edge_index, y=y)
