"""Several processes through torchrun (gloo, CPU) against one: each phase's seconds, and whether the results agree.

Exact (default): ``--epochs`` of Cora or a random graph of Amazon-Photo's size; prints seconds per epoch, speed-up
and the largest differences of embeddings and losses. ``--size``: 50 mini-batch steps on a planted graph of an OGB
size, P one-thread processes against one of P threads; prints each run's phase seconds and peak RSS, and whether
one process embeds the same with the P processes' model.

    python benchmarks/distributed.py [--epochs 5] [--graph photo|cora] [--data-dir DATA] [--backend blocked|attention]
    python benchmarks/distributed.py --size products [--processes 2] [--dir /tmp/gca-bench]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from harness import DATA_DIR, GCA, checked, machine, planted, random_graph, table

CSR = ("data", "indices", "indptr", "shape")
MINI = "--epochs 1 --no-eval --quiet --device cpu --set hidden=128 --set batch_size=1024 --set fanout=10,10".split()


def torchrun(processes: int) -> list[str]:
    script = Path(sys.executable).with_name("torchrun")
    launcher = [str(script)] if script.exists() else [sys.executable, "-m", "torch.distributed.run"]
    return [*launcher, "--standalone", "--nproc-per-node", str(processes), "-m", "gca"]


def threads(count: int) -> dict:
    """The environment of a process of ``count`` threads."""
    return {**os.environ, "OMP_NUM_THREADS": str(count)}


def exact(args: argparse.Namespace, tmp: Path) -> None:
    if args.graph == "photo":  # written as an .npz graph file of sparse features
        data = random_graph(7650, 119_081, 745)
        row, col = data.edge_index.numpy()
        x = data.x.coalesce()
        attr = sp.csr_matrix((x.values().numpy(), x.indices().numpy()), shape=tuple(x.shape))
        adj = sp.csr_matrix((np.ones(row.size, dtype=np.float32), (row, col)), shape=(7650, 7650))
        arrays = {f"{name}_{k}": getattr(m, k) for name, m in (("adj", adj), ("attr", attr)) for k in CSR}
        np.savez(tmp / "photo.npz", **arrays, labels=data.y.numpy())
        graph = ["--dataset", str(tmp / "photo.npz"), "--set", "hidden=256", "--set", "proj_hidden=256"]
    else:
        graph = ["--dataset", "Cora", "--data-dir", args.data_dir]
    common = ["train", *graph, "--epochs", str(args.epochs), "--no-eval", "--quiet"]
    common += ["--set", f"loss_backend={args.backend}"]
    checked([*GCA, *common, "--out", str(tmp / "one")], threads(1))
    checked([*torchrun(args.processes), *common, "--out", str(tmp / "many")], threads(1))
    (one, z1), (many, z2) = [
        (json.loads((tmp / out / "results.json").read_text()), np.load(tmp / out / "embeddings.npy"))
        for out in ("one", "many")
    ]
    print(f"{machine()}; graph: {args.graph}; {args.epochs} epochs; 1 thread each; loss_backend={args.backend}")
    row = table("run | s/epoch | speed-up")
    row(f"1 process | {one['seconds_per_epoch']:.3f} | 1.00×")
    speedup = one["seconds_per_epoch"] / many["seconds_per_epoch"]
    row(f"{args.processes} processes (torchrun, gloo) | {many['seconds_per_epoch']:.3f} | {speedup:.2f}×")
    loss_gap = max(abs(a - b) / abs(a) for a, b in zip(one["losses"], many["losses"], strict=True))
    print(
        f"\nembeddings: max |difference| / max |entry| = {np.abs(z1 - z2).max() / np.abs(z1).max():.2e}; "
        f"losses: largest relative difference {loss_gap:.2e}"
    )


def minibatch(args: argparse.Namespace) -> None:
    args.dir.mkdir(parents=True, exist_ok=True)
    graph, p = planted(args.size, args.dir), args.processes
    os.environ["GCA_CACHE_DIR"] = str(args.dir / "cache")
    print(f"{machine()}; {args.size} size, {p} processes")
    start = time.perf_counter()
    prepare = [*GCA, "prepare", "--dataset", str(graph), "--set", "batch_size=1024", "--set", "hidden=128"]
    subprocess.run(prepare, check=True)
    print(f"gca prepare: {time.perf_counter() - start:.1f} s (a prepared graph already there is only checked)")
    settings = ["train", "--dataset", str(graph), *MINI, "--set", "steps_per_epoch=50"]
    row = table(
        "run | prepared graph | prepare s | training s (50 steps) | inference s | inference processes | wall s | "
        "peak RSS (largest process)"
    )
    for label, command, count, out in (
        (f"torchrun, {p} processes × 1 thread", torchrun(p), 1, args.dir / f"torchrun-{p}"),
        (f"one process × {p} threads", GCA, p, args.dir / "torchrun-1"),
    ):
        shutil.rmtree(out, ignore_errors=True)
        result = checked([*command, *settings, "--out", str(out)], threads(count))
        r = json.loads((out / "results.json").read_text())
        opened = "opened" if (r.get("prepared_graph") or {}).get("opened") else "not used"
        row(
            f"{label} | {opened} | {r['prepare_seconds']:.1f} | {r['train_seconds']:.1f} | {r['embed_seconds']:.1f} | "
            f"{r['inference_processes']} | {result['wall']:.1f} | {result['peak_rss_mb'] * 2**20 / 1e9:.2f} GB"
        )
    again = args.dir / "torchrun-embed"
    shutil.rmtree(again, ignore_errors=True)
    model = str(args.dir / f"torchrun-{p}" / "model.pt")
    embed = checked([*GCA, "embed", "--checkpoint", model, "--dataset", str(graph), "--out", str(again)], threads(p))
    shared = np.load(args.dir / f"torchrun-{p}" / "embeddings.npy", mmap_mode="r")
    alone = np.load(again / "embeddings.npy", mmap_mode="r")
    worst, equal = 0.0, True
    for start in range(0, shared.shape[0], 1 << 18):
        a, b = np.asarray(shared[start : start + (1 << 18)]), np.asarray(alone[start : start + (1 << 18)])
        equal = equal and np.array_equal(a, b)
        worst = max(worst, float(np.abs(a - b).max()))
    print(
        f"embeddings of the {p} processes against one process embedding their model (gca embed, {embed['wall']:.1f} "
        f"s wall): {'equal bit for bit' if equal else f'largest difference {worst:.3g}'} over {shared.shape[0]:,} "
        f"nodes × {shared.shape[1]}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--graph", choices=("cora", "photo"), default="photo")
    parser.add_argument("--data-dir", default=DATA_DIR)
    parser.add_argument("--backend", choices=("blocked", "attention"), default="blocked", help="loss_backend")
    parser.add_argument("--size", choices=("arxiv", "products", "tenth"), help="instead: mini-batch at this size")
    parser.add_argument("--dir", type=Path, default=Path("/tmp/gca-bench"), help="with --size: graphs and runs")
    args = parser.parse_args()
    if args.size:
        return minibatch(args)
    with tempfile.TemporaryDirectory() as tmp:
        exact(args, Path(tmp))


if __name__ == "__main__":
    main()
