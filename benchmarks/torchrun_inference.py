"""Several processes on one machine through torchrun: the prepared graph opened by every process, data-parallel
mini-batch training, inference shared by the processes — each phase's seconds against one process's, and the
embeddings the processes wrote against one process embedding the same model.

    python benchmarks/torchrun_inference.py [--dir /tmp/gca-bench] [--size products] [--processes 2]

Steps, each a command of its own, one at a time (``GCA_CACHE_DIR=DIR/cache``):

1. ``gca prepare --dataset FILE`` — the prepared graph, written once;
2. ``torchrun --standalone --nproc-per-node P -m gca train --dataset FILE …`` (P processes, one thread each:
   torchrun's default) — ``results.json`` gives its prepare, training and inference seconds;
3. ``gca train`` with the same settings in one process (P threads) — the same phases for one process;
4. ``gca embed --checkpoint`` the model the P processes trained, in one process — its embeddings are compared with
   the P processes' ``embeddings.npy`` (data-parallel training makes another model than step 3's, so the
   comparison is of inference alone).

Runs are ``--epochs 1 --no-eval --set hidden=128 --set batch_size=1024 --set fanout=10,10 --set
steps_per_epoch=50``, as ``benchmarks/minibatch.py`` runs products size. Peak RSS is the largest process's.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from minibatch import GCA, ensure_graph, measured_run  # noqa: E402

SETTINGS = [
    "--epochs",
    "1",
    "--no-eval",
    "--quiet",
    "--device",
    "cpu",
    "--set",
    "hidden=128",
    "--set",
    "batch_size=1024",
    "--set",
    "fanout=10,10",
    "--set",
    "steps_per_epoch=50",
]


def torchrun() -> list[str]:
    script = Path(sys.executable).with_name("torchrun")
    return [str(script)] if script.exists() else [sys.executable, "-m", "torch.distributed.run"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=Path("/tmp/gca-bench"))
    parser.add_argument("--size", default="products", choices=("arxiv", "products", "tenth"))
    parser.add_argument("--processes", type=int, default=2)
    args = parser.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    graph = ensure_graph(args.size, args.dir)
    os.environ["GCA_CACHE_DIR"] = str(args.dir / "cache")
    p = args.processes
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs; {args.size} size, {p} processes")

    start = time.perf_counter()
    subprocess.run(
        [*GCA, "prepare", "--dataset", str(graph), "--set", "batch_size=1024", "--set", "hidden=128"], check=True
    )
    print(f"gca prepare: {time.perf_counter() - start:.1f} s (a prepared graph already there is only checked)")

    rows = []
    for label, command, out in (
        (
            f"torchrun, {p} processes × 1 thread",
            [*torchrun(), "--standalone", "--nproc-per-node", str(p), "-m", "gca"],
            args.dir / f"torchrun-{p}",
        ),
        (f"one process × {p} threads", [*GCA], args.dir / "torchrun-1"),
    ):
        shutil.rmtree(out, ignore_errors=True)
        env_threads = {"OMP_NUM_THREADS": "1"} if "torchrun" in label else {"OMP_NUM_THREADS": str(p)}
        os.environ.update(env_threads)
        samples: dict = {}
        wall, peak = measured_run([*command, "train", "--dataset", str(graph), *SETTINGS, "--out", str(out)], samples)
        record = json.loads((out / "results.json").read_text())
        rows.append((label, wall, peak, record))
    os.environ["OMP_NUM_THREADS"] = str(p)
    again = args.dir / "torchrun-embed"
    shutil.rmtree(again, ignore_errors=True)
    start = time.perf_counter()
    subprocess.run(
        [
            *GCA,
            "embed",
            "--checkpoint",
            str(args.dir / f"torchrun-{p}" / "model.pt"),
            "--dataset",
            str(graph),
            "--out",
            str(again),
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    embed_wall = time.perf_counter() - start

    print(
        "| run | prepared graph | prepare s | training s (50 steps) | inference s | inference processes | wall s "
        "| peak RSS (largest process) |\n|---|---|---|---|---|---|---|---|"
    )
    for label, wall, peak, record in rows:
        opened = (record.get("prepared_graph") or {}).get("opened")
        print(
            f"| {label} | {'opened' if opened else 'not used'} | {record['prepare_seconds']:.1f} | "
            f"{record['train_seconds']:.1f} | {record['embed_seconds']:.1f} | {record['inference_processes']} | "
            f"{wall:.1f} | {peak * 2**20 / 1e9:.2f} GB |"
        )
    shared = np.load(args.dir / f"torchrun-{p}" / "embeddings.npy", mmap_mode="r")
    alone = np.load(again / "embeddings.npy", mmap_mode="r")
    worst, equal = 0.0, True
    for start in range(0, shared.shape[0], 1 << 18):
        a, b = np.asarray(shared[start : start + (1 << 18)]), np.asarray(alone[start : start + (1 << 18)])
        equal = equal and np.array_equal(a, b)
        worst = max(worst, float(np.abs(a - b).max()))
    print(
        f"embeddings of the {p} processes against one process embedding their model (gca embed, {embed_wall:.1f} s "
        f"wall): {'equal bit for bit' if equal else f'largest difference {worst:.3g}'} over {shared.shape[0]:,} "
        f"nodes × {shared.shape[1]}"
    )


if __name__ == "__main__":
    main()
