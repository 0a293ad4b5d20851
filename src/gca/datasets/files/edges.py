"""Edge lists: the first two columns of an edge table as the graph's rows, an optional weight column, and the
one-line errors for ids that name no node (the rules: :mod:`gca.datasets.files`)."""

from __future__ import annotations

from itertools import chain
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from ...errors import option
from ...graph.edges import checked_edge_weights
from ...stderr import spoken
from ..base import DatasetError
from .ids import _INTEGER, NodeIds, _is_number
from .tables import ConversionFailed, TableInput, _joined, release_memory

HEADER_NAMES = {
    "source",
    "target",
    "src",
    "dst",
    "from",
    "to",
    "u",
    "v",
    "node",
    "node1",
    "node2",
    "node_1",
    "node_2",
    "id",
    "id1",
    "id2",
    "node_id",
    "head",
    "tail",
    "label",
    "class",
    "name",
    "weight",
}
#: The header name of an edge table's weight column.
WEIGHT_NAME = "weight"


def _looks_like_header(rows: list[list[str]], columns: int) -> bool:
    first = [t.lower() for t in rows[0][:columns]]
    if first and all(t in HEADER_NAMES for t in first):
        return True
    if len(rows) < 2 or all(_is_number(t) for t in first):
        return False
    # The only non-numeric line of an otherwise numeric file is a header.
    return all(_is_number(t) for fields in rows[1:] for t in fields[:columns])


def read_edge_list(path: str | Path) -> tuple[list[str], list[str], bool]:
    """(sources, targets, integer_ids): an edge file's first two columns as written; whether every id is an integer."""
    import pyarrow as pa

    table = _edge_table(path)
    sources, targets = [], []
    for batch in table.batches([0, 1], {0: pa.string(), 1: pa.string()}):
        sources += batch.column(0).to_pylist()
        targets += batch.column(1).to_pylist()
    integer = all(_INTEGER.match(t) for t in chain(sources, targets))
    return sources, targets, integer


def _edge_table(source: Any) -> TableInput:
    table = TableInput(source, "edge")
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
    """Which column holds the weights, and the notes about the columns that are not read."""
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
            raise DatasetError(
                f"edge file {table.name} has no column {given!r} for the edge weights (its columns "
                f"after source and target: {listed}; a file without a header numbers them from 3)"
            )
    elif table.headed and WEIGHT_NAME in names[2:]:
        index = 2 + names[2:].index(WEIGHT_NAME)
    unread = [c for i, c in enumerate(table.columns[2:], 2) if i != index]
    notes = []
    if unread:
        shown = ", ".join(repr(c) for c in unread) if table.headed else f"{len(unread)}"
        what = (
            f"column{'s' if len(unread) > 1 else ''} {shown}"
            if table.headed
            else f"{shown} column{'s' if len(unread) > 1 else ''}"
        )
        notes.append(  # a warning's text: its option named as this process names them
            spoken(
                f"{table.name} has {what} beyond source, target{' and weight' if index is not None else ''} "
                "that are not read — edge weights are read only from a column named 'weight' or the one "
                f"{option('edge_weight', command_line='COL')} names"
            )
        )
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
    # few ids per node at a time, so that the table is built a few times per file, not once per block.
    group = max(4 * nodes.size, 1 << 22) if nodes.keys is not None else 0
    try:
        for batch in _grouped(table.batches(columns, types), group):
            ends = []
            for c in (0, 1):
                column = batch.column(c)
                if column.null_count:
                    row = done + int(np.argmax(column.is_null().to_numpy(zero_copy_only=False)))
                    raise DatasetError(
                        f"{table.name}, {table.where(row)}: expected two node ids per line, got an empty one"
                    )
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
                    raise DatasetError(
                        f"{table.name}, {table.where(row)}: has no weight; give every edge a weight (a number) or none"
                    )
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
        weight = checked_edge_weights(_joined(weights), table.name, table.where)
    return _Edges(sources, targets, weight, table)


def _grouped(batches, rows: int):
    """The tables of ``batches`` joined (without copying) into tables of at least ``rows`` rows (as they are for 0)."""
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
    """``blocks()`` for :func:`~gca.graph.edges.undirected_edges`, which reads the listed edges twice: the second pass
    lets go of each block once read, so the listed edges are gone before the edge list is mirrored."""
    passes = [0]

    def blocks():
        passes[0] += 1
        for i in range(len(sources)):
            yield sources[i], targets[i]
            if passes[0] >= 2:
                sources[i] = targets[i] = None

    return blocks


def _unknown_node(
    table: TableInput, column: Any, unknown: np.ndarray, nodes: NodeIds, features_name: str, done: int = 0
):
    """The error for the first id of ``column`` (a group's sources, then its targets, starting ``done`` rows into the
    file) that names no node."""
    import pyarrow.compute as pc

    first = int(np.argmax(unknown))
    value = column.combine_chunks()[first].as_py() if hasattr(column, "combine_chunks") else column[first].as_py()
    if isinstance(value, str) and ("\n" in value or "\r" in value):
        where = table.where(done + first % max(len(column) // 2, 1)) if table.path is not None else ""
        return DatasetError(
            f"edge file {table.name}{', ' + where if where else ''}: node id {value!r} holds a line "
            "break; node ids with line breaks are not supported — write each id on one line"
        )
    if (
        isinstance(value, str)
        and _INTEGER.match(value.strip())
        and nodes.keys is not None
        and pc.all(pc.match_substring_regex(nodes.keys, r"^\s*[+-]?\d+\s*$")).as_py()
    ):
        # only where the features write the same number otherwise: an id unknown however written is just unknown
        written = next((k for k in nodes.keys.to_pylist() if int(k) == int(value)), None)
        if written is not None:
            return DatasetError(
                f"node {value!r} of edge file {table.name} has no row in feature file "
                f"{features_name}, whose ids are kept as written ({written!r}) and matched exactly; "
                "write the ids the same way in every file"
            )
    if nodes.keys is None:
        if value < 0:
            return DatasetError(
                f"edge file {table.name} has a negative node id ({value}); ids must lie in [0, {nodes.count - 1}]"
            )
        return DatasetError(
            f"edge file {table.name} names node {value} but the features have {nodes.count} rows "
            f"(ids 0..{nodes.count - 1}); give one feature row per node"
        )
    return DatasetError(f"node {str(value)!r} of edge file {table.name} has no row in feature file {features_name}")


def _conversion_error(table: TableInput, exc: ConversionFailed, nodes: NodeIds, features_name: str) -> DatasetError:
    """What a value that did not convert means in an edge file."""
    value, column = exc.value, exc.column
    if column >= 2:
        where = table.find_value(column, value)
        return DatasetError(
            f"{table.name}{', ' + where if where else ''}: has the weight {value!r}, which is not a "
            "number; give every edge a weight (a number) or none"
        )
    if value.strip().startswith("+") and _INTEGER.match(value.strip()):
        return DatasetError(
            f"edge file {table.name} writes a node id with a plus sign ({value.strip()!r}); write "
            "integer ids without one"
        )
    if _INTEGER.match(value.strip()):  # an integer beyond 64 bits
        if nodes.keys is None:
            return DatasetError(
                f"edge file {table.name} names node {value.strip()} but the features have "
                f"{nodes.count} rows (ids 0..{nodes.count - 1}); give one feature row per node"
            )
        return DatasetError(f"node {value!r} of edge file {table.name} has no row in feature file {features_name}")
    if nodes.keys is None:
        return DatasetError(
            f"edge file {table.name} uses non-integer node ids (e.g. {value!r}); the features then "
            "need node ids: a first column of ids (a CSV with an 'id' column), a long or JSON "
            f"feature file, or an id list ({option('feature_ids', command_line='FILE')})"
        )
    return DatasetError(f"node {value!r} of edge file {table.name} has no row in feature file {features_name}")
