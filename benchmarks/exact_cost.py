"""The CPU cost model of an exact update (:func:`gca.train.fast.exact_update_seconds`) against timed updates.

Six synthetic graphs and, with ``--data-dir``, the paper's four train exact updates. Prints each graph's median
one-thread CPU seconds against the one-core model; ``--two-threads``: the paper's graphs' two-thread wall time
against the two-core estimate; ``--fit``: the one-core constants fitted to the synthetic graphs.

    python benchmarks/exact_cost.py [--data-dir DATA] [--fit] [--two-threads] [--updates 2]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch
from harness import load, machine, table, training
from torch_geometric.data import Data

from gca.config import GCAConfig
from gca.train import fast
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
    """A random undirected graph of mean degree ``degree``, a share ``density`` of its features non-zero."""
    generator = torch.Generator().manual_seed(seed)
    ends = torch.randint(0, nodes, (2, nodes * degree // 2), generator=generator)
    x = torch.rand(nodes, width, generator=generator)
    if density < 1:
        x = x * (torch.rand(nodes, width, generator=generator) < density)
    return Data(x=x, edge_index=torch.cat([ends, ends.flip(0)], 1))


class Exact:
    """One graph's exact training, set up as :meth:`gca.GCA.fit` sets it up: :meth:`update` times one update."""

    def __init__(self, label: str, data: Data, config: GCAConfig) -> None:
        graph, source, self.model, self.optimizer, self.generator = training(data, config, directed=False)
        self.label, self.batch = label, next(iter(source.batches(0, self.generator)))
        sizes = (graph.num_nodes, graph.edge_index.shape[1], graph.num_features, fast.feature_nonzeros(data.x))
        self.terms = fast.exact_update_terms(*sizes, config)
        self.cpu: list[float] = []  # one thread's CPU seconds
        self.wall: list[float] = []  # two threads' wall seconds

    def predicted(self, costs: tuple[float, ...] = fast.CPU_EXACT_COSTS, fixed: float = fast.CPU_EXACT_FIXED) -> float:
        """The one-core seconds an update is predicted to take."""
        return fixed + sum(c * t for c, t in zip(costs, self.terms, strict=True))

    def update(self, timed: bool = True) -> None:
        cpu, wall = time.thread_time(), time.perf_counter()
        train_step(self.model, self.optimizer, self.batch, self.generator)
        if timed and torch.get_num_threads() == 1:
            self.cpu.append(time.thread_time() - cpu)
        elif timed:
            self.wall.append(time.perf_counter() - wall)


def fit(rows: list[tuple[float, tuple[float, float, float]]]) -> tuple[tuple[float, float, float], float]:
    """Non-negative costs per term and a fixed cost that minimise the squared relative error over ``rows``."""
    from scipy.optimize import nnls

    design = np.array([[*terms, 1.0] for _, terms in rows]) / np.array([[s] for s, _ in rows])
    scale = design.max(0)
    solution = nnls(design / scale, np.ones(len(rows)))[0] / scale
    return (float(solution[0]), float(solution[1]), float(solution[2])), float(solution[3])


def rounds(graphs: list[Exact], warmup: int, updates: int) -> str:
    """Rounds of one update per graph, the first ``warmup`` untimed; returns the load average after them."""
    for number in range(warmup + updates):
        for exact in graphs:
            exact.update(timed=number >= warmup)
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
    print(machine() + (", then 2 (--two-threads)" if args.two_threads else ""))
    made, paper = [], []
    for nodes, width, density, hidden, proj, degree in SYNTHETIC:
        label = f"synthetic N={nodes:,} F={width} ({density:g} non-zero) d={hidden} p={proj} degree {degree}"
        made.append(Exact(label, synthetic(nodes, width, density, degree), GCAConfig(hidden=hidden, proj_hidden=proj)))
    for name in PAPER if args.data_dir else ():
        loaded, config = load(name, args.data_dir)
        label = f"{loaded.name} N={loaded.data.num_nodes:,} d={config.hidden} p={config.proj_hidden}"
        paper.append(Exact(label, loaded.data, config))
    loads = [open("/proc/loadavg").read().split()[0], rounds(made + paper, args.warmup, args.updates)]
    if args.two_threads:
        torch.set_num_threads(2)
        loads.append(rounds(paper, args.warmup, args.updates))
    print(
        f"{args.updates} exact updates after {args.warmup}; load average {', '.join(loads)} (before, after each part)"
    )
    fitted = fit([(statistics.median(e.cpu), e.terms) for e in made]) if args.fit else None
    row = table("graph | one core: CPU s | model | error" + (" | fitted | error" if fitted else ""))
    for exact in made + paper:
        seconds = statistics.median(exact.cpu)
        model = exact.predicted()
        text = f"{exact.label} | {seconds:.3f} | {model:.3f} | {100 * (model / seconds - 1):+.0f} %"
        if fitted:
            again = exact.predicted(*fitted)
            text += f" | {again:.3f} | {100 * (again / seconds - 1):+.0f} %"
        row(text)
    if args.two_threads:
        print()
        row = table("graph | two threads: wall s (fastest) | estimate | error | speed-up over one core")
        for exact in paper:
            wall, model = min(exact.wall), fast.exact_update_seconds_of(exact.terms)
            speedup = statistics.median(exact.cpu) / wall
            row(f"{exact.label} | {wall:.3f} | {model:.3f} | {100 * (model / wall - 1):+.0f} % | {speedup:.2f}")
    if fitted:
        (a, b, c), fixed = fitted
        print(f"\nfitted: CPU_EXACT_COSTS = ({a:.3g}, {b:.3g}, {c:.3g}); CPU_EXACT_FIXED = {fixed:.3g}")


if __name__ == "__main__":
    main()
