"""Users' own graphs: an edge list, node features and optionally labels — from files or, in Python, from tables.

Tables are read by PyArrow a block at a time (:mod:`.tables`), ids mapped to rows by its hash kernels. The rules, with
examples, are in docs/data.md (design notes: docs/design/data-and-runs.md); in short:

* **node ids** are integers (up to 64 bits) or strings; one id that would change as an integer (``007``, ``+5``) keeps
  every id as text, matched exactly. The **features decide the nodes** and their order; a matrix without ids makes row i
  node i.
* **edges**: source and target in the first two columns; weights only from a column named ``weight`` or the one
  ``edge_weight`` names. Any other column is not read, and one line says so.
* **features**: *wide* (``.npy``, SciPy sparse ``.npz``, a table of an optional id column and numeric columns), *long*
  (``id, feature[, value]`` rows), *JSON* (node id → a list of feature ids, or an object of feature id → value), or a
  matrix with ``feature_ids``. A node of the edges that the sparse forms do not name gets all-zero features.
* **labels**: a ``node, label`` table; labels of nodes not in the graph are skipped, and one line counts them.

Everything wrong with a file is a :class:`~gca.datasets.DatasetError`: one line naming the file, the line (text files)
or row, and what to do.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
import torch
from torch_geometric.data import Data

from ...errors import option
from ...graph.edges import listed_edges, repeated_edges_warning, undirected_edges, weighted_listed_edges
from ..base import DatasetError, LoadedDataset, check_regular_file, float32_features, stored_features
from .edges import HEADER_NAMES as HEADER_NAMES
from .edges import WEIGHT_NAME as WEIGHT_NAME
from .edges import _edge_table, _read_edges, _released_on_second_pass, _weight_index
from .edges import read_edge_list as read_edge_list
from .features import FEATURE_KEY_NAMES as FEATURE_KEY_NAMES
from .features import NPY_VERSIONS as NPY_VERSIONS
from .features import SPARSE_IDS_WIDTH as SPARSE_IDS_WIDTH
from .features import VALUE_NAMES as VALUE_NAMES
from .features import Features as Features
from .features import (
    _feature_header,
    _json_features,
    _long_features,
    _matrix_object,
    _starts_like_json,
    _wide_features,
    _with_ids,
)
from .features import read_npy as read_npy
from .ids import NodeIds as NodeIds
from .labels import LABEL_NAMES as LABEL_NAMES
from .labels import MISSING_LABELS as MISSING_LABELS
from .labels import _label_vector
from .labels import read_labels as read_labels
from .tables import ID_COLUMN_NAMES as ID_COLUMN_NAMES
from .tables import TableInput, _joined, is_table_object, release_memory

#: Text files at least this large say how far reading has come (smaller ones are read in well under a second).
PROGRESS_BYTES = 64 << 20


def _source_name(source: Any) -> str:
    return f"the {source} table" if isinstance(source, str) else str(source)


def _reporter(path: Any, what: str, enabled: bool) -> Callable[[int, int], None] | None:
    """A ``progress(done, total)`` callback printing how much of a large file is read (MB), or ``None``."""
    if not enabled or is_table_object(path):
        return None
    try:
        size = os.stat(path).st_size
    except OSError:
        return None
    if size < PROGRESS_BYTES:
        return None
    from ...progress import Progress

    units = max(1, -(-size >> 20))  # MiB, rounded up
    bar = Progress(units, f"reading {what} {Path(path).name}", "MB")
    state = {"done": 0}

    def report(done: int, total: int) -> None:
        now = units if done >= total else min(done >> 20, units)
        if now > state["done"]:
            bar.update(now - state["done"])
            state["done"] = now
        if done >= total:
            bar.close()

    return report


def read_features(path: str | Path) -> tuple[np.ndarray | sp.csr_matrix, list | None]:
    """(matrix, node ids or ``None`` when row i is node i) of a feature file in any form the module describes."""
    read = feature_input(path)
    return read.matrix, (read.ids.to_pylist() if read.ids is not None and not read.positional else None)


def feature_input(
    path: Any,
    ids: Any = None,
    layout: str = "auto",
    id_column: str | None = None,
    progress: bool = False,
    like: list[str] | int | None = None,
) -> Features:
    """The feature matrix and the node id of each row, from any form the module describes; in Python ``path`` may also
    be a NumPy array, SciPy sparse matrix, tensor, ``DataFrame``, PyArrow ``Table`` or a ``(matrix, ids)`` pair.

    ``ids`` names the rows of a matrix given without them; ``like`` is a trained model's columns for the sparse forms
    (its feature names or its number of columns, ``gca embed``), ``None`` the columns the file's own feature ids give.
    """
    import pyarrow as pa

    if layout not in ("auto", "wide", "long"):
        raise DatasetError(f"feature layout {layout!r} is not one of auto, wide, long")
    if isinstance(path, tuple) and len(path) == 2 and ids is None:
        path, ids = path
    if isinstance(path, (np.ndarray, torch.Tensor)) or sp.issparse(path):
        matrix = _matrix_object(path)
        return _with_ids(matrix, ids, "the feature matrix")
    if not is_table_object(path):
        path = Path(path)
        check_regular_file(path, "feature")
        suffix = path.suffix.lower()
        if suffix == ".npy":
            try:
                matrix = stored_features(read_npy(path), path)
            except OSError as exc:
                raise DatasetError(f"feature file {path} is not a readable .npy file ({exc.strerror or exc})") from None
            return _with_ids(matrix, ids, str(path))
        if suffix == ".npz":
            try:
                matrix = sp.load_npz(path)
            except Exception:  # noqa: BLE001 - scipy raises several kinds for foreign or truncated files
                raise DatasetError(
                    f"feature file {path} is not a SciPy sparse matrix; save one with scipy.sparse.save_npz"
                ) from None
            matrix = sp.csr_matrix(matrix)
            matrix.data = float32_features(matrix.data, path)
            return _with_ids(sp.csr_matrix(matrix, dtype=np.float32), ids, str(path))
        if suffix == ".json" or _starts_like_json(path):
            if ids is not None:
                raise DatasetError(f"feature file {path} is JSON, which names its nodes itself; leave out the id list")
            return _json_features(path, like)
    if ids is not None:
        raise DatasetError(
            f"feature file {_source_name(path)} is a table; an id list goes with an .npy or .npz "
            "matrix (a table gives its ids in an id column)"
        )
    names = frozenset(ID_COLUMN_NAMES | ({id_column.lower()} if id_column else set()) | {"id"})
    table = TableInput(path, "feature", _reporter(path, "features", progress), index_names=names)
    if table.path is not None and table.parquet is None:
        if not table.sample:
            raise DatasetError(f"feature file {table.name} is empty")
        table.set_header(_feature_header(table.sample, id_column))
        if not table.rows_sampled:
            raise DatasetError(f"feature file {table.name} has a header but no rows")
    long = layout == "long" or (
        layout == "auto"
        and table.headed
        and 2 <= len(table.columns) <= 3
        and table.columns[1].lower() in FEATURE_KEY_NAMES
    )
    if long:
        return _long_features(table, id_column, like)
    return _wide_features(table, id_column, pa)


def load_files(
    edges: Any,
    features: Any,
    labels: Any = None,
    directed: bool = False,
    *,
    edge_weight: str | int | None = None,
    feature_ids: Any = None,
    feature_layout: str = "auto",
    id_column: str | None = None,
    label_column: str | None = None,
    progress: bool = False,
    feature_names: list[str] | int | None = None,
) -> LoadedDataset:
    """A :class:`LoadedDataset` from a user's tables; ``node_ids`` maps row i to the node's id in them.

    Parameters
    ----------
    edges
        The edge list: a CSV/TSV/whitespace text or Parquet file, a pandas ``DataFrame`` or a PyArrow ``Table``.
    features
        The node features in any form the module describes (wide, long, JSON, a matrix with ids).
    labels
        A table of ``node, label`` rows (any node may lack one); ``None`` for an unlabelled graph.
    directed
        Keep the edges as listed; ``False``: undirected, an edge listed one way gets its reverse, with its weight.
    edge_weight
        The edge table's weight column (its name, or its number from 1); ``None``: a column named ``weight``, if any.
    feature_ids
        The node id of each row of an ``.npy``/``.npz`` feature matrix (a file of one id per line, a 1-D ``.npy``, or a
        sequence).
    feature_layout
        ``"auto"``, ``"wide"`` or ``"long"`` for a feature table.
    id_column, label_column
        The id column's name in the feature and label tables (default: recognised, else the first); the label column's
        in a label table of more than two columns.
    progress
        Say how far the reading of large files has come (on standard error).
    feature_names
        The trained model's columns (``gca embed``): its feature names, or its number of columns. Long and JSON features
        are mapped to them, features it lacks left out with one warning line; ``None``: the features' own ids.

    Returns
    -------
    LoadedDataset
        ``node_ids[i]`` is row i's id (an int64 array for integer ids, a list of strings otherwise, ``None`` when row i
        is node i); ``warnings``, ``class_names`` and ``feature_names`` (where not numbers) as read.
    """
    table = _edge_table(edges)  # first: a missing or empty edge file is said before the features are read
    read = feature_input(features, feature_ids, feature_layout, id_column, progress, feature_names)
    if id_column is not None:
        _check_id_column(id_column, features, labels)
    matrix = read.matrix
    features_name = (
        _source_name("feature")
        if is_table_object(features)
        else str(features[0] if isinstance(features, tuple) else features)
    )
    if (matrix.shape[0] == 0 and not read.sparse_by_id) or matrix.shape[1] == 0:
        raise DatasetError(
            f"feature file {features_name} holds a {matrix.shape[0]}×{matrix.shape[1]} matrix; give "
            "one row of features per node"
        )
    nodes = NodeIds(read.ids, matrix.shape[0], grow=read.sparse_by_id)
    weight_column, weight_notes = _weight_index(table, edge_weight)
    table.progress = _reporter(edges, "edges", progress)  # made now: its clock starts as the edges' reading does
    read_edges = _read_edges(table, nodes, weight_column, features_name)
    nodes.grow = False  # the edges decide which nodes the features lack; a label names a node or is skipped
    notes = list(read.notes)
    num_nodes = nodes.size
    if read.positional and nodes.added:
        _check_added_rows(nodes, matrix.shape[0], table.name)
    if nodes.added:
        matrix = sp.vstack([matrix, sp.csr_matrix((nodes.added, matrix.shape[1]), dtype=np.float32)]).tocsr()
        one = nodes.added == 1
        notes.append(
            f"{nodes.added} node{'' if one else 's'} of edge file {table.name} {'has' if one else 'have'} no "
            f"features in {features_name}; {'its' if one else 'their'} features are all zero"
        )
    weights, sources, targets = read_edges.weight, read_edges.sources, read_edges.targets
    loop_notes: list[str] = []
    if weights is None and not directed:  # the blocks as read: no joined copy of the listed edges
        # self-loops left out here, not by cleaning: at 6·10⁸ edges, cleaning would copy the edge list to drop them
        from ...progress import step

        with step(f"building the undirected edge list of {read_edges.count:,} listed edges", progress):
            edge_index, repeated, loops = undirected_edges(
                _released_on_second_pass(sources, targets), num_nodes, read_edges.count, keep_loops=False
            )
        if loops:
            loop_notes.append(f"removed {loops} self-loop{'s' if loops != 1 else ''} (GCN adds its own)")
            if not edge_index.shape[1]:
                raise DatasetError(
                    f"edge file {table.name} lists only self-loops; GCA learns from the graph "
                    "structure, so give at least one edge between two nodes"
                )
        edge_weight_tensor = None
    elif weights is None:
        edge_index, repeated = listed_edges(_joined(read_edges.sources), _joined(read_edges.targets), num_nodes, True)
        edge_weight_tensor = None
    else:
        edge_index, edge_weight_tensor, repeated = weighted_listed_edges(
            _joined(read_edges.sources),
            _joined(read_edges.targets),
            weights,
            num_nodes,
            directed,
            table.name,
            table.where,
            f"give both directions the same weight, list each edge once, or pass {option('directed', True)}",
        )
    sources.clear()  # the listed edges go before the labels are read
    targets.clear()
    release_memory()  # the blocks' freed memory back to the system before the next phase
    x = _feature_tensor(matrix)
    y, label_notes, class_names = (
        (None, [], None)
        if labels is None
        else _label_vector(labels, nodes, id_column, label_column, _reporter(labels, "labels", progress))
    )
    data = Data(x=x, edge_index=edge_index, y=y, num_nodes=num_nodes)
    if edge_weight_tensor is not None:
        data.edge_weight = edge_weight_tensor
    name = Path(edges).stem if not is_table_object(edges) else "graph"
    notes = (
        ([repeated_edges_warning(table.name, repeated, weights is not None)] if repeated else [])
        + loop_notes
        + weight_notes
        + notes
        + label_notes
    )
    node_ids = None if read.positional and not nodes.added else nodes.exported()
    return LoadedDataset(
        name,
        data,
        named=False,
        node_ids=node_ids,
        directed=directed,
        warnings=notes,
        class_names=class_names,
        feature_names=read.names,
    )


def _check_added_rows(nodes: NodeIds, listed: int, edges_name: str) -> None:
    """Nodes an edge file adds to features whose entry i is node i must be integers beyond the entries."""
    import pyarrow.compute as pc

    added = nodes.keys.slice(listed)
    lowest = pc.min(added).as_py()
    if lowest is not None and lowest < 0:
        raise DatasetError(
            f"edge file {edges_name} has a negative node id ({lowest}); node ids are the feature entries' numbers "
            "0, 1, …, and the edges may add nodes numbered beyond them"
        )


def _check_id_column(name: str, *sources: Any) -> None:
    """``id_column`` must name a column of the feature table or of the label table."""
    seen = []
    for source in sources:
        if source is None or isinstance(source, (tuple, np.ndarray, torch.Tensor)) or sp.issparse(source):
            continue
        if not is_table_object(source) and Path(source).suffix.lower() in (".npy", ".npz", ".json"):
            continue
        table = TableInput(source, "label", index_names=frozenset(ID_COLUMN_NAMES | {name.lower()}))
        if table.path is not None and table.parquet is None:
            table.set_header(True)
        if name.lower() in (c.lower() for c in table.columns):
            return
        seen += table.columns
    raise DatasetError(
        f"no feature or label table has a column {name!r} ({option('id_column')}); their columns: "
        f"{', '.join(dict.fromkeys(seen)) or 'none with a header'}"
    )


def _feature_tensor(matrix: np.ndarray | sp.csr_matrix) -> torch.Tensor:
    if not sp.issparse(matrix):
        return torch.from_numpy(np.ascontiguousarray(matrix))
    coo = matrix.tocoo()
    coo.sum_duplicates()
    coo.eliminate_zeros()
    indices = torch.from_numpy(np.vstack([coo.row, coo.col]).astype(np.int64))
    values = torch.from_numpy(coo.data.astype(np.float32))
    return torch.sparse_coo_tensor(indices, values, coo.shape, check_invariants=True).coalesce()
