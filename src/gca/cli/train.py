"""``gca train``: train GCA on a graph, judge its embeddings and write the run's files."""

from __future__ import annotations

import argparse

from .. import environment
from ..choices import CENTRALITY_CHOICES, TASK_COUNTS, TASKS
from ..run.train import MAX_SEEDS, TrainOutcome, TrainRequest
from .common import (
    cache_arguments,
    evaluation_arguments,
    graph_arguments,
    graph_request,
    inputs,
    settings,
    split_count,
    split_request,
    started,
)
from .guard import import_libraries, imports_held, interrupted


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
    with imports_held():
        from ..outputs.folder import RunOutputs
        from ..run.train import train

    request = train_request(args)
    request.check()  # before the output folder is made: a refusal leaves the disk as it was
    # under torchrun only rank 0 writes, so only it holds the folder's lock
    outputs = RunOutputs(
        request.out, request.export, list(request.inputs), lock=environment.rank() == 0, progress=request.progress
    )
    try:
        import_libraries()
        return _report(train(request, outputs))
    except KeyboardInterrupt:
        outputs.release()  # first: a folder this run made and left empty is removed
        interrupted(outputs.after_stop())
        return 130
    finally:
        outputs.release()


def train_request(args: argparse.Namespace) -> TrainRequest:
    """The run the arguments ask for; the configuration's values are checked now (:func:`.common.settings`)."""
    overrides = settings(args)
    count = split_count(args, args.task)
    return TrainRequest(
        graph=graph_request(args),
        overrides=overrides,
        task=args.task,
        training="fast" if args.fast else "exact" if args.exact else "auto",
        split=split_request(args, count),
        splits=count,
        splits_given=args.splits is not None,  # a count the splits cannot follow is refused, not ignored
        protocol=args.eval_protocol,
        seeds=args.seeds,
        device=args.device,
        out=args.out,
        export=args.export,
        inputs=tuple(inputs(args)),
        evaluate=not args.no_eval,
        eval_raw=args.eval_raw,
        link_val=args.link_val,
        link_test=args.link_test,
        progress=not args.quiet,
        plots=args.plots,
        checkpoint_every=args.checkpoint_every,
        resume=args.resume,
        init_from=args.init_from,
        align_to=args.align_to,
        log_csv=args.log_csv,
        tensorboard=args.tensorboard,
        wandb=args.wandb,
        **started(args),
    )


def _report(outcome: TrainOutcome | None) -> int:
    """The run's results on stdout (nothing from a torchrun process that does not write)."""
    if outcome is None:
        return 0
    centrality, record = outcome.centrality, outcome.record
    if outcome.link is not None:
        print(f"link prediction (GCA, {centrality}): {outcome.link}")
        print("wrote " + ", ".join(str(p) for p in outcome.written))
        return 0
    if outcome.accuracy is not None:
        print(f"accuracy (GCA, {centrality}): {outcome.accuracy}")
    if outcome.clusters is not None:
        print(f"clustering (GCA, {centrality}): {outcome.clusters}")
    if "alignment" in record:
        moved = record["alignment"]
        print(
            f"aligned to {moved['to']} on {moved['shared_nodes']:,} shared nodes: mean per-node cosine "
            f"{moved['cosine_before']:.3f} before, {moved['cosine_after']:.3f} after"
        )
    if outcome.baselines is not None:
        from ..evaluate.feature_baselines import verdict

        for name, evaluation in outcome.baselines.rows().items():
            print(f"accuracy ({name}):{' ' * max(1, 15 - len(name))}{evaluation}")
        print(verdict(record["versus_feature_baselines"]))
    print("wrote " + ", ".join(str(p) for p in outcome.written))
    if record.get("logged_to"):
        print("logged to " + ", ".join(record["logged_to"]))
    return 0
