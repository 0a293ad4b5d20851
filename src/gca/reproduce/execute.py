"""Execution: train the runs that the store does not hold yet, GCA through the same run path as ``gca train``."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np

from ..choices import canonical_name
from ..config import GCAConfig
from ..datasets import DatasetError, LoadedDataset, load_dataset
from ..datasets.base import Split
from ..errors import quoted
from ..evaluate.classification import evaluate_embeddings
from ..evaluate.splits import SplitSetting, drop_unlabelled
from ..progress import Progress, to_stderr
from ..run.pipeline import run_gca
from ..stderr import spoken
from ..train.distributed import resolve_device
from ..train.estimator import GCA
from ..train.loop import TrainingError
from .baselines import BASELINES, BaselineResult, BaselineUnavailable, baseline_options
from .plan import SECOND_OPINION, Cell, Mode, Run
from .store import RunStore


class DatasetCache:
    """Each dataset loaded once; one that cannot be loaded is remembered with the reason (it is skipped).

    Parameters
    ----------
    data_dir
        Where the datasets are (:func:`gca.datasets.load_dataset`); ``None``: ``$GCA_DATA_DIR`` or
        ``~/.cache/gca/data``.
    """

    def __init__(self, data_dir: str | Path | None = None) -> None:
        self.data_dir = data_dir
        self._loaded: dict[str, LoadedDataset | str] = {}

    def get(self, name: str) -> LoadedDataset | str:
        """The dataset (loaded on its first request), or the one-line error that loading it raised."""
        if name not in self._loaded:
            try:
                self._loaded[name] = load_dataset(name, data_dir=self.data_dir)
            except DatasetError as exc:
                self._loaded[name] = spoken(quoted(exc))  # named as this process names options
            except Exception as exc:  # noqa: BLE001 - e.g. a failed download: the dataset is skipped, not the run
                self._loaded[name] = f"could not be loaded ({type(exc).__name__}: {exc})"
        return self._loaded[name]


def run_splits(loaded: LoadedDataset, seed: int, setting: SplitSetting | None = None) -> list[Split]:
    """The ``setting.count`` splits that judge the training seeded ``seed`` (training i of a cell has seed i): by
    default random ones drawn from seed i, or — where the dataset's benchmark has its own (Wiki-CS has 20) — its
    splits i·k … i·k + k − 1 (k = count, at most as many as it has, each once); ``setting`` may ask for public or
    few-label splits. With k = 1, training i is judged on split i, as the paper's runs are.

    Parameters
    ----------
    loaded
        The dataset (:func:`gca.datasets.load_dataset`), with its own splits if it has them.
    seed
        The training's seed, i for training i of a cell.
    setting
        The scheme and how many splits judge each training (``count``); default one split of the default scheme."""
    setting = setting or SplitSetting(count=1)
    own = loaded.splits if setting.scheme == "auto" else loaded.public
    if own and setting.scheme in ("auto", "public"):  # its unlabelled nodes removed, as every split path does
        count = min(setting.count, len(own))
        chosen = [own[(seed * count + j) % len(own)] for j in range(count)]
        return drop_unlabelled(chosen, loaded.data.y, loaded.name)
    return setting.draw(loaded.data.y, seed, loaded.splits, loaded.public, loaded.name)


def run_split(loaded: LoadedDataset, seed: int, setting: SplitSetting | None = None) -> Split:
    """The first of :func:`run_splits`: the split that judges training ``seed`` in the paper's protocol."""
    return run_splits(loaded, seed, setting)[0]


def failed_run(label: str, run: Run, record: dict[str, Any], store: RunStore) -> str:
    """``GCA-PR on Karate, seed 0 failed (OUT/runs/<key>.json): <the error>`` for a run whose record holds why it
    failed instead of an accuracy; ``label`` is the run's row."""
    return f"{label} on {run.dataset}, seed {run.seed} failed ({store.path(run)}): {record['error']}"


class Executor:
    """Runs what is missing from the store, with a progress bar that counts runs and estimates the time left.

    Parameters
    ----------
    store
        The finished runs: a run found there is not trained again, and each new record is put there.
    plots_dir
        Where the first run of each row marked for plots saves ``<dataset>-<row>-seed<i>-loss.png`` and ``…-tsne.png``;
        ``None``: no plots.
    progress
        Whether a progress bar counts the runs, and each run shows its phases (:func:`gca.progress.phase`).
    log
        Where the line about each failed run goes (one per run, new or read again); default standard error.
    """

    def __init__(
        self,
        store: RunStore,
        datasets: DatasetCache,
        mode: Mode,
        device: str = "auto",
        plots_dir: Path | None = None,
        progress: bool = True,
        log: Callable[[str], None] = to_stderr,
    ) -> None:
        self.store = store
        self.datasets = datasets
        self.mode = mode
        self.device = device
        self.plots_dir = plots_dir
        self.progress = progress
        self.log = log
        self.unavailable: dict[str, str] = {}  # baseline key → why it cannot run here
        self.trained = 0
        self.reused = 0
        self.second_opinion: set[Run] = set()  # runs judged under the sklearn protocol too (SECOND_OPINION)

    def execute(self, cells: Iterable[Cell]) -> None:
        cells = list(cells)
        unique = list(dict.fromkeys(run for cell in cells for run in cell.runs))
        plot_label: dict[Run, str] = {}
        for cell in cells:
            if cell.info.get("plots") and cell.runs:
                plot_label.setdefault(cell.runs[0], cell.label)
        # under the authors' protocol, the pair that says what training adds is judged by gca's probe as well: the
        # authors' probe stops before it converges on an untrained encoder's tiny outputs (see Reporter.gain_notes)
        self.second_opinion = {
            run
            for cell in cells
            if self.mode.protocol == "authors" and (cell.info.get("untrained") or cell.info.get("versus_untrained"))
            for run in cell.runs
        }
        runnable = [r for r in unique if isinstance(self.datasets.get(r.dataset), LoadedDataset)]
        found = {r: self.store.get(r) for r in runnable}
        pending = [r for r in runnable if found[r] is None and r.method not in self.unavailable]
        self.reused += len(runnable) - len(pending)
        if pending:
            bar = Progress(len(runnable), "runs", "run", enabled=self.progress, initial=len(runnable) - len(pending))
            try:
                for run in pending:
                    bar.describe(f"{run.dataset} {run.method} seed {run.seed}")
                    if run.method not in self.unavailable:
                        record = self.run(run, plot_label.get(run) if self.plots_dir else None)
                        if record is not None:
                            self.store.put(run, record)
                            found[run] = record
                            self.trained += 1
                    bar.update(1)
            finally:
                bar.close()
        labels = {run: cell.label for cell in reversed(cells) for run in cell.runs}  # a shared run: its first row
        for run, record in found.items():
            if record is not None and record.get("error"):
                self.log(
                    f"gca: {failed_run(labels.get(run, run.method), run, record, self.store)} — its record is "
                    "kept and read again by the same command; delete the file to train that run again"
                )

    def run(self, run: Run, plot_label: str | None = None) -> dict[str, Any] | None:
        """Train and judge one run; its record, or ``None`` when its baseline cannot run here.

        Parameters
        ----------
        run
            The run; its dataset must be one :class:`DatasetCache` could load.
        plot_label
            The row's label, named in the plots' file names and title, when this run saves the row's loss curve
            and t-SNE map (and the executor has a ``plots_dir``); ``None``: no plots.
        """
        loaded = self.datasets.get(run.dataset)
        assert isinstance(loaded, LoadedDataset)
        splits = run_splits(loaded, run.seed, self.mode.split)
        about = {"method": run.method, "dataset": run.dataset, "seed": run.seed, "settings": dict(run.settings)}
        start = time.perf_counter()
        if run.method != "gca":
            _, _, baseline = BASELINES[run.method]
            try:
                accuracies = baseline(
                    loaded.data,
                    splits,
                    run.seed,
                    self.mode.quick,
                    resolve_device(self.device),
                    protocol=self.mode.protocol,
                    progress=self.progress,
                    **baseline_options(run.method, run.dataset),
                )
            except BaselineUnavailable as exc:
                self.unavailable[run.method] = str(exc)
                return None
            except TrainingError as exc:  # a failed baseline is a result (it would fail again), not a crash
                return {**about, "accuracy": None, "error": str(exc)}
            if isinstance(accuracies, BaselineResult):  # the whole evaluation (what its probe chose) and training
                return {**about, **accuracies.record(), "seconds": time.perf_counter() - start}
            values = [float(a) for a in accuracies]
            return {
                **about,
                "accuracy": {"mean": float(np.mean(values)), "std": float(np.std(values)), "runs": values},
                "seconds": time.perf_counter() - start,
            }
        estimator = GCA(GCAConfig(**dict(run.config)), device=self.device, progress=self.progress)
        plots = None
        if plot_label:
            self.plots_dir.mkdir(parents=True, exist_ok=True)
            slug = re.sub(r"[^A-Za-z0-9]+", "-", plot_label).strip("-")
            stem = f"{canonical_name(run.dataset)}-{slug}-seed{run.seed}"
            plots = (self.plots_dir / f"{stem}-loss.png", self.plots_dir / f"{stem}-tsne.png")
        title = f"{run.dataset}, {plot_label} (seed {run.seed}, {estimator.config.epochs} epochs)"
        try:
            result = run_gca(
                estimator,
                estimator.prepare(loaded.data, loaded.directed),
                dataset=run.dataset,
                labels=loaded.data.y,
                splits=splits,
                plots=plots,
                plot_title=title,
                protocol=self.mode.protocol,
            )
        except TrainingError as exc:  # a collapsed or diverged run is a result (it would fail again), not a crash;
            # its record names the configuration it failed with, as a finished run's does
            return {**about, "config": dict(run.config), "accuracy": None, "error": str(exc)}
        record = {**about, **result.record}
        if run in self.second_opinion:
            record[SECOND_OPINION] = evaluate_embeddings(result.embeddings, loaded.data.y, splits, "sklearn").to_dict()
        return {**record, "seconds": time.perf_counter() - start}
