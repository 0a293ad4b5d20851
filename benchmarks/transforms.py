"""What a call of gca's PyTorch Geometric transforms costs on Cora, cached and in an ordinary PyG pipeline.

A transform computes centrality and the edge probabilities once per ``edge_index`` tensor and the feature
probabilities once per values of ``x`` (:mod:`gca.augment.transforms`). ``Planetoid(..., transform=Compose([
NormalizeFeatures(), augment]))`` hands it a new ``x`` of the same values at every call: there it compares that x
with the last one (one pass) and recomputes nothing. Printed, as medians of per-call times:

1. a cache miss — a graph the transform has not seen: everything computed, then one draw;
2. the same graph again — only the draw;
3. ``NormalizeFeatures`` alone, and the ``Compose`` pipeline;
4. what the pipeline would cost if every call missed (``NormalizeFeatures`` + a miss: what every call cost while
   the cache was keyed on the ``x`` tensor as well), and its ratio to the measured pipeline;
5. the number of graphs the transform holds after the calls.

Run it with ``--threads 1`` on a machine whose cores are shared: two threads on two busy cores time the scheduler.

    python benchmarks/transforms.py --root /tmp/pl [--calls 300] [--threads 1]

``--root`` is a Planetoid root with Cora/raw/ in it (PyG writes Cora/processed/ next to it: use a writable copy).
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time
from pathlib import Path

import torch
import torch_geometric.transforms as T
from torch_geometric.datasets import Planetoid

from gca.augment.transforms import AdaptiveAugmentation, AdaptiveEdgeDropping


def per_call(fn, calls: int) -> float:
    """Median seconds of one call, after one call that is not counted."""
    fn()
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def cpu_name() -> str:
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default="/tmp/pl", help="Planetoid root holding Cora/raw/")
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's own)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    print(f"# {cpu_name()}, torch {torch.__version__}, {torch.get_num_threads()} threads, {args.calls} calls each")

    data = Planetoid(args.root, "Cora")[0]
    print(f"# Cora: {data.num_nodes} nodes, {data.edge_index.shape[1]} directed edges, {data.x.shape[1]} features")
    rows = []
    for make in (AdaptiveAugmentation, AdaptiveEdgeDropping):
        cached, augment = make(), make()
        pipeline = Planetoid(args.root, "Cora", transform=T.Compose([T.NormalizeFeatures(), augment]))
        normalize_only = Planetoid(args.root, "Cora", transform=T.NormalizeFeatures())
        t_miss = per_call(lambda make=make: make()(data), max(3, args.calls // 30))  # a new transform: nothing held
        t_cached = per_call(lambda cached=cached: cached(data), args.calls)
        t_pipeline = per_call(lambda pipeline=pipeline: pipeline[0], args.calls)
        t_normalize = per_call(lambda normalize_only=normalize_only: normalize_only[0], args.calls)
        rows.append((make.__name__, t_miss, t_cached, t_pipeline, t_normalize, len(augment._graphs)))

    print(
        "| transform | cache miss ms | same graph ms | NormalizeFeatures alone ms | Compose ms "
        "| Compose if every call missed ms | missed / measured | graphs held |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name, t_miss, t_cached, t_pipeline, t_normalize, held in rows:
        missed = t_normalize + t_miss  # what a pipeline cost whose every call recomputed everything
        print(
            f"| {name} | {t_miss * 1e3:.1f} | {t_cached * 1e3:.2f} | {t_normalize * 1e3:.2f} | "
            f"{t_pipeline * 1e3:.2f} | {missed * 1e3:.1f} | {missed / t_pipeline:.1f}× | {held} |"
        )


if __name__ == "__main__":
    main()
