"""What a prepared graph's folder (:mod:`gca.run.store`) is checked against before a run uses it: the input it was made
from (:class:`GraphSource`, whose key names the folder, and :func:`input_digests` of its files), its meta.json (sealed
over its entries, and agreeing with itself) and each array file (shape, dtype, size and :func:`sampled_digest`). An
input file whose identity (size, times, inode) differs from the recorded one is hashed again and must give the stored
digest. The rules and what they do not cover: docs/large-graphs.md, "The prepared graph on disk"; design notes:
docs/design/data-and-runs.md."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..io import hash_files, key_digest

#: Bumped when what a folder holds, or how, changes: a folder of another format is rebuilt.
FORMAT = 3


@dataclass(frozen=True)
class GraphSource:
    """What a run reads: the input's files or folders (resolved paths) and ``how`` they are read (e.g. ``"files
    directed=False"``). Equal sources read the same graph whenever the files' contents are the same; the folder's name
    begins with ``name``."""

    name: str
    paths: tuple[str, ...]
    how: str
    #: the paths as they were given (or reached: a named dataset's folder under ``data_dir``), one per path; not part
    #: of what the source is (two spellings of one path are one source)
    given: tuple[str, ...] = field(default=(), compare=False, repr=False)

    @classmethod
    def of(cls, name: str, paths: list[str | Path], how: str) -> GraphSource:
        return cls(name, tuple(str(Path(p).expanduser().resolve()) for p in paths), how, tuple(str(p) for p in paths))

    def record(self) -> dict:
        return {"paths": list(self.paths), "how": self.how}

    @property
    def key(self) -> str:
        return key_digest({"format": FORMAT, **self.record()}, size=8)

    def files(self) -> list[Path]:
        """Every file read: each path given, and each file under a folder given (sorted; PyTorch Geometric's
        ``processed/`` folders are left out)."""
        return [resolved for _, resolved in self.named_files()]

    def named_files(self) -> list[tuple[Path, Path]]:
        """:meth:`files`, each as (the path it was reached by, its resolved path)."""
        found: list[tuple[Path, Path]] = []
        for number, text in enumerate(self.paths):
            path = Path(text)
            given = Path(self.given[number]) if number < len(self.given) else path
            if path.is_dir():
                found += [
                    (given / p.relative_to(path), p)
                    for p in sorted(path.rglob("*"))
                    if p.is_file() and "processed" not in p.relative_to(path).parts
                ]
            else:
                found.append((given, path))
        return found


def input_digests(files: list[Path]) -> tuple[str, list[str]]:
    """(a BLAKE2b digest of the files' names, sizes and contents; each file's SHA-256), from one read: the first tells a
    prepared graph's input apart, the second is what a run's record says of each input file."""
    combined = hashlib.blake2b(digest_size=20)
    each = hash_files(files, combined)
    return combined.hexdigest(), each


#: Blocks read by :func:`sampled_digest` (evenly spaced, the first and last included) and their size.
_SAMPLES, _SAMPLE_BYTES = 16, 1 << 16


def sampled_digest(path: Path) -> str:
    """A BLAKE2b digest of a file's size and of 16 evenly spaced blocks of 64 KiB (the whole file below 1 MiB)."""
    size = path.stat().st_size
    digest = hashlib.blake2b(f"{size};".encode(), digest_size=16)
    with path.open("rb") as f:
        if size <= _SAMPLES * _SAMPLE_BYTES:
            digest.update(f.read())
        else:
            for i in range(_SAMPLES):
                f.seek((size - _SAMPLE_BYTES) * i // (_SAMPLES - 1))
                digest.update(f.read(_SAMPLE_BYTES))
    return digest.hexdigest()


def _seal(meta: dict) -> str:
    """A digest of meta.json's entries but the input files' identity (refreshed when only it changed) and the seal."""
    kept = {k: v for k, v in meta.items() if k not in ("identity", "seal")}
    return key_digest(kept)


def _npy_size(path: Path) -> tuple[tuple[int, ...], np.dtype, int] | None:
    """(shape, dtype, expected file size) of an .npy file as ``numpy.load`` maps it; ``None`` where it maps none (no or
    a damaged header, fewer bytes than the header promises)."""
    try:
        with path.open("rb") as f:
            if f.read(6) != b"\x93NUMPY":  # (numpy.load would open an archive, or refuse a pickle in other words)
                return None
        array = np.load(path, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError):
        return None
    return array.shape, array.dtype, array.offset + array.nbytes


def _record(path: Path) -> dict:
    """What meta.json records of the array file ``path``: its shape, dtype and :func:`sampled_digest`."""
    sized = _npy_size(path)
    assert sized is not None
    return {"shape": list(sized[0]), "dtype": str(sized[1]), "sample": sampled_digest(path)}


def _untrusted(path: Path, spec: object) -> str:
    """Why the array file ``path`` is not the one meta.json records as ``spec`` (:func:`_record`), said as the end of
    "the prepared graph in …"; ``""`` when it is."""
    name = path.name
    sized = _npy_size(path) if path.is_file() else None
    if sized is None or path.stat().st_size != sized[2]:
        return f"is incomplete ({name} is missing or truncated)"
    if not isinstance(spec, dict) or [list(sized[0]), str(sized[1])] != [spec.get("shape"), spec.get("dtype")]:
        return f"holds a {name} whose shape or dtype is not the one meta.json records"
    if sampled_digest(path) != spec.get("sample"):
        return f"holds a {name} whose contents are not the ones written (replaced since)"
    return ""


#: What every meta.json gca writes holds (a folder whose meta.json lacks one is not used).
_META_KEYS = (
    "identity",
    "digest",
    "num_nodes",
    "num_edges",
    "directed",
    "graph_warnings",
    "features",
    "feature_shape",
    "arrays",
    "loaded",
)


def _inconsistent(meta: dict) -> str:
    """What in ``meta`` disagrees with itself (node, edge and feature counts against the arrays' shapes), or ``""``."""
    arrays, n = meta["arrays"], meta["num_nodes"]
    if not isinstance(arrays, dict) or not all(isinstance(a, dict) for a in arrays.values()):
        return "arrays"
    shape = {name: spec.get("shape") for name, spec in arrays.items()}
    expected = {"edge_index": [2, meta["num_edges"]], "indptr": [n + 1]}
    features = meta["feature_shape"]
    if not (isinstance(features, list) and len(features) == 2 and features[0] == n):
        return "feature_shape"
    if meta["features"] == "dense":
        expected["x"] = features
    else:
        expected["x_indptr"] = [n + 1]
    for name, want in expected.items():
        if shape.get(name) != want:
            return name
    for name in ("y", "edge_weight", "edge_attr"):
        if name in shape and (shape[name] or [None])[0] != (meta["num_edges"] if name.startswith("edge") else n):
            return name
    return ""
