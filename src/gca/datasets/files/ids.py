"""Node ids: which rows of the graph a column of ids names, and the checks every id column passes.

The features decide the nodes and their order (:class:`NodeIds`); ids are integers when every id of the feature
table is an integer written as Python writes it, otherwise text matched exactly (:func:`_id_array`).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from ..base import DatasetError
from .tables import TableInput

_NUMBER = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$|^[+-]?(nan|inf|infinity)$", re.IGNORECASE)
_INTEGER = re.compile(r"^[+-]?\d+$")


def _is_number(token: str) -> bool:
    return bool(_NUMBER.match(token))


class NodeIds:
    """The graph's nodes: ``keys`` (a PyArrow array of the ids of rows 0, 1, …) or ``count`` rows whose ids are their
    numbers (``keys`` ``None``); :meth:`rows` maps a column of ids to row numbers. With ``grow``, unknown ids are
    added as new nodes (the sparse feature forms); otherwise they are reported through ``missing``."""

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
        """The PyArrow type a column of ids is read as: int32 where rows are ids below 2³¹ (a larger or negative id is
        then refused by the parser and reported as not in the graph), int64 for other integer ids, else text."""
        import pyarrow as pa

        if self.keys is None and self.count < 2**31:
            return pa.int32()
        return pa.int64() if self.integer else pa.string()

    def rows(self, values: Any) -> tuple[np.ndarray, np.ndarray]:
        """(row of each value, −1 where unknown) and the mask of unknown values, for a column of :meth:`id_type`."""
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
    """A column of node ids as int64 when every one is an integer written as Python writes it, else as strings (the
    module's rule); a repeated id, or one holding a line break, is an error."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if pa.types.is_boolean(values.type):
        raise DatasetError(
            f"{what} file {source}: the node ids are true/false values; node ids are integers or "
            "text — give them in the first column (or name it with id_column=)"
        )
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
            raise DatasetError(
                f"{source}{', ' + where if where else ''}: node id {text[row].as_py()!r} holds a line "
                "break; node ids with line breaks are not supported — write each id on one line"
            )
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
        raise DatasetError(
            f"{what} file {source} lists node {str(repeated[0].as_py())!r} twice{again}; give one row per node"
        )
    return values


def _check_key_types(table: TableInput, roles: dict[int, str]) -> None:
    """A Parquet or in-memory table's id columns (``roles``: column → what it holds) must hold integers or text: lists
    or structs are one line, not a PyArrow error later."""
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
