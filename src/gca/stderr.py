"""What gca says on standard error: each line in one write.

``print(line, file=sys.stderr)`` writes the text and its newline separately; with ``PYTHONUNBUFFERED`` (common
in containers and CI) each write goes straight to the file descriptor, so two processes of a torchrun run saying
their lines at once can interleave them into ``line0line1\\n\\n``. One ``write`` of the whole line — under
``PIPE_BUF`` (4,096 bytes on Linux), atomic on a pipe — keeps every line whole.
"""

from __future__ import annotations

import sys


def say(line: str) -> None:
    """One line to standard error, in one write, flushed at once (a log file shows it as it happens).

    Parameters
    ----------
    line
        The line (without its newline).
    """
    stream = sys.stderr
    stream.write(line + "\n")
    stream.flush()


def warn(message: str) -> None:
    """One warning line on stderr, ``gca: warning: message``; the run goes on.

    Parameters
    ----------
    message
        The warning, one line.
    """
    say(f"gca: warning: {message}")
