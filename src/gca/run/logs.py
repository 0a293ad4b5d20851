"""How ``gca train`` logs what is more than one plain run (docs/usage.md, Logging): the pretrainings of ``--seeds K``
(:class:`PretrainingLogs`: a run each, then their summary; a CSV log holds them all, told apart by a ``seed`` column),
and a run resumed from its checkpoint (:class:`CheckpointLink`: the TensorBoard version it continues is the one whose
:data:`MARKER` names its output folder and the checkpoint, or an earlier checkpoint of the same run)."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ..io import atomic_write_json, hash_files, read_json
from ..loggers import CSVLogger, Tagged, TensorBoardLogger, final_metrics, logged_run, where_logged

#: The file in a TensorBoard version folder that ties it to the training checkpoint it saw last.
MARKER = "gca-checkpoint.json"

_VERSION = re.compile(r"version_(\d+)")


class PretrainingLogs:
    """The loggers of ``gca train --seeds K``: give :attr:`loggers` to the estimator, run every pretraining inside
    :meth:`series`, call :meth:`pretraining` before each and :meth:`summary` at the end.

    Parameters
    ----------
    loggers, seeds
        The loggers the command line asked for, and the pretrainings' seeds, the first pretraining's first
        (:func:`gca.seeds.training_seeds`).
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
        """The CSV logs' one run around all the pretrainings: logged first, closed at the end however it ends; the first
        pretraining's rows are tagged with the first seed.

        Parameters
        ----------
        params
            The first pretraining's hyperparameters (:func:`gca.run.pipeline.logged_params`), logged with ``seeds``.
        """
        with logged_run(self.files, {**params, "seeds": self.seeds}):
            self.pretraining(0)
            yield self

    def pretraining(self, index: int) -> None:
        """Tag the CSV rows from here on with the seed of pretraining ``index`` (from 0)."""
        for tagged in self.tagged:
            tagged.value = self.seeds[index]

    def ran(self, places: Sequence[str]) -> None:
        """Note where a pretraining was logged (its record's ``logged_to``)."""
        self.logged_to += [place for place in places if place not in self.logged_to]

    def summary(self, record: dict[str, Any], params: dict[str, Any], step: int) -> None:
        """Log the summary: the CSV logs' last row, untagged, and one run of each other logger.

        Parameters
        ----------
        record
            The pretrainings' record (``results.json``'s ``pretrainings``, :func:`gca.run.tasks.more_pretrainings`).
        params, step
            The hyperparameters of the first pretraining (logged with ``seeds``), and the last epoch.
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
    """The TensorBoard runs of a ``gca train`` run that writes or resumes training checkpoints, tied to them:
    :meth:`resume` before training, :meth:`after_epoch` as :func:`gca.run.pipeline.run_gca`'s ``on_epoch`` hook, and the
    run inside ``with link:``, whose end records the last checkpoint written however the run ends.

    Parameters
    ----------
    loggers
        The run's loggers (its :class:`~gca.loggers.TensorBoardLogger` ones are tied; the others are left alone).
    out, checkpoint
        The run's output folder, and where it writes its training checkpoints
        (:attr:`gca.outputs.folder.RunOutputs.checkpoint`).
    """

    def __init__(self, loggers: Sequence[Any], out: str | Path, checkpoint: str | Path) -> None:
        self.boards = [logger for logger in loggers if isinstance(logger, TensorBoardLogger)]
        self.out = str(Path(out).resolve())
        self.checkpoint = Path(checkpoint)
        self._seen = _stamp(self.checkpoint)  # the file as last recorded; at first as the run found it

    def resume(self, sha256: str | None) -> None:
        """Continue, in each TensorBoard folder, the version of this output folder's run that the checkpoint continues,
        from the update after it; the version's record then names the checkpoint resumed from.

        Parameters
        ----------
        sha256
            The SHA-256 of the checkpoint resumed from; ``None`` (unreadable) or no version found: a new version.
        """
        if sha256 is None or not self.boards:
            return
        point = _checkpoint_point(self.checkpoint)
        if point is None:
            return
        record = self._record(sha256, point)
        for board in self.boards:
            version = _logged_version(board.root, self.out, sha256, point["losses"])
            if version is not None:
                board.continue_version(version, point["updates"] + 1)
                atomic_write_json(board.root / f"version_{version}" / MARKER, record)

    def after_epoch(self, epoch: int, embed: Any) -> None:
        """``run_gca``'s ``on_epoch``, called after the epoch's checkpoint is written: :meth:`record`.

        Parameters
        ----------
        epoch, embed
            The epoch just finished (from 1); ``GCA.fit``'s embedding function, unused.
        """
        self.record()

    def record(self) -> None:
        """Record the checkpoint in each TensorBoard version (:data:`MARKER`) when it was written anew since last
        recorded."""
        stamp = _stamp(self.checkpoint)
        if stamp is None or stamp == self._seen:
            return
        places = [board.location for board in self.boards if board.location is not None]
        if not places:
            return
        (sha256,) = hash_files([self.checkpoint])
        point = _checkpoint_point(self.checkpoint)
        if point is None:
            return
        record = self._record(sha256, point)
        for place in places:
            atomic_write_json(Path(place) / MARKER, record)
        self._seen = stamp  # only once recorded: a stop before this leaves it for the run's end to record

    def _record(self, sha256: str, point: dict[str, Any]) -> dict[str, Any]:
        return {
            "out": self.out,
            "checkpoint_sha256": sha256,
            "epoch": point["epoch"],
            "updates": point["updates"],
            "losses_sha256": _losses_digest(point["losses"]),
        }

    def __enter__(self) -> CheckpointLink:
        return self

    def __exit__(self, kind: Any, error: Any, trace: Any) -> None:
        """Record the last checkpoint written; an error in doing so is raised only where the run itself ended well."""
        if kind is None:
            self.record()
            return
        with contextlib.suppress(Exception):
            self.record()


def _checkpoint_point(path: Path) -> dict[str, Any] | None:
    """A training checkpoint's ``epoch``, ``updates`` (Adam's step count) and ``losses``; ``None`` where unreadable."""
    import torch

    try:
        state = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
        epoch, losses = int(state["epoch"]), [float(loss) for loss in state["losses"]]
        steps = [entry["step"] for entry in state["optimizer"]["state"].values() if "step" in entry]
        updates = int(steps[0]) if steps else 0
    except Exception:  # noqa: BLE001 - any file that is not a readable training checkpoint is not recorded
        return None
    return {"epoch": epoch, "updates": updates, "losses": losses}


def _losses_digest(losses: Sequence[float]) -> str:
    """The SHA-256 of the losses as JSON (exact: each float as ``repr`` writes it)."""
    import hashlib
    import json

    return hashlib.sha256(json.dumps([float(loss) for loss in losses]).encode()).hexdigest()


def _stamp(path: Path) -> tuple[int, int, int, int] | None:
    """What changes when a file is written anew (device, inode, size, modification time); ``None`` without one."""
    try:
        info = path.stat()
    except OSError:
        return None
    return info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns


def _logged_version(root: Path, out: str, sha256: str, losses: Sequence[float]) -> int | None:
    """The largest N of a ``root/version_N`` whose record names ``out`` and the checkpoint ``sha256`` — or else an
    earlier checkpoint of the same run (epoch k whose losses are the first k of ``losses``); ``None``."""
    found: tuple[bool, int] | None = None
    try:
        folders = list(root.iterdir())
    except OSError:
        return None
    for folder in folders:
        match = _VERSION.fullmatch(folder.name)
        if match is None:
            continue
        marker = read_json(folder / MARKER)
        if not isinstance(marker, dict) or marker.get("out") != out:
            continue
        same = marker.get("checkpoint_sha256") == sha256
        epoch = marker.get("epoch")
        earlier = (
            isinstance(epoch, int)
            and not isinstance(epoch, bool)
            and 0 < epoch <= len(losses)
            and marker.get("losses_sha256") == _losses_digest(losses[:epoch])
        )
        if same or earlier:
            candidate = (same, int(match.group(1)))
            found = candidate if found is None or candidate > found else found
    return None if found is None else found[1]
