"""A job: one graph loaded with the run's configuration — what ``gca train``, ``gca embed``, ``gca tune`` and a user's
script run on.

The configuration is built in layers (:meth:`Job.open`); :meth:`Job.prepare` cleans the graph and computes what GCA
needs once per graph, :meth:`Job.clean` only cleans it. Nothing here prints; the one thing it writes is the prepared
graph, into :attr:`Job.store` when the job has one.
"""

from __future__ import annotations

import contextlib
import math
import time
from dataclasses import dataclass, field
from typing import Any

import torch

from ..augment.prepared import PreparedGraph, preparation_steps
from ..config import (
    ConfigError,
    GCAConfig,
    batches_per_epoch,
    build_config,
    epochs_given,
    is_named_config,
    mini_batch_epochs,
    planned_updates,
    read_config_file,
)
from ..datasets.base import LoadedDataset
from ..errors import option
from ..evaluate.splits import Split, SplitSetting
from ..graph.graph import Graph, GraphError, prepare_graph
from ..mapped import page_out, trim_heap
from ..progress import duration, phase
from ..stderr import spoken
from ..train.estimator import GCA
from ..train.fast import FastChoice, choose_training
from .store import CACHE_MIN_EDGES, PreparedStore


@dataclass
class Job:
    """One graph with its configuration, made by :meth:`open`; :meth:`prepare` (or :meth:`clean`) cleans the graph,
    :meth:`splits` draws the evaluation splits, and :meth:`record` says what ``results.json`` adds about it.

    Parameters
    ----------
    loaded, config
        The dataset as loaded, and the run's resolved configuration.
    prepared, graph
        The prepared graph (once :meth:`prepare` ran) and the cleaned graph (once prepared or cleaned).
    split_record, schedule
        What :meth:`splits` drew, and the mini-batch epochs chosen to keep the full-graph setting's updates.
    fast
        The fast path's choice (``--fast``), or ``gca train``'s default choice on a CPU, if one was made.
    store, store_record
        The prepared graph's folder it is read from or written to, and the record of it (whether it was opened).
    store_graph
        Write a graph cleaned here to ``store``: ``None`` from :data:`.store.CACHE_MIN_EDGES` directed edges up,
        ``True`` always, ``False`` never.
    world_size
        The processes that share each update.
    exact_seconds
        Where ``gca train``'s default chose exact training on a CPU: the run's own epochs of it, estimated in
        seconds (:func:`gca.train.fast.exact_update_seconds`).
    """

    loaded: LoadedDataset
    config: GCAConfig
    prepared: PreparedGraph | None = None
    graph: Graph | None = field(default=None, repr=False)  # the cleaned graph, once prepared or cleaned
    split_record: dict | None = field(default=None, repr=False)  # what splits() drew
    schedule: dict | None = None  # mini-batch epochs chosen to keep the full-graph setting's updates, if they were
    fast: FastChoice | None = None  # the fast path's choice (--fast) or gca train's default, if one was made
    store: PreparedStore | None = field(default=None, repr=False)
    store_graph: bool | None = None
    store_record: dict | None = field(default=None, repr=False)  # the prepared graph's folder, and whether opened
    world_size: int = 1  # processes that share each update (a mini-batch epoch's updates depend on it)
    exact_seconds: float | None = None

    @classmethod
    def open(
        cls,
        loaded: LoadedDataset,
        config_file: str | None = None,
        overrides: dict[str, Any] | None = None,
        world_size: int = 1,
        fast: bool = False,
        device: str | torch.device = "cpu",
        store: PreparedStore | None = None,
        store_graph: bool | None = None,
        training: str = "config",
    ) -> Job:
        """``loaded`` with its configuration: the dataset's setting (named datasets), ``config_file``, then
        ``overrides``.

        ``training`` says who chooses between exact and mini-batch training (docs/large-graphs.md):

        * ``"config"`` (the default): the configuration, as it is (exact unless it sets ``batch_size``);
        * ``"fast"`` (``--fast``), ``"auto"`` (``gca train`` without ``--fast`` or ``--exact``): the rule of
          :func:`gca.train.fast.choose_training`, ``"auto"`` estimating the setting's exact schedule (and
          :attr:`exact_seconds` the run's own epochs);
        * ``"exact"`` (``--exact``): exact training; a ``batch_size`` of the user's is refused.

        A choice is a layer between the dataset's setting and the user's, whose ``batch_size`` and ``fanout`` are kept
        (under ``"auto"`` the user's ``batch_size`` makes no choice); :attr:`fast` says what was chosen and why. A
        mini-batch run whose epochs the user did not give keeps the setting's number of *updates*
        (:func:`gca.config.mini_batch_epochs`), and :attr:`schedule` says so.

        Parameters
        ----------
        loaded
            The dataset (:func:`gca.datasets.load_dataset` or :func:`~gca.datasets.files.load_files`); with a usable
            ``store``, its :meth:`~gca.run.store.PreparedStore.loaded`.
        config_file
            A TOML or JSON file of config keys, or a shipped alternative's name (``"authors"``); ``None`` for none.
        overrides
            Config fields → values, applied last.
        world_size
            The processes that will train together.
        fast
            The same as ``training="fast"``.
        device
            The device training will run on (read by the fast path and the default).
        training
            ``"config"``, ``"fast"``, ``"auto"`` or ``"exact"`` (above).
        store, store_graph
            The prepared graph's folder (:class:`gca.run.store.PreparedStore`; ``None`` for none), and whether to write
            the cleaned graph to it (``None``: for large graphs only).
        """
        if is_named_config(config_file) and not loaded.named:
            raise ConfigError(
                f"{option('config_file', config_file)} is a shipped setting of the paper's datasets, and {loaded.name} "
                "is not one of them; give a TOML or JSON file"
            )
        training = "fast" if fast else training
        if training not in TRAININGS:
            raise ValueError(f"training must be one of {', '.join(TRAININGS)}, got {training!r}")
        overrides = dict(overrides or {})
        own_file = read_config_file(config_file) if config_file and not is_named_config(config_file) else {}
        user = {**own_file, **overrides}  # the user's own keys
        name = loaded.name if loaded.named else None
        config = None  # the user's configuration, where the default choice read it
        choice = schedule = None
        if training == "exact" and user.get("batch_size"):
            raise ConfigError(
                f"{option('training', 'exact')} trains on the whole graph at every update, and "
                f"batch_size={user['batch_size']} asks for mini-batches; leave out one of them"
            )
        if training == "fast" or (training == "auto" and "batch_size" not in user):
            config = build_config(name, config_file, overrides) if training == "auto" else None
            schedule = config  # with the setting's epochs: epochs the user gave do not change the training chosen
            if config is not None and epochs_given(config_file, overrides):
                setting = build_config(name, config_file if is_named_config(config_file) else None, {})
                schedule = config.replace(epochs=setting.epochs)
            choice = choose_training(training, loaded.data, device, schedule, world_size)
            choice = choice.keeping(user) if choice is not None else None
        if choice is not None:
            layer = choice.layer()
            if config is None or any(getattr(config, key) != value for key, value in layer.items()):
                config = None  # the choice changes the configuration: built with it, between the setting and the user
            overrides = {**layer, **overrides}
        job = cls(
            loaded,
            config if config is not None else build_config(name, config_file, overrides),
            fast=choice,
            store=store,
            store_graph=store_graph,
            world_size=world_size,
        )
        cfg = job.config
        if choice is not None and choice.by == "default" and not cfg.batch_size:
            # the estimate is linear in the epochs: the run's own from the setting's, without a second pass over x
            job.exact_seconds = choice.exact_seconds * cfg.epochs / schedule.epochs if schedule.epochs else 0.0
        if cfg.batch_size and cfg.epochs and not epochs_given(config_file, overrides):
            epochs, steps = mini_batch_epochs(
                cfg.epochs, loaded.data.num_nodes, cfg.batch_size, cfg.steps_per_epoch, world_size
            )
            job.schedule = {"full_graph_epochs": cfg.epochs, "updates_per_epoch": steps, "epochs": epochs}
            job.config = cfg.replace(epochs=epochs)
        return job

    @property
    def name(self) -> str:
        return self.loaded.name

    @property
    def labels(self) -> torch.Tensor | None:
        return self.loaded.data.y

    def prepare(self, estimator: GCA, require_edges: bool = True) -> PreparedGraph:
        """Clean the graph (:meth:`clean`) and compute centrality and the views' probabilities for ``estimator``, its
        steps shown on stderr where its ``progress`` is on; a graph without edges is refused where ``require_edges``."""
        start = time.perf_counter()
        steps = preparation_steps(estimator.config, clean=True)  # cleaned here, the rest by the estimator
        with contextlib.closing(phase(len(steps), "prepare", "step", enabled=estimator.progress)) as bar:
            self.clean(estimator.config.feature_norm, require_edges)  # frees the raw edges before centrality's arrays
            cleaning = time.perf_counter() - start
            bar.update(1, done="cleaned")
            self.prepared = estimator.prepare(
                self.graph, store=self.store if self.stored else None, on_step=lambda name: bar.update(1, done=name)
            )
        self.prepared.seconds += cleaning  # prepare_seconds counts the cleaning, as when the estimator cleans
        trim_heap()  # the loader's and the preparation's freed blocks go back to the kernel
        return self.prepared

    def clean(self, feature_norm: str, require_edges: bool = False) -> Graph:
        """The cleaned graph alone, features normalised as ``feature_norm`` (``"row"`` or ``"none"``) says. Where
        ``require_edges`` (a training run) a graph without edges is refused: for a user's run an empty edge list is
        almost always a broken input."""
        if self.store is not None and self.store.meta is not None:  # opened: cleaned when it was written
            self.graph = self.store.graph(feature_norm)
            self.store_record = {"folder": str(self.store.folder), "opened": True}
        else:
            self.graph = prepare_graph(self.loaded.data, self.loaded.directed, feature_norm)
        if require_edges and self.graph.edge_index.shape[1] == 0:
            raw_edges = self.loaded.data.edge_index
            what = "only self-loops" if raw_edges is not None and raw_edges.numel() else "no edges"
            raise GraphError(f"the graph has {what}; GCA learns from the graph structure, so give at least one edge")
        if (
            self.store is not None
            and self.store.meta is None
            and self.store_graph is not False
            and (self.store_graph or self.graph.edge_index.shape[1] >= CACHE_MIN_EDGES)
        ):
            if self.store.write(self.loaded, self.graph):
                self.store_record = {"folder": str(self.store.folder), "opened": False}
                # from here on this run reads what it wrote, as later runs will: the graph's arrays become pages of
                # the folder's files, which the kernel may drop, and the copies in memory go
                read = self.loaded
                self.loaded, self.graph = self.store.loaded(), self.store.graph(feature_norm)
                _give_up_arrays(read)
        self._release_raw_edges()
        return self.graph

    @property
    def stored(self) -> bool:
        """Whether the graph is read from, or was written to, a prepared graph's folder (:attr:`store`)."""
        return self.store is not None and self.store.meta is not None

    def _release_raw_edges(self) -> None:
        """Once the graph is cleaned, ``loaded.data.edge_index`` (the file's int64 edges) is set to ``None``: a job
        keeps one copy of the edges, :attr:`graph`'s."""
        data = self.loaded.data
        if data.edge_index is not None and data.edge_index.data_ptr() != self.graph.edge_index.data_ptr():
            data.edge_index = None

    @property
    def warnings(self) -> list[str]:
        """One line each: about the files read, then about the graph cleaned (once it is)."""
        return self.loaded.warnings + (self.graph.warnings if self.graph is not None else [])

    def schedule_warnings(self) -> list[str]:
        """For a command that trains: one line where the run is shorter than its learning-rate warm-up (it never trains
        at its learning rate)."""
        cfg = self.config
        updates = planned_updates(cfg, self.loaded.data.num_nodes, self.world_size)
        if not cfg.epochs or updates >= cfg.warmup_updates:
            return []
        per_epoch = f" ({cfg.epochs} epochs of {updates // cfg.epochs})" if cfg.batch_size else ""
        made = f"{updates} update{'' if updates == 1 else 's'}{per_epoch}"
        ends = cfg.lr * updates / cfg.warmup_updates
        return [  # named as this process names options (gca.stderr.spoken)
            spoken(
                f"the run makes {made}, fewer than its learning-rate warm-up of {cfg.warmup_updates}: it ends at lr "
                f"{ends:.3g}, never reaching lr {cfg.lr:g} (more {option('epochs')}, or "
                f"{option('warmup_steps', command_line='N')})"
            )
        ]

    def splits(self, setting: SplitSetting | int = 20) -> list[Split] | None:
        """The evaluation splits ``setting`` draws from the config's seed (a number: that many of the default scheme's);
        ``None`` for a graph without labels. :attr:`split_record` then says what was drawn."""
        if self.labels is None:
            return None
        setting = SplitSetting(count=setting) if isinstance(setting, int) else setting
        splits = setting.draw(
            self.labels, self.config.seed, self.loaded.splits, self.loaded.public, self.name, self.loaded.class_names
        )
        self.split_record = setting.record(splits)
        return splits

    def summary(self, estimator: GCA) -> str:
        """One line: the graph, and what the run does with it (centrality, epochs, device, objective, batches)."""
        from ..objective import objective_reason, resolve_objective

        graph, cfg, place = self.graph, self.config, estimator.placement
        assert graph is not None, "prepare() first"
        line = (
            f"{self.name}: {graph.num_nodes} nodes, {graph.edge_index.shape[1]} directed edges"
            f" ({'directed' if graph.directed else 'undirected'}), {graph.num_features} features;"
            f" centrality={cfg.centrality}, epochs={cfg.epochs}, device={estimator.device.type}"
        )
        if place is not None and place.distributed:
            line += f", {place.world_size} processes"
        chosen = " ".join(resolve_objective(cfg.loss_backend, cfg.precision, estimator.device))
        line += f", objective={chosen} ({objective_reason(cfg.loss_backend, cfg.precision, estimator.device)})"
        if cfg.warmup_updates > 1 and cfg.epochs > 0:
            line += f", lr warm-up over {cfg.warmup_updates} updates"
        if cfg.batch_size:
            line += f"; mini-batches of {cfg.batch_size} anchors, fan-out {','.join(map(str, cfg.fanouts))}"
        if self.schedule:
            s = self.schedule
            line += (
                f"; {s['epochs']} epochs of {s['updates_per_epoch']} updates keep the full-graph setting's "
                f"{s['full_graph_epochs']} updates (--epochs N to choose)"
            )
        elif cfg.batch_size and cfg.epochs:
            steps = batches_per_epoch(graph.num_nodes, cfg.batch_size, cfg.steps_per_epoch, self.world_size)
            epochs, updates = f"{cfg.epochs} epoch{'s' * (cfg.epochs != 1)}", f"{steps} update{'s' * (steps != 1)}"
            line += f"; {epochs} of {updates} (--epochs counts mini-batch epochs, each one pass over the nodes)"
        if self.fast is not None:  # said whichever way it chose: exact training by default too
            line += f"; {self.fast.describe()}"
        elif not cfg.batch_size:  # --exact, or a setting of the user's: the mode is said all the same
            line += "; exact training (the whole graph at every update)"
        if (
            self.exact_seconds is not None
            and self.fast is not None
            and self.fast.exact_seconds is not None
            and (not math.isclose(self.exact_seconds, self.fast.exact_seconds))
        ):
            updates = f"{cfg.epochs:,} update{'' if cfg.epochs == 1 else 's'}"
            line += f"; this run's {updates} of the whole graph: about {duration(self.exact_seconds)}"
        return line

    def record(self) -> dict:
        """What ``results.json`` adds about the job: the splits drawn, the mini-batch schedule chosen, the prepared
        graph's folder (``opened``: read from it; else written by this run)."""
        extra = {"evaluation_split": self.split_record} if self.split_record else {}
        extra.update({"mini_batch_schedule": self.schedule} if self.schedule else {})
        extra.update({"prepared_graph": self.store_record} if self.store_record else {})
        return {**extra, **({"fast_path": self.fast.record(self.config)} if self.fast is not None else {})}

    @property
    def node_ids(self) -> list[str] | None:
        """The input files' node id of each row (user files), else ``None`` (rows are nodes 0..N−1)."""
        return self.loaded.node_ids


#: Who chooses between exact and mini-batch training in :meth:`Job.open`.
TRAININGS = ("config", "fast", "auto", "exact")


def _give_up_arrays(loaded: LoadedDataset) -> None:
    """A dataset read from its files, replaced by the prepared graph written from it: its edges and features are let go
    (mapped features paged out first, so their pages leave this process's memory while another reference lives)."""
    x = loaded.data.x
    if isinstance(x, torch.Tensor) and x.device.type == "cpu" and x.layout == torch.strided:
        page_out(x)
    loaded.data.edge_index = None
    loaded.data.x = None
