"""The cost model of an exact update on a CPU (:func:`gca.train.fast.exact_update_seconds`), measured: what
``gca train`` reads to choose mini-batches by default where the paper's exact schedule would take over an hour.

Each graph — synthetic ones of 3,000 to 20,000 nodes with dense or sparse features and several widths, then, with
``--data-dir``, the paper's Cora, Amazon-Photo, Amazon-Computers and Coauthor-CS with their shipped settings — is
prepared as :meth:`gca.GCA.fit` prepares it and trained for ``--warmup`` + ``--updates`` exact updates
(:func:`gca.train.loop.train_step` on the whole graph), graph after graph, round by round.

An update is timed on **one thread by its CPU time**: on cores that other processes share, a two-thread update's
wall time swings by 3–6× (each parallel region waits for the thread that lost its core), while one thread's CPU
time stays within a few per cent. The median is set against the model's one-core prediction
(:data:`gca.train.fast.CPU_EXACT_COSTS`). ``--two-threads`` then times the paper's graphs on two threads by wall
time (the fastest of ``--updates``) against the model's two-core estimate — the one-core prediction divided by
:data:`gca.train.fast.CPU_TWO_CORE_SPEEDUP` — and prints the speed-up measured. ``--fit`` fits the one-core
constants anew to the synthetic graphs (non-negative least squares on the relative error; the paper's graphs held
out) and prints them with the predictions they give.

    python benchmarks/exact_cost.py [--data-dir /work/shared/data] [--fit] [--two-threads] [--updates 2]
"""

from __future__ import annotations

import argparse
import datetime
import platform
import statistics
import time

import numpy as np
import torch
from torch_geometric.data import Data

from gca.augment.prepared import prepare
from gca.config import GCAConfig, build_config
from gca.datasets.registry import load_dataset
from gca.nn.model import GCAModel
from gca.train import fast
from gca.train.batches import batch_source
from gca.train.fast import exact_update_terms, feature_nonzeros
from gca.train.loop import train_step

#: (nodes, features, share of non-zero features, hidden, proj_hidden, mean degree)
SYNTHETIC = (
    (3_000, 500, 0.02, 128, 128, 10),
    (6_000, 200, 1.0, 256, 64, 30),
    (9_000, 1_000, 0.01, 256, 256, 10),
    (12_000, 100, 1.0, 128, 128, 20),
    (16_000, 300, 0.3, 128, 128, 30),
    (20_000, 2_000, 0.01, 64, 64, 10),
)
PAPER = ("Cora", "Amazon-Photo", "Amazon-Computers", "Coauthor-CS")


def synthetic(nodes: int, width: int, density: float, degree: int, seed: int = 0) -> Data:
    """A random undirected graph of ``nodes`` nodes and about ``degree`` neighbours each, with features of which a
    share ``density`` is non-zero (ones and uniform values)."""
    generator = torch.Generator().manual_seed(seed)
    half = nodes * degree // 2
    ends = torch.randint(0, nodes, (2, half), generator=generator)
    edge_index = torch.cat([ends, ends.flip(0)], 1)
    x = torch.rand(nodes, width, generator=generator)
    if density < 1:
        x = x * (torch.rand(nodes, width, generator=generator) < density)
    return Data(x=x, edge_index=edge_index)


class Exact:
    """One graph's exact training, set up as :meth:`gca.GCA.fit` sets it up: :meth:`update` times one update."""

    def __init__(self, data: Data, config: GCAConfig) -> None:
        prepared = prepare(data, config, directed=False)
        graph = prepared.graph
        torch.manual_seed(config.seed)
        self.model = GCAModel.from_config(graph.num_features, config, edge_dim=graph.edge_dim)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
        self.generator = torch.Generator().manual_seed(config.seed)
        source = batch_source(graph, prepared.views, config, torch.device("cpu"))
        self.batch = next(iter(source.batches(0, self.generator)))
        self.terms = exact_update_terms(
            graph.num_nodes, graph.edge_index.shape[1], graph.num_features, feature_nonzeros(data.x), config
        )
        self.cpu: list[float] = []  # one thread's CPU seconds
        self.wall: list[float] = []  # two threads' wall seconds

    def update(self, timed: bool = True) -> None:
        cpu, wall = time.thread_time(), time.perf_counter()
        train_step(self.model, self.optimizer, self.batch, self.generator)
        if timed:
            (self.cpu if torch.get_num_threads() == 1 else self.wall).append(
                time.thread_time() - cpu if torch.get_num_threads() == 1 else time.perf_counter() - wall
            )


def one_core(terms: tuple[float, float, float], costs: tuple[float, ...], fixed: float) -> float:
    return fixed + sum(c * t for c, t in zip(costs, terms, strict=True))


def fit(rows: list[tuple[float, tuple[float, float, float]]]) -> tuple[tuple[float, float, float], float]:
    """Non-negative costs per term and a fixed cost that minimise the squared relative error over ``rows``."""
    from scipy.optimize import nnls

    design = np.array([[*terms, 1.0] for _, terms in rows]) / np.array([[s] for s, _ in rows])
    scale = design.max(0)
    solution, _ = nnls(design / scale, np.ones(len(rows)))
    solution = solution / scale
    return (float(solution[0]), float(solution[1]), float(solution[2])), float(solution[3])


def rounds(graphs: list[tuple[str, Exact]], warmup: int, updates: int) -> None:
    for _, exact in graphs:
        for _ in range(warmup):
            exact.update(timed=False)
    for _ in range(updates):
        for _, exact in graphs:
            exact.update()


def loadavg() -> str:
    return open("/proc/loadavg").read().split()[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", help="the paper's graphs in PyG's layout (held out of the fit)")
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--updates", type=int, default=2)
    parser.add_argument("--fit", action="store_true", help="fit the constants to the synthetic graphs and print them")
    parser.add_argument("--two-threads", action="store_true", help="also time the paper's graphs on two threads")
    args = parser.parse_args()
    torch.set_num_threads(1)

    graphs: list[tuple[str, Exact]] = []
    for nodes, width, density, hidden, proj, degree in SYNTHETIC:
        config = GCAConfig(hidden=hidden, proj_hidden=proj, epochs=1)
        label = f"synthetic N={nodes:,} F={width} ({density:g} non-zero) d={hidden} p={proj} degree {degree}"
        graphs.append((label, Exact(synthetic(nodes, width, density, degree), config)))
    for name in PAPER if args.data_dir else ():
        loaded = load_dataset(name, args.data_dir)
        config = build_config(loaded.name)
        label = f"{loaded.name} N={loaded.data.num_nodes:,} d={config.hidden} p={config.proj_hidden}"
        graphs.append((label, Exact(loaded.data, config)))
    load = [loadavg()]
    rounds(graphs, args.warmup, args.updates)
    load.append(loadavg())
    if args.two_threads:
        torch.set_num_threads(2)
        rounds([g for g in graphs if not g[0].startswith("synthetic")], args.warmup, args.updates)
        load.append(loadavg())

    cpu = next(
        (line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")),
        platform.processor(),
    )
    print(
        f"{cpu}; torch {torch.__version__} ({torch.backends.cpu.get_cpu_capability()}); {datetime.date.today()}; "
        f"{args.updates} exact updates after {args.warmup}; load average {', '.join(load)} (before, after each "
        "part)"
    )
    synthetic_rows = [(statistics.median(e.cpu), e.terms) for label, e in graphs if label.startswith("synthetic")]
    fitted = fit(synthetic_rows) if args.fit else None
    print("\n| graph | one core: CPU s | model | error |" + (" fitted | error |" if fitted else ""))
    print("|---|---:|---:|---:|" + ("---:|---:|" if fitted else ""))
    for label, exact in graphs:
        seconds = statistics.median(exact.cpu)
        model = one_core(exact.terms, fast.CPU_EXACT_COSTS, fast.CPU_EXACT_FIXED)
        line = f"| {label} | {seconds:.3f} | {model:.3f} | {100 * (model / seconds - 1):+.0f} % |"
        if fitted:
            again = one_core(exact.terms, *fitted)
            line += f" {again:.3f} | {100 * (again / seconds - 1):+.0f} % |"
        print(line)
    if args.two_threads:
        print("\n| graph | two threads: wall s (fastest) | estimate | error | speed-up over one core |")
        print("|---|---:|---:|---:|---:|")
        for label, exact in graphs:
            if exact.wall:
                wall, model = min(exact.wall), fast.exact_update_seconds_of(exact.terms)
                print(
                    f"| {label} | {wall:.3f} | {model:.3f} | {100 * (model / wall - 1):+.0f} % | "
                    f"{statistics.median(exact.cpu) / wall:.2f} |"
                )
    if fitted:
        costs, fixed = fitted
        print(
            f"\nfitted: CPU_EXACT_COSTS = ({costs[0]:.3g}, {costs[1]:.3g}, {costs[2]:.3g}); "
            f"CPU_EXACT_FIXED = {fixed:.3g}"
        )


if __name__ == "__main__":
    main()
