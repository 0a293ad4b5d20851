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

from ..config import build_config, shipped_config
from ..datasets import dataset_display_name
from ..evaluate.splits import SplitSetting
from ..seeds import training_seeds
from ..train.fast import FastChoice
from .baselines import BASELINES, IMPLEMENTATION, baseline_options

#: :class:`gca.reproduce.Reproduction`'s ``fast``: a dataset's name → the fast path's choice for it and its node count.
Training = Callable[[str], tuple[FastChoice | None, int]]

# GCA rows: (label, switches). Every switch is named so that identical runs are recognised as such.
TABLE3_GCA = (
    ("GCA-DE", {"centrality": "degree", "edge_drop": "adaptive", "feature_mask": "adaptive"}),
    ("GCA-PR", {"centrality": "pagerank", "edge_drop": "adaptive", "feature_mask": "adaptive"}),
    ("GCA-EV", {"centrality": "eigenvector", "edge_drop": "adaptive", "feature_mask": "adaptive"}),
)
#: The row of the setting ``gca tune --space wide`` found for a dataset on validation labels (``--config tuned``,
#: gca/configs/tuned/), planned where one is shipped: beside Table 5's rows, never in their place.
TUNED_LABEL = "GCA (tuned; not the paper's)"
TABLE3_BASELINES_BEFORE = (
    "raw",
    "propagated-1",
    "propagated-2",
    "propagated-3",
    "node2vec",
    "deepwalk",
    "deepwalk+features",
    "gae",
    "vgae",
    "dgi",
    "gmi",
    "mvgrl",
)
#: The untrained encoder (GCA's, with the dataset's setting, 0 epochs): what training adds is the gap to GCA-DE.
#: Not in the paper's Table 3; graph-SSL papers after 2021 report it.
RANDOM_INIT = (
    "Random-Init",
    {"centrality": "degree", "edge_drop": "adaptive", "feature_mask": "adaptive", "epochs": 0},
)
#: The key of a run record's second judgement, by gca's own (sklearn) probe, of the runs that say what training adds
#: (Random-Init and its trained twin) when a reproduction judges under the authors' protocol.
SECOND_OPINION = "sklearn_accuracy"
#: The row of Random-Init's runs judged by gca's probe (:data:`SECOND_OPINION`).
SECOND_OPINION_LABEL = "Random-Init (sklearn probe)"
TABLE3_BASELINES_AFTER = ("gcn", "gat")
#: Quick mode's baselines when none are named: the raw and propagated features (no training; the propagated rows are
#: not in the paper) and the two contrastive baselines
#: closest to GCA, GMI and MVGRL (MVGRL is the paper's strongest baseline on Amazon-Photo), on schedules sized for a
#: laptop CPU (marked ‡ where shortened); the others' schedules would be shortened too.
QUICK_BASELINES = ("raw", "propagated-1", "propagated-2", "propagated-3", "gmi", "mvgrl")
#: The row whose training Random-Init leaves out (same centrality, switches, seeds and splits): what training adds
#: is the paired difference between the two.
TRAINED_TWIN = {"table3": "GCA-DE", "table4": "GCA"}
TABLE4_ROWS = (
    ("GCA–T–A", "Uniform", "Uniform", {"centrality": "degree", "edge_drop": "uniform", "feature_mask": "uniform"}),
    ("GCA–T", "Uniform", "Adaptive", {"centrality": "degree", "edge_drop": "uniform", "feature_mask": "adaptive"}),
    ("GCA–A", "Adaptive", "Uniform", {"centrality": "degree", "edge_drop": "adaptive", "feature_mask": "uniform"}),
    ("GCA", "Adaptive", "Adaptive", {"centrality": "degree", "edge_drop": "adaptive", "feature_mask": "adaptive"}),
)


#: Quick mode: evaluation splits that judge each training (the authors' probe fits them together).
QUICK_SPLITS = 20


@dataclass(frozen=True)
class Mode:
    """How much to run and how runs are judged. The full mode follows the paper: 20 trainings per cell, training i
    judged on one split drawn from seed i. ``quick`` keeps every GCA row's number of updates (mini-batches where
    :mod:`gca.train.fast` finds them faster) and saves time on trainings (one per cell, judged on :data:`QUICK_SPLITS`
    splits) and on the baselines. ``protocol`` (:data:`gca.evaluate.classification.PROTOCOLS`) is the authors' unless
    asked otherwise."""

    runs: int  # trainings per cell, seeds 0 … runs − 1 (gca.seeds.training_seeds, as a run's repeated pretrainings)
    max_epochs: int | None  # cap on the tables' GCA epochs (None: Table 5's); a capped row is marked shortened
    grid: tuple[float, ...]  # Figure 4's values of p_e and p_f
    grid_runs: int
    grid_max_epochs: int | None
    quick: bool
    protocol: str = "authors"
    split: SplitSetting = SplitSetting(count=1)  # training i is judged on split.count splits drawn from seed i

    @classmethod
    def create(
        cls, quick: bool, runs: int | None = None, protocol: str = "authors", split: SplitSetting | None = None
    ) -> Mode:
        split = (split or SplitSetting()).for_protocol(protocol)
        if quick:
            return cls(
                runs or 1, None, (0.1, 0.3, 0.5, 0.7, 0.9), 1, 100, True, protocol, replace(split, count=QUICK_SPLITS)
            )
        return cls(
            runs or 20,
            None,
            tuple(round(0.1 * i, 1) for i in range(1, 10)),
            3,
            None,
            False,
            protocol,
            replace(split, count=1),
        )

    @property
    def splits_per_run(self) -> int:
        return self.split.count

    @property
    def comparable(self) -> bool:
        """Whether numbers are judged as the paper's were, so that a difference from them means something."""
        return self.protocol == "authors"

    def describe(self, splits: int | None = None) -> str:
        """One sentence: how many trainings and splits make a cell, and how they are judged.

        Parameters
        ----------
        splits
            The splits that judged each training, as the records say (a dataset's own splits may be fewer than
            asked); ``None`` or 0: the mode's :attr:`splits_per_run`.
        """
        runs, splits = self.runs, splits or self.splits_per_run
        trainings = f"{plural(runs, 'training')} per cell (seed{'s 0–' + str(runs - 1) if runs > 1 else ' 0'})"
        judged = (
            f"each judged on {plural(splits, 'split')} drawn from its seed"
            if splits > 1
            else "training i judged on split i"
        )
        kind = "quick mode" if self.quick else "full mode"
        return (
            f"{kind}: {trainings}, {judged} ({self.split_words()}); mean ± std over the "
            f"{plural(runs * splits, '(training, split) value')}, under the {self.protocol} protocol"
        )

    def split_words(self) -> str:
        """The splits, said: random 10/10/80 % (cut with int() under the authors' protocol), or the dataset's own."""
        s = self.split
        if s.scheme == "fewshot":
            return f"fewshot: {s.shots} training nodes per class, validation {s.val:g}"
        if s.scheme == "public":
            return "the dataset's public split"
        test = "the rest" if s.test is None else f"{s.test:g}"
        cut = ", parts cut with int() as the authors' script" if s.sizes == "floor" else ""
        own = ", or the dataset's own splits where it has them" if s.scheme == "auto" else ""
        return f"random: train {s.train:g}, validation {s.val:g}, test {test}{cut}{own}"

    def judged(self) -> dict[str, Any]:
        """What a run's settings record of its evaluation: nothing for the sklearn protocol and default splits, so
        that a default run's key is the same as one that records no evaluation."""
        judged: dict[str, Any] = {} if self.protocol == "sklearn" else {"protocol": self.protocol}
        if replace(self.split, count=1) != SplitSetting(count=1):
            judged["split"] = _items(self.split.record())
        if self.splits_per_run != 1:
            judged["splits_per_run"] = self.splits_per_run
        return judged


def plural(count: int, noun: str) -> str:
    """``1 run``, ``2 runs``, ``1,000 runs``: ``noun`` with an ``s`` unless ``count`` is 1."""
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


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
    """The cells of Table 3, Table 4 and Figure 4 for one dataset at a time. With ``training`` (a reproduction's
    ``fast``) each trained GCA run takes the fast path's choice for its dataset (:mod:`gca.train.fast`): a run it
    sends to mini-batches records ``training`` in its settings, and keeps the planned epochs' number of updates.

    Parameters
    ----------
    baselines
        Keys of :data:`gca.reproduce.baselines.BASELINES`: the baselines' rows of Table 3 (GCA's rows are always
        planned).
    training
        A dataset's name → the fast path's choice for it and its node count; ``None``: every GCA run trains as its
        configuration says.
    """

    def __init__(
        self, mode: Mode, baselines: tuple[str, ...] = tuple(BASELINES), training: Training | None = None
    ) -> None:
        self.mode = mode
        self.baselines = baselines
        self.training = training

    def gca_runs(self, dataset: str, switches: dict[str, Any], runs: int, max_epochs: int | None) -> list[Run]:
        dataset = dataset_display_name(dataset)
        epochs = switches.get("epochs", build_config(dataset).epochs)
        epochs = min(epochs, max_epochs) if max_epochs else epochs
        judged = self.mode.judged()
        settings = {**switches, "epochs": epochs, **judged}
        config_keys = {k: v for k, v in settings.items() if k not in judged}
        choice, num_nodes = self.training(dataset) if self.training and epochs else (None, 0)
        if choice is not None and choice.mini_batch:  # an exact choice is the plain run, shared with it
            settings["training"] = f"mini-batch B={choice.batch_size}, fan-out {','.join(map(str, choice.fanout))}"

        def config(seed: int) -> tuple[tuple[str, Any], ...]:
            cfg = build_config(dataset, None, {**config_keys, "seed": seed})
            return _items((choice.apply(cfg, num_nodes) if choice is not None else cfg).to_dict())

        return [Run(dataset, "gca", seed, _items(settings), config(seed)) for seed in training_seeds(0, runs)]

    def baseline_runs(self, dataset: str, key: str) -> list[Run]:
        dataset = dataset_display_name(dataset)
        judged = self.mode.judged()
        if BASELINES[key][1] == "X, A, Y":  # supervised ones judge themselves: only their split matters
            judged.pop("protocol", None)
        settings = {"quick": self.mode.quick, **judged, **IMPLEMENTATION.get(key, {}), **baseline_options(key, dataset)}
        return [Run(dataset, key, seed, _items(settings)) for seed in training_seeds(0, self.mode.runs)]

    def table3(self, dataset: str) -> list[Cell]:
        name = dataset_display_name(dataset)
        cells = []
        for key in TABLE3_BASELINES_BEFORE:
            if key in self.baselines:
                label, data_used, _ = BASELINES[key]
                cells.append(Cell(label, name, self.baseline_runs(dataset, key), {"data": data_used}))
            if key == "propagated-3":  # GCA's own untrained rows after the feature rows, whichever are chosen
                cells += self.random_init(dataset, {"data": "X, A"})
        for label, switches in TABLE3_GCA:
            runs = self.gca_runs(dataset, switches, self.mode.runs, self.mode.max_epochs)
            cells.append(
                Cell(
                    label,
                    name,
                    runs,
                    {"data": "X, A", "plots": True, "versus_untrained": label == TRAINED_TWIN["table3"]},
                )
            )
        tuned = shipped_config(name, "tuned")
        if tuned:
            runs = self.gca_runs(dataset, tuned, self.mode.runs, self.mode.max_epochs)
            cells.append(Cell(TUNED_LABEL, name, runs, {"data": "X, A", "tuned": True}))
        for key in TABLE3_BASELINES_AFTER:
            if key in self.baselines:
                label, data_used, _ = BASELINES[key]
                cells.append(Cell(label, name, self.baseline_runs(dataset, key), {"data": data_used}))
        return cells

    def random_init(self, dataset: str, info: dict[str, Any]) -> list[Cell]:
        """The untrained encoder's row (:data:`RANDOM_INIT`), judged as every row is; under the authors' protocol also
        a row of the same runs judged by gca's probe (:data:`SECOND_OPINION_LABEL`): the authors' 3,000-step Adam probe
        does not converge on an untrained encoder's tiny outputs, gca's solver runs to convergence.

        Parameters
        ----------
        info
            The row's entries in its table besides the accuracy (Table 3: ``{"data": "X, A"}``; Table 4: the
            topology and attribute columns), copied into each cell's :attr:`Cell.info`.
        """
        label, switches = RANDOM_INIT
        runs = self.gca_runs(dataset, switches, self.mode.runs, self.mode.max_epochs)
        name = dataset_display_name(dataset)
        cells = [Cell(label, name, runs, {**info, "untrained": True})]
        if self.mode.protocol == "authors":
            cells.append(Cell(SECOND_OPINION_LABEL, name, runs, {**info, "judge": SECOND_OPINION}))
        return cells

    def table4(self, dataset: str) -> list[Cell]:
        name = dataset_display_name(dataset)
        return self.random_init(dataset, {"topology": "untrained", "attribute": "untrained"}) + [
            Cell(
                label,
                name,
                self.gca_runs(dataset, s, self.mode.runs, self.mode.max_epochs),
                {
                    "topology": topo,
                    "attribute": attr,
                    "plots": True,
                    "versus_untrained": label == TRAINED_TWIN["table4"],
                },
            )
            for label, topo, attr, s in TABLE4_ROWS
        ]

    def figure4(self, dataset: str) -> list[Cell]:
        name = dataset_display_name(dataset)
        cells = []
        for p_e in self.mode.grid:
            for p_f in self.mode.grid:
                switches = {
                    "centrality": "degree",
                    "edge_drop": "adaptive",
                    "feature_mask": "adaptive",
                    "p_e1": p_e,
                    "p_e2": p_e,
                    "p_f1": p_f,
                    "p_f2": p_f,
                }
                runs = self.gca_runs(dataset, switches, self.mode.grid_runs, self.mode.grid_max_epochs)
                cells.append(Cell(f"p_e={p_e}, p_f={p_f}", name, runs, {"p_e": p_e, "p_f": p_f}))
        return cells


def _items(values: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted(values.items()))
