"""The ``gca`` command: argument parsing, printing, result files and exit codes — no maths here."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .config import ConfigError, build_config, parse_overrides


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gca",
        description="Graph Contrastive learning with Adaptive augmentation (Zhu et al., WWW 2021).",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    train = sub.add_parser("train", help="train GCA on a graph, evaluate its embeddings and save them")
    train.add_argument(
        "--dataset",
        default="Karate",
        help="Karate (built in, default), Wiki-CS, Amazon-Computers, Amazon-Photo, Coauthor-CS, Coauthor-Physics, "
        "Cora, CiteSeer, PubMed, or a path to an .npz graph file",
    )
    train.add_argument("--data-dir", help="folder holding the datasets (default: $GCA_DATA_DIR or ~/.cache/gca/data)")
    train.add_argument(
        "--centrality",
        choices=("degree", "eigenvector", "pagerank", "uniform"),
        help="node centrality φ for adaptive augmentation; uniform gives GCA-T-A (GRACE). Default: degree",
    )
    train.add_argument("--config", help="TOML or JSON file of hyperparameters (overrides the dataset's defaults)")
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
    train.add_argument("--quiet", action="store_true", help="no progress bar")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    # Imported here so that `gca --help` answers without loading torch.
    from .datasets import DatasetError
    from .evaluate import EvaluationError
    from .graph import GraphError
    from .train import TrainingError

    errors = (ConfigError, DatasetError, EvaluationError, GraphError, TrainingError)
    try:
        if args.command == "train":
            return _train(args)
    except errors as exc:
        print(f"gca: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("gca: interrupted; no result files were written for the unfinished run", file=sys.stderr)
        return 130
    return 2


def _train(args: argparse.Namespace) -> int:
    import numpy as np
    import torch

    from .datasets import load_dataset
    from .evaluate import linear_evaluation, random_splits
    from .train import GCA

    overrides: dict[str, Any] = parse_overrides(args.set)
    for flag in ("centrality", "epochs", "seed"):
        if getattr(args, flag) is not None:
            overrides[flag] = getattr(args, flag)
    loaded = load_dataset(args.dataset, data_dir=args.data_dir)
    config = build_config(loaded.name if loaded.named else None, args.config, overrides)
    out = Path(args.out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot create the output folder {out}: {exc.strerror or exc}") from None

    estimator = GCA(config, device=args.device, progress=not args.quiet)
    graph = estimator.prepare(loaded.data)
    for warning in graph.warnings:
        print(f"gca: warning: {warning}", file=sys.stderr)
    print(
        f"{loaded.name}: {graph.num_nodes} nodes, {graph.edge_index.shape[1]} directed edges"
        f" ({'directed' if graph.directed else 'undirected'}), {graph.num_features} features;"
        f" centrality={config.centrality}, epochs={config.epochs}, device={estimator.device.type}"
    )
    embeddings = estimator.fit(graph)

    results: dict[str, Any] = {
        "dataset": loaded.name,
        "centrality": config.centrality,
        "epochs": config.epochs,
        "train_seconds": round(estimator.train_seconds, 3),
        "prepare_seconds": round(estimator.prepare_seconds, 3),
        "seconds_per_epoch": round(estimator.train_seconds / max(config.epochs, 1), 5),
        "final_loss": estimator.losses[-1] if estimator.losses else None,
        "device": str(estimator.device),
        "config": config.to_dict(),
        "accuracy": None,
    }
    labels = loaded.data.y
    if not args.no_eval:
        if labels is None:
            print("gca: warning: the graph has no labels; skipping evaluation", file=sys.stderr)
        else:
            splits = loaded.splits or random_splits(graph.num_nodes, args.splits, seed=config.seed, labels=labels)
            start = time.perf_counter()
            result = linear_evaluation(embeddings, labels, splits)
            results["accuracy"] = result.to_dict()
            results["eval_seconds"] = round(time.perf_counter() - start, 3)
            print(f"accuracy (GCA, {config.centrality}): {result}")
            if args.eval_raw:
                raw = linear_evaluation(graph.features_scipy, labels, splits)
                results["raw_features_accuracy"] = raw.to_dict()
                print(f"accuracy (raw features):  {raw}")

    _atomic_write(out / "embeddings.npy", lambda f: np.save(f, embeddings.numpy()))
    _atomic_write(out / "model.pt", lambda f: torch.save(estimator.state(), f))
    _atomic_write(out / "results.json", lambda f: f.write(json.dumps(results, indent=2).encode()))
    print(f"wrote {out / 'results.json'}, {out / 'embeddings.npy'}, {out / 'model.pt'}")
    return 0


def _atomic_write(path: Path, write) -> None:
    """Write through a temporary file in the same folder, then rename: never a half-written result."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
