"""How far a retrained embedding moved from the previous one, and the rotation that brings it back.

A warm-started retrain (:meth:`gca.GCA.fit`'s ``init_from``) rotates the new embeddings Z onto the previous ones P
with the orthogonal matrix

    R = argmin_{RᵀR = I} ‖Z_S R − P_S‖_F = U Vᵀ,   where Z_Sᵀ P_S = U Σ Vᵀ,

over the nodes S both runs embedded (orthogonal Procrustes, Schönemann 1966; SciPy's ``orthogonal_procrustes``),
applied to every node of Z (design notes: docs/design/training.md). A node whose embedding is all zeros in either
run has no cosine: it is counted apart, never as 0 or 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from ..errors import UserError

#: Rows rotated at a time (:func:`align_embeddings`): no float64 copy of every node's embedding.
ROTATE_ROWS = 65_536


class AlignmentError(UserError, ValueError):
    """Two embeddings cannot be aligned (other widths, too few shared nodes)."""


@dataclass
class Alignment:
    """What aligning new embeddings to previous ones did: ``shared`` nodes (both embeddings hold them; the rotation
    was fitted on them), of which ``without_cosine`` have an all-zero embedding in either run, and the rotation R.

    Parameters
    ----------
    cosine_before, cosine_after
        The mean per-node cosine between the new and previous embeddings of the shared nodes, before and after the
        rotation (nodes without a cosine left out).
    rotation
        R, ``[d, d]`` orthogonal.
    """

    shared: int
    cosine_before: float
    cosine_after: float
    without_cosine: int
    rotation: np.ndarray

    def to_dict(self) -> dict:
        """The record's ``alignment`` (without R itself)."""
        return {
            "method": "orthogonal Procrustes on the shared nodes",
            "shared_nodes": self.shared,
            "cosine_before": self.cosine_before,
            "cosine_after": self.cosine_after,
            "nodes_without_cosine": self.without_cosine,
        }


def node_cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The cosine between row i of ``a`` and row i of ``b`` (``[n, d]`` each), for every i; NaN where either row is
    all zeros."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    norms = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(norms > 0, np.einsum("ij,ij->i", a, b) / norms, np.nan)


def shared_rows(new_ids: Sequence | np.ndarray, previous_ids: Sequence | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(rows of the new run, rows of the previous run) of the node ids both hold (``new_ids``, ``previous_ids``:
    each run's node id per row), in the previous run's order. Ids are compared as text, so an id read as the integer 7
    in one file and the text "7" in another is one node."""
    position = {str(node): row for row, node in enumerate(new_ids)}
    if len(position) != len(new_ids):
        raise AlignmentError("the new run's node ids repeat; each node needs one id")
    pairs = [(position[str(node)], row) for row, node in enumerate(previous_ids) if str(node) in position]
    if len({new for new, _ in pairs}) != len(pairs):
        raise AlignmentError("the previous embeddings list a node id twice; each node needs one row")
    rows = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    return rows[:, 0], rows[:, 1]


def align_embeddings(
    new: np.ndarray | torch.Tensor,
    previous: np.ndarray,
    new_rows: np.ndarray | None = None,
    previous_rows: np.ndarray | None = None,
    out: np.ndarray | None = None,
) -> tuple[np.ndarray, Alignment]:
    """``new`` (``[N, d]``) rotated onto ``previous`` (``[M, d]``) (module docstring), float32, every row of ``new``
    (rotated :data:`ROTATE_ROWS` rows at a time); and what it did.

    Parameters
    ----------
    new_rows, previous_rows
        The shared nodes' rows in each (:func:`shared_rows`); ``None`` for both: the same nodes in the same order
        (N = M).
    out
        A float32 ``[N, d]`` array to write the rotated rows to (``new`` itself rotates it in place); ``None``: a
        new array.
    """
    new = new.numpy() if isinstance(new, torch.Tensor) else np.asarray(new)
    previous = np.asarray(previous)
    if new.ndim != 2 or previous.ndim != 2 or new.shape[1] != previous.shape[1]:
        raise AlignmentError(
            f"the previous embeddings are {previous.shape[-1] if previous.ndim else 0} wide and "
            f"the new ones {new.shape[-1] if new.ndim else 0}; align runs of the same width"
        )
    if new_rows is None or previous_rows is None:
        if new.shape[0] != previous.shape[0]:
            raise AlignmentError(
                f"{previous.shape[0]} previous rows for {new.shape[0]} nodes; without node ids the "
                "rows must be the same nodes in the same order"
            )
        new_rows = previous_rows = np.arange(new.shape[0])
    if len(new_rows) < new.shape[1]:
        raise AlignmentError(
            f"only {len(new_rows)} nodes are in both runs; a {new.shape[1]}-wide rotation needs at least {new.shape[1]}"
        )
    from scipy.linalg import orthogonal_procrustes

    z, p = new[new_rows].astype(np.float64), previous[previous_rows].astype(np.float64)
    rotation, _ = orthogonal_procrustes(z, p)
    aligned = np.empty(new.shape, dtype=np.float32) if out is None else out
    for start in range(0, new.shape[0], ROTATE_ROWS):
        block = slice(start, start + ROTATE_ROWS)
        aligned[block] = new[block].astype(np.float64) @ rotation
    before, after = node_cosines(z, p), node_cosines(aligned[new_rows], p)
    missing = int(np.isnan(before).sum())
    return aligned, Alignment(int(len(new_rows)), _mean(before), _mean(after), missing, rotation)


def _mean(values: np.ndarray) -> float:
    """The mean of the values that are not NaN (NaN when none is)."""
    kept = values[~np.isnan(values)]
    return float(kept.mean()) if kept.size else float("nan")
