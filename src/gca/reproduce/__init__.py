"""``gca reproduce``: the paper's Table 3, Table 4, Figure 3 and Figure 4 (Zhu et al., WWW 2021) with one command.

A reproduction is a list of independent *runs* — one training (GCA or a baseline) with one seed, judged on one
data split, as the paper's "twenty runs for different data splits" — and the tables and figures aggregated from
them. Four parts, each replaceable:

* planning (:mod:`.plan`) — which runs each table or figure needs;
* the run store (:mod:`.store`) — one atomically written JSON file per finished run, keyed by everything that
  determines it (resolved configuration and gca version included), so interrupted reproductions continue and
  identical runs are shared between tables;
* execution (:mod:`.execute`) — trains what the store lacks, GCA through :func:`gca.run.pipeline.run_gca`;
* reporting (:mod:`.report`, :mod:`.table`) — tables beside the paper's numbers, and figures.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from ..datasets import LoadedDataset, check_dataset_name
from ..evaluate.splits import SplitSetting
from ..progress import to_stderr
from ..train.distributed import resolve_device
from ..train.fast import FastChoice, fast_choice
from .baselines import BASELINES
from .execute import DatasetCache, Executor, run_split, run_splits
from .paper import PAPER_DATASETS, PAPER_TABLE3, PAPER_TABLE4
from .plan import QUICK_BASELINES, Cell, Mode, Planner, Run
from .report import Reporter
from .store import RunStore, run_key
from .table import differs, write_table

TASKS = ("table3", "table4", "figure4", "figure3")

__all__ = [
    "PAPER_DATASETS",
    "PAPER_TABLE3",
    "PAPER_TABLE4",
    "TASKS",
    "Cell",
    "DatasetCache",
    "Executor",
    "Mode",
    "Planner",
    "Reporter",
    "Reproduction",
    "Run",
    "RunStore",
    "differs",
    "reproduce",
    "run_key",
    "run_split",
    "run_splits",
    "write_table",
]


class Reproduction:
    """The four parts wired for one output folder: ``OUT/runs`` (the store), ``OUT/plots``, tables and figures.

    Parameters
    ----------
    out
        The output folder: ``runs/`` (one JSON file per finished run), ``plots/``, the tables and figures.
    datasets
        Dataset names (any spelling of the paper's) or paths of graph files or folders.
    data_dir
        Where the datasets are (default: ``$GCA_DATA_DIR`` or ``~/.cache/gca/data``).
    quick
        Quick mode (:class:`Mode`): every GCA row keeps its updates; one training per cell judged on 20 splits.
    runs
        Trainings per cell (default 20, or 1 in quick mode).
    device
        ``auto``, ``cpu`` or ``cuda[:N]``.
    plots
        Whether the first run of every GCA row saves its loss curve and t-SNE map.
    progress
        Whether a progress bar counts the runs.
    baselines
        Keys of :data:`gca.reproduce.baselines.BASELINES` for Table 3; default all, or
        :data:`~gca.reproduce.plan.QUICK_BASELINES` in quick mode.
    log
        Where one-line notes go (a skipped dataset, a failed run); default standard error.
    figure4_datasets
        Figure 4's datasets (default: ``datasets``).
    mode
        A :class:`Mode` given whole (then ``quick``, ``runs``, ``protocol`` and ``split`` are not read).
    protocol
        The evaluation protocol, ``authors`` (the paper's, the default) or ``sklearn``.
    split
        The split scheme and fractions (:class:`gca.evaluate.splits.SplitSetting`); its count is the mode's.
    fast
        Train each GCA run on the fast path's choice (:func:`gca.train.fast.fast_choice`; always in quick mode)."""

    def __init__(
        self,
        out: str | Path,
        datasets: Iterable[str],
        data_dir: str | Path | None = None,
        quick: bool = False,
        runs: int | None = None,
        device: str = "auto",
        plots: bool = True,
        progress: bool = True,
        baselines: Iterable[str] | None = None,
        log: Callable[[str], None] = to_stderr,
        figure4_datasets: Iterable[str] | None = None,
        mode: Mode | None = None,
        protocol: str = "authors",
        split: SplitSetting | None = None,
        fast: bool = False,
    ) -> None:
        self.out = Path(out)
        # an unknown name is an error before anything runs; a dataset named twice in two spellings runs once
        self.datasets = list(dict.fromkeys(check_dataset_name(d) for d in datasets))
        # The paper's Figure 4 is on Amazon-Photo alone; by default it follows ``datasets``.
        figure4 = self.datasets if figure4_datasets is None else figure4_datasets
        self.figure4_datasets = list(dict.fromkeys(check_dataset_name(d) for d in figure4))
        self.skipped: dict[str, str] = {}  # dataset → why it could not run (filled by run)
        self.needed: set[str] = set()  # the datasets the last run planned
        self.mode = mode or Mode.create(quick, runs, protocol, split)
        self.log = log
        self.device = device
        if baselines is None:  # quick mode saves the baselines' time: raw features unless others are named
            baselines = QUICK_BASELINES if self.mode.quick else tuple(BASELINES)
        self.baselines = tuple(baselines)
        # quick mode keeps every GCA row's updates, in mini-batches where the fast path finds them faster
        self.fast = fast or self.mode.quick
        self.planner = Planner(self.mode, self.baselines, self._fast_choice if self.fast else None)
        self.store = RunStore(self.out / "runs")
        self.data = DatasetCache(data_dir)
        self.executor = Executor(
            self.store, self.data, self.mode, device, self.out / "plots" if plots else None, progress, log
        )
        self.reporter = Reporter(
            self.out,
            self.store,
            self.data,
            self.mode,
            self.executor.unavailable,
            [b for b in BASELINES if b not in self.baselines],
        )

    def _fast_choice(self, dataset: str) -> tuple[FastChoice | None, int]:
        """With ``fast``: the fast path's choice for ``dataset`` on this device (none for one that cannot be loaded)."""
        loaded = self.data.get(dataset)
        if not isinstance(loaded, LoadedDataset):
            return None, 0
        return fast_choice(loaded.data.num_nodes, resolve_device(self.device)), loaded.data.num_nodes

    @property
    def ran_nothing(self) -> bool:
        """After :meth:`run`: whether every dataset it needed was skipped (nothing in its tables is a number)."""
        return bool(self.needed) and self.needed <= set(self.skipped)

    @property
    def trained(self) -> int:
        return self.executor.trained

    @property
    def reused(self) -> int:
        return self.executor.reused

    def run(self, task: str) -> list[Path]:
        """Run ``task`` (one of :data:`TASKS`, or ``all`` for the four in that order) and return the files written;
        the runs of every table asked for are executed before any table is written."""
        tasks = TASKS if task == "all" else (task,)
        self.out.mkdir(parents=True, exist_ok=True)
        plans: dict[str, list[Cell]] = {}
        for t in tasks:
            if t != "figure3":
                datasets = self.figure4_datasets if t == "figure4" else self.datasets
                plans[t] = [cell for ds in datasets for cell in getattr(self.planner, t)(ds)]
        self.needed = {cell.dataset for cells in plans.values() for cell in cells}
        for ds in dict.fromkeys(cell.dataset for cells in plans.values() for cell in cells):
            loaded = self.data.get(ds)
            if not isinstance(loaded, LoadedDataset):
                self.skipped[ds] = loaded
                self.log(f"gca: skipping {ds}: {loaded}")
        self.executor.execute(cell for cells in plans.values() for cell in cells)
        written: list[Path] = []
        if "table3" in plans:
            written += self.reporter.table3(plans["table3"], self.datasets)
        if "table4" in plans:
            written += self.reporter.table4(plans["table4"], self.datasets)
        if "figure4" in plans:
            written += self.reporter.figure4(plans["figure4"], self.figure4_datasets)
        if "figure3" in tasks:
            from .figures import karate_edge_centrality

            karate_edge_centrality(self.out / "figure3.png")
            written.append(self.out / "figure3.png")
        return written


def reproduce(task: str, repro: Reproduction) -> list[Path]:
    """Run ``task`` with ``repro`` (same as ``repro.run(task)``)."""
    return repro.run(task)
