"""What drives metric loggers through a fit and a run: the check of the loggers given (:func:`check_loggers`),
their closing (:func:`close_loggers`), one run of them (:func:`logged_run`: hyperparameters first, closed when the
run ends), the numbers of a run's record to log (:func:`final_metrics`), where they wrote (:func:`where_logged`),
and the package's :mod:`logging` logger ``"gca"`` (:data:`LOG`). The logger classes are :mod:`gca.loggers`, which
these names are importable from too.
"""

from __future__ import annotations

import contextlib
import logging
import math
from collections.abc import Iterable, Iterator, Mapping
from contextvars import ContextVar
from typing import Any

from .errors import UserError

#: The package's logger; a library adds no handler but this one, which keeps Python from printing its records.
LOG = logging.getLogger("gca")  # its NullHandler is added by the package (gca/__init__.py)

#: The ids of the loggers of the runs going on (:func:`logged_run`): ``close_loggers`` leaves them open.
_HELD: ContextVar[frozenset[int]] = ContextVar("gca_loggers_held", default=frozenset())


class LoggerError(UserError, ValueError):
    """A logger cannot be used (its package is missing, its file cannot be written); one line for the user."""


def check_loggers(loggers: Iterable[Any] | None) -> list[Any]:
    """``loggers`` as a list, each checked to have a callable ``log``; ``None`` is no loggers.

    Parameters
    ----------
    loggers
        A list (or other iterable) of loggers, or ``None``; a string, a mapping, a non-iterable or a logger without a
        callable ``log`` is a :class:`LoggerError`.
    """
    if loggers is None:
        return []
    if isinstance(loggers, (str, bytes, Mapping)) or not isinstance(loggers, Iterable):
        raise LoggerError(f"loggers must be a list of loggers, got {type(loggers).__name__}")
    checked = list(loggers)
    for logger in checked:
        if not callable(getattr(logger, "log", None)):
            raise LoggerError(f"the logger {type(logger).__name__} has no log(metrics, step) method")
    return checked


def close_loggers(loggers: Iterable[Any]) -> None:
    """Call every logger's ``close()`` if it has one (all of them, even when one fails; the first error is raised);
    a logger of a :func:`logged_run` still going on is left open (the run closes it when it ends)."""
    failed: BaseException | None = None
    held = _HELD.get()
    for logger in loggers:
        close = getattr(logger, "close", None)
        if callable(close) and id(logger) not in held:
            try:
                close()
            except Exception as exc:  # the others still close
                failed = failed or exc
    if failed is not None:
        raise failed


def log_hyperparams(loggers: Iterable[Any], params: Mapping[str, Any]) -> None:
    """``log_hyperparams(params)`` on every logger that has it, each with its own copy as a ``dict``."""
    for logger in loggers:
        method = getattr(logger, "log_hyperparams", None)
        if callable(method):
            method(dict(params))


@contextlib.contextmanager
def logged_run(loggers: Iterable[Any], params: Mapping[str, Any]) -> Iterator[None]:
    """One run of ``loggers``: their hyperparameters ``params`` logged first, the loggers kept open through every
    ``fit`` inside (so the run's final metrics reach the same run, version and file), closed when it ends, however
    it ends (an error inside is the one raised, not a logger's own on closing).

    Parameters
    ----------
    loggers
        The loggers, as ``GCA(loggers=...)`` holds them.
    params
        The run's hyperparameters (the config's fields by name, and the ``dataset``), logged first.
    """
    loggers = list(loggers)
    token = _HELD.set(_HELD.get() | {id(logger) for logger in loggers})
    ended = False
    try:
        log_hyperparams(loggers, params)
        yield
        ended = True
    finally:
        _HELD.reset(token)
        if ended:
            close_loggers(loggers)
        else:
            with contextlib.suppress(Exception):
                close_loggers(loggers)


def final_metrics(record: Mapping[str, Any], keys: Iterable[str]) -> dict[str, float]:
    """The numbers under ``keys`` of ``record`` (a ``results.json``), each named by its path (``accuracy/mean``,
    ``accuracy/macro_f1/std``); lists, strings, booleans, ``None`` and values that are not finite are left out.

    Parameters
    ----------
    record
        A run's record, as written to ``results.json``.
    keys
        The top-level entries to read (``accuracy``, ``raw_features_accuracy``, ``clustering``); a missing or ``None``
        entry is skipped.

    Returns
    -------
    dict[str, float]
        Path → number, such as ``{"accuracy/mean": 83.2, "accuracy/std": 0.5}``.
    """
    flat: dict[str, float] = {}

    def walk(value: Any, name: str) -> None:
        if isinstance(value, Mapping):
            for key, inner in value.items():
                walk(inner, f"{name}/{key}")
        elif isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            flat[name] = value

    for key in keys:
        if record.get(key) is not None:
            walk(record[key], key)
    return flat


def where_logged(loggers: Iterable[Any]) -> list[str]:
    """Each logger's ``location`` (its file, its run's folder, its run's address) where it has one."""
    return [str(place) for place in (getattr(logger, "location", None) for logger in loggers) if place is not None]
