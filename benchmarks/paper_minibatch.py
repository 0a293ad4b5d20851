"""Mini-batch against exact training on the paper's graphs: accuracy under both protocols, seconds, peak memory.

For each dataset (Amazon-Photo, Amazon-Computers, Coauthor-CS by default, with Table 5's shipped setting) and each
training — exact (``batch_size`` 0, the paper's) and mini-batches of B anchors with a fan-out — one

    python -m gca train --dataset NAME --data-dir DATA --device D --eval-protocol authors --quiet --seed S
                        [--set batch_size=B --set fanout=F] --out WORK/RUN

in its own process and folder. A mini-batch run keeps gca's default schedule: the full-graph setting's number of
updates (⌈E / ⌈N/B⌉⌉ epochs of ⌈N/B⌉ updates; ``gca.config.mini_batch_epochs``). Each run's ``results.json``
gives the authors' protocol (20 splits), the training seconds and PyTorch's peak allocated GPU memory; the peak
RSS is the child's own (``os.wait4``). The saved embeddings are then judged under scikit-learn's protocol on the
same splits (``gca train --seed S`` draws them from its seed) in ``--judge-workers`` one-thread CPU processes,
meanwhile the next training runs. (Its fits at large C stop at 1,000 L-BFGS iterations, where the thread count
changes the sums: one thread against two gave 90.96 against 91.13 % on one Amazon-Photo embedding, 2 splits.)

Order: the first two entries of ``--batch-sizes`` (by default exact and B = 1024) on every dataset, then the other
batch sizes, then the other fan-outs (at the first mini-batch size), dataset after dataset; then the same with the
next seed. A run whose expected wall time (the same dataset and kind so far, else the longest of the kind) would
end later than ``--judge-reserve`` seconds before ``--deadline`` is not started, a run still going at the deadline
is stopped, and judges unfinished then are reported so. Rows are printed as runs finish; the full table,
scikit-learn's column included, at the end, and every row goes to ``OUT/paper_minibatch.json`` (rewritten after
each event).

    python benchmarks/paper_minibatch.py --data-dir DATA --out OUT [--device cuda] [--deadline 480]
        [--datasets Amazon-Photo ...] [--batch-sizes 0 1024 2048 512] [--fanouts 10,10 ...] [--seeds 1]
        [--epochs E] [--splits 20] [--sklearn-splits 20] [--judge-workers N] [--judge-reserve 25] [--work DIR]

``--epochs E`` stands for a full-graph setting of E epochs (dry runs): exact runs train E epochs, mini-batch
runs the epochs that keep E updates (``--epochs`` given to ``gca train``, so its ``mini_batch_schedule`` is not
recorded). A dry run on a CPU: ``--device cpu --datasets Amazon-Photo --epochs 2 --splits 2 --sklearn-splits 2``.
"""

from __future__ import annotations

import argparse
import concurrent.futures as futures
import json
import math
import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DATASETS = ("Amazon-Photo", "Amazon-Computers", "Coauthor-CS")
ONE_THREAD = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}


def _one_thread() -> None:
    """Judge processes: one thread each (set before NumPy and PyTorch are imported there)."""
    os.environ.update(ONE_THREAD)


def _judge_sklearn(embeddings_path: str, labels, splits: list) -> dict:
    """Runs in a worker process: gca's default protocol (scikit-learn) on one saved embedding."""
    import numpy as np

    from gca.evaluate.classification import linear_evaluation

    start = time.perf_counter()
    result = linear_evaluation(np.load(embeddings_path), labels, splits).to_dict()
    return {
        "mean": result["mean"],
        "std": result["std"],
        "runs": result["runs"],
        "seconds": round(time.perf_counter() - start, 1),
    }


def run_until(arguments: list[str], log: Path, env: dict, stop_at: float) -> tuple[int | None, float, float]:
    """(exit status — None if stopped at ``stop_at`` —, wall seconds, peak RSS in MiB of the process itself)."""
    start = time.perf_counter()
    with log.open("w") as sink:
        process = subprocess.Popen(arguments, stdout=sink, stderr=subprocess.STDOUT, env=env)
        stopped = False
        while True:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            if not stopped and time.perf_counter() > stop_at:
                process.kill()
                stopped = True
            time.sleep(0.1)
    process.returncode = os.waitstatus_to_exitcode(status)
    return (None if stopped else process.returncode), time.perf_counter() - start, usage.ru_maxrss / 1024


def trainings(batch_sizes: list[int], fanouts: list[str]) -> list[tuple[int, str]]:
    """(batch size, fan-out) in order of priority: the batch sizes with the first fan-out, then the other fan-outs
    at the first mini-batch size."""
    first = fanouts[0]
    runs = [(b, first if b else "") for b in batch_sizes]
    mini = next((b for b in batch_sizes if b), None)
    if mini is not None:
        runs += [(mini, f) for f in fanouts[1:]]
    return list(dict.fromkeys(runs))


def label(batch: int, fanout: str) -> str:
    return f"mini-batch B = {batch}, fan-out {fanout}" if batch else "exact (full graph)"


def cell(result: dict | None, status: str = "—") -> str:
    return f"{result['mean']:.2f} ± {result['std']:.2f}" if result else status


def row_text(r: dict) -> str:
    if "error" in r:
        return f"| {r['dataset']} | {r['training']} | {r['seed']} | {r['error']} | | | | | | | | |"
    peak_gpu = r.get("gpu_peak_mb")
    return (
        f"| {r['dataset']} | {r['training']} | {r['seed']} | {r['epochs']} × {r['updates_per_epoch']} | "
        f"{cell(r.get('authors'))} | {cell(r.get('sklearn'), r.get('sklearn_status', 'pending'))} | "
        f"{r['train_seconds']:.1f} | {1000 * r['train_seconds'] / max(r['updates'], 1):.2f} | "
        f"{r['embed_seconds']:.2f} | {r['wall_seconds']:.1f} | "
        f"{f'{peak_gpu:,.0f}' if peak_gpu is not None else '—'} | {r['peak_rss_mb']:,.0f} |"
    )


HEADER = (
    "| dataset | training | seed | epochs × updates | accuracy (authors) | accuracy (sklearn) | train s | "
    "ms/update | embed s | wall s | peak GPU MB | peak RSS MB |\n" + "|---" * 12 + "|"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--out", required=True, help="folder for paper_minibatch.json")
    parser.add_argument("--device", default="auto", help="passed to gca train (auto, cpu, cuda[:N])")
    parser.add_argument("--deadline", type=float, default=float("inf"), help="seconds from the start")
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS))
    parser.add_argument("--batch-sizes", nargs="+", type=int, default=[0, 1024, 2048, 512], help="0: exact")
    parser.add_argument(
        "--fanouts",
        nargs="+",
        default=["10,10"],
        help="the first with every batch size, the others at the first mini-batch size",
    )
    parser.add_argument("--seeds", type=int, default=1, help="trainings per configuration at most (seeds 0, 1, …)")
    parser.add_argument("--epochs", type=int, help="a full-graph setting of this many epochs instead (dry runs)")
    parser.add_argument("--splits", type=int, default=20, help="evaluation splits of the authors' protocol")
    parser.add_argument("--sklearn-splits", type=int, default=20, help="of scikit-learn's protocol; 0: not judged")
    parser.add_argument("--judge-workers", type=int, help="default: cores − 4 (at most 8) on a GPU, 1 on the CPU")
    parser.add_argument(
        "--judge-reserve",
        type=float,
        default=25.0,
        help="seconds before the deadline after which no training may end (judging time)",
    )
    parser.add_argument("--work", type=Path, help="folder of the runs (default: a temporary one, removed)")
    args = parser.parse_args()
    start = time.perf_counter()
    deadline = start + args.deadline

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))  # a checkout without gca installed
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(Path(__file__).resolve().parents[1] / "src"), env.get("PYTHONPATH")])
    )
    from gca.config import build_config, mini_batch_epochs
    from gca.datasets import load_dataset
    from gca.evaluate.splits import SplitSetting
    from gca.io import atomic_write_json

    cores = os.cpu_count() or 2
    on_cpu = args.device == "cpu"
    workers = args.judge_workers or (1 if on_cpu else max(1, min(8, cores - 4)))
    pool = (
        futures.ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"), initializer=_one_thread)
        if args.sklearn_splits
        else None
    )
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    work = args.work or Path(tempfile.mkdtemp(prefix="gca-paper-minibatch-"))
    work.mkdir(parents=True, exist_ok=True)
    report = {
        "device": args.device,
        "cores": cores,
        "deadline_s": args.deadline,
        "epochs_override": args.epochs,
        "splits": args.splits,
        "sklearn_splits": args.sklearn_splits,
        "rows": [],
        "not_started": [],
    }
    report_path = out / "paper_minibatch.json"
    print(
        f"paper_minibatch: device {args.device}, {cores} CPU cores, deadline {args.deadline:.0f} s, judges "
        f"{workers if pool else 0}, runs in {work}",
        flush=True,
    )
    print(HEADER, flush=True)

    graphs: dict[str, dict] = {}  # per dataset: nodes, labels, the splits of each seed

    def graph(name: str) -> dict:
        if name not in graphs:  # loaded here before its first training, which then finds PyG's processed files
            loaded = load_dataset(name, data_dir=args.data_dir)
            graphs[name] = {
                "nodes": loaded.data.num_nodes,
                "y": loaded.data.y,
                "labels": loaded.data.y.numpy(),
                "own": (loaded.splits, loaded.public),
                "splits": {},
            }  # not the features
        return graphs[name]

    def sklearn_splits(name: str, seed: int) -> list:
        g = graphs[name]
        if seed not in g["splits"]:
            g["splits"][seed] = SplitSetting(count=args.sklearn_splits).draw(
                g["y"], seed, *g["own"], name
            )  # what gca train --seed S draws
        return g["splits"][seed]

    configurations = trainings(args.batch_sizes, args.fanouts)
    jobs = []
    for seed in range(args.seeds):
        jobs += [(seed, name, c) for name in args.datasets for c in configurations[:2]]
        jobs += [(seed, name, c) for name in args.datasets for c in configurations[2:]]

    def expected_wall(name: str, batch: int) -> float:
        kind = [r for r in report["rows"] if "error" not in r and bool(r["batch_size"]) == bool(batch)]
        same = [r for r in kind if r["dataset"] == name and r["batch_size"] == batch]
        if same:
            return 1.1 * max(r["wall_seconds"] for r in same)
        done = kind or [r for r in report["rows"] if "error" not in r]
        return 1.2 * max((r["wall_seconds"] for r in done), default=0.0)

    pending: dict[futures.Future, dict] = {}
    for number, (seed, name, (batch, fanout)) in enumerate(jobs):
        what = f"{name} {label(batch, fanout)} seed {seed}"
        left = deadline - time.perf_counter()
        expected = expected_wall(name, batch)
        if expected > left - (args.judge_reserve if pool else 0.0):
            report["not_started"].append(f"{what} (expected {expected:.0f} s, {left:.0f} s left)")
            continue
        g = graph(name)
        config = build_config(name)
        arguments = [
            sys.executable,
            "-m",
            "gca",
            "train",
            "--dataset",
            name,
            "--data-dir",
            args.data_dir,
            "--device",
            args.device,
            "--eval-protocol",
            "authors",
            "--splits",
            str(args.splits),
            "--seed",
            str(seed),
            "--quiet",
        ]
        if batch:
            arguments += ["--set", f"batch_size={batch}", "--set", f"fanout={fanout}"]
        if args.epochs is not None:
            epochs = mini_batch_epochs(args.epochs, g["nodes"], batch)[0] if batch else args.epochs
            arguments += ["--epochs", str(epochs)]
        folder = work / f"run-{number}"
        arguments += ["--out", str(folder)]
        folder.mkdir(parents=True, exist_ok=True)
        status, wall, rss = run_until(arguments, work / f"run-{number}.log", env, deadline)
        row = {
            "dataset": name,
            "training": label(batch, fanout),
            "batch_size": batch,
            "fanout": fanout or None,
            "seed": seed,
            "full_graph_epochs": args.epochs or config.epochs,
        }
        if status != 0:
            tail = (work / f"run-{number}.log").read_text(errors="replace").strip().splitlines()[-3:]
            row["error"] = "stopped at the deadline" if status is None else f"failed ({status}): {' / '.join(tail)}"
            report["rows"].append(row)
            atomic_write_json(report_path, report)
            print(row_text(row), flush=True)
            continue
        record = json.loads((folder / "results.json").read_text())
        steps = record.get("mini_batch_schedule", {}).get("updates_per_epoch") or (
            math.ceil(g["nodes"] / batch) if batch else 1
        )
        row.update(
            epochs=record["epochs"],
            updates_per_epoch=steps,
            updates=record["epochs"] * steps,
            train_seconds=record["train_seconds"],
            embed_seconds=record["embed_seconds"],
            wall_seconds=round(wall, 2),
            peak_rss_mb=round(rss, 1),
            gpu_peak_mb=record.get("gpu_peak_mb"),
            objective=record.get("objective"),
            final_loss=record.get("final_loss"),
            authors={k: record["accuracy"][k] for k in ("mean", "std", "runs")},
            eval_seconds=record.get("eval_seconds"),
            mini_batch_schedule=record.get("mini_batch_schedule"),
        )
        if pool:
            embeddings = str(folder / "embeddings.npy")
            pending[pool.submit(_judge_sklearn, embeddings, g["labels"], sklearn_splits(name, seed))] = row
        report["rows"].append(row)
        atomic_write_json(report_path, report)
        print(row_text(row), flush=True)

    if pending:
        left = max(1.0, deadline - time.perf_counter()) if args.deadline < float("inf") else None
        done, not_done = futures.wait(pending, timeout=left)
        for future in done:
            try:
                pending[future]["sklearn"] = future.result()
            except Exception as exc:  # noqa: BLE001 — a judge's failure is reported beside the others' results
                pending[future]["sklearn_status"] = f"failed: {type(exc).__name__}"
        for future in not_done:
            pending[future]["sklearn_status"] = "unfinished at the deadline"
            future.cancel()
    if pool:
        for process in list(getattr(pool, "_processes", {}).values()):  # unfinished judges end with this script
            process.terminate()
        pool.shutdown(wait=False, cancel_futures=True)
    atomic_write_json(report_path, report)
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)

    print(
        f"\nAll rows (authors' protocol: {args.splits} splits in gca train; scikit-learn's: {args.sklearn_splits} "
        f"splits on the saved embeddings, the same seed's splits; epochs × updates per epoch; peak GPU MB: PyTorch's "
        f"peak allocated; peak RSS: the training process's):"
    )
    print(HEADER)
    for row in report["rows"]:
        print(row_text(row))
    if report["not_started"]:
        print(f"not started for the deadline: {len(report['not_started'])}: " + "; ".join(report["not_started"]))
    print(f"done in {time.perf_counter() - start:.0f} s; rows in {report_path}", flush=True)


if __name__ == "__main__":
    main()
