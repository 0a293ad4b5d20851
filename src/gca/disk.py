"""Arrays on disk: ``.npy`` files mapped into memory and written a block of rows at a time — how inference on a
graph larger than memory keeps its N-row matrices (:meth:`gca.nn.gcn.GCNEncoder.forward_in_chunks`).

A mapped file's pages are *file-backed*: the kernel writes them out and drops them under memory pressure, where
the same matrix as anonymous memory (``torch.empty``) would stay resident or fail. Two rules keep a mapped file
from turning a fault into a crash or a leftover:

* each file's space is reserved before it is mapped (``posix_fallocate``), so a full disk is an ``OSError`` when
  the file is made, never a ``SIGBUS`` when a page is written back later;
* a scratch file (a layer's output that the next layer reads) is unlinked as soon as it is mapped: it lives as
  long as its mapping, and no interruption — ``kill -9`` included — leaves it behind.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import numpy as np
import torch


def npy_map(path: str | Path, shape: tuple[int, ...], dtype: np.dtype | type) -> np.memmap:
    """A new ``.npy`` file at ``path`` holding an uninitialised array of ``shape`` and ``dtype`` (C order), its whole
    size reserved on disk, mapped for writing (``shape`` holds no zero). ``np.load(path)`` reads it once written."""
    dtype = np.dtype(dtype)
    header = {"descr": np.lib.format.dtype_to_descr(dtype), "fortran_order": False, "shape": tuple(shape)}
    size = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    with open(path, "wb") as f:
        np.lib.format.write_array_header_1_0(f, header)
        offset = f.tell()
        f.flush()
        try:
            os.posix_fallocate(f.fileno(), 0, offset + max(size, 1))
        except OSError:
            f.close()
            Path(path).unlink(missing_ok=True)
            raise
    return np.memmap(path, dtype=dtype, mode="r+", offset=offset, shape=tuple(shape))


def numpy_dtype(dtype: torch.dtype) -> np.dtype:
    return torch.empty(0, dtype=dtype).numpy().dtype


class DiskArrays:
    """``allocate(shape, dtype, final)`` for out-of-core inference: the final matrix is the ``.npy`` file
    ``target`` (the run's staged ``embeddings.npy``); every other one a scratch ``.npy`` in ``scratch`` (default:
    ``target``'s folder), unlinked once mapped. :attr:`final` is the target's mapping once made; :meth:`flush`
    writes its pages to disk."""

    def __init__(self, target: str | Path, scratch: str | Path | None = None) -> None:
        self.target = Path(target)
        self.scratch = Path(scratch) if scratch is not None else self.target.parent
        self.final: np.memmap | None = None

    def __call__(self, shape: tuple[int, int], dtype: torch.dtype, final: bool) -> torch.Tensor:
        if final:
            self.final = npy_map(self.target, shape, numpy_dtype(dtype))
            return torch.from_numpy(self.final)
        path = self.scratch / f".gca-scratch-{secrets.token_hex(6)}.npy"
        try:
            mapped = npy_map(path, shape, numpy_dtype(dtype))
        finally:
            path.unlink(missing_ok=True)  # the mapping keeps the pages; the name goes now
        return torch.from_numpy(mapped)

    def flush(self) -> None:
        """Write the final matrix's pages to the file and the file to disk (``msync``, then ``fsync``)."""
        if self.final is not None:
            self.final.flush()
            fd = os.open(self.target, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
