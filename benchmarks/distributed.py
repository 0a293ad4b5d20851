"""Exact GCA on 1 and on 2 processes with one thread each (torchrun, gloo, CPU): seconds per epoch and exactness.

Both runs train the same model from the same seed on the same graph; the two-process run splits the objective's
similarity blocks between the ranks (gca.train.distributed). Printed: training seconds per epoch of each, the speed-up,
the largest difference of the embeddings relative to their largest entry, and of the per-epoch losses.

    python benchmarks/distributed.py [--epochs 5] [--graph cora|photo] [--data-dir ../shared/data]
                                     [--backend blocked|attention]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import scipy.sparse as sp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))


def write_photo_size_graph(path: Path) -> None:
    """A synthetic graph of Amazon-Photo's size (7,650 nodes, 119,081 edges, 745 sparse binary features)."""
    from epoch import synthetic_graph

    data = synthetic_graph(7650, 119_081, 745, 30)
    row, col = data.edge_index.numpy()
    adj = sp.csr_matrix((np.ones(row.size, dtype=np.float32), (row, col)), shape=(7650, 7650))
    x = data.x.coalesce()
    attr = sp.csr_matrix((x.values().numpy(), x.indices().numpy()), shape=tuple(x.shape))
    np.savez(
        path,
        adj_data=adj.data,
        adj_indices=adj.indices,
        adj_indptr=adj.indptr,
        adj_shape=adj.shape,
        attr_data=attr.data,
        attr_indices=attr.indices,
        attr_indptr=attr.indptr,
        attr_shape=attr.shape,
        labels=data.y.numpy(),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--graph", choices=("cora", "photo"), default="photo")
    parser.add_argument("--data-dir", default=str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--backend", choices=("blocked", "attention"), default="blocked", help="loss_backend")
    args = parser.parse_args()
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    torchrun = Path(sys.executable).with_name("torchrun")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        if args.graph == "photo":
            write_photo_size_graph(tmp / "photo.npz")
            graph = ["--dataset", str(tmp / "photo.npz"), "--set", "hidden=256", "--set", "proj_hidden=256"]
        else:
            graph = ["--dataset", "Cora", "--data-dir", args.data_dir]
        common = [
            "train",
            *graph,
            "--epochs",
            str(args.epochs),
            "--no-eval",
            "--quiet",
            "--set",
            f"loss_backend={args.backend}",
        ]
        runs = {
            "1 process": [sys.executable, "-m", "gca", *common, "--out", str(tmp / "one")],
            "2 processes": [
                str(torchrun),
                "--standalone",
                "--nproc-per-node",
                "2",
                "-m",
                "gca",
                *common,
                "--out",
                str(tmp / "two"),
            ],
        }
        results = {}
        for label, command in runs.items():
            subprocess.run(command, check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            out = tmp / ("one" if label == "1 process" else "two")
            results[label] = (json.loads((out / "results.json").read_text()), np.load(out / "embeddings.npy"))
    (one, z1), (two, z2) = results["1 process"], results["2 processes"]
    machine = platform.processor() or platform.machine()
    print(
        f"machine: {machine}, {os.cpu_count()} cores; graph: {args.graph}; {args.epochs} epochs; 1 thread each; "
        f"loss_backend={args.backend}"
    )
    print("| run | s/epoch | speed-up |")
    print("|---|---|---|")
    print(f"| 1 process | {one['seconds_per_epoch']:.3f} | 1.00× |")
    print(
        f"| 2 processes (torchrun, gloo) | {two['seconds_per_epoch']:.3f} | "
        f"{one['seconds_per_epoch'] / two['seconds_per_epoch']:.2f}× |"
    )
    loss_gap = max(abs(a - b) / abs(a) for a, b in zip(one["losses"], two["losses"], strict=True))
    print(
        f"\nembeddings: max |difference| / max |entry| = {np.abs(z1 - z2).max() / np.abs(z1).max():.2e}; "
        f"losses: largest relative difference {loss_gap:.2e}"
    )


if __name__ == "__main__":
    main()
