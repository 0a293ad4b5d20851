"""What several commands share: the graph and evaluation arguments, loading the graph they name, the run's
configuration from the dataset's setting, --config and --set, and the files a command reads."""

from __future__ import annotations

import argparse
from typing import Any

from ..choices import PROTOCOLS, SPLIT_SCHEMES, TASK_COUNTS
from ..config import ConfigError, build_config, parse_overrides
from ..run.inputs import READING_FLAGS, GraphRequest, check_graph
from ..run.inputs import graph_source as inputs_graph_source
from ..run.inputs import load_graph as inputs_load_graph


def evaluation_arguments(parser: argparse.ArgumentParser, count_help: str | None = None) -> None:
    """How frozen embeddings are judged: the protocol, and which nodes train, validate and test. ``--splits`` stays
    ``None`` when not given, for :func:`split_count` to fill in the task's default."""
    protocol_argument(parser)
    count_help = count_help or f"evaluation splits (default {TASK_COUNTS['classify']})"
    parser.add_argument("--splits", type=int, default=None, help=count_help)
    split_arguments(parser)


def split_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--eval-split",
        choices=SPLIT_SCHEMES,
        default="auto",
        help="random (fractions below), public (the dataset's own split: Planetoid's 20 per class/500/1,000, Wiki-CS, "
        "OGB), fewshot (--shots K per class) or auto (default: the dataset's benchmark splits where it has them, "
        "else random)",
    )
    parser.add_argument("--train-frac", type=float, default=0.1, help="random splits: training fraction (0.1)")
    parser.add_argument("--val-frac", type=float, default=0.1, help="random/fewshot: validation fraction (0.1)")
    parser.add_argument("--test-frac", type=float, help="random/fewshot: test fraction (default: the rest)")
    parser.add_argument("--shots", type=int, default=0, metavar="K", help="fewshot: training nodes per class")


def split_count(args: argparse.Namespace, task: str = "classify") -> int:
    """``--splits`` as given, else ``task``'s default (:data:`gca.choices.TASK_COUNTS`)."""
    count = getattr(args, "splits", None)
    return TASK_COUNTS[task] if count is None else count


def split_request(args: argparse.Namespace, count: int | None = None):
    """The evaluation splits the arguments ask for, ``count`` of them (``None``: ``--splits``, else 1), unchecked."""
    from ..evaluate.splits import SplitSetting

    if count is None:
        count = getattr(args, "splits", None)
        count = 1 if count is None else count  # gca reproduce: its mode says how many splits judge each run
    setting = SplitSetting(args.eval_split, count, args.train_frac, args.val_frac, args.test_frac, args.shots)
    return setting.for_protocol(getattr(args, "eval_protocol", "sklearn"))  # authors: parts cut with int()


def split_setting(args: argparse.Namespace, count: int | None = None):
    """The evaluation splits the arguments ask for (:func:`split_request`), checked before anything is loaded."""
    from ..evaluate.splits import EvaluationError

    try:
        return split_request(args, count).check()
    except EvaluationError as exc:
        raise ConfigError(*exc.args) from None


def protocol_argument(parser: argparse.ArgumentParser, default: str = PROTOCOLS[0]) -> None:
    """``--eval-protocol``; ``gca reproduce`` defaults to ``authors``, the protocol behind the paper's numbers."""
    parser.add_argument(
        "--eval-protocol",
        choices=PROTOCOLS,
        default=default,
        help=f"how embeddings are judged (default {default}): sklearn (logistic regression on l2-normalised "
        "embeddings, C chosen on validation) or authors (the GCA authors' script, behind the paper's numbers: a "
        "linear layer trained with Adam for 3,000 epochs, test accuracy at the best validation check; random splits "
        "cut with int())",
    )


def graph_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--dataset",
        help="Karate (built in, the default), Wiki-CS, Amazon-Computers, Amazon-Photo, Coauthor-CS, "
        "Coauthor-Physics, Cora, CiteSeer, PubMed, ogbn-arxiv, ogbn-products; or the path of an .npz graph file or "
        "of a dataset folder (what exists on disk is a path, anything else a name)",
    )
    parser.add_argument("--data-dir", help="folder holding the datasets (default: $GCA_DATA_DIR or ~/.cache/gca/data)")
    parser.add_argument(
        "--edges",
        metavar="FILE",
        help="your graph: edge list (CSV/TSV/Parquet: source, target in the "
        "first two columns; integer or string node ids)",
    )
    parser.add_argument(
        "--features",
        metavar="FILE",
        help="your graph: node features (.npy, sparse .npz, CSV/TSV/"
        "Parquet with an optional id column, a long id,feature[,value] table, or JSON of node id -> "
        "feature ids)",
    )
    parser.add_argument("--labels", metavar="FILE", help="your graph: node labels (CSV/TSV/Parquet of node, label)")
    parser.add_argument("--directed", action="store_true", help="your graph: treat the edge list as directed")
    parser.add_argument(
        "--edge-weight",
        metavar="COL",
        help="your graph: the edge file's weight column (its name, or "
        "its number from 1); default: a column named 'weight' — no other column is read",
    )
    parser.add_argument(
        "--feature-ids",
        metavar="FILE",
        help="your graph: the node id of each row of an .npy/.npz feature matrix (one id per line, or a 1-D .npy)",
    )
    parser.add_argument(
        "--feature-layout",
        choices=("auto", "wide", "long"),
        default="auto",
        help="your graph: a feature table's layout: wide (a row per node), long (id, feature[, value] "
        "rows) or auto (default: long when its second column is named feature, word, token, ...)",
    )
    parser.add_argument(
        "--id-column",
        metavar="NAME",
        help="your graph: the id column of the feature and label tables "
        "(default: a column named id/node/node_id/name, else the first)",
    )
    parser.add_argument(
        "--label-column",
        metavar="NAME",
        help="your graph: the label column of a label table with more than two columns",
    )


def graph_request(args: argparse.Namespace, **given: Any) -> GraphRequest:
    """The graph the arguments name, and how its files are read; ``given`` adds what the command knows besides (``gca
    embed``: the model's ``feature_names``)."""
    return GraphRequest(
        dataset=args.dataset,
        data_dir=args.data_dir,
        edges=args.edges,
        features=args.features,
        labels=args.labels,
        directed=args.directed,
        **{flag: getattr(args, flag, None) for flag in READING_FLAGS},
        config=getattr(args, "config", None),
        cache=getattr(args, "cache", None),
        progress=not getattr(args, "quiet", False),
        **given,
    )


def check_graph_arguments(args: argparse.Namespace) -> None:
    """The graph arguments checked together, before anything is read (:func:`gca.run.inputs.check_graph`)."""
    check_graph(graph_request(args))


def load_graph(args: argparse.Namespace):
    """The graph read from its files (:func:`gca.run.inputs.load_graph`)."""
    return inputs_load_graph(graph_request(args)).loaded


def graph_source(args: argparse.Namespace):
    """What the command reads (:func:`gca.run.inputs.graph_source`); ``None`` when it is nothing on disk."""
    return inputs_graph_source(graph_request(args))


def started(args: argparse.Namespace) -> dict[str, Any]:
    """The command line and start time :func:`gca.cli.dispatch.main` took, for the run's provenance."""
    return {"command": getattr(args, "command_line", None), "started": getattr(args, "started", None)}


def cache_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--cache",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="the prepared graph on disk ($GCA_CACHE_DIR/prepared, default ~/.cache/gca/prepared): by default a run "
        "opens it when one was made from the same input files, and writes it for graphs of 10^7 directed edges or "
        "more; --cache writes it for any graph, --no-cache neither reads nor writes it",
    )


def settings(args: argparse.Namespace) -> dict[str, Any]:
    """--set values and the shortcut flags, each checked now — before any data is read or PyTorch is loaded."""
    overrides: dict[str, Any] = parse_overrides(args.set)
    config = build_config(None, args.config, overrides)  # also values that a flag below replaces
    flags = {flag: getattr(args, flag) for flag in ("centrality", "epochs", "seed") if getattr(args, flag) is not None}
    config.replace(**flags)  # the flags checked too; the dataset's own values are added once it is known
    return {**overrides, **flags}


def inputs(args: argparse.Namespace) -> list[str]:
    """The files a command reads, which no output may overwrite."""
    names = ("edges", "features", "labels", "feature_ids", "config", "checkpoint", "dataset")
    return [getattr(args, n) for n in names if getattr(args, n, None)]
