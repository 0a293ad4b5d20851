"""Mini-batch GCA at the sizes of ogbn-arxiv and ogbn-products: seconds per epoch and per step, peak memory, and
the seconds to embed every node — what ``gca train`` itself spends, each run in its own process.

The graphs are synthetic planted-class graphs of OGB's sizes (``benchmarks/synthetic.py``; written to ``--dir``
once and reused): arxiv size 169,343 nodes, 1,166,243 edges, 128 dense features; products size 2,449,029 nodes,
61,859,140 edges, 100 dense features. Each run is

    gca train --dataset FILE --epochs 1 --no-eval --set hidden=128 --set batch_size=1024 --set fanout=10,10
              [--set steps_per_epoch=50]      # products size (--products-steps)

and its peak RSS is the child process's own (``os.wait4``). ``--exact`` adds one full-graph epoch at arxiv size
(the exact O(N²·d) objective, fp32) for comparison — several minutes on two cores, seconds on a GPU, where
``--exact-bf16`` adds the same epoch with ``loss_backend=attention, precision=bf16``. ``--device`` is passed to
``gca train`` (its default, auto, takes CUDA where PyTorch sees it); on CUDA the table adds PyTorch's peak
allocated GPU memory (``gpu_peak_mb`` of results.json).

    python benchmarks/minibatch.py [--dir /tmp/gca-bench] [--skip-arxiv] [--skip-products] [--exact] [--exact-bf16]
                                   [--exact-epochs E] [--products-steps 50] [--device D] [--cached]

Runs pass ``--no-cache`` (every run reads and cleans its input) unless ``--cached`` runs each graph twice through
the prepared graph on disk (``gca.run.store``, in ``DIR/cache``): the first run writes it, the second opens it.

The table gives, per run, the training steps per second (steps ÷ training seconds, the first step's warm-up
included) and the seconds to embed every node after training (inference, ``embed_seconds`` of results.json).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
GCA = (
    [str(Path(sys.executable).with_name("gca"))]
    if Path(sys.executable).with_name("gca").exists()
    else [sys.executable, "-m", "gca"]
)


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


def ensure_graph(size: str, folder: Path) -> Path:
    path = folder / f"{size}_size.npz"
    if not path.exists():
        subprocess.run([sys.executable, str(HERE / "synthetic.py"), size, str(path)], check=True)
    return path


class MemorySampler(threading.Thread):
    """Peaks of a running process's anonymous and file-backed resident memory (``RssAnon`` and ``RssFile`` of
    /proc/PID/status, in MiB), read every ``period`` seconds until it ends: what the kernel must keep (anonymous)
    and what it may drop and read again (pages of mapped files)."""

    def __init__(self, pid: int, period: float = 0.2) -> None:
        super().__init__(daemon=True)
        self.pid, self.period = pid, period
        self.peak = {"RssAnon": 0.0, "RssFile": 0.0}

    def run(self) -> None:
        status = Path(f"/proc/{self.pid}/status")
        while True:
            try:
                lines = status.read_text().splitlines()
            except OSError:
                return
            for line in lines:
                key, _, value = line.partition(":")
                if key in self.peak:
                    self.peak[key] = max(self.peak[key], int(value.split()[0]) / 1024)
            if any(line.startswith("State:") and ("Z" in line or "X" in line) for line in lines):
                return
            time.sleep(self.period)


def measured_run(arguments: list[str], samples: dict | None = None) -> tuple[float, float]:
    """(wall seconds, peak RSS in MiB) of one command, the peak being that process's own; ``samples`` gets the
    peaks of its anonymous and file-backed resident memory (:class:`MemorySampler`, Linux)."""
    start = time.perf_counter()
    process = subprocess.Popen(arguments, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    sampler = MemorySampler(process.pid)
    if Path("/proc").is_dir():
        sampler.start()
    err = process.stderr.read()  # read while it runs: a full pipe would block the child
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise SystemExit(f"failed ({process.returncode}): {' '.join(arguments)}\n{err[-2000:]}")
    if samples is not None:
        samples.update(sampler.peak)
    return wall, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=Path("/tmp/gca-bench"))
    parser.add_argument("--skip-products", action="store_true")
    parser.add_argument("--skip-arxiv", action="store_true", help="no mini-batch run at arxiv size")
    parser.add_argument("--tenth", action="store_true", help="also the 10⁷-node graph (a tenth of papers100M)")
    parser.add_argument("--tenth-steps", type=int, default=200, help="its mini-batch steps")
    parser.add_argument("--tenth-splits", type=int, default=3, help="its evaluation splits of the planted classes")
    parser.add_argument("--exact", action="store_true", help="also one exact full-graph epoch at arxiv size")
    parser.add_argument("--exact-bf16", action="store_true", help="and the same with the bf16 attention objective")
    parser.add_argument("--exact-epochs", type=int, default=1, help="epochs of the exact runs (the first warms up)")
    parser.add_argument("--products-steps", type=int, default=50, help="mini-batch steps at products size")
    parser.add_argument("--device", default="auto", help="passed to gca train")
    parser.add_argument("--predict", choices=list(SIZES), help="only print the memory model's prediction for a size")
    parser.add_argument(
        "--feature-bytes",
        type=int,
        choices=(4, 2),
        help="features stored as float32 (4) or float16 (2); default: the size's",
    )
    parser.add_argument("--machine-gb", type=float, default=64.0, help="with --predict: the machine's memory")
    parser.add_argument(
        "--prepared",
        choices=("opened", "written"),
        default="",
        help="with --predict: a run that opens the prepared graph on disk (its edge arrays mapped), "
        "or writes it and goes on from it",
    )
    parser.add_argument(
        "--cached",
        action="store_true",
        help="run each graph twice through the prepared graph on "
        "disk (in DIR/cache): the first run writes it, the second opens it",
    )
    args = parser.parse_args()
    if args.predict:
        nodes, edges, features = SIZES[args.predict]
        feature_bytes = args.feature_bytes or FEATURE_BYTES.get(args.predict, 4)
        model = memory_model(nodes, edges, features, feature_bytes=feature_bytes, prepared=args.prepared)
        kind = {4: "float32", 2: "float16"}[feature_bytes]
        route = {"opened": "opening the prepared graph", "written": "writing the prepared graph"}.get(
            args.prepared, "from the input file"
        )
        print(
            f"{args.predict} size, {route}: {nodes:,} nodes, {edges:,} directed edges, {features} {kind} features "
            "(GB = 10⁹ bytes; anonymous memory must stay resident, file-backed pages the kernel may drop)"
        )
        print("| phase | anonymous | per edge | per node | file-backed | total |\n|---|---|---|---|---|---|")
        for phase, m in model.items():
            print(
                f"| {phase} | {m['anonymous'] / 1e9:,.1f} GB | {m['per_edge']:g} B | {m['per_node']} B | "
                f"{m['file'] / 1e9:,.1f} GB | {m['total'] / 1e9:,.1f} GB |"
            )
        peak = max(model.values(), key=lambda m: m["anonymous"])["anonymous"]
        verdict = "fits" if peak < args.machine_gb * 1e9 else "does not fit"
        print(f"peak anonymous memory {peak / 1e9:,.1f} GB: {verdict} a {args.machine_gb:g} GB machine")
        return
    args.dir.mkdir(parents=True, exist_ok=True)
    runs = []
    if not args.skip_arxiv:
        runs.append(
            ("arxiv", "mini-batch B = 1024, fan-out 10,10", ["--set", "batch_size=1024", "--set", "fanout=10,10"])
        )
    if not args.skip_products:
        runs.append(
            (
                "products",
                f"mini-batch B = 1024, fan-out 10,10, {args.products_steps} steps",
                [
                    "--set",
                    "batch_size=1024",
                    "--set",
                    "fanout=10,10",
                    "--set",
                    f"steps_per_epoch={args.products_steps}",
                ],
            )
        )
    if args.tenth:
        runs.append(
            (
                "tenth",
                f"mini-batch B = 1024, fan-out 10,10, {args.tenth_steps} steps",
                ["--set", "batch_size=1024", "--set", "fanout=10,10", "--set", f"steps_per_epoch={args.tenth_steps}"],
            )
        )
    if args.exact:
        runs.append(("arxiv", "exact (full graph)", ["--set", "precision=fp32"]))
    if args.exact_bf16:
        runs.append(
            (
                "arxiv",
                "exact (full graph), attention bf16",
                ["--set", "loss_backend=attention", "--set", "precision=bf16"],
            )
        )
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs; torch threads: default")
    print(
        "| graph | training | steps × epochs | s/epoch | s/step | steps/s | start, load, prepare, write s "
        "| embed all s (inference) | eval s | wall s | peak RSS | peak anonymous | peak file-backed "
        "| peak GPU memory | objective |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    memory: list[str] = []
    accuracy: list[str] = []
    if args.cached:  # each run twice: writing the prepared graph (from an empty cache), then opening it
        runs = [
            (size, f"{label}, {how} prepared graph", [*settings, "--cache"])
            for size, label, settings in runs
            for how in ("writes", "opens")
        ]
        cache = args.dir / "cache"
        shutil.rmtree(cache, ignore_errors=True)
        os.environ["GCA_CACHE_DIR"] = str(cache)
    else:
        runs = [(size, label, [*settings, "--no-cache"]) for size, label, settings in runs]
    for number, (size, label, settings) in enumerate(runs):
        graph = ensure_graph(size, args.dir)
        out = args.dir / f"run-{number}-{size}"
        epochs = 1 if "batch_size=1024" in settings else args.exact_epochs
        judged = ["--splits", str(args.tenth_splits)] if size == "tenth" else ["--no-eval"]
        samples: dict = {}
        wall, peak = measured_run(
            [
                *GCA,
                "train",
                "--dataset",
                str(graph),
                "--epochs",
                str(epochs),
                *judged,
                "--quiet",
                "--device",
                args.device,
                "--set",
                "hidden=128",
                *settings,
                "--out",
                str(out),
            ],
            samples,
        )
        record = json.loads((out / "results.json").read_text())
        batch = record["config"]["batch_size"]
        nodes, edges, features = SIZES[size]
        steps = record["config"]["steps_per_epoch"] or (-(-nodes // batch) if batch else 1)
        train, embed, judge = record["train_seconds"], record["embed_seconds"], record.get("eval_seconds", 0.0)
        print(
            f"| {size} size | {label} | {steps} × {epochs} | {train / epochs:.1f} | {train / steps / epochs:.3f} | "
            f"{steps * epochs / max(train, 1e-9):.1f} | {wall - train - embed - judge:.1f} | {embed:.1f} | "
            f"{judge:.1f} | {wall:.1f} | {peak:,.0f} MiB | {samples.get('RssAnon', 0):,.0f} MiB | "
            f"{samples.get('RssFile', 0):,.0f} MiB | {record.get('gpu_peak_mb', '—')} | "
            f"{record.get('objective', '')} |",
            flush=True,
        )
        if args.cached:
            print(
                f"    prepare_seconds {record.get('prepare_seconds', 0):.1f}, prepared graph "
                f"{record.get('prepared_graph')}",
                flush=True,
            )
        if record.get("accuracy"):
            accuracy.append(
                f"{size} size: planted classes {record['accuracy']['mean']:.2f} ± "
                f"{record['accuracy']['std']:.2f} % over {len(record['accuracy']['runs'])} splits"
            )
        if batch:
            stored = record.get("prepared_graph")
            route = "" if not stored else "opened" if stored["opened"] else "written"
            model = memory_model(nodes, edges, features, feature_bytes=FEATURE_BYTES.get(size, 4), prepared=route)
            phase = max(model, key=lambda k: model[k]["total"])
            m = model[phase]
            anon = max(v["anonymous"] for v in model.values())
            memory.append(
                f"| {size} size | {peak * 2**20 / 1e9:.2f} GB | {m['total'] / 1e9:.2f} GB ({phase}) | "
                f"{samples.get('RssAnon', 0) * 2**20 / 1e9:.2f} GB | {anon / 1e9:.2f} GB | "
                f"{samples.get('RssFile', 0) * 2**20 / 1e9:.2f} GB | "
                f"{max(v['file'] for v in model.values()) / 1e9:.2f} GB |"
            )
    for line in accuracy:
        print(line)
    if memory:
        print(
            "\nPeak resident memory against the memory model (docs/large-graphs.md; GB = 10⁹ bytes; anonymous and "
            "file-backed peaks sampled from /proc every 0.2 s, each at its own moment):"
        )
        print(
            "| graph | peak RSS | predicted peak | peak anonymous | predicted | peak file-backed | predicted |\n"
            "|---|---|---|---|---|---|---|"
        )
        print("\n".join(memory))


if __name__ == "__main__":
    main()
