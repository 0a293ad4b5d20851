"""Benchmarks (b) and (c): one full GCA training epoch, and its peak memory at Coauthor-Physics size.

(b) seconds per epoch of ``gca`` (what ``gca train --epochs N --no-eval`` spends per epoch) against a plain
    reference written here the direct way: dense features masked by copying, PyG's GCNConv on the kept edges, four
    N×N similarity matrices under autograd. On Cora (from ../shared/data) and on a synthetic graph of
    Amazon-Photo's size (7,650 nodes, 119,081 edges, 745 sparse binary features, d = 256).
(c) peak RSS of gca training epochs on a synthetic graph of Coauthor-Physics's size (34,493 nodes, 247,962 edges,
    8,415 sparse binary features, d = 128).
(d) with ``--paper-datasets``: (b) on the real Amazon-Photo, Amazon-Computers and Coauthor-CS graphs from
    ``--data-dir``, each with its shipped setting's widths (Table 5's hidden size, the authors' projection width).
(e) with ``--bf16``: gca with ``precision=bf16`` (the whole update in mixed precision, the attention objective)
    beside it: the exact epoch's ratio fp32 / bf16 on a CPU with bf16 matrix units (docs/benchmarks.md).

Each measurement runs in its own subprocess. Synthetic graphs: uniformly random edges, and each node has
``--nnz`` random features set to 1 (the benchmark files' features are sparse bag-of-words).

    python benchmarks/epoch.py [--data-dir ../shared/data] [--epochs 5] [--skip-physics] [--paper-datasets] [--bf16]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch
from torch_geometric.data import Data
from torch_geometric.nn import GCNConv
from torch_geometric.utils import dropout_edge, to_undirected

sys.path.insert(0, str(Path(__file__).resolve().parent))
from objective import plain_loss  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PAPER_GRAPHS = {"real-photo": "Amazon-Photo", "real-computers": "Amazon-Computers", "real-cs": "Coauthor-CS"}


def synthetic_graph(nodes: int, edges: int, features: int, nnz: int, seed: int = 0) -> Data:
    rng = np.random.default_rng(seed)
    pairs = rng.integers(0, nodes, size=(2, int(edges * 1.05)))
    pairs = pairs[:, pairs[0] != pairs[1]]
    pairs = np.unique(np.sort(pairs, axis=0), axis=1)[:, :edges]
    edge_index = to_undirected(torch.from_numpy(pairs), num_nodes=nodes)
    rows = np.repeat(np.arange(nodes), nnz)
    cols = rng.integers(0, features, size=nodes * nnz)
    x = torch.sparse_coo_tensor(np.vstack([rows, cols]), np.ones(rows.size, dtype=np.float32), (nodes, features))
    x = x.coalesce()
    x = torch.sparse_coo_tensor(x.indices(), torch.ones_like(x.values()), x.shape).coalesce()
    return Data(x=x, edge_index=edge_index, y=torch.from_numpy(rng.integers(0, 8, nodes)))


def load(name: str, data_dir: str, nnz: int) -> tuple[Data, dict]:
    if name == "cora":
        from gca.datasets import load_dataset

        return load_dataset("Cora", data_dir=data_dir).data, {"hidden": 128, "proj_hidden": 128}
    if name == "photo":
        return synthetic_graph(7650, 119_081, 745, nnz), {"hidden": 256, "proj_hidden": 256}
    if name in PAPER_GRAPHS:
        from gca.config import build_config
        from gca.datasets import load_dataset

        config = build_config(PAPER_GRAPHS[name])
        return load_dataset(PAPER_GRAPHS[name], data_dir=data_dir).data, {
            "hidden": config.hidden,
            "proj_hidden": config.proj_hidden,
        }
    if name == "physics":
        return synthetic_graph(34_493, 247_962, 8415, nnz), {"hidden": 128, "proj_hidden": 128}
    raise ValueError(name)


class PlainEncoder(torch.nn.Module):
    def __init__(self, in_channels: int, hidden: int, proj_hidden: int) -> None:
        super().__init__()
        self.conv1 = GCNConv(in_channels, 2 * hidden)
        self.conv2 = GCNConv(2 * hidden, hidden)
        self.fc1 = torch.nn.Linear(hidden, proj_hidden)
        self.fc2 = torch.nn.Linear(proj_hidden, hidden)

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.conv2(torch.relu(self.conv1(x, edge_index)), edge_index))

    def project(self, h: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.nn.functional.elu(self.fc1(h)))


def cpu_description() -> str:
    """The CPU's model and the vector and matrix units PyTorch uses on it: what an epoch's speed depends on."""
    model, flags = platform.processor() or platform.machine(), set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name":
                model = value.strip()
            elif key.strip() == "flags":
                flags = set(value.split())
                break
    except OSError:
        pass
    units = [f for f in ("avx2", "avx512f", "avx512_bf16", "amx_bf16") if f in flags]
    from gca.precision import cpu_bf16_units

    return (
        f"{model}, {os.cpu_count()} cores, flags {' '.join(units) or 'none of avx2/avx512f/avx512_bf16/amx_bf16'}"
        f"; PyTorch {torch.__version__} uses {torch.backends.cpu.get_cpu_capability()}, bf16 units: "
        f"{cpu_bf16_units() or 'none'}"
    )


def _sync(device: str) -> None:
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


def plain_epochs(data: Data, hidden: int, proj_hidden: int, epochs: int, device: str = "cpu") -> float:
    """Seconds per epoch of the direct formulation (uniform probabilities; sampling cost is the same order)."""
    torch.manual_seed(0)
    x = (data.x.to_dense() if data.x.is_sparse else data.x).to(device)
    edge_index = data.edge_index.to(device)
    model = PlainEncoder(x.shape[1], hidden, proj_hidden).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-4, weight_decay=1e-5)

    def step() -> None:
        views = []
        for p_e, p_f in ((0.2, 0.3), (0.4, 0.4)):
            edges, _ = dropout_edge(edge_index, p=p_e)
            keep = torch.rand(x.shape[1], device=device) >= p_f
            masked = x.clone()
            masked[:, ~keep] = 0
            views.append(model.project(model(masked, edges)))
        loss = plain_loss(views[0], views[1], 0.4)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    step()  # warm-up
    _sync(device)
    start = time.perf_counter()
    for _ in range(epochs):
        step()
    _sync(device)
    return (time.perf_counter() - start) / epochs


def gca_epochs(
    data: Data, hidden: int, proj_hidden: int, epochs: int, device: str = "cpu", bf16: bool = False
) -> float:
    from gca import GCA, GCAConfig

    config = GCAConfig(epochs=epochs, hidden=hidden, proj_hidden=proj_hidden, centrality="degree")
    if bf16:  # the whole update in bf16 (gca.precision): what `auto` picks where bf16 units measure faster
        config = config.replace(loss_backend="attention", precision="bf16")
    GCA(config.replace(epochs=1), device=device).fit_transform(data)  # warm-up
    estimator = GCA(config, device=device)
    estimator.fit(data)
    return estimator.train_seconds / epochs


def run_case(method: str, name: str, epochs: int, data_dir: str, nnz: int) -> dict:
    data, dims = load(name, data_dir, nnz)
    if method == "plain":
        seconds = plain_epochs(data, dims["hidden"], dims["proj_hidden"], epochs)
    else:
        seconds = gca_epochs(data, dims["hidden"], dims["proj_hidden"], epochs, bf16=method == "gca-bf16")
    return {"seconds_per_epoch": seconds, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--nnz", type=int, default=30, help="features per node in the synthetic graphs")
    parser.add_argument("--skip-physics", action="store_true")
    parser.add_argument("--paper-datasets", action="store_true", help="also the real Photo, Computers and CS graphs")
    parser.add_argument(
        "--bf16",
        action="store_true",
        help="also gca with the attention objective in bf16 (its column: bf16 s/epoch, ratio to fp32)",
    )
    parser.add_argument("--case", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.case:
        print(json.dumps(run_case(args.case[0], args.case[1], args.epochs, args.data_dir, args.nnz)))
        return

    print(f"machine: {cpu_description()}")
    extra = " gca bf16 s/epoch | fp32 / bf16 |" if args.bf16 else ""
    print(f"| graph | plain s/epoch | plain peak RSS | gca s/epoch | gca peak RSS | speed-up |{extra}")
    print("|---|---|---|---|---|---|" + "---|---|" * args.bf16)
    cases = [("cora", "Cora (2,708 nodes, d = 128)"), ("photo", "Amazon-Photo size (7,650, d = 256)")]
    if args.paper_datasets:
        cases += [(key, f"{name} (real)") for key, name in PAPER_GRAPHS.items()]
    for name, label in cases:
        plain = _case("plain", name, args)
        ours = _case("gca", name, args)
        speed = f"{plain['seconds_per_epoch'] / ours['seconds_per_epoch']:.1f}×" if plain and ours else "—"
        extra = ""
        if args.bf16:
            half = _case("gca-bf16", name, args)
            ratio = f"{ours['seconds_per_epoch'] / half['seconds_per_epoch']:.2f}×" if ours and half else "—"
            extra = f" {_fmt(half, 'seconds_per_epoch', '{:.3f}')} | {ratio} |"
        print(
            f"| {label} | {_fmt(plain, 'seconds_per_epoch', '{:.3f}')} | {_fmt(plain, 'peak_rss_mb', '{:.0f} MB')} | "
            f"{_fmt(ours, 'seconds_per_epoch', '{:.3f}')} | {_fmt(ours, 'peak_rss_mb', '{:.0f} MB')} | {speed} |"
            + extra,
            flush=True,
        )
    if not args.skip_physics:
        ours = _case("gca", "physics", args, epochs=2)
        print(
            f"\nCoauthor-Physics size (34,493 nodes, 247,962 edges, 8,415 sparse features, d = 128): gca "
            f"{_fmt(ours, 'seconds_per_epoch', '{:.1f}')} s/epoch, peak RSS {_fmt(ours, 'peak_rss_mb', '{:.0f} MB')}"
        )


def _case(method: str, name: str, args: argparse.Namespace, epochs: int | None = None) -> dict | None:
    proc = subprocess.run(
        [
            sys.executable,
            __file__,
            "--case",
            method,
            name,
            "--epochs",
            str(epochs or args.epochs),
            "--data-dir",
            args.data_dir,
            "--nnz",
            str(args.nnz),
        ],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        tail = proc.stderr.strip().splitlines()[-1:] or [f"exit {proc.returncode}"]
        print(f"  ({method} on {name} failed: {tail[0]})", file=sys.stderr)
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _fmt(result: dict | None, key: str, pattern: str) -> str:
    return pattern.format(result[key]) if result else "failed"


if __name__ == "__main__":
    main()
