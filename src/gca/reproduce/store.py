"""The run store: one JSON file per finished run, written atomically, found again by the run's key.

The key is a digest of everything that determines a run's result — dataset, method, the resolved configuration,
the plan's settings, the seed — and of the gca version, so a changed setting or a new release never reuses an
old result. A run whose file exists is never repeated: an interrupted reproduction continues where it stopped.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from ..io import atomic_write_json, read_json
from ..names import canonical_name
from .plan import Run


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
        """The run's record, or ``None`` if it has not finished (a half-written file never exists)."""
        return read_json(self.path(run))

    def put(self, run: Run, record: dict[str, Any]) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        atomic_write_json(self.path(run), {"run": run_key(run), **record})
