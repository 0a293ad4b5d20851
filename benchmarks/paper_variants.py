"""The paper's GCA rows (Table 3's raw features, Random-Init, GCA-DE/-PR/-EV; Table 4's ablations) on its datasets,
trained here in the shipped settings while ``--deadline`` allows (checkpoints and records in OUT: a rerun continues),
judged on ``gca train``'s 20 splits under both protocols. Prints per dataset and row: mean ± std of the split
accuracies under each protocol, the paper's number, seconds per epoch and peak GPU memory.

    python benchmarks/paper_variants.py --data-dir DATA --out OUT [--device cuda] [--deadline 420] [--seeds 3] ...
"""

import argparse
import concurrent.futures as futures
import itertools
import json
import os
import time
from pathlib import Path

import numpy as np
import torch
from harness import collect, judge_sklearn, judges, machine, pm, table

DATASETS = ("Amazon-Photo", "Amazon-Computers", "Coauthor-CS")
UNTRAINED = {"Raw features": ("Table 3", None), "Random-Init": ("Table 3", {"epochs": 0})}


def main() -> None:  # gca is imported here: the spawned judges, which import this file, do without it
    from gca import GCA, build_config, evaluate_embeddings, load_dataset
    from gca.evaluate.classification import raw_feature_input
    from gca.evaluate.splits import label_splits
    from gca.io import atomic_write_json
    from gca.reproduce import PAPER_TABLE3, PAPER_TABLE4
    from gca.reproduce.plan import TABLE3_GCA, TABLE4_ROWS
    from gca.train.distributed import resolve_device
    from gca.train.loop import TrainingError

    # row name → (the paper's table holding it, its switches; None: no training), in order of priority
    rows = {**UNTRAINED, **{label: ("Table 3", switches) for label, switches in TABLE3_GCA}}
    rows.update({label: ("Table 4", switches) for label, _, _, switches in TABLE4_ROWS if label != "GCA"})  # = GCA-DE
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--deadline", type=float, default=float("inf"), help="seconds from the start")
    parser.add_argument("--seeds", type=int, default=1, help="trainings per cell at most (seeds 0, 1, …)")
    parser.add_argument("--first-seed", type=int, default=0, help="start at this seed (earlier ones measured)")
    parser.add_argument("--dataset", action="append", help="repeatable; default: the three")
    parser.add_argument("--variant", action="append", choices=list(rows), help="repeatable; default: the trained rows")
    parser.add_argument("--epochs", type=int, help="cap on every training's epochs (dry runs)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="change the shipped setting")
    parser.add_argument("--judge-workers", type=int, default=max(1, (os.cpu_count() or 2) - 4))
    parser.add_argument("--judge-reserve", type=float, default=60.0, help="seconds kept for judging at the end")
    parser.add_argument("--judge-checkpoints", action="store_true", help="judge unfinished trainings' checkpoints")
    args = parser.parse_args()
    start = time.perf_counter()
    chosen = args.variant or [v for v in rows if v not in UNTRAINED]
    names = args.dataset or list(DATASETS)
    device = resolve_device(args.device)
    out = Path(args.out)
    (out / "checkpoints").mkdir(parents=True, exist_ok=True)
    path, header = out / "paper_variants.json", {"device": machine(str(device)), "epochs_cap": args.epochs}
    runs = json.loads(path.read_text())["runs"] if path.exists() else []
    done = {(r["dataset"], r["variant"], r["seed"]) for r in runs if "authors" in r}
    print(f"{header['device']}; deadline {args.deadline:.0f} s", flush=True)
    pool = judges(args.judge_workers)
    if device.type == "cuda":  # the cores the judges leave; a GPU training needs few
        torch.set_num_threads(max(1, (os.cpu_count() or 2) - args.judge_workers))
    pending: dict[futures.Future, dict] = {}
    loaded = {name: load_dataset(name, data_dir=args.data_dir) for name in names}
    per_epoch, overhead = {}, {}  # per dataset: seconds per epoch, the rest of a job's time (preparing, probing)
    overrides = dict(item.split("=", 1) for item in args.set)
    jobs, skipped = [], []
    for seed in range(args.first_seed, args.seeds):
        jobs += [(seed, v, name) for v in chosen if rows[v][0] == "Table 3" for name in names]
        jobs += [(seed, v, name) for name in names for v in chosen if rows[v][0] == "Table 4"]
    for seed, variant, name in (job for job in jobs if (job[2], job[1], job[0]) not in done):
        config = build_config(name, None, {**overrides, **(rows[variant][1] or {"epochs": 0}), "seed": seed})
        config = config.replace(epochs=min(config.epochs, args.epochs)) if args.epochs is not None else config
        elapsed = time.perf_counter() - start
        expected = config.epochs * per_epoch.get(name, 0.0) * 1.1 + overhead.get(name, 5.0)
        checkpoint = out / "checkpoints" / f"{name}-{variant}-{seed}.pt".replace(" ", "_")
        if args.judge_checkpoints and not checkpoint.exists():
            continue
        if elapsed + expected > args.deadline - args.judge_reserve:
            skipped.append(f"{name} {variant} seed {seed} (expected {expected:.0f} s, {args.deadline - elapsed:.0f} s)")
            continue
        data, job_start = loaded[name], time.perf_counter()
        record = {"dataset": name, "variant": variant, "table": rows[variant][0], "seed": seed, "epochs": config.epochs}
        record["config"] = config.to_dict()
        estimator, trained = GCA(config, device=str(device)), 0.0
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(device)
        prepared = estimator.prepare(data.data, data.directed)
        if rows[variant][1] is None:
            features = prepared.graph.raw_features
        elif args.judge_checkpoints:
            state = torch.load(checkpoint, map_location="cpu", weights_only=True)
            features = GCA.load(checkpoint, device=str(device)).embed(prepared)
            record["status"] = f"checkpoint at epoch {state['epoch']} of {state['config']['epochs']}"
        else:
            try:
                features = estimator.fit_transform(prepared, checkpoint=checkpoint, checkpoint_every=50, resume=True)
            except TrainingError as exc:  # a collapse is a result too
                runs.append({**record, "status": f"training failed: {exc}"})
                print(f"{name} {variant} seed {seed}: {exc}", flush=True)
                continue
            trained = estimator.train_seconds
            if config.epochs:
                per_epoch[name] = trained / config.epochs
            record.update(seconds_per_epoch=round(trained / max(config.epochs, 1), 5), train_seconds=round(trained, 2))
            record["final_loss"] = (estimator.losses or [None])[-1]
            record["objective"] = " ".join(estimator.model.objective.resolved(estimator.device))
        if device.type == "cuda":
            record["gpu_peak_mb"] = round(torch.cuda.max_memory_allocated(device) / 2**20, 1)
        splits = data.splits or label_splits(data.data.y, 20, config.seed)  # gca train's splits
        judged = time.perf_counter()
        raw = rows[variant][1] is None
        authors = raw_feature_input(features, "authors") if raw else features
        record["authors"] = evaluate_embeddings(authors, data.data.y, splits, "authors", device=device).to_dict()
        record["authors"]["seconds"] = round(time.perf_counter() - judged, 1)
        runs.append(record)
        atomic_write_json(path, {**header, "runs": runs})
        sklearn = raw_feature_input(features, "sklearn") if raw else features.numpy()
        pending[pool.submit(judge_sklearn, sklearn, data.data.y.numpy(), splits)] = record
        overhead[name] = time.perf_counter() - job_start - trained
        accuracy = f"{record['authors']['mean']:.2f} ± {record['authors']['std']:.2f}"
        progress = f"{config.epochs} epochs in {trained:.1f} s, authors' protocol {accuracy}"
        print(f"{name} {variant} seed {seed}: {progress} ({time.perf_counter() - start:.0f} s)", flush=True)

    collect(pool, pending, start + args.deadline)
    atomic_write_json(path, {**header, "not_started": skipped, "runs": runs})
    print(f"\n{header['device']}; cells: mean ± std of the 20 × k split accuracies of k trainings")
    row = table("dataset | variant | k | sklearn protocol | authors' protocol | paper | s/epoch | peak GPU memory")
    for name, variant in itertools.product(names, chosen):
        cell = [r for r in runs if r["dataset"] == name and r["variant"] == variant and "authors" in r]
        if not cell:
            continue
        paper = (PAPER_TABLE3 if rows[variant][0] == "Table 3" else PAPER_TABLE4).get(variant, {}).get(name)
        paper = f"{paper[0]:.2f} ± {paper[1]:.2f}" if paper else "—"
        pooled = " | ".join(_pooled([r[key]["runs"] for r in cell if key in r]) for key in ("sklearn", "authors"))
        peak = max((r.get("gpu_peak_mb", 0) for r in cell), default=0)
        status = "; ".join(sorted({r["status"] for r in cell if "status" in r}))
        seconds = f"{np.mean([r.get('seconds_per_epoch', 0) for r in cell]):.4f}"
        label = f"{variant} ({status})" if status else variant
        row(f"{name} | {label} | {len(cell)} | {pooled} | {paper} | {seconds} | {f'{peak:,.0f} MB' if peak else '—'}")
    if skipped:
        print(f"not started: {len(skipped)} trainings, the first {skipped[0]}")
    print(f"done in {time.perf_counter() - start:.0f} s")


def _pooled(runs: list[list[float]]) -> str:
    return pm(np.concatenate(runs)) if runs else "unfinished"


if __name__ == "__main__":
    main()
