"""One training epoch, gca against the plain formulation (GCNConv, ``objective.py``'s ``plain_loss``), per graph:
seconds per epoch and peak memory (CPU: each case's own process's RSS; CUDA: peak allocated) and the speed-up.

    python benchmarks/epoch.py [--data-dir DATA] [--epochs 5] [--skip-physics] [--paper-datasets] [--bf16]
    python benchmarks/epoch.py --device cuda --epochs 20 --graphs real-photo real-computers real-cs [--json FILE]
"""

import argparse
import contextlib
import json
from functools import partial
from pathlib import Path

import torch
from harness import DATA_DIR, case, cuda_peak, load, machine, median_seconds, plain_fits, random_graph, table
from objective import plain_loss
from torch import nn
from torch_geometric.nn import GCNConv
from torch_geometric.utils import dropout_edge

PAPER = {"real-photo": "Amazon-Photo", "real-computers": "Amazon-Computers", "real-cs": "Coauthor-CS"}
NODES = {"cora": 2708, "photo": 7650, "physics": 34493, "real-photo": 7650, "real-computers": 13752, "real-cs": 18333}
LABELS = {"cora": "Cora (2,708 nodes, d = 128)", "photo": "Amazon-Photo size (7,650, d = 256)"}
LABELS |= {"physics": "Coauthor-Physics size (34,493, d = 128)"}
LABELS |= {key: f"{name} (real, its setting's widths)" for key, name in PAPER.items()}


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
    torch.manual_seed(0)
    x, edge_index = (data.x.to_dense() if data.x.is_sparse else data.x).to(device), data.edge_index.to(device)
    convs = nn.ModuleList([GCNConv(x.shape[1], 2 * hidden), GCNConv(2 * hidden, hidden)])
    head = nn.Sequential(nn.Linear(hidden, proj_hidden), nn.ELU(), nn.Linear(proj_hidden, hidden))
    model = nn.ModuleList([convs, head]).to(device)
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
    return median_seconds(lambda: [step() for _ in range(epochs)], repeats=1, warmup=0) / epochs


def gca_epochs(data, hidden: int, proj_hidden: int, epochs: int, device: str, bf16: bool = False) -> float:
    """Seconds per epoch of :class:`gca.GCA` after a one-epoch warm-up fit (``centrality=degree``)."""
    from gca import GCA, GCAConfig  # here: the plain case's process does without it

    config = GCAConfig(epochs=epochs, hidden=hidden, proj_hidden=proj_hidden, centrality="degree")
    if bf16:  # the whole update in bf16 (gca.precision): what `auto` picks where bf16 units measure faster
        config = config.replace(loss_backend="attention", precision="bf16")
    GCA(config.replace(epochs=1), device=device).fit_transform(data)  # warm-up
    estimator = GCA(config, device=device).fit(data)
    return estimator.train_seconds / epochs


def measure(method: str, name: str, epochs: int, data_dir: str, device: str) -> dict:
    data, hidden, proj_hidden = graph(name, data_dir)
    epoch = plain_epochs if method == "plain" else partial(gca_epochs, bf16=method == "gca-bf16")
    seconds, peak = cuda_peak(lambda: epoch(data, hidden, proj_hidden, epochs, device), device)
    return {"seconds": seconds, "peak_mb": peak}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default=DATA_DIR)
    parser.add_argument("--device", default="cpu", help="cpu or cuda[:N]")
    parser.add_argument("--epochs", type=int, default=5, help="(physics on the CPU: at most 2)")
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
    methods = ("plain", "gca", "gca-bf16") if args.bf16 else ("plain", "gca")
    print(machine(args.device))
    extra = " | gca bf16 s/epoch | fp32 / bf16" if args.bf16 else ""
    row = table("graph | plain s/epoch | plain peak | gca s/epoch | gca peak | speed-up" + extra)
    rows = []
    for name in names:
        epochs = min(args.epochs, 2) if name == "physics" and args.device == "cpu" else args.epochs
        r = dict.fromkeys(methods)  # None: does not fit or failed
        for method in methods:
            if method == "plain" and not plain_fits(NODES[name], args.device):
                continue
            if args.device == "cpu":
                r[method] = case(__file__, method, name, "--epochs", epochs, "--data-dir", args.data_dir)
            else:
                with contextlib.suppress(torch.cuda.OutOfMemoryError):
                    r[method] = measure(method, name, epochs, args.data_dir, args.device)

        def cell(result: dict | None) -> str:
            peak = result and (result["peak_mb"] if args.device != "cpu" else result["peak_rss_mb"])
            return f"{result['seconds']:.4f} | {peak:,.0f} MB" if result else "does not fit or failed | —"

        def ratio(a: dict | None, b: dict | None) -> str:
            return f"{a['seconds'] / b['seconds']:.2f}×" if a and b else "—"

        bf16 = f" | {cell(r['gca-bf16']).split(' |')[0]} | {ratio(r['gca'], r['gca-bf16'])}" if args.bf16 else ""
        row(f"{LABELS[name]} | {cell(r['plain'])} | {cell(r['gca'])} | {ratio(r['plain'], r['gca'])}{bf16}")
        rows.append({"graph": name, "epochs": epochs, **r})
    if args.json:
        Path(args.json).write_text(json.dumps({"machine": machine(args.device), "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
