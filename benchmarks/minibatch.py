"""Exact against mini-batch training: the cost at OGB's sizes, and the accuracy on the paper's graphs.

Default: one mini-batch epoch of ``gca train`` on planted graphs of ogbn-arxiv's and ogbn-products' sizes
(``benchmarks/synthetic.py``, kept in ``--dir``): a row per run (steps, seconds per phase, peak RSS, anonymous,
file-backed and GPU memory), then the peaks against :func:`memory_model`, which ``--predict SIZE`` prints alone.
``--paper``: the paper's graphs trained exactly and in mini-batches while ``--deadline`` allows: a row per run (both
protocols' accuracies, seconds, ms per update, peak memory), also in ``OUT/paper_minibatch.json``.

    python benchmarks/minibatch.py [--dir DIR] [--skip-arxiv] [--skip-products] [--tenth] [--exact] [--cached] ...
    python benchmarks/minibatch.py --predict SIZE [--feature-bytes 2] [--machine-gb 64] [--prepared opened|written]
    python benchmarks/minibatch.py --paper --data-dir DATA --out OUT [--deadline 480] [--datasets NAME|FILE.npz ...]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

from harness import DATA_DIR, GCA, checked, collect, judge_sklearn, judges, machine, planted, run, table
from synthetic import SIZES as PLANTED

#: (nodes, directed edge entries — both directions of every undirected edge —, dense features) of each size
SIZES = {name: (size["nodes"], 2 * size["edges"], size["features"]) for name, size in PLANTED.items()}
SIZES["papers100M"] = (111_059_956, 2 * 1_615_685_872, 128)
FEATURE_BYTES = {"tenth": 2, "papers100M": 2}  # float16 features; the others' are float32
BASE_BYTES = 0.33e9  # resident once the interpreter, PyTorch, SciPy and scikit-learn are imported
BLOCK_BYTES = 0.25e9  # block temporaries of the loader and of preparing
PHASES = ("load", "prepare", "training", "inference")
MINI = ["--set", "batch_size=1024", "--set", "fanout=10,10"]
#: Per phase from the input file: anonymous bytes per directed edge and per node, file-backed bytes per edge and per
#: node beside the features. load: int32 edge list 8, pairs' larger ends and directions 2.5; four int64 arrays and
#: labels 40; the file's columns 2, row pointers 8. prepare: edge list, two views' drop probabilities 4; labels,
#: centrality, norms 20, the symmetry check's counts 32. training: and the sampler's unit ids 4; its row pointers, id
#: map, counts 24. inference: edge list, probabilities; labels, centrality, norms, row pointers, D̂^{-1/2}, counts 40.
INPUT = {"load": (10.5, 40, 2, 8), "prepare": (12, 52, 0, 0), "training": (16, 76, 0, 0), "inference": (12, 40, 0, 0)}
#: The same opening the prepared graph (``gca.run.store``): edge list, probabilities and unit ids mapped (16 B/edge
#: in training and inference); anonymous: the labels, then the row norms, then the per-node arrays above.
OPENED = {"load": (0, 8, 0, 0), "prepare": (0, 20, 0, 0), "training": (0, 44, 16, 0), "inference": (0, 40, 16, 0)}


def memory_model(
    nodes: int, edges: int, features: int, hidden: int = 128, feature_bytes: int = 4, prepared: str = ""
) -> dict[str, dict[str, float]]:
    """Per phase of a mini-batch ``gca train`` of an undirected .npz graph: resident bytes (``anonymous``, ``file``,
    ``total``) and anonymous bytes ``per_edge`` and ``per_node``; ``prepared``: ``opened`` or ``written``."""
    later = {"opened": PHASES, "written": PHASES[2:]}.get(prepared, ())
    model = {}
    for phase in PHASES:
        per_edge, per_node, file_edge, file_node = (OPENED if phase in later else INPUT)[phase]
        width = feature_bytes * features
        width = max(width, 4 * features, 4 * hidden) if phase == "inference" else width
        anonymous = per_edge * edges + per_node * nodes + BASE_BYTES + BLOCK_BYTES
        file = file_edge * edges + (width + file_node) * nodes
        model[phase] = {"anonymous": anonymous, "file": file, "total": anonymous + file}
        model[phase].update(per_edge=per_edge, per_node=per_node)
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
    args.dir.mkdir(parents=True, exist_ok=True)
    runs = [] if args.skip_arxiv else [("arxiv", "mini-batch B = 1024, fan-out 10,10", MINI, 1)]
    wanted = (("products", args.products_steps, not args.skip_products), ("tenth", args.tenth_steps, args.tenth))
    for size, steps, chosen in wanted:
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
        graph, out = planted(size, args.dir), args.dir / f"run-{number}-{size}"
        judged = ["--splits", str(args.tenth_splits)] if size == "tenth" else ["--no-eval"]
        command = [*GCA, "train", "--dataset", str(graph), "--epochs", str(epochs), *judged, "--quiet", cache]
        result = checked([*command, "--device", args.device, "--set", "hidden=128", *options, "--out", str(out)], env)
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


KEPT = ("epochs", "train_seconds", "embed_seconds", "gpu_peak_mb", "objective", "final_loss", "eval_seconds")
HEADER = (
    "dataset | training | seed | epochs × updates | accuracy (authors) | accuracy (sklearn) | train s | ms/update | "
    "embed s | wall s | peak GPU MB | peak RSS MB"
)


def paper_row(r: dict) -> str:
    def cell(result: dict | None, status: str = "—") -> str:
        return f"{result['mean']:.2f} ± {result['std']:.2f}" if result else status

    if "error" in r:
        return f"{r['dataset']} | {r['training']} | {r['seed']} | {r['error']}" + " |" * 8
    gpu = "—" if r.get("gpu_peak_mb") is None else f"{r['gpu_peak_mb']:,.0f}"
    return (
        f"{r['dataset']} | {r['training']} | {r['seed']} | {r['epochs']} × {r['updates_per_epoch']} | "
        f"{cell(r.get('authors'))} | {cell(r.get('sklearn'), r.get('sklearn_status', 'pending'))} | "
        f"{r['train_seconds']:.1f} | {1000 * r['train_seconds'] / max(r['updates'], 1):.2f} | "
        f"{r['embed_seconds']:.2f} | {r['wall_seconds']:.1f} | {gpu} | {r['peak_rss_mb']:,.0f}"
    )


def paper(args: argparse.Namespace) -> None:
    from gca.config import mini_batch_epochs
    from gca.datasets import load_dataset
    from gca.evaluate.splits import SplitSetting
    from gca.io import atomic_write_json

    start = time.perf_counter()
    deadline, work = start + args.deadline, args.work or Path(tempfile.mkdtemp(prefix="gca-paper-minibatch-"))
    work.mkdir(parents=True, exist_ok=True)
    sklearn = args.splits if args.sklearn_splits is None else args.sklearn_splits
    workers = args.judge_workers or (1 if args.device == "cpu" else max(1, min(8, (os.cpu_count() or 2) - 4)))
    pool, pending, graphs = judges(workers) if sklearn else None, {}, {}
    report = {"machine": machine(args.device), "epochs_override": args.epochs, "splits": args.splits}
    report.update(deadline_s=None if args.deadline == float("inf") else args.deadline, rows=[], not_started=[])
    report_path = Path(args.out) / "paper_minibatch.json"
    report_path.parent.mkdir(parents=True, exist_ok=True)
    print(f"{report['machine']}; deadline {args.deadline:.0f} s, {workers if pool else 0} judges, runs in {work}")
    row = table(HEADER)
    configurations = list(dict.fromkeys((b, args.fanouts[0] if b else "") for b in args.batch_sizes))
    mini = next((b for b in args.batch_sizes if b), None)
    configurations += [(mini, f) for f in args.fanouts[1:] if mini]
    order = [(name, c) for part in (configurations[:2], configurations[2:]) for name in args.datasets for c in part]
    jobs = [(seed, name, c) for seed in range(args.seeds) for name, c in order]  # the first two on every dataset first

    def expected_wall(name: str, batch: int) -> float:
        done = [r for r in report["rows"] if "error" not in r]
        kind = [r for r in done if bool(r["batch_size"]) == bool(batch)]
        same = [r["wall_seconds"] for r in kind if r["dataset"] == name and r["batch_size"] == batch]
        return 1.1 * max(same) if same else 1.2 * max((r["wall_seconds"] for r in kind or done), default=0.0)

    for number, (seed, name, (batch, fanout)) in enumerate(jobs):
        label = f"mini-batch B = {batch}, fan-out {fanout}" if batch else "exact (full graph)"
        left, expected = deadline - time.perf_counter(), expected_wall(name, batch)
        if expected > left - (args.judge_reserve if pool else 0.0):
            report["not_started"].append(f"{name} {label} seed {seed} (expected {expected:.0f} s, {left:.0f} s left)")
            continue
        if name not in graphs:  # loaded here before its first training, which then finds PyG's processed files
            loaded = load_dataset(name, data_dir=args.data_dir)
            own = (loaded.splits, loaded.public, name)
            draw = [SplitSetting(count=sklearn).draw(loaded.data.y, s, *own) for s in range(args.seeds)] if pool else []
            graphs[name] = {"nodes": loaded.data.num_nodes, "labels": loaded.data.y.numpy(), "splits": draw}
        g, folder = graphs[name], work / f"run-{number}"
        command = [*GCA, "train", "--dataset", name, "--data-dir", args.data_dir, "--device", args.device, "--quiet"]
        options = ["--set", f"batch_size={batch}", "--set", f"fanout={fanout}"] if batch else ["--exact"]
        command += ["--eval-protocol", "authors", "--splits", str(args.splits), "--seed", str(seed), *options]
        if args.epochs is not None:
            command += ["--epochs", str(mini_batch_epochs(args.epochs, g["nodes"], batch)[0] if batch else args.epochs)]
        result = run([*command, "--out", str(folder)], stop_at=deadline)
        r = {"dataset": name, "training": label, "batch_size": batch, "fanout": fanout or None, "seed": seed}
        if result["code"] != 0:
            tail = " / ".join(result["output"].strip().splitlines()[-3:])
            r["error"] = "stopped at the deadline" if result["code"] is None else f"failed ({result['code']}): {tail}"
        else:
            record = json.loads((folder / "results.json").read_text())
            schedule = record.get("mini_batch_schedule") or {}
            steps = schedule.get("updates_per_epoch") or (-(-g["nodes"] // batch) if batch else 1)
            r.update({key: record.get(key) for key in KEPT}, mini_batch_schedule=schedule, authors=record["accuracy"])
            r.update(updates_per_epoch=steps, updates=record["epochs"] * steps, wall_seconds=round(result["wall"], 2))
            r["peak_rss_mb"] = round(result["peak_rss_mb"], 1)
            if pool:
                pending[pool.submit(judge_sklearn, str(folder / "embeddings.npy"), g["labels"], g["splits"][seed])] = r
            else:
                r["sklearn_status"] = "not judged"
        report["rows"].append(r)
        atomic_write_json(report_path, report)
        row(paper_row(r))

    if pool:
        collect(pool, pending, deadline)
    atomic_write_json(report_path, report)
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    splits = f"{args.splits} splits" + ("" if sklearn == args.splits else f", scikit-learn's {sklearn}")
    print(f"\nAll rows ({splits}, each seed's own; peak GPU MB: PyTorch's peak allocated):")
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
    parser.add_argument("--data-dir", default=DATA_DIR, help="--paper: the datasets' folder")
    parser.add_argument("--out", help="--paper: the folder of paper_minibatch.json")
    parser.add_argument("--work", type=Path, help="--paper: the runs' folder (default: a temporary one, removed)")
    parser.add_argument("--deadline", type=float, default=float("inf"), help="--paper: seconds from the start")
    parser.add_argument("--datasets", nargs="+", default=["Amazon-Photo", "Amazon-Computers", "Coauthor-CS"])
    parser.add_argument("--batch-sizes", nargs="+", type=int, default=[0, 1024, 2048, 512], help="0: exact")
    parser.add_argument("--fanouts", nargs="+", default=["10,10"], help="the first with every batch size")
    parser.add_argument("--seeds", type=int, default=1, help="trainings per configuration at most (seeds 0, 1, …)")
    parser.add_argument("--epochs", type=int, help="a full-graph setting of this many epochs instead")
    parser.add_argument("--splits", type=int, default=20, help="evaluation splits of both protocols")
    parser.add_argument("--sklearn-splits", type=int, help="scikit-learn's instead (0: not judged)")
    parser.add_argument("--judge-workers", type=int, help="default: cores − 4 (at most 8) on a GPU, 1 on the CPU")
    parser.add_argument("--judge-reserve", type=float, default=25.0, help="seconds kept for judging at the end")
    args = parser.parse_args()
    if args.paper and not args.out:
        parser.error("--paper needs --out")
    (predict if args.predict else paper if args.paper else ogb)(args)


if __name__ == "__main__":
    main()
