"""Fitted models kept between fits: ``GCA(config, memory="cache")`` trains once per setting and graph.

GCA learns without labels and on the whole graph (the transductive setting of the paper): which nodes a fit is given
(:class:`~gca.train.estimator.GraphNodes`) and their labels are never read. So every fold and every classifier
setting of a scikit-learn search that leaves GCA's settings alone would train the same model again —
``GridSearchCV(Pipeline([("gca", GCA(...)), ("clf", LogisticRegression())]), {"clf__C": [0.1, 1, 10]}, cv=2)``
trains it 7 times (2 folds × 3 candidates, and the refit). Given a ``memory`` — a folder, or a ``joblib.Memory``,
scikit-learn's convention (``Pipeline(memory=...)``, ``AgglomerativeClustering(memory=...)``) — a fit looks its
model up by :func:`fit_key` and trains only when it is not there: once per distinct setting.

**What the key holds** — exactly what training reads: every field of the configuration (the seed included), the
device and the loss backend and precision ``auto`` resolves to there (a GPU without bf16 tensor cores trains in
fp32 what another trains in bf16, under the same device name), the versions of gca, PyTorch and PyTorch
Geometric, a digest of gca's own source files (a development checkout whose training code changed without a new
version number does not read a model the old code trained), and the cleaned graph's
:meth:`~gca.graph.graph.Graph.fingerprint` (node count, direction, edges, raw feature values, edge weights and edge
features) with the raw features' form. The fingerprint is taken of the graph's contents at every fit, so a graph
changed in place — through PyTorch or a NumPy view — is another key, never a stale hit; two graphs that clean to
the same one (each edge listed once with ``directed=False``, or both ways) share one. Nothing of the object's
identity enters it.

**When it is not used** (the fit trains, and a ``UserWarning`` says why): a user's ``encoder``, ``objective``,
``batches`` or ``placement`` (their code cannot be keyed: an edited ``forward`` would read as the same part), metric
``loggers`` or a fit option that watches or writes the training (``checkpoint``, ``resume``, ``on_epoch``,
``on_update``, ``embeddings_file``, ``scratch``), and a :class:`~gca.graph.graph.Graph` or
:class:`~gca.augment.prepared.PreparedGraph` given instead of a ``Data`` (their features and views may come from
other settings than the estimator's).

**What is kept**: the model's weights, ``in_channels``, the losses, the provenance, the embeddings and the timings of
the training that made them — a fit read from memory has the very ``embedding_`` and ``model`` of that training
(``from_memory_`` says it was read), and ``train_seconds`` is that training's. Where joblib keeps files (a folder
given), processes share them: two fits of one key at once (``GridSearchCV(n_jobs=2)``) take turns under a lock
(``flock``), so the second reads what the first trained. ``memory.clear()`` (joblib's) forgets everything.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import scipy.sparse as sp
import torch

from .. import __version__
from ..config import ConfigError
from ..graph.graph import Graph


def check_memory(memory: Any) -> None:
    """Refuse a ``memory`` that is neither ``None``, a folder (``str`` or a path) nor an object with joblib.Memory's
    ``cache`` (one line, a :class:`~gca.config.ConfigError`).

    Parameters
    ----------
    memory
        What ``GCA(memory=…)`` was given.
    """
    if memory is None or isinstance(memory, (str, os.PathLike)) or callable(getattr(memory, "cache", None)):
        if isinstance(memory, (str, os.PathLike)) and str(memory).strip() == "":
            raise ConfigError("memory is an empty folder name; give a folder (memory='cache') or None")
        return
    raise ConfigError(f"memory must be a folder (a str or Path), a joblib.Memory or None, got {memory!r}")


def open_memory(memory: Any) -> Any:
    """The ``joblib.Memory`` of ``memory`` (a folder is opened with ``verbose=0``, as scikit-learn opens one);
    ``None`` where nothing is kept (``None``, or a ``joblib.Memory`` without a location).

    Parameters
    ----------
    memory
        ``None``, a folder, or an object with joblib.Memory's interface.
    """
    if memory is None:
        return None
    if isinstance(memory, (str, os.PathLike)):
        import joblib

        if Path(memory).exists() and not Path(memory).is_dir():
            raise ConfigError(f"memory {memory} is a file, not a folder; give a folder to keep fitted models in")
        memory = joblib.Memory(location=os.fspath(memory), verbose=0)
    return memory if getattr(memory, "location", True) is not None else None


@functools.lru_cache(maxsize=1)
def source_digest() -> str:
    """A digest of the Python files of the installed ``gca`` package (their paths and bytes), read once per process:
    part of :func:`fit_key`, so that a model kept by other code is not read as this code's."""
    root = Path(__file__).resolve().parents[1]
    digest = hashlib.blake2b(digest_size=16)
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def fit_key(config: dict, device: torch.device, graph: Graph) -> str:
    """The digest naming a fitted model: the configuration, the device and the objective resolved there, the
    versions, gca's source and the cleaned graph's contents (module docstring).

    Parameters
    ----------
    config
        ``GCAConfig.to_dict()`` of the estimator.
    device
        Where it trains.
    graph
        The cleaned graph it trains on.
    """
    import torch_geometric

    from ..objective.selection import resolve_objective

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
        "graph": graph.fingerprint(),
        "raw_features": [sp.issparse(raw), str(raw.dtype)],
    }
    text = json.dumps(record, sort_keys=True, default=repr)
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def _trained(key: str, train: Callable[[], dict]) -> dict:
    """What a fit of ``key`` keeps (:func:`remembered`); ``train`` is not part of what joblib keys it by."""
    return train()


def remembered(memory: Any, key: str, train: Callable[[], dict]) -> tuple[dict, bool]:
    """``(kept, trained)``: what ``memory`` holds for ``key``, or what ``train()`` returns (then kept there), and
    whether ``train`` ran. Where ``memory`` keeps files, the lookup and the training hold ``.gca-fit-KEY.lock`` in
    its folder, so another process fitting the same key waits and then reads.

    Parameters
    ----------
    memory
        A ``joblib.Memory`` (:func:`open_memory`).
    key
        :func:`fit_key` of the fit.
    train
        Trains and returns what is kept.
    """
    from ..outputs.folder import hold_folder, release_folder

    ran = []

    def run() -> dict:
        ran.append(True)
        return train()

    location = getattr(memory, "location", None)
    handle = None
    if isinstance(location, (str, os.PathLike)):
        Path(location).mkdir(parents=True, exist_ok=True)
        handle = hold_folder(Path(location), f".gca-fit-{key}.lock", wait=True)
    try:
        kept = memory.cache(_trained, ignore=["train"])(key, run)
    finally:
        release_folder(handle)
    return kept, bool(ran)
