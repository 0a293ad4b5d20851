"""Table 3's trained baselines at their papers' full schedules, one training each, beside the paper's numbers.

What ``gca reproduce table3`` (without ``--quick``) trains for a baseline row — the full schedule — once (seed 0),
judged as ``--quick`` judges a training: on 20 random 10/10/80 splits drawn from its seed under the authors'
protocol, so the row's ± is over those 20 splits (the full reproduction trains 20 times, each judged on one split).
One training a row because GMI's 550 epochs on Coauthor-CS take hours on a laptop CPU. The records in ``OUT/runs``
are ``gca reproduce``'s own (accuracy, the probe's choices, the training's epochs, stopping epoch and losses).

Each (baseline, dataset) is a run of its own, kept as soon as it finishes: run the same command again after an
interruption and it continues. Printed: per row the accuracy, the epochs run against the cap, where early stopping
ended it, the kept weights' epoch, the seconds of training and evaluation, and the paper's number.

    python benchmarks/baselines_full.py --data-dir ../shared/data --out runs/baselines-full \\
        [--dataset Amazon-Photo ...] [--baseline gmi --baseline mvgrl] [--device cpu]
"""

from __future__ import annotations

import argparse
import platform
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from gca.reproduce.baselines import BASELINES
from gca.reproduce.execute import DatasetCache, Executor
from gca.reproduce.paper import PAPER_TABLE3
from gca.reproduce.plan import QUICK_SPLITS, Cell, Mode, Planner
from gca.reproduce.store import RunStore

DATASETS = ("Amazon-Photo", "Amazon-Computers", "Coauthor-CS")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--dataset", action="append", help=f"repeatable; default {', '.join(DATASETS)}")
    parser.add_argument("--baseline", action="append", help="repeatable; default gmi and mvgrl")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    keys = tuple(args.baseline or ("gmi", "mvgrl"))
    full = Mode.create(quick=False, runs=1)
    mode = replace(full, split=replace(full.split, count=QUICK_SPLITS))
    planner = Planner(mode, keys)
    store = RunStore(args.out / "runs")
    executor = Executor(store, DatasetCache(args.data_dir), mode, device=args.device)
    rows = []
    for dataset in args.dataset or DATASETS:
        for key in keys:
            runs = planner.baseline_runs(dataset, key)
            label = BASELINES[key][0]
            print(f"{label} on {dataset}", flush=True)
            executor.execute([Cell(label, dataset, runs)])
            rows.append((label, dataset, store.get(runs[0])))
    print(f"\n{platform.machine()}, {torch.get_num_threads()} threads, torch {torch.__version__}")
    print(
        "| Method | Dataset | accuracy (authors' probe, 20 splits) | epochs run / cap | stopped at | kept weights "
        "| seconds | paper |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for label, dataset, record in rows:
        paper = PAPER_TABLE3.get(label, {}).get(dataset)
        paper_text = "—" if paper is None else (f"{paper[0]:.2f} ± {paper[1]:.2f}" if paper[1] else f"{paper[0]:.2f}")
        if record is None:
            print(f"| {label} | {dataset} | not run | | | | | {paper_text} |")
            continue
        if record.get("error"):
            print(f"| {label} | {dataset} | failed: {record['error']} | | | | | {paper_text} |")
            continue
        runs = record["accuracy"]["runs"]
        training = record.get("training", {})
        print(
            f"| {label} | {dataset} | {np.mean(runs):.2f} ± {np.std(runs):.2f} | "
            f"{training.get('epochs_run', '?')} / {training.get('max_epochs', '?')} | "
            f"{training.get('stopping_epoch') or '—'} | {training.get('kept_epoch', '?')} | "
            f"{record['seconds']:.0f} | {paper_text} |"
        )


if __name__ == "__main__":
    main()
