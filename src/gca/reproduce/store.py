"""The run store: one JSON file per finished run, written atomically, found again by the run's key.

The key is a digest of everything that determines a run's result — dataset, method, the resolved configuration,
the plan's settings, the seed — and of the gca version, so a changed setting or a new release never reuses an
old result. A run whose file exists is never repeated: an interrupted reproduction continues where it stopped.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any

from ..errors import UserError
from ..io import atomic_write_json, read_json
from ..names import canonical_name
from .plan import Run


class RunFileError(UserError):
    """A file in ``OUT/runs`` that is not a finished run's record."""


def _json(value: Any) -> Any:
    """``value`` as it reads back from JSON (tuples become lists), to compare a record with its run."""
    return json.loads(json.dumps(value, sort_keys=True, default=str))


def _problem(record: Any, run: Run, key: str) -> str:
    """What is wrong with a run record as read from the file of ``run`` (key ``key``); '' when nothing is. A record
    this store wrote names its own key and carries its run's method, dataset, seed, settings (and, for GCA, the
    resolved configuration): one copied over another run's file, or emptied, is not taken as that run."""
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
    if "accuracy" not in record:
        return "it has no 'accuracy'"
    accuracy = record["accuracy"]
    if accuracy is None:  # a run that diverged: reported as such, with its error
        return "" if isinstance(record.get("error"), str) else "it has no accuracy and no error"
    if not isinstance(accuracy, dict):
        return f"its accuracy is a {type(accuracy).__name__}"
    mean = accuracy.get("mean")
    if isinstance(mean, bool) or not isinstance(mean, int | float) or not math.isfinite(mean) or not 0 <= mean <= 100:
        return f"its accuracy's mean is {mean!r}, not a percentage"
    values = accuracy.get("runs")
    if values is not None and (not isinstance(values, list) or not values or not all(
            isinstance(v, int | float) and not isinstance(v, bool) and 0 <= v <= 100 for v in values)):  # fmt: skip
        return "its per-split accuracies are not percentages"
    return ""


def run_key(run: Run) -> str:
    from .. import __version__

    blob = json.dumps([run.dataset, run.method, list(run.settings), list(run.config), run.seed, __version__],
                      sort_keys=True, default=str)  # fmt: skip
    digest = hashlib.sha1(blob.encode()).hexdigest()[:12]
    return f"{canonical_name(run.dataset)}-{run.method.replace('+', '-')}-{digest}-seed{run.seed}"


class RunStore:
    """Finished runs in ``folder`` (``OUT/runs``).

    Parameters
    ----------
    folder
        The folder of the run files, one ``<run key>.json`` per finished run; made by the first :meth:`put`.
    """

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)

    def path(self, run: Run) -> Path:
        return self.folder / f"{run_key(run)}.json"

    def get(self, run: Run) -> dict[str, Any] | None:
        """The run's record, or ``None`` if it has not finished (a half-written file never exists). A file that is
        there but not a record this store wrote (edited by hand, damaged) is a :class:`RunFileError`.

        Parameters
        ----------
        run
            The planned run; its file is found by :func:`run_key`, and the record must match its method, dataset,
            seed and settings (and, for GCA, its configuration).
        """
        path = self.path(run)
        if not path.exists():
            return None
        record = read_json(path)
        problem = _problem(record, run, path.stem)
        if problem:
            raise RunFileError(f"{path} is not a run record gca wrote ({problem}); delete it and run again to redo "
                               "that run")  # fmt: skip
        return record

    def put(self, run: Run, record: dict[str, Any]) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        atomic_write_json(self.path(run), {"run": run_key(run), **record})
