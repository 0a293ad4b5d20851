"""``gca tune``: search hyperparameters on validation accuracy (Optuna), then test the best once."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from ..config import ConfigError, build_config, parse_overrides
from .common import dataset_config, graph_arguments, load_graph, protocol_argument
from .shell import import_libraries


def add_parser(sub) -> None:
    tune = sub.add_parser(
        "tune",
        help="search hyperparameters on validation accuracy (Optuna; resumable) and write DIR/best.toml",
        description="Search GCA's hyperparameters on validation accuracy with Optuna's TPE sampler and median "
        "pruning. The study lives in OUT/study.db: run the same command again to continue after an interruption, "
        "or start several processes on the same OUT to search in parallel. Needs pip install 'gca-graph[tune]'.",
    )
    graph_arguments(tune)
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
    protocol_argument(tune)
    tune.add_argument("--config", help="TOML or JSON file of the settings not searched")
    tune.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="fix one setting (repeatable)")
    tune.add_argument("--seed", type=int, help="seed of every trial and of the splits (default 0)")
    tune.add_argument("--device", default="auto", help="auto (CUDA if available), cpu or cuda[:N]")
    tune.add_argument("--out", required=True, help="study folder: study.db, trials.csv, best.toml, plots")
    tune.add_argument("--quiet", action="store_true", help="no line per trial")


def run(args: argparse.Namespace) -> int:
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
    from ..tune import TuneError, read_space

    space = read_space(args.space)
    try:
        import optuna  # noqa: F401
    except ImportError:
        raise ConfigError("gca tune needs Optuna: pip install 'gca-graph[tune]'") from None
    from ..outputs import check_folder

    out = check_folder(args.out, "--out")
    import_libraries()
    from .. import distributed

    if distributed.launched():
        raise ConfigError("gca tune runs trials in one process each; for a parallel search start several gca tune "
                          "processes with the same --out instead of torchrun")  # fmt: skip

    from ..evaluate import label_splits
    from ..io import atomic_write, json_bytes
    from ..run import run_gca
    from ..train import GCA, resolve_device
    from ..tune import Search, SearchSettings, best_toml, plot_search

    device = resolve_device(args.device)
    loaded = load_graph(args)
    config = dataset_config(loaded, args.config, overrides)
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
