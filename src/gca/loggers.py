"""Metric loggers for training — a CSV file, TensorBoard, Weights & Biases or your own — and the package's
``logging`` logger.

A logger is any object with ``log(metrics: dict[str, float], step: int)``; ``close()`` is optional. Pass a list of
them as ``GCA(..., loggers=[...])``. After every epoch each logger gets ``log({"loss": …, "lr": …}, step=epoch)``:
``loss`` is the epoch's mean loss over its updates (exactly ``GCA.losses[epoch - 1]``), ``lr`` the learning rate
of its last update (the warm-up raises it), and ``epoch`` counts from 1 (a resumed run goes on from its checkpoint's
epoch). A logger whose ``per_update`` attribute is true also gets ``log({"loss/update": …}, step=update)`` after
every optimiser update (``update`` counts from 1 over the whole run; with full-batch training there is one update
per epoch). ``close()`` runs when ``fit`` ends, however it ends; the built-in loggers open their files again if
``fit`` runs once more.

Built in: :class:`CSVLogger` (one row per epoch), :class:`TensorBoardLogger` (``pip install
'gca-graph[tensorboard]'``) and :class:`WandbLogger` (``pip install 'gca-graph[wandb]'``); the optional packages
are imported when the logger is made, so a missing one is a one-line :class:`LoggerError` before training starts.

The library reports through Python's :mod:`logging` under the logger ``"gca"`` (its modules' loggers are children,
such as ``"gca.train.loop"``): epoch summaries at DEBUG, the start and end of training at INFO, a collapse or a
diverged loss at WARNING. As a library it configures no handler — only a :class:`logging.NullHandler` on ``"gca"``
— so nothing is printed unless the application asks for it (``logging.basicConfig(level=logging.INFO)``).

This module imports nothing beyond the standard library until a logger needs its package.
"""

from __future__ import annotations

import csv
import io
import logging
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from .errors import UserError

#: The package's logger; a library adds no handler but this one, which keeps Python from printing its records.
LOG = logging.getLogger("gca")  # its NullHandler is added by the package (gca/__init__.py)


class LoggerError(UserError, ValueError):
    """A logger cannot be used (its package is missing, its file cannot be written); one line for the user."""


@runtime_checkable
class Logger(Protocol):
    """What ``GCA(loggers=[...])`` takes: ``log(metrics, step)``; ``close()`` and ``per_update`` are optional."""

    def log(self, metrics: dict[str, float], step: int) -> None: ...


def check_loggers(loggers: Iterable[Any] | None) -> list[Any]:
    """``loggers`` as a list, each checked to have a callable ``log``; ``None`` is no loggers."""
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
    """Call every logger's ``close()`` if it has one (all of them, even when one fails; the first error is raised)."""
    failed: BaseException | None = None
    for logger in loggers:
        close = getattr(logger, "close", None)
        if callable(close):
            try:
                close()
            except Exception as exc:  # the others still close
                failed = failed or exc
    if failed is not None:
        raise failed


class CSVLogger:
    """One row per epoch in the CSV file ``path``: a header (``epoch`` and the metrics' names: ``epoch,loss,lr``),
    then each epoch's values, floats written exactly (``repr``: read back they equal ``GCA.losses``).

    The file is made afresh when a run logs its first epoch; a run resumed from epoch k keeps the rows of epochs
    1..k of the file it continues (those with the same header) and appends after them. That start is atomic (a
    temporary file renamed over ``path``); each later row is one write of a whole line, flushed at once, so a run
    that fails or is killed leaves the header and the rows of the epochs it finished."""

    per_update = False

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if self.path.is_dir():
            raise LoggerError(f"the CSV log {self.path} is a folder; name a file in it")
        if not self.path.parent.is_dir():
            raise LoggerError(f"the CSV log {self.path}: the folder {self.path.parent} does not exist; create it first")
        self._fields: list[str] | None = None  # set by the run's first row

    def log(self, metrics: dict[str, float], step: int) -> None:
        if self._fields is None:
            self._start(["epoch", *metrics], step)
        assert self._fields is not None
        row = {"epoch": step, **metrics}
        line = ",".join(_cell(row.get(name, "")) for name in self._fields) + "\n"
        try:
            with open(self.path, "a", encoding="utf-8", newline="") as f:
                f.write(line)
        except OSError as exc:
            raise LoggerError(f"cannot write the CSV log {self.path}: {exc.strerror or exc}") from None

    def _start(self, fields: list[str], step: int) -> None:
        from .io import atomic_write_text

        kept = self._earlier_rows(fields, step)
        try:
            atomic_write_text(self.path, ",".join(fields) + "\n" + "".join(kept))
        except OSError as exc:
            raise LoggerError(f"cannot write the CSV log {self.path}: {exc.strerror or exc}") from None
        self._fields = fields

    def _earlier_rows(self, fields: list[str], step: int) -> list[str]:
        """The rows of epochs before ``step`` in the file there now, when its header is ``fields`` (a resumed run)."""
        if step <= 1:
            return []
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines(keepends=True)
        except (OSError, UnicodeDecodeError):
            return []
        if not lines or lines[0].rstrip("\r\n") != ",".join(fields):
            return []
        kept = []
        for line in lines[1:]:
            if not line.endswith("\n"):
                break  # a row cut short
            try:
                epoch = int(line.split(",", 1)[0])
            except ValueError:
                break
            if epoch >= step:
                break
            kept.append(line)
        return kept

    def close(self) -> None:
        self._fields = None  # the next fit starts the file again

    def __repr__(self) -> str:
        return f"CSVLogger({str(self.path)!r})"


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else str(value)
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="").writerow([value])
    return buffer.getvalue()


class TensorBoardLogger:
    """TensorBoard event files in ``log_dir`` through ``torch.utils.tensorboard.SummaryWriter``: ``loss`` and
    ``lr`` by epoch, and ``loss/update`` by update (its own step axis). Needs the ``tensorboard`` package
    (``pip install 'gca-graph[tensorboard]'``); ``writer_kwargs`` go to the writer."""

    per_update = True

    def __init__(self, log_dir: str | Path, **writer_kwargs: Any) -> None:
        _summary_writer()  # a missing package is said now, before training
        self.log_dir = Path(log_dir)
        if self.log_dir.exists() and not self.log_dir.is_dir():
            raise LoggerError(f"the TensorBoard folder {self.log_dir} exists and is not a folder")
        self.writer_kwargs = writer_kwargs
        self._writer: Any = None

    @property
    def writer(self) -> Any:
        if self._writer is None:
            self._writer = _summary_writer()(log_dir=str(self.log_dir), **self.writer_kwargs)
        return self._writer

    def log(self, metrics: dict[str, float], step: int) -> None:
        writer = self.writer
        for name, value in metrics.items():
            writer.add_scalar(name, value, step)
        if "loss" in metrics:  # once an epoch: TensorBoard shows the run as it goes
            writer.flush()

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def __getstate__(self) -> dict[str, Any]:  # an open writer is not copied or pickled: a copy opens its own
        return {**self.__dict__, "_writer": None}

    def __repr__(self) -> str:
        return f"TensorBoardLogger({str(self.log_dir)!r})"


def _summary_writer() -> Any:
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:
        raise LoggerError("TensorBoard logging needs the tensorboard package: pip install 'gca-graph[tensorboard]'"
                          ) from None  # fmt: skip
    return SummaryWriter


class WandbLogger:
    """A Weights & Biases run: ``wandb.init(**init_kwargs)`` at the first epoch logged (``project=``, ``dir=``,
    ``config=``, …; wandb keeps its local files in ``dir``, by default ``./wandb``), then ``wandb.log(metrics,
    step=epoch)`` every epoch, and ``wandb.finish()`` when ``fit`` ends. Per-update losses are not sent: wandb's
    ``step`` must only grow, and one axis is the epoch. Needs ``pip install 'gca-graph[wandb]'``."""

    per_update = False

    def __init__(self, project: str | None = None, **init_kwargs: Any) -> None:
        if project is not None:  # WandbLogger("my-project"), as wandb.init(project=...)
            init_kwargs["project"] = project
        _wandb()  # a missing package is said now, before training
        self.init_kwargs = init_kwargs
        self._started = False

    def log(self, metrics: dict[str, float], step: int) -> None:
        wandb = _wandb()
        if not self._started:
            wandb.init(**self.init_kwargs)
            self._started = True
        wandb.log(dict(metrics), step=step)

    def close(self) -> None:
        if self._started:
            self._started = False
            _wandb().finish()

    def __repr__(self) -> str:
        return f"WandbLogger({', '.join(f'{k}={v!r}' for k, v in self.init_kwargs.items())})"


def _wandb() -> Any:
    try:
        import wandb
    except ImportError:
        raise LoggerError("Weights & Biases logging needs the wandb package: pip install 'gca-graph[wandb]'") from None
    return wandb
