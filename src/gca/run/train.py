"""One training run as ``gca train`` makes it: what the run is asked to do (:class:`TrainRequest`, checked before
anything is loaded), and :func:`train`, which places the process, opens the graph, builds the job and the estimator,
trains, judges and writes the run's files, returning what there is to print (:class:`TrainOutcome`). Only the run's
start (warnings, one-line summary, the prepared graph's notes) is said here."""

from __future__ import annotations

import contextlib
import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import environment
from ..choices import TASK_COUNTS
from ..config import ConfigError
from ..errors import option
from ..evaluate.splits import EvaluationError, SplitSetting
from ..stderr import say, warn
from .inputs import GraphRead, GraphRequest, check_graph, command_provenance, load_graph, open_graph

#: The most pretrainings ``--seeds K`` asks for, as ``--splits N`` asks for at most 1,000 splits: each is a whole
#: training, and their seeds and accuracies are listed in ``results.json``.
MAX_SEEDS = 1000


@dataclass(frozen=True)
class TrainRequest:
    """Everything one ``gca train`` run is asked to do, as its options say it (``gca train --help``).

    ``overrides`` are the config values over the dataset's setting and ``graph.config``; ``training`` who chooses exact
    or mini-batch training (:meth:`gca.run.job.Job.open`); ``split`` the evaluation splits as given, ``splits`` their
    count (link: hold-outs; cluster: k-means seeds), the task's default unless ``splits_given``; ``inputs`` the files no
    output may overwrite; ``command`` and ``started``: ``None`` for this process's and now.
    """

    graph: GraphRequest
    overrides: dict[str, Any] = field(default_factory=dict)
    task: str = "classify"
    training: str = "auto"
    split: SplitSetting = field(default_factory=SplitSetting)
    splits: int = TASK_COUNTS["classify"]
    splits_given: bool = False
    protocol: str = "sklearn"
    seeds: int = 1
    device: str = "auto"
    out: str = "runs/latest"
    export: str | None = None
    inputs: tuple[str, ...] = ()
    evaluate: bool = True
    eval_raw: bool = False
    link_val: float = 0.05
    link_test: float = 0.1
    progress: bool = True
    plots: bool = False
    checkpoint_every: int = 0
    resume: bool = False
    init_from: str | None = None
    align_to: str | None = None
    log_csv: str | None = None
    tensorboard: str | None = None
    wandb: str | None = None
    command: list[str] | None = None
    started: str | None = None

    def check(self) -> None:
        """Refuse what cannot run, in one line each, before the graph is loaded or the output folder made."""
        if self.checkpoint_every < 0:
            raise ConfigError(f"{option('checkpoint_every')} must be non-negative, got {self.checkpoint_every}")
        if self.task == "link" and (
            self.checkpoint_every or self.resume or environment.world_size() > 1 or self.init_from or self.align_to
        ):
            raise ConfigError(
                f"{option('task', 'link')} trains once per hold-out in one process; it takes no "
                f"{option('checkpoint_every')}, {option('resume', True)}, {option('init_from')}, {option('align_to')} "
                "or torchrun"
            )
        logged = [
            name
            for name, value in (("log_csv", self.log_csv), ("tensorboard", self.tensorboard), ("wandb", self.wandb))
            if value is not None
        ]
        if self.task == "link" and logged:
            raise ConfigError(
                f"{option('task', 'link')} trains once per hold-out; it takes no {option(logged[0])} (log one "
                f"training with {option('task', 'classify')} or {option('task', 'cluster')})"
            )
        check_graph(self.graph)  # the graph's options and files, before anything loads
        try:
            self.split.check()
        except EvaluationError as exc:
            raise ConfigError(*exc.args) from None
        self._check_seeds()
        if self.init_from:  # a missing or damaged model is said before the graph loads
            _ = self.warm_start
        self._check_log_paths()

    @functools.cached_property
    def warm_start(self) -> Any:
        """The ``--init-from`` file as :class:`gca.train.checkpoint.WarmStart` read it, once: checked by
        :meth:`check`, trained from by :func:`train`; ``None`` without one."""
        from ..train.checkpoint import WarmStart

        return WarmStart.read(self.init_from) if self.init_from else None

    def _check_seeds(self) -> None:
        """``seeds`` > 1 repeats a classify run's pretraining in this process: refused where it cannot apply, before
        anything is loaded (a graph without labels, once loaded: :func:`_check_labelled`)."""
        if self.seeds < 1:
            raise ConfigError(f"{option('seeds')} must be at least 1, got {self.seeds}")
        if self.seeds > MAX_SEEDS:
            raise ConfigError(
                f"{option('seeds')} must be at most {MAX_SEEDS} (each pretraining is a whole training), got "
                f"{self.seeds}"
            )
        if self.seeds == 1:
            return
        if self.task != "classify" or not self.evaluate:
            raise ConfigError(
                f"{option('seeds', command_line='K')} repeats a pretraining to judge its accuracy; it goes with "
                f"{option('task', 'classify')} and evaluation (leave out {option('evaluate', False)})"
            )
        taken = [
            said
            for said, used in (
                (option("checkpoint_every"), self.checkpoint_every),
                (option("resume", True), self.resume),
                (option("init_from"), self.init_from),
                (option("align_to"), self.align_to),
                ("torchrun", environment.world_size() > 1),
            )
            if used
        ]
        if taken:
            raise ConfigError(
                f"{option('seeds', command_line='K')} trains K times in one process; it takes no {taken[0]} (train "
                f"one seed with {option('seed', command_line='S')} for that)"
            )

    def _check_log_paths(self) -> None:
        """--log-csv and --tensorboard paths are written live, not committed with the run's files: never an input, the
        export, or inside --out, where a failed or later run would leave a log beside another run's results.json."""
        from ..io import OutputError
        from ..loggers import folder_problem, hparams_file

        out = Path(self.out).resolve()
        for name, value in (("log_csv", self.log_csv), ("tensorboard", self.tensorboard)):
            if value is None:
                continue
            if not value.strip():
                raise OutputError(f"{option(name)} is empty; name a {'file' if name == 'log_csv' else 'folder'}")
            path = Path(value)
            if path.resolve() == out or out in path.resolve().parents:
                raise OutputError(
                    f"{option(name, path)} lies inside {option('out', self.out)}, which holds one run's files only; "
                    f"write the log beside it (e.g. {Path(self.out).name}-log{'.csv' if name == 'log_csv' else ''})"
                )
            # both folders are made when the run starts (with their missing parents)
            problem = folder_problem(path if name == "tensorboard" else path.parent, made=True)
            if problem is not None:
                raise OutputError(f"{option(name, path)}: {problem}")
            if name == "tensorboard":
                continue
            if path.is_dir():
                raise OutputError(f"{option('log_csv', path)} is a folder; name a file in it")
            hparams = hparams_file(path)
            for other in [*self.inputs, *([self.export] if self.export else [])]:
                for written in (path, hparams):
                    if written.resolve() == Path(other).resolve():
                        raise OutputError(
                            f"{option('log_csv', path)}{'' if written is path else ' writes ' + str(written)} is "
                            f"also {other}, which the run reads or writes; choose another name"
                        )


@dataclass
class TrainOutcome:
    """What a run that wrote its files has to say: its centrality, the files ``written``, ``results.json``'s ``record``,
    and what judged the embeddings (``accuracy``, ``clusters``, feature ``baselines``, ``link`` scores)."""

    centrality: str
    written: list[Path]
    record: dict[str, Any]
    accuracy: Any = None
    clusters: Any = None
    baselines: Any = None
    link: Any = None


def train(request: TrainRequest, outputs) -> TrainOutcome | None:
    """Make the run ``request`` asks for and write its files into ``outputs`` (:class:`gca.outputs.folder.RunOutputs`);
    ``None`` in a torchrun process that does not write."""
    from ..provenance import file_record
    from ..train.checkpoint import ResumeCheck, resume_point
    from ..train.distributed import Placement
    from ..train.estimator import GCA
    from ..train.fast import LongRunHint
    from . import pipeline
    from .job import Job

    place = Placement.from_environment(request.device)  # joins the process group under torchrun
    loggers = _loggers(request, outputs) if place.writes else None  # a missing package is said before the graph loads
    # the prepared graph on disk, where one was made from these files (link prediction re-prepares per hold-out);
    # each input's digest taken as it is read, for results.json
    if request.task == "link":
        read = load_graph(request.graph, record=place.writes)
    else:
        read = open_graph(request.graph, record=place.writes)
    job = Job.open(
        read.loaded,
        request.graph.config,
        request.overrides,
        world_size=place.world_size,
        training=request.training,
        device=place.device,
        store=read.store,
        store_graph=request.graph.cache if environment.local_rank() == 0 else False,
    )
    _check_labelled(request, job)
    pretrainings = None  # --seeds K with loggers: each pretraining logged, then their summary (gca.run.logs)
    if request.seeds > 1 and loggers:
        from ..seeds import training_seeds
        from .logs import PretrainingLogs

        pretrainings = PretrainingLogs(loggers, training_seeds(job.config.seed, request.seeds))
        loggers = pretrainings.loggers
    estimator = GCA(job.config, progress=place.writes and request.progress, placement=place, loggers=loggers)
    if request.task == "link":  # each hold-out prepares its own training graph; the whole graph is only cleaned
        job.clean(job.config.feature_norm, require_edges=True)
    else:
        job.prepare(estimator)
    place.check_same_start(  # where each process resumes from is compared too
        job.config.to_dict(),
        job.graph.fingerprint() if place.distributed else "",
        resume_point(outputs.resume_source()) if request.resume and place.distributed else None,
    )
    if place.writes and read.store is not None:
        for note in read.store.notes:
            say(f"gca: {note}")
    judged = place.writes and request.evaluate
    splits = job.splits(request.split) if judged and request.task == "classify" else None
    if splits is not None:
        _check_split_count(request, splits, job.name)
    plots = (outputs.stage_path("loss.png"), outputs.stage_path("tsne.png")) if request.plots and place.writes else None
    if place.writes:
        _announce(job, estimator, request, plots)
    if request.task == "link":
        return _link(request, outputs, job, estimator, read)
    # The previous complete run in --out stays untouched until this one commits; checkpoints go beside it. A resume
    # that training would refuse is refused here, before a checkpoint is copied (gca.outputs.folder); training
    # continues from the state read for that check.
    check = ResumeCheck(estimator, job.prepared)
    checkpoint, note = outputs.training_checkpoint(request.resume, request.checkpoint_every, place.writes, check)
    if note:
        say(f"gca: {note}")
    resumed = {}
    if request.resume and place.writes and checkpoint.is_file():  # what training continues from, as it is now
        resumed["resumed_from"] = file_record(checkpoint)
    link = None  # a TensorBoard run tied to the checkpoints, so that --resume continues it (gca.run.logs)
    if place.writes and request.tensorboard is not None and (request.resume or request.checkpoint_every):
        from .logs import CheckpointLink

        link = CheckpointLink(loggers, outputs.out, checkpoint)
        if resumed:
            link.resume(resumed["resumed_from"]["sha256"])
    align_to = None  # read before training: a file that cannot be aligned to is said before the hours it trains
    if request.align_to and place.writes:
        align_to = pipeline.align_target(request.align_to, job.node_ids, job.graph.num_nodes)
    exact = request.training == "exact"
    hint = (
        LongRunHint(job.config, job.graph.num_nodes, device=place.device, exact_asked=exact) if place.writes else None
    )
    series = contextlib.nullcontext()
    if pretrainings is not None:
        series = pretrainings.series(pipeline.logged_params(estimator, job.name))
    # the link's end records the last checkpoint written, however the run ends (a stop just after writing one)
    with outputs, series, link if link is not None else contextlib.nullcontext():
        result = pipeline.run_gca(
            estimator,
            job.prepared,
            dataset=job.name,
            labels=job.labels,
            splits=splits,
            eval_raw=request.eval_raw,
            protocol=request.protocol,
            clusters=request.splits if judged and request.task == "cluster" else 0,
            checkpoint=checkpoint,
            resume=check.checked or request.resume,
            checkpoint_every=request.checkpoint_every if place.writes else 0,
            plots=plots,
            plot_title=job.name,
            on_update=hint,
            on_epoch=link.after_epoch if link is not None else None,
            embeddings_file=outputs.stage_path("embeddings.npy") if place.writes else None,
            scratch=None if place.writes else _scratch_folder(),
            init_from=request.warm_start,
            align_to=align_to,
        )
        if not place.writes:  # every process trained the same model; rank 0 alone writes it
            return None
        if estimator.embedding_file_ is not None:  # written out of core, block by block, at the staged path
            outputs.wrote("embeddings.npy")
        result.record.update(job.record())
        over_seeds = None
        if request.seeds > 1 and result.evaluation is not None:
            from .tasks import more_pretrainings

            if pretrainings is not None:
                pretrainings.ran(result.record.get("logged_to", []))
            over_seeds, result.record["pretrainings"] = more_pretrainings(
                job, estimator, result.evaluation, request.seeds, splits, request.protocol, logs=pretrainings
            )
            if pretrainings is not None:
                result.record["logged_to"] = pretrainings.logged_to
        started_from = tuple(file_record(p) for p in (request.init_from, request.align_to) if p)
        result.record["provenance"] = command_provenance(
            request.graph, estimator.device, read, started_from, request.command, request.started, **resumed
        )
        model = {**estimator.state(), "provenance": result.record["provenance"], **_feature_names(job)}
        written = outputs.write_run(result.embeddings.numpy(), model, result.record, job.node_ids, result.plots)
    return TrainOutcome(
        job.config.centrality,
        written,
        result.record,
        accuracy=over_seeds if over_seeds is not None else result.evaluation,
        clusters=result.clusters,
        baselines=result.baselines,
    )


def _link(request: TrainRequest, outputs, job, estimator, read: GraphRead) -> TrainOutcome:
    """--task link: hold edges out, train once per hold-out, score the held-out pairs; the first run's files."""
    from .tasks import link_prediction

    result, trained, embeddings, record = link_prediction(
        job, estimator, request.splits, request.link_val, request.link_test
    )
    record.update(job.record())  # the mini-batch schedule and --fast's choice, as the other tasks record them
    record["provenance"] = command_provenance(request.graph, trained.device, read, (), request.command, request.started)
    with outputs:
        written = outputs.write_run(
            embeddings.numpy(),
            {**trained.state(), "provenance": record["provenance"], **_feature_names(job)},
            record,
            job.node_ids,
        )
    return TrainOutcome(job.config.centrality, written, record, link=result)


def _feature_names(job) -> dict:
    """What model.pt records of the feature columns a sparse feature file named, for ``gca embed`` to map another
    graph's features to the same columns."""
    names = job.loaded.feature_names
    return {"feature_names": list(names)} if names else {}


def _check_labelled(request: TrainRequest, job) -> None:
    """--seeds K judges each pretraining's accuracy: a graph without labels is refused before anything trains."""
    if request.seeds > 1 and job.labels is None:
        raise ConfigError(
            f"{option('seeds', request.seeds)} repeats a pretraining to judge its accuracy, and the graph "
            f"{job.name} has no labels to judge it by; leave out {option('seeds')} (or give {option('labels')})"
        )


def _check_split_count(request: TrainRequest, splits, name: str) -> None:
    """A dataset's own splits are as many as it has: a --splits N it cannot give is refused in one line."""
    if not (request.splits_given and getattr(splits, "own", False) and len(splits) != request.splits):
        return
    have = f"{len(splits)} split{'s' if len(splits) > 1 else ''} of its own"
    raise ConfigError(
        f"{option('splits', request.splits)} cannot apply: {name} is judged on {have} "
        f"({option('SplitSetting.scheme', request.split.scheme)}); leave {option('splits')} out, repeat the "
        f"pretraining with {option('seeds', command_line='K')}, or draw random splits with "
        f"{option('SplitSetting.scheme', 'random')}"
    )


def _scratch_folder():
    """Where a torchrun process other than the first maps its share of inference's matrices: ``$GCA_CACHE_DIR/scratch``
    (default ``~/.cache/gca/scratch``), each file unlinked once mapped."""
    from ..datasets.base import default_cache_dir

    return default_cache_dir() / "scratch"


def _loggers(request: TrainRequest, outputs) -> list:
    """The metric loggers the request asks for (gca.loggers)."""
    from ..loggers import CSVLogger, TensorBoardLogger, WandbLogger

    loggers: list = []
    if request.log_csv is not None:
        loggers.append(CSVLogger(request.log_csv))
    if request.tensorboard is not None:
        loggers.append(TensorBoardLogger(request.tensorboard))
    if request.wandb is not None:
        # beside --out, not in it: wandb writes as the run trains, and OUT holds one finished run's files only
        # (made when the wandb run starts: a refused or failed run leaves no folder)
        beside = outputs.out.parent / f"{outputs.out.name}-wandb"
        loggers.append(WandbLogger(project=request.wandb, dir=str(beside)))
    return loggers


def _announce(job, estimator, request: TrainRequest, plots) -> None:
    """The warnings and the run's one-line summary (said by the process that writes)."""
    from ..outputs.plots import MIN_TSNE_NODES

    if request.evaluate and job.labels is None and request.task != "link":  # link prediction needs no labels
        warn("the graph has no labels; skipping evaluation")
    if job.config.epochs == 0:
        warn("epochs=0: the encoder is not trained; its scores are those of its initial weights (a baseline)")
    if plots and job.labels is not None and job.graph.num_nodes < MIN_TSNE_NODES:
        warn(f"t-SNE needs at least {MIN_TSNE_NODES} nodes; tsne.png is not drawn")
    for warning in [*job.warnings, *job.schedule_warnings()]:
        warn(warning)
    print(job.summary(estimator))
