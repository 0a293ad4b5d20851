"""Table 3's trained baselines at their papers' full schedules, one training each (seed 0), beside the paper's numbers.

Each (baseline, dataset) is trained as ``gca reproduce table3`` without ``--quick`` would, judged on 20 random
10/10/80 splits, and kept in ``OUT/runs`` as it finishes (a rerun continues). Printed per row: accuracy, epochs run
against the cap, the kept weights' epoch, seconds of training and evaluation, the paper's number.

    python benchmarks/baselines_full.py --data-dir DATA --out /tmp/baselines-full \\
        [--dataset Amazon-Photo ...] [--baseline gmi --baseline mvgrl] [--device cpu]
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

import numpy as np
from harness import machine, table

from gca.reproduce.baselines import BASELINES
from gca.reproduce.execute import DatasetCache, Executor
from gca.reproduce.paper import PAPER_TABLE3
from gca.reproduce.plan import QUICK_SPLITS, Cell, Mode, Planner
from gca.reproduce.store import RunStore

DATASETS = ("Amazon-Photo", "Amazon-Computers", "Coauthor-CS")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
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
    print(f"\n{machine(args.device)}")
    row = table(
        "Method | Dataset | accuracy (authors' probe, 20 splits) | epochs run / cap | stopped at | kept weights | "
        "seconds | paper"
    )
    for label, dataset, record in rows:
        paper = PAPER_TABLE3.get(label, {}).get(dataset)
        paper_text = "—" if paper is None else (f"{paper[0]:.2f} ± {paper[1]:.2f}" if paper[1] else f"{paper[0]:.2f}")
        if record is None:
            row(f"{label} | {dataset} | not run | | | | | {paper_text}")
            continue
        if record.get("error"):
            row(f"{label} | {dataset} | failed: {record['error']} | | | | | {paper_text}")
            continue
        runs = record["accuracy"]["runs"]
        training = record.get("training", {})
        row(
            f"{label} | {dataset} | {np.mean(runs):.2f} ± {np.std(runs):.2f} | {training.get('epochs_run', '?')} / "
            f"{training.get('max_epochs', '?')} | {training.get('stopping_epoch') or '—'} | "
            f"{training.get('kept_epoch', '?')} | {record['seconds']:.0f} | {paper_text}"
        )


if __name__ == "__main__":
    main()
