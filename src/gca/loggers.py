"""Metric loggers for training — a CSV file, TensorBoard, Weights & Biases or your own — and the package's ``logging``
logger (docs/usage.md, "Logging"; design notes: docs/design/application.md).

A logger is any object with ``log(metrics: dict[str, float], step: int)``; ``log_hyperparams(params: dict)``,
``close()`` and ``location`` are optional. After every epoch each logger of ``GCA(..., loggers=[...])`` gets
``log({"loss": …, "lr": …}, step=epoch)`` (``loss`` exactly ``GCA.losses[epoch - 1]``, ``lr`` the rate of the epoch's
last update, ``epoch`` from 1); one whose ``per_update`` is true also gets ``log({"loss/update": …}, step=update)``
after every update. ``close()`` runs when ``fit`` ends, however it ends — except inside a :func:`logged_run`, a whole
run: ``log_hyperparams`` first, the epochs, the evaluation's numbers once at ``step=epochs`` (:func:`final_metrics`),
then ``close()``. Each run of a built-in logger is its own, but for a run resumed from a checkpoint; :class:`Tagged`
makes one logger hold a series of runs as one.

An optional package (``tensorboard``, ``wandb``) is imported when its logger is made, so a missing one is a one-line
:class:`LoggerError` before training, and nothing is made on disk. The library logs through :mod:`logging` under
``"gca"`` (epochs at DEBUG, training's start and end at INFO, a collapse or diverged loss at WARNING) and adds only a
:class:`logging.NullHandler`. The functions that drive loggers are :mod:`gca.logger_protocol`'s, importable from here
too.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from pathlib import Path
from typing import Any

from .logger_protocol import LOG as LOG
from .logger_protocol import LoggerError as LoggerError
from .logger_protocol import check_loggers as check_loggers
from .logger_protocol import close_loggers as close_loggers
from .logger_protocol import final_metrics as final_metrics
from .logger_protocol import log_hyperparams as log_hyperparams
from .logger_protocol import logged_run as logged_run
from .logger_protocol import where_logged as where_logged


class Tagged:
    """A logger that holds a series of runs as one — a run's repeated pretrainings (``seeds``) in one CSV file — each
    row tagged with its run: ``{tag: value, **metrics}`` while :attr:`value` is set (the series sets it before each
    run), ``metrics`` alone while it is ``None``. Its ``log_hyperparams`` and ``close`` do nothing: the series logs to
    and closes ``logger`` once, around all its runs. ``per_update`` and ``location`` are ``logger``'s.

    Parameters
    ----------
    logger, tag
        The logger the series writes to, and the name of the column that says which run a row is of (``"seed"``).
    """

    def __init__(self, logger: Any, tag: str) -> None:
        self.logger, self.tag = logger, tag
        self.value: Any = None  # the current run's tag; None: a row of the series itself
        self.per_update = bool(getattr(logger, "per_update", False))

    @property
    def location(self) -> Any:
        """Where ``logger`` writes (its ``location``), or ``None``."""
        return getattr(self.logger, "location", None)

    def log(self, metrics: dict[str, float], step: int) -> None:
        """``logger.log`` of ``metrics``, tagged with :attr:`value` when it is set.

        Parameters
        ----------
        metrics, step
            Metric name → value, and the epoch (from 1).
        """
        self.logger.log(dict(metrics) if self.value is None else {self.tag: self.value, **metrics}, step)

    def log_hyperparams(self, params: dict[str, Any]) -> None:
        """Nothing: the series' hyperparameters are logged to the wrapped logger itself."""

    def close(self) -> None:
        """Nothing: the series closes the wrapped logger when it ends."""

    def __repr__(self) -> str:
        return f"Tagged({self.logger!r}, {self.tag!r})"


def folder_problem(folder: str | Path, made: bool = False) -> str | None:
    """Why files cannot be written in ``folder``, or ``None``: a file stands where it or a folder above it should be, or
    (unless ``made``: missing folders will be made) the folder does not exist."""
    folder = Path(folder)
    for place in (folder, *folder.parents):
        if place.exists():  # the nearest part of the path that is there
            if not place.is_dir():
                return f"{place} is a file, not a folder"
            break
    if made or folder.is_dir():
        return None
    return f"the folder {folder} does not exist; create it first"


def hparams_file(path: str | Path) -> Path:
    """Where :class:`CSVLogger` writes the hyperparameters of the log ``path``: beside it, ``.hparams.json`` its
    suffix."""
    path = Path(path)
    return path.with_name(f"{path.stem}.hparams.json")


class CSVLogger:
    """One row per epoch in the CSV file ``path``: a header (``epoch`` and the metrics' names: ``epoch,loss,lr``), then
    each epoch's values, floats written exactly (``repr``: read back they equal ``GCA.losses``).

    The file is made afresh, atomically, when a run logs its first epoch. A run resumed from epoch k ≥ 1 continues the
    file when its header starts with ``epoch`` and holds every name of the run's first row, keeping that header and the
    rows of epochs 1..k. Each later row is one flushed write of a whole line; new metric names (the final evaluation)
    widen the header, the file rewritten atomically with the new columns at the end. Hyperparameters go to
    :attr:`hparams_path` as JSON.

    Parameters
    ----------
    path
        The CSV file to write (replaced when a run starts; a missing folder is made then). A folder at ``path``, or a
        file where its folder (or one above it) should be, is a :class:`LoggerError` at once.
    """

    per_update = False

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if self.path.is_dir():
            raise LoggerError(f"the CSV log {self.path} is a folder; name a file in it")
        problem = folder_problem(self.path.parent, made=True)
        if problem is not None:
            raise LoggerError(f"the CSV log {self.path}: {problem}")
        self._fields: list[str] | None = None  # set by the run's first row

    @property
    def hparams_path(self) -> Path:
        """Where ``log_hyperparams`` writes (:func:`hparams_file`)."""
        return hparams_file(self.path)

    @property
    def location(self) -> Path:
        """The CSV file (``path``)."""
        return self.path

    def log_hyperparams(self, params: dict[str, Any]) -> None:
        """Write ``params`` as JSON to :attr:`hparams_path`, atomically.

        Parameters
        ----------
        params
            Hyperparameter name → value (values JSON cannot hold are written as text).
        """
        from .io import atomic_write_text

        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_text(self.hparams_path, json.dumps(params, indent=2, sort_keys=True, default=str) + "\n")
        except (OSError, ValueError) as exc:
            raise LoggerError(
                f"cannot write the hyperparameters {self.hparams_path}: {getattr(exc, 'strerror', None) or exc}"
            ) from None

    def log(self, metrics: dict[str, float], step: int) -> None:
        """Append one row (the file is started, or widened for new metric names, first).

        Parameters
        ----------
        metrics, step
            Metric name → value (``{"loss": 0.71, "lr": 0.001}``, the final ``{"accuracy/mean": 83.2, …}``), and the
            epoch (from 1; for ``loss/update``, the update).
        """
        if self._fields is None:
            self._start(["epoch", *metrics], step, epoch_row="loss" in metrics)
        assert self._fields is not None
        new = [name for name in metrics if name not in self._fields]
        if new:
            self._widen(new)
        row = {"epoch": step, **metrics}
        line = ",".join(_cell(row[name]) if name in row else "" for name in self._fields) + "\n"
        try:
            with open(self.path, "a", encoding="utf-8", newline="") as f:
                f.write(line)
        except OSError as exc:
            raise LoggerError(f"cannot write the CSV log {self.path}: {exc.strerror or exc}") from None

    def _start(self, fields: list[str], step: int, epoch_row: bool = True) -> None:
        header, kept = self._earlier_rows(fields, step if epoch_row else step + 1)
        self._write(",".join(_cell(name) for name in header) + "\n" + "".join(kept))
        self._fields = header

    def _widen(self, new: list[str]) -> None:
        """The file again with the columns ``new`` added at the end: a header with them, each row padded."""
        assert self._fields is not None
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines(keepends=True)
        except (OSError, UnicodeDecodeError) as exc:
            raise LoggerError(f"cannot read the CSV log {self.path} back: {exc}") from None
        fields = [*self._fields, *new]
        pad = "," * len(new)
        rows = [line.rstrip("\r\n") + pad + "\n" for line in lines[1:] if line.endswith("\n")]
        self._write(",".join(_cell(name) for name in fields) + "\n" + "".join(rows))
        self._fields = fields

    def _write(self, text: str) -> None:
        from .io import atomic_write_text

        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_text(self.path, text)
        except OSError as exc:
            raise LoggerError(f"cannot write the CSV log {self.path}: {exc.strerror or exc}") from None

    def _earlier_rows(self, fields: list[str], step: int) -> tuple[list[str], list[str]]:
        """The header to write and the rows of epochs before ``step`` to keep: of the file there now when ``step`` > 1
        and its header starts with ``epoch`` and holds every name of ``fields``; else ``fields`` and none."""
        if step <= 1:
            return fields, []
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines(keepends=True)
        except (OSError, UnicodeDecodeError):
            return fields, []
        header = next(csv.reader([lines[0]])) if lines and lines[0].endswith("\n") else []
        if not header or header[0] != "epoch" or not set(fields) <= set(header):
            return fields, []
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
        return header, kept

    def close(self) -> None:
        """End the run: the next ``log`` starts the file afresh."""
        self._fields = None  # the next fit starts the file again

    def __repr__(self) -> str:
        return f"CSVLogger({str(self.path)!r})"


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else str(value)
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="").writerow([value])
    return buffer.getvalue()


_VERSION = re.compile(r"version_(\d+)")


def next_version(root: Path) -> tuple[int, Path]:
    """A new ``version_N`` folder in ``root`` (made if missing), N one more than the largest there, the next free one
    taken by ``mkdir`` where another run took N first; N and the folder."""
    try:
        root.mkdir(parents=True, exist_ok=True)
        taken = [int(m.group(1)) for child in root.iterdir() if (m := _VERSION.fullmatch(child.name))]
        version = max(taken, default=-1) + 1
        while True:
            try:
                (root / f"version_{version}").mkdir()
                return version, root / f"version_{version}"
            except FileExistsError:
                version += 1
    except OSError as exc:
        raise LoggerError(f"cannot make a run's folder in {root}: {exc.strerror or exc}") from None


class TensorBoardLogger:
    """TensorBoard event files through ``SummaryWriter``, each run in its own folder ``log_dir/version_N``: ``loss`` and
    ``lr`` by epoch, ``loss/update`` by update, the final metrics at the last epoch, and the hyperparameters in the
    HPARAMS tab (one session per run). :attr:`version` and :attr:`location` say the run's folder once it starts.

    Parameters
    ----------
    log_dir
        The folder holding one ``version_N`` folder per run (made when the first run starts); a file where it or a
        folder above it should be is a :class:`LoggerError` at once.
    version
        A fixed run folder, which every run continues: ``version_{version}`` for a number, the name as given for text
        (no ``/``); ``None`` for a new folder per run.
    **writer_kwargs
        Passed to ``SummaryWriter`` (``flush_secs=``, ``max_queue=``, …).
    """

    per_update = True

    def __init__(self, log_dir: str | Path, version: int | str | None = None, **writer_kwargs: Any) -> None:
        _summary_writer()  # a missing package is said now, before training
        self.root = Path(log_dir)
        problem = folder_problem(self.root, made=True)
        if problem is not None:
            raise LoggerError(f"the TensorBoard folder {self.root}: {problem}")
        if version is not None:
            _check_version(version)
        self.fixed_version = version
        self.writer_kwargs = writer_kwargs
        self.version: int | str | None = None  # the current (or last) run's
        self.location: Path | None = None  # its folder
        self._writer: Any = None
        self._continued: tuple[int | str, int] | None = None  # the next run's: (version, purge_step)

    def continue_version(self, version: int | str, step: int) -> None:
        """Make the next run continue the run in ``version`` — a run resumed from a checkpoint, one run with one HPARAMS
        row — rather than start a new folder; later runs get their own. TensorBoard hides that folder's events from
        ``step`` on (the writer's ``purge_step``): with the first update the resumed run makes, ``loss/update`` shows
        each update once, and with mini-batches the epochs logged between the checkpoint and the stop show twice.

        Parameters
        ----------
        version
            The run's folder in ``log_dir``: a number for ``version_{version}``, or its name.
        step
            The first step the resumed run logs, ≥ 1: what the folder holds from there on is hidden.
        """
        _check_version(version)
        if isinstance(step, bool) or not isinstance(step, int) or step < 1:
            raise LoggerError(f"the first step of a continued run must be a whole number ≥ 1, got {step!r}")
        self._continued = (version, step)

    @property
    def writer(self) -> Any:
        """The run's ``SummaryWriter``, opened (and the run's folder chosen) on first use."""
        if self._writer is None:
            continued, self._continued = self._continued, None
            kwargs = dict(self.writer_kwargs)
            if continued is not None:
                self._start(continued[0])
                kwargs["purge_step"] = continued[1]
            else:
                self._start(self.fixed_version)
            self._writer = _summary_writer()(log_dir=str(self.location), **kwargs)
        return self._writer

    def _start(self, version: int | str | None) -> None:
        """The run's folder: ``version``'s (made if missing), else a new one."""
        if version is None:
            self.version, self.location = next_version(self.root)
            return
        name = f"version_{version}" if isinstance(version, int) else version
        self.version, self.location = version, self.root / name
        try:
            self.location.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise LoggerError(f"cannot make the TensorBoard folder {self.location}: {exc.strerror or exc}") from None

    def log_hyperparams(self, params: dict[str, Any]) -> None:
        """Start the run's HPARAMS session with ``params`` (lists and dicts as JSON text)."""
        from torch.utils.tensorboard.summary import hparams

        # only the session's start: TensorBoard then lists every run's hyperparameters and takes each run's
        # scalars as its metrics (an experiment summary would fix one run's metric names for all of them)
        _, start, _ = hparams({k: _hparam_value(v) for k, v in params.items()}, {})
        self.writer.file_writer.add_summary(start)
        self.writer.flush()

    def log(self, metrics: dict[str, float], step: int) -> None:
        """Add each metric as a scalar at ``step`` (flushed once an epoch).

        Parameters
        ----------
        metrics, step
            Metric name → value (``{"loss": 0.71, "lr": 0.001}``, the final ``{"accuracy/mean": 83.2, …}``), and the
            epoch (from 1; for ``loss/update``, the update).
        """
        writer = self.writer
        for name, value in metrics.items():
            writer.add_scalar(name, value, step)
        if "loss" in metrics:  # once an epoch: TensorBoard shows the run as it goes
            writer.flush()

    def close(self) -> None:
        """Close the run's writer; the next ``log`` starts a new run (a new folder, unless ``version`` is fixed)."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def __getstate__(self) -> dict[str, Any]:  # an open writer is not copied or pickled: a copy opens its own
        return {**self.__dict__, "_writer": None}

    def __repr__(self) -> str:
        return f"TensorBoardLogger({str(self.root)!r})"


def _check_version(version: Any) -> None:
    """A :class:`LoggerError` unless ``version`` names a run's folder: a number, or text without ``/``."""
    if (
        isinstance(version, bool)
        or not isinstance(version, (int, str))
        or (isinstance(version, str) and (not version.strip() or "/" in version))
    ):
        raise LoggerError(f"version must be a number or a folder name, got {version!r}")


def _hparam_value(value: Any) -> bool | int | float | str:
    """A hyperparameter as TensorBoard takes it: a number, text or truth value; anything else as text."""
    if isinstance(value, (bool, int, float, str)):
        return value
    return json.dumps(value, default=str) if isinstance(value, (list, tuple, dict)) else str(value)


def _summary_writer() -> Any:
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:
        raise LoggerError("TensorBoard logging needs the tensorboard package: pip install tensorboard") from None
    return SummaryWriter


class WandbLogger:
    """A Weights & Biases run: ``wandb.init(**init_kwargs)`` when the run starts (wandb's local files in ``dir``, made
    then, by default ``./wandb``), ``wandb.log(metrics, step=epoch)`` every epoch and the final metrics at the last,
    ``wandb.finish()`` at its end; ``log_hyperparams`` updates the run's config. Per-update losses are not sent: wandb's
    ``step`` must only grow. :attr:`location` is the run's address once it started.

    Parameters
    ----------
    project
        The W&B project (``wandb.init(project=...)``); ``None`` for wandb's default.
    **init_kwargs
        Passed to ``wandb.init`` when the run starts (``dir=``, ``name=``, ``config=``, ``mode="offline"``, …).
    """

    per_update = False

    def __init__(self, project: str | None = None, **init_kwargs: Any) -> None:
        if project is not None:  # WandbLogger("my-project"), as wandb.init(project=...)
            init_kwargs["project"] = project
        _wandb()  # a missing package is said now, before training
        self.init_kwargs = init_kwargs
        self.location: str | None = None
        self._started = False

    def _run(self) -> Any:
        wandb = _wandb()
        if not self._started:
            if self.init_kwargs.get("dir") is not None:
                try:
                    Path(self.init_kwargs["dir"]).mkdir(parents=True, exist_ok=True)
                except OSError as exc:
                    raise LoggerError(
                        f"cannot make wandb's folder {self.init_kwargs['dir']}: {exc.strerror or exc}"
                    ) from None
            run = wandb.init(**self.init_kwargs)
            self.location = getattr(run, "url", None)
            self._started = True
        return wandb

    def log_hyperparams(self, params: dict[str, Any]) -> None:
        """Update the run's config with ``params``."""
        self._run().config.update(params, allow_val_change=True)

    def log(self, metrics: dict[str, float], step: int) -> None:
        """``wandb.log(metrics, step=step)`` (starting the run on first use).

        Parameters
        ----------
        metrics, step
            Metric name → value (``{"loss": 0.71, "lr": 0.001}``, the final ``{"accuracy/mean": 83.2, …}``), and the
            epoch (from 1; for ``loss/update``, the update).
        """
        self._run().log(dict(metrics), step=step)

    def close(self) -> None:
        """``wandb.finish()`` when a run was started; the next ``log`` starts a new run."""
        if self._started:
            self._started = False
            _wandb().finish()

    def __repr__(self) -> str:
        return f"WandbLogger({', '.join(f'{k}={v!r}' for k, v in self.init_kwargs.items())})"


def _wandb() -> Any:
    try:
        import wandb
    except ImportError:
        raise LoggerError("Weights & Biases logging needs the wandb package: pip install wandb") from None
    return wandb
