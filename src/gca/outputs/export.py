"""Embeddings written keyed by the input files' node ids (a run's ``export``): CSV, TSV or Parquet, by PyArrow."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..errors import UserError, option
from ..io import atomic_write
from ..progress import phase, step


class ExportError(UserError, ValueError):
    """The export cannot be written in the asked format."""


def export_embeddings(
    path: str | Path,
    embeddings: np.ndarray,
    node_ids: Sequence | np.ndarray,
    progress: bool = False,
    shown: str | Path | None = None,
) -> None:
    """Write embeddings keyed by node id, with PyArrow's writers a block of rows at a time: ``.csv``/``.tsv`` (a header
    ``node_id, e0, e1, …``, float32 values in their shortest exact form) or ``.parquet``. Integer ids are written as
    integers (int64 in Parquet), text ids as text; the values as given.

    Parameters
    ----------
    path
        The file to write (replaced atomically): ``.csv``, ``.tsv`` or ``.parquet``; another suffix is an
        :class:`ExportError`.
    embeddings, node_ids
        ``[N, d]`` embeddings, and the input files' id of each row (integers or strings).
    progress
        Say on stderr what is written once it takes a few seconds: the rows written (CSV, TSV), or a line at the start
        and at the end (Parquet).
    shown
        The file that progress names (the export's own, where ``path`` is a staged file); ``None`` for ``path``.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".tsv", ".parquet"):
        raise ExportError(f"cannot export to {path.name}: use a .csv, .tsv or .parquet file name")
    try:
        import pyarrow as pa
        import pyarrow.csv as pacsv
        import pyarrow.parquet as pq
    except ImportError:
        raise ExportError("export needs pyarrow (pip install pyarrow)") from None
    if len(node_ids) != embeddings.shape[0]:
        raise ExportError(f"{len(node_ids)} node ids for {embeddings.shape[0]} embeddings; give one id per row")
    ids = np.asarray(node_ids) if isinstance(node_ids, np.ndarray) else node_ids
    ids = pa.array(ids if not isinstance(ids, np.ndarray) or ids.dtype.kind in "iu" else ids.tolist())
    columns = [f"e{i}" for i in range(embeddings.shape[1])]
    what = f"export {Path(shown or path).name}"
    if suffix == ".parquet":
        table = pa.table({"node_id": ids, **{c: embeddings[:, i] for i, c in enumerate(columns)}})
        with step(f"{what} ({embeddings.shape[0]:,} rows)", progress):
            atomic_write(path, lambda f: pq.write_table(table, f))
        return
    delimiter = "\t" if suffix == ".tsv" else ","
    schema = pa.schema([("node_id", ids.type), *((c, pa.float32()) for c in columns)])

    def write(f) -> None:
        with contextlib.closing(phase(embeddings.shape[0], what, "row", enabled=progress)) as bar:
            write_rows(f, bar)

    def write_rows(f, bar) -> None:
        f.write((delimiter.join(["node_id", *columns]) + "\n").encode())
        for start in range(0, embeddings.shape[0], EXPORT_ROWS):
            block = np.asarray(embeddings[start : start + EXPORT_ROWS], dtype=np.float32)
            table = pa.table(
                [ids.slice(start, EXPORT_ROWS), *(block[:, i] for i in range(block.shape[1]))], schema=schema
            )
            try:  # ids written as they are, quoted only where one holds the delimiter, a quote or a line end
                pacsv.write_csv(
                    table, f, pacsv.WriteOptions(include_header=False, delimiter=delimiter, quoting_style="none")
                )
            except pa.ArrowInvalid:
                pacsv.write_csv(
                    table, f, pacsv.WriteOptions(include_header=False, delimiter=delimiter, quoting_style="needed")
                )
            bar.update(block.shape[0])

    atomic_write(path, write)


#: Rows written at a time by :func:`export_embeddings`.
EXPORT_ROWS = 1 << 16


def read_embeddings(path: str | Path) -> tuple[list | None, np.ndarray]:
    """(node ids, embeddings) of a file :func:`export_embeddings` wrote, or of a run's ``embeddings.npy`` (ids
    ``None``); a file missing, of another suffix or without ``node_id`` and ``e0 …`` columns is an
    :class:`ExportError`."""
    path = Path(path)
    suffix = path.suffix.lower()
    if not path.is_file():
        raise ExportError(f"{path} does not exist" if not path.exists() else f"{path} is not a file")
    if suffix == ".npy":
        try:
            values = np.load(path, mmap_mode="r", allow_pickle=False)
        except (ValueError, OSError) as exc:
            raise ExportError(f"{path} is not a readable .npy file ({exc})") from None
        if values.ndim != 2 or values.dtype.kind != "f":
            raise ExportError(f"{path} holds a {values.dtype} array of shape {values.shape}, not one embedding a row")
        return None, np.asarray(values, dtype=np.float32)
    if suffix not in (".csv", ".tsv", ".parquet"):
        raise ExportError(f"cannot read embeddings from {path.name}: give a .npy, .csv, .tsv or .parquet file")
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    try:
        if suffix == ".parquet":
            table = pq.read_table(path)
        else:
            table = pacsv.read_csv(path, parse_options=pacsv.ParseOptions(delimiter="\t" if suffix == ".tsv" else ","))
    except (pa.ArrowInvalid, OSError) as exc:
        raise ExportError(f"{path} cannot be read as a table: {str(exc).splitlines()[0]}") from None
    columns = [c for c in table.column_names if c != "node_id"]
    if "node_id" not in table.column_names or not columns or columns != [f"e{i}" for i in range(len(columns))]:
        raise ExportError(
            f"{path} is not an embeddings export: it needs the columns node_id, e0, e1, … (as "
            f"{option('export')} writes them)"
        )
    try:
        values = np.stack([table.column(c).to_numpy() for c in columns], axis=1).astype(np.float32)
    except (pa.ArrowInvalid, ValueError, TypeError):
        raise ExportError(f"{path}: its columns e0, e1, … must hold numbers without gaps") from None
    return table.column("node_id").to_pylist(), values
