"""Embeddings written keyed by the input files' node ids (``--export``): CSV/TSV, or Parquet with pyarrow."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np

from ..errors import UserError
from ..io import atomic_write, atomic_write_text


class ExportError(UserError, ValueError):
    """The export cannot be written in the asked format."""


def export_embeddings(path: str | Path, embeddings: np.ndarray, node_ids: list[str]) -> None:
    """Write embeddings keyed by node id: ``.csv`` (node_id, e0, e1, …) or ``.parquet`` (needs pyarrow).

    Parameters
    ----------
    path
        The file to write (replaced atomically): ``.csv``, ``.tsv`` or ``.parquet``; another suffix, or Parquet
        without pyarrow, is an :class:`ExportError`.
    embeddings
        ``[N, d]`` embeddings, row i of node ``node_ids[i]``.
    node_ids
        One id per row (the input files' ids).
    """
    path = Path(path)
    columns = [f"e{i}" for i in range(embeddings.shape[1])]
    if path.suffix.lower() == ".parquet":
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError:
            raise ExportError("Parquet export needs pyarrow (pip install pyarrow); or export to .csv") from None
        table = pa.table({"node_id": node_ids, **{c: embeddings[:, i] for i, c in enumerate(columns)}})
        atomic_write(path, lambda f: pq.write_table(table, f))
    elif path.suffix.lower() in (".csv", ".tsv"):
        buffer = io.StringIO()
        writer = csv.writer(buffer, delimiter="\t" if path.suffix.lower() == ".tsv" else ",", lineterminator="\n")
        writer.writerow(["node_id", *columns])
        for node, row in zip(node_ids, embeddings, strict=True):
            writer.writerow([node, *(f"{v:.7g}" for v in row)])
        atomic_write_text(path, buffer.getvalue())
    else:
        raise ExportError(f"cannot export to {path.name}: use a .csv, .tsv or .parquet file name")
