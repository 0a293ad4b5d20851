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

import ctypes
import mmap
import os
import secrets
import sys
import weakref
from pathlib import Path

import numpy as np
import torch


class Mapped:
    """An ``.npy`` file mapped for writing: :attr:`array` (its data, C order, from byte ``offset``) over
    :attr:`mapping` (the whole file). :meth:`drop` lets rows already written leave this process's resident memory."""

    def __init__(self, path: Path, mapping: mmap.mmap, offset: int, shape: tuple[int, ...], dtype: np.dtype) -> None:
        self.path, self.mapping, self.offset = path, mapping, offset
        count = int(np.prod(shape, dtype=np.int64))
        self.array = np.frombuffer(mapping, dtype=dtype, count=count, offset=offset).reshape(shape)
        self.row_bytes = int(np.prod(shape[1:], dtype=np.int64)) * dtype.itemsize

    def drop(self, start: int, stop: int) -> None:
        """Rows ``start`` … ``stop`` − 1 out of the resident set (:func:`drop_rows`)."""
        drop_rows(self.mapping, self.offset, self.row_bytes, start, stop)

    def flush(self) -> None:
        """The written pages to the file, and the file to disk."""
        self.mapping.flush()
        fd = os.open(self.path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def drop_rows(mapping: mmap.mmap, offset: int, row_bytes: int, start: int, stop: int) -> None:
    """``MADV_DONTNEED`` on the pages of rows ``start`` … ``stop`` − 1 (of ``row_bytes`` each, from byte ``offset``)
    of a shared file mapping: they leave the process's resident set, stay in the page cache, are written back to the
    file and come back on the next read (pages the range shares with other rows go too, and come back the same way).
    Where the platform has no ``madvise``, nothing happens."""
    if not hasattr(mapping, "madvise") or not hasattr(mmap, "MADV_DONTNEED"):
        return
    page = mmap.PAGESIZE
    low = (offset + start * row_bytes) // page * page
    high = min(-(-(offset + stop * row_bytes) // page) * page, len(mapping))
    if high > low:
        mapping.madvise(mmap.MADV_DONTNEED, low, high - low)


def npy_map(
    path: str | Path, shape: tuple[int, ...], dtype: np.dtype | type, rows: tuple[int, int] | None = None
) -> Mapped:
    """A new ``.npy`` file at ``path`` holding an uninitialised array of ``shape`` and ``dtype`` (C order; no zero
    in ``shape``), its whole size reserved on disk, mapped for writing. ``np.load(path)`` reads it once written.
    ``rows=(start, stop)``: only those rows are reserved (and may be written); the rest of the file is a hole that
    takes no space."""
    path, dtype = Path(path), np.dtype(dtype)
    header = {"descr": np.lib.format.dtype_to_descr(dtype), "fortran_order": False, "shape": tuple(shape)}
    size = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    with open(path, "w+b") as f:
        np.lib.format.write_array_header_1_0(f, header)
        offset = f.tell()
        f.flush()
        try:
            if rows is None:
                os.posix_fallocate(f.fileno(), 0, offset + size)
            else:
                row_bytes = size // max(shape[0], 1)
                f.truncate(offset + size)
                if rows[1] > rows[0]:
                    os.posix_fallocate(f.fileno(), offset + rows[0] * row_bytes, (rows[1] - rows[0]) * row_bytes)
        except OSError:
            f.close()
            path.unlink(missing_ok=True)
            raise
        mapping = mmap.mmap(f.fileno(), offset + size)  # shared, read-write; outlives the file object
    return Mapped(path, mapping, offset, tuple(shape), dtype)


def numpy_dtype(dtype: torch.dtype) -> np.dtype:
    return torch.empty(0, dtype=dtype).numpy().dtype


class DiskArrays:
    """``allocate(shape, dtype, final)`` for out-of-core inference: the final matrix is the ``.npy`` file
    ``target`` (the run's staged ``embeddings.npy``); every other one a scratch ``.npy`` in ``scratch`` (default:
    ``target``'s folder), unlinked once mapped. :meth:`written` drops rows already written from the resident set;
    :meth:`flush` writes the final matrix to disk.

    Without a ``target`` (a torchrun process other than the first, :class:`gca.train.distributed.RowRanges`) the
    final matrix is scratch too (``scratch`` is then needed), with only ``final_rows`` — the rows this process
    computes — reserved on disk."""

    def __init__(
        self, target: str | Path | None, scratch: str | Path | None = None, final_rows: tuple[int, int] | None = None
    ) -> None:
        if target is None and scratch is None:
            raise ValueError("DiskArrays needs a target or a scratch folder")
        self.target = Path(target) if target is not None else None
        self.scratch = Path(scratch) if scratch is not None else self.target.parent
        self.final_rows = final_rows
        self.final: Mapped | None = None
        # by the address of each matrix handed out: its mapping (weakly: a scratch file goes with its matrix),
        # header size and row size
        self._mapped: dict[int, tuple[weakref.ref, int, int]] = {}

    def __call__(self, shape: tuple[int, int], dtype: torch.dtype, final: bool) -> torch.Tensor:
        if final and self.target is not None:
            self.final = mapped = npy_map(self.target, shape, numpy_dtype(dtype))
        else:
            path = self.scratch / f".gca-scratch-{secrets.token_hex(6)}.npy"
            try:
                mapped = npy_map(path, shape, numpy_dtype(dtype), self.final_rows if final else None)
            finally:
                path.unlink(missing_ok=True)  # the mapping keeps the pages; the name goes now
        tensor = torch.from_numpy(mapped.array)
        self._mapped = {k: v for k, v in self._mapped.items() if v[0]() is not None}
        self._mapped[tensor.data_ptr()] = (weakref.ref(mapped.mapping), mapped.offset, mapped.row_bytes)
        return tensor

    def written(self, tensor: torch.Tensor, start: int, stop: int) -> None:
        """Rows ``start`` … ``stop`` − 1 of a matrix this allocated are written: out of the resident set with them
        (a later read brings them back from the page cache). Any other tensor is left alone."""
        mapping, offset, row_bytes = self._mapped.get(tensor.data_ptr(), (lambda: None, 0, 0))
        if mapping() is not None:
            drop_rows(mapping(), offset, row_bytes, start, stop)

    def release(self, tensor: torch.Tensor) -> None:
        """Done reading ``tensor`` (the stored features, once the first layer has read them): its pages are
        reclaimed now (``MADV_PAGEOUT``: file-backed pages are written back if dirty and dropped; anonymous
        memory without swap stays; nothing is lost either way), so the layers after it do not hold them."""
        page_out(tensor)

    def flush(self) -> None:
        """Write the final matrix's pages to the file and the file to disk (``msync``, then ``fsync``)."""
        if self.final is not None:
            self.final.flush()


#: Linux's ``MADV_PAGEOUT`` (5.4 and later): reclaim the pages of a range now, keeping their contents.
MADV_PAGEOUT = 21


def page_out(tensor: torch.Tensor) -> bool:
    """``MADV_PAGEOUT`` over a CPU tensor's bytes (whole pages inside them): on Linux the kernel reclaims them —
    pages of a mapped file are dropped and read again from it when next touched — and never discards data.
    Returns whether the call was made and succeeded (elsewhere, or on an older kernel, nothing happens)."""
    if not sys.platform.startswith("linux") or tensor.device.type != "cpu" or tensor.numel() == 0:
        return False
    page = mmap.PAGESIZE
    start = tensor.data_ptr()
    low = -(-start // page) * page
    high = (start + tensor.numel() * tensor.element_size()) // page * page
    if high <= low:
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    libc.madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    return libc.madvise(ctypes.c_void_p(low), ctypes.c_size_t(high - low), MADV_PAGEOUT) == 0


def trim_heap() -> bool:
    """Give the C heap's free memory back to the kernel (glibc's ``malloc_trim``); freed heap memory otherwise stays
    resident (docs/design/application.md). Called between phases of a large run; returns whether memory was released
    (``False`` off glibc)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        return bool(ctypes.CDLL(None).malloc_trim(0))
    except (OSError, AttributeError):
        return False
