"""Writing result files so that an interruption (Ctrl-C, kill -9, a full disk) never leaves a half-written one."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any


def atomic_write(path: str | Path, write: Callable[[IO[bytes]], Any]) -> None:
    """Call ``write`` on a temporary file in the target's folder, flush it to disk, then rename it over ``path``.

    The rename is atomic on POSIX and Windows file systems, so readers see the old file or the new one, never a
    part; the temporary file is removed if ``write`` fails.
    """
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600 files; results get the usual permissions
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write_text(path: str | Path, text: str) -> None:
    atomic_write(path, lambda f: f.write(text.encode()))


def atomic_write_json(path: str | Path, value: Any) -> None:
    atomic_write_text(path, json.dumps(value, indent=2) + "\n")


def read_json(path: str | Path) -> Any | None:
    """The JSON value in ``path``, or ``None`` if it is missing or unreadable (e.g. from an older, broken run)."""
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None
