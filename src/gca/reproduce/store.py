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


def _problem(record: Any) -> str:
    """What is wrong with a run record as read from its file ('' when nothing is)."""
    if not isinstance(record, dict):
        return "not readable JSON" if record is None else f"a JSON {type(record).__name__}, not an object"
    accuracy = record.get("accuracy")
    if accuracy is None:
        return ""  # a run that diverged or was not judged: reported as such
    if not isinstance(accuracy, dict):
        return f"its accuracy is a {type(accuracy).__name__}"
    mean = accuracy.get("mean")
    if isinstance(mean, bool) or not isinstance(mean, int | float) or not math.isfinite(mean) or not 0 <= mean <= 100:
        return f"its accuracy's mean is {mean!r}, not a percentage"
    return ""


def run_key(run: Run) -> str:
    from .. import __version__

    blob = json.dumps([run.dataset, run.method, list(run.settings), list(run.config), run.seed, __version__],
                      sort_keys=True, default=str)  # fmt: skip
    digest = hashlib.sha1(blob.encode()).hexdigest()[:12]
    return f"{canonical_name(run.dataset)}-{run.method.replace('+', '-')}-{digest}-seed{run.seed}"


class RunStore:
    """Finished runs in ``folder`` (``OUT/runs``)."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)

    def path(self, run: Run) -> Path:
        return self.folder / f"{run_key(run)}.json"

    def get(self, run: Run) -> dict[str, Any] | None:
        """The run's record, or ``None`` if it has not finished (a half-written file never exists). A file that is
        there but not a record this store wrote (edited by hand, damaged) is a :class:`RunFileError`."""
        path = self.path(run)
        if not path.exists():
            return None
        record = read_json(path)
        problem = _problem(record)
        if problem:
            raise RunFileError(f"{path} is not a run record gca wrote ({problem}); delete it and run again to redo "
                               "that run")  # fmt: skip
        return record

    def put(self, run: Run, record: dict[str, Any]) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        atomic_write_json(self.path(run), {"run": run_key(run), **record})
