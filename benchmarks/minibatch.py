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
                                   [--exact-epochs E] [--products-steps 50] [--device D]

The table gives, per run, the training steps per second (steps ÷ training seconds, the first step's warm-up
included) and the seconds to embed every node after training (inference, ``embed_seconds`` of results.json).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
GCA = [str(Path(sys.executable).with_name("gca"))] if Path(sys.executable).with_name("gca").exists() else [
    sys.executable, "-m", "gca"]  # fmt: skip


#: (nodes, directed edge entries — both directions of every undirected edge —, dense features) of each size
SIZES = {"arxiv": (169_343, 2 * 1_166_243, 128), "products": (2_449_029, 2 * 61_859_140, 100),
         "papers100M": (111_059_956, 2 * 1_615_685_872, 128)}  # fmt: skip
#: Resident bytes of the interpreter, PyTorch, SciPy and scikit-learn once imported (measured: 0.33 GB)
BASE_BYTES = 0.33e9


def memory_model(nodes: int, edges: int, features: int, hidden: int = 128, feature_bytes: int = 4
                 ) -> dict[str, tuple[int, int, float]]:  # fmt: skip
    """Per phase, (bytes per directed edge, bytes per node, predicted resident bytes) of a mini-batch ``gca train``
    on an undirected graph with dense features stored in ``feature_bytes`` bytes a value (4: float32, 2: float16;
    row-normalised, the default); ``edges`` counts both directions of every edge (docs/large-graphs.md, "Memory").

    Per directed edge: the int32 edge list (8 B), each view's removal probability per undirected edge (2 × 4 B / 2)
    and, while training, the sampler's unit ids (4 B; 8 B from 2³¹ edges on). Per node: the raw features (bF B),
    their row norms (4), centrality (8), labels (8), and while training the sampler's row pointers and id map
    (8 + 8); inference adds its row pointers and D̂^{-1/2} (12) and two N × hidden float32 matrices — or, during the
    first layer, X̂ and one of them. Sampled batches add a few MB.
    """
    unit_bytes = 4 if edges < 2**31 else 8
    per_edge = {"training": 8 + 4 + unit_bytes, "inference": 8 + 4}
    stored = feature_bytes * features
    per_node = {"training": stored + 4 + 8 + 8 + 16,
                "inference": stored + 4 + 8 + 8 + 12 + max(4 * features + 4 * hidden, 8 * hidden)}  # fmt: skip
    return {phase: (per_edge[phase], per_node[phase], per_edge[phase] * edges + per_node[phase] * nodes + BASE_BYTES)
            for phase in per_edge}  # fmt: skip


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
    parser.add_argument("--exact", action="store_true", help="also one exact full-graph epoch at arxiv size")
    parser.add_argument("--exact-bf16", action="store_true", help="and the same with the bf16 attention objective")
    parser.add_argument("--exact-epochs", type=int, default=1, help="epochs of the exact runs (the first warms up)")
    parser.add_argument("--products-steps", type=int, default=50, help="mini-batch steps at products size")
    parser.add_argument("--device", default="auto", help="passed to gca train")
    parser.add_argument("--predict", choices=list(SIZES), help="only print the memory model's prediction for a size")
    parser.add_argument("--feature-bytes", type=int, choices=(4, 2), default=4,
                        help="with --predict: features stored as float32 (4) or float16 (2)")  # fmt: skip
    args = parser.parse_args()
    if args.predict:
        nodes, edges, features = SIZES[args.predict]
        model = memory_model(nodes, edges, features, feature_bytes=args.feature_bytes)
        kind = {4: "float32", 2: "float16"}[args.feature_bytes]
        for phase, (per_edge, per_node, total) in model.items():
            print(f"{args.predict} size ({nodes:,} nodes, {edges:,} directed edges, {features} {kind} features), "
                  f"{phase}: {per_edge} B per edge + {per_node:,} B per node + 0.33 GB = {total / 1e9:,.1f} GB")
        return
    args.dir.mkdir(parents=True, exist_ok=True)
    runs = []
    if not args.skip_arxiv:
        runs.append(("arxiv", "mini-batch B = 1024, fan-out 10,10",
                     ["--set", "batch_size=1024", "--set", "fanout=10,10"]))  # fmt: skip
    if not args.skip_products:
        runs.append(("products", f"mini-batch B = 1024, fan-out 10,10, {args.products_steps} steps",
                     ["--set", "batch_size=1024", "--set", "fanout=10,10", "--set",
                      f"steps_per_epoch={args.products_steps}"]))  # fmt: skip
    if args.exact:
        runs.append(("arxiv", "exact (full graph)", ["--set", "precision=fp32"]))
    if args.exact_bf16:
        runs.append(("arxiv", "exact (full graph), attention bf16",
                     ["--set", "loss_backend=attention", "--set", "precision=bf16"]))  # fmt: skip
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs; torch threads: default")
    print(
        "| graph | training | steps × epochs | s/epoch | s/step | steps/s | start, load, prepare, write s "
        "| embed all s (inference) | wall s | peak RSS | peak GPU memory | objective |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    memory: list[str] = []
    for number, (size, label, settings) in enumerate(runs):
        graph = ensure_graph(size, args.dir)
        out = args.dir / f"run-{number}-{size}"
        epochs = 1 if "batch_size=1024" in settings else args.exact_epochs
        wall, peak = measured_run([*GCA, "train", "--dataset", str(graph), "--epochs", str(epochs), "--no-eval",
                                   "--quiet", "--device", args.device, "--set", "hidden=128", *settings,
                                   "--out", str(out)])  # fmt: skip
        record = json.loads((out / "results.json").read_text())
        batch = record["config"]["batch_size"]
        nodes, edges, features = SIZES[size]
        steps = record["config"]["steps_per_epoch"] or (-(-nodes // batch) if batch else 1)
        train = record["train_seconds"]
        print(f"| {size} size | {label} | {steps} × {epochs} | {train / epochs:.1f} | {train / steps / epochs:.3f} | "
              f"{steps * epochs / max(train, 1e-9):.1f} | "
              f"{wall - train - record['embed_seconds']:.1f} | {record['embed_seconds']:.1f} | {wall:.1f} | "
              f"{peak:,.0f} MiB | {record.get('gpu_peak_mb', '—')} | {record.get('objective', '')} |",
              flush=True)  # fmt: skip
        if batch:
            model = memory_model(nodes, edges, features)
            phase = max(model, key=lambda k: model[k][2])
            per_edge, per_node, predicted = model[phase]
            memory.append(f"| {size} size | {peak * 2**20 / 1e9:.2f} GB | {predicted / 1e9:.2f} GB ({phase}) | "
                          f"{per_node:,} | {per_edge} |")  # fmt: skip
    if memory:
        print("\nPeak RSS against the memory model (docs/large-graphs.md; GB = 10⁹ bytes; the model's bytes per node "
              "and per directed edge in its largest phase, plus 0.33 GB of libraries):")
        print("| graph | measured peak | predicted | bytes per node | bytes per edge |\n|---|---|---|---|---|")
        print("\n".join(memory))

if __name__ == "__main__":
    main()
