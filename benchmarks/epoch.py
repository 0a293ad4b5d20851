"""One training epoch, gca against the plain formulation: seconds per epoch and peak memory, on the CPU or CUDA.

``gca`` is what ``gca train --epochs N --no-eval`` spends per epoch (:class:`gca.GCA`'s training seconds over its
epochs, after a one-epoch warm-up fit; ``centrality=degree``); ``plain`` is written here the direct way: dense features
masked by copying, PyG's ``GCNConv`` on the kept edges, the four N×N similarity matrices of ``objective.py``'s
``plain_loss`` under autograd (not run where a dozen N×N fp32 matrices exceed the memory). ``--bf16`` adds gca with
``precision=bf16`` (the attention objective) and the ratio fp32 / bf16. On the CPU each case runs in its own process
(its peak RSS); on CUDA in this one (PyTorch's peak allocated memory). Graphs (``--graphs``):

* ``cora`` — Cora from ``--data-dir``, d = 128;
* ``photo``, ``physics`` — synthetic graphs of Amazon-Photo's size (7,650 nodes, 119,081 edges, 745 sparse binary
  features, d = 256) and Coauthor-Physics's (34,493 nodes, 247,962 edges, 8,415 features, d = 128; on the CPU at
  most 2 epochs): random edges, 30 random features set to 1 per node;
* ``real-photo``, ``real-computers``, ``real-cs`` (``--paper-datasets``) — the paper's graphs from ``--data-dir``
  with their shipped setting's widths.

    python benchmarks/epoch.py [--data-dir DATA] [--epochs 5] [--skip-physics] [--paper-datasets] [--bf16]
    python benchmarks/epoch.py --device cuda --epochs 20 --graphs real-photo real-computers real-cs [--json FILE]

Printed: the machine, then a row per graph: plain and gca seconds per epoch and peak memory, the speed-up.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import torch
from harness import DATA_DIR, case, load, machine, random_graph, sync, table
from objective import plain_loss

PAPER = {"real-photo": "Amazon-Photo", "real-computers": "Amazon-Computers", "real-cs": "Coauthor-CS"}
NODES = {
    "cora": 2708,
    "photo": 7650,
    "physics": 34_493,
    "real-photo": 7650,
    "real-computers": 13_752,
    "real-cs": 18_333,
}
LABELS = {
    "cora": "Cora (2,708 nodes, d = 128)",
    "photo": "Amazon-Photo size (7,650, d = 256)",
    "physics": "Coauthor-Physics size (34,493, d = 128)",
    **{key: f"{name} (real, its setting's widths)" for key, name in PAPER.items()},
}


def graph(name: str, data_dir: str):
    """(data, hidden, proj_hidden) of a graph of ``--graphs``."""
    if name == "photo":
        return random_graph(7650, 119_081, 745), 256, 256
    if name == "physics":
        return random_graph(34_493, 247_962, 8415), 128, 128
    loaded, config = load(PAPER.get(name, "Cora"), data_dir)
    return (loaded.data, 128, 128) if name == "cora" else (loaded.data, config.hidden, config.proj_hidden)


def plain_epochs(data, hidden: int, proj_hidden: int, epochs: int, device: str) -> float:
    """Seconds per epoch of the direct formulation (uniform probabilities; sampling cost is the same order)."""
    from torch_geometric.nn import GCNConv
    from torch_geometric.utils import dropout_edge

    torch.manual_seed(0)
    x = (data.x.to_dense() if data.x.is_sparse else data.x).to(device)
    edge_index = data.edge_index.to(device)
    convs = torch.nn.ModuleList([GCNConv(x.shape[1], 2 * hidden), GCNConv(2 * hidden, hidden)])
    head = torch.nn.Sequential(
        torch.nn.Linear(hidden, proj_hidden), torch.nn.ELU(), torch.nn.Linear(proj_hidden, hidden)
    )
    model = torch.nn.ModuleList([convs, head]).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-4, weight_decay=1e-5)

    def step() -> None:
        views = []
        for p_e, p_f in ((0.2, 0.3), (0.4, 0.4)):
            edges, _ = dropout_edge(edge_index, p=p_e)
            masked = x.clone()
            masked[:, torch.rand(x.shape[1], device=device) < p_f] = 0
            views.append(head(torch.relu(convs[1](torch.relu(convs[0](masked, edges)), edges))))
        loss = plain_loss(views[0], views[1], 0.4)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    step()  # warm-up
    sync()
    start = time.perf_counter()
    for _ in range(epochs):
        step()
    sync()
    return (time.perf_counter() - start) / epochs


def gca_epochs(data, hidden: int, proj_hidden: int, epochs: int, device: str, bf16: bool = False) -> float:
    from gca import GCA, GCAConfig

    config = GCAConfig(epochs=epochs, hidden=hidden, proj_hidden=proj_hidden, centrality="degree")
    if bf16:  # the whole update in bf16 (gca.precision): what `auto` picks where bf16 units measure faster
        config = config.replace(loss_backend="attention", precision="bf16")
    GCA(config.replace(epochs=1), device=device).fit_transform(data)  # warm-up
    estimator = GCA(config, device=device)
    estimator.fit(data)
    return estimator.train_seconds / epochs


def measure(method: str, name: str, epochs: int, data_dir: str, device: str) -> dict:
    data, hidden, proj_hidden = graph(name, data_dir)
    if device != "cpu":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    if method == "plain":
        seconds = plain_epochs(data, hidden, proj_hidden, epochs, device)
    else:
        seconds = gca_epochs(data, hidden, proj_hidden, epochs, device, bf16=method == "gca-bf16")
    return {"seconds": seconds, "peak_mb": torch.cuda.max_memory_allocated() / 2**20 if device != "cpu" else None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default=DATA_DIR)
    parser.add_argument("--device", default="cpu", help="cpu or cuda[:N]")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--graphs", nargs="+", choices=list(LABELS), default=["cora", "photo", "physics"])
    parser.add_argument("--skip-physics", action="store_true")
    parser.add_argument("--paper-datasets", action="store_true", help="also the real Photo, Computers and CS graphs")
    parser.add_argument("--bf16", action="store_true", help="also gca with the attention objective in bf16")
    parser.add_argument("--json", help="also write the rows to this file")
    parser.add_argument("--case", nargs=2, help=argparse.SUPPRESS)  # METHOD GRAPH: one case, in its own process
    args = parser.parse_args()
    if args.case:
        return print(json.dumps(measure(*args.case, args.epochs, args.data_dir, "cpu")))
    if args.device != "cpu" and not torch.cuda.is_available():
        raise SystemExit("epoch.py: no CUDA device is available")
    names = [g for g in args.graphs if not (args.skip_physics and g == "physics")]
    names += [g for g in PAPER if args.paper_datasets and g not in names]
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    memory = memory if args.device == "cpu" else torch.cuda.mem_get_info()[1]
    print(machine(args.device))
    extra = " | gca bf16 s/epoch | fp32 / bf16" if args.bf16 else ""
    row = table("graph | plain s/epoch | plain peak | gca s/epoch | gca peak | speed-up" + extra)
    rows = []
    for name in names:
        epochs = min(args.epochs, 2) if name == "physics" and args.device == "cpu" else args.epochs
        r = {}
        for method in ("plain", "gca", "gca-bf16") if args.bf16 else ("plain", "gca"):
            if method == "plain" and 12 * NODES[name] ** 2 * 4 > 0.8 * memory:
                r[method] = None  # does not fit
            elif args.device == "cpu":
                r[method] = case(__file__, method, name, "--epochs", epochs, "--data-dir", args.data_dir)
            else:
                try:
                    r[method] = measure(method, name, epochs, args.data_dir, args.device)
                except torch.cuda.OutOfMemoryError:
                    r[method] = None

        def cell(result: dict | None) -> str:
            peak = result and (result["peak_mb"] if args.device != "cpu" else result["peak_rss_mb"])
            return f"{result['seconds']:.4f} | {peak:,.0f} MB" if result else "does not fit or failed | —"

        def ratio(a: dict | None, b: dict | None, unit: str = "×") -> str:
            return f"{a['seconds'] / b['seconds']:.2f}{unit}" if a and b else "—"

        bf16 = f" | {cell(r['gca-bf16']).split(' |')[0]} | {ratio(r['gca'], r['gca-bf16'])}" if args.bf16 else ""
        row(f"{LABELS[name]} | {cell(r['plain'])} | {cell(r['gca'])} | {ratio(r['plain'], r['gca'])}{bf16}")
        rows.append({"graph": name, "epochs": epochs, **r})
    if args.json:
        Path(args.json).write_text(json.dumps({"machine": machine(args.device), "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
