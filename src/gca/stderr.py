"""What gca says on standard error: each line in one write.

``print(line, file=sys.stderr)`` writes the text and its newline separately; with ``PYTHONUNBUFFERED`` (common
in containers and CI) each write goes straight to the file descriptor, so two processes of a torchrun run saying
their lines at once can interleave them into ``line0line1\\n\\n``. One ``write`` of the whole line — under
``PIPE_BUF`` (4,096 bytes on Linux), atomic on a pipe — keeps every line whole.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping

from .errors import render

#: How the lines gca prints name an option (:func:`gca.errors.option`): ``None``, in Python terms; the command line
#: sets its flags (:func:`name_options`) for the command it runs.
_flags: Mapping[str, str] | None = None


def name_options(flags: Mapping[str, str] | None) -> None:
    """Name the options in the lines printed from now on by ``flags`` (:func:`gca.errors.render`), or in Python
    terms (``None``).

    Parameters
    ----------
    flags
        The command line's flags whose names differ from their parameters'; ``None``: Python terms.
    """
    global _flags
    _flags = flags


def spoken(text: str) -> str:
    """``text`` with its options named as the printed lines name them (:func:`name_options`).

    Parameters
    ----------
    text
        A message that may hold options (:func:`gca.errors.option`).
    """
    return render(text, _flags)


def say(line: str) -> None:
    """One line to standard error, in one write, flushed at once (a log file shows it as it happens); its options
    are named as :func:`spoken` names them.

    Parameters
    ----------
    line
        The line (without its newline).
    """
    stream = sys.stderr
    stream.write(spoken(line) + "\n")
    stream.flush()


def warn(message: str) -> None:
    """One warning line on stderr, ``gca: warning: message``; the run goes on.

    Parameters
    ----------
    message
        The warning, one line.
    """
    say(f"gca: warning: {message}")
