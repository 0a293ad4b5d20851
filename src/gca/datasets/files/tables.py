"""Tables from users' inputs, read by PyArrow a block at a time — never a cell at a time in Python.

A table is a delimited text file (CSV, TSV, semicolon- or whitespace-separated), a Parquet file, or — from Python —
a pandas ``DataFrame`` or a PyArrow ``Table``. :class:`TableInput` gives its column names (a text file's header,
else ``column 1``, ``column 2``, …) and its rows as a stream of PyArrow tables of the columns and types asked for.
A text file's rules (delimiter, comment and blank lines, quotes, trimmed fields) are docs/data.md's; whether its
first line is a header is the caller's decision, from :attr:`TableInput.sample`. It is read in blocks of
:data:`BLOCK_BYTES` ending at line ends. Every error is one :class:`~gca.datasets.base.DatasetError` line naming
the file (and the line, where one is at fault). Design notes: docs/design/data-and-runs.md.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from ...mapped import trim_heap
from ..base import DatasetError, check_regular_file

#: Bytes of a text file parsed at a time (each block ends at a line end).
BLOCK_BYTES = 1 << 24
#: Lines of a text file parsed in Python to decide its delimiter and whether it has a header.
SAMPLE_LINES = 200
_SAMPLE_BYTES = 1 << 20
_BOM = b"\xef\xbb\xbf"
_COMMENT_OR_BLANK = re.compile(rb"(?m)^(?:#[^\n]*|[ \t]*\r?)(?:\n|\Z)")
_BLANK_BYTES = b" \t\r\f\v"  # what a blank line may hold besides its line end
#: Whole comment and blank lines at the start of a file's bytes.
_LEADING = re.compile(rb"(?:(?:#[^\n]*|[ \t\r\f\v]*)\n)*")
_SPACES = re.compile(rb"[ \t]+")
_EDGE_SPACES = re.compile(rb"(?m)^\t|\t(?=\r?$)")
_PARQUET_MAGIC = b"PAR1"
#: First bytes of a line that may be a comment or hold only whitespace: only a block with one is rewritten.
_LINE_STARTS = (b"#", b" ", b"\t", b"\r")
#: Header names of an id column (of a feature table, a label table or an id list).
ID_COLUMN_NAMES = {"id", "node", "node_id", "name", "nodeid"}


def is_table_object(value: Any) -> bool:
    """Whether ``value`` is an in-memory table gca reads: a pandas ``DataFrame`` or a PyArrow ``Table``."""
    kind = type(value)
    return (kind.__module__.startswith("pandas") and kind.__name__ == "DataFrame") or (
        kind.__module__.startswith("pyarrow") and kind.__name__ in ("Table", "RecordBatch")
    )


def _index_as_column(frame: Any, names: frozenset[str], what: str = "feature") -> tuple[Any, bool]:
    """``frame`` with its index of node ids as its first column, and whether it has one.

    Only a *named* index holds node ids, and only where the frame has no id column (``names``) of another name; a
    named index that is also a column is that column, moved first (one line where the two differ). A feature frame
    with an unnamed index that is not 0…N−1, no id column and a numeric first column is refused, as is a MultiIndex.
    """
    if not names:
        return frame, False
    has_id = any(str(c).lower() in names for c in frame.columns)
    index = frame.index
    if index.nlevels > 1:
        if has_id:
            return frame, False
        levels = ", ".join(str(n) for n in index.names)
        raise DatasetError(
            f"the {what} DataFrame is indexed by {index.nlevels} levels ({levels}); index it by the node ids alone "
            "(set_index) or give them in an id column"
        )
    name = index.name
    if name is None:
        _check_unnamed_index(frame, has_id, what)
        return frame, False
    if has_id and str(name).lower() not in names:
        return frame, False
    if name in frame.columns:  # set_index(name, drop=False): the column is the index
        column = frame[name]
        if getattr(column, "ndim", 1) != 1 or not type(index)(column.to_numpy()).equals(index):
            raise DatasetError(
                f"the {what} DataFrame's index {name!r} differs from its column {name!r}; give the node ids in one "
                "of them (reset_index(drop=True) or set_index)"
            )
        return frame[[name] + [c for c in frame.columns if c != name]], True
    return frame.reset_index(), True


def _check_unnamed_index(frame: Any, has_id: bool, what: str) -> None:
    """Refuse a frame whose rows would be numbered by position although its unnamed index says otherwise."""
    import pandas as pd

    index = frame.index
    if len(frame.columns) == 0 or has_id or index.equals(pd.RangeIndex(len(index))):
        return
    first = frame.dtypes.iloc[0]
    if what == "feature":
        positional = pd.api.types.is_numeric_dtype(first) and not pd.api.types.is_bool_dtype(first)
    else:
        positional = len(frame.columns) < 2
    if positional:
        raise DatasetError(
            f"the {what} DataFrame has an unnamed index that is not 0..N-1: name it (df.index.name = 'node') if "
            "it holds the node ids, or reset_index(drop=True)"
        )


def is_parquet(path: Path) -> bool:
    """A ``.parquet``/``.pq`` file, or any file that starts with Parquet's magic bytes."""
    if path.suffix.lower() in (".parquet", ".pq"):
        return True
    try:
        with path.open("rb") as f:
            return f.read(4) == _PARQUET_MAGIC
    except OSError:
        return False


class TableInput:
    """One table to read (the module docstring).

    ``progress(done, total)`` is called as bytes (files) or rows (tables in memory) are read; ``index_names`` are a
    ``DataFrame``'s id columns' names, under which a named index is the id column (:func:`_index_as_column`).
    """

    def __init__(
        self,
        source: Any,
        what: str,
        progress: Callable[[int, int], None] | None = None,
        index_names: frozenset[str] = frozenset(),
    ) -> None:
        import pyarrow as pa

        self.what, self.progress = what, progress
        self.table: Any = None  # an in-memory or Parquet table's PyArrow schema source
        self.path: Path | None = None
        self.parquet = None
        self.sample: list[list[str]] = []  # the first lines' fields (text files)
        self.headed = False
        self.delimiter: str | None = None
        self.index_ids = False  # the first column is a DataFrame's index of node ids
        if is_table_object(source):
            if type(source).__module__.startswith("pandas"):
                source, self.index_ids = _index_as_column(source, index_names, what)
                try:
                    source = pa.Table.from_pandas(source, preserve_index=False)
                except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
                    raise DatasetError(f"the {what} DataFrame cannot be read: {_first_line(exc)}") from None
            elif isinstance(source, pa.RecordBatch):
                source = pa.Table.from_batches([source])
            self.table, self.name = source, f"the {what} table"
            self.columns = [str(c) for c in source.column_names]
            self.headed = True
            return
        self.path = Path(source)
        self.name = str(source)
        check_regular_file(self.path, what)
        if is_parquet(self.path):
            import pyarrow.parquet as pq

            try:
                self.parquet = pq.ParquetFile(self.path)
            except (pa.ArrowInvalid, OSError) as exc:
                raise DatasetError(
                    f"{what} file {self.path} is not a readable Parquet file ({_first_line(exc)})"
                ) from None
            self.columns = [str(c) for c in self.parquet.schema_arrow.names]
            self.headed = True
            return
        self._sample_text()
        self.columns = [f"column {i + 1}" for i in range(len(self.sample[0]))] if self.sample else []

    # -- text files ------------------------------------------------------------------------------------------------

    def _sample_text(self) -> None:
        assert self.path is not None
        try:
            raw, whole, skipped = _head(self.path)
        except OSError as exc:
            raise DatasetError(f"cannot read {self.what} file {self.path}: {exc.strerror or exc}") from None
        if not whole:  # a multi-byte character may be cut at the end: keep whole lines
            raw = raw[: raw.rfind(b"\n") + 1] or raw
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise DatasetError(f"{self.what} file {self.path} is not UTF-8 text; give a CSV/TSV file") from None
        numbered = [
            (skipped + i, line)
            for i, line in enumerate(text.splitlines(), 1)
            if line.strip() and not line.startswith("#")
        ][:SAMPLE_LINES]
        if not numbered:
            return
        lines = [line for _, line in numbered]
        first = lines[0]
        self.delimiter = next((d for d in ("\t", ";", ",") if d in first), None)
        if not self.delimiter:
            raw_rows = [ln.split() for ln in lines]
        else:
            raw_rows, reader, start = [], csv.reader(lines, delimiter=self.delimiter), 0
            try:
                for row in reader:
                    if reader.line_num - start > 1:  # a quoted field ran on over the line's end
                        spanned = lines[start : reader.line_num]
                        raise DatasetError(
                            _quote_message(
                                self.what, self.path, numbered[start][0], sum(ln.count('"') for ln in spanned) % 2 == 0
                            )
                        )
                    raw_rows.append(row)
                    start = reader.line_num
            except csv.Error as exc:
                if "field larger than field limit" in str(exc):
                    raise DatasetError(
                        f"{self.what} file {self.path} has a field longer than "
                        f"{csv.field_size_limit():,} characters; is it the right file?"
                    ) from None
                raise DatasetError(_quote_message(self.what, self.path, numbered[start][0], False)) from None
        self.sample = [[field.strip() for field in row] for row in raw_rows]

    def set_header(self, headed: bool) -> None:
        """Read the first line as the column names (a text file; others always have names)."""
        if self.path is None or self.parquet is not None or not self.sample:
            return
        self.headed = headed
        if headed:
            self.columns = [name or f"column {i + 1}" for i, name in enumerate(self.sample[0])]

    @property
    def rows_sampled(self) -> list[list[str]]:
        """The sampled lines' fields after the header."""
        return self.sample[1:] if self.headed and self.path is not None and self.parquet is None else self.sample

    def batches(self, columns: list[int], types: dict[int, Any]) -> Iterator[Any]:
        """The rows as PyArrow tables of ``columns`` (indices into :attr:`columns`), in that order, each of the type
        ``types`` (column index → PyArrow type) gives; PyArrow's choice where none is given."""
        import pyarrow as pa

        names = [self.columns[i] for i in columns]
        if self.table is not None:
            table = self.table.select(columns)
            total = table.num_rows
            step = 1 << 22
            for start in range(0, max(total, 1), step):
                part = table.slice(start, step)
                yield self._cast(part, columns, types, start)
                if self.progress:
                    self.progress(min(start + step, total), total)
            return
        if self.parquet is not None:
            start = 0
            total = self.path.stat().st_size
            groups = self.parquet.num_row_groups
            try:
                for g in range(groups):
                    part = self.parquet.read_row_group(g, columns=names)
                    yield self._cast(part, columns, types, start)
                    start += part.num_rows
                    if self.progress:
                        self.progress(total * (g + 1) // max(groups, 1), total)
            except (pa.ArrowInvalid, OSError) as exc:
                raise DatasetError(f"{self.what} file {self.path} cannot be read ({_first_line(exc)})") from None
            return
        yield from self._text_batches(columns, types)

    def _cast(self, part: Any, columns: list[int], types: dict[int, Any], start: int) -> Any:
        import pyarrow as pa
        import pyarrow.compute as pc

        arrays = []
        for position, index in enumerate(columns):
            array = part.column(position)
            wanted = types.get(index)
            if wanted is not None and array.type != wanted:
                try:
                    array = pc.cast(array, wanted)
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                    bad = _first_uncastable(array, wanted)
                    raise ConversionFailed(index, bad, start) from None
            arrays.append(array)
        return pa.table(arrays, names=[self.columns[i] for i in columns])

    def _text_batches(self, columns: list[int], types: dict[int, Any]) -> Iterator[Any]:
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.csv as pacsv

        assert self.path is not None
        if not self.sample:
            return
        width = len(self.sample[0])
        names = [f"c{i}" for i in range(width)]
        delimiter = self.delimiter or "\t"
        read = pacsv.ReadOptions(column_names=names, use_threads=True, block_size=1 << 22)
        parse = pacsv.ParseOptions(delimiter=delimiter, quote_char='"', newlines_in_values=False)
        convert = pacsv.ConvertOptions(
            column_types={names[i]: t for i, t in types.items()},
            include_columns=[names[i] for i in columns],
            null_values=[""],
            strings_can_be_null=False,
            quoted_strings_can_be_null=False,
        )
        total = self.path.stat().st_size
        done, rows, first, header = 0, 0, True, self.headed
        # the C library's allocator: a block's memory, once freed, goes back to the system (gca.mapped.trim_heap)
        # instead of staying in PyArrow's default pool for the rest of the run
        pool = pa.system_memory_pool()
        for block in _blocks(self.path):
            done += len(block)
            block = _clean(block, first, whitespace=self.delimiter is None)
            first = False
            if not block.strip():  # (a block of comment lines only: the header is in a later one)
                continue
            if header:
                block = block[block.find(b"\n") + 1 :] if b"\n" in block else b""
                header = False
                if not block.strip():
                    continue
            try:
                table = pacsv.read_csv(
                    pa.py_buffer(block),
                    read_options=read,
                    parse_options=parse,
                    convert_options=convert,
                    memory_pool=pool,
                )
            except pa.ArrowInvalid as exc:
                try:  # lines of spaces only, which only a rewrite of the block removes
                    table = pacsv.read_csv(
                        pa.py_buffer(_COMMENT_OR_BLANK.sub(b"", block)),
                        read_options=read,
                        parse_options=parse,
                        convert_options=convert,
                        memory_pool=pool,
                    )
                except pa.ArrowInvalid:
                    raise self._text_error(str(exc), columns) from None
            # spaces around a text field are not part of it, on any line (not only where the sampled lines have some)
            # (in the block's pool: PyArrow's default one would keep the copies resident for the rest of the run)
            arrays = [
                pc.utf8_trim_whitespace(a, memory_pool=pool) if pa.types.is_string(a.type) else a for a in table.columns
            ]
            rows += table.num_rows
            yield pa.table(arrays, names=[self.columns[i] for i in columns])
            del table, arrays
            release_memory()  # the block's freed memory back to the system: otherwise it stays resident
            if self.progress:
                self.progress(done, total)

    def _text_error(self, message: str, columns: list[int]) -> Exception:
        """The one-line error for PyArrow's complaint about a block of a text file."""
        if "invalid UTF8" in message:
            return DatasetError(f"{self.what} file {self.path} is not UTF-8 text; give a CSV/TSV file")
        match = re.search(r"CSV column #(\d+): CSV conversion error to \w+: invalid value '(.*)'$", message)
        if match:
            return ConversionFailed(int(match.group(1)), match.group(2), None)  # the file's column number
        quote = self._quote_error()
        if quote is not None:
            return quote
        width = len(self.sample[0])
        for line, fields in self.lines():
            if len(fields) != width:
                shown = ",".join(fields)
                return DatasetError(
                    f"{self.path}, line {line}: expected {width} columns like the first line, got "
                    f"{len(fields)} ({shown[:80]!r})"
                )
        return DatasetError(f"{self.what} file {self.path} cannot be read ({_first_line(message)})")

    def _quote_error(self) -> DatasetError | None:
        """The first quoted field that runs past its line's end, as its one-line error; ``None`` where there is none."""
        assert self.path is not None
        if not self.delimiter:
            return None
        starts = ('"', f'{self.delimiter}"', f'{self.delimiter} "')
        opened = None
        with self.path.open(encoding="utf-8-sig", errors="replace", newline="") as f:
            for number, line in enumerate(f, 1):
                if opened is None and (not line.strip() or line.startswith("#")):
                    continue
                if line.count('"') % 2:
                    if opened is not None:
                        return DatasetError(_quote_message(self.what, self.path, opened, True))
                    if line.lstrip().startswith('"') or any(mark in line for mark in starts[1:]):
                        opened = number
        return None if opened is None else DatasetError(_quote_message(self.what, self.path, opened, False))

    def lines(self) -> Iterator[tuple[int, list[str]]]:
        """(line number, fields) of every data line after the header, parsed in Python — for messages only."""
        assert self.path is not None
        with self.path.open(encoding="utf-8-sig", errors="replace", newline="") as f:
            headed = self.headed
            for number, line in enumerate(f, 1):
                line = line.rstrip("\r\n")
                if not line.strip() or line.startswith("#"):
                    continue
                if headed:
                    headed = False
                    continue
                if self.delimiter:
                    try:
                        fields = next(csv.reader([line], delimiter=self.delimiter))
                    except (csv.Error, StopIteration):
                        fields = line.split(self.delimiter)
                else:
                    fields = line.split()
                yield number, [t.strip() for t in fields]

    def where(self, row: int) -> str:
        """``line N`` (text files: the file's line of data row ``row``, from 0) or ``row N`` (others, from 1)."""
        if self.path is not None and self.parquet is None:
            for i, (line, _) in enumerate(self.lines()):
                if i == row:
                    return f"line {line}"
        return f"row {row + 1}"

    def find_value(self, column: int, value: str) -> str:
        """Where ``value`` (as text) first stands in ``column``, for a message (``line N``); ``""`` where not found."""
        if self.path is not None and self.parquet is None:
            for line, fields in self.lines():
                if column < len(fields) and fields[column] == value:
                    return f"line {line}"
        return ""


class ConversionFailed(DatasetError):
    """A value of a column is not of the type asked for; ``column`` counts from 0, ``row`` is the first row (from 0) of
    the block that holds the value, where known."""

    def __init__(self, column: int, value: str, row: int | None) -> None:
        super().__init__(f"column {column + 1}: {value!r}")
        self.column, self.value, self.row = column, value, row


def _first_uncastable(array: Any, wanted: Any) -> str:
    """The first value of ``array`` that does not convert to ``wanted``, as text."""
    import pyarrow as pa
    import pyarrow.compute as pc

    for chunk in array.chunks if hasattr(array, "chunks") else [array]:
        for start in range(0, len(chunk), 4096):
            piece = chunk.slice(start, 4096)
            try:
                pc.cast(piece, wanted)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                for value in piece.to_pylist():
                    try:
                        pc.cast(pa.array([value]), wanted)
                    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
                        return str(value)
    return "?"


def _head(path: Path) -> tuple[bytes, bool, int]:
    """(up to :data:`_SAMPLE_BYTES` from the file's first line that is neither a comment nor blank, whether that is the
    whole rest of the file, the lines before it). The lines skipped are never held, however many and long; spaces
    opening the first line and a byte-order mark are dropped."""
    skipped, head, first = 0, b"", True
    skipping = b""  # b"#": inside a comment line not ended yet; b" ": inside a line of nothing but spaces so far
    with path.open("rb") as f:
        while True:
            chunk = f.read(_SAMPLE_BYTES)
            if first and chunk.startswith(_BOM):
                chunk = chunk[len(_BOM) :]
            first = False
            if not chunk:
                return (b"" if skipping else head), True, skipped
            if skipping == b"#":  # the rest of a comment line longer than a read
                cut = chunk.find(b"\n")
                if cut < 0:
                    continue
                chunk, skipped, skipping = chunk[cut + 1 :], skipped + 1, b""
            elif skipping == b" ":  # more of a line of spaces: a line end makes it blank, anything else its content
                chunk = chunk.lstrip(_BLANK_BYTES)
                if not chunk:
                    continue
                skipping = b""
            head += chunk
            lead = _LEADING.match(head).end()
            skipped += head.count(b"\n", 0, lead)
            head = head[lead:]
            if head.startswith(b"#"):  # a comment line not ended yet
                head, skipping = b"", b"#"
            elif not head.strip(_BLANK_BYTES):  # spaces, no line end yet: whether the line is blank is read on
                head, skipping = b"", b" "
            else:  # the first line that is not skipped
                break
        if len(head) < _SAMPLE_BYTES:
            head += f.read(_SAMPLE_BYTES - len(head))
        whole = len(head) < _SAMPLE_BYTES or not f.read(1)
    return head, whole, skipped


def _quote_message(what: str, path: Path | None, line: int, closed: bool) -> str:
    """The one line for a quote that runs past its line's end: ``closed`` on a later line, or never closed."""
    if closed:
        return (
            f"{what} file {path}, line {line}: a quoted value holds a line break, which gca does not read "
            "(node ids and values are one line each); remove the line break"
        )
    return f'{what} file {path}, line {line}: a quote (") is never closed; fix or remove it'


def _blocks(path: Path) -> Iterator[bytes]:
    """The file's bytes, :data:`BLOCK_BYTES` at a time, each block ending at a line end (the last at the file's)."""
    with path.open("rb") as f:
        carry = b""
        while True:
            chunk = f.read(BLOCK_BYTES)
            if not chunk:
                if carry:
                    yield carry
                return
            data = carry + chunk if carry else chunk
            cut = data.rfind(b"\n")
            if cut < 0:
                carry = data
                continue
            yield data[: cut + 1]
            carry = data[cut + 1 :]


def _clean(block: bytes, first: bool, whitespace: bool) -> bytes:
    """A block as PyArrow reads it: no byte-order mark, no comment or whitespace-only lines, and — for a
    whitespace-separated file — runs of spaces and tabs as one tab, none at a line's ends."""
    if first and block.startswith(_BOM):
        block = block[len(_BOM) :]
    if whitespace:
        block = _EDGE_SPACES.sub(b"", _SPACES.sub(b"\t", block))
    if block[:1] in _LINE_STARTS or b"\n#" in block:  # (lines of spaces only: rewritten where PyArrow fails)
        block = _COMMENT_OR_BLANK.sub(b"", block)
    return block


def release_memory() -> None:
    """Freed memory back to the system: the C heap's (:func:`gca.mapped.trim_heap`) and PyArrow's default pool's."""
    import pyarrow as pa

    trim_heap()
    pa.default_memory_pool().release_unused()


def _joined(parts: list[np.ndarray]) -> np.ndarray:
    """Blocks of a column as one array (the block itself when there is one)."""
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def _first_line(exc: Any) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= 160 else text[:157] + "..."


def read_text_column(path: Path, what: str) -> Any:
    """One column of a text file (one value per line, blank and ``#`` lines skipped; a first line ``id``/``node``
    is a header) or of an ``.npy`` file, as a PyArrow array — the node ids of a feature matrix's rows."""
    import pyarrow as pa

    path = Path(path)
    check_regular_file(path, what)
    if path.suffix.lower() == ".npy":
        try:
            values = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise DatasetError(f"{what} file {path} is not a readable .npy array ({_first_line(exc)})") from None
        if values.ndim != 1:
            raise DatasetError(f"{what} file {path} must hold one id per row (a 1-D array), got shape {values.shape}")
        return pa.array(values)
    table = TableInput(path, what)
    # one id per line, whole: an id may hold commas or spaces ("Smith, J."), so no delimiter splits it
    table.delimiter = "\x1f"
    table.sample = [[" ".join(fields)] for fields in table.sample] if table.sample else []
    table.columns = table.columns[:1]
    first = table.sample[0][0].lower() if table.sample else ""
    table.set_header(first in ID_COLUMN_NAMES)
    parts = [b.column(0) for b in table.batches([0], {0: pa.string()})]
    return pa.chunked_array(parts, type=pa.string()).combine_chunks() if parts else pa.array([], pa.string())


__all__ = [
    "BLOCK_BYTES",
    "ID_COLUMN_NAMES",
    "ConversionFailed",
    "TableInput",
    "is_parquet",
    "is_table_object",
    "read_text_column",
    "release_memory",
]
