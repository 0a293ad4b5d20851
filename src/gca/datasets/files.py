"""Users' own graphs: an edge list, node features and optionally labels — from files or, in Python, from tables.

Every table is read by PyArrow a block at a time (:mod:`.tables`): CSV, TSV, semicolon- or whitespace-separated
text (header or none, ``#`` comment lines, blank lines, a byte-order mark and CRLF line ends allowed), Parquet, or
a pandas ``DataFrame`` or PyArrow ``Table`` given in Python. Node ids are mapped to rows with PyArrow's hash
kernels, never one at a time in Python.

**Node ids.** Ids are integers (up to 64 bits) or any strings. The **features** decide the nodes and their order:

* a feature table with an id column (named ``id``/``node``/``node_id``/``name``, named by ``id_column``, or of
  values that are not numbers), a long table, a JSON object, or a matrix with an id list beside it: row i is
  the node its id names;
* a matrix without ids (``.npy``, a SciPy sparse ``.npz``, a CSV of numbers only): row i is node i, and the
  other files' ids must be integers in ``[0, rows)``.

Ids are integers when every id of the feature table is an integer written as Python writes it (spaces around it
aside); otherwise they are matched as text, exactly — ``007``, ``+5`` or ``-0`` keep every id as written, since as
integers they would come back changed. The exported embeddings (``--export``) are keyed by the ids in their own
type: integers stay integers, and text ids are written as they were. An id holding a line break is refused.

**edges** — one edge per row: the first column is the source, the second the target. Edge weights are read only
from a column named ``weight`` (any case) or the column ``edge_weight`` names (a header's name, or its number
counted from 1 in a file without a header): repeats are summed and both directions of an undirected edge must be
equal (:func:`~gca.datasets.base.weighted_edge_list`); all weights 1 is an unweighted graph, read exactly as
without the column. Any other column is not read, and one line says so — a column of timestamps is never trained
as weights. A first line of a text file is a header when it names its columns (``source,target``, ``src,dst``,
``u,v``, ``from,to``, …) or when it is the only line that is not numeric.

**features**, in any of these forms:

* *wide*: ``.npy`` (a 2-D numeric array, checked from its header: :func:`read_npy`), a SciPy sparse ``.npz``
  (``scipy.sparse.save_npz``), or a table with one row per node: an optional id column and numeric columns;
* *long*, kept sparse: a table of ``id, feature[, value]`` rows (a header naming its second column ``feature``,
  ``feature_id``, ``word``, ``token``, ``term``, ``attribute`` or ``key``, or ``layout="long"``); a missing value
  is 1, and repeated (id, feature) rows are summed;
* *JSON*, kept sparse: an object mapping each node id to its list of active feature ids (value 1) or to an object
  of feature id → value; or a list of such lists, row i being node i (the same form for every node; a node listed
  twice is refused);
* a matrix with an id list beside it: ``ids`` (``--feature-ids FILE``: one id per line, or a 1-D ``.npy``), or in
  Python a ``(matrix, ids)`` pair.

Feature ids of the long and JSON forms are column numbers when they are all integers ≥ 0 (so the same vocabulary
gives the same columns in another graph); otherwise the sorted distinct names are the columns
(:attr:`~gca.datasets.base.LoadedDataset.feature_names`); integer ids that would leave most columns empty (beyond
:data:`SPARSE_IDS_WIDTH`, under a quarter of them used) are names too, and one line says so. In these sparse forms
a node that has no active feature has no row: a node of the edge list that the features do not name is added with
all-zero features, and one line counts them. In the wide forms every node needs its row. A pandas ``DataFrame``
whose index is named, without an id column of another name, is indexed by node id: the index is its id column,
never a feature. An unnamed index is never read (see :func:`.tables._index_as_column`).

**labels** — a table of ``node, label`` (labels may be strings; ``nan``, ``NA``, ``null``, … or an empty cell
mark a node without one). With more than two columns, ``label_column`` names the label column (and ``id_column``
the id column; default the first). Labels of nodes that are not in the graph — label tables of real systems hold
removed nodes — are skipped, and one line counts them, whatever the form of the features.

Everything that is wrong with a file raises :class:`~gca.datasets.DatasetError` with one line naming the file,
the line (text files) or row, and what to do.
"""

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
from torch_geometric.data import Data

from ..io import parse_document, read_user_text
from .base import (
    DatasetError,
    LoadedDataset,
    check_regular_file,
    edge_list,
    edge_weights,
    float32_features,
    repeated_edges_warning,
    stored_features,
    undirected_edges,
    weighted_edge_list,
)
from .tables import ConversionFailed, TableInput, is_table_object, read_text_column, release_memory

HEADER_NAMES = {
    "source", "target", "src", "dst", "from", "to", "u", "v", "node", "node1", "node2", "node_1", "node_2",
    "id", "id1", "id2", "node_id", "head", "tail", "label", "class", "name", "weight",
}  # fmt: skip
ID_COLUMN_NAMES = {"id", "node", "node_id", "name", "nodeid"}
#: Header names of a long feature table's second column.
FEATURE_KEY_NAMES = {"feature", "feature_id", "featureid", "word", "token", "term", "attribute", "key"}
#: Header names of a long feature table's value column.
VALUE_NAMES = {"value", "weight", "count", "score", "tfidf", "tf_idf"}
#: Header names of a label table's label column, when it has more than two columns.
LABEL_NAMES = {"label", "labels", "class", "y", "category", "target"}
#: The header name of an edge table's weight column.
WEIGHT_NAME = "weight"
#: Label cells that mark a node without a label, as NaN does in OGB's files (compared case-insensitively).
MISSING_LABELS = {"nan", "na", "n/a", "none", "null", ""}
_NUMBER = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$|^[+-]?(nan|inf|infinity)$", re.IGNORECASE)
_INTEGER = re.compile(r"^[+-]?\d+$")
#: An integer as Python writes it, ≥ 0: an id written otherwise (007, +7) would change as a number.
_PLAIN_INTEGER = r"^(0|[1-9]\d*)$"
#: Integer feature ids are column numbers up to this many columns; beyond it, ids that leave most columns empty
#: (a feature id of 10⁸ among a few hundred) are read as names, one column per distinct id, so the encoder's first
#: weight matrix is not 10⁸ rows.
SPARSE_IDS_WIDTH = 1 << 20
#: Text files at least this large say how far reading has come (smaller ones are read in well under a second).
PROGRESS_BYTES = 64 << 20


def _is_number(token: str) -> bool:
    return bool(_NUMBER.match(token))


def _is_name(token: str) -> bool:
    """A column name has letters and is not a number ('1,5' with a decimal comma is neither)."""
    return any(c.isalpha() for c in token) and not _is_number(token)


def _looks_like_header(rows: list[list[str]], columns: int) -> bool:
    first = [t.lower() for t in rows[0][:columns]]
    if first and all(t in HEADER_NAMES for t in first):
        return True
    if len(rows) < 2 or all(_is_number(t) for t in first):
        return False
    # The only non-numeric line of an otherwise numeric file is a header.
    return all(_is_number(t) for fields in rows[1:] for t in fields[:columns])


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
    from ..progress import Progress

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


# --------------------------------------------------------------------------------------------------- node ids
class NodeIds:
    """The graph's nodes: ``keys`` (a PyArrow array of ids, integers or strings) or ``count`` rows whose ids are
    their numbers; :meth:`rows` maps a column of ids to row numbers. With ``grow``, ids it does not know are
    added as new nodes (the sparse feature forms); otherwise they are reported through ``missing``.

    Parameters
    ----------
    keys
        The ids of rows 0, 1, …; ``None`` when row i is node i.
    count
        The number of rows when ``keys`` is ``None``.
    grow
        Add unknown ids as new nodes.
    """

    def __init__(self, keys: Any | None, count: int, grow: bool = False) -> None:
        import pyarrow as pa

        self.keys, self.count, self.grow = keys, count, grow
        self.integer = keys is None or pa.types.is_integer(keys.type)
        self.added = 0
        self._table = keys

    @property
    def size(self) -> int:
        return self.count if self.keys is None else len(self.keys)

    def id_type(self) -> Any:
        """The PyArrow type a column of ids is read as: int32 where rows are ids below 2³¹ (a larger or negative
        id is then refused by the parser and reported as not in the graph), int64 for other integer ids, else
        text."""
        import pyarrow as pa

        if self.keys is None and self.count < 2**31:
            return pa.int32()
        return pa.int64() if self.integer else pa.string()

    def rows(self, values: Any) -> tuple[np.ndarray, np.ndarray]:
        """(row of each value, −1 where unknown) and the mask of unknown values, for a PyArrow column of ids of
        :meth:`id_type`.

        Parameters
        ----------
        values
            A column of ids.
        """
        import pyarrow as pa
        import pyarrow.compute as pc

        if isinstance(values, pa.ChunkedArray):
            values = values.combine_chunks()
        if self.keys is None:  # rows are ids: checked, not looked up
            numbers = np.array(values.to_numpy(zero_copy_only=False))  # its own memory, not the block's
            unknown = (numbers < 0) | (numbers >= self.count)
            return numbers, unknown
        index = pc.index_in(values, value_set=self.keys)
        unknown = index.is_null().to_numpy(zero_copy_only=False)
        if self.grow and unknown.any():
            new = pc.unique(pc.filter(values, pa.array(unknown)))
            self.keys = pa.concat_arrays([self.keys, new.cast(self.keys.type)])
            self.added += len(new)
            index = pc.index_in(values, value_set=self.keys)
            unknown = np.zeros(len(values), dtype=bool)
        rows = index.fill_null(-1).to_numpy(zero_copy_only=False)  # int32: row numbers below 2³¹
        return rows, unknown

    def exported(self) -> np.ndarray | list[str] | None:
        """The ids as :attr:`LoadedDataset.node_ids` holds them: an int64 array, a list of strings, or ``None``
        when row i is node i."""
        if self.keys is None:
            return None
        if self.integer:
            return self.keys.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
        return self.keys.to_pylist()


def _id_array(values: Any, source: str, what: str, table: TableInput | None = None) -> Any:
    """A column of node ids as int64 when every one is an integer written as Python writes it, else as strings
    (``007``, ``+5`` or ``-0`` keep every id as written: as integers they would come back changed in the export);
    a repeated id, or one holding a line break, is an error."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if pa.types.is_boolean(values.type):
        raise DatasetError(f"{what} file {source}: the node ids are true/false values; node ids are integers or "
                           "text — give them in the first column (or name it with id_column=)")
    if values.null_count:
        row = int(np.argmax(values.is_null().to_numpy(zero_copy_only=False)))
        where = table.where(row) if table is not None else f"row {row + 1}"
        raise DatasetError(f"{source}, {where}: the node id is empty; give every row its node's id")
    if not pa.types.is_integer(values.type):
        text = values.cast(pa.string())
        broken = pc.match_substring_regex(text, "[\r\n]").to_numpy(zero_copy_only=False)
        if broken.any():
            row = int(np.argmax(broken))
            where = table.where(row) if table is not None else ""
            raise DatasetError(f"{source}{', ' + where if where else ''}: node id {text[row].as_py()!r} holds a line "
                               "break; node ids with line breaks are not supported — write each id on one line")
        try:  # spaces around an id are not part of it; 007 is kept as text, else it would be exported as 7
            plain = pc.match_substring_regex(pc.utf8_trim_whitespace(text), r"^(0|-?[1-9]\d*)$")
            if len(text) and pc.all(plain).as_py() is not False:
                values = pc.cast(pc.utf8_trim_whitespace(text), pa.int64())
            else:
                values = text
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):  # beyond 64 bits: matched as text
            values = text
    elif values.type != pa.int64():
        try:
            values = values.cast(pa.int64())
        except pa.ArrowInvalid:  # uint64 beyond int64
            values = values.cast(pa.string())
    counts = pc.value_counts(values)
    repeated = pc.filter(counts.field("values"), pc.greater(counts.field("counts"), 1))
    if len(repeated):
        again = ""
        if table is not None:  # the line (row) that lists it the second time
            same = pc.equal(values, repeated[0]).to_numpy(zero_copy_only=False)
            again = f" (again on {table.where(int(np.flatnonzero(same)[1]))})"
        raise DatasetError(f"{what} file {source} lists node {str(repeated[0].as_py())!r} twice{again}; give one "
                           "row per node")
    return values


# --------------------------------------------------------------------------------------------------- edges
def read_edge_list(path: str | Path) -> tuple[list[str], list[str], bool]:
    """(sources, targets, integer_ids): an edge file's first two columns as the text in the file.

    Parameters
    ----------
    path
        The edge file (any form :func:`load_files` reads).

    Returns
    -------
    tuple[list[str], list[str], bool]
        Each edge's source and target id as written, and whether every id is an integer.
    """
    import pyarrow as pa

    table = _edge_table(path, False)
    sources, targets = [], []
    for batch in table.batches([0, 1], {0: pa.string(), 1: pa.string()}):
        sources += batch.column(0).to_pylist()
        targets += batch.column(1).to_pylist()
    integer = all(_INTEGER.match(t) for t in chain(sources, targets))
    return sources, targets, integer


def _edge_table(source: Any, progress: bool) -> TableInput:
    table = TableInput(source, "edge", _reporter(source, "edges", progress))
    if table.path is not None and table.parquet is None:
        if not table.sample:
            raise DatasetError(f"edge file {table.name} holds no edges; give one 'source target' pair per line")
        table.set_header(_looks_like_header(table.sample, 2))
        if not table.rows_sampled:
            raise DatasetError(f"edge file {table.name} holds no edges; give one 'source target' pair per line")
    if len(table.columns) < 2:
        shown = ",".join(table.rows_sampled[0]) if table.rows_sampled else ""
        where = f"{table.name}, {table.where(0)}" if table.path is not None and table.parquet is None else table.name
        raise DatasetError(f"{where}: expected two node ids per line, got {shown!r}")
    return table


def _weight_index(table: TableInput, edge_weight: str | int | None) -> tuple[int | None, list[str]]:
    """Which column holds the weights (a column named ``weight``, or the one ``edge_weight`` names) and the notes
    about the columns that are not read."""
    names = [c.lower() for c in table.columns]
    index = None
    if edge_weight is not None:
        given = str(edge_weight)
        if given.lower() in names[2:]:
            index = 2 + names[2:].index(given.lower())
        elif given.isdigit() and 3 <= int(given) <= len(names):
            index = int(given) - 1
        else:
            listed = ", ".join(table.columns[2:]) or "none"
            raise DatasetError(f"edge file {table.name} has no column {given!r} for the edge weights (its columns "
                               f"after source and target: {listed}; a file without a header numbers them from 3)")
    elif table.headed and WEIGHT_NAME in names[2:]:
        index = 2 + names[2:].index(WEIGHT_NAME)
    unread = [c for i, c in enumerate(table.columns[2:], 2) if i != index]
    notes = []
    if unread:
        shown = ", ".join(repr(c) for c in unread) if table.headed else f"{len(unread)}"
        what = f"column{'s' if len(unread) > 1 else ''} {shown}" if table.headed else \
            f"{shown} column{'s' if len(unread) > 1 else ''}"  # fmt: skip
        notes.append(f"{table.name} has {what} beyond source, target{' and weight' if index is not None else ''} "
                     "that are not read — edge weights are read only from a column named 'weight' or the one "
                     "--edge-weight COL (edge_weight=COL) names")  # fmt: skip
    return index, notes


class _Edges(NamedTuple):
    """The listed edges as blocks of row numbers, as read (never joined into one array unless a caller must)."""

    sources: list[np.ndarray]
    targets: list[np.ndarray]
    weight: np.ndarray | None
    table: TableInput

    @property
    def count(self) -> int:
        return sum(len(s) for s in self.sources)


def _read_edges(table: TableInput, nodes: NodeIds, weight_column: int | None, features_name: str) -> _Edges:
    """The edges as row numbers (int32 below 2³¹ nodes), read a block at a time."""
    import pyarrow as pa
    import pyarrow.compute as pc

    columns = [0, 1] + ([weight_column] if weight_column is not None else [])
    kind = nodes.id_type()
    types = {0: kind, 1: kind, **({weight_column: pa.float64()} if weight_column is not None else {})}
    sources, targets, weights, done = [], [], [], 0
    # A look-up builds a hash table of all the graph's ids: blocks are looked up together, both columns at once, a
    # few ids per node at a time (at 2·10⁷ edges block by block, the tables took 32 of 35 s).
    group = max(4 * nodes.size, 1 << 22) if nodes.keys is not None else 0
    try:
        for batch in _grouped(table.batches(columns, types), group):
            ends = []
            for c in (0, 1):
                column = batch.column(c)
                if column.null_count:
                    row = done + int(np.argmax(column.is_null().to_numpy(zero_copy_only=False)))
                    raise DatasetError(f"{table.name}, {table.where(row)}: expected two node ids per line, got an "
                                       "empty one")  # fmt: skip
                ends.append(column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column)
            column = pa.concat_arrays(ends)  # sources, then targets
            del ends
            if nodes.grow and not nodes.integer:  # an id with spaces around it would become a node of its own
                column = pc.utf8_trim_whitespace(column)
            rows, unknown = nodes.rows(column)
            if unknown.any() and not nodes.integer:  # spaces around some ids, where the sample had none
                column = pc.utf8_trim_whitespace(column)
                rows, unknown = nodes.rows(column)
            if unknown.any():
                raise _unknown_node(table, column, unknown, nodes, features_name, done)
            rows = rows.astype(np.int64 if nodes.grow or nodes.size >= 2**31 else np.int32, copy=False)
            sources.append(rows[: batch.num_rows].copy())
            targets.append(rows[batch.num_rows :].copy())
            del rows, column
            release_memory()
            if weight_column is not None:
                column = batch.column(2)
                if column.null_count:
                    row = done + int(np.argmax(column.is_null().to_numpy(zero_copy_only=False)))
                    raise DatasetError(f"{table.name}, {table.where(row)}: has no weight; give every edge a weight "
                                       "(a number) or none")  # fmt: skip
                weights.append(column.to_numpy(zero_copy_only=False))
            done += batch.num_rows
    except ConversionFailed as exc:
        raise _conversion_error(table, exc, nodes, features_name) from None
    if not done:
        raise DatasetError(f"edge file {table.name} holds no edges; give one 'source target' pair per line")
    if nodes.grow and nodes.size < 2**31:
        sources, targets = [s.astype(np.int32) for s in sources], [t.astype(np.int32) for t in targets]
    weight = None
    if weight_column is not None:
        weight = edge_weights(_joined(weights), table.name, table.where)
    return _Edges(sources, targets, weight, table)


def _grouped(batches, rows: int):
    """The tables of ``batches`` joined (without copying) into tables of at least ``rows`` rows; as they are where
    ``rows`` is 0."""
    import pyarrow as pa

    if not rows:
        yield from batches
        return
    held, count = [], 0
    for batch in batches:
        held.append(batch)
        count += batch.num_rows
        if count >= rows:
            yield pa.concat_tables(held)
            held, count = [], 0
    if held:
        yield pa.concat_tables(held)


def _released_on_second_pass(sources: list, targets: list):
    """``blocks()`` for :func:`~gca.datasets.base.undirected_edges`, which reads the listed edges twice: the second
    pass lets go of each block once it is read, so the listed edges (8 bytes each) are gone before the edge list
    is mirrored into its final form (16 bytes per listed edge)."""
    passes = [0]

    def blocks():
        passes[0] += 1
        for i in range(len(sources)):
            yield sources[i], targets[i]
            if passes[0] >= 2:
                sources[i] = targets[i] = None

    return blocks


def _joined(parts: list[np.ndarray]) -> np.ndarray:
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def _unknown_node(table: TableInput, column: Any, unknown: np.ndarray, nodes: NodeIds, features_name: str,
                  done: int = 0):
    """The error for the first id of ``column`` (a group's sources, then its targets, its first row ``done`` rows
    into the file) that names no node."""
    import pyarrow.compute as pc

    first = int(np.argmax(unknown))
    value = column.combine_chunks()[first].as_py() if hasattr(column, "combine_chunks") else column[first].as_py()
    if isinstance(value, str) and ("\n" in value or "\r" in value):
        where = table.where(done + first % max(len(column) // 2, 1)) if table.path is not None else ""
        return DatasetError(f"edge file {table.name}{', ' + where if where else ''}: node id {value!r} holds a line "
                            "break; node ids with line breaks are not supported — write each id on one line")
    if isinstance(value, str) and _INTEGER.match(value.strip()) and nodes.keys is not None and \
            pc.all(pc.match_substring_regex(nodes.keys, r"^\s*[+-]?\d+\s*$")).as_py():
        # only where the features write the same number otherwise: an id unknown however written is just unknown
        written = next((k for k in nodes.keys.to_pylist() if int(k) == int(value)), None)
        if written is not None:
            return DatasetError(f"node {value!r} of edge file {table.name} has no row in feature file "
                                f"{features_name}, whose ids are kept as written ({written!r}) and matched exactly; "
                                "write the ids the same way in every file")
    if nodes.keys is None:
        if value < 0:
            return DatasetError(f"edge file {table.name} has a negative node id ({value}); ids must lie in "
                                f"[0, {nodes.count - 1}]")  # fmt: skip
        return DatasetError(f"edge file {table.name} names node {value} but the features have {nodes.count} rows "
                            f"(ids 0..{nodes.count - 1}); give one feature row per node")  # fmt: skip
    return DatasetError(f"node {str(value)!r} of edge file {table.name} has no row in feature file {features_name}")


def _conversion_error(table: TableInput, exc: ConversionFailed, nodes: NodeIds, features_name: str) -> DatasetError:
    """What a value that did not convert means in an edge file."""
    value, column = exc.value, exc.column
    if column >= 2:
        where = table.find_value(column, value)
        return DatasetError(f"{table.name}{', ' + where if where else ''}: has the weight {value!r}, which is not a "
                            "number; give every edge a weight (a number) or none")  # fmt: skip
    if value.strip().startswith("+") and _INTEGER.match(value.strip()):
        return DatasetError(f"edge file {table.name} writes a node id with a plus sign ({value.strip()!r}); write "
                            "integer ids without one")  # fmt: skip
    if _INTEGER.match(value.strip()):  # an integer beyond 64 bits
        if nodes.keys is None:
            return DatasetError(f"edge file {table.name} names node {value.strip()} but the features have "
                                f"{nodes.count} rows (ids 0..{nodes.count - 1}); give one feature row per node")
        return DatasetError(f"node {value!r} of edge file {table.name} has no row in feature file {features_name}")
    if nodes.keys is None:
        return DatasetError(f"edge file {table.name} uses non-integer node ids (e.g. {value!r}); the features then "
                            "need node ids: a first column of ids (a CSV with an 'id' column), a long or JSON "
                            "feature file, or an id list (--feature-ids FILE)")  # fmt: skip
    return DatasetError(f"node {value!r} of edge file {table.name} has no row in feature file {features_name}")


# --------------------------------------------------------------------------------------------------- features
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


class Features(NamedTuple):
    """A feature matrix as read: ``matrix`` (dense or CSR), ``ids`` (a PyArrow array of row ids, or ``None`` when
    row i is node i), ``sparse_by_id`` (a long or JSON form: nodes the edges add get zero rows), ``names`` (the
    columns' feature names, where they were not numbers), ``notes``, and ``positional``: the ids are the rows'
    numbers (a JSON list of lists), so the graph keeps row i as node i unless the edges add nodes."""

    matrix: np.ndarray | sp.csr_matrix
    ids: Any
    sparse_by_id: bool = False
    names: list[str] | None = None
    notes: list[str] = []
    positional: bool = False


def read_features(path: str | Path) -> tuple[np.ndarray | sp.csr_matrix, list | None]:
    """(matrix, node ids or ``None`` when row i is node i) of a feature file in any form the module describes.

    Parameters
    ----------
    path
        An ``.npy``, ``.npz`` (SciPy sparse), ``.json``, CSV/TSV or Parquet feature file.
    """
    read = feature_input(path)
    return read.matrix, (read.ids.to_pylist() if read.ids is not None and not read.positional else None)


def feature_input(path: Any, ids: Any = None, layout: str = "auto", id_column: str | None = None,
                  progress: bool = False, like: list[str] | int | None = None) -> Features:  # fmt: skip
    """The feature matrix and the node id of each row, from any form the module describes.

    Parameters
    ----------
    path
        An ``.npy``, ``.npz`` (SciPy sparse), ``.json``, CSV/TSV or Parquet file; in Python also a NumPy array,
        SciPy sparse matrix, tensor, pandas ``DataFrame``, PyArrow ``Table`` or a ``(matrix, ids)`` pair.
    ids
        The node id of each row of a matrix given without them (a file of one id per line, a 1-D ``.npy``, or a
        sequence); ``None`` for none.
    layout
        ``"auto"``, ``"wide"`` (a row per node) or ``"long"`` (``id, feature[, value]`` rows) for a table.
    id_column
        The name of a table's id column; ``None`` to recognise it.
    progress
        Say how far the reading of a large file has come.
    like
        The columns of a model trained before, for the sparse forms: its feature names, or its number of
        columns (``gca embed``); ``None``: the columns the file's own feature ids give.

    Returns
    -------
    Features
        The matrix, its rows' ids and what was noticed.
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
        raise DatasetError(f"feature file {_source_name(path)} is a table; an id list goes with an .npy or .npz "
                           "matrix (a table gives its ids in an id column)")  # fmt: skip
    names = frozenset(ID_COLUMN_NAMES | ({id_column.lower()} if id_column else set()) | {"id"})
    table = TableInput(path, "feature", _reporter(path, "features", progress), index_names=names)
    if table.path is not None and table.parquet is None:
        if not table.sample:
            raise DatasetError(f"feature file {table.name} is empty")
        table.set_header(_feature_header(table.sample, id_column))
        if not table.rows_sampled:
            raise DatasetError(f"feature file {table.name} has a header but no rows")
    long = layout == "long" or (layout == "auto" and table.headed and 2 <= len(table.columns) <= 3
                                and table.columns[1].lower() in FEATURE_KEY_NAMES)  # fmt: skip
    if long:
        return _long_features(table, id_column, like)
    return _wide_features(table, id_column, pa)


def _feature_header(sample: list[list[str]], id_column: str | None) -> bool:
    """Whether a feature text file's first line is a header: its words name the columns (its first cell an id
    column's name or ``id_column``, or a cell a feature or value column's name), or a later cell is a name above a
    column of numbers (``id,f1,f2`` over ``a,0.5,1``). A first line of names above more names (a long table's
    ``a,apple`` over ``b,banana``) is data: a header there must use the known names."""
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
        raise DatasetError(f"{source} holds {len(values)} ids but {name} has {matrix.shape[0]} rows; give one id "
                           "per row")  # fmt: skip
    return Features(matrix, _id_array(values, source, "feature id"))


def _wide_features(table: TableInput, id_column: str | None, pa: Any) -> Features:
    columns = table.columns
    if id_column is not None and id_column in columns:  # else the label table's (load_files checks one has it)
        id_index: int | None = columns.index(id_column)
    elif (table.headed and columns and columns[0].lower() in ID_COLUMN_NAMES) or table.index_ids:
        id_index = 0  # an id column by its name, or a DataFrame's index of node ids (never a feature)
    elif table.table is not None or table.parquet is not None:
        schema = table.table.schema if table.table is not None else table.parquet.schema_arrow
        id_index = 0 if columns and not (pa.types.is_integer(schema.field(0).type) or
                                         pa.types.is_floating(schema.field(0).type)) else None  # fmt: skip
    else:  # values that are not numbers (a decimal comma, '1,5', is a number written the wrong way, not an id)
        id_index = 0 if any(not _is_number(f[0]) and not _is_number(f[0].replace(",", "."))
                            for f in table.rows_sampled if f) else None  # fmt: skip
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
        raise DatasetError(f"{table.name}{', ' + where if where else ''}: feature value {exc.value!r} is not a "
                           f"number{hint}") from None  # fmt: skip
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


def _feature_columns(keys: Any, source: str, like: list[str] | int | None = None
                     ) -> tuple[np.ndarray, int, list[str] | None, str | None]:  # fmt: skip
    """Column numbers of a sparse form's feature ids (−1: left out), the width, the columns' names and a note.

    The ids themselves are the columns when all are integers ≥ 0; otherwise their place among the sorted distinct
    names. ``like`` gives the columns of a model trained before (``gca embed``): its feature names, where the ids
    are mapped to them, or its number of columns, which integer ids must stay below; features it does not have are
    left out, and the note counts them."""
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
        columns = pc.index_in(text, value_set=pa.array(like, pa.string())).fill_null(-1).to_numpy(
            zero_copy_only=False).astype(np.int64)  # fmt: skip
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
                note = (f"{source}: feature ids reach {width - 1:,} but only {len(distinct):,} are used; they are read "
                        f"as the names of {len(distinct):,} columns (feature_names), not as column numbers")
                return columns, len(distinct), [str(n) for n in distinct.to_pylist()], note
        if width > 1 << 31:
            raise DatasetError(f"{source}: a feature id reaches {width - 1:,}; number the features from 0, or name "
                               "them")  # fmt: skip
        return columns, width, None, None
    if isinstance(like, int):
        example = next(v for v in text.to_pylist() if not re.match(_PLAIN_INTEGER, v.strip()))
        raise DatasetError(f"{source} names its features (e.g. {example!r}) but the model was trained on numbered "
                           "features; give the features the model was trained on")  # fmt: skip
    names = pc.unique(text)
    names = pc.take(names, pc.sort_indices(names))
    columns = pc.index_in(text, value_set=names).to_numpy(zero_copy_only=False)
    return columns.astype(np.int64), len(names), names.to_pylist(), None


def _huge_feature_ids(text: Any, source: str, like: list[str] | int | None) -> tuple[np.ndarray, int, list[str], str]:
    """Columns of feature ids written as plain integers of which some are beyond 64 bits: names, one column per
    distinct id in numeric order, with the note that says so (``like``: a trained model's number of columns, which
    such ids are beyond)."""
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
    note = (f"{source}: feature ids reach {int(distinct[-1]):,}, beyond 64 bits; they are read as the names of "
            f"{len(distinct):,} column{'s' if len(distinct) != 1 else ''} (feature_names), in numeric order, not as "
            "column numbers")
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
        raise DatasetError(f"none of the features in {source} is one the model was trained on; give the features "
                           "the model was trained on")  # fmt: skip
    return (f"{source}: {distinct} feature{'s' if distinct != 1 else ''} ({int(missing.sum())} entries) that the "
            "model was not trained on are left out")


def _sparse_by_id(node_keys: Any, feature_keys: Any, values: np.ndarray, source: str, what: str,
                  like: list[str] | int | None = None, listed: Any = None) -> Features:  # fmt: skip
    """A CSR matrix from (node id, feature id, value) triples; rows in the order ids first appear. With ``listed``
    (every node's id as written, in row order — a JSON object's keys, nodes without features too), ``node_keys``
    are the triples' row numbers in it, and the ids' type is decided over all of ``listed`` at once."""
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
    notes = [f"{source} lists {repeated} (node, feature) pair{'s' if repeated != 1 else ''} more than once; their "
             "values are summed"] if repeated > 0 else []  # fmt: skip
    return Features(sp.csr_matrix(matrix, dtype=np.float32), typed, True, names, notes + ([note] if note else []))


def _long_features(table: TableInput, id_column: str | None, like: list[str] | int | None = None) -> Features:
    import pyarrow as pa

    columns = table.columns
    if len(columns) not in (2, 3):
        raise DatasetError(f"feature file {table.name} is read as id, feature[, value] rows but has {len(columns)} "
                           "columns")  # fmt: skip
    if id_column is not None and columns[0] != id_column:
        raise DatasetError(f"a long feature table's first column is its node id; {id_column!r} is not the first "
                           f"column of {table.name}")  # fmt: skip
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
        raise DatasetError(f"{table.name}{', ' + where if where else ''}: feature value {exc.value!r} is not a "
                           "number") from None  # fmt: skip
    if not done:
        raise DatasetError(f"feature file {table.name} has a header but no rows")
    # joined from the batches' chunks: pa.chunked_array of the columns themselves converts every value through
    # Python (22 of 26 s for 10⁷ rows)
    node_keys, feature_keys = ((pa.chunked_array([c for column in parts for c in column.chunks], type=parts[0].type)
                                .combine_chunks()) for parts in (nodes, features))  # fmt: skip
    weights = _joined(values) if values else np.ones(done)
    return _sparse_by_id(node_keys, feature_keys, weights, table.name, "feature file", like)


def _check_key_types(table: TableInput, roles: dict[int, str]) -> None:
    """A Parquet file's or an in-memory table's id columns must hold integers or text (``roles``: column → what it
    holds): a column of lists or structs is one line, not a PyArrow error when it is first used."""
    import pyarrow as pa

    if table.table is None and table.parquet is None:
        return  # a text file's columns are read as text
    schema = table.table.schema if table.table is not None else table.parquet.schema_arrow
    for index, role in roles.items():
        kind = schema.field(index).type
        try:
            pa.array([], type=kind).cast(pa.string())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            raise DatasetError(
                f"{table.name}: column {table.columns[index]!r} holds {kind} values; a {role} is an integer or text, "
                "one per row"
            ) from None


def _no_empty_keys(column: Any, start: int, table: TableInput, role: str) -> Any:
    """A block of a table's id column (``role``: what the ids are), refused in one line naming its line (text) or
    row where a cell is empty or blank — an empty cell names no node and no feature."""
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
    """``values`` (a block of a feature column, as read), refused in one line naming the line (text) or row of the
    first NaN or infinite one: a model trained on it would only learn NaN."""
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
    """A JSON object as its (key, value) pairs in file order: a key given twice stays visible (a ``dict`` would
    keep its last value silently)."""


def _json_type(value: Any) -> str:
    """``value``'s JSON type, for a message."""
    if isinstance(value, _Pairs):
        return "object"
    names = {list: "list", str: "string", bool: "boolean", int: "number", float: "number", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def _json_features(path: Path, like: list[str] | int | None = None) -> Features:
    """A JSON features file: an object of node id → list of feature ids (or object of feature id → value), or a
    list of such lists whose entry i is node i. Parsed by the guarded parser (nesting deep enough to exhaust the
    recursion limit is a malformed file); every entry, feature id and value is checked before any is used, and a
    wrong one is named by its node."""
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
            raise DatasetError(f"feature file {path} has an empty node id (\"\"); give every node its id")
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
            raise DatasetError(f"feature file {path}: {node(int(owner[at]))} gives feature {keys[at]!r} the value "
                               f"{json.dumps(listed[at])[:40]}, which is not a number; give feature id → number")
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
    return _sparse_by_id(owner, feature_keys, values, str(path), "feature file", like,
                         listed=pa.array(node_ids, type=pa.string()))  # fmt: skip


def _json_feature_ids(keys: list, path: Path, node: Callable[[int], str], owner: np.ndarray) -> Any:
    """The feature ids of a JSON features file as a PyArrow array: integers, or text where any is text. A feature
    id that is neither (a number with a fraction, ``true``, ``null``, a list, an object) is named by its node."""
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


# --------------------------------------------------------------------------------------------------- labels
def read_labels(path: str | Path) -> list[tuple[int, str, str]]:
    """(line number, node id, label) rows of a two-column label file, as written.

    Parameters
    ----------
    path
        A CSV/TSV of ``node, label`` lines (a header line is skipped).
    """
    table = _label_table(path, None, None, False)
    id_index, label_index = _label_columns(table, None, None)
    return [(line, fields[id_index], fields[label_index]) for line, fields in table.lines()]


def _label_table(source: Any, id_column: str | None, label_column: str | None, progress: bool) -> TableInput:
    names = frozenset(ID_COLUMN_NAMES | ({id_column.lower()} if id_column else set()) | {"source", "node1"})
    table = TableInput(source, "label", _reporter(source, "labels", progress), index_names=names)
    if table.path is not None and table.parquet is None:
        if not table.sample:
            raise DatasetError(f"label file {table.name} holds no labels; give one 'node, label' pair per line")
        first = [t.lower() for t in table.sample[0]]
        named = {n.lower() for n in (id_column, label_column) if n}
        table.set_header(first[0] in ID_COLUMN_NAMES | {"source", "node1"} or bool(named & set(first)))
        if not table.rows_sampled:
            raise DatasetError(f"label file {table.name} holds no labels; give one 'node, label' pair per line")
    return table


def _label_columns(table: TableInput, id_column: str | None, label_column: str | None) -> tuple[int, int]:
    columns = table.columns
    lowered = [c.lower() for c in columns]

    def find(name: str, flag: str) -> int:
        if name in columns:
            return columns.index(name)
        if name.lower() in lowered:
            return lowered.index(name.lower())
        raise DatasetError(f"label file {table.name} has no column {name!r} ({flag}); its columns: "
                           f"{', '.join(columns)}")  # fmt: skip

    id_index = find(id_column, "--id-column") if id_column and id_column.lower() in lowered else 0
    if label_column:
        label_index = find(label_column, "--label-column")
    elif len(columns) == 2:
        label_index = 1 - id_index if id_index in (0, 1) else 1
    elif len(columns) < 2:
        shown = ",".join(table.rows_sampled[0]) if table.rows_sampled else ""
        raise DatasetError(f"{table.name}, {table.where(0)}: expected 'node, label', got {shown!r}")
    else:
        candidates = [i for i, c in enumerate(lowered) if c in LABEL_NAMES and i != id_index] if table.headed else []
        if len(candidates) != 1:
            raise DatasetError(f"label file {table.name} has {len(columns)} columns ({', '.join(columns)}); name the "
                               "label column with --label-column NAME (label_column=NAME)")  # fmt: skip
        label_index = candidates[0]
    if label_index == id_index:
        raise DatasetError(f"label file {table.name}: the id column and the label column are the same column")
    return id_index, label_index


def _label_vector(source: Any, nodes: NodeIds, id_column: str | None, label_column: str | None,
                  progress: bool) -> tuple[torch.Tensor, list[str], list[str]]:  # fmt: skip
    """Labels per row, and the warnings to print. A label of ``nan`` (or ``NA``, ``null``, …:
    :data:`MISSING_LABELS`) marks a node without one: it stays −1, out of evaluation, and a warning counts them —
    never a class of its own. Labels of nodes not in the graph are skipped and counted in one warning."""
    import pyarrow as pa
    import pyarrow.compute as pc

    table = _label_table(source, id_column, label_column, progress)
    id_index, label_index = _label_columns(table, id_column, label_column)
    _check_key_types(table, {id_index: "node id", label_index: "label"})
    text = table.path is not None and table.parquet is None
    types = {id_index: pa.string(), label_index: pa.string()} if text else {label_index: pa.string()}
    order = sorted((id_index, label_index))
    ids_parts, label_parts, done = [], [], 0
    for batch in table.batches(order, types):
        ids_parts.append(batch.column(order.index(id_index)))
        label_parts.append(batch.column(order.index(label_index)))
        done += batch.num_rows
    if not done:
        raise DatasetError(f"label file {table.name} holds no labels; give one 'node, label' pair per line")
    node_column = pa.chunked_array(ids_parts).combine_chunks()
    if pa.types.is_boolean(node_column.type):
        raise DatasetError(f"label file {table.name}: column {table.columns[id_index]!r} holds true/false values; "
                           "node ids are integers or text — name the id column with id_column=")
    labels = pa.chunked_array(label_parts).combine_chunks()
    labels = labels.cast(pa.string()) if not pa.types.is_string(labels.type) else labels
    labels = pc.utf8_trim_whitespace(labels.fill_null(""))
    missing = pc.is_in(pc.utf8_lower(labels), value_set=pa.array(sorted(MISSING_LABELS))).to_numpy(
        zero_copy_only=False)  # fmt: skip
    present = ~missing
    # node ids as the graph's: integers where the graph's are (a label file's 007 is node 7)
    keys, bad = _as_node_ids(node_column, nodes)
    rows = np.full(len(node_column), -1, dtype=np.int64)
    if keys is not None:
        looked, unknown = nodes.rows(keys)
        rows = np.where(unknown, -1, looked)
    rows[bad] = -1
    outside = present & (rows < 0)
    notes = []
    if missing.any():
        one = int(missing.sum()) == 1
        notes.append(f"{int(missing.sum())} of the nodes listed in {table.name} {'has' if one else 'have'} no label "
                     f"(nan); {'it is' if one else 'they are'} left out of evaluation")  # fmt: skip
    if outside.any():
        example = node_column[int(np.argmax(outside))].as_py()
        one = int(outside.sum()) == 1
        named = "names a node that is" if one else "name nodes that are"
        notes.append(f"{int(outside.sum())} label{'' if one else 's'} in {table.name} {named} not in the graph "
                     f"(e.g. {str(example)!r}); skipped")  # fmt: skip
    keep = present & (rows >= 0)
    kept_rows = rows[keep]
    if kept_rows.size:
        counts = np.bincount(kept_rows, minlength=nodes.size)
        if counts.max() > 1:
            twice = int(np.argmax(counts > 1))
            first = int(np.flatnonzero(keep & (rows == twice))[1])
            node = node_column[first].as_py()
            where = table.where(first)
            raise DatasetError(f"{table.name}, {where}: node {str(node)!r} is labelled twice")
    kept_labels = pc.filter(labels, pa.array(keep))
    classes = sorted(pc.unique(kept_labels).to_pylist())
    if classes and all(_INTEGER.match(c) for c in classes):
        classes.sort(key=int)
    if len(classes) < 2:
        what = f"only one class ({classes[0]!r})" if classes else "no label"
        raise DatasetError(f"label file {table.name} holds {what} for nodes of the graph; evaluation needs two or "
                           "more classes")  # fmt: skip
    codes = pc.index_in(kept_labels, value_set=pa.array(classes)).to_numpy(zero_copy_only=False)
    y = np.full(nodes.size, -1, dtype=np.int64)
    y[kept_rows] = codes
    return torch.from_numpy(y), notes, classes


def _as_node_ids(column: Any, nodes: NodeIds) -> tuple[Any, np.ndarray]:
    """A label table's node column in the graph's id type, and the mask of values that cannot be one (a text id
    in a graph of integer ids: not in the graph)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    bad = np.zeros(len(column), dtype=bool)
    if not nodes.integer:
        return (column if pa.types.is_string(column.type) else column.cast(pa.string())), bad
    if pa.types.is_integer(column.type):
        return column.cast(pa.int64()), bad
    text = pc.utf8_trim_whitespace(column.cast(pa.string()))
    integer = pc.match_substring_regex(text, r"^-?\d{1,19}$").to_numpy(zero_copy_only=False)
    values = pc.if_else(pa.array(integer), text, pa.scalar("-1"))
    try:
        return pc.cast(values, pa.int64()), ~integer
    except pa.ArrowInvalid:  # 19 digits beyond int64: such an id is in no graph
        numbers = [int(t) if ok and -(2**63) <= int(t) < 2**63 else None for t, ok in zip(values.to_pylist(), integer,
                                                                                           strict=True)]  # fmt: skip
        bad = np.array([n is None for n in numbers], dtype=bool)
        return pa.array([-1 if n is None else n for n in numbers], pa.int64()), bad


# --------------------------------------------------------------------------------------------------- the graph
def load_files(
    edges: Any, features: Any, labels: Any = None, directed: bool = False, *, edge_weight: str | int | None = None,
    feature_ids: Any = None, feature_layout: str = "auto", id_column: str | None = None,
    label_column: str | None = None, progress: bool = False, feature_names: list[str] | int | None = None,
) -> LoadedDataset:
    """A :class:`LoadedDataset` from a user's tables; ``node_ids`` maps row i to the node's id in them.

    Parameters
    ----------
    edges
        The edge list: a CSV/TSV/whitespace text or Parquet file, a pandas ``DataFrame`` or a PyArrow ``Table``;
        source and target in the first two columns, as the module describes.
    features
        The node features in any form the module describes (wide, long, JSON, a matrix with ids).
    labels
        A table of ``node, label`` rows (any node may lack one); ``None`` for an unlabelled graph.
    directed
        Keep the edges as listed; ``False`` (the default) reads the graph as undirected: an edge listed one way
        gets its reverse, with its weight.
    edge_weight
        The edge table's weight column (its name, or its number counted from 1); ``None``: a column named
        ``weight``, if any.
    feature_ids
        The node id of each row of an ``.npy``/``.npz`` feature matrix (a file of one id per line, a 1-D ``.npy``,
        or a sequence).
    feature_layout
        ``"auto"``, ``"wide"`` or ``"long"`` for a feature table.
    id_column
        The id column's name in the feature table and the label table (default: recognised, else the first).
    label_column
        The label column's name in a label table of more than two columns.
    progress
        Say how far the reading of large files has come (on standard error).
    feature_names
        The columns of the model the graph is for (``gca embed``): the feature names it was trained on, or its
        number of columns. Long and JSON features are then mapped to those columns — features it does not have are
        left out, with one warning line — so that a vocabulary in another order or with other words gives the
        same columns as in training. ``None``: the columns the features' own ids give.

    Returns
    -------
    LoadedDataset
        The graph; ``node_ids[i]`` is row i's id (an int64 array for integer ids, a list of strings otherwise,
        ``None`` when row i is node i), ``warnings`` what was noticed while reading (repeated edges, unread
        columns, unlabelled nodes), ``class_names`` the labels' names, ``feature_names`` the features' names
        where they were not numbers. Anything wrong with a file is a :class:`~gca.datasets.base.DatasetError`.
    """
    table = _edge_table(edges, False)  # first: a missing or empty edge file is said before the features are read
    read = feature_input(features, feature_ids, feature_layout, id_column, progress, feature_names)
    if id_column is not None:
        _check_id_column(id_column, features, labels)
    matrix = read.matrix
    features_name = _source_name("feature") if is_table_object(features) else str(
        features[0] if isinstance(features, tuple) else features)  # fmt: skip
    if (matrix.shape[0] == 0 and not read.sparse_by_id) or matrix.shape[1] == 0:
        raise DatasetError(f"feature file {features_name} holds a {matrix.shape[0]}×{matrix.shape[1]} matrix; give "
                           "one row of features per node")  # fmt: skip
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
        notes.append(f"{nodes.added} node{'' if one else 's'} of edge file {table.name} {'has' if one else 'have'} no "
                     f"features in {features_name}; {'its' if one else 'their'} features are all zero")  # fmt: skip
    weights, sources, targets = read_edges.weight, read_edges.sources, read_edges.targets
    loop_notes: list[str] = []
    if weights is None and not directed:  # the blocks as read: no joined copy of the listed edges
        # self-loops left out here, not by cleaning: at 6·10⁸ edges, cleaning would copy the edge list to drop them
        from ..progress import step

        with step(f"building the undirected edge list of {read_edges.count:,} listed edges", progress):
            edge_index, repeated, loops = undirected_edges(_released_on_second_pass(sources, targets), num_nodes,
                                                           read_edges.count, keep_loops=False)  # fmt: skip
        if loops:
            loop_notes.append(f"removed {loops} self-loop{'s' if loops != 1 else ''} (GCN adds its own)")
            if not edge_index.shape[1]:
                raise DatasetError(f"edge file {table.name} lists only self-loops; GCA learns from the graph "
                                   "structure, so give at least one edge between two nodes")  # fmt: skip
        edge_weight_tensor = None
    elif weights is None:
        edge_index, repeated = edge_list(_joined(read_edges.sources), _joined(read_edges.targets), num_nodes, True)
        edge_weight_tensor = None
    else:
        edge_index, edge_weight_tensor, repeated = weighted_edge_list(
            _joined(read_edges.sources), _joined(read_edges.targets), weights, num_nodes, directed, table.name,
            table.where, "give both directions the same weight, list each edge once, or pass --directed "
            "(directed=True)")  # fmt: skip
    sources.clear()  # the listed edges go before the labels are read
    targets.clear()
    release_memory()  # the blocks' freed memory back to the system before the next phase
    x = _feature_tensor(matrix)
    y, label_notes, class_names = (None, [], None) if labels is None else _label_vector(
        labels, nodes, id_column, label_column, progress)  # fmt: skip
    data = Data(x=x, edge_index=edge_index, y=y, num_nodes=num_nodes)
    if edge_weight_tensor is not None:
        data.edge_weight = edge_weight_tensor
    name = Path(edges).stem if not is_table_object(edges) else "graph"
    notes = ([repeated_edges_warning(table.name, repeated, weights is not None)] if repeated else []) + \
        loop_notes + weight_notes + notes + label_notes  # fmt: skip
    node_ids = None if read.positional and not nodes.added else nodes.exported()
    return LoadedDataset(name, data, named=False, node_ids=node_ids, directed=directed, warnings=notes,
                         class_names=class_names, feature_names=read.names)  # fmt: skip


def _check_added_rows(nodes: NodeIds, listed: int, edges_name: str) -> None:
    """Nodes an edge file adds to features whose entry i is node i must be integers beyond the entries: a negative
    id is no node's."""
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
    raise DatasetError(f"no feature or label table has a column {name!r} (--id-column); their columns: "
                       f"{', '.join(dict.fromkeys(seen)) or 'none with a header'}")  # fmt: skip


def _feature_tensor(matrix: np.ndarray | sp.csr_matrix) -> torch.Tensor:
    if not sp.issparse(matrix):
        return torch.from_numpy(np.ascontiguousarray(matrix))
    coo = matrix.tocoo()
    coo.sum_duplicates()
    coo.eliminate_zeros()
    indices = torch.from_numpy(np.vstack([coo.row, coo.col]).astype(np.int64))
    values = torch.from_numpy(coo.data.astype(np.float32))
    return torch.sparse_coo_tensor(indices, values, coo.shape, check_invariants=True).coalesce()
