"""One writer for a run's result files: every location checked before training, files staged, then committed together.

A run of ``gca train`` or ``gca embed`` owns a fixed set of names in its output folder (:data:`RUN_FILES`) and,
optionally, an export file. :class:`RunOutputs` checks them all before any work starts, stages each file beside its
target, and on :meth:`~RunOutputs.commit` removes the old ``results.json``, then the earlier run's other files (an
export it wrote inside the folder included: :data:`EXPORT_MARKER`), then moves the new ones in, ``results.json`` last: a
folder with ``results.json`` holds exactly one run's files, never a mixture. Training checkpoints of a run in progress
go to :data:`IN_PROGRESS`, beside the previous complete run, and after a commit the folder holds no checkpoint of
another run (the rules: docs/usage.md, "Checkpoints"; docs/errors.md). One run at a time: the writer holds an exclusive
lock on ``OUT/.gca-lock`` (:func:`gca.io.hold_folder`). Messages name the user's paths, never a temporary file. Design
notes: docs/design/data-and-runs.md.
"""

from __future__ import annotations

import contextlib
import filecmp
import os
import secrets
import shutil
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, Any

import numpy as np

from ..errors import UserError, option
from ..io import OutputError, atomic_write, hold_folder, json_bytes, release_folder
from ..stderr import spoken
from .export import export_embeddings

#: The files a run owns in its output folder; ``results.json`` is committed last.
RUN_FILES = ("embeddings.npy", "model.pt", "checkpoint.pt", "loss.png", "tsne.png", "results.json")
#: Where a run in progress writes its training checkpoints (moved to ``checkpoint.pt`` when it commits).
IN_PROGRESS = "checkpoint.in-progress.pt"
EXPORT_SUFFIXES = (".csv", ".tsv", ".parquet")


#: Names the export file a run wrote inside its output folder, so that the next run there removes it with the rest
#: of that run's files (an export kept beside another run's results would be that earlier run's embeddings).
EXPORT_MARKER = ".gca-export"


class RunOutputs:
    """The output folder ``out`` (and an optional ``export`` file) of one run (the module docstring)."""

    def __init__(
        self,
        out: str | Path,
        export: str | Path | None = None,
        inputs: Iterable[str | Path] = (),
        lock: bool = True,
        progress: bool = False,
    ) -> None:
        """Check every location of the run (the folder, the export) before any work starts.

        Parameters
        ----------
        out
            The output folder (made if missing; checked to be writable, and locked while the run writes).
        export
            A file to write the embeddings to, keyed by node id (``.csv``, ``.tsv`` or ``.parquet``); ``None`` for none.
        inputs
            The run's input files, which no output may overwrite.
        lock
            Whether this process writes the run (holds the folder's lock); another process of a torchrun job only reads
            from the folder (the checkpoint it resumes from).
        progress
            Show the export's progress once it takes a few seconds (:func:`gca.outputs.export.export_embeddings`).
        """
        # only the writing process (``lock``; under torchrun rank 0) makes and checks the folder; one it made is
        # removed again if the run leaves nothing in it
        self._made = lock and not Path(out).exists()
        self.out = check_folder(out, "out") if lock else Path(out)
        self.export = None if export is None else Path(export)
        self.progress = progress
        inputs = [Path(p) for p in inputs if p is not None]
        if self.export is not None:
            self._check_export(inputs)
        self._lock = hold_folder(self.out) if lock else None
        if lock:
            for stale in self.out.glob(".gca-staging-*"):  # left by a run that was killed (kill -9, power loss)
                shutil.rmtree(stale, ignore_errors=True)
        self._staging = self.out / f".gca-staging-{secrets.token_hex(4)}"
        self._staged: dict[str, Path] = {}
        self._export_staged: Path | None = None
        self._owns_checkpoint = False  # whether the in-progress file is this run's (see the module docstring)
        self._copied_checkpoint = False  # whether this run made it by copying checkpoint.pt
        self._committed = False  # whether this run's files were moved into place

    def _check_export(self, inputs: list[Path]) -> None:
        export = self.export
        assert export is not None
        if export.suffix.lower() not in EXPORT_SUFFIXES:
            raise OutputError(f"{option('export', export)}: use a .csv, .tsv or .parquet file name")
        if export.is_dir():
            raise OutputError(f"{option('export', export)} is a folder; name a file in it")
        if not export.parent.is_dir():
            raise OutputError(f"{option('export', export)}: the folder {export.parent} does not exist; create it first")
        if not os.access(export.parent, os.W_OK):
            raise OutputError(f"{option('export', export)}: the folder {export.parent} is not writable")
        if export.exists() and not export.is_file():
            raise OutputError(f"{option('export', export)} exists and is not a regular file")
        for source in inputs:
            if _same_file(export, source):
                raise OutputError(f"{option('export', export)} is one of the input files; export to another name")
        if export.resolve().parent == self.out.resolve() and export.name in RUN_FILES:
            raise OutputError(
                f"{option('export', export)} would overwrite the run's own {export.name}; choose another name"
            )
        if export.suffix.lower() == ".parquet":
            try:
                import pyarrow  # noqa: F401
            except ImportError:
                raise OutputError(
                    f"{option('export')} to .parquet needs pyarrow (pip install pyarrow); or export to .csv"
                ) from None

    @property
    def checkpoint(self) -> Path:
        """Where this run's training checkpoints go while it runs (atomically, so a kill keeps the last one)."""
        return self.out / IN_PROGRESS

    def resume_source(self) -> Path | None:
        """The file a resumed run continues from, by one rule for every process: the in-progress checkpoint if there is
        one, else the folder's ``checkpoint.pt``; ``None`` when there is neither (the run starts afresh)."""
        finished = self.out / "checkpoint.pt"
        return self.checkpoint if self.checkpoint.is_file() else finished if finished.is_file() else None

    def resume_from(self, check: Callable[[Path], Any] | None = None) -> Path | None:
        """Make :attr:`checkpoint` the state to resume from: the in-progress file, else a copy of ``checkpoint.pt`` (its
        run stays whole); the path resumed from, or ``None``. ``check(path)`` raises first where the run would refuse
        that file, so a refused resume copies and writes nothing."""
        finished = self.out / "checkpoint.pt"
        source = self.resume_source()
        if source is None:
            return None
        if check is not None:
            check(source)
        if source == finished:

            def copy(f: IO[bytes]) -> None:  # streamed: a checkpoint may be larger than we want in memory
                with open(finished, "rb") as original:
                    shutil.copyfileobj(original, f)

            self._guard(self.checkpoint, lambda: atomic_write(self.checkpoint, copy))
            self._copied_checkpoint = True
        self._owns_checkpoint = True
        return source

    def training_checkpoint(
        self, resume: bool, every: int, writes: bool = True, check: Callable[[Path], Any] | None = None
    ) -> tuple[Path, str | None]:
        """The checkpoint path a training run hands to :meth:`gca.GCA.fit`, and a line for the user. Resuming, the
        writing process (``writes``: rank 0 under torchrun) checks the file with ``check`` before anything is written
        and prepares it (:meth:`resume_from`); another process only reads it. ``every``: ``checkpoint_every`` (0:
        none)."""
        if resume and writes:
            source = self.resume_from(check)
            self._owns_checkpoint = True  # continued from, or written by this run from its first epoch
            return self.checkpoint, f"resuming from {source}" if source else f"no checkpoint yet in {self.out}"
        if resume:
            return (self.resume_source() or self.out / "checkpoint.pt"), None
        if writes and every:
            self.start_fresh()
            self._owns_checkpoint = True
        return self.checkpoint, None

    def start_fresh(self) -> None:
        """A run that does not resume drops the in-progress checkpoint of an earlier, interrupted run."""
        self._guard(self.checkpoint, lambda: self.checkpoint.unlink(missing_ok=True))

    def write(self, name: str, write: Callable[[IO[bytes]], Any]) -> None:
        """Stage the run file ``name`` (one of :data:`RUN_FILES`, else a ``ValueError``): ``write(f)`` writes its
        contents to the open binary file ``f``."""
        if name not in RUN_FILES:
            raise ValueError(f"{name} is not one of the run's files")
        self._staging.mkdir(exist_ok=True)
        path = self._staging / name
        self._guard(self.out / name, lambda: atomic_write(path, write))
        self._staged[name] = path

    def stage_path(self, name: str) -> Path:
        """A staged path for a file that a library writes itself (a plot); :meth:`wrote` records it."""
        self._staging.mkdir(exist_ok=True)
        return self._staging / name

    def wrote(self, name: str) -> None:
        self._staged[name] = self._staging / name

    def write_embeddings(self, embeddings: np.ndarray, node_ids: list[str] | None = None) -> None:
        """Stage ``embeddings.npy`` and, with an export file, the embeddings keyed by ``node_ids`` (default 0..N−1;
        integer ids stay integers); embeddings the library wrote at :meth:`stage_path` and recorded with :meth:`wrote`
        are not written again."""
        if "embeddings.npy" not in self._staged:
            self.write("embeddings.npy", lambda f: np.save(f, embeddings))
        if self.export is not None:
            ids = node_ids if node_ids is not None else np.arange(embeddings.shape[0], dtype=np.int64)
            staged = self.export.parent / f".{self.export.stem}.gca-staging-{secrets.token_hex(4)}{self.export.suffix}"
            self._export_staged = staged  # a hidden name with the target's suffix, beside it
            self._guard(
                self.export,
                lambda: export_embeddings(staged, embeddings, ids, progress=self.progress, shown=self.export),
            )

    def write_run(
        self,
        embeddings: np.ndarray,
        model_state: dict[str, Any],
        record: dict[str, Any],
        node_ids: list[str] | None = None,
        plots: Iterable[Path] = (),
    ) -> list[Path]:
        """A training run's files: stage the embeddings (and export), ``model.pt`` (``model_state``, as
        :meth:`gca.GCA.state` gives it) and ``results.json`` (``record``), then :meth:`commit` them with the ``plots``
        drawn at :meth:`stage_path`; the paths written."""
        import torch  # here, not above: the folder is checked before the command line loads PyTorch

        for plot in plots:
            self.wrote(Path(plot).name)
        self.write_embeddings(embeddings, node_ids)
        self.write("model.pt", lambda f: torch.save(model_state, f))
        self.write("results.json", lambda f: f.write(json_bytes(record)))
        return self.commit()

    def refuse_other_runs(self, owned: Iterable[str], command: str) -> None:
        """For a command that writes only ``owned`` names: refuse a folder that holds another kind of run (or its
        in-progress checkpoint)."""
        others = [n for n in (*RUN_FILES, IN_PROGRESS) if n not in owned and (self.out / n).exists()]
        if others:
            raise OutputError(
                f"{option('out', self.out)} holds another run's {others[0]}; give {command} a folder of its own"
            )

    def commit(self, keep: Iterable[str] = (), owned: Iterable[str] = RUN_FILES) -> list[Path]:
        """Move the staged files into place (``results.json`` last) and remove the earlier run's other files of
        ``owned`` but ``keep``; with ``checkpoint.pt`` in ``owned``, the in-progress checkpoint becomes it when this run
        owns it, else is removed. Returns the paths written."""
        written = []
        keep, owned = set(keep), tuple(owned)
        if "checkpoint.pt" in owned and self._owns_checkpoint and self.checkpoint.is_file():
            self._staged["checkpoint.pt"] = self.checkpoint
        if "results.json" in owned:  # first: from here until the end the folder holds no complete run
            self._guard(self.out / "results.json", lambda: (self.out / "results.json").unlink(missing_ok=True))
        if "checkpoint.pt" in owned and "checkpoint.pt" not in self._staged:  # another run's: never this run's
            self._guard(self.checkpoint, lambda: self.checkpoint.unlink(missing_ok=True))
        for name in owned:
            if name not in self._staged and name not in keep:
                self._guard(self.out / name, lambda name=name: (self.out / name).unlink(missing_ok=True))
        inside = self._export_inside()
        earlier = self._earlier_export()
        if earlier is not None and earlier != inside:  # an earlier run's export in this folder: not this run's
            self._guard(self.out / earlier, lambda: (self.out / earlier).unlink(missing_ok=True))
        marker = self.out / EXPORT_MARKER
        if inside is None:
            self._guard(marker, lambda: marker.unlink(missing_ok=True))
        for name in sorted(self._staged, key=lambda n: n == "results.json"):
            target = self.out / name
            self._guard(target, lambda name=name, target=target: os.replace(self._staged[name], target))
            written.append(target)
        if self._export_staged is not None:
            assert self.export is not None
            if inside is not None:  # said before it is there: a later run removes it even if this one stops now
                self._guard(marker, lambda: atomic_write(marker, lambda f: f.write(str(inside).encode())))
            self._guard(self.export, lambda: os.replace(self._export_staged, self.export))
            written.append(self.export)
            self._export_staged = None
        self.discard()
        self._committed = True
        return written

    def after_stop(self) -> str:
        """What the folder holds after the run was stopped, said as the end of "gca: interrupted; …": this run's files
        once committed, else the earlier complete run or no results (and an in-progress checkpoint, which stays);
        nothing at all where the run made the folder and left it empty."""
        out = self.out
        if self._committed:
            return f"this run's files were written to {out} before it stopped"
        if not out.is_dir():
            return "nothing was written"
        said = (
            f"{out} keeps the earlier complete run, untouched"
            if (out / "results.json").is_file()
            else f"{out} holds no results"
        )
        if self.checkpoint.is_file():
            said += spoken(
                f"; the training checkpoint {self.checkpoint} stays: the same command with {option('resume', True)} "
                "continues from it"
            )
        return said

    def _export_inside(self) -> Path | None:
        """The export's path relative to the folder, when it lies inside it (it is then one of the run's files)."""
        if self.export is None:
            return None
        try:
            return self.export.resolve().relative_to(self.out.resolve())
        except ValueError:
            return None

    def _earlier_export(self) -> Path | None:
        """The export an earlier run wrote inside the folder (its :data:`EXPORT_MARKER`), if any."""
        try:
            text = (self.out / EXPORT_MARKER).read_text().strip()
        except (OSError, UnicodeDecodeError):
            return None
        path = Path(text)
        if not text or path.is_absolute() or ".." in path.parts:
            return None
        return path

    def discard(self) -> None:
        """Remove whatever is staged (a failed or interrupted run leaves the folder as it was)."""
        shutil.rmtree(self._staging, ignore_errors=True)
        if self._export_staged is not None:
            self._export_staged.unlink(missing_ok=True)
            self._export_staged = None
        self._staged = {}

    def release(self) -> None:
        """Let other runs use the folder (the lock also ends with the process); a folder this run made and left empty is
        removed, as if the run had not started."""
        if self._lock is not None:
            release_folder(self._lock)
            self._lock = None
        if self._made:
            with contextlib.suppress(OSError):  # not empty (or another process's files in it): it stays
                self.out.rmdir()

    def __enter__(self) -> RunOutputs:
        return self

    def __exit__(self, kind, value, traceback) -> None:
        self.discard()
        if kind is not None:
            self.drop_unused_copy()

    def drop_unused_copy(self) -> None:
        """After a failure: remove the in-progress file while it is still :meth:`resume_from`'s copy of
        ``checkpoint.pt`` (which holds the same), so a failed resume leaves the folder as it was."""
        if not self._copied_checkpoint:
            return
        self._copied_checkpoint = False
        finished = self.out / "checkpoint.pt"
        with contextlib.suppress(OSError):
            if finished.is_file() and filecmp.cmp(self.checkpoint, finished, shallow=False):
                self.checkpoint.unlink()

    @staticmethod
    def _guard(user_path: Path, action: Callable[[], Any]) -> Any:
        try:
            return action()
        except OSError as exc:
            if isinstance(exc, UserError):
                raise
            raise OutputError(f"cannot write {user_path}: {exc.strerror or exc}") from None


def check_folder(folder: str | Path, parameter: str) -> Path:
    """Create ``folder`` if needed and make sure files can be written into it (an empty name is refused: it would mean
    the current folder by accident); ``parameter`` names it in the message (``"out"`` or a flag, ``"--out"``)."""
    parameter = parameter.removeprefix("--").replace("-", "_")
    if str(folder).strip() == "":
        raise OutputError(
            f"{option(parameter)} is empty; name a folder for the results (e.g. {option(parameter, 'runs/mine')})"
        )
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise OutputError(f"{option(parameter, folder)} exists and is not a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"cannot create the output folder {folder}: {exc.strerror or exc}") from None
    probe = folder / f".gca-probe-{secrets.token_hex(4)}"
    try:
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise OutputError(f"cannot write into the output folder {folder}: {exc.strerror or exc}") from None
    return folder


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False
