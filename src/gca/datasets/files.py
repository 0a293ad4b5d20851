"""Users' own graphs from plain files: an edge list, a feature matrix and optionally labels.

* **edges** — CSV, TSV or whitespace-separated text, one edge per line: ``source target`` (blank lines and lines
  starting with ``#`` are skipped), optionally ``source target weight``: a third column headed ``weight``, or of
  numbers on every line of a file without a header, holds the edges' weights (``Data.edge_weight``,
  :func:`_weight_column`; repeats summed, both directions of an undirected edge equal:
  :func:`~gca.datasets.base.weighted_edge_list`); all weights 1 is an unweighted graph, read exactly as without the
  column. Other columns are not read, and a warning says so. Node ids are integers or any strings. A first line is
  read as a header when it names its columns (``source,target``, ``src,dst``, ``u,v``, ``from,to``,
  ``node1,node2``, …) or when it is the only line that is not numeric.
* **features** — ``.npy`` (a 2-D numeric array; pickles are refused, and the header is checked against the file's
  size before anything is read: :func:`read_npy`), ``.npz`` (a SciPy sparse matrix saved with
  ``scipy.sparse.save_npz``) or CSV/TSV. Row i belongs to node i, or, for CSV/TSV, to the node named in the first
  column when that column is headed ``id``/``node``/``node_id``/``name`` or holds non-numeric ids. String node ids
  need such an id column; integer ids without one must lie in [0, rows).
* **labels** — CSV/TSV of ``node, label`` (header optional; labels may be strings). Nodes without a label are
  allowed: they are embedded but not used in evaluation.

Everything that is wrong with a file raises :class:`~gca.datasets.DatasetError` with one line naming the file,
the line and what to do.
"""

from __future__ import annotations

import csv
import math
import os
import re
import tokenize
from pathlib import Path
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
import torch
from torch_geometric.data import Data

from ..io import read_user_text
from .base import (
    DatasetError,
    LoadedDataset,
    check_regular_file,
    edge_list,
    edge_weights,
    float32_features,
    repeated_edges_warning,
    stored_features,
    weighted_edge_list,
)

HEADER_NAMES = {
    "source", "target", "src", "dst", "from", "to", "u", "v", "node", "node1", "node2", "node_1", "node_2",
    "id", "id1", "id2", "node_id", "head", "tail", "label", "class", "name", "weight",
}  # fmt: skip
ID_COLUMN_NAMES = {"id", "node", "node_id", "name", "nodeid"}
_NUMBER = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$|^[+-]?(nan|inf|infinity)$", re.IGNORECASE)
_INTEGER = re.compile(r"^[+-]?\d+$")


def _rows(path: Path, what: str) -> list[tuple[int, list[str]]]:
    """(line number, fields) of a delimited text file; the delimiter (tab, semicolon, comma, whitespace) is the
    first of these that the first line contains."""
    check_regular_file(path, what)
    text = read_user_text(path, what, DatasetError, "give a CSV/TSV file")
    lines = [(i + 1, line) for i, line in enumerate(text.splitlines()) if line.strip() and not line.startswith("#")]
    if not lines:
        return []
    first = lines[0][1]
    delimiter = next((d for d in ("\t", ";", ",") if d in first), None)
    texts = [line for _, line in lines]
    fields = csv.reader(texts, delimiter=delimiter) if delimiter else (line.split() for line in texts)
    try:
        return [(number, [f.strip() for f in row]) for (number, _), row in zip(lines, fields, strict=True)]
    except csv.Error as exc:
        if "field larger than field limit" in str(exc):
            limit = csv.field_size_limit()
            raise DatasetError(f"{what} file {path} has a field longer than {limit:,} characters; is it the right "
                               "file?") from None  # fmt: skip
        raise DatasetError(f'{what} file {path} has an unbalanced quote ("); fix or remove it') from None
    except ValueError:  # zip: an unbalanced quote swallowed the following lines
        raise DatasetError(f'{what} file {path} has an unbalanced quote ("); fix or remove it') from None


def _is_number(token: str) -> bool:
    return bool(_NUMBER.match(token))


def _is_name(token: str) -> bool:
    """A column name has letters and is not a number ('1,5' with a decimal comma is neither)."""
    return any(c.isalpha() for c in token) and not _is_number(token)


def _looks_like_header(rows: list[tuple[int, list[str]]], columns: int) -> bool:
    first = [t.lower() for t in rows[0][1][:columns]]
    if first and all(t in HEADER_NAMES for t in first):
        return True
    if len(rows) < 2 or all(_is_number(t) for t in first):
        return False
    # The only non-numeric line of an otherwise numeric file is a header.
    return all(_is_number(t) for _, fields in rows[1 : min(len(rows), 200)] for t in fields[:columns])


def read_edge_list(path: str | Path) -> tuple[list[str], list[str], bool]:
    """(sources, targets, integer_ids) as the tokens in the file.

    Parameters
    ----------
    path
        The edge file.

    Returns
    -------
    tuple[list[str], list[str], bool]
        Each edge's source and target id as written, and whether every id is an integer.
    """
    return _edge_rows(path)[:3]


class _EdgeRows(NamedTuple):
    sources: list[str]
    targets: list[str]
    integer: bool  # every id an integer
    extra: int  # columns beyond ``source target`` on the widest line
    lines: list[int]  # the file's line number of each edge
    third: list[str | None]  # each edge's third column, None on a line without one
    third_name: str | None  # the header's name of the third column, if there is a header


def _edge_rows(path: str | Path) -> _EdgeRows:
    """:func:`read_edge_list`'s answer, the columns beyond ``source target`` and where each edge is in the file."""
    path = Path(path)
    rows = _rows(path, "edge")
    third_name = None
    if rows and _looks_like_header(rows, 2):
        third_name = rows[0][1][2].lower() if len(rows[0][1]) > 2 else None
        rows = rows[1:]
    if not rows:
        raise DatasetError(f"edge file {path} holds no edges; give one 'source target' pair per line")
    sources, targets, lines, third, extra = [], [], [], [], 0
    for number, fields in rows:
        extra = max(extra, len(fields) - 2)
        if len(fields) < 2 or not fields[0] or not fields[1]:
            raise DatasetError(f"{path}, line {number}: expected two node ids per line, got {','.join(fields)!r}")
        sources.append(fields[0])
        targets.append(fields[1])
        lines.append(number)
        third.append(fields[2] if len(fields) > 2 and fields[2] else None)
    integer = all(_INTEGER.match(t) for t in sources) and all(_INTEGER.match(t) for t in targets)
    return _EdgeRows(sources, targets, integer, extra, lines, third, third_name)


#: Header names of an edge file's third column that say it holds weights.
WEIGHT_NAMES = {"weight", "weights", "w", "value", "strength"}


def _weight_column(path: Path, rows: _EdgeRows) -> tuple[np.ndarray | None, list[str]]:
    """The edge weights an edge file's third column holds (checked: :func:`~gca.datasets.base.edge_weights`), or
    ``None``, and the notes to print.

    The third column is read as weights when the header calls it a weight (:data:`WEIGHT_NAMES`; then every edge
    needs one), or, in a file without a header, when every edge has a number there: then a note says so and gives
    the range — a third column of timestamps or types would otherwise weigh the graph unnoticed. A third column
    the header names otherwise (``time``, ``label``), or of other text, is not read and a note says so; so are
    columns beyond the third. All weights 1 is no weight."""
    named = rows.third_name in WEIGHT_NAMES
    numbers = [t is not None and _is_number(t) for t in rows.third]
    notes: list[str] = []
    if named or (rows.third_name is None and rows.extra and all(numbers)):
        for line, token, number in zip(rows.lines, rows.third, numbers, strict=True):
            if not number:
                problem = "has no weight" if token is None else f"has the weight {token!r}, which is not a number"
                raise DatasetError(f"{path}, line {line}: {problem}; give every edge a weight (a number) or none")
        weights = edge_weights(np.array([float(t) for t in rows.third]), path, lambda i: f"line {rows.lines[i]}")
        if weights is not None and not named:
            notes.append(f"{path}: its third column is read as edge weights ({weights.min():g} to {weights.max():g})"
                         "; if it holds something else (times, types), remove it or head it otherwise")  # fmt: skip
        if rows.extra > 1:
            notes.append(f"{path} has {rows.extra - 1} column{'s' if rows.extra > 2 else ''} after source, target and"
                         " weight; not read")  # fmt: skip
    else:
        weights = None
        if rows.extra:
            notes.append(f"{path} has {rows.extra} column{'s' if rows.extra > 1 else ''} after source and target; not "
                         "read — the graph is trained unweighted (a third column headed 'weight', or of numbers in a "
                         "file without a header, is read as edge weights)")  # fmt: skip
    return weights, notes


#: .npy format versions whose header :func:`read_npy` reads (``numpy.save`` writes 1.0, or 2.0 for a header over
#: 64 KiB; 3.0 only for structured arrays with non-Latin-1 field names, which are not features anyway).
NPY_VERSIONS = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}


def _shape_text(shape: tuple[int, ...]) -> str:
    return "×".join(str(n) for n in shape)


def read_npy(path: Path) -> np.ndarray:
    """The 2-D numeric array of an .npy feature file, checked from its header before any of it is read.

    The header is parsed by NumPy's header readers (a size-limited literal, never unpickled). Refused, with one
    line naming the file: no NumPy magic; a format version other than 1.0/2.0; a header NumPy cannot parse (cut
    short, not a dictionary, a bad shape or dtype); Python objects (a pickle: loading it can run code); a shape with
    a negative dimension or other than 2-D; a non-numeric dtype; and data that is not exactly the header's
    rows × columns × itemsize bytes — a truncated file says how many bytes the header promises and how many the
    file holds, so a 190-byte file claiming 10¹² rows is caught before anything is mapped or allocated.

    A checked array is used through a copy-on-write memory map: its pages are read as training touches them and
    stay reclaimable page cache, never a private copy (float32 arrays are used as they are). Fortran-ordered arrays
    are mapped in their order and read correctly. Where the file cannot be mapped it is read whole.

    Parameters
    ----------
    path
        The ``.npy`` file.
    """
    with path.open("rb") as f:
        if f.read(6) != b"\x93NUMPY":
            raise DatasetError(f"feature file {path} is not a readable .npy file (no NumPy header)")
        f.seek(0)
        try:
            version = np.lib.format.read_magic(f)
        except ValueError:
            raise DatasetError(f"feature file {path} is not a readable .npy file (its header is cut short)") from None
        if version not in NPY_VERSIONS:
            raise DatasetError(f"feature file {path} is .npy format {version[0]}.{version[1]}, which gca does not "
                               "read; save a numeric array with numpy.save")  # fmt: skip
        try:
            shape, fortran, dtype = NPY_VERSIONS[version](f)
        # cut short, or a header that is not the format's (numpy tokenizes it: an unclosed bracket is a TokenError)
        except (ValueError, SyntaxError, TypeError, tokenize.TokenError) as exc:
            reason = " ".join(str(exc).split())
            reason = reason if len(reason) <= 160 else reason[:157] + "..."
            raise DatasetError(f"feature file {path} has a damaged .npy header ({reason})") from None
        offset, size = f.tell(), os.fstat(f.fileno()).st_size
    if dtype.hasobject:
        raise DatasetError(f"feature file {path} holds Python objects, which are not loaded (pickles can run code); "
                           "save a numeric array")  # fmt: skip
    if any(n < 0 for n in shape):
        raise DatasetError(f"feature file {path} has a damaged .npy header: its shape {shape} has a negative size")
    if len(shape) != 2 or not np.issubdtype(dtype, np.number) or dtype.fields is not None:
        raise DatasetError(f"feature file {path} must hold a 2-D numeric array, got {dtype} {shape}")
    need, have = math.prod(shape) * dtype.itemsize, size - offset  # Python integers: no overflow at any shape
    described = f"its header says {_shape_text(shape)} {dtype.name} ({need:,} bytes)"
    if have < need:
        raise DatasetError(f"feature file {path} is truncated: {described} but the file holds {have:,} bytes after "
                           "the header; write it again with numpy.save")  # fmt: skip
    if have > need:
        raise DatasetError(f"feature file {path} does not match its header: {described} but the file holds "
                           f"{have:,} bytes after the header; write it again with numpy.save")  # fmt: skip
    order = "F" if fortran else "C"
    if need == 0:
        return np.empty(shape, dtype=dtype, order=order)
    try:
        return np.memmap(path, dtype=dtype, mode="c", shape=shape, order=order, offset=offset)
    except (OSError, ValueError):  # a file system without memory maps
        return np.fromfile(path, dtype=dtype, count=math.prod(shape), offset=offset).reshape(shape, order=order)


def read_features(path: str | Path) -> tuple[np.ndarray | sp.csr_matrix, list[str] | None]:
    """(matrix, node ids or ``None`` when row i is node i).

    Parameters
    ----------
    path
        An ``.npy``, ``.npz`` (SciPy sparse) or CSV/TSV feature file.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    check_regular_file(path, "feature")
    if suffix == ".npy":
        try:
            matrix = read_npy(path)
        except OSError as exc:
            raise DatasetError(f"feature file {path} is not a readable .npy file ({exc.strerror or exc})") from None
        return stored_features(matrix, path), None
    if suffix == ".npz":
        try:
            matrix = sp.load_npz(path)
        except Exception:  # noqa: BLE001 - scipy raises several kinds for foreign or truncated files
            raise DatasetError(
                f"feature file {path} is not a SciPy sparse matrix; save one with scipy.sparse.save_npz"
            ) from None
        matrix = sp.csr_matrix(matrix)
        matrix.data = float32_features(matrix.data, path)
        return sp.csr_matrix(matrix, dtype=np.float32), None
    rows = _rows(path, "feature")
    if not rows:
        raise DatasetError(f"feature file {path} is empty")
    header = rows[0][1]
    # A header is a row of column names: no empty cell (a blank value is a missing number, not a name) and a name
    # among its value columns, or an id column's name first.
    names = all(header) and len(rows) > 1
    has_header = names and (any(_is_name(t) for t in header[1:]) or header[0].lower() in ID_COLUMN_NAMES)
    body = rows[1:] if has_header else rows
    if not body:
        raise DatasetError(f"feature file {path} has a header but no rows")
    # Ids in the first column: named so in the header, or values that are not numbers (a decimal comma, '1,5', is a
    # number written the wrong way, reported as such below, not an id).
    id_column = (has_header and header[0].lower() in ID_COLUMN_NAMES) or any(
        not _is_number(fields[0]) and not _is_number(fields[0].replace(",", ".")) for _, fields in body
    )
    width = len(body[0][1])
    ids = [] if id_column else None
    values = np.empty((len(body), width - int(id_column)), dtype=np.float64)
    for i, (number, fields) in enumerate(body):
        if len(fields) != width:
            raise DatasetError(f"{path}, line {number}: expected {width} columns like the first row, got {len(fields)}")
        numbers = fields[1:] if id_column else fields
        bad = next((t for t in numbers if not _is_number(t)), None)
        if bad is not None:
            hint = "; decimal commas are not read, use a point (1.5)" if _is_number(bad.replace(",", ".")) else ""
            raise DatasetError(f"{path}, line {number}: feature value {bad!r} is not a number{hint}")
        values[i] = [float(t) for t in numbers]
        if id_column:
            ids.append(fields[0])
    if values.shape[1] == 0:
        raise DatasetError(f"feature file {path} has an id column but no feature columns")
    values = float32_features(values, path)
    if ids is not None and len(set(ids)) != len(ids):
        seen: set[str] = set()
        duplicate = next(t for t in ids if t in seen or seen.add(t))
        raise DatasetError(f"feature file {path} lists node {duplicate!r} twice; give one row per node")
    return values, ids


def read_labels(path: str | Path) -> list[tuple[int, str, str]]:
    """(line number, node id, label) rows.

    Parameters
    ----------
    path
        A CSV/TSV of ``node, label`` lines (a header line is skipped).
    """
    path = Path(path)
    rows = _rows(path, "label")
    if rows and [t.lower() for t in rows[0][1][:1]][0] in ID_COLUMN_NAMES | {"source", "node1"}:
        rows = rows[1:]
    if not rows:
        raise DatasetError(f"label file {path} holds no labels; give one 'node, label' pair per line")
    out = []
    for number, fields in rows:
        if len(fields) < 2 or not fields[1]:
            raise DatasetError(f"{path}, line {number}: expected 'node, label', got {','.join(fields)!r}")
        out.append((number, fields[0], fields[1]))
    return out


def load_files(
    edges: str | Path, features: str | Path, labels: str | Path | None = None, directed: bool = False
) -> LoadedDataset:
    """A :class:`LoadedDataset` from user files; ``node_ids`` maps row i to the node's id in the files.

    Parameters
    ----------
    edges
        The edge list (CSV, TSV or whitespace-separated; ``source target`` and optionally ``weight``), as the
        module describes.
    features
        The feature matrix: ``.npy``, a SciPy sparse ``.npz``, or CSV/TSV with one row per node (optionally a
        first column of node ids).
    labels
        A CSV/TSV of ``node, label`` lines (any node may lack one); ``None`` for an unlabelled graph.
    directed
        Keep the edges as listed; ``False`` (the default) reads the graph as undirected: an edge listed one way
        gets its reverse, with its weight.

    Returns
    -------
    LoadedDataset
        The graph; ``node_ids[i]`` is row i's id in the files, ``warnings`` what was noticed while reading
        (repeated edges, unread columns, unlabelled nodes), ``class_names`` the labels' names where they were
        strings. Anything wrong with a file is a :class:`~gca.datasets.base.DatasetError`.
    """
    rows = _edge_rows(edges)
    sources, targets, integer = rows.sources, rows.targets, rows.integer
    weights, weight_notes = _weight_column(Path(edges), rows)
    matrix, ids = read_features(features)
    num_nodes = matrix.shape[0]
    if num_nodes == 0 or matrix.shape[1] == 0:
        raise DatasetError(f"feature file {features} holds a {matrix.shape[0]}×{matrix.shape[1]} matrix; give one row "
                           "of features per node")  # fmt: skip
    if ids is None:
        if not integer:
            example = next(t for t in sources + targets if not _INTEGER.match(t))
            raise DatasetError(
                f"edge file {edges} uses non-integer node ids (e.g. {example!r}); the features file then needs a "
                "first column of node ids (a CSV with an 'id' column)"
            )
        source_ids, target_ids = [int(t) for t in sources], [int(t) for t in targets]  # exact, any size
        low, high = min(min(source_ids), min(target_ids)), max(max(source_ids), max(target_ids))
        if low < 0:
            raise DatasetError(
                f"edge file {edges} has a negative node id ({low}); ids must lie in [0, {num_nodes - 1}]"
            )
        if high >= num_nodes:
            raise DatasetError(
                f"edge file {edges} names node {high} but the features have {num_nodes} rows (ids 0..{num_nodes - 1});"
                " give one feature row per node"
            )
        source, target = np.array(source_ids, dtype=np.int64), np.array(target_ids, dtype=np.int64)
        node_ids = [str(i) for i in range(num_nodes)]
    else:
        index = {node: i for i, node in enumerate(ids)}
        missing = next((t for t in sources + targets if t not in index), None)
        if missing is not None:
            raise DatasetError(f"node {missing!r} of edge file {edges} has no row in feature file {features}")
        source = np.array([index[t] for t in sources], dtype=np.int64)
        target = np.array([index[t] for t in targets], dtype=np.int64)
        node_ids = list(ids)
    if weights is None:
        edge_index, repeated, edge_weight = *edge_list(source, target, num_nodes, directed), None
    else:
        edge_index, edge_weight, repeated = weighted_edge_list(
            source, target, weights, num_nodes, directed, edges, lambda i: f"line {rows.lines[i]}",
            "give both directions the same weight, list each edge once, or pass --directed (directed=True)")
    x = _feature_tensor(matrix)
    y, label_notes, class_names = (None, [], None) if labels is None else _label_vector(labels, node_ids, num_nodes,
                                                                                         ids is None)  # fmt: skip
    data = Data(x=x, edge_index=edge_index, y=y, num_nodes=num_nodes)
    if edge_weight is not None:
        data.edge_weight = edge_weight
    name = Path(edges).stem
    notes = ([repeated_edges_warning(edges, repeated, weights is not None)] if repeated else []) + weight_notes + \
        label_notes  # fmt: skip
    return LoadedDataset(name, data, named=False, node_ids=node_ids, directed=directed, warnings=notes,
                         class_names=class_names)


def _feature_tensor(matrix: np.ndarray | sp.csr_matrix) -> torch.Tensor:
    if not sp.issparse(matrix):
        return torch.from_numpy(np.ascontiguousarray(matrix))
    coo = matrix.tocoo()
    coo.sum_duplicates()
    coo.eliminate_zeros()
    indices = torch.from_numpy(np.vstack([coo.row, coo.col]).astype(np.int64))
    values = torch.from_numpy(coo.data.astype(np.float32))
    return torch.sparse_coo_tensor(indices, values, coo.shape, check_invariants=True).coalesce()


#: Label cells that mark a node without a label, as NaN does in OGB's files (compared case-insensitively).
MISSING_LABELS = {"nan", "na", "n/a", "none", "null", ""}


def _label_vector(path: str | Path, node_ids: list[str], num_nodes: int,
                  integer_ids: bool) -> tuple[torch.Tensor, list[str], list[str]]:  # fmt: skip
    """Labels per row, and the warnings to print; with integer ids (row i is node i) a label file's ``007`` is node
    7, as in the edge file. A label of ``nan`` (or ``NA``, ``null``, …: :data:`MISSING_LABELS`) marks a node
    without one: it stays −1, out of evaluation, and a warning counts them — never a class of its own."""
    index = {node: i for i, node in enumerate(node_ids)}
    y = np.full(num_nodes, -1, dtype=np.int64)
    listed = read_labels(path)
    rows = [row for row in listed if row[2].strip().lower() not in MISSING_LABELS]
    missing = len(listed) - len(rows)
    notes = [f"{missing} of the nodes listed in {path} have no label (nan); they are left out of evaluation"
             ] if missing else []  # fmt: skip
    classes = sorted({label for _, _, label in rows})
    if all(_INTEGER.match(c) for c in classes):
        classes.sort(key=int)
    code = {label: c for c, label in enumerate(classes)}
    for number, node, label in rows:
        if integer_ids and _INTEGER.match(node):
            node = str(int(node))
        if node not in index:
            raise DatasetError(
                f"{path}, line {number}: node {node!r} is not in the graph ({num_nodes} nodes); "
                "label only nodes that have features"
            )
        if y[index[node]] != -1:
            raise DatasetError(f"{path}, line {number}: node {node!r} is labelled twice")
        y[index[node]] = code[label]
    if len(classes) < 2:
        what = f"only one class ({classes[0]!r})" if classes else "no label"
        raise DatasetError(f"label file {path} holds {what}; evaluation needs two or more classes")
    return torch.from_numpy(y), notes, classes
