"""``gca tune``: search hyperparameters on validation accuracy (Optuna), then test the best once."""

from __future__ import annotations

import argparse
import time
from typing import Any

from ..config import ConfigError, build_config, parse_overrides
from ..stderr import say, warn
from .common import evaluation_arguments, graph_arguments, load_graph, split_count, split_setting
from .guard import import_libraries, imports_held


def add_parser(sub) -> None:
    tune = sub.add_parser(
        "tune",
        help="search hyperparameters on validation accuracy (Optuna; resumable) and write DIR/best.toml",
        description="Search GCA's hyperparameters on validation accuracy with Optuna's TPE sampler and median "
        "pruning. The study lives in OUT/study.db: run the same command again to continue after an interruption, "
        "or start several processes on the same OUT to search in parallel. Needs Optuna: pip install optuna (the "
        "tune extra).",
    )
    graph_arguments(tune)
    tune.add_argument("--trials", type=int, default=30, help="finished trials wanted in the study (default 30)")
    tune.add_argument("--timeout", type=float, metavar="S", help="stop starting trials after S seconds")
    tune.add_argument(
        "--space",
        metavar="FILE",
        help="TOML file replacing the search range of any key, or 'wide': the GCA family's space of the tuned "
        "settings (docs/tuning.md)",
    )
    tune.add_argument(
        "--max-epochs", type=int, help="epochs per trial at most (default: the config's epochs, e.g. 500 for Cora)"
    )
    tune.add_argument(
        "--eval-every", type=int, metavar="K", help="validation check every K epochs (default: max-epochs / 10)"
    )
    tune.add_argument(
        "--search-splits", type=int, default=3, help="splits whose validation accuracy is searched (default 3)"
    )
    evaluation_arguments(tune, "splits of the final test (default 20)")
    tune.add_argument("--config", help="TOML or JSON file of the settings not searched")
    tune.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="fix one setting (repeatable)")
    tune.add_argument("--seed", type=int, help="seed of every trial and of the splits (default 0)")
    tune.add_argument("--device", default="auto", help="auto (CUDA if available), cpu or cuda[:N]")
    tune.add_argument("--out", required=True, help="study folder: study.db, trials.csv, best.toml, plots")
    tune.add_argument("--quiet", action="store_true", help="no line per trial")


def check_arguments(args: argparse.Namespace) -> None:
    """Every count and limit of the search, checked before anything is loaded."""
    if args.trials < 1:
        raise ConfigError(f"--trials must be at least 1, got {args.trials}")
    if args.max_epochs is not None and args.max_epochs < 1:
        raise ConfigError(f"--max-epochs must be at least 1, got {args.max_epochs}")
    if args.eval_every is not None and args.eval_every < 1:
        raise ConfigError(f"--eval-every must be at least 1, got {args.eval_every}")
    if args.eval_every and args.max_epochs and args.eval_every > args.max_epochs:
        raise ConfigError(f"--eval-every must lie in [1, --max-epochs], got {args.eval_every}")
    if not 1 <= args.search_splits <= split_count(args) <= 1000:
        raise ConfigError("--search-splits must lie in [1, --splits] and --splits in [1, 1000]")
    split_setting(args, split_count(args))
    if args.timeout is not None and not args.timeout > 0:
        raise ConfigError(f"--timeout must be a positive number of seconds, got {args.timeout}")


def _fixed_and_searched(args: argparse.Namespace) -> tuple[dict[str, Any], dict]:
    """The settings fixed by --config/--set/--seed and the search space, each checked; Optuna is there."""
    overrides: dict[str, Any] = parse_overrides(args.set)
    if args.seed is not None:
        overrides["seed"] = args.seed
    build_config(None, args.config, overrides)
    from ..tune import read_space

    space = read_space(args.space)
    for key in overrides:  # --set fixes a key: it leaves the search space (the help's "fix one setting")
        space.pop(key, None)
    if not any("value" not in spec for spec in space.values()):
        raise ConfigError("--set fixes every key of the search space; leave one to search, or use gca train")
    try:
        import optuna  # noqa: F401
    except ImportError:
        raise ConfigError("gca tune needs Optuna: pip install optuna (the tune extra)") from None
    return overrides, space


def run(args: argparse.Namespace) -> int:
    check_arguments(args)
    overrides, space = _fixed_and_searched(args)
    with imports_held():
        from ..outputs.folder import check_folder

    out = check_folder(args.out, "out")
    import_libraries()
    from ..progress import to_stderr
    from ..run.job import Job
    from ..train import distributed
    from ..train.distributed import resolve_device
    from ..train.estimator import GCA
    from ..tune import Search, SearchSettings, TuneError

    if distributed.launched():
        raise ConfigError(
            "gca tune runs trials in one process each; for a parallel search start several gca tune "
            "processes with the same --out instead of torchrun"
        )
    device = resolve_device(args.device)
    # each trial trains as gca train would on this device: mini-batches where its default chooses them
    job = Job.open(load_graph(args), args.config, overrides, device=device, training="auto")
    if job.labels is None:
        raise TuneError(f"{job.name} has no labels; the search needs labelled nodes (give --labels)")
    max_epochs = args.max_epochs or job.config.epochs
    if max_epochs < 1:
        raise ConfigError("the config trains for 0 epochs; give --max-epochs")
    eval_every = min(args.eval_every or max(1, max_epochs // 10), max_epochs)
    graph = job.prepare(GCA(job.config, device=device), require_edges=False).graph
    for warning in job.warnings:
        warn(warning)
    splits = job.splits(split_setting(args, split_count(args)))
    base = {k: v for k, v in job.config.to_dict().items() if k not in space}
    searching = min(args.search_splits, len(splits))  # a public split may be one
    settings = SearchSettings(job.name, max_epochs, eval_every, searching, base, space, args.eval_protocol)
    search = Search(
        out,
        settings,
        graph,
        job.labels,
        splits[:searching],
        device=str(device),
        seed=job.config.seed,
        log=None if args.quiet else to_stderr,
    )
    searched = ", ".join(k for k, spec in space.items() if "value" not in spec)
    cfg = job.config
    how = f" of mini-batches ({cfg.batch_size} anchors)" if cfg.batch_size else ""
    say(
        f"{job.name}: {graph.num_nodes} nodes; searching {searched} on the validation nodes of {searching}"
        f" splits, up to {max_epochs} epochs{how} per trial (checks every {eval_every}); {search.finished()} of "
        f"{args.trials} trials already finished in {out / 'study.db'}"
    )
    start = time.perf_counter()
    try:
        search.run(args.trials, args.timeout)
    except KeyboardInterrupt:
        search.write_trials(plots=False)
        say(
            f"gca: interrupted; {search.finished()} finished trials are saved in {out / 'study.db'} — run the "
            "same command again to continue"
        )
        return 130
    written = search.write_trials()
    record, evaluation, concluded = search.conclude(job.labels, splits, time.perf_counter() - start)
    print(
        f"best validation accuracy {record['validation_accuracy']:.2f} % (trial {record['best_trial']}, "
        f"{searching} splits); test accuracy of that setting: {evaluation}"
    )
    print("wrote " + ", ".join(str(p) for p in written + concluded))
    return 0
