"""How ``gca train`` logs what is more than one plain run: the pretrainings of ``--seeds K``, and a run resumed from
its checkpoint.

**Several pretrainings** (:class:`PretrainingLogs`). A logger that keeps runs apart — a TensorBoard version, a
Weights & Biases run, any logger but a CSV file — logs each pretraining as a run of its own (its ``seed`` among its
hyperparameters, its evaluation at its last epoch), then their summary as one more run; a CSV log, one file the user
named, holds them all as one run: the hyperparameters once (with ``seeds``, the list), a ``seed`` column naming the
pretraining of each row (its epochs and its evaluation), and the summary as the last row, its ``seed`` empty. The
summary is every number of ``results.json``'s ``pretrainings`` by its path — ``pretrainings/mean``,
``pretrainings/std``, ``pretrainings/count``, ``pretrainings/splits_each`` — at step = the last epoch.

**A resumed run** (:class:`CheckpointLink`). A TensorBoard run that writes or resumes training checkpoints records in
its version folder (:data:`MARKER`) the output folder, the SHA-256 of the latest checkpoint it saw written, and that
checkpoint's epoch and updates. ``--resume`` continues the version whose record names the same output folder and
the checkpoint it resumes from (the latest such version, should two hold the same file's contents), hiding what that
version logged after the checkpoint (:meth:`gca.loggers.TensorBoardLogger.continue_version`), so the version holds
each epoch once, the resumed run's evaluation at its last epoch, and one HPARAMS row. Where no version matches (the
run was not logged there, or was stopped between writing a checkpoint and its record) a new version starts.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ..io import atomic_write_json, hash_files, read_json
from ..loggers import CSVLogger, Tagged, TensorBoardLogger, final_metrics, logged_run, where_logged

#: The file in a TensorBoard version folder that ties it to the training checkpoint it saw last.
MARKER = "gca-checkpoint.json"

_VERSION = re.compile(r"version_(\d+)")


class PretrainingLogs:
    """The loggers of ``gca train --seeds K`` (the module docstring): give :attr:`loggers` to the estimator, run
    every pretraining inside :meth:`series`, call :meth:`pretraining` before each and :meth:`summary` at the end.

    Parameters
    ----------
    loggers
        The loggers the command line asked for.
    seeds
        The pretrainings' seeds, the first pretraining's first (:func:`gca.seeds.training_seeds`).
    """

    def __init__(self, loggers: Sequence[Any], seeds: Sequence[int]) -> None:
        self.files = [logger for logger in loggers if isinstance(logger, CSVLogger)]
        self.tagged = [Tagged(logger, "seed") for logger in self.files]
        self.runs = [logger for logger in loggers if not isinstance(logger, CSVLogger)]
        #: What the estimator logs to: the CSV logs tagged, the others as they are.
        self.loggers: list[Any] = [*self.tagged, *self.runs]
        self.seeds = [int(seed) for seed in seeds]
        #: Every place logged to, in order, each once (``results.json``'s ``logged_to``).
        self.logged_to: list[str] = []

    @contextlib.contextmanager
    def series(self, params: dict[str, Any]) -> Iterator[PretrainingLogs]:
        """The CSV logs' one run around all the pretrainings: ``params`` and ``seeds`` logged first, closed at the
        end, however it ends. The first pretraining's rows are tagged with the first seed.

        Parameters
        ----------
        params
            The hyperparameters of the first pretraining (:func:`gca.run.pipeline.logged_params`).
        """
        with logged_run(self.files, {**params, "seeds": self.seeds}):
            self.pretraining(0)
            yield self

    def pretraining(self, index: int) -> None:
        """Tag the CSV rows from here on with the seed of pretraining ``index`` (from 0).

        Parameters
        ----------
        index
            The pretraining, 0 for the first.
        """
        for tagged in self.tagged:
            tagged.value = self.seeds[index]

    def ran(self, places: Sequence[str]) -> None:
        """Note where a pretraining was logged (its record's ``logged_to``).

        Parameters
        ----------
        places
            The places, as :func:`gca.loggers.where_logged` gives them.
        """
        self.logged_to += [place for place in places if place not in self.logged_to]

    def summary(self, record: dict[str, Any], params: dict[str, Any], step: int) -> None:
        """Log the summary ``record`` (``results.json``'s ``pretrainings``) at ``step``: the CSV logs' last row,
        untagged, and one run of each other logger, its hyperparameters ``params`` with ``seeds``.

        Parameters
        ----------
        record
            The pretrainings' record (:func:`gca.run.tasks.more_pretrainings`).
        params
            The hyperparameters of the first pretraining.
        step
            The last epoch.
        """
        metrics = final_metrics({"pretrainings": record}, ("pretrainings",))
        for tagged in self.tagged:
            tagged.value = None
            tagged.log(metrics, step)
        if self.runs:
            with logged_run(self.runs, {**params, "seeds": self.seeds}):
                for logger in self.runs:
                    logger.log(metrics, step)
            self.ran(where_logged(self.runs))


class CheckpointLink:
    """The TensorBoard runs of a ``gca train`` run that writes or resumes training checkpoints, tied to them (the
    module docstring): :meth:`resume` before training, :meth:`on_update` and :meth:`after_epoch` as the hooks of
    :func:`gca.run.pipeline.run_gca`.

    Parameters
    ----------
    loggers
        The run's loggers (its :class:`~gca.loggers.TensorBoardLogger` ones are tied; the others are left alone).
    out
        The run's output folder.
    checkpoint
        Where the run writes its training checkpoints (:attr:`gca.outputs.folder.RunOutputs.checkpoint`).
    """

    def __init__(self, loggers: Sequence[Any], out: str | Path, checkpoint: str | Path) -> None:
        self.boards = [logger for logger in loggers if isinstance(logger, TensorBoardLogger)]
        self.out = str(Path(out).resolve())
        self.checkpoint = Path(checkpoint)
        self.updates = 0  # the updates made so far, counted on from a resumed checkpoint's
        self._seen = _stamp(self.checkpoint)  # the file as the run found it: no checkpoint this run wrote

    def resume(self, sha256: str | None) -> None:
        """Continue, in each TensorBoard folder, the version that logged the checkpoint whose contents have
        ``sha256`` for this output folder, from the update after it; none found: a new version.

        Parameters
        ----------
        sha256
            The SHA-256 of the checkpoint the run resumes from; ``None`` (unreadable): a new version.
        """
        if sha256 is None:
            return
        for board in self.boards:
            found = _logged_version(board.root, self.out, sha256)
            if found is not None:
                version, marker = found
                board.continue_version(version, int(marker["updates"]) + 1)

    def on_update(self, hook: Callable[[int, int | None], None] | None) -> Callable[[int, int | None], None]:
        """``run_gca``'s ``on_update``: counts the updates, then calls ``hook`` (``None`` for none).

        Parameters
        ----------
        hook
            The hook to call after it, as ``GCA.fit`` takes it.
        """

        def counted(update: int, updates: int | None = None) -> None:
            self.updates = update
            if hook is not None:
                hook(update, updates)

        return counted

    def after_epoch(self, epoch: int, embed: Any) -> None:
        """``run_gca``'s ``on_epoch`` (called after the epoch's checkpoint is written): where a new checkpoint was
        written, record it in each TensorBoard version (:data:`MARKER`).

        Parameters
        ----------
        epoch
            The epoch just finished (from 1).
        embed
            Unused (``GCA.fit``'s embedding function).
        """
        stamp = _stamp(self.checkpoint)
        if stamp is None or stamp == self._seen:
            return
        self._seen = stamp
        places = [board.location for board in self.boards if board.location is not None]
        if not places:
            return
        (sha256,) = hash_files([self.checkpoint])
        for place in places:
            atomic_write_json(Path(place) / MARKER, {"out": self.out, "checkpoint_sha256": sha256, "epoch": epoch,
                                                     "updates": self.updates})  # fmt: skip


def _stamp(path: Path) -> tuple[int, int, int, int] | None:
    """What changes when a file is written anew (device, inode, size, modification time), or ``None`` without one."""
    try:
        info = path.stat()
    except OSError:
        return None
    return info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns


def _logged_version(root: Path, out: str, sha256: str) -> tuple[int, dict[str, Any]] | None:
    """The largest N whose ``root/version_N`` record names ``out`` and ``sha256``, with the record; else ``None``."""
    found: tuple[int, dict[str, Any]] | None = None
    try:
        folders = list(root.iterdir())
    except OSError:
        return None
    for folder in folders:
        match = _VERSION.fullmatch(folder.name)
        if match is None:
            continue
        marker = read_json(folder / MARKER)
        if not (isinstance(marker, dict) and marker.get("out") == out and marker.get("checkpoint_sha256") == sha256
                and isinstance(marker.get("updates"), int) and not isinstance(marker["updates"], bool)
                and marker["updates"] >= 0):  # fmt: skip
            continue
        version = int(match.group(1))
        if found is None or version > found[0]:
            found = (version, marker)
    return found
