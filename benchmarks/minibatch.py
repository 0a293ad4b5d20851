"""Exact against mini-batch training: accuracy and cost, on the paper's graphs and at OGB's sizes.

Every run is one ``gca train`` in its own process (:func:`harness.run`: wall time, the process's own peak RSS, its
anonymous and file-backed peaks sampled from /proc every 0.2 s), read back from its ``results.json``.

**At OGB's sizes** (the default): synthetic planted-class graphs (``benchmarks/synthetic.py``, written to ``--dir``
once) of ogbn-arxiv's size (169,343 nodes, 1,166,243 edges, 128 dense features), ogbn-products's (2,449,029 nodes,
61,859,140 edges, 100 features) and, with ``--tenth``, 10⁷ nodes; each run

    gca train --dataset FILE --epochs 1 --no-eval --set hidden=128 --set batch_size=1024 --set fanout=10,10
              [--set steps_per_epoch=50]    # products size (--products-steps); the tenth: 200 steps, judged

``--exact`` adds ``--exact-epochs`` exact full-graph epochs at arxiv size (blocked fp32), ``--exact-bf16`` the same
with ``loss_backend=attention, precision=bf16``. Runs pass ``--no-cache`` unless ``--cached`` runs each graph twice
through the prepared graph on disk (``DIR/cache``): the first run writes it, the second opens it. Printed per run:
steps × epochs, seconds per epoch and per step, steps per second (the first step's warm-up included), the seconds
before training, to embed every node and to judge, wall seconds, the memory peaks (PyTorch's peak allocated GPU
memory on CUDA), the objective; then the peaks against :func:`memory_model`, which ``--predict SIZE`` prints alone.

    python benchmarks/minibatch.py [--dir /tmp/gca-bench] [--skip-arxiv] [--skip-products] [--tenth] [--exact]
        [--exact-bf16] [--exact-epochs E] [--products-steps 50] [--device D] [--cached]
    python benchmarks/minibatch.py --predict SIZE [--feature-bytes 2] [--machine-gb 64] [--prepared opened|written]

**On the paper's graphs** (``--paper``): each dataset (Amazon-Photo, Amazon-Computers and Coauthor-CS by default; any
name or graph file) with its shipped setting, trained exactly (batch size 0, ``gca train --exact``) and in
mini-batches of B anchors with a fan-out, seed 0, 1, …; judged under the authors' protocol by ``gca train`` and
under scikit-learn's on the saved embeddings, on the same splits, in ``--judge-workers`` one-thread processes
meanwhile. A mini-batch run keeps the full-graph setting's number of updates (gca's default schedule; ``--epochs
E``: a full-graph setting of E epochs, the mini-batch runs as many updates). Order: the first two batch sizes on
every dataset, then the other batch sizes, then the other fan-outs (at the first mini-batch size), then the next
seed; a run expected to end within ``--judge-reserve`` seconds of ``--deadline`` is not started, one still going
then is stopped. Rows print as runs finish (accuracy under both protocols, seconds, ms per update, peak GPU memory
and RSS), the full table at the end; every row goes to ``OUT/paper_minibatch.json``.

    python benchmarks/minibatch.py --paper --data-dir DATA --out OUT [--device cuda] [--deadline 480]
        [--datasets Amazon-Photo ...] [--batch-sizes 0 1024 2048 512] [--fanouts 10,10 ...] [--seeds 1]
        [--epochs E] [--splits 20] [--sklearn-splits 20] [--judge-workers N] [--judge-reserve 25] [--work DIR]

Accuracy at equal updates on Cora and on a planted graph (``python benchmarks/synthetic.py custom PLANTED.npz
--nodes 20000 --edges 100000 --features 64 --classes 10 --signal 0.15``): ``--paper --datasets Cora --epochs 500
--batch-sizes 0 256 512 1024``, then ``--datasets PLANTED.npz --epochs 30``. A dry run on a CPU: ``--paper
--device cpu --datasets Amazon-Photo --batch-sizes 0 1024 --epochs 2 --splits 2 --sklearn-splits 2``.
"""

from __future__ import annotations

import argparse
import concurrent.futures as futures
import json
import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness import GCA, HERE, machine, run, table

#: (nodes, directed edge entries — both directions of every undirected edge —, dense features) of each size
SIZES = {
    "arxiv": (169_343, 2 * 1_166_243, 128),
    "products": (2_449_029, 2 * 61_859_140, 100),
    "papers100M": (111_059_956, 2 * 1_615_685_872, 128),
    "tenth": (10_000_000, 2 * 150_000_000, 128),
}
#: Bytes a feature value takes in each size's file (float16 for the generated tenth and, as predicted, papers100M)
FEATURE_BYTES = {"tenth": 2, "papers100M": 2}
#: Resident bytes of the interpreter, PyTorch, SciPy and scikit-learn once imported (measured: 0.33 GB)
BASE_BYTES = 0.33e9
#: Block temporaries of the loader and of preparing (blocks of 2²² entries: keys, orders, positions)
BLOCK_BYTES = 0.25e9
PHASES = ("load", "prepare", "training", "inference")
MINI = ["--set", "batch_size=1024", "--set", "fanout=10,10"]


def memory_model(
    nodes: int, edges: int, features: int, hidden: int = 128, feature_bytes: int = 4, prepared: str = ""
) -> dict[str, dict[str, float]]:
    """Per phase of a mini-batch ``gca train`` on an undirected graph read from an uncompressed .npz file (its
    members mapped) with dense features stored in ``feature_bytes`` bytes a value (4: float32, 2: float16;
    row-normalised, the default) — ``edges`` E counts both directions, U = E/2 undirected units — the predicted
    resident bytes: ``anonymous`` (what the process must keep), ``file`` (pages of mapped files, which the kernel
    may drop and read again), their ``total``, and the anonymous bytes per directed edge and per node
    (docs/large-graphs.md, "Memory"):

    * load — the int32 edge list (8 B/edge), each listed pair's larger end and direction (5 B per unit = 2.5 B/edge),
      four N-long int64 arrays and the labels (40 B/node); mapped: the features, the file's column array (4 B/unit)
      and row pointers (8 B/node);
    * prepare — the edge list and each view's drop probability per unit (2 × 4 B per unit = 4 B/edge); labels,
      centrality and row norms (8 + 8 + 4 B/node) and, while symmetry is checked, four int64 counts per node
      (32 B/node); mapped: the features, read whole once;
    * training — and the sampler's int32 unit ids (4 B/edge), numbered with the same four counts per node; its row
      pointers, id map and row counts (8 + 8 + 8 B/node); mapped: the features;
    * inference — the edge list and the probabilities (12 B/edge); labels, centrality, norms, the operator's row
      pointers, D̂^{-1/2} and counts (8 + 8 + 4 + 8 + 4 + 8 B/node); mapped: the larger of the features (read
      once into X̂ or X W, then released) and the matrix a layer reads — X̂ in float32 for a first layer that
      aggregates first (4F B/node), else the previous layer's output (4·hidden B/node); every block of rows
      written leaves the resident set.

    ``prepared="opened"``: a run that opens the prepared graph on disk (``gca.run.store``). Its edge list
    (8 B/edge), the views' probabilities (4 B/edge) and the sampler's unit ids (4 B/edge) are pages of mapped
    files, counted as file-backed in the phases that read them (prepare: none; training: all three; inference: all
    three, still referenced by the prepared graph, their pages touched in training); anonymous memory keeps the
    per-node arrays: at load the labels (8 B/node), at prepare the row norms (4 B/node) and the arrays above of
    training and inference, less the symmetry check's counts (not run again). ``prepared="written"``: a run that
    writes it — load and prepare as from the input, then training and inference as when opened (it goes on from
    the files it wrote).

    Each phase adds the libraries (0.33 GB) and, to the anonymous bytes, the block temporaries (0.25 GB).
    """
    units = edges / 2
    stored = feature_bytes * features
    per_edge = {"load": 8 + 2.5, "prepare": 8 + 4, "training": 8 + 4 + 4, "inference": 8 + 4}
    per_node = {"load": 40, "prepare": 20 + 32, "training": 20 + 32 + 24, "inference": 40}
    file_bytes = {
        "load": stored * nodes + 4 * units + 8 * nodes,
        "prepare": stored * nodes,
        "training": stored * nodes,
        "inference": max(stored, 4 * features, 4 * hidden) * nodes,
    }
    if prepared in ("opened", "written"):
        mapped = {"load": 0, "prepare": 0, "training": 8 + 4 + 4, "inference": 8 + 4 + 4}
        later = ("load", "prepare", "training", "inference") if prepared == "opened" else ("training", "inference")
        per_edge = {phase: 0 if phase in later else per_edge[phase] for phase in PHASES}
        per_node = {
            phase: {"load": 8, "prepare": 20, "training": 20 + 24, "inference": 40}[phase]
            if phase in later
            else per_node[phase]
            for phase in PHASES
        }
        file_bytes = {
            phase: file_bytes[phase] - (4 * units + 8 * nodes if phase == "load" else 0) + mapped[phase] * edges
            if phase in later
            else file_bytes[phase]
            for phase in PHASES
        }
    model = {}
    for phase in PHASES:
        anonymous = per_edge[phase] * edges + per_node[phase] * nodes + BASE_BYTES + BLOCK_BYTES
        model[phase] = {
            "anonymous": anonymous,
            "file": file_bytes[phase],
            "total": anonymous + file_bytes[phase],
            "per_edge": per_edge[phase],
            "per_node": per_node[phase],
        }
    return model


def predict(args: argparse.Namespace) -> None:
    nodes, edges, features = SIZES[args.predict]
    feature_bytes = args.feature_bytes or FEATURE_BYTES.get(args.predict, 4)
    model = memory_model(nodes, edges, features, feature_bytes=feature_bytes, prepared=args.prepared)
    route = {"opened": "opening the prepared graph", "written": "writing the prepared graph"}
    print(
        f"{args.predict} size, {route.get(args.prepared, 'from the input file')}: {nodes:,} nodes, {edges:,} directed "
        f"edges, {features} {'float16' if feature_bytes == 2 else 'float32'} features (GB = 10⁹ bytes; anonymous "
        "memory must stay resident, file-backed pages the kernel may drop)"
    )
    row = table("phase | anonymous | per edge | per node | file-backed | total")
    for phase, m in model.items():
        row(
            f"{phase} | {m['anonymous'] / 1e9:,.1f} GB | {m['per_edge']:g} B | {m['per_node']} B | "
            f"{m['file'] / 1e9:,.1f} GB | {m['total'] / 1e9:,.1f} GB"
        )
    peak = max(m["anonymous"] for m in model.values())
    verdict = "fits" if peak < args.machine_gb * 1e9 else "does not fit"
    print(f"peak anonymous memory {peak / 1e9:,.1f} GB: {verdict} a {args.machine_gb:g} GB machine")


def ogb(args: argparse.Namespace) -> None:
    runs = [] if args.skip_arxiv else [("arxiv", "mini-batch B = 1024, fan-out 10,10", MINI, 1)]
    wanted = {"products": (args.products_steps, not args.skip_products), "tenth": (args.tenth_steps, args.tenth)}
    for size, (steps, chosen) in wanted.items():
        if chosen:
            label = f"mini-batch B = 1024, fan-out 10,10, {steps} steps"
            runs.append((size, label, [*MINI, "--set", f"steps_per_epoch={steps}"], 1))
    if args.exact:
        runs.append(("arxiv", "exact (full graph)", ["--exact", "--set", "precision=fp32"], args.exact_epochs))
    if args.exact_bf16:
        bf16 = ["--exact", "--set", "loss_backend=attention", "--set", "precision=bf16"]
        runs.append(("arxiv", "exact (full graph), attention bf16", bf16, args.exact_epochs))
    env, how = dict(os.environ), [("", "--no-cache")]
    if args.cached:  # each run twice: writing the prepared graph (from an empty cache), then opening it
        how = [(", writes prepared graph", "--cache"), (", opens prepared graph", "--cache")]
        shutil.rmtree(args.dir / "cache", ignore_errors=True)
        env["GCA_CACHE_DIR"] = str(args.dir / "cache")
    print(machine(args.device))
    row = table(
        "graph | training | steps × epochs | s/epoch | s/step | steps/s | start, load, prepare, write s | embed all s "
        "(inference) | eval s | wall s | peak RSS | peak anonymous | peak file-backed | peak GPU memory | objective"
    )
    memory, accuracy = [], []
    for number, ((size, label, options, epochs), (said, cache)) in enumerate((r, h) for r in runs for h in how):
        graph, out = args.dir / f"{size}_size.npz", args.dir / f"run-{number}-{size}"
        if not graph.exists():
            subprocess.run([sys.executable, str(HERE / "synthetic.py"), size, str(graph)], check=True)
        judged = ["--splits", str(args.tenth_splits)] if size == "tenth" else ["--no-eval"]
        command = [*GCA, "train", "--dataset", str(graph), "--epochs", str(epochs), *judged, "--quiet", cache]
        result = run([*command, "--device", args.device, "--set", "hidden=128", *options, "--out", str(out)], env)
        if result["code"] != 0:
            raise SystemExit(f"failed ({result['code']}): {' '.join(command)}\n{result['output'][-2000:]}")
        record = json.loads((out / "results.json").read_text())
        nodes, edges, features = SIZES[size]
        batch = record["config"]["batch_size"]
        steps = record["config"]["steps_per_epoch"] or (-(-nodes // batch) if batch else 1)
        train, embed, judge = record["train_seconds"], record["embed_seconds"], record.get("eval_seconds", 0.0)
        wall, peak, anon, file = result["wall"], result["peak_rss_mb"], result["anon_mb"], result["file_mb"]
        row(
            f"{size} size | {label}{said} | {steps} × {epochs} | {train / epochs:.1f} | {train / steps / epochs:.3f} | "
            f"{steps * epochs / max(train, 1e-9):.1f} | {wall - train - embed - judge:.1f} | {embed:.1f} | "
            f"{judge:.1f} | {wall:.1f} | {peak:,.0f} MiB | {anon:,.0f} MiB | {file:,.0f} MiB | "
            f"{record.get('gpu_peak_mb', '—')} | {record.get('objective', '')}"
        )
        if args.cached:
            print(f"    prepare_seconds {record.get('prepare_seconds', 0):.1f}, {record.get('prepared_graph')}")
        if record.get("accuracy"):
            a = record["accuracy"]
            accuracy.append(f"{size} size: planted classes {a['mean']:.2f} ± {a['std']:.2f} % over {len(a['runs'])}")
        if batch:
            stored = record.get("prepared_graph")
            route = "" if not stored else "opened" if stored["opened"] else "written"
            model = memory_model(nodes, edges, features, feature_bytes=FEATURE_BYTES.get(size, 4), prepared=route)
            phase = max(model, key=lambda k: model[k]["total"])
            most = {key: max(m[key] for m in model.values()) / 1e9 for key in ("anonymous", "file")}
            memory.append(
                f"{size} size | {peak * 2**20 / 1e9:.2f} GB | {model[phase]['total'] / 1e9:.2f} GB ({phase}) | "
                f"{anon * 2**20 / 1e9:.2f} GB | {most['anonymous']:.2f} GB | {file * 2**20 / 1e9:.2f} GB | "
                f"{most['file']:.2f} GB"
            )
    print("\n".join(accuracy))
    if memory:
        print(
            "\nPeak resident memory against the memory model (docs/large-graphs.md; GB = 10⁹ bytes; the anonymous "
            "and file-backed peaks sampled from /proc every 0.2 s, each at its own moment):"
        )
        table("graph | peak RSS | predicted peak | peak anonymous | predicted | peak file-backed | predicted", memory)


def _one_thread() -> None:
    """Judge processes: one thread each (set before NumPy and PyTorch are imported there)."""
    os.environ.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")


def _judge_sklearn(embeddings_path: str, labels, splits: list) -> dict:
    """In a worker process: gca's default protocol (scikit-learn) on one saved embedding."""
    import numpy as np

    from gca.evaluate.classification import linear_evaluation

    start = time.perf_counter()
    result = linear_evaluation(np.load(embeddings_path), labels, splits).to_dict()
    return {**{k: result[k] for k in ("mean", "std", "runs")}, "seconds": round(time.perf_counter() - start, 1)}


HEADER = (
    "dataset | training | seed | epochs × updates | accuracy (authors) | accuracy (sklearn) | train s | ms/update | "
    "embed s | wall s | peak GPU MB | peak RSS MB"
)


def paper_row(r: dict) -> str:
    def cell(result: dict | None, status: str = "—") -> str:
        return f"{result['mean']:.2f} ± {result['std']:.2f}" if result else status

    if "error" in r:
        return f"{r['dataset']} | {r['training']} | {r['seed']} | {r['error']}" + " |" * 8
    gpu = r.get("gpu_peak_mb")
    return (
        f"{r['dataset']} | {r['training']} | {r['seed']} | {r['epochs']} × {r['updates_per_epoch']} | "
        f"{cell(r.get('authors'))} | {cell(r.get('sklearn'), r.get('sklearn_status', 'pending'))} | "
        f"{r['train_seconds']:.1f} | {1000 * r['train_seconds'] / max(r['updates'], 1):.2f} | "
        f"{r['embed_seconds']:.2f} | {r['wall_seconds']:.1f} | {'—' if gpu is None else f'{gpu:,.0f}'} | "
        f"{r['peak_rss_mb']:,.0f}"
    )


def paper(args: argparse.Namespace) -> None:
    from gca.config import build_config, mini_batch_epochs
    from gca.datasets import load_dataset
    from gca.evaluate.splits import SplitSetting
    from gca.io import atomic_write_json

    start = time.perf_counter()
    deadline = start + args.deadline
    workers = args.judge_workers or (1 if args.device == "cpu" else max(1, min(8, (os.cpu_count() or 2) - 4)))
    spawn = multiprocessing.get_context("spawn")
    pool = (
        futures.ProcessPoolExecutor(workers, mp_context=spawn, initializer=_one_thread) if args.sklearn_splits else None
    )
    out, work = Path(args.out), args.work or Path(tempfile.mkdtemp(prefix="gca-paper-minibatch-"))
    out.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    report = {"machine": machine(args.device), "device": args.device, "rows": []}
    report.update(
        deadline_s=args.deadline if args.deadline < float("inf") else None,
        epochs_override=args.epochs,
        splits=args.splits,
        sklearn_splits=args.sklearn_splits,
        not_started=[],
    )
    report_path = out / "paper_minibatch.json"
    print(f"{report['machine']}; deadline {args.deadline:.0f} s, judges {workers if pool else 0}, runs in {work}")
    row = table(HEADER)
    graphs: dict[str, dict] = {}  # per dataset: nodes, labels, its own splits, the splits of each seed

    def graph(name: str) -> dict:
        if name not in graphs:  # loaded here before its first training, which then finds PyG's processed files
            loaded = load_dataset(name, data_dir=args.data_dir)
            own = (loaded.splits, loaded.public)
            graphs[name] = {"nodes": loaded.data.num_nodes, "y": loaded.data.y, "own": own, "splits": {}}
        return graphs[name]

    def sklearn_splits(name: str, seed: int) -> list:  # what gca train --seed S draws
        g = graphs[name]
        if seed not in g["splits"]:
            g["splits"][seed] = SplitSetting(count=args.sklearn_splits).draw(g["y"], seed, *g["own"], name)
        return g["splits"][seed]

    configurations = list(dict.fromkeys((b, args.fanouts[0] if b else "") for b in args.batch_sizes))
    mini = next((b for b in args.batch_sizes if b), None)
    configurations += [(mini, f) for f in args.fanouts[1:] if mini]
    jobs = []
    for seed in range(args.seeds):
        jobs += [(seed, name, c) for name in args.datasets for c in configurations[:2]]
        jobs += [(seed, name, c) for name in args.datasets for c in configurations[2:]]

    def expected_wall(name: str, batch: int) -> float:
        done = [r for r in report["rows"] if "error" not in r]
        kind = [r for r in done if bool(r["batch_size"]) == bool(batch)]
        same = [r["wall_seconds"] for r in kind if r["dataset"] == name and r["batch_size"] == batch]
        return 1.1 * max(same) if same else 1.2 * max((r["wall_seconds"] for r in kind or done), default=0.0)

    pending: dict[futures.Future, dict] = {}
    for number, (seed, name, (batch, fanout)) in enumerate(jobs):
        label = f"mini-batch B = {batch}, fan-out {fanout}" if batch else "exact (full graph)"
        left, expected = deadline - time.perf_counter(), expected_wall(name, batch)
        if expected > left - (args.judge_reserve if pool else 0.0):
            report["not_started"].append(f"{name} {label} seed {seed} (expected {expected:.0f} s, {left:.0f} s left)")
            continue
        g, folder = graph(name), work / f"run-{number}"
        command = [*GCA, "train", "--dataset", name, "--data-dir", args.data_dir, "--device", args.device, "--quiet"]
        command += [
            "--eval-protocol",
            "authors",
            "--splits",
            str(args.splits),
            "--seed",
            str(seed),
            "--out",
            str(folder),
        ]
        command += ["--set", f"batch_size={batch}", "--set", f"fanout={fanout}"] if batch else ["--exact"]
        if args.epochs is not None:
            command += ["--epochs", str(mini_batch_epochs(args.epochs, g["nodes"], batch)[0] if batch else args.epochs)]
        result = run(command, stop_at=deadline)
        r = {"dataset": name, "training": label, "batch_size": batch, "fanout": fanout or None, "seed": seed}
        r["full_graph_epochs"] = args.epochs or build_config(name).epochs
        if result["code"] != 0:
            tail = " / ".join(result["output"].strip().splitlines()[-3:])
            r["error"] = "stopped at the deadline" if result["code"] is None else f"failed ({result['code']}): {tail}"
        else:
            record = json.loads((folder / "results.json").read_text())
            schedule = record.get("mini_batch_schedule") or {}
            steps = schedule.get("updates_per_epoch") or (-(-g["nodes"] // batch) if batch else 1)
            kept = (
                "epochs",
                "train_seconds",
                "embed_seconds",
                "gpu_peak_mb",
                "objective",
                "final_loss",
                "eval_seconds",
            )
            r.update({key: record.get(key) for key in kept}, mini_batch_schedule=record.get("mini_batch_schedule"))
            r.update(updates_per_epoch=steps, updates=record["epochs"] * steps, wall_seconds=round(result["wall"], 2))
            r.update(peak_rss_mb=round(result["peak_rss_mb"], 1), authors=record["accuracy"])
            if pool:
                embeddings = str(folder / "embeddings.npy")
                pending[pool.submit(_judge_sklearn, embeddings, g["y"].numpy(), sklearn_splits(name, seed))] = r
        report["rows"].append(r)
        atomic_write_json(report_path, report)
        row(paper_row(r))

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
        "splits on the saved embeddings, the same seed's; peak GPU MB: PyTorch's peak allocated; peak RSS: the "
        "training process's):"
    )
    table(HEADER, [paper_row(r) for r in report["rows"]])
    if report["not_started"]:
        print(f"not started for the deadline: {len(report['not_started'])}: " + "; ".join(report["not_started"]))
    print(f"done in {time.perf_counter() - start:.0f} s; rows in {report_path}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="auto", help="passed to gca train (auto, cpu, cuda[:N])")
    parser.add_argument("--dir", type=Path, default=Path("/tmp/gca-bench"), help="OGB sizes: the graphs and runs")
    parser.add_argument("--skip-products", action="store_true")
    parser.add_argument("--skip-arxiv", action="store_true", help="no mini-batch run at arxiv size")
    parser.add_argument("--tenth", action="store_true", help="also the 10⁷-node graph (a tenth of papers100M)")
    parser.add_argument("--tenth-steps", type=int, default=200, help="its mini-batch steps")
    parser.add_argument("--tenth-splits", type=int, default=3, help="its evaluation splits of the planted classes")
    parser.add_argument("--exact", action="store_true", help="also exact full-graph epochs at arxiv size")
    parser.add_argument("--exact-bf16", action="store_true", help="and the same with the bf16 attention objective")
    parser.add_argument("--exact-epochs", type=int, default=1, help="epochs of the exact runs (the first warms up)")
    parser.add_argument("--products-steps", type=int, default=50, help="mini-batch steps at products size")
    parser.add_argument("--cached", action="store_true", help="each graph twice through the prepared graph on disk")
    parser.add_argument("--predict", choices=list(SIZES), help="only print the memory model's prediction for a size")
    parser.add_argument("--feature-bytes", type=int, choices=(4, 2), help="with --predict: float32 (4) or float16 (2)")
    parser.add_argument("--machine-gb", type=float, default=64.0, help="with --predict: the machine's memory")
    parser.add_argument("--prepared", choices=("opened", "written"), default="", help="with --predict: the route")
    parser.add_argument("--paper", action="store_true", help="instead: exact against mini-batch on the paper's graphs")
    parser.add_argument("--data-dir", help="--paper: the datasets' folder")
    parser.add_argument("--out", help="--paper: the folder of paper_minibatch.json")
    parser.add_argument("--deadline", type=float, default=float("inf"), help="--paper: seconds from the start")
    parser.add_argument("--datasets", nargs="+", default=["Amazon-Photo", "Amazon-Computers", "Coauthor-CS"])
    parser.add_argument("--batch-sizes", nargs="+", type=int, default=[0, 1024, 2048, 512], help="0: exact")
    parser.add_argument("--fanouts", nargs="+", default=["10,10"], help="the first with every batch size")
    parser.add_argument("--seeds", type=int, default=1, help="trainings per configuration at most (seeds 0, 1, …)")
    parser.add_argument("--epochs", type=int, help="a full-graph setting of this many epochs instead")
    parser.add_argument("--splits", type=int, default=20, help="evaluation splits of the authors' protocol")
    parser.add_argument("--sklearn-splits", type=int, default=20, help="of scikit-learn's protocol; 0: not judged")
    parser.add_argument("--judge-workers", type=int, help="default: cores − 4 (at most 8) on a GPU, 1 on the CPU")
    parser.add_argument("--judge-reserve", type=float, default=25.0, help="seconds kept for judging at the end")
    parser.add_argument("--work", type=Path, help="folder of the runs (default: a temporary one, removed)")
    args = parser.parse_args()
    if args.predict:
        return predict(args)
    if args.paper:
        if not (args.data_dir and args.out):
            parser.error("--paper needs --data-dir and --out")
        return paper(args)
    args.dir.mkdir(parents=True, exist_ok=True)
    ogb(args)


if __name__ == "__main__":
    main()
