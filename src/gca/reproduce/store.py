"""The run store: one JSON file per finished run, written atomically, found again by the run's key.

The key is a digest of everything that determines a run's result — dataset, method, the resolved configuration,
the plan's settings, the seed — and of the gca version, so a changed setting or a new release never reuses an
old result. A run whose file exists is never repeated: an interrupted reproduction continues where it stopped. A
run that failed (training collapsed or diverged: ``accuracy`` null, ``error`` its reason) is a finished run too —
the same seed and settings fail again — so its record is kept and read like any other.

Each record carries ``digest``, the SHA-256 of its run key and its canonical JSON (:func:`record_digest`), checked
on every read: a record edited by hand, copied over another run's file or without a digest is refused
(:class:`RunFileError`), never read as numbers or as a failed run.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any

from ..choices import canonical_name
from ..errors import UserError
from ..io import atomic_write_json, key_digest, read_json
from .plan import Run


class RunFileError(UserError):
    """A file in ``OUT/runs`` that is not a finished run's record."""


def _json(value: Any) -> Any:
    """``value`` as it reads back from JSON (tuples become lists), to compare a record with its run."""
    return json.loads(json.dumps(value, sort_keys=True, default=str))


#: The field of a run record that holds :func:`record_digest`.
DIGEST = "digest"


def record_digest(record: dict[str, Any], key: str) -> str:
    """The SHA-256 (hex) of run key ``key``, a newline and ``record``'s canonical JSON (sorted keys, no spaces,
    UTF-8; its :data:`DIGEST` field left out): what :meth:`RunStore.put` writes into a record and every read checks.
    ``record`` is as JSON holds it (tuples as lists)."""
    body = {name: value for name, value in record.items() if name != DIGEST}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(f"{key}\n{canonical}".encode()).hexdigest()


def _problem(record: Any, run: Run, key: str) -> str:
    """What is wrong with a run record as read from the file of ``run`` (key ``key``); '' when nothing is. A record
    this store wrote names its own key, carries its run's method, dataset, seed, settings (and, for GCA, the
    resolved configuration) and the digest of its content with that key: one copied over another run's file,
    emptied or edited is not taken as that run."""
    if not isinstance(record, dict):
        return "not readable JSON" if record is None else f"a JSON {type(record).__name__}, not an object"
    if record.get("run") != key:
        named = record.get("run")
        return "it names no run" if named is None else f"it is the record of run {named!r}, not of this file's"
    expected = {"method": run.method, "dataset": run.dataset, "seed": run.seed, "settings": dict(run.settings)}
    if run.method == "gca":
        expected["config"] = dict(run.config)
    for name, value in expected.items():
        if name not in record:
            return f"it has no {name!r}"
        if _json(record[name]) != _json(value):
            return f"its {name!r} is not this run's"
    if DIGEST not in record:
        return "it carries no digest of its content: written by a gca before records had one, or edited"
    if record[DIGEST] != record_digest(record, key):
        return "its content does not match its digest: it was changed after gca wrote it"
    if "accuracy" not in record:
        return "it has no 'accuracy'"
    accuracy = record["accuracy"]
    if accuracy is None:  # a run that failed (collapsed, diverged): reported as such, with its error
        return "" if isinstance(record.get("error"), str) else "it has no accuracy and no error"
    if not isinstance(accuracy, dict):
        return f"its accuracy is a {type(accuracy).__name__}"
    mean = accuracy.get("mean")
    if isinstance(mean, bool) or not isinstance(mean, int | float) or not math.isfinite(mean) or not 0 <= mean <= 100:
        return f"its accuracy's mean is {mean!r}, not a percentage"
    values = accuracy.get("runs")
    if values is not None and (
        not isinstance(values, list)
        or not values
        or not all(isinstance(v, int | float) and not isinstance(v, bool) and 0 <= v <= 100 for v in values)
    ):
        return "its per-split accuracies are not percentages"
    return ""


def run_key(run: Run) -> str:
    from .. import __version__

    digest = key_digest(
        [run.dataset, run.method, list(run.settings), list(run.config), run.seed, __version__], size=6, default=str
    )
    return f"{canonical_name(run.dataset)}-{run.method.replace('+', '-')}-{digest}-seed{run.seed}"


class RunStore:
    """Finished runs in ``folder`` (``OUT/runs``), one ``<run key>.json`` each; the folder is made by the first
    :meth:`put`."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)

    def path(self, run: Run) -> Path:
        return self.folder / f"{run_key(run)}.json"

    def get(self, run: Run) -> dict[str, Any] | None:
        """The run's record, or ``None`` if it has not finished (a half-written file never exists). A file that is
        there but not a record this store wrote for ``run`` (edited by hand, damaged, another run's) is a
        :class:`RunFileError`."""
        path = self.path(run)
        if not path.exists():
            return None
        record = read_json(path)
        problem = _problem(record, run, path.stem)
        if problem:
            raise RunFileError(
                f"{path} is not a run record gca wrote ({problem}); delete it and run again to redo that run"
            )
        return record

    def put(self, run: Run, record: dict[str, Any]) -> None:
        """Write ``record`` as the run's file (atomically), with the run's key and the digest of both. ``record``
        holds JSON-ready fields: method, dataset, seed, settings (GCA: config), ``accuracy`` — or ``accuracy``
        ``None`` and ``error``, the reason the run failed."""
        self.folder.mkdir(parents=True, exist_ok=True)
        key = run_key(run)
        # as a read returns it (tuples become lists), so that the digest is the read's; not JSON: an error
        written = json.loads(json.dumps({"run": key, **record}, allow_nan=False))
        written.pop(DIGEST, None)
        atomic_write_json(self.path(run), {**written, DIGEST: record_digest(written, key)})
