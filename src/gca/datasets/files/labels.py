"""Labels: a ``node, label`` table as one class per node (−1 where a node has none), the labels of nodes that are not
in the graph skipped and counted (the rules: :mod:`gca.datasets.files`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ...errors import option
from ..base import DatasetError
from .ids import _INTEGER, NodeIds, _check_key_types
from .tables import ID_COLUMN_NAMES, TableInput

#: Header names of a label table's label column, when it has more than two columns.
LABEL_NAMES = {"label", "labels", "class", "y", "category", "target"}
#: Label cells that mark a node without a label, as NaN does in OGB's files (compared case-insensitively).
MISSING_LABELS = {"nan", "na", "n/a", "none", "null", ""}


def read_labels(path: str | Path) -> list[tuple[int, str, str]]:
    """(line number, node id, label) rows of a two-column CSV/TSV label file as written (a header is skipped)."""
    table = _label_table(path, None, None, None)
    id_index, label_index = _label_columns(table, None, None)
    return [(line, fields[id_index], fields[label_index]) for line, fields in table.lines()]


def _label_table(
    source: Any, id_column: str | None, label_column: str | None, progress: Callable[[int, int], None] | None
) -> TableInput:
    names = frozenset(ID_COLUMN_NAMES | ({id_column.lower()} if id_column else set()) | {"source", "node1"})
    table = TableInput(source, "label", progress, index_names=names)
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

    def find(name: str, parameter: str) -> int:
        if name in columns:
            return columns.index(name)
        if name.lower() in lowered:
            return lowered.index(name.lower())
        raise DatasetError(
            f"label file {table.name} has no column {name!r} ({option(parameter)}); its columns: {', '.join(columns)}"
        )

    id_index = find(id_column, "id_column") if id_column and id_column.lower() in lowered else 0
    if label_column:
        label_index = find(label_column, "label_column")
    elif len(columns) == 2:
        label_index = 1 - id_index if id_index in (0, 1) else 1
    elif len(columns) < 2:
        shown = ",".join(table.rows_sampled[0]) if table.rows_sampled else ""
        raise DatasetError(f"{table.name}, {table.where(0)}: expected 'node, label', got {shown!r}")
    else:
        candidates = [i for i, c in enumerate(lowered) if c in LABEL_NAMES and i != id_index] if table.headed else []
        if len(candidates) != 1:
            raise DatasetError(
                f"label file {table.name} has {len(columns)} columns ({', '.join(columns)}); name the "
                f"label column with {option('label_column', command_line='NAME')}"
            )
        label_index = candidates[0]
    if label_index == id_index:
        raise DatasetError(f"label file {table.name}: the id column and the label column are the same column")
    return id_index, label_index


def _label_vector(
    source: Any,
    nodes: NodeIds,
    id_column: str | None,
    label_column: str | None,
    progress: Callable[[int, int], None] | None,
) -> tuple[torch.Tensor, list[str], list[str]]:
    """Labels per row, and the warnings to print. A missing label (:data:`MISSING_LABELS`) stays −1, out of evaluation
    and never a class of its own; labels of nodes not in the graph are skipped; each is counted in one warning."""
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
        raise DatasetError(
            f"label file {table.name}: column {table.columns[id_index]!r} holds true/false values; "
            "node ids are integers or text — name the id column with id_column="
        )
    labels = pa.chunked_array(label_parts).combine_chunks()
    labels = labels.cast(pa.string()) if not pa.types.is_string(labels.type) else labels
    labels = pc.utf8_trim_whitespace(labels.fill_null(""))
    missing = pc.is_in(pc.utf8_lower(labels), value_set=pa.array(sorted(MISSING_LABELS))).to_numpy(zero_copy_only=False)
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
        notes.append(
            f"{int(missing.sum())} of the nodes listed in {table.name} {'has' if one else 'have'} no label "
            f"(nan); {'it is' if one else 'they are'} left out of evaluation"
        )
    if outside.any():
        example = node_column[int(np.argmax(outside))].as_py()
        one = int(outside.sum()) == 1
        named = "names a node that is" if one else "name nodes that are"
        notes.append(
            f"{int(outside.sum())} label{'' if one else 's'} in {table.name} {named} not in the graph "
            f"(e.g. {str(example)!r}); skipped"
        )
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
        raise DatasetError(
            f"label file {table.name} holds {what} for nodes of the graph; evaluation needs two or more classes"
        )
    codes = pc.index_in(kept_labels, value_set=pa.array(classes)).to_numpy(zero_copy_only=False)
    y = np.full(nodes.size, -1, dtype=np.int64)
    y[kept_rows] = codes
    return torch.from_numpy(y), notes, classes


def _as_node_ids(column: Any, nodes: NodeIds) -> tuple[Any, np.ndarray]:
    """A label table's node column in the graph's id type, and the mask of values that cannot be one."""
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
        numbers = [
            int(t) if ok and -(2**63) <= int(t) < 2**63 else None
            for t, ok in zip(values.to_pylist(), integer, strict=True)
        ]
        bad = np.array([n is None for n in numbers], dtype=bool)
        return pa.array([-1 if n is None else n for n in numbers], pa.int64()), bad
