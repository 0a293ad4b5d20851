"""The ``gca`` command: argument parsing, printing, result files and exit codes — no maths here."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import time
import warnings
from collections.abc import Sequence
from typing import Any

from . import environment
from .config import ConfigError, build_config, parse_overrides
from .errors import UserError
from .names import CENTRALITY_CHOICES, PROTOCOLS


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors as one ``gca: error:`` line (not a usage block) and exit status 2."""

    def error(self, message: str):
        self.exit(2, f"gca: error: {' '.join(message.split())} (see {self.prog} --help)\n")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="gca",
        description="Graph Contrastive learning with Adaptive augmentation (Zhu et al., WWW 2021).",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_Parser)
    train = sub.add_parser("train", help="train GCA on a graph, evaluate its embeddings and save them")
    _graph_arguments(train)
    train.add_argument(
        "--centrality",
        choices=CENTRALITY_CHOICES,
        help="node centrality φ for adaptive augmentation; uniform gives GCA-T-A (GRACE). Default: degree",
    )
    train.add_argument(
        "--config", help="TOML or JSON file of hyperparameters (overrides the dataset's defaults), or 'authors': the "
        "setting of the GCA authors' parameter files for the paper's datasets",
    )  # fmt: skip
    train.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="override one hyperparameter (repeatable)"
    )
    train.add_argument("--epochs", type=int, help="training epochs (overrides the config)")
    train.add_argument("--seed", type=int, help="random seed (default 0)")
    train.add_argument("--device", default="auto", help="auto (CUDA if available), cpu or cuda[:N]")
    train.add_argument("--out", default="runs/latest", help="output folder (default: runs/latest)")
    train.add_argument("--no-eval", action="store_true", help="skip linear evaluation")
    train.add_argument("--eval-raw", action="store_true", help="also evaluate raw features with the same protocol")
    train.add_argument("--splits", type=int, default=20, help="random evaluation splits (default 20)")
    _protocol_argument(train)
    train.add_argument("--quiet", action="store_true", help="no progress bar")
    train.add_argument("--plots", action="store_true", help="also save loss.png and tsne.png (t-SNE by class)")
    train.add_argument("--export", metavar="FILE", help="also write the embeddings keyed by node id (.csv/.parquet)")
    train.add_argument(
        "--checkpoint-every", type=int, default=0, metavar="N", help="save OUT/checkpoint.pt every N epochs"
    )
    train.add_argument(
        "--resume", action="store_true", help="continue from OUT/checkpoint.pt (same settings) if it exists"
    )

    emb = sub.add_parser("embed", help="embed a graph with a trained encoder (inductive use)")
    emb.add_argument("--checkpoint", required=True, help="model.pt (or checkpoint.pt) written by gca train")
    _graph_arguments(emb)
    emb.add_argument("--device", default="auto", help="auto (CUDA if available), cpu or cuda[:N]")
    emb.add_argument("--out", default="runs/embed", help="output folder for embeddings.npy (default: runs/embed)")
    emb.add_argument("--export", metavar="FILE", help="also write the embeddings keyed by node id (.csv/.parquet)")

    tune = sub.add_parser(
        "tune",
        help="search hyperparameters on validation accuracy (Optuna; resumable) and write DIR/best.toml",
        description="Search GCA's hyperparameters on validation accuracy with Optuna's TPE sampler and median "
        "pruning. The study lives in OUT/study.db: run the same command again to continue after an interruption, "
        "or start several processes on the same OUT to search in parallel. Needs pip install 'gca-graph[tune]'.",
    )
    _graph_arguments(tune)
    tune.add_argument("--trials", type=int, default=30, help="finished trials wanted in the study (default 30)")
    tune.add_argument("--timeout", type=float, metavar="S", help="stop starting trials after S seconds")
    tune.add_argument("--space", metavar="FILE", help="TOML file replacing the search range of any key")
    tune.add_argument(
        "--max-epochs", type=int, help="epochs per trial at most (default: the config's epochs, e.g. 500 for Cora)"
    )
    tune.add_argument(
        "--eval-every", type=int, metavar="K", help="validation check every K epochs (default: max-epochs / 10)"
    )
    tune.add_argument(
        "--search-splits", type=int, default=3, help="splits whose validation accuracy is searched (default 3)"
    )
    tune.add_argument("--splits", type=int, default=20, help="random splits of the final test (default 20)")
    _protocol_argument(tune)
    tune.add_argument("--config", help="TOML or JSON file of the settings not searched")
    tune.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="fix one setting (repeatable)")
    tune.add_argument("--seed", type=int, help="seed of every trial and of the splits (default 0)")
    tune.add_argument("--device", default="auto", help="auto (CUDA if available), cpu or cuda[:N]")
    tune.add_argument("--out", required=True, help="study folder: study.db, trials.csv, best.toml, plots")
    tune.add_argument("--quiet", action="store_true", help="no line per trial")

    rep = sub.add_parser(
        "reproduce",
        help="reproduce the paper's Table 3, Table 4, Figure 3 and Figure 4 (resumable)",
        description="Reproduce Zhu et al. (WWW 2021). Finished runs are kept in OUT/runs and never repeated: an "
        "interrupted reproduction continues when the same command is run again.",
    )
    rep.add_argument("task", choices=("table3", "table4", "figure4", "figure3", "all"))
    rep.add_argument(
        "--dataset",
        action="append",
        help="dataset to run (repeatable). Default: the paper's five for the tables, Amazon-Photo for figure4",
    )
    rep.add_argument("--data-dir", help="folder holding the datasets (default: $GCA_DATA_DIR or ~/.cache/gca/data)")
    rep.add_argument("--out", required=True, help="output folder (tables, figures, runs/)")
    rep.add_argument("--quick", action="store_true", help="3 runs, fewer epochs, a 5×5 grid: sized for a laptop CPU")
    rep.add_argument("--runs", type=int, help="runs per table cell (default 20, or 3 with --quick)")
    rep.add_argument(
        "--baselines",
        help="comma-separated baselines for Table 3 (default: all of raw, node2vec, deepwalk, "
        "deepwalk+features, gae, vgae, dgi, gcn, gat; 'none' for none)",
    )
    rep.add_argument("--no-plots", action="store_true", help="skip the loss-curve and t-SNE plots of GCA runs")
    _protocol_argument(rep)
    rep.add_argument("--device", default="auto", help="auto (CUDA if available), cpu or cuda[:N]")
    rep.add_argument("--quiet", action="store_true", help="no progress bar")
    return parser


def _protocol_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--eval-protocol", choices=PROTOCOLS, default=PROTOCOLS[0],
        help="how embeddings are judged: sklearn (default: logistic regression on l2-normalised embeddings, C chosen "
        "on validation) or authors (the GCA authors' script: a linear layer trained with Adam for 3,000 epochs, "
        "test accuracy at the best validation check)",
    )  # fmt: skip


def _graph_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--dataset",
        help="Karate (built in, the default), Wiki-CS, Amazon-Computers, Amazon-Photo, Coauthor-CS, "
        "Coauthor-Physics, Cora, CiteSeer, PubMed; or the path of an .npz graph file or of a dataset folder "
        "(what exists on disk is a path, anything else a name)",
    )
    parser.add_argument("--data-dir", help="folder holding the datasets (default: $GCA_DATA_DIR or ~/.cache/gca/data)")
    parser.add_argument("--edges", metavar="FILE", help="your graph: edge list (CSV/TSV, integer or string node ids)")
    parser.add_argument("--features", metavar="FILE", help="your graph: node features (CSV/TSV, .npy, sparse .npz)")
    parser.add_argument("--labels", metavar="FILE", help="your graph: node labels (CSV/TSV of node, label)")
    parser.add_argument("--directed", action="store_true", help="your graph: treat the edge list as directed")


def _load_graph(args: argparse.Namespace):
    from .datasets import load_dataset, load_files

    if args.edges or args.features or args.labels:
        if not (args.edges and args.features):
            raise ConfigError("--edges and --features go together (--labels is optional); give both")
        if args.dataset:
            raise ConfigError("give either --dataset or --edges/--features, not both")
        return load_files(args.edges, args.features, args.labels, directed=args.directed)
    if args.directed:
        raise ConfigError("--directed applies to --edges files; named datasets know their own direction")
    if args.dataset is not None and not args.dataset.strip():
        raise ConfigError("--dataset is empty; give a dataset name or the path of a graph file or folder")
    return load_dataset(args.dataset or "Karate", data_dir=args.data_dir)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = _parser().parse_args(argv)
    except KeyboardInterrupt:
        return 130
    try:  # a batch system's stop (SIGTERM) cleans up staged files as Ctrl-C does
        previous = signal.signal(signal.SIGTERM, _terminate)
    except ValueError:  # not the main thread: leave signals alone
        previous = None
    try:
        with warnings.catch_warnings():
            if not sys.warnoptions:
                # gca's own warnings are "gca: warning: …" lines; a library's internal warnings (with a source
                # line) are noise to a user. `python -W default -m gca.cli …` shows them for debugging.
                warnings.simplefilter("ignore")
            return _run(args)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        _leave_process_group()


def _run(args: argparse.Namespace) -> int:
    """The command, with every error a user can cause turned into one line and exit status 2."""
    try:
        if args.command == "train":
            return _train(args)
        if args.command == "reproduce":
            return _reproduce(args)
        if args.command == "embed":
            return _embed(args)
        if args.command == "tune":
            return _tune(args)
    except UserError as exc:
        if environment.reports_errors():  # under torchrun, an input error once (rank 0), not once per rank
            print(f"gca: error: {_one_line(exc)}", file=sys.stderr)
        return 2
    except MemoryError:
        print(f"gca: error: {_OUT_OF_MEMORY}", file=sys.stderr)
        return 2
    except OSError as exc:  # e.g. a full disk or a vanished folder; result files are staged, so none is half-written
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"gca: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 2
    except RuntimeError as exc:
        if _is_out_of_memory(exc):
            print(f"gca: error: {_OUT_OF_MEMORY}", file=sys.stderr)
            return 2
        if _is_peer_failure(exc):
            print("gca: error: another process of this distributed run stopped or cannot be reached; see its "
                  "message (this one made no result files)", file=sys.stderr)  # fmt: skip
            return 2
        raise
    except KeyboardInterrupt:
        print("gca: interrupted; the output folder holds the previous run's files (finished runs of gca reproduce "
              "are kept)", file=sys.stderr)  # fmt: skip
        return 130
    return 2


def _terminate(signum, frame) -> None:
    """SIGTERM ends the command as Ctrl-C does. Inside an object's finalizer (``__del__``, e.g. a progress bar's)
    Python would swallow the exception and print a traceback, so the signal is sent again a moment later."""
    while frame is not None:
        if frame.f_code.co_name == "__del__":
            import threading

            threading.Timer(0.05, os.kill, (os.getpid(), signum)).start()
            return
        frame = frame.f_back
    raise KeyboardInterrupt


def _import_libraries() -> None:
    """Import PyTorch, PyG, SciPy and scikit-learn with Ctrl-C and SIGTERM held back until they have loaded.

    An interrupt that lands inside a native extension's initialisation (a pybind11 call) cannot unwind through
    C++ and aborts the interpreter (SIGABRT, seen under load at 0.3 s); held back, it ends the command with the
    usual one line as soon as the imports are done."""
    # Matplotlib logs warnings of its own when HOME is unusable (it then works from a temporary folder): not the
    # user's concern, so only its errors are shown.
    logging.getLogger("matplotlib").setLevel(logging.ERROR)
    held: list[int] = []
    try:
        previous = {n: signal.signal(n, lambda signum, frame: held.append(signum))
                    for n in (signal.SIGINT, signal.SIGTERM)}  # fmt: skip
    except ValueError:  # not the main thread: signals are not ours to hold
        previous = {}
    try:
        from . import datasets, run, train  # noqa: F401 - imported for their libraries
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
    if held:
        raise KeyboardInterrupt


_OUT_OF_MEMORY = (
    "ran out of memory; lower hidden, proj_hidden or block_size (--set key=value), train a large graph on "
    "sampled mini-batches (--set batch_size=1024; README: Large graphs), or use a machine or device with more memory"
)

#: Projected training time above which ``gca train`` says, once, how to make the run shorter.
LONG_RUN_SECONDS = 3600.0


class LongRunHint:
    """``on_epoch`` hook: after the first epoch, if all epochs would take over ``limit`` seconds, one warning line
    saying how long and what shortens it — mini-batches for exact training on a large graph, fewer updates for a
    mini-batch run. A user sees it within one epoch instead of after hours; training goes on unchanged."""

    def __init__(self, config: Any, num_nodes: int, limit: float = LONG_RUN_SECONDS, clock=time.perf_counter,
                 emit=None) -> None:  # fmt: skip
        self.config, self.num_nodes, self.limit, self.clock = config, num_nodes, limit, clock
        self.emit = emit or _print_above_progress
        self.start = clock()
        self.done = False

    def __call__(self, epoch: int, embed: Any = None) -> None:
        if self.done:
            return
        self.done = True  # the first epoch this process ran (epoch counts from 1, and on from a resumed checkpoint)
        per_epoch = self.clock() - self.start
        remaining = per_epoch * (self.config.epochs - epoch)
        if remaining <= self.limit:
            return
        config, n = self.config, self.num_nodes
        head = (f"the first epoch took {per_epoch:,.1f} s, so the other {config.epochs - epoch:,} epochs need about "
                f"{remaining / 3600:,.1f} h")  # fmt: skip
        if not config.batch_size:
            advice = (f"exact training compares all {2 * n:,}² pairs of the two views' nodes every epoch; for a graph "
                      "this large, sampled mini-batches are far cheaper (--set batch_size=1024; README: Large graphs)"
                      if n >= 20_000 else "lower --epochs, or train on a GPU (--device cuda)")  # fmt: skip
        else:
            steps = config.steps_per_epoch or -(-n // config.batch_size)
            advice = (f"each epoch makes {steps:,} updates; fewer epochs or --set steps_per_epoch=N shorten it "
                      "(updates, not epochs, set how far training goes: README: Large graphs)")  # fmt: skip
        self.emit(f"gca: warning: {head}; {advice}")


def _print_above_progress(line: str) -> None:
    from tqdm.auto import tqdm

    tqdm.write(line, file=sys.stderr)


def _is_out_of_memory(exc: RuntimeError) -> bool:
    """PyTorch reports a failed allocation as a RuntimeError (CPU) or torch.OutOfMemoryError (a RuntimeError)."""
    text = str(exc).lower()
    return type(exc).__name__ == "OutOfMemoryError" or "out of memory" in text or "not enough memory" in text


def _process_group():
    """torch.distributed if this process joined a process group (under torchrun), else ``None``; never imports
    torch itself (an interrupted import may have left it half-loaded)."""
    dist = sys.modules.get("torch.distributed")
    try:
        return dist if dist is not None and dist.is_available() and dist.is_initialized() else None
    except Exception:  # noqa: BLE001 - a module whose import was interrupted
        return None


def _leave_process_group() -> None:
    dist = _process_group()
    if dist is not None:
        dist.destroy_process_group()


def _is_peer_failure(exc: RuntimeError) -> bool:
    """A collective of a distributed run failed because another rank died or timed out."""
    return _process_group() is not None and (
        "Dist" in type(exc).__name__ or any(w in str(exc) for w in ("Connection", "gloo", "NCCL", "Timed out"))
    )


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())


def _settings(args: argparse.Namespace) -> dict[str, Any]:
    """--set values and the shortcut flags, each checked now — before any data is read or PyTorch is loaded."""
    overrides: dict[str, Any] = parse_overrides(args.set)
    build_config(None, args.config, overrides)  # also values that a flag below replaces
    for flag in ("centrality", "epochs", "seed"):
        if getattr(args, flag) is not None:
            overrides[flag] = getattr(args, flag)
    build_config(None, args.config, overrides)  # the dataset's own values are added once it is known
    return overrides


def _dataset_config(loaded, config_file: str | None, overrides: dict[str, Any]):
    """The run's configuration: the dataset's shipped setting (named datasets), ``--config`` and overrides."""
    from .config import is_named_config

    if is_named_config(config_file) and not loaded.named:
        raise ConfigError(f"--config {config_file} is a shipped setting of the paper's datasets, and {loaded.name} is "
                          "not one of them; give a TOML or JSON file")  # fmt: skip
    return build_config(loaded.name if loaded.named else None, config_file, overrides)


def _inputs(args: argparse.Namespace) -> list[str]:
    """The files a command reads, which no output may overwrite."""
    names = ("edges", "features", "labels", "config", "checkpoint", "dataset")
    return [getattr(args, n) for n in names if getattr(args, n, None)]


def _train(args: argparse.Namespace) -> int:
    overrides = _settings(args)
    if args.checkpoint_every < 0:
        raise ConfigError(f"--checkpoint-every must be non-negative, got {args.checkpoint_every}")
    if not 1 <= args.splits <= 1000:
        raise ConfigError(f"--splits must lie in [1, 1000], got {args.splits}")
    from .outputs import RunOutputs

    # under torchrun only rank 0 writes, so only it holds the folder's lock
    outputs = RunOutputs(args.out, args.export, _inputs(args), lock=environment.rank() == 0)
    try:
        return _train_into(outputs, args, overrides)
    finally:
        outputs.release()


def _train_into(outputs, args: argparse.Namespace, overrides: dict) -> int:
    _import_libraries()

    import numpy as np
    import torch

    from . import distributed
    from .graph import GraphError
    from .io import json_bytes
    from .plots import MIN_TSNE_NODES
    from .run import run_gca
    from .train import GCA, resolve_device

    device = resolve_device(args.device)
    context = None
    if distributed.launched():  # under torchrun: one rank of an exact multi-process run
        if device.type == "cuda" and device.index is None:
            device = torch.device("cuda", environment.local_rank())
        context = distributed.start(device)
    writes = context is None or context.writes
    loaded = _load_graph(args)
    config = _dataset_config(loaded, args.config, overrides)
    objective = None
    if context is not None and not config.batch_size:  # exact full-graph objective shared by the processes
        from .objective import ContrastiveObjective

        objective = ContrastiveObjective(config.tau, config.block_size, share=context.share,
                                         backend=config.loss_backend, precision=config.precision)  # fmt: skip
    estimator = GCA(config, device=device, progress=writes and not args.quiet, objective=objective)
    prepared = estimator.prepare(loaded.data, directed=loaded.directed)
    graph = prepared.graph
    if graph.edge_index.shape[1] == 0:
        # The library embeds edgeless graphs (GCA then sees features only); for a user's training run an empty
        # edge list is almost always a broken input.
        raw_edges = loaded.data.edge_index
        what = "only self-loops" if raw_edges is not None and raw_edges.numel() else "no edges"
        raise GraphError(f"the graph has {what}; GCA learns from the graph structure, so give at least one edge")
    labels = loaded.data.y
    splits = None
    if writes and not args.no_eval:
        if labels is None:
            print("gca: warning: the graph has no labels; skipping evaluation", file=sys.stderr)
        else:
            from .evaluate import label_splits

            splits = loaded.splits or label_splits(labels, args.splits, config.seed)
    plots = None
    if args.plots:
        plots = (outputs.stage_path("loss.png"), outputs.stage_path("tsne.png"))
        if labels is not None and graph.num_nodes < MIN_TSNE_NODES:
            print(f"gca: warning: t-SNE needs at least {MIN_TSNE_NODES} nodes; tsne.png is not drawn", file=sys.stderr)
    if writes:
        from .objective import resolve_objective

        for warning in loaded.warnings + graph.warnings:
            print(f"gca: warning: {warning}", file=sys.stderr)
        ranks = f", {context.world_size} processes" if context is not None else ""
        print(
            f"{loaded.name}: {graph.num_nodes} nodes, {graph.edge_index.shape[1]} directed edges"
            f" ({'directed' if graph.directed else 'undirected'}), {graph.num_features} features;"
            f" centrality={config.centrality}, epochs={config.epochs}, device={estimator.device.type}{ranks},"
            f" objective={' '.join(resolve_objective(config.loss_backend, config.precision, estimator.device))}"
            + (f", lr warm-up over {config.warmup_updates} updates"
               if config.warmup_updates > 1 and config.epochs > 0 else "")
            + (
                f"; mini-batches of {config.batch_size} anchors, fan-out {','.join(map(str, config.fanouts))}"
                if config.batch_size
                else ""
            )
        )
    # The previous complete run in --out stays untouched until this one commits; checkpoints go beside it.
    checkpoint = outputs.checkpoint
    if args.resume and writes:
        source = outputs.resume_from()
        note = f"resuming from {source}" if source else f"no checkpoint yet in {outputs.out}"
        print(f"gca: {note}", file=sys.stderr)
    elif args.resume:  # other ranks read what rank 0 resumes from and never write
        checkpoint = checkpoint if checkpoint.is_file() else outputs.out / "checkpoint.pt"
    elif writes and args.checkpoint_every:
        outputs.start_fresh()
    with outputs:
        result = run_gca(
            estimator, prepared, dataset=loaded.name, labels=labels, splits=splits, eval_raw=args.eval_raw,
            protocol=args.eval_protocol,
            checkpoint=checkpoint, checkpoint_every=args.checkpoint_every if writes else 0,
            resume=args.resume, plots=plots if writes else None, plot_title=loaded.name,
            on_epoch=LongRunHint(config, graph.num_nodes) if writes else None,
        )  # fmt: skip
        if not writes:  # every rank trained the same model; rank 0 alone writes it
            return 0
        if context is not None:
            result.record["distributed"] = {"world_size": context.world_size, "backend": "nccl" if
                                            device.type == "cuda" else "gloo"}  # fmt: skip
        for path in result.plots:
            outputs.wrote(path.name)
        embeddings = result.embeddings
        outputs.write("embeddings.npy", lambda f: np.save(f, embeddings.numpy()))
        if args.export:
            outputs.write_export(lambda path: _export(path, embeddings, loaded))
        outputs.write("model.pt", lambda f: torch.save(estimator.state(), f))
        outputs.write("results.json", lambda f: f.write(json_bytes(result.record)))
        written = outputs.commit()
    if result.evaluation is not None:
        print(f"accuracy (GCA, {config.centrality}): {result.evaluation}")
    if result.raw_evaluation is not None:
        print(f"accuracy (raw features):  {result.raw_evaluation}")
    print("wrote " + ", ".join(str(p) for p in written))
    return 0


def _export(path, embeddings, loaded) -> None:
    from .export import export_embeddings

    node_ids = loaded.node_ids or [str(i) for i in range(embeddings.shape[0])]
    export_embeddings(path, embeddings.numpy(), node_ids)


def _embed(args: argparse.Namespace) -> int:
    from .outputs import RunOutputs

    outputs = RunOutputs(args.out, args.export, _inputs(args))
    try:
        return _embed_into(outputs, args)
    finally:
        outputs.release()


def _embed_into(outputs, args: argparse.Namespace) -> int:
    outputs.refuse_other_runs(("embeddings.npy",), "gca embed")
    _import_libraries()

    import numpy as np

    from .graph import prepare_graph
    from .train import GCA, resolve_device

    estimator = GCA.load(args.checkpoint, device=resolve_device(args.device))
    loaded = _load_graph(args)
    graph = prepare_graph(loaded.data, loaded.directed, estimator.config.feature_norm)
    for warning in loaded.warnings + graph.warnings:
        print(f"gca: warning: {warning}", file=sys.stderr)
    if graph.num_features != estimator.in_channels:
        raise ConfigError(
            f"{loaded.name} has {graph.num_features} features per node but the encoder in {args.checkpoint} was "
            f"trained on {estimator.in_channels}; embed graphs with the same feature columns"
        )
    embeddings = estimator.embed(graph)
    with outputs:
        outputs.write("embeddings.npy", lambda f: np.save(f, embeddings.numpy()))
        if args.export:
            outputs.write_export(lambda path: _export(path, embeddings, loaded))
        written = outputs.commit(owned=("embeddings.npy",))
    print(f"{loaded.name}: {graph.num_nodes} nodes embedded with {args.checkpoint}; wrote "
          + ", ".join(str(p) for p in written))  # fmt: skip
    return 0


def _reproduce(args: argparse.Namespace) -> int:
    from .baselines import BASELINES
    from .outputs import check_folder, hold_folder, release_folder
    from .reproduce import PAPER_DATASETS

    if args.runs is not None and args.runs < 1:
        raise ConfigError(f"--runs must be at least 1, got {args.runs}")
    baselines = None
    if args.baselines is not None:
        baselines = [b.strip() for b in args.baselines.split(",") if b.strip() and b.strip() != "none"]
        unknown = [b for b in baselines if b not in BASELINES]
        if unknown:
            raise ConfigError(f"unknown baseline {unknown[0]!r}; choose from {', '.join(BASELINES)} or none")
    if any(not name.strip() for name in args.dataset or ()):
        raise ConfigError("--dataset is empty; give a dataset name or the path of a graph file or folder")
    # Without --dataset: the paper's five datasets for the tables and, as in the paper, Amazon-Photo for Figure 4.
    datasets = args.dataset or list(PAPER_DATASETS)
    figure4_datasets = args.dataset or ["Amazon-Photo"]
    out = check_folder(args.out, "--out")
    lock = hold_folder(out)  # one reproduction per folder: a second would train the same runs again beside it
    try:
        return _reproduce_into(out, args, datasets, figure4_datasets, baselines)
    finally:
        release_folder(lock)


def _reproduce_into(out, args: argparse.Namespace, datasets, figure4_datasets, baselines) -> int:
    from .reproduce import Reproduction

    repro = Reproduction(
        out, datasets, args.data_dir, quick=args.quick, runs=args.runs, device=args.device,
        plots=not args.no_plots, progress=not args.quiet, baselines=baselines, figure4_datasets=figure4_datasets,
        protocol=args.eval_protocol,
        log=lambda message: print(message, file=sys.stderr),
    )  # fmt: skip
    start = time.perf_counter()
    try:
        written = repro.run(args.task)
    except KeyboardInterrupt:
        print(
            f"gca: interrupted after {repro.trained} new runs; finished runs are saved in {out / 'runs'} — "
            "run the same command again to continue",
            file=sys.stderr,
        )
        return 130
    print(f"{repro.trained} runs trained, {repro.reused} reused from {out / 'runs'}; "
          f"{time.perf_counter() - start:.0f} s")  # fmt: skip
    for path in written:
        print(f"wrote {path}")
    return 0


def _tune(args: argparse.Namespace) -> int:
    if args.trials < 1:
        raise ConfigError(f"--trials must be at least 1, got {args.trials}")
    if args.max_epochs is not None and args.max_epochs < 1:
        raise ConfigError(f"--max-epochs must be at least 1, got {args.max_epochs}")
    if args.eval_every is not None and args.eval_every < 1:
        raise ConfigError(f"--eval-every must be at least 1, got {args.eval_every}")
    if args.eval_every and args.max_epochs and args.eval_every > args.max_epochs:
        raise ConfigError(f"--eval-every must lie in [1, --max-epochs], got {args.eval_every}")
    if not 1 <= args.search_splits <= args.splits <= 1000:
        raise ConfigError("--search-splits must lie in [1, --splits] and --splits in [1, 1000]")
    if args.timeout is not None and not args.timeout > 0:
        raise ConfigError(f"--timeout must be a positive number of seconds, got {args.timeout}")
    overrides: dict[str, Any] = parse_overrides(args.set)
    if args.seed is not None:
        overrides["seed"] = args.seed
    build_config(None, args.config, overrides)
    from .tune import TuneError, read_space

    space = read_space(args.space)
    try:
        import optuna  # noqa: F401
    except ImportError:
        raise ConfigError("gca tune needs Optuna: pip install 'gca-graph[tune]'") from None
    from .outputs import check_folder

    out = check_folder(args.out, "--out")
    _import_libraries()
    from . import distributed

    if distributed.launched():
        raise ConfigError("gca tune runs trials in one process each; for a parallel search start several gca tune "
                          "processes with the same --out instead of torchrun")  # fmt: skip

    from .evaluate import label_splits
    from .io import atomic_write, json_bytes
    from .run import run_gca
    from .train import GCA, resolve_device
    from .tune import Search, SearchSettings, best_toml, plot_search

    device = resolve_device(args.device)
    loaded = _load_graph(args)
    config = _dataset_config(loaded, args.config, overrides)
    labels = loaded.data.y
    if labels is None:
        raise TuneError(f"{loaded.name} has no labels; the search needs labelled nodes (give --labels)")
    splits = loaded.splits or label_splits(labels, args.splits, config.seed)
    search_splits = splits[: args.search_splits]
    max_epochs = args.max_epochs or config.epochs
    if max_epochs < 1:
        raise ConfigError("the config trains for 0 epochs; give --max-epochs")
    eval_every = min(args.eval_every or max(1, max_epochs // 10), max_epochs)
    graph = GCA(config, device=device).prepare(loaded.data, directed=loaded.directed).graph
    for warning in loaded.warnings + graph.warnings:
        print(f"gca: warning: {warning}", file=sys.stderr)
    base = {k: v for k, v in config.to_dict().items() if k not in space}
    settings = SearchSettings(loaded.name, max_epochs, eval_every, len(search_splits), base, space,
                              args.eval_protocol)  # fmt: skip
    log = (lambda message: None) if args.quiet else (lambda message: print(message, file=sys.stderr, flush=True))
    search = Search(out, settings, graph, labels, search_splits, device=str(device), seed=config.seed, log=log)
    before = search.finished()
    searched = ", ".join(k for k, spec in space.items() if "value" not in spec)
    print(f"{loaded.name}: {graph.num_nodes} nodes; searching {searched}"
          f" on the validation nodes of {len(search_splits)} splits, up to {max_epochs} epochs per trial "
          f"(checks every {eval_every}); {before} of {args.trials} trials already finished in {out / 'study.db'}",
          file=sys.stderr)  # fmt: skip
    start = time.perf_counter()
    try:
        search.run(args.trials, args.timeout)
    except KeyboardInterrupt:
        _write_search(search, out, atomic_write, plot_search, plots=False)
        print(f"gca: interrupted; {search.finished()} finished trials are saved in {out / 'study.db'} — run the "
              "same command again to continue", file=sys.stderr)  # fmt: skip
        return 130
    written = _write_search(search, out, atomic_write, plot_search, plots=True)
    params, val_acc, epochs, number = search.best()
    best_config = search.config(params, epochs)
    note = (
        f"gca tune on {loaded.name}: trial {number} of {search.finished()}, validation accuracy {val_acc:.2f} % "
        f"(mean over {len(search_splits)} splits, seed {config.seed}).\nReproduce: gca train --config "
        f"{out / 'best.toml'} --splits {len(search_splits)}: its results.json val_mean is this number."
    )
    searched = [key for key, spec in space.items() if "value" not in spec]
    atomic_write(out / "best.toml", lambda f: f.write(best_toml(best_config, searched, note)))
    written.append(out / "best.toml")
    # The best setting, trained once more and judged on the test nodes of every split: never seen by the search.
    estimator = GCA(best_config, device=device)
    final = run_gca(estimator, estimator.prepare(graph), dataset=loaded.name, labels=labels, splits=splits,
                    protocol=args.eval_protocol)  # fmt: skip
    record = {
        "best_trial": number, "validation_accuracy": val_acc, "search_splits": len(search_splits),
        "config": best_config.to_dict(), "test": final.record["accuracy"], "trials_finished": search.finished(),
        "seconds_this_session": round(time.perf_counter() - start, 1),
    }  # fmt: skip
    atomic_write(out / "final.json", lambda f: f.write(json_bytes(record)))
    written.append(out / "final.json")
    print(f"best validation accuracy {val_acc:.2f} % (trial {number}, {len(search_splits)} splits); test accuracy "
          f"of that setting: {final.evaluation}")  # fmt: skip
    print("wrote " + ", ".join(str(p) for p in written))
    return 0


def _write_search(search, out, atomic_write, plot_search, plots: bool) -> list:
    atomic_write(out / "trials.csv", lambda f: f.write(search.trials_csv()))
    written = [out / "trials.csv"]
    if plots:
        written += plot_search(search, out / "trials.png", out / "importance.png")
    return written


def entry() -> None:
    """The ``gca`` command. After an interruption the results are already safe (staged files removed, finished
    files atomic), so the process ends at once: an interrupt that landed inside a library's import (PyTorch's takes
    seconds) can leave native state that crashes the interpreter's finalisation with a "Fatal Python error"."""
    code = main()
    if code == 130:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(130)
    sys.exit(code)


if __name__ == "__main__":  # pragma: no cover
    entry()
