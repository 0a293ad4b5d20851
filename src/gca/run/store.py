"""The prepared graph on disk: a graph's checked, cleaned form written once and opened by later runs without reading or
cleaning the input again (its contents and rules: docs/large-graphs.md, "The prepared graph on disk").

A :class:`PreparedStore` is one folder, ``CACHE_DIR/prepared/NAME-KEY/`` (``KEY`` a digest of the input's paths and how
they are read: :class:`~gca.run.integrity.GraphSource`), of ``.npy`` files memory-mapped copy-on-write when opened: the
cleaned graph, its labels, splits and node ids, and what training derives, each added the first time a run computes it
(:meth:`PreparedStore.kept`). ``meta.json``, written last, records every array's shape and dtype, the gca version and
format, and the input files' identity and digests; a folder that fails the checks of :mod:`gca.run.integrity` is said in
one line and removed. The graph is written into a sibling ``.NAME.partial-HOST-PID`` folder renamed into place once
complete (arrays added later likewise); of two processes writing the same folder at once, the first rename wins.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import scipy.sparse as sp
import torch
from torch_geometric.data import Data

from .. import __version__
from ..datasets.base import LoadedDataset, default_cache_dir
from ..errors import UserError
from ..graph.csr import count_ids
from ..graph.features import encoder_input
from ..graph.graph import Graph
from ..io import atomic_write, file_identity, hold_folder, release_folder
from ..progress import step
from .integrity import (
    _META_KEYS,
    FORMAT,
    GraphSource,
    _inconsistent,
    _record,
    _seal,
    _untrusted,
    input_digests,
    sampled_digest,
)

#: A run writes the prepared graph by itself from this many directed edges up (``store_graph=True``: any graph's).
CACHE_MIN_EDGES = 10_000_000
#: Space left free on the cache's disk beyond the folder's own size.
_SPARE_BYTES = 256 << 20


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _save(path: Path, array: np.ndarray) -> None:
    """``array`` as ``path`` (.npy), flushed to disk before returning (the caller renames it into place)."""
    with path.open("wb") as f:
        np.save(f, array, allow_pickle=False)
        f.flush()
        os.fsync(f.fileno())


def _write_meta(folder: Path, meta: dict) -> None:
    atomic_write(folder / "meta.json", lambda f: f.write(json.dumps(meta, indent=1).encode()))


def _mapped(path: Path) -> torch.Tensor:
    """An .npy file as a tensor over a copy-on-write mapping: pages come from the file (page cache), and a write (none
    is made) would go to a private copy."""
    return torch.from_numpy(np.load(path, mmap_mode="c", allow_pickle=False))


class PreparedStore:
    """The prepared-graph folder of one :class:`GraphSource`; :attr:`notes` collects the lines a command prints about it
    (rebuilt, written, not written and why). ``root``: the cache folder (``None`` for ``$GCA_CACHE_DIR``, else
    ``~/.cache/gca``); ``progress``: say on stderr that the graph is being stored when that takes a few seconds."""

    def __init__(self, source: GraphSource, root: str | Path | None = None, progress: bool = False) -> None:
        self.source, self.progress = source, progress
        self.root = (Path(root) if root is not None else default_cache_dir()) / "prepared"
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in source.name)[:40] or "graph"
        self.folder = self.root / f"{safe}-{source.key}"
        self.notes: list[str] = []
        self.meta: dict | None = None  # the folder's meta.json once it is found usable
        self._host = socket.gethostname()
        #: the derived arrays this run computed but could not add to the folder, and why (the first failure's reason)
        self._unstored: list[str] = []
        self._unstored_why, self._unstored_note = "", 0

    # -- finding ---------------------------------------------------------------------------------------------------

    def usable(self) -> bool:
        """Whether the folder holds a prepared graph this run may use; one that exists but may not be used is said in
        :attr:`notes` (and rebuilt by :meth:`write`)."""
        self._remove_leftovers()
        if not self.folder.exists():
            return False
        why = self._refusal()
        if why is None:
            return True
        self.meta = None
        try:
            self._discard(self.folder)
            self.notes.append(
                f"the prepared graph in {self.folder} {why}; it was removed, and the graph is read from the input"
            )
        except OSError as exc:
            self.notes.append(
                f"the prepared graph in {self.folder} {why}; it is not used (and could not be removed: "
                f"{exc.strerror or exc})"
            )
        return False

    def _discard(self, path: Path) -> None:
        """``path`` (a refused folder, or whatever stands at its name) moved aside and removed."""
        aside = self.root / f".{self.folder.name}.stale-{self._host}-{os.getpid()}"
        os.rename(path, aside)
        if aside.is_dir() and not aside.is_symlink():
            shutil.rmtree(aside, ignore_errors=True)
        else:
            aside.unlink(missing_ok=True)

    def _refusal(self) -> str | None:
        try:
            meta = json.loads((self.folder / "meta.json").read_text())
        except (OSError, ValueError):
            return "has no readable meta.json (written by something else, or not completely)"
        if not isinstance(meta, dict) or meta.get("format") != FORMAT or meta.get("gca") != __version__:
            version = meta.get("gca", "?") if isinstance(meta, dict) else "?"
            return (
                f"was written by gca {version} (format {meta.get('format') if isinstance(meta, dict) else '?'})"
                f", not gca {__version__} (format {FORMAT})"
            )
        if meta.get("source") != self.source.record():
            return "was made from another input"
        if meta.get("seal") != _seal(meta) or any(key not in meta for key in _META_KEYS):
            return "has a meta.json that is not the one gca wrote (edited, or written by something else)"
        why = _inconsistent(meta)
        if why:
            return f"has a meta.json whose entries disagree ({why})"
        if not isinstance(meta.get("derived", {}), dict):
            return "has a meta.json whose entries disagree (derived)"
        for name, spec in meta["arrays"].items():
            why = _untrusted(self.folder / f"{name}.npy", spec)
            if why:
                return why
        for name, sample in meta.get("files", {}).items():
            path = self.folder / name
            if not path.is_file() or sampled_digest(path) != sample:
                return f"is incomplete or changed ({name})"
        files = self.source.files()
        identity = file_identity(files)
        if identity != meta.get("identity"):
            if [row[0] for row in identity] != [row[0] for row in meta.get("identity", [])]:
                return "was made from another set of input files"
            digest, each = input_digests(files)
            if digest != meta.get("digest"):
                return "was made from other contents of the input files (they changed since)"
            # same contents (copied, touched): remembered, so the next run does not hash
            meta.update(identity=identity, sha256=each)
            with contextlib.suppress(OSError, UserError):  # a folder this run cannot write: hashed again next time
                with self._meta_held():
                    self._update_meta(meta, lambda stored: stored.update(identity=identity, sha256=each))
        self.meta = meta
        return None

    def _remove_leftovers(self) -> None:
        """Partial folders and files of processes on this host that no longer run (killed while writing)."""
        if not self.root.is_dir():
            return
        for path in self.root.glob(f".{self.folder.name}*.partial-*"):
            self._remove_if_dead(path)
        if self.folder.is_dir():
            for path in self.folder.glob(".*.partial-*"):
                self._remove_if_dead(path)

    def _remove_if_dead(self, path: Path) -> None:
        host, _, pid = path.name.rpartition(".partial-")[2].rpartition("-")
        if host == self._host and pid.isdigit() and not _alive(int(pid)):
            with contextlib.suppress(OSError):  # a folder this run cannot write (read-only): left as it is
                shutil.rmtree(path, ignore_errors=True) if path.is_dir() else path.unlink(missing_ok=True)

    # -- opening ---------------------------------------------------------------------------------------------------

    def loaded(self) -> LoadedDataset:
        """What the reading gave (name, labels, splits, node ids, the files' warnings); its ``data`` holds the labels
        and node count only, the graph is :meth:`graph`'s."""
        meta = self._opened()
        y = _mapped(self.folder / "y.npy").long() if "y" in meta["arrays"] else None
        data = Data(y=y, num_nodes=meta["num_nodes"])
        loaded_meta = meta["loaded"]
        node_ids = None
        if "node_ids" in meta["arrays"]:
            node_ids = np.load(self.folder / "node_ids.npy", mmap_mode="c")
        elif loaded_meta["node_ids"]:
            node_ids = json.loads((self.folder / "node_ids.json").read_text())
        return LoadedDataset(
            loaded_meta["name"],
            data,
            splits=self._splits("splits"),
            public=self._splits("public"),
            named=loaded_meta["named"],
            node_ids=node_ids,
            directed=loaded_meta["directed"],
            warnings=list(loaded_meta["warnings"]),
            class_names=loaded_meta["class_names"],
            feature_names=loaded_meta.get("feature_names"),
        )

    def graph(self, feature_norm: str) -> Graph:
        """The cleaned graph, its arrays mapped from the folder, features formed for ``feature_norm``."""
        meta = self._opened()
        arrays = meta["arrays"]
        edge_index = _mapped(self.folder / "edge_index.npy")
        weight = _mapped(self.folder / "edge_weight.npy") if "edge_weight" in arrays else None
        attr = _mapped(self.folder / "edge_attr.npy") if "edge_attr" in arrays else None
        if meta["features"] == "sparse":
            parts = [np.load(self.folder / f"x_{p}.npy", mmap_mode="c") for p in ("data", "indices", "indptr")]
            raw: sp.csr_matrix | np.ndarray = sp.csr_matrix(tuple(parts), shape=tuple(meta["feature_shape"]))
        else:
            raw = np.load(self.folder / "x.npy", mmap_mode="c")
        y = _mapped(self.folder / "y.npy").long() if "y" in arrays else None
        return Graph(
            meta["num_nodes"],
            edge_index,
            bool(meta["directed"]),
            encoder_input(raw, feature_norm),
            raw,
            y,
            list(meta["graph_warnings"]),
            weight,
            attr,
        )

    def _opened(self) -> dict:
        if self.meta is None and not self.usable():
            raise RuntimeError(f"no usable prepared graph in {self.folder}")
        assert self.meta is not None
        return self.meta

    def _splits(self, kind: str) -> list | None:
        """Splits stored as their parts' node ids one after another (``KIND_ids``) and where each part starts
        (``KIND_offsets``: 3 per split, and the end)."""
        if f"{kind}_ids" not in self._opened()["arrays"]:
            return None
        ids, offsets = (np.load(self.folder / f"{kind}_{name}.npy") for name in ("ids", "offsets"))
        parts = [ids[offsets[i] : offsets[i + 1]] for i in range(len(offsets) - 1)]
        return [tuple(parts[i : i + 3]) for i in range(0, len(parts), 3)]

    # -- writing ---------------------------------------------------------------------------------------------------

    def write(self, loaded: LoadedDataset, graph: Graph) -> bool:
        """Write ``graph`` (cleaned from ``loaded``) as this folder, replacing a stale one; whether it was written. A
        failure (no space, no permission) is a line in :attr:`notes`, never the run's error."""
        with step(f"storing the prepared graph in {self.folder}", self.progress):
            return self._write(loaded, graph)

    def _write(self, loaded: LoadedDataset, graph: Graph) -> bool:
        start = time.perf_counter()
        arrays = self._arrays(loaded, graph)
        need = sum(a.nbytes for a in arrays.values()) + _SPARE_BYTES
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            free = shutil.disk_usage(self.root).free
        except OSError as exc:
            self.notes.append(f"the prepared graph was not stored ({self.root}: {exc.strerror or exc})")
            return False
        if free < need:
            self.notes.append(
                f"the prepared graph was not stored: it needs {need / 1e9:.1f} GB and {self.root} has "
                f"{free / 1e9:.1f} GB free"
            )
            return False
        partial = self.root / f".{self.folder.name}.partial-{self._host}-{os.getpid()}"
        try:
            shutil.rmtree(partial, ignore_errors=True)
            partial.mkdir()
            for name, array in arrays.items():
                _save(partial / f"{name}.npy", array)
            if loaded.node_ids is not None and not isinstance(loaded.node_ids, np.ndarray):  # text ids
                atomic_write(partial / "node_ids.json", lambda f: f.write(json.dumps(list(loaded.node_ids)).encode()))
            files = self.source.files()
            digest, each = input_digests(files)
            meta = {
                "format": FORMAT,
                "gca": __version__,
                "source": self.source.record(),
                "identity": file_identity(files),
                "digest": digest,
                "sha256": each,
                "num_nodes": graph.num_nodes,
                "num_edges": int(graph.edge_index.shape[1]),
                "directed": graph.directed,
                "graph_warnings": list(graph.warnings),
                "features": "sparse" if sp.issparse(graph.raw_features) else "dense",
                "feature_shape": list(graph.raw_features.shape),
                "arrays": {name: _record(partial / f"{name}.npy") for name in arrays},
                "files": {p.name: sampled_digest(p) for p in partial.iterdir() if p.suffix == ".json"},
                "loaded": {
                    "name": loaded.name,
                    "named": loaded.named,
                    "directed": loaded.directed,
                    "warnings": list(loaded.warnings),
                    "class_names": loaded.class_names,
                    "node_ids": loaded.node_ids is not None,
                    "feature_names": loaded.feature_names,
                },
                "written": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            }
            meta["seal"] = _seal(meta)
            _write_meta(partial, meta)
            _fsync_dir(partial)
            ours = self._replace(partial)
        except OSError as exc:
            shutil.rmtree(partial, ignore_errors=True)
            self.notes.append(f"the prepared graph was not stored ({exc.strerror or exc}); the run goes on without it")
            return False
        if not self.usable():
            self.notes.append(
                f"the prepared graph another process stored in {self.folder} meanwhile cannot be "
                "used; the run goes on without it"
            )
            return False
        if ours:
            self.notes.append(
                f"stored the prepared graph in {self.folder} ({self.size() / 1e9:.2f} GB, "
                f"{time.perf_counter() - start:.1f} s); later runs on this input open it"
            )
        else:
            self.notes.append(f"another process stored the prepared graph in {self.folder} first; this run uses it")
        return True

    def _replace(self, partial: Path) -> bool:
        """``partial`` renamed to the folder's name (``True``), a stale folder removed first; where another process has
        just put a usable one there, that one is kept and ``partial`` removed (``False``)."""
        if self.folder.exists() or self.folder.is_symlink():
            if self._refusal() is None:  # another process (a torchrun rank) wrote it meanwhile
                shutil.rmtree(partial, ignore_errors=True)
                return False
            self._discard(self.folder)
        try:
            os.rename(partial, self.folder)
        except OSError:
            if not self.folder.exists():
                raise
            shutil.rmtree(partial, ignore_errors=True)  # another process's rename won
            return False
        _fsync_dir(self.root)
        return True

    @staticmethod
    def _arrays(loaded: LoadedDataset, graph: Graph) -> dict[str, np.ndarray]:
        index = graph.edge_index.as_subclass(torch.Tensor).cpu()
        indptr = np.zeros(graph.num_nodes + 1, dtype=np.int64)
        np.cumsum(count_ids(index[0], graph.num_nodes).numpy(), out=indptr[1:])
        arrays = {"edge_index": index.numpy(), "indptr": indptr}
        if graph.edge_weight is not None:
            arrays["edge_weight"] = graph.edge_weight.cpu().numpy()
        if graph.edge_attr is not None:
            arrays["edge_attr"] = graph.edge_attr.cpu().numpy()
        if graph.y is not None:
            arrays["y"] = graph.y.cpu().numpy()
        if isinstance(loaded.node_ids, np.ndarray):  # integer ids: an int64 array (text ids: node_ids.json)
            arrays["node_ids"] = np.asarray(loaded.node_ids, dtype=np.int64)
        for kind in ("splits", "public"):
            splits = getattr(loaded, kind)
            if splits:  # each part's node ids one after another, and where each part starts
                parts = [np.asarray(part, dtype=np.int64) for split in splits for part in split]
                arrays[f"{kind}_ids"] = np.concatenate(parts)
                arrays[f"{kind}_offsets"] = np.concatenate([[0], np.cumsum([len(p) for p in parts])]).astype(np.int64)
        raw = graph.raw_features
        if sp.issparse(raw):
            arrays.update(x_data=raw.data, x_indices=raw.indices, x_indptr=raw.indptr)
        else:
            arrays["x"] = np.asarray(raw)
        return arrays

    # -- what training derives -------------------------------------------------------------------------------------

    def kept(
        self, name: str, compute: Callable[[], torch.Tensor], shape: tuple[int, ...] | None = None
    ) -> torch.Tensor:
        """The array ``name`` from the folder, else ``compute()`` — added to the folder (atomically) and recorded in
        meta.json (``derived``) when the folder is in use. A stored array is used only when it passes the check against
        that record (:func:`_untrusted`) and has ``shape`` (``None``: any); else it is computed and stored again, said
        in a note where it was recorded.

        An array that cannot be stored (read-only folder, no permission, full disk) is used from memory: the first
        failure ends the run's attempts to write into the folder, and one note names the arrays not stored and why.
        """
        path = self.folder / f"{name}.npy"
        spec = self.meta.get("derived", {}).get(name) if self.meta is not None else None
        why = _untrusted(path, spec) if spec is not None else "unrecorded"
        if not why and (shape is None or spec["shape"] == list(shape)):
            return _mapped(path)
        if spec is not None:
            self.notes.append(
                f"the prepared graph in {self.folder} {why or f'holds a {path.name} of another shape'}; "
                "it is computed again"
            )
        value = compute()
        if self.meta is None:
            return value
        if self._unstored:  # the folder refused an earlier array this run: not tried again
            self._not_stored(name)
            return value
        temporary = self.folder / f".{name}.npy.partial-{self._host}-{os.getpid()}"
        try:
            _save(temporary, value.detach().cpu().numpy())
            record = _record(temporary)
            with self._meta_held():  # the file and its record change together, one process at a time
                os.replace(temporary, path)
                self._update_meta(self.meta, lambda stored: stored.setdefault("derived", {}).update({name: record}))
        except (OSError, UserError) as exc:
            # on a read-only file system even removing a file that is not there fails (EROFS, before the lookup)
            with contextlib.suppress(OSError):
                temporary.unlink(missing_ok=True)
            self._not_stored(name, str(getattr(exc, "strerror", None) or exc))
        return value

    def _not_stored(self, name: str, why: str = "") -> None:
        """Record that the derived array ``name`` was computed in memory only; the run's one note on it names the first
        such array, how many more, and the first failure's reason."""
        if not self._unstored:
            self._unstored_why, self._unstored_note = why, len(self.notes)
            self.notes.append("")
        self._unstored.append(name)
        more = len(self._unstored) - 1
        names = self._unstored[0] + (f" and {more} more array{'s' if more > 1 else ''}" if more else "")
        # one note, rewritten as arrays follow (every kept() runs while the graph is prepared, before notes are said)
        self.notes[self._unstored_note] = (
            f"the prepared graph in {self.folder} could not be written "
            f"({self._unstored_why}): {names} {'were' if more else 'was'} computed in "
            "memory for this run and not stored"
        )

    @contextlib.contextmanager
    def _meta_held(self) -> Iterator[None]:
        """An exclusive lock on the folder's ``.meta-lock`` while meta.json is read, changed and written."""
        handle = hold_folder(self.folder, ".meta-lock", wait=True)
        try:
            yield
        finally:
            release_folder(handle)

    def _update_meta(self, meta: dict, change: Callable[[dict], object]) -> None:
        """``change`` made to ``meta`` and to the folder's meta.json as it now is (another process may have recorded an
        array since), sealed and written atomically under :meth:`_meta_held`. A meta.json gca did not write is left
        alone."""
        change(meta)
        try:
            stored = json.loads((self.folder / "meta.json").read_text())
        except (OSError, ValueError):
            return
        if isinstance(stored, dict) and stored.get("seal") == _seal(stored):
            change(stored)
            stored["seal"] = _seal(stored)
            _write_meta(self.folder, stored)

    def recorded_sha256(self) -> dict[str, str]:
        """Each input file's SHA-256 as meta.json records it, by resolved path, for the files whose identity is still
        the one recorded; empty when the folder is not in use."""
        meta = self.meta or {}
        rows, each = meta.get("identity"), meta.get("sha256")
        if not (isinstance(rows, list) and isinstance(each, list) and len(rows) == len(each)):
            return {}
        recorded = {}
        for row, sha in zip(rows, each, strict=True):
            if not (isinstance(row, list) and row and isinstance(sha, str)):
                continue
            try:
                now = file_identity([Path(row[0])])[0]
            except OSError:
                continue
            if now == row:
                recorded[str(row[0])] = sha
        return recorded

    def provenance(self) -> dict | None:
        """What a run's record says of the folder it read its graph from: the folder, its key and the digest of the
        input's contents; ``None`` when the folder is not in use."""
        if self.meta is None:
            return None
        return {"folder": str(self.folder), "key": self.source.key, "digest": self.meta.get("digest")}

    def size(self) -> int:
        """Bytes the folder takes on disk."""
        return sum(p.stat().st_size for p in self.folder.iterdir() if p.is_file()) if self.folder.is_dir() else 0
