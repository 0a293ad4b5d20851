"""``gca train``: train GCA on a graph, judge its embeddings and write the run's files."""

from __future__ import annotations

import argparse
import contextlib

from .. import environment
from ..config import ConfigError
from ..names import CENTRALITY_CHOICES, TASK_COUNTS, TASKS
from ..terminal import say
from .common import (
    cache_arguments,
    evaluation_arguments,
    graph_arguments,
    inputs,
    load_graph,
    open_graph,
    settings,
    split_count,
    split_setting,
)
from .record import command_provenance
from .shell import import_libraries, warn

#: The most pretrainings ``--seeds K`` asks for, as ``--splits N`` asks for at most 1,000 splits: each is a whole
#: training, and their seeds and accuracies are listed in ``results.json``.
MAX_SEEDS = 1000


def add_parser(sub) -> None:
    train = sub.add_parser("train", help="train GCA on a graph, evaluate its embeddings and save them")
    graph_arguments(train)
    cache_arguments(train)
    train.add_argument(
        "--centrality",
        choices=CENTRALITY_CHOICES,
        help="node centrality φ for adaptive augmentation; uniform gives GCA-T-A (GRACE). Default: degree",
    )
    train.add_argument(
        "--config",
        help="TOML or JSON file of hyperparameters (overrides the dataset's defaults), or 'authors': the "
        "setting of the GCA authors' parameter files for the paper's datasets",
    )
    train.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="override one hyperparameter (repeatable)"
    )
    train.add_argument(
        "--epochs",
        type=int,
        help="training epochs (overrides the config). They do not change the training chosen "
        "(exact, or mini-batches by --fast or by default): in mini-batch training an epoch is one pass of "
        "mini-batches over the nodes, its updates said in the run's header",
    )
    schedule = train.add_mutually_exclusive_group()
    schedule.add_argument(
        "--fast",
        action="store_true",
        help="choose exact or mini-batch training from the graph's size and the "
        "device (on a CPU: mini-batches of 1,024 anchors from 4,096 nodes up), keeping the setting's number of "
        "updates; your own batch_size or fanout is kept. Said in the run's header and results.json",
    )
    schedule.add_argument(
        "--exact",
        action="store_true",
        help="train on the whole graph at every update, the paper's training. "
        "Without --fast or --exact, on a CPU, a graph whose exact training is estimated at over an hour trains in "
        "mini-batches of 1,024 anchors (fan-out 10, the setting's number of updates), said in the run's header "
        "and results.json; your own batch_size or fanout is kept",
    )
    train.add_argument("--seed", type=int, help="random seed (default 0)")
    train.add_argument(
        "--seeds",
        type=int,
        default=1,
        metavar="K",
        help=f"classify: pretrain K times (1 to {MAX_SEEDS}; seeds "
        "S, S+1, …, S+K−1 from --seed S, as gca reproduce trains with seeds 0, 1, …) and report the accuracy's "
        "mean ± std over the pretrainings, each judged on the same splits — the spread that a public split, whose "
        "nodes are fixed, leaves (default 1); the files are the first pretraining's; a log holds each pretraining "
        "and their summary",
    )
    train.add_argument("--device", default="auto", help="auto (CUDA if available), cpu or cuda[:N]")
    train.add_argument("--out", default="runs/latest", help="output folder (default: runs/latest)")
    train.add_argument("--no-eval", action="store_true", help="skip linear evaluation")
    train.add_argument(
        "--eval-raw",
        action="store_true",
        help="also judge the simple baselines on the same splits and protocol: "
        "the raw features and the features propagated over k = 1, 2, 3 hops (Â^k X, SGC; projected to the "
        "embedding's width), and say whether GCA beats the best of them",
    )
    train.add_argument(
        "--task",
        choices=TASKS,
        default="classify",
        help="what the embeddings are judged by: classify (default: node classification), link (link prediction on "
        "edges held out before training) or cluster (k-means, NMI and ARI)",
    )
    evaluation_arguments(
        train,
        f"classify: evaluation splits (default {TASK_COUNTS['classify']}); link: hold-outs, "
        f"each its own training (default {TASK_COUNTS['link']}); cluster: k-means seeds "
        f"(default {TASK_COUNTS['cluster']})",
    )
    train.add_argument("--link-val", type=float, default=0.05, help="link: share of edges held out for validation")
    train.add_argument("--link-test", type=float, default=0.1, help="link: share of edges held out for testing")
    train.add_argument("--quiet", action="store_true", help="no progress bar")
    train.add_argument("--plots", action="store_true", help="also save loss.png and tsne.png (t-SNE by class)")
    train.add_argument("--export", metavar="FILE", help="also write the embeddings keyed by node id (.csv/.parquet)")
    train.add_argument(
        "--checkpoint-every", type=int, default=0, metavar="N", help="save OUT/checkpoint.pt every N epochs"
    )
    train.add_argument(
        "--resume",
        action="store_true",
        help="continue the run in OUT (its in-progress checkpoint, else "
        "OUT/checkpoint.pt; same settings) if there is one",
    )
    train.add_argument(
        "--init-from",
        metavar="MODEL",
        help="start training from the weights of an earlier run's model.pt (a warm "
        "start for a nightly retrain on a graph that changed a little; give fewer --epochs); its widths and layers, "
        "and the graph's feature columns, must be the earlier run's",
    )
    train.add_argument(
        "--align-to",
        metavar="FILE",
        help="rotate the embeddings onto an earlier run's (its --export file, matched "
        "by node id, or its embeddings.npy, same nodes in the same order) by orthogonal Procrustes on the shared "
        "nodes; results.json records the mean per-node cosine before and after",
    )
    train.add_argument(
        "--log-csv",
        metavar="FILE",
        help="write each epoch's loss and learning rate to FILE (CSV; its folder is made if missing)",
    )
    train.add_argument(
        "--tensorboard",
        metavar="DIR",
        help="write the losses and learning rate as TensorBoard events into DIR (needs pip install tensorboard)",
    )
    train.add_argument(
        "--wandb",
        metavar="PROJECT",
        help="log the losses and learning rate to the Weights & Biases project PROJECT "
        "(its local files in OUT-wandb/, beside OUT; needs pip install wandb)",
    )


def run(args: argparse.Namespace) -> int:
    overrides = settings(args)
    if args.checkpoint_every < 0:
        raise ConfigError(f"--checkpoint-every must be non-negative, got {args.checkpoint_every}")
    if args.task == "link" and (
        args.checkpoint_every or args.resume or environment.world_size() > 1 or args.init_from or args.align_to
    ):
        raise ConfigError(
            "--task link trains once per hold-out in one process; it takes no --checkpoint-every, "
            "--resume, --init-from, --align-to or torchrun"
        )
    logged = [
        flag
        for flag, value in (("--log-csv", args.log_csv), ("--tensorboard", args.tensorboard), ("--wandb", args.wandb))
        if value is not None
    ]
    if args.task == "link" and logged:
        raise ConfigError(
            f"--task link trains once per hold-out; it takes no {logged[0]} (log one training with "
            "--task classify or cluster)"
        )
    args.splits_given = args.splits is not None  # a count the splits cannot follow is refused, not ignored
    split_count(args, args.task)
    splits = split_setting(args)
    _check_seeds(args)
    if args.init_from:  # a missing or damaged model is said before the graph loads
        from ..train.checkpoint import load_checkpoint

        load_checkpoint(args.init_from)
    from ..outputs.folder import RunOutputs

    _check_log_paths(args)  # before the output folder is made: a refusal leaves the disk as it was
    # under torchrun only rank 0 writes, so only it holds the folder's lock
    outputs = RunOutputs(args.out, args.export, inputs(args), lock=environment.rank() == 0, progress=not args.quiet)
    try:
        return _train_into(outputs, args, overrides, splits)
    except KeyboardInterrupt:
        outputs.release()  # first: a folder this run made and left empty is removed
        say(f"gca: interrupted; {outputs.after_stop()}")
        return 130
    finally:
        outputs.release()


def _train_into(outputs, args: argparse.Namespace, overrides: dict, split_setting) -> int:
    import_libraries()

    from ..provenance import file_record
    from ..run.job import Job
    from ..run.pipeline import run_gca
    from ..train.distributed import Placement
    from ..train.estimator import GCA
    from ..train.fast import LongRunHint

    place = Placement.from_environment(args.device)  # joins the process group under torchrun
    loggers = _loggers(args, outputs) if place.writes else None  # a missing package is said before the graph loads
    args.record_inputs = place.writes  # each input's digest taken as it is read, for results.json
    # the prepared graph on disk, where one was made from these files (link prediction re-prepares per hold-out)
    loaded, store = open_graph(args) if args.task != "link" else (load_graph(args), None)
    training = "fast" if args.fast else "exact" if args.exact else "auto"
    job = Job.open(
        loaded,
        args.config,
        overrides,
        world_size=place.world_size,
        training=training,
        device=place.device,
        store=store,
        store_graph=args.cache if environment.local_rank() == 0 else False,
    )
    _check_labelled(args, job)
    pretrainings = None  # --seeds K with loggers: each pretraining logged, then their summary (gca.run.logs)
    if args.seeds > 1 and loggers:
        from ..run.logs import PretrainingLogs
        from ..seeds import training_seeds

        pretrainings = PretrainingLogs(loggers, training_seeds(job.config.seed, args.seeds))
        loggers = pretrainings.loggers
    estimator = GCA(job.config, progress=place.writes and not args.quiet, placement=place, loggers=loggers)
    if args.task == "link":  # each hold-out prepares its own training graph; the whole graph is only cleaned
        job.clean(job.config.feature_norm, require_edges=True)
    else:
        job.prepare(estimator)
    from ..train.checkpoint import resume_point  # where each process resumes from is compared too

    place.check_same_start(
        job.config.to_dict(),
        job.graph.fingerprint() if place.distributed else "",
        resume_point(outputs.resume_source()) if args.resume and place.distributed else None,
    )
    if place.writes and store is not None:
        for note in store.notes:
            say(f"gca: {note}")
    judged = place.writes and not args.no_eval
    splits = job.splits(split_setting) if judged and args.task == "classify" else None
    if splits is not None:
        _check_split_count(args, splits, job.name)
    plots = (outputs.stage_path("loss.png"), outputs.stage_path("tsne.png")) if args.plots and place.writes else None
    if place.writes:
        _announce(job, estimator, args, plots)
    if args.task == "link":
        return _link_into(outputs, args, job, estimator)
    # The previous complete run in --out stays untouched until this one commits; checkpoints go beside it. A resume
    # that training would refuse is refused here, before a checkpoint is copied (gca.outputs.folder).
    from ..train.checkpoint import resume_check

    checkpoint, note = outputs.training_checkpoint(
        args.resume, args.checkpoint_every, place.writes, resume_check(estimator, job.prepared)
    )
    if note:
        say(f"gca: {note}")
    resumed = {}
    if args.resume and place.writes and checkpoint.is_file():  # what training continues from, as it is now
        resumed["resumed_from"] = file_record(checkpoint)
    link = None  # a TensorBoard run tied to the checkpoints, so that --resume continues it (gca.run.logs)
    if place.writes and args.tensorboard is not None and (args.resume or args.checkpoint_every):
        from ..run.logs import CheckpointLink

        link = CheckpointLink(loggers, outputs.out, checkpoint)
        if resumed:
            link.resume(resumed["resumed_from"]["sha256"])
    align_to = None  # read before training: a file that cannot be aligned to is said before the hours it trains
    if args.align_to and place.writes:
        from ..run.pipeline import align_target

        align_to = align_target(args.align_to, job.node_ids, job.graph.num_nodes)
    hint = (
        LongRunHint(job.config, job.graph.num_nodes, device=place.device, exact_asked=args.exact)
        if place.writes
        else None
    )
    series = contextlib.nullcontext()
    if pretrainings is not None:
        from ..run.pipeline import logged_params

        series = pretrainings.series(logged_params(estimator, job.name))
    # the link's end records the last checkpoint written, however the run ends (a stop just after writing one)
    with outputs, series, link if link is not None else contextlib.nullcontext():
        result = run_gca(
            estimator,
            job.prepared,
            dataset=job.name,
            labels=job.labels,
            splits=splits,
            eval_raw=args.eval_raw,
            protocol=args.eval_protocol,
            clusters=args.splits if judged and args.task == "cluster" else 0,
            checkpoint=checkpoint,
            resume=args.resume,
            checkpoint_every=args.checkpoint_every if place.writes else 0,
            plots=plots,
            plot_title=job.name,
            on_update=hint,
            on_epoch=link.after_epoch if link is not None else None,
            embeddings_file=outputs.stage_path("embeddings.npy") if place.writes else None,
            scratch=None if place.writes else _scratch_folder(),
            init_from=args.init_from,
            align_to=align_to,
        )
        if not place.writes:  # every process trained the same model; rank 0 alone writes it
            return 0
        if estimator.embedding_file_ is not None:  # written out of core, block by block, at the staged path
            outputs.wrote("embeddings.npy")
        result.record.update(job.record())
        over_seeds = None
        if args.seeds > 1 and result.evaluation is not None:
            from ..run.tasks import more_pretrainings

            if pretrainings is not None:
                pretrainings.ran(result.record.get("logged_to", []))
            over_seeds, result.record["pretrainings"] = more_pretrainings(
                job, estimator, result.evaluation, args.seeds, splits, args.eval_protocol, logs=pretrainings
            )
            if pretrainings is not None:
                result.record["logged_to"] = pretrainings.logged_to
        started_from = tuple(file_record(p) for p in (args.init_from, args.align_to) if p)
        result.record["provenance"] = command_provenance(args, estimator.device, store, inputs=started_from, **resumed)
        model = {**estimator.state(), "provenance": result.record["provenance"], **_feature_names(job)}
        written = outputs.write_run(result.embeddings.numpy(), model, result.record, job.node_ids, result.plots)
    if over_seeds is not None:
        print(f"accuracy (GCA, {job.config.centrality}): {over_seeds}")
    elif result.evaluation is not None:
        print(f"accuracy (GCA, {job.config.centrality}): {result.evaluation}")
    if result.clusters is not None:
        print(f"clustering (GCA, {job.config.centrality}): {result.clusters}")
    if "alignment" in result.record:
        moved = result.record["alignment"]
        print(
            f"aligned to {moved['to']} on {moved['shared_nodes']:,} shared nodes: mean per-node cosine "
            f"{moved['cosine_before']:.3f} before, {moved['cosine_after']:.3f} after"
        )
    if result.baselines is not None:
        from ..evaluate.feature_baselines import verdict

        for name, evaluation in result.baselines.rows().items():
            print(f"accuracy ({name}):{' ' * max(1, 15 - len(name))}{evaluation}")
        print(verdict(result.record["versus_feature_baselines"]))
    print("wrote " + ", ".join(str(p) for p in written))
    if result.record.get("logged_to"):
        print("logged to " + ", ".join(result.record["logged_to"]))
    return 0


def _feature_names(job) -> dict:
    """What model.pt records of the feature columns it was trained on, where a sparse feature file named them:
    ``gca embed`` maps another graph's features to the same columns (gca.datasets.files)."""
    names = job.loaded.feature_names
    return {"feature_names": list(names)} if names else {}


def _check_seeds(args: argparse.Namespace) -> None:
    """--seeds K repeats the pretraining of a classify run in this process: refused where it cannot apply, before
    anything is loaded (a graph without labels, known once loaded, is refused then: :func:`_check_labelled`)."""
    if args.seeds < 1:
        raise ConfigError(f"--seeds must be at least 1, got {args.seeds}")
    if args.seeds > MAX_SEEDS:
        raise ConfigError(
            f"--seeds must be at most {MAX_SEEDS} (each pretraining is a whole training), got {args.seeds}"
        )
    if args.seeds == 1:
        return
    if args.task != "classify" or args.no_eval:
        raise ConfigError(
            "--seeds K repeats a pretraining to judge its accuracy; it goes with --task classify and "
            "evaluation (leave out --no-eval)"
        )
    taken = [
        flag
        for flag, used in (
            ("--checkpoint-every", args.checkpoint_every),
            ("--resume", args.resume),
            ("--init-from", args.init_from),
            ("--align-to", args.align_to),
            ("torchrun", environment.world_size() > 1),
        )
        if used
    ]
    if taken:
        raise ConfigError(
            f"--seeds K trains K times in one process; it takes no {taken[0]} (train one seed with --seed S for that)"
        )


def _check_labelled(args: argparse.Namespace, job) -> None:
    """--seeds K judges each pretraining's accuracy: a graph without labels, which cannot be judged, is refused
    before anything trains, as --seeds K with --no-eval is."""
    if args.seeds > 1 and job.labels is None:
        raise ConfigError(
            f"--seeds {args.seeds} repeats a pretraining to judge its accuracy, and the graph "
            f"{job.name} has no labels to judge it by; leave out --seeds (or give --labels)"
        )


def _check_split_count(args: argparse.Namespace, splits, name: str) -> None:
    """A dataset's own splits are as many as it has: a --splits N it cannot give is refused in one line."""
    if not (args.splits_given and getattr(splits, "own", False) and len(splits) != args.splits):
        return
    have = f"{len(splits)} split{'s' if len(splits) > 1 else ''} of its own"
    raise ConfigError(
        f"--splits {args.splits} cannot apply: {name} is judged on {have} (--eval-split "
        f"{args.eval_split}); leave --splits out, repeat the pretraining with --seeds K, or draw "
        "random splits with --eval-split random"
    )


def _scratch_folder():
    """Where a torchrun process other than the first maps its share of inference's matrices:
    ``$GCA_CACHE_DIR/scratch`` (default ``~/.cache/gca/scratch``; made when first needed), each file unlinked as
    soon as it is mapped."""
    from ..datasets.base import default_cache_dir

    return default_cache_dir() / "scratch"


def _check_log_paths(args: argparse.Namespace) -> None:
    """--log-csv and --tensorboard name paths the run writes as it trains: never an input, the export, or a path
    inside --out — a log is written live, not committed with the run's files, so inside --out a failed or later run
    would leave it beside another run's results.json."""
    from pathlib import Path

    from ..loggers import folder_problem, hparams_file
    from ..outputs.folder import OutputError

    out = Path(args.out).resolve()
    for flag, value in (("--log-csv", args.log_csv), ("--tensorboard", args.tensorboard)):
        if value is None:
            continue
        if not value.strip():
            raise OutputError(f"{flag} is empty; name a {'file' if flag == '--log-csv' else 'folder'}")
        path = Path(value)
        if path.resolve() == out or out in path.resolve().parents:
            raise OutputError(
                f"{flag} {path} lies inside --out {args.out}, which holds one run's files only; write "
                f"the log beside it (e.g. {Path(args.out).name}-log"
                f"{'.csv' if flag == '--log-csv' else ''})"
            )
        # both folders are made when the run starts (with their missing parents)
        problem = folder_problem(path if flag == "--tensorboard" else path.parent, made=True)
        if problem is not None:
            raise OutputError(f"{flag} {path}: {problem}")
        if flag == "--tensorboard":
            continue
        if path.is_dir():
            raise OutputError(f"--log-csv {path} is a folder; name a file in it")
        hparams = hparams_file(path)
        for other in [*inputs(args), *([args.export] if args.export else [])]:
            for written in (path, hparams):
                if written.resolve() == Path(other).resolve():
                    raise OutputError(
                        f"--log-csv {path}{'' if written is path else ' writes ' + str(written)} is "
                        f"also {other}, which the run reads or writes; choose another name"
                    )


def _loggers(args: argparse.Namespace, outputs) -> list:
    """The metric loggers the flags ask for (gca.loggers)."""
    from ..loggers import CSVLogger, TensorBoardLogger, WandbLogger

    loggers: list = []
    if args.log_csv is not None:
        loggers.append(CSVLogger(args.log_csv))
    if args.tensorboard is not None:
        loggers.append(TensorBoardLogger(args.tensorboard))
    if args.wandb is not None:
        # beside --out, not in it: wandb writes as the run trains, and OUT holds one finished run's files only
        # (made when the wandb run starts: a refused or failed run leaves no folder)
        beside = outputs.out.parent / f"{outputs.out.name}-wandb"
        loggers.append(WandbLogger(project=args.wandb, dir=str(beside)))
    return loggers


def _announce(job, estimator, args: argparse.Namespace, plots) -> None:
    """The warnings and the run's one-line summary (printed by the process that writes)."""
    from ..outputs.plots import MIN_TSNE_NODES

    if not args.no_eval and job.labels is None and args.task != "link":  # link prediction needs no labels
        warn("the graph has no labels; skipping evaluation")
    if job.config.epochs == 0:
        warn("epochs=0: the encoder is not trained; its scores are those of its initial weights (a baseline)")
    if plots and job.labels is not None and job.graph.num_nodes < MIN_TSNE_NODES:
        warn(f"t-SNE needs at least {MIN_TSNE_NODES} nodes; tsne.png is not drawn")
    for warning in [*job.warnings, *job.schedule_warnings()]:
        warn(warning)
    print(job.summary(estimator))


def _link_into(outputs, args: argparse.Namespace, job, estimator) -> int:
    """--task link: hold edges out, train once per hold-out, score the held-out pairs; the first run's files."""
    from ..run.tasks import link_prediction

    result, trained, embeddings, record = link_prediction(job, estimator, args.splits, args.link_val, args.link_test)
    record.update(job.record())  # the mini-batch schedule and --fast's choice, as the other tasks record them
    record["provenance"] = command_provenance(args, trained.device)
    with outputs:
        written = outputs.write_run(
            embeddings.numpy(),
            {**trained.state(), "provenance": record["provenance"], **_feature_names(job)},
            record,
            job.node_ids,
        )
    print(f"link prediction (GCA, {job.config.centrality}): {result}")
    print("wrote " + ", ".join(str(p) for p in written))
    return 0
