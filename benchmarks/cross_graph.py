"""The tuned settings across graphs: each search's best setting trained on every graph, the leave-one-out table, and
the setting :func:`gca.tune.mean_rank_choice` picks for a graph no search saw (docs/tuning.md).

A candidate (one study's ``best.toml``) is trained on each graph, seed 0: validation accuracy over the first
``--search-splits`` splits, test accuracy over all ``--splits`` (reported, never read by the rule). Cells go to
``--out`` as they finish; a rerun continues.

    python benchmarks/cross_graph.py --data-dir DATA --out cross.json \\
        --study Cora=STUDIES/cora --study Amazon-Photo=STUDIES/photo ...
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
from pathlib import Path

import torch

from gca.config import read_config_file
from gca.datasets import load_dataset
from gca.evaluate.classification import linear_evaluation, validation_accuracy
from gca.evaluate.feature_baselines import judge_feature_baselines
from gca.evaluate.splits import SplitSetting
from gca.io import atomic_write, json_bytes
from gca.run.job import Job
from gca.train.estimator import GCA
from gca.tune import mean_rank_choice, search_labels


def candidate(folder: Path, name: str, data_dir: str | None) -> tuple[dict, int]:
    """(searched keys and values, updates where validation peaked) of a study folder's ``best.toml``."""
    searched = (folder / "best.toml").read_text().split("# searched", 1)[1].split("# fixed", 1)[0]
    config = read_config_file(folder / "best.toml")
    keys = [line.split(" = ", 1)[0] for line in searched.strip().splitlines() if " = " in line]
    batch, steps = config.get("batch_size", 0), config.get("steps_per_epoch", 0)
    nodes = load_dataset(name, data_dir).data.num_nodes
    per_epoch = (steps or math.ceil(nodes / batch)) if batch else 1
    return {key: config[key] for key in keys}, int(config["epochs"]) * per_epoch


def open_job(name: str, data_dir: str | None, params: dict, updates: int) -> Job:
    """``name`` with ``params`` in its default training mode, for ``updates`` updates."""
    loaded = load_dataset(name, data_dir)
    job = Job.open(loaded, None, dict(params), device="cpu", training="auto")
    per_epoch = job.schedule["updates_per_epoch"] if job.schedule else 1
    return Job.open(loaded, None, {**params, "epochs": math.ceil(updates / per_epoch)}, device="cpu", training="auto")


def judge(name: str, data_dir: str | None, params: dict, updates: int, search_splits: int, splits: int) -> dict:
    """Validation (search splits) and test (all splits, each kept) accuracy of ``params`` trained on ``name``."""
    job = open_job(name, data_dir, params, updates)
    estimator = GCA(job.config, device="cpu")
    prepared = job.prepare(estimator)
    every = job.splits(SplitSetting(count=splits))
    embedding = estimator.fit(prepared).embedding_
    seen = every[:search_splits]
    test = linear_evaluation(embedding, job.labels, every)
    return {
        "validation": validation_accuracy(embedding, search_labels(job.labels, seen), seen),
        "test": test.mean,
        "test_splits": list(test.accuracies),
        "hidden": job.config.hidden,
        "epochs": job.config.epochs,
        "batch_size": job.config.batch_size,
    }


def propagated(name: str, data_dir: str | None, width: int, splits: int) -> dict:
    """The best of raw X and Â^k X (k = 1, 2, 3; X projected to ``width``) on ``name``'s splits, each split kept."""
    job = open_job(name, data_dir, {}, 1)
    graph = job.prepare(GCA(job.config, device="cpu")).graph
    rows = judge_feature_baselines(graph, job.labels, job.splits(SplitSetting(count=splits)), width=width).rows()
    best, result = max(rows.items(), key=lambda item: item[1].mean)
    return {"row": best, "test": result.mean, "test_splits": list(result.accuracies)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--study", action="append", required=True, metavar="DATASET=FOLDER")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--out", required=True)
    parser.add_argument("--search-splits", type=int, default=3)
    parser.add_argument("--splits", type=int, default=20)
    args = parser.parse_args()
    torch.set_num_threads(2)
    studies = dict(spec.split("=", 1) for spec in args.study)
    graphs = list(studies)
    candidates = {graph: candidate(Path(folder), graph, args.data_dir) for graph, folder in studies.items()}
    out = Path(args.out)
    cells = json.loads(out.read_text()) if out.exists() else {}
    for source, (params, updates) in candidates.items():
        for graph in graphs:
            key = f"{source} on {graph}"
            if key not in cells:
                cells[key] = judge(graph, args.data_dir, params, updates, args.search_splits, args.splits)
                atomic_write(out, lambda f: f.write(json_bytes(cells)))
            print(f"{key}: validation {cells[key]['validation']:.2f}, test {cells[key]['test']:.2f}", flush=True)
    validation = {c: {g: cells[f"{c} on {g}"]["validation"] for g in graphs} for c in candidates}
    print("\n| left out | chosen (from) | validation there | test there | best Â^k X there | paired |")
    print("|---|---|---:|---:|---:|---:|")
    for held in graphs:
        others = [g for g in graphs if g != held]
        chosen = mean_rank_choice(validation, others, candidates=others)
        cell = cells[f"{chosen} on {held}"]
        key = f"propagated on {held} at width {cell['hidden']}"
        if key not in cells:
            cells[key] = propagated(held, args.data_dir, cell["hidden"], args.splits)
            atomic_write(out, lambda f: f.write(json_bytes(cells)))
        base = cells[key]
        gaps = [a - b for a, b in zip(cell["test_splits"], base["test_splits"], strict=True)]
        mean, std = statistics.fmean(gaps), statistics.pstdev(gaps)
        print(
            f"| {held} | {chosen}'s best | {cell['validation']:.2f} | {cell['test']:.2f} | "
            f"{base['row']} {base['test']:.2f} | {mean:+.2f} ± {std:.2f} |"
        )
    print(f"\nover all {len(graphs)} graphs the rule chooses {mean_rank_choice(validation, graphs)}'s best setting")


if __name__ == "__main__":
    main()
