"""The one base class of every error a user can cause and fix, and how its message names an option.

Each module raises its own subclass (``ConfigError``, ``DatasetError``, ``GraphError``, ``TrainingError``, …) with
a message of one line that says what is wrong and what to do; the command line prints it as ``gca: error: …`` and
exits with status 2. Kept free of heavy imports so the command line can catch it before loading PyTorch.

A message names a setting the user can change with :func:`option`: the Python parameter, and optionally its value.
``str(error)`` — what a Python caller sees — says it in Python terms (``shots=3``, ``scheme='random'``);
:meth:`UserError.for_command_line` says the same message with the command line's flags (``--shots 3``,
``--eval-split random``), from a table of the flags whose names differ from the parameters' (:func:`render`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

# An option inside a message: OPEN name SEP python-value SEP command-line-value CLOSE (values empty when not given).
# Control characters no message holds otherwise; the marked text is a plain str, so an error pickles (torchrun,
# multiprocessing) as any other.
_OPEN, _SEP, _CLOSE = "\x02", "\x1f", "\x03"
_OPTION = re.compile(f"{_OPEN}([^{_SEP}]*){_SEP}([^{_SEP}]*){_SEP}([^{_CLOSE}]*){_CLOSE}")
_NO_VALUE = object()


def option(name: str, value: object = _NO_VALUE, command_line: str | None = None) -> str:
    """A setting named in a message: ``name`` (or ``name=value``) in Python terms, ``--name`` (or the flag the
    command line's table gives) on the command line (:func:`render`).

    Parameters
    ----------
    name
        The Python parameter (a keyword argument or a :class:`gca.config.GCAConfig` key); ``owner.name`` (e.g.
        ``hold_out_edges.val``) where the bare name is another parameter's too: Python terms say ``name``, the
        command line's table is looked up by ``owner.name`` first.
    value
        Its value, if the message names one: Python shows its ``repr`` (a path as a string), the command line its
        ``str``; ``True`` and ``False`` are a switch's on and off (``--resume``, ``--no-cache``).
    command_line
        The value as the command line writes it, where that differs from ``str(value)`` (``"10,10"`` for
        ``[10, 10]``); without ``value``, a placeholder the command line shows after the flag (``"N"``).
    """
    if value is _NO_VALUE:
        python, text = "", command_line or ""
    else:
        python = repr(os.fspath(value)) if isinstance(value, os.PathLike) else repr(value)
        text = str(value) if command_line is None else command_line
    return f"{_OPEN}{name}{_SEP}{python}{_SEP}{text}{_CLOSE}"


def render(message: str, flags: Mapping[str, str] | None = None) -> str:
    """``message`` with each :func:`option` in it said in Python terms (``flags`` ``None``: ``name`` or
    ``name=value``), or with the command line's flags.

    Parameters
    ----------
    flags
        The command line's flag of each parameter whose flag is not ``--`` + its name with ``_`` → ``-`` (keyed
        by ``owner.name`` or the bare name, :func:`option`). A flag that ends with ``=`` (``--set fanout=``) joins
        its value; a ``True`` value is the flag alone, ``False`` its ``--no-`` form. A key ``name=value`` (the
        Python value, e.g. ``"training='fast'"``) gives the whole text for that value.
    """

    def python(match: re.Match) -> str:
        name, value = match.group(1).rpartition(".")[2], match.group(2)
        return f"{name}={value}" if value else name

    def command_line(match: re.Match) -> str:
        name, value, text = match.groups()
        bare = name.rpartition(".")[2]
        for key in (f"{name}={value}", f"{bare}={value}") if value else ():
            if key in flags:
                return flags[key]
        flag = flags.get(name, flags.get(bare, "--" + bare.replace("_", "-")))
        if value in ("True", "False"):
            return flag if value == "True" else "--no-" + flag[2:]
        if not text:
            return flag
        return f"{flag}{text}" if flag.endswith("=") else f"{flag} {text}"

    return _OPTION.sub(python if flags is None else command_line, message)


def quoted(error: BaseException) -> str:
    """The message of ``error`` with its options still marked, for a message that quotes it: the quoting message
    then names them as it is said (``str(error)`` would fix them in Python terms)."""
    return Exception.__str__(error)


class UserError(Exception):
    """A problem with the user's input, settings or environment; ``str(error)`` is one line meant for them, in
    Python terms, and :meth:`for_command_line` the same line with the command line's flags."""

    def __str__(self) -> str:
        return render(super().__str__())

    def for_command_line(self, flags: Mapping[str, str]) -> str:
        """The message with each option named by its command-line flag (``flags`` as :func:`render` takes them)."""
        return render(super().__str__(), flags)


class DatasetError(UserError, RuntimeError):
    """A dataset cannot be found or read; the message is one line meant for the user (:mod:`gca.datasets`, and the
    edge lists :mod:`gca.graph.edges` builds from a file's)."""
