"""The environment variables gca reads, each checked where it is read: a malformed value is one line naming the
variable, never a traceback from ``int("two")`` deep inside a run.

torchrun's ``WORLD_SIZE``, ``RANK`` and ``LOCAL_RANK``; ``GCA_DIST_TIMEOUT`` (seconds a collective waits);
``GCA_DATA_DIR`` and ``GCA_CACHE_DIR`` (folders; an empty value counts as unset). Torch-free, like the rest of what
the command line needs before the libraries load.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from .errors import UserError


class EnvironmentSettingError(UserError, ValueError):
    """An environment variable holds a value gca cannot use."""


#: What an integer variable's error line adds by default: the torchrun variables are the usual integer ones.
TORCHRUN_NOTE = " (torchrun sets WORLD_SIZE, RANK and LOCAL_RANK itself)"


def env_int(name: str, default: int, low: int, high: int | None = None, note: str = TORCHRUN_NOTE) -> int:
    span = f"in [{low}, {high}]" if high is not None else f"≥ {low}"
    return _checked(
        name,
        default,
        int,
        lambda v: v >= low and (high is None or v <= high),
        f"an integer {span}; unset it or correct it{note}",
    )


def env_seconds(name: str, default: float) -> float:
    return _checked(
        name,
        default,
        float,
        lambda v: math.isfinite(v) and v > 0,
        "a positive number of seconds; unset it or correct it",
    )


def _checked(name: str, default, parse, valid, expected: str):
    """The variable ``name`` parsed, or ``default`` when unset or blank; one line when it is not ``expected``."""
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = parse(text)
    except ValueError:
        value = None
    if value is None or not valid(value):
        raise EnvironmentSettingError(f"the environment variable {name}={text!r} is not {expected}")
    return value


def env_folder(name: str, default: Path) -> Path:
    text = os.environ.get(name, "")
    return Path(text) if text.strip() else default


def world_size() -> int:
    """How many processes torchrun started (1 outside torchrun)."""
    return env_int("WORLD_SIZE", 1, 1)


def rank() -> int:
    """This process's rank under torchrun (0 outside torchrun)."""
    size = world_size()
    return env_int("RANK", 0, 0, size - 1)


def local_rank() -> int:
    return env_int("LOCAL_RANK", 0, 0)
