"""The paper's datasets under both evaluation protocols: GCA-DE, raw features and Random-Init beside Table 3.

For each dataset (default: Amazon-Photo, Amazon-Computers, Coauthor-CS from ``--data-dir``):

1. GCA-DE with the shipped setting (Table 5), trained once by ``gca train`` with checkpoints every 50 epochs, so
   an interrupted measurement continues where it stopped when the same command is run again (``--resume``);
2. Random-Init: the same encoder untrained (``gca train --epochs 0``);
3. every embedding and the raw features judged on the same 20 random 10/10/80 splits under both protocols
   (``sklearn``: gca's default; ``authors``: the GCA authors' script, :mod:`gca.evaluate.probe`).

Results go to ``OUT/<dataset>/`` (each ``gca train`` run folder, and ``summary.json``); the table is printed in
Markdown. A dataset whose training has not finished is reported as unfinished, with its last checkpoint's epoch;
``--judge-checkpoints`` judges that checkpoint's embeddings instead (labelled with its epoch) and trains nothing.

    python benchmarks/paper_datasets.py --data-dir ../shared/data --out runs/paper-datasets [--dataset NAME ...]
        [--set KEY=VALUE ...] [--only-untrained] [--judge-checkpoints]
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
DATASETS = ("Amazon-Photo", "Amazon-Computers", "Coauthor-CS")


def gca_train(dataset: str, data_dir: str, out: Path, extra: list[str]) -> dict | None:
    """``gca train`` into ``out`` (resumed if a checkpoint is there); its results.json, or None if it failed."""
    if not (out / "results.json").is_file():
        command = [
            sys.executable,
            "-m",
            "gca.cli",
            "train",
            "--dataset",
            dataset,
            "--data-dir",
            data_dir,
            "--out",
            str(out),
            "--quiet",
            "--eval-raw",
            "--checkpoint-every",
            "50",
            "--resume",
            *extra,
        ]
        print("$ " + " ".join(command[2:]), file=sys.stderr, flush=True)
        start = time.perf_counter()
        if subprocess.run(command).returncode != 0:
            return None
        print(f"  {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)
    return json.loads((out / "results.json").read_text())


def judge_checkpoint(out: Path, data, y, splits) -> dict | None:
    """A record like results.json for the last checkpoint of an unfinished training (sklearn protocol), holding
    the embeddings themselves; None when there is no checkpoint."""
    from gca.evaluate.classification import evaluate_embeddings
    from gca.train.estimator import GCA

    path = _last_checkpoint(out)
    if path is None:
        return None
    state = torch.load(path, map_location="cpu", weights_only=True)
    embeddings = GCA.load(path, device="cpu").embed(data)  # prepared with the run's own feature_norm
    epoch = int(state["epoch"])
    return {
        "embeddings": embeddings,
        "accuracy": evaluate_embeddings(embeddings, y, splits).to_dict(),
        "checkpoint_epoch": epoch,
        "epochs": state["config"]["epochs"],
        "final_loss": state["losses"][-1],
        "seconds_per_epoch": state["train_seconds"] / epoch,
    }


def _last_checkpoint(out: Path) -> Path | None:
    """The checkpoint of the training in ``out``: the in-progress one, else that of a finished run."""
    from gca.outputs.folder import IN_PROGRESS

    return next((p for p in (out / IN_PROGRESS, out / "checkpoint.pt") if p.is_file()), None)


def checkpoint_epoch(out: Path) -> int | None:
    path = _last_checkpoint(out)
    if path is None:
        return None
    return int(torch.load(path, map_location="cpu", weights_only=True)["epoch"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--out", default="runs/paper-datasets")
    parser.add_argument("--dataset", action="append", help="dataset to run (repeatable; default: the three)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="passed to gca train")
    parser.add_argument("--only-untrained", action="store_true", help="raw features and Random-Init only")
    parser.add_argument(
        "--judge-checkpoints",
        action="store_true",
        help="judge the last checkpoint of unfinished trainings; start no training",
    )
    args = parser.parse_args()

    from gca.config import build_config
    from gca.datasets import load_dataset
    from gca.evaluate.classification import evaluate_embeddings, raw_feature_input
    from gca.evaluate.splits import label_splits
    from gca.graph.graph import prepare_graph
    from gca.reproduce import PAPER_TABLE3

    extra = [arg for item in args.set for arg in ("--set", item)]
    rows = []
    for name in args.dataset or DATASETS:
        folder = Path(args.out) / name
        loaded = load_dataset(name, data_dir=args.data_dir)
        config = build_config(name, None, dict(item.split("=", 1) for item in args.set))
        splits = loaded.splits or label_splits(loaded.data.y, 20, config.seed)  # gca train's splits
        y = loaded.data.y
        graph = prepare_graph(loaded.data, loaded.directed)
        summary: dict = {"dataset": name, "config": config.to_dict()}
        untrained = gca_train(name, args.data_dir, folder / "random-init", [*extra, "--epochs", "0"])
        trained = None
        if args.judge_checkpoints and not (folder / "gca-de" / "results.json").is_file():
            trained = judge_checkpoint(folder / "gca-de", loaded.data, y, splits)
        elif not args.only_untrained:
            trained = gca_train(name, args.data_dir, folder / "gca-de", extra)
        judged = {
            "Raw features": ("raw", untrained),
            "Random-Init": ("random-init", untrained),
            "GCA-DE": ("gca-de", trained),
        }
        for method, (run, record) in judged.items():
            entry: dict = {}
            if record is None:
                epoch = checkpoint_epoch(folder / run)
                entry["status"] = (
                    "not run"
                    if args.only_untrained and run == "gca-de"
                    else (f"unfinished (checkpoint at epoch {epoch})" if epoch else "failed")
                )
            else:
                if method == "Raw features":
                    features, entry["sklearn"] = graph.raw_features, record["raw_features_accuracy"]
                else:
                    features = record.get("embeddings")
                    if features is None:
                        features = torch.from_numpy(np.load(folder / run / "embeddings.npy"))
                    entry["sklearn"] = record["accuracy"]
                    if "checkpoint_epoch" in record:
                        entry["status"] = f"checkpoint at epoch {record['checkpoint_epoch']} of {record['epochs']}"
                start = time.perf_counter()
                authors = evaluate_embeddings(
                    raw_feature_input(features, "authors") if method == "Raw features" else features,
                    y,
                    splits,
                    "authors",
                )
                entry["authors"] = authors.to_dict()
                entry["authors_eval_seconds"] = round(time.perf_counter() - start, 1)
                if method == "GCA-DE":
                    entry["seconds_per_epoch"] = record["seconds_per_epoch"]
                    entry["final_loss"] = record["final_loss"]
                    entry["epochs_trained"] = record.get("checkpoint_epoch", record["epochs"])
            summary[method] = entry
            paper = PAPER_TABLE3.get(method, {}).get(name)
            rows.append((name, method, entry, paper))
        summary["peak_rss_mb_children"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        (folder / "summary.json").write_text(json.dumps(summary, indent=1))

    print(f"machine: {platform.processor() or platform.machine()}, torch {torch.__version__}")
    print("| dataset | method | sklearn protocol | authors' protocol | paper (authors' protocol) |")
    print("|---|---|---|---|---|")
    for name, method, entry, paper in rows:
        reference = f"{paper[0]:.2f} ± {paper[1]:.2f}" if paper else "—"
        print(f"| {name} | {method} | {_cell(entry, 'sklearn')} | {_cell(entry, 'authors')} | {reference} |")


def _cell(entry: dict, protocol: str) -> str:
    result = entry.get(protocol)
    if not result:
        return entry.get("status", "—")
    note = f" ({entry['status']})" if entry.get("status") else ""
    return f"{result['mean']:.2f} ± {result['std']:.2f}{note}"


if __name__ == "__main__":
    main()
