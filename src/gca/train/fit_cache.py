"""Fitted models kept between fits: ``GCA(config, memory="cache")`` trains once per setting and graph.

A fit given a ``memory`` — a folder, or a ``joblib.Memory`` (its folder) — looks its model up by :func:`fit_key` and
trains only when it is not there. The key is exactly what training reads: every configuration field (the seed
included), the device and the loss backend and precision ``auto`` resolves to there, the versions of gca, PyTorch
and PyTorch Geometric, a digest of gca's source (:func:`source_digest`) and the cleaned graph's
:meth:`~gca.graph.graph.Graph.fingerprint`, with the raw features' form — never the nodes or labels a fit is given.
Memory is not used (the fit trains, a ``UserWarning`` says why) with a user's ``encoder``, ``objective``,
``batches`` or ``placement``, with ``loggers``, with a fit option that watches or writes the training (``checkpoint``,
``resume``, ``on_epoch``, ``on_update``, ``embeddings_file``, ``scratch``), or on a :class:`~gca.graph.graph.Graph`
or :class:`~gca.augment.prepared.PreparedGraph`.

Each model is one file, ``FOLDER/joblib/gca-fits/KEY.pt``, of tensors and plain values (weights, ``in_channels``,
losses, provenance, embeddings, timings) with its key and :func:`graph_claim`; a fit read from it has that training's
``embedding_``, ``model`` and ``train_seconds``, and ``from_memory_`` is ``True``. A file is served only when
:func:`read_entry` accepts it and its weights load; otherwise the fit trains, a ``UserWarning`` says why, and the new
model replaces it. Nothing is written through a symbolic link (a lock file or subfolder that is one leaves the memory
unused); a folder that cannot be written serves what it holds and never raises an ``OSError``. Two fits of one key,
in any processes, take turns under ``FOLDER/.gca-fit-KEY.lock``. Design notes: docs/design/training.md.
"""

from __future__ import annotations

import errno
import functools
import hashlib
import math
import os
import stat
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import scipy.sparse as sp
import torch

from ..config import ConfigError
from ..errors import UserError
from ..graph.graph import Graph
from ..io import atomic_write, key_digest
from ..version import __version__

#: The format marker of a kept model's file.
FIT_FORMAT = "gca-fit-1"

#: Where in the memory's folder the models are kept: under joblib's own subfolder, so that
#: ``joblib.Memory(folder).clear()`` removes them as it removes what joblib keeps.
ENTRIES = ("joblib", "gca-fits")


def check_memory(memory: Any) -> None:
    """Refuse a ``memory`` that is neither ``None``, a folder (``str`` or a path) nor an object with
    joblib.Memory's ``location`` (a folder or ``None``) — one line, a :class:`~gca.config.ConfigError`."""
    if isinstance(memory, (str, os.PathLike)):
        if str(memory).strip() == "":
            raise ConfigError("memory is an empty folder name; give a folder (memory='cache') or None")
        return
    if memory is None or isinstance(getattr(memory, "location", False), (str, os.PathLike, type(None))):
        return
    raise ConfigError(f"memory must be a folder (a str or Path), a joblib.Memory or None, got {memory!r}")


def memory_folder(memory: Any) -> Path | None:
    """The folder ``memory`` keeps fitted models in (a ``joblib.Memory``'s location); ``None`` where nothing is
    kept (``None``, or a ``joblib.Memory`` without a location). A path that names a file is a ``ConfigError``."""
    location = memory if memory is None or isinstance(memory, (str, os.PathLike)) else memory.location
    if location is None:
        return None
    folder = Path(location)
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"memory {folder} is a file, not a folder; give a folder to keep fitted models in")
    return folder


@functools.lru_cache(maxsize=1)
def source_digest() -> str:
    """A digest of the Python files of the installed ``gca`` package (their paths and bytes), read once per process:
    part of :func:`fit_key`, so that a model kept by other code is not read as this code's."""
    root = Path(__file__).resolve().parents[1]
    digest = hashlib.blake2b(digest_size=16)
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def fit_key(config: dict, device: torch.device, graph: Graph, fingerprint: str | None = None) -> str:
    """The digest naming a fitted model (module docstring).

    Parameters
    ----------
    config
        ``GCAConfig.to_dict()`` of the estimator.
    fingerprint
        ``graph.fingerprint()`` where the caller has it already; ``None``: taken here.
    """
    import torch_geometric

    from ..precision import resolve_objective

    raw = graph.raw_features
    record = {
        "gca": __version__,
        "gca_source": source_digest(),
        "torch": torch.__version__,
        "torch_geometric": torch_geometric.__version__,
        "config": config,
        "device": str(device),
        # what loss_backend and precision "auto" become there: "cuda" is bf16 on one GPU and fp32 on another
        "objective": list(resolve_objective(config["loss_backend"], config["precision"], device)),
        "graph": fingerprint or graph.fingerprint(),
        "raw_features": [sp.issparse(raw), str(raw.dtype)],
    }
    return key_digest(record, default=repr)


def graph_claim(graph: Graph, fingerprint: str) -> dict[str, Any]:
    """What a kept model says of the graph it was trained on, and is checked against before it is served."""
    return {"fingerprint": fingerprint, "num_nodes": int(graph.num_nodes), "num_features": int(graph.num_features)}


class _Unusable(Exception):
    """The memory cannot be used for this fit; the message says why (part of one warning line)."""


def _said(exc: OSError) -> str:
    return exc.strerror or str(exc)


def _entries(root: Path) -> Path:
    """The folder of kept models under ``root``, made where missing; a subfolder that is a symbolic link, or one
    that cannot be made, is :class:`_Unusable`."""
    folder = root
    for part in ENTRIES:
        folder = folder / part
        if folder.is_symlink():
            raise _Unusable(f"its folder {folder} is a symbolic link, which gca never writes through; remove it")
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise _Unusable(f"its folder {folder} cannot be made ({_said(exc)})") from None
    return folder


def _lock(root: Path, key: str) -> Any:
    """The lock of ``key`` in ``root`` (:func:`~gca.io.hold_folder`), or ``None`` where it cannot be
    taken (a read-only folder: its models are read without it); a lock file that is a link is :class:`_Unusable`."""
    from ..io import hold_folder

    lock = root / f".gca-fit-{key}.lock"
    if lock.is_symlink():
        raise _Unusable(f"its lock file {lock} is a symbolic link, which gca never writes through; remove it")
    try:
        return hold_folder(root, lock.name, wait=True)  # opened without following a link made meanwhile
    except OSError:
        return None


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0


def read_entry(path: Path, key: str, claim: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
    """``(entry, "")`` where ``path`` holds the model kept for ``key`` on the graph ``claim`` describes, else
    ``(None, why)`` (``why`` empty without a file). Read with ``torch.load(weights_only=True)`` from a regular file
    opened without following a link. An entry is accepted when it is gca's format, holds this key, claims this graph,
    passes :func:`~gca.train.checkpoint.check_checkpoint`, reads the graph's feature width, has one finite float32
    embedding row per node, and finite, non-negative timings."""
    from .checkpoint import MODEL_FORMAT, CheckpointError, check_checkpoint

    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return None, ""
    except OSError as exc:
        link = exc.errno == errno.ELOOP or path.is_symlink()
        return None, "it is a symbolic link, which gca does not read" if link else f"it cannot be read ({_said(exc)})"
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            return None, "it is not a regular file"
        try:
            entry = torch.load(f, map_location="cpu", weights_only=True)
        except Exception as exc:  # noqa: BLE001 - any unreadable file is the same: not served
            if "GLOBAL" in str(exc):  # the unpickler met a reference to code and refused it
                return None, "it refers to Python objects other than tensors and plain values (nothing in it was run)"
            return None, f"it is truncated or not written by gca ({type(exc).__name__})"
    if not isinstance(entry, dict) or entry.get("format") != FIT_FORMAT:
        return None, "it is not a model gca kept (no format marker of gca's)"
    kept = entry.get("graph")
    if kept != claim:
        if isinstance(kept, dict) and (kept.get("num_nodes"), kept.get("num_features")) != (
            claim["num_nodes"],
            claim["num_features"],
        ):
            return None, (
                f"it was kept for another graph ({kept.get('num_nodes')!r} nodes, "
                f"{kept.get('num_features')!r} features; this one has {claim['num_nodes']} nodes, "
                f"{claim['num_features']} features)"
            )
        return None, "it was kept for another graph (its contents differ from this one's)"
    if entry.get("key") != key:
        return None, "it was kept for another setting (its key differs)"
    state = entry.get("state")
    if not isinstance(state, dict) or state.get("format") != MODEL_FORMAT:
        return None, "it holds no model checkpoint"
    try:
        check_checkpoint(state, path)
    except CheckpointError as exc:
        return None, str(exc)
    if state["in_channels"] != claim["num_features"]:
        return None, f"its model reads {state['in_channels']} features, not this graph's {claim['num_features']}"
    embedding = entry.get("embedding")
    if not (
        isinstance(embedding, torch.Tensor)
        and embedding.dtype == torch.float32
        and embedding.dim() == 2
        and embedding.shape[0] == claim["num_nodes"]
        and bool(torch.isfinite(embedding).all())
    ):
        return None, f"its embeddings are not {claim['num_nodes']} rows of finite float32 values"
    if not (_number(entry.get("train_seconds")) and _number(entry.get("embed_seconds"))):
        return None, "its timings are not finite numbers of seconds"
    return entry, ""


def remembered(
    memory: Path, key: str, claim: dict[str, Any], train: Callable[[], dict], restore: Callable[[dict], None]
) -> bool:
    """Serve the model ``memory`` keeps for ``key`` (``restore(entry)``), or ``train()`` and keep what it returns;
    whether ``train`` ran. Lookup and training hold the key's lock, so another process fitting it waits, then reads.
    An entry that fails :func:`read_entry` or whose weights do not load is not served; a folder that cannot be used
    or written does not stop the fit — each said in one ``UserWarning`` line.

    Parameters
    ----------
    train
        Trains and returns what is kept: ``state`` (a model checkpoint), ``embedding``, ``train_seconds`` and
        ``embed_seconds``.
    restore
        Makes the estimator the fit an entry kept; raises where its weights do not fit.
    """
    from ..io import release_folder

    try:
        path = _entries(memory) / f"{key}.pt"
        handle = _lock(memory, key)
    except _Unusable as exc:
        warnings.warn(f"GCA's memory is not used for this fit, which trains: {exc}", UserWarning, stacklevel=3)
        train()
        return True
    try:
        entry, why = read_entry(path, key, claim)
        if entry is not None:
            try:
                restore(entry)
                return False
            except (KeyError, TypeError, ValueError, RuntimeError, UserError) as exc:
                why = f"its weights do not fit this model ({type(exc).__name__}: {' '.join(str(exc).split())})"
        if why:
            warnings.warn(
                f"GCA's memory did not read the model kept in {path}: {why}; this fit trains again and "
                "keeps its own there",
                UserWarning,
                stacklevel=3,
            )
        kept = train()
        entry = {"format": FIT_FORMAT, "key": key, "graph": claim, **kept}
        try:
            atomic_write(path, lambda f: torch.save(entry, f))
        except OSError as exc:
            warnings.warn(
                f"this fit's model is not kept in GCA's memory: {path} cannot be written ({_said(exc)}); "
                "the fit trained and uses it",
                UserWarning,
                stacklevel=3,
            )
        return True
    finally:
        release_folder(handle)
