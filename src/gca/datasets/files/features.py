"""Node features in every form :mod:`gca.datasets.files` reads: a checked ``.npy`` matrix (:func:`read_npy`), a
SciPy sparse ``.npz``, a wide table (a row per node), a long ``id, feature[, value]`` table, a JSON file of each
node's features, or a matrix with an id list beside it — each as a :class:`Features`."""

from __future__ import annotations

import json
import math
import os
import re
import tokenize
from collections.abc import Callable
from itertools import chain
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import scipy.sparse as sp
import torch

from ...io import parse_document, read_user_text
from ..base import DatasetError, float32_features, stored_features
from ..npz import NPY_VERSIONS
from .ids import _check_key_types, _id_array, _is_number
from .tables import ID_COLUMN_NAMES, ConversionFailed, TableInput, _joined, read_text_column, release_memory

#: Header names of a long feature table's second column.
FEATURE_KEY_NAMES = {"feature", "feature_id", "featureid", "word", "token", "term", "attribute", "key"}
#: Header names of a long feature table's value column.
VALUE_NAMES = {"value", "weight", "count", "score", "tfidf", "tf_idf"}
#: An integer as Python writes it, ≥ 0: an id written otherwise (007, +7) would change as a number.
_PLAIN_INTEGER = r"^(0|[1-9]\d*)$"
#: Integer feature ids are column numbers up to this many columns; beyond it, ids that leave most columns empty
#: (a feature id of 10⁸ among a few hundred) are read as names, one column per distinct id, so the encoder's first
#: weight matrix is not 10⁸ rows.
SPARSE_IDS_WIDTH = 1 << 20


def _is_name(token: str) -> bool:
    """A column name has letters and is not a number ('1,5' with a decimal comma is neither)."""
    return any(c.isalpha() for c in token) and not _is_number(token)


def _shape_text(shape: tuple[int, ...]) -> str:
    return "×".join(str(n) for n in shape)


def read_npy(path: Path) -> np.ndarray:
    """The 2-D numeric array of an .npy feature file, checked from its header (parsed by NumPy, never unpickled) before
    any of it is read: objects, a shape not 2-D or negative, a non-numeric dtype, or a size other than the header's
    rows × columns × itemsize is one line naming the file. Loaded as a copy-on-write memory map where it can be."""
    with path.open("rb") as f:
        if f.read(6) != b"\x93NUMPY":
            raise DatasetError(f"feature file {path} is not a readable .npy file (no NumPy header)")
        f.seek(0)
        try:
            version = np.lib.format.read_magic(f)
        except ValueError:
            raise DatasetError(f"feature file {path} is not a readable .npy file (its header is cut short)") from None
        if version not in NPY_VERSIONS:
            raise DatasetError(
                f"feature file {path} is .npy format {version[0]}.{version[1]}, which gca does not "
                "read; save a numeric array with numpy.save"
            )
        try:
            shape, fortran, dtype = NPY_VERSIONS[version](f)
        # cut short, or a header that is not the format's (numpy tokenizes it: an unclosed bracket is a TokenError)
        except (ValueError, SyntaxError, TypeError, tokenize.TokenError) as exc:
            reason = " ".join(str(exc).split())
            reason = reason if len(reason) <= 160 else reason[:157] + "..."
            raise DatasetError(f"feature file {path} has a damaged .npy header ({reason})") from None
        offset, size = f.tell(), os.fstat(f.fileno()).st_size
    if dtype.hasobject:
        raise DatasetError(
            f"feature file {path} holds Python objects, which are not loaded (pickles can run code); "
            "save a numeric array"
        )
    if any(n < 0 for n in shape):
        raise DatasetError(f"feature file {path} has a damaged .npy header: its shape {shape} has a negative size")
    if len(shape) != 2 or not np.issubdtype(dtype, np.number) or dtype.fields is not None:
        raise DatasetError(f"feature file {path} must hold a 2-D numeric array, got {dtype} {shape}")
    need, have = math.prod(shape) * dtype.itemsize, size - offset  # Python integers: no overflow at any shape
    described = f"its header says {_shape_text(shape)} {dtype.name} ({need:,} bytes)"
    if have < need:
        raise DatasetError(
            f"feature file {path} is truncated: {described} but the file holds {have:,} bytes after "
            "the header; write it again with numpy.save"
        )
    if have > need:
        raise DatasetError(
            f"feature file {path} does not match its header: {described} but the file holds "
            f"{have:,} bytes after the header; write it again with numpy.save"
        )
    if need == 0:
        return np.empty(shape, dtype=dtype, order="F" if fortran else "C")
    try:
        return np.load(path, mmap_mode="c", allow_pickle=False)
    except (OSError, ValueError):  # a file system without memory maps
        return np.load(path, allow_pickle=False)


class Features(NamedTuple):
    """A feature matrix as read: ``matrix`` (dense or CSR), row ``ids`` (PyArrow, or ``None`` when row i is node i),
    ``sparse_by_id`` (nodes the edges add get zero rows), the columns' ``names`` where not numbers, ``notes``, and
    ``positional``: the ids are the rows' numbers (a JSON list of lists)."""

    matrix: np.ndarray | sp.csr_matrix
    ids: Any
    sparse_by_id: bool = False
    names: list[str] | None = None
    notes: list[str] = []
    positional: bool = False


def _feature_header(sample: list[list[str]], id_column: str | None) -> bool:
    """Whether a feature text file's first line is a header: a cell is a known id, feature or value column's name (or
    ``id_column``), or a later cell is a name above a column of numbers. Names above more names are data."""
    header = sample[0]
    if not all(header):
        return False
    words = [t.lower() for t in header]
    if words[0] in ID_COLUMN_NAMES or (id_column is not None and id_column in header):
        return True
    if any(w in FEATURE_KEY_NAMES or w in VALUE_NAMES for w in words[1:]):
        return True

    def numbers(j: int) -> bool:  # an empty cell is no name: it is refused later, naming its line
        cells = [row[j] for row in sample[1:] if j < len(row) and row[j]]
        return bool(cells) and all(_is_number(c) for c in cells)

    return any(_is_name(header[j]) and numbers(j) for j in range(1, len(header)))


def _starts_like_json(path: Path) -> bool:
    try:
        with path.open("rb") as f:
            start = f.read(64).lstrip(b"\xef\xbb\xbf \t\r\n")
    except OSError:
        return False
    return start[:1] in (b"{", b"[")


def _matrix_object(value: Any) -> np.ndarray | sp.csr_matrix:
    if isinstance(value, torch.Tensor):
        value = value.to_dense() if value.is_sparse else value
        value = value.detach().cpu().numpy()
    if sp.issparse(value):
        matrix = sp.csr_matrix(value)
        matrix.data = float32_features(np.asarray(matrix.data), "the feature matrix")
        return sp.csr_matrix(matrix, dtype=np.float32)
    value = np.asarray(value)
    if value.ndim != 2 or not np.issubdtype(value.dtype, np.number):
        raise DatasetError(f"the feature matrix must be a 2-D numeric array, got {value.dtype} {value.shape}")
    return stored_features(value, "the feature matrix")


def _with_ids(matrix: Any, ids: Any, name: str) -> Features:
    import pyarrow as pa

    if ids is None:
        return Features(matrix, None)
    if isinstance(ids, (str, Path)):
        values = read_text_column(Path(ids), "feature id")
        source = str(ids)
    else:
        values = pa.array(ids.tolist() if isinstance(ids, np.ndarray) and ids.dtype.kind in "OU" else ids)
        source = "the id list"
    if len(values) != matrix.shape[0]:
        raise DatasetError(
            f"{source} holds {len(values)} ids but {name} has {matrix.shape[0]} rows; give one id per row"
        )
    return Features(matrix, _id_array(values, source, "feature id"))


def _wide_features(table: TableInput, id_column: str | None, pa: Any) -> Features:
    columns = table.columns
    if id_column is not None and id_column in columns:  # else the label table's (load_files checks one has it)
        id_index: int | None = columns.index(id_column)
    elif (table.headed and columns and columns[0].lower() in ID_COLUMN_NAMES) or table.index_ids:
        id_index = 0  # an id column by its name, or a DataFrame's index of node ids (never a feature)
    elif table.table is not None or table.parquet is not None:
        schema = table.table.schema if table.table is not None else table.parquet.schema_arrow
        id_index = (
            0
            if columns and not (pa.types.is_integer(schema.field(0).type) or pa.types.is_floating(schema.field(0).type))
            else None
        )
    else:  # values that are not numbers (a decimal comma, '1,5', is a number written the wrong way, not an id)
        id_index = (
            0
            if any(not _is_number(f[0]) and not _is_number(f[0].replace(",", ".")) for f in table.rows_sampled if f)
            else None
        )
    value_columns = [i for i in range(len(columns)) if i != id_index]
    if not value_columns:
        raise DatasetError(f"feature file {table.name} has an id column but no feature columns")
    types = {i: pa.float64() for i in value_columns}
    if id_index is not None:
        _check_key_types(table, {id_index: "node id"})
        types[id_index] = pa.string() if table.path is not None and table.parquet is None else None
        types = {k: v for k, v in types.items() if v is not None}
    read = ([id_index] if id_index is not None else []) + value_columns
    blocks, id_parts, done = [], [], 0
    try:
        for batch in table.batches(read, types):
            offset = 1 if id_index is not None else 0
            values = np.empty((batch.num_rows, len(value_columns)), dtype=np.float32, order="F")  # a column at a time
            for j in range(len(value_columns)):
                column = batch.column(offset + j)
                if column.null_count:
                    row = done + int(np.argmax(column.is_null().to_numpy(zero_copy_only=False)))
                    raise DatasetError(f"{table.name}, {table.where(row)}: feature value '' is not a number")
                exact = column.to_numpy(zero_copy_only=False)
                with np.errstate(over="ignore"):
                    values[:, j] = exact
                if not bool(np.isfinite(values[:, j]).all()):  # NaN or infinite already, or beyond float32's range
                    float32_features(_finite_values(exact, done, table), table.name)
            blocks.append(values)
            if id_index is not None:
                id_parts.append(_no_empty_keys(batch.column(0), done, table, "node id"))
            done += batch.num_rows
    except ConversionFailed as exc:
        where = table.find_value(exc.column, exc.value)
        hint = "; decimal commas are not read, use a point (1.5)" if _is_number(exc.value.replace(",", ".")) else ""
        raise DatasetError(
            f"{table.name}{', ' + where if where else ''}: feature value {exc.value!r} is not a number{hint}"
        ) from None
    matrix = np.empty((done, len(value_columns)), dtype=np.float32)  # rows in C order, as the encoder reads them
    start = 0
    for block in blocks:
        matrix[start : start + block.shape[0]] = block
        start += block.shape[0]
    blocks.clear()
    ids = None
    if id_index is not None:
        ids = _id_array(pa.chunked_array(id_parts), table.name, "feature", table)
    release_memory()
    return Features(matrix, ids)


def _feature_columns(
    keys: Any, source: str, like: list[str] | int | None = None
) -> tuple[np.ndarray, int, list[str] | None, str | None]:
    """Column numbers of a sparse form's feature ids (−1: left out), the width, the columns' names and a note.

    The ids are the columns when all are integers ≥ 0, else their place among the sorted distinct names. ``like``
    maps them to a trained model's feature names, or bounds integer ids by its number of columns; features it lacks
    are left out, and the note counts them.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(keys, pa.ChunkedArray):
        keys = keys.combine_chunks()
    if len(keys) == 0:
        return np.zeros(0, dtype=np.int64), like if isinstance(like, int) else len(like or []), None, None
    numbers, huge = None, False
    if pa.types.is_integer(keys.type):
        try:
            numbers = keys.cast(pa.int64())
        except pa.ArrowInvalid:  # uint64 beyond int64: read as their digits
            keys = keys.cast(pa.string())
    elif not (pa.types.is_string(keys.type) or pa.types.is_large_string(keys.type)):
        keys = keys.cast(pa.string())
    if numbers is None:
        # numbers only when every id is written plainly (spaces aside): with one written so that it would change
        # as an integer (007, +7, -0), every id is a name as written — 007 and 7 are two features
        trimmed = pc.utf8_trim_whitespace(keys)
        if pc.all(pc.match_substring_regex(trimmed, _PLAIN_INTEGER)).as_py():
            try:
                numbers = pc.cast(trimmed, pa.int64())
            except pa.ArrowInvalid:  # beyond 64 bits
                huge = True
    text = keys.cast(pa.string())
    if huge:
        return _huge_feature_ids(pc.utf8_trim_whitespace(text), source, like)
    text = keys.cast(pa.string())
    if isinstance(like, list):  # the trained model's names: every feature where the model had it
        columns = (
            pc.index_in(text, value_set=pa.array(like, pa.string()))
            .fill_null(-1)
            .to_numpy(zero_copy_only=False)
            .astype(np.int64)
        )
        return columns, len(like), list(like), _left_out(columns, text, source)
    if numbers is not None and pc.min(numbers).as_py() >= 0:
        columns = numbers.to_numpy(zero_copy_only=False).astype(np.int64)
        if isinstance(like, int):  # the trained model's columns: numbered features beyond them are left out
            columns[columns >= like] = -1
            return columns, like, None, _left_out(columns, text, source)
        width = int(columns.max()) + 1
        if width > SPARSE_IDS_WIDTH:
            distinct = pc.unique(numbers)
            if width > 4 * len(distinct):  # mostly empty columns: the numbers name a vocabulary's words
                distinct = pc.take(distinct, pc.sort_indices(distinct))
                columns = pc.index_in(numbers, value_set=distinct).to_numpy(zero_copy_only=False).astype(np.int64)
                note = (
                    f"{source}: feature ids reach {width - 1:,} but only {len(distinct):,} are used; they are read "
                    f"as the names of {len(distinct):,} columns (feature_names), not as column numbers"
                )
                return columns, len(distinct), [str(n) for n in distinct.to_pylist()], note
        if width > 1 << 31:
            raise DatasetError(
                f"{source}: a feature id reaches {width - 1:,}; number the features from 0, or name them"
            )
        return columns, width, None, None
    if isinstance(like, int):
        example = next(v for v in text.to_pylist() if not re.match(_PLAIN_INTEGER, v.strip()))
        raise DatasetError(
            f"{source} names its features (e.g. {example!r}) but the model was trained on numbered "
            "features; give the features the model was trained on"
        )
    names = pc.unique(text)
    names = pc.take(names, pc.sort_indices(names))
    columns = pc.index_in(text, value_set=names).to_numpy(zero_copy_only=False)
    return columns.astype(np.int64), len(names), names.to_pylist(), None


def _huge_feature_ids(text: Any, source: str, like: list[str] | int | None) -> tuple[np.ndarray, int, list[str], str]:
    """Columns of plain integer feature ids some of which are beyond 64 bits: names, one column per distinct id in
    numeric order, and the note that says so."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(like, int):
        small = pc.less_equal(pc.utf8_length(text), 18).to_numpy(zero_copy_only=False)  # below 10¹⁸
        columns = np.full(len(text), -1, dtype=np.int64)
        columns[small] = pc.cast(pc.filter(text, pa.array(small)), pa.int64()).to_numpy(zero_copy_only=False)
        columns[columns >= like] = -1
        return columns, like, None, _left_out(columns, text, source)
    distinct = sorted(pc.unique(text).to_pylist(), key=lambda t: (len(t), t))  # plain digits: numeric order
    columns = pc.index_in(text, value_set=pa.array(distinct, pa.string())).to_numpy(zero_copy_only=False)
    note = (
        f"{source}: feature ids reach {int(distinct[-1]):,}, beyond 64 bits; they are read as the names of "
        f"{len(distinct):,} column{'s' if len(distinct) != 1 else ''} (feature_names), in numeric order, not as "
        "column numbers"
    )
    return columns.astype(np.int64), len(distinct), distinct, note


def _left_out(columns: np.ndarray, text: Any, source: str) -> str | None:
    """The note about features the trained model does not have, or ``None``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    missing = columns < 0
    if not missing.any():
        return None
    distinct = len(pc.unique(pc.filter(text, pa.array(missing))))
    if missing.all():
        raise DatasetError(
            f"none of the features in {source} is one the model was trained on; give the features "
            "the model was trained on"
        )
    return (
        f"{source}: {distinct} feature{'s' if distinct != 1 else ''} ({int(missing.sum())} entries) that the "
        "model was not trained on are left out"
    )


def _sparse_by_id(
    node_keys: Any,
    feature_keys: Any,
    values: np.ndarray,
    source: str,
    what: str,
    like: list[str] | int | None = None,
    listed: Any = None,
) -> Features:
    """A CSR matrix from (node id, feature id, value) triples; rows in the order ids first appear. With ``listed``
    (every node's id in row order, nodes without features too), ``node_keys`` are row numbers in it, and the ids'
    type is decided over all of ``listed``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if listed is not None:
        typed = _id_array(listed, source, "feature")
        rows = np.asarray(node_keys, dtype=np.int64)
        ids = typed
    else:
        node_keys = node_keys.combine_chunks() if isinstance(node_keys, pa.ChunkedArray) else node_keys
        if node_keys.null_count:
            raise DatasetError(f"{what} {source} has an empty node id; give every row its node's id")
        ids = pc.unique(node_keys)
        typed = _id_array(ids, source, "feature")
        rows = pc.index_in(node_keys, value_set=ids).to_numpy(zero_copy_only=False).astype(np.int64)
    columns, width, names, note = _feature_columns(feature_keys, source, like)
    values = float32_features(np.asarray(values, dtype=np.float64), source)
    kept = columns >= 0
    matrix = sp.coo_matrix((values[kept], (rows[kept], columns[kept])), shape=(len(ids), width)).tocsr()
    repeated = int(kept.sum()) - matrix.nnz if len(values) else 0
    matrix.sum_duplicates()
    notes = (
        [
            f"{source} lists {repeated} (node, feature) pair{'s' if repeated != 1 else ''} more than once; their "
            "values are summed"
        ]
        if repeated > 0
        else []
    )
    return Features(sp.csr_matrix(matrix, dtype=np.float32), typed, True, names, notes + ([note] if note else []))


def _long_features(table: TableInput, id_column: str | None, like: list[str] | int | None = None) -> Features:
    import pyarrow as pa

    columns = table.columns
    if len(columns) not in (2, 3):
        raise DatasetError(
            f"feature file {table.name} is read as id, feature[, value] rows but has {len(columns)} columns"
        )
    if id_column is not None and columns[0] != id_column:
        raise DatasetError(
            f"a long feature table's first column is its node id; {id_column!r} is not the first column of {table.name}"
        )
    text = table.path is not None and table.parquet is None
    types = {0: pa.string(), 1: pa.string()} if text else {}
    if len(columns) == 3:
        types[2] = pa.float64()
    _check_key_types(table, {0: "node id", 1: "feature id"})
    nodes, features, values, done = [], [], [], 0
    try:
        for batch in table.batches(list(range(len(columns))), types):
            nodes.append(_no_empty_keys(batch.column(0), done, table, "node id"))
            features.append(_no_empty_keys(batch.column(1), done, table, "feature id"))
            if len(columns) == 3:
                column = batch.column(2)
                if column.null_count:
                    row = done + int(np.argmax(column.is_null().to_numpy(zero_copy_only=False)))
                    raise DatasetError(f"{table.name}, {table.where(row)}: feature value '' is not a number")
                values.append(_finite_values(column.to_numpy(zero_copy_only=False), done, table))
            done += batch.num_rows
    except ConversionFailed as exc:
        where = table.find_value(exc.column, exc.value)
        raise DatasetError(
            f"{table.name}{', ' + where if where else ''}: feature value {exc.value!r} is not a number"
        ) from None
    if not done:
        raise DatasetError(f"feature file {table.name} has a header but no rows")
    # joined from the batches' chunks: pa.chunked_array of the columns themselves converts every value through
    # Python
    node_keys, feature_keys = (
        (pa.chunked_array([c for column in parts for c in column.chunks], type=parts[0].type).combine_chunks())
        for parts in (nodes, features)
    )
    weights = _joined(values) if values else np.ones(done)
    return _sparse_by_id(node_keys, feature_keys, weights, table.name, "feature file", like)


def _no_empty_keys(column: Any, start: int, table: TableInput, role: str) -> Any:
    """A block of a table's id column, refused in one line naming its line or row where a cell is empty or blank."""
    import pyarrow as pa
    import pyarrow.compute as pc

    empty = column.is_null()
    if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
        empty = pc.or_kleene(empty, pc.equal(pc.utf8_trim_whitespace(column), "")).fill_null(False)
    if pc.any(empty).as_py():
        empty = empty.combine_chunks() if isinstance(empty, pa.ChunkedArray) else empty
        row = start + int(np.argmax(empty.to_numpy(zero_copy_only=False)))
        raise DatasetError(f"{table.name}, {table.where(row)}: the {role} is empty; give every row its {role}")
    return column


def _finite_values(values: np.ndarray, start: int, table: TableInput) -> np.ndarray:
    """``values`` (a block of a feature column), refused in one line naming the line or row of the first NaN or
    infinite one."""
    bad = _first_not_finite(values)
    if bad is not None:
        at, kind = bad
        raise DatasetError(
            f"{table.name}, {table.where(start + at)}: feature value {str(float(values[at]))!r} is {kind}; features "
            "must be finite numbers, so clean or impute it"
        )
    return values


def _first_not_finite(values: np.ndarray) -> tuple[int, str] | None:
    """(position, ``"NaN"`` or ``"infinite"``) of the first value of ``values`` that is not finite; ``None``."""
    finite = np.isfinite(values)
    if finite.all():
        return None
    at = int(np.argmin(finite))
    return at, "NaN" if np.isnan(values[at]) else "infinite"


class _Pairs(list):
    """A JSON object as its (key, value) pairs in file order: a key given twice stays visible."""


def _json_type(value: Any) -> str:
    """``value``'s JSON type, for a message."""
    if isinstance(value, _Pairs):
        return "object"
    names = {list: "list", str: "string", bool: "boolean", int: "number", float: "number", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def _json_features(path: Path, like: list[str] | int | None = None) -> Features:
    """A JSON features file (the forms of docs/data.md), parsed by the guarded parser; every entry, feature id and value
    is checked before any is used, and a wrong one is named by its node."""
    import pyarrow as pa

    text = read_user_text(path, "feature", DatasetError, "save it as UTF-8")
    try:
        document = parse_document(text, "json", object_pairs_hook=_Pairs)
    except json.JSONDecodeError as exc:
        raise DatasetError(f"feature file {path} is not valid JSON (line {exc.lineno}: {exc.msg})") from None
    except ValueError as exc:
        raise DatasetError(f"feature file {path} is not valid JSON: {exc}") from None
    del text
    shape = "an object of node id → list of feature ids (or of feature id → value), or a list of such lists"
    if isinstance(document, _Pairs):
        node_ids: list[str] | None = [key for key, _ in document]
        entries = [entry for _, entry in document]
    elif isinstance(document, list):
        node_ids, entries = None, document
    else:
        raise DatasetError(f"feature file {path} holds a JSON {_json_type(document)}; give {shape}")
    del document

    def node(i: int) -> str:
        return f"node {node_ids[i]!r}" if node_ids is not None else f"entry {i} (node {i})"

    if node_ids is not None:
        if not node_ids:
            raise DatasetError(f"feature file {path} is an empty JSON object; give {shape}")
        if "" in node_ids:
            raise DatasetError(f'feature file {path} has an empty node id (""); give every node its id')
        if len(set(node_ids)) < len(node_ids):
            seen: set[str] = set()
            twice = next(n for n in node_ids if n in seen or seen.add(n))
            raise DatasetError(f"feature file {path} lists node {twice!r} twice; give one entry per node")
    kinds = [type(e) for e in entries]
    lists = kinds.count(list)
    if lists + kinds.count(_Pairs) < len(entries):
        bad = next(i for i, k in enumerate(kinds) if k is not list and k is not _Pairs)
        raise DatasetError(f"feature file {path}: {node(bad)} has a JSON {_json_type(entries[bad])}; give {shape}")
    if 0 < lists < len(entries):
        first_list, first_object = kinds.index(list), kinds.index(_Pairs)
        raise DatasetError(
            f"feature file {path} mixes the two forms: {node(first_list)} has a list of feature ids, "
            f"{node(first_object)} an object of feature id → value; give every node the same form"
        )
    lists = lists == len(entries)
    lengths = np.fromiter((len(e) for e in entries), dtype=np.int64, count=len(entries))
    owner = np.repeat(np.arange(len(entries)), lengths)  # the entry of each (feature, value)
    if lists:
        keys = list(chain.from_iterable(entries))
        values = np.ones(len(keys))
    else:
        keys = [key for e in entries for key, _ in e]
        listed = [value for e in entries for _, value in e]
        try:  # true and false are no numbers, though NumPy reads them as 1 and 0
            values = None if any(v is True or v is False for v in listed) else np.array(listed, dtype=np.float64)
        except (TypeError, ValueError, OverflowError):
            values = None
        if values is None or values.ndim != 1:
            at = next(i for i, v in enumerate(listed) if type(v) is not int and type(v) is not float)
            raise DatasetError(
                f"feature file {path}: {node(int(owner[at]))} gives feature {keys[at]!r} the value "
                f"{json.dumps(listed[at])[:40]}, which is not a number; give feature id → number"
            )
        del listed
        bad = _first_not_finite(values)
        if bad is not None:
            at, kind = bad
            raise DatasetError(
                f"feature file {path}: {node(int(owner[at]))} gives feature {keys[at]!r} a value that is {kind}; "
                "features must be finite numbers, so clean or impute it"
            )
    del entries
    feature_keys = _json_feature_ids(keys, path, node, owner)
    del keys
    if node_ids is None:  # row i is node i; nodes the edges add get zero rows (their ids stay theirs)
        count = len(lengths)
        columns, width, names, note = _feature_columns(feature_keys, str(path), like)
        kept = columns >= 0
        entries_matrix = (float32_features(values, path)[kept], (owner[kept], columns[kept]))
        matrix = sp.coo_matrix(entries_matrix, shape=(count, width)).tocsr()
        matrix.sum_duplicates()
        ids = pa.array(np.arange(count, dtype=np.int64))
        notes = [note] if note else []
        return Features(sp.csr_matrix(matrix, dtype=np.float32), ids, True, names, notes, positional=True)
    # every key's row is its entry's: nodes listed with no active feature keep theirs, and the ids' type (integers,
    # or text where any key would change as an integer) is decided over all the keys at once
    return _sparse_by_id(
        owner, feature_keys, values, str(path), "feature file", like, listed=pa.array(node_ids, type=pa.string())
    )


def _json_feature_ids(keys: list, path: Path, node: Callable[[int], str], owner: np.ndarray) -> Any:
    """The feature ids of a JSON features file as a PyArrow array: integers, or text where any is text; any other kind
    is named by its node."""
    import pyarrow as pa

    try:
        feature_keys = pa.array(keys)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        feature_keys = None
    kind = feature_keys.type if feature_keys is not None else None
    if kind is not None and (pa.types.is_integer(kind) or pa.types.is_string(kind)) and not feature_keys.null_count:
        return feature_keys
    if not keys:
        return pa.array([], pa.int64())
    at = next((i for i, k in enumerate(keys) if type(k) is not int and type(k) is not str), None)
    if at is not None:
        raise DatasetError(
            f"feature file {path}: {node(int(owner[at]))} has the feature id {json.dumps(keys[at])[:40]} (a JSON "
            f"{_json_type(keys[at])}); feature ids are integers or strings"
        )
    return pa.array([str(k) for k in keys], pa.string())  # integers beside names, or beyond 64 bits: names
