"""Planning: which runs each table or figure needs. A plan is data — cells of runs — and runs nothing.

A :class:`Run` is one training (GCA or a baseline) with one seed, judged on split number ``seed`` of its dataset.
GCA runs carry their *resolved* configuration (the dataset's shipped setting, the row's switches, the mode's
epoch cap and the seed), so two plans that need the same training share one run, and a changed setting is a
different run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from ..config import build_config
from ..datasets import dataset_display_name
from ..evaluate.splits import SplitSetting
from ..train.fast import FastChoice
from .baselines import BASELINES

#: ``gca reproduce --fast``: a dataset's name → the fast path's choice for it and its node count.
Training = Callable[[str], tuple[FastChoice | None, int]]

# GCA rows: (label, switches). Every switch is named so that identical runs are recognised as such.
TABLE3_GCA = (
    ("GCA-DE", {"centrality": "degree", "edge_drop": "adaptive", "feature_mask": "adaptive"}),
    ("GCA-PR", {"centrality": "pagerank", "edge_drop": "adaptive", "feature_mask": "adaptive"}),
    ("GCA-EV", {"centrality": "eigenvector", "edge_drop": "adaptive", "feature_mask": "adaptive"}),
)
TABLE3_BASELINES_BEFORE = ("raw", "node2vec", "deepwalk", "deepwalk+features", "gae", "vgae", "dgi")
#: The untrained encoder (GCA's, with the dataset's setting, 0 epochs): what training adds is the gap to GCA-DE.
#: Not in the paper's Table 3; graph-SSL papers after 2021 report it.
RANDOM_INIT = ("Random-Init", {"centrality": "degree", "edge_drop": "adaptive", "feature_mask": "adaptive",
                               "epochs": 0})  # fmt: skip
TABLE3_BASELINES_AFTER = ("gcn", "gat")
TABLE4_ROWS = (
    ("GCA–T–A", "Uniform", "Uniform", {"centrality": "degree", "edge_drop": "uniform", "feature_mask": "uniform"}),
    ("GCA–T", "Uniform", "Adaptive", {"centrality": "degree", "edge_drop": "uniform", "feature_mask": "adaptive"}),
    ("GCA–A", "Adaptive", "Uniform", {"centrality": "degree", "edge_drop": "adaptive", "feature_mask": "uniform"}),
    ("GCA", "Adaptive", "Adaptive", {"centrality": "degree", "edge_drop": "adaptive", "feature_mask": "adaptive"}),
)


@dataclass(frozen=True)
class Mode:
    """How much to run and how runs are judged. ``quick`` is sized for a laptop CPU; the full mode follows the
    paper. ``protocol`` is the evaluation protocol (:data:`gca.evaluate.classification.PROTOCOLS`)."""

    runs: int
    max_epochs: int | None  # cap on GCA's epochs (None: the dataset's Table 5 value)
    grid: tuple[float, ...]  # Figure 4's values of p_e and p_f
    grid_runs: int
    grid_max_epochs: int | None
    quick: bool
    protocol: str = "sklearn"
    split: SplitSetting = SplitSetting(count=1)  # run i is judged on one split drawn from seed i

    @classmethod
    def create(cls, quick: bool, runs: int | None = None, protocol: str = "sklearn",
               split: SplitSetting | None = None) -> Mode:  # fmt: skip
        split = replace(split or SplitSetting(), count=1)
        if quick:
            return cls(runs or 3, 200, (0.1, 0.3, 0.5, 0.7, 0.9), 1, 100, True, protocol, split)
        return cls(runs or 20, None, tuple(round(0.1 * i, 1) for i in range(1, 10)), 3, None, False, protocol, split)

    def describe(self) -> str:
        judged = f"; accuracy under the {self.protocol} evaluation protocol"
        if self.split != SplitSetting(count=1):
            named = ", ".join(f"{k} {v}" for k, v in self.split.record().items() if v is not None)
            judged += f" on {named} splits"
        if self.quick:
            return (
                f"quick mode: {self.runs} runs per cell, GCA trained for at most {self.max_epochs} epochs "
                f"({self.grid_max_epochs} for Figure 4), baselines with shortened schedules{judged}"
            )
        return f"full mode: {self.runs} runs per cell, Table 5's epochs{judged}"

    def judged(self) -> dict[str, Any]:
        """What a run's settings record of its evaluation: nothing for the default protocol and splits, so that runs
        stored before there was a choice are found again."""
        judged: dict[str, Any] = {} if self.protocol == "sklearn" else {"protocol": self.protocol}
        if self.split != SplitSetting(count=1):
            judged["split"] = _items(self.split.record())
        return judged


@dataclass(frozen=True)
class Run:
    """One training with one seed, judged on split number ``seed`` of ``dataset``."""

    dataset: str  # the paper's spelling for named datasets, else the path
    method: str  # "gca" or a key of BASELINES
    seed: int
    settings: tuple[tuple[str, Any], ...] = ()  # what the plan chose (switches, epochs, quick)
    config: tuple[tuple[str, Any], ...] = ()  # GCA: the full resolved configuration


@dataclass
class Cell:
    """A table entry: the runs it averages and its label."""

    label: str
    dataset: str
    runs: list[Run]
    info: dict[str, Any] = field(default_factory=dict)


class Planner:
    """The cells of Table 3, Table 4 and Figure 4 for one dataset at a time. With ``training`` (``--fast``) each
    trained GCA run takes the fast path's choice for its dataset (:mod:`gca.train.fast`): a run it sends to
    mini-batches records ``training`` in its settings, and keeps the planned epochs' number of updates."""

    def __init__(self, mode: Mode, baselines: tuple[str, ...] = tuple(BASELINES),
                 training: Training | None = None) -> None:  # fmt: skip
        self.mode = mode
        self.baselines = baselines
        self.training = training

    def gca_runs(self, dataset: str, switches: dict[str, Any], runs: int, max_epochs: int | None) -> list[Run]:
        dataset = dataset_display_name(dataset)
        epochs = switches.get("epochs", build_config(dataset).epochs)
        epochs = min(epochs, max_epochs) if max_epochs else epochs
        settings = {**switches, "epochs": epochs, **self.mode.judged()}
        config_keys = {k: v for k, v in settings.items() if k not in ("protocol", "split")}
        choice, num_nodes = self.training(dataset) if self.training and epochs else (None, 0)
        if choice is not None and choice.mini_batch:  # an exact choice is the plain run, shared with it
            settings["training"] = f"mini-batch B={choice.batch_size}, fan-out {','.join(map(str, choice.fanout))}"

        def config(seed: int) -> tuple[tuple[str, Any], ...]:
            cfg = build_config(dataset, None, {**config_keys, "seed": seed})
            return _items((choice.apply(cfg, num_nodes) if choice is not None else cfg).to_dict())

        return [Run(dataset, "gca", seed, _items(settings), config(seed)) for seed in range(runs)]

    def baseline_runs(self, dataset: str, key: str) -> list[Run]:
        dataset = dataset_display_name(dataset)
        judged = self.mode.judged()
        if BASELINES[key][1] == "X, A, Y":  # supervised ones judge themselves: only their split matters
            judged.pop("protocol", None)
        return [Run(dataset, key, seed, _items({"quick": self.mode.quick, **judged})) for seed in range(self.mode.runs)]

    def table3(self, dataset: str) -> list[Cell]:
        name = dataset_display_name(dataset)
        cells = []
        for key in TABLE3_BASELINES_BEFORE:
            if key in self.baselines:
                label, data_used, _ = BASELINES[key]
                cells.append(Cell(label, name, self.baseline_runs(dataset, key), {"data": data_used}))
            if key == "raw":  # GCA's own row, whichever baselines are chosen
                label, switches = RANDOM_INIT
                runs = self.gca_runs(dataset, switches, self.mode.runs, self.mode.max_epochs)
                cells.append(Cell(label, name, runs, {"data": "X, A"}))
        for label, switches in TABLE3_GCA:
            runs = self.gca_runs(dataset, switches, self.mode.runs, self.mode.max_epochs)
            cells.append(Cell(label, name, runs, {"data": "X, A", "plots": True}))
        for key in TABLE3_BASELINES_AFTER:
            if key in self.baselines:
                label, data_used, _ = BASELINES[key]
                cells.append(Cell(label, name, self.baseline_runs(dataset, key), {"data": data_used}))
        return cells

    def table4(self, dataset: str) -> list[Cell]:
        name = dataset_display_name(dataset)
        return [
            Cell(label, name, self.gca_runs(dataset, s, self.mode.runs, self.mode.max_epochs),
                 {"topology": topo, "attribute": attr, "plots": True})
            for label, topo, attr, s in TABLE4_ROWS
        ]  # fmt: skip

    def figure4(self, dataset: str) -> list[Cell]:
        name = dataset_display_name(dataset)
        cells = []
        for p_e in self.mode.grid:
            for p_f in self.mode.grid:
                switches = {
                    "centrality": "degree", "edge_drop": "adaptive", "feature_mask": "adaptive",
                    "p_e1": p_e, "p_e2": p_e, "p_f1": p_f, "p_f2": p_f,
                }  # fmt: skip
                runs = self.gca_runs(dataset, switches, self.mode.grid_runs, self.mode.grid_max_epochs)
                cells.append(Cell(f"p_e={p_e}, p_f={p_f}", name, runs, {"p_e": p_e, "p_f": p_f}))
        return cells


def _items(values: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted(values.items()))
