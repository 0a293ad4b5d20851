"""What mini-batch GCA costs in accuracy: exact full-graph training against sampled subgraphs.

For each graph, GCA-DE is trained once exactly (``batch_size = 0``) and, per batch size B with the shipped fan-out
(10 per hop), for as many optimiser updates as the exact run takes (its epochs divided by the ⌈N/B⌉ updates of a
mini-batch epoch) and, with ``--same-epochs``, also for the same number of epochs; the settings are otherwise the
same, judged by the usual linear evaluation (20 random 10/10/80 splits). Graphs: Cora (from ``--data-dir``)
and a synthetic planted-class graph
(``benchmarks/synthetic.py``; 20,000 nodes, 100,000 edges, 64 dense features, 10 classes, signal 0.15:
logistic regression on the raw features reaches about 36 %, on two-hop neighbourhood means about 86 %).

    python benchmarks/accuracy_cost.py [--data-dir ../shared/data] [--batch-sizes 256,512,1024]
        [--cora-epochs 500] [--planted-epochs 100] [--same-epochs] [--cora-exact-epochs 3000]
        [--out runs/accuracy_cost.json]

``--cora-exact-epochs`` adds exact Cora runs of those lengths, so that a mini-batch run of ``--same-epochs`` can
be set beside an exact run of the same number of updates (Cora, B = 512: 500 epochs = 3,000 updates). Each
mini-batch row's Δ is taken against the exact run with its number of updates where there is one, else against
the first exact run. Prints a Markdown table; writes every number to ``--out`` as JSON.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from synthetic import planted_graph  # noqa: E402

from gca import GCA, build_config, linear_evaluation, load_dataset, random_splits  # noqa: E402
from gca.datasets import read_npz_graph  # noqa: E402


def one_run(data, name: str, epochs: int, batch_size: int) -> dict:
    config = build_config(name if name == "Cora" else None, overrides={"epochs": epochs, "batch_size": batch_size})
    estimator = GCA(config, device="cpu")
    embeddings = estimator.fit_transform(data)
    result = linear_evaluation(embeddings, data.y, random_splits(len(embeddings), 20, labels=data.y))
    return {
        "batch_size": batch_size,
        "epochs": epochs,
        "mean": result.mean,
        "std": result.std,
        "train_seconds": estimator.train_seconds,
        "final_loss": estimator.losses[-1],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    parser.add_argument("--batch-sizes", default="256,512,1024")
    parser.add_argument("--cora-epochs", type=int, default=500)
    parser.add_argument("--planted-epochs", type=int, default=100)
    parser.add_argument("--planted-nodes", type=int, default=20_000)
    parser.add_argument("--skip", default="", help="comma-separated graphs to skip: cora, planted")
    parser.add_argument(
        "--same-epochs",
        action="store_true",
        help="also train each B for the exact run's epochs (⌈N/B⌉ times its updates)",
    )
    parser.add_argument(
        "--cora-exact-epochs", default="", help="comma-separated lengths of extra exact Cora runs (e.g. 3000)"
    )
    parser.add_argument("--out", type=Path, default=Path("runs/accuracy_cost.json"))
    args = parser.parse_args()
    torch.set_num_threads(max(1, torch.get_num_threads()))
    sizes = [int(b) for b in args.batch_sizes.split(",")]
    graphs = []
    if "cora" not in args.skip:
        graphs.append(("Cora", load_dataset("Cora", data_dir=args.data_dir).data, args.cora_epochs))
    if "planted" not in args.skip:
        planted = Path("/tmp") / f"gca-planted-{args.planted_nodes}.npz"
        if not planted.exists():
            import numpy as np

            np.savez(planted, **planted_graph(args.planted_nodes, args.planted_nodes * 5, 64, 10, signal=0.15))
        graphs.append((f"planted-{args.planted_nodes}", read_npz_graph(planted), args.planted_epochs))
    rows = []
    for name, data, epochs in graphs:
        plan = [(0, epochs)]
        if name == "Cora" and args.cora_exact_epochs:
            plan += [(0, int(e)) for e in args.cora_exact_epochs.split(",")]
        for batch_size in sizes:
            steps = math.ceil(data.num_nodes / batch_size)  # updates per epoch; the exact objective takes one
            if args.same_epochs:
                plan.append((batch_size, epochs))
            plan.append((batch_size, max(1, round(epochs / steps))))
        for batch_size, run_epochs in plan:
            start = time.perf_counter()
            row = {"graph": name, **one_run(data, name, run_epochs, batch_size)}
            row["updates"] = run_epochs * (math.ceil(data.num_nodes / batch_size) if batch_size else 1)
            row["wall_seconds"] = time.perf_counter() - start
            rows.append(row)
            label = "exact" if batch_size == 0 else f"B = {batch_size}"
            print(
                f"{name:>14} {label:>10} {run_epochs:>4} epochs: {row['mean']:.2f} ± {row['std']:.2f}  "
                f"({row['train_seconds']:.0f} s)",
                flush=True,
            )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"machine": platform.processor() or platform.machine(), "rows": rows}, indent=1))
    print("\n| graph | training | epochs | updates | accuracy (%) | Δ vs exact (its epochs) | training time |")
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        exacts = [r for r in rows if r["graph"] == row["graph"] and r["batch_size"] == 0]
        exact = next((r for r in exacts if r["updates"] == row["updates"]), exacts[0])
        label = "exact (full graph)" if row["batch_size"] == 0 else f"mini-batch B = {row['batch_size']}"
        delta = "" if row["batch_size"] == 0 else f"{row['mean'] - exact['mean']:+.2f} (vs {exact['epochs']})"
        print(
            f"| {row['graph']} | {label} | {row['epochs']} | {row['updates']:,} | {row['mean']:.2f} ± "
            f"{row['std']:.2f} | {delta} | {row['train_seconds']:.0f} s |"
        )


if __name__ == "__main__":
    main()
