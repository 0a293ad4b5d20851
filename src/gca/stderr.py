"""What gca says on standard error: each line in one write, so that the lines of several processes never
interleave (docs/design/application.md).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping

from .errors import render

#: How the lines gca prints name an option (:func:`gca.errors.option`): ``None``, in Python terms; the command line
#: sets its flags (:func:`name_options`) for the command it runs.
_flags: Mapping[str, str] | None = None


def name_options(flags: Mapping[str, str] | None) -> None:
    """Name the options in the lines printed from now on by ``flags`` (:func:`gca.errors.render`: the command
    line's flags whose names differ from their parameters'), or in Python terms (``None``)."""
    global _flags
    _flags = flags


def spoken(text: str) -> str:
    """``text`` with its options (:func:`gca.errors.option`) named as the printed lines name them
    (:func:`name_options`)."""
    return render(text, _flags)


def say(line: str) -> None:
    """One line to standard error, in one write, flushed at once (a log file shows it as it happens); its options
    are named as :func:`spoken` names them."""
    stream = sys.stderr
    stream.write(spoken(line) + "\n")
    stream.flush()


def warn(message: str) -> None:
    """One warning line on stderr, ``gca: warning: message``; the run goes on."""
    say(f"gca: warning: {message}")
