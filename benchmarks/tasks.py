"""The evaluations and encoders beyond node classification on random splits, measured on real graphs.

    python benchmarks/tasks.py --data-dir ../shared/data --datasets Cora Amazon-Photo --out runs/tasks \
        [--sections link cluster public encoders] [--seeds 3] [--epochs N] [--encoders gcn sage ...] [--set K=V]

Sections (each prints a Markdown table and adds to OUT/tasks.json):

* ``link`` — link prediction on the same held-out edges (5 % validation, 10 % test, seed i for hold-out i): GCA-DE
  (the dataset's shipped setting) against PyTorch Geometric's GAE and VGAE, every model trained on the edges left;
  ROC-AUC and AP of the cosine and of the Hadamard logistic regression (gca.evaluate.linkpred), mean ± std over seeds.
* ``cluster`` — k-means NMI and ARI (10 k-means seeds) of GCA-DE, DGI and the raw features.
* ``public`` — accuracy on the dataset's public split (Cora: Planetoid's 140/500/1,000), GCA-DE trained with seeds
  0 … seeds − 1, under the sklearn and the authors' protocol.
* ``encoders`` — GCN, GAT, GraphSAGE (both aggregators) and GIN encoders in the shipped setting (``--encoders``:
  some of them): accuracy, macro-F1 and validation accuracy over 20 random splits and
  seconds per training epoch.

``--epochs`` caps GCA's epochs (the shipped value otherwise; say so when quoting a capped run).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch
from torch_geometric.data import Data

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from gca import GCA  # noqa: E402
from gca.evaluate.classification import evaluate_embeddings  # noqa: E402
from gca.evaluate.clustering import cluster_embeddings  # noqa: E402
from gca.evaluate.linkpred import hold_out_edges, score_links  # noqa: E402
from gca.evaluate.splits import SplitSetting  # noqa: E402
from gca.reproduce.baselines import autoencoder_embeddings, dgi_embeddings  # noqa: E402
from gca.reproduce.training import row_normalized_features  # noqa: E402
from gca.run.job import Job  # noqa: E402
from gca.train.loop import CollapseError  # noqa: E402


def _config(job: Job, epochs: int | None, **changes):
    config = job.config.replace(**changes)
    return config.replace(epochs=min(config.epochs, epochs)) if epochs else config


def _data(job: Job) -> Data:
    """The job's cleaned graph as a PyG ``Data`` (a prepared job keeps its edges in ``job.graph`` alone)."""
    graph = job.graph
    return Data(x=job.loaded.data.x, edge_index=graph.edge_index.long(), y=job.labels, num_nodes=graph.num_nodes)


def _pm(values) -> str:
    return f"{np.mean(values):.2f} ± {np.std(values):.2f}"


def link(job: Job, seeds: int, epochs: int | None, device: str) -> dict:
    graph = job.graph
    scores: dict[str, list] = {"GCA-DE": [], "GAE": [], "VGAE": []}
    for seed in range(seeds):
        held = hold_out_edges(graph.edge_index, graph.num_nodes, seed=seed)
        training = held.training_data(_data(job))
        gca = GCA(_config(job, epochs, seed=seed), device=device).fit_transform(training)
        scores["GCA-DE"].append(score_links(gca, held, seed))
        for name, variational in (("GAE", False), ("VGAE", True)):
            z = autoencoder_embeddings(training, seed, False, torch.device(device), variational).embeddings
            scores[name].append(score_links(z.cpu(), held, seed))
    print(f"\n{job.name}, link prediction ({seeds} hold-outs): test ROC-AUC / AP in %")
    print("| method | cosine ROC-AUC | cosine AP | Hadamard LR ROC-AUC | Hadamard LR AP |\n|---|---|---|---|---|")
    for name, runs in scores.items():
        cells = [_pm([r[s][m] for r in runs]) for s in ("cosine", "hadamard") for m in ("auc", "ap")]
        print(f"| {name} | " + " | ".join(cells) + " |")
    return scores


def cluster(job: Job, seeds: int, epochs: int | None, device: str) -> dict:
    data, labels = _data(job), job.labels
    results = {
        "GCA-DE": cluster_embeddings(GCA(_config(job, epochs), device=device).fit_transform(data), labels).to_dict(),
        "DGI": cluster_embeddings(
            dgi_embeddings(data, 0, False, torch.device(device)).embeddings.cpu(), labels
        ).to_dict(),
        "Raw features": cluster_embeddings(row_normalized_features(data, torch.device("cpu")), labels).to_dict(),
    }
    print(f"\n{job.name}, k-means (k = {results['GCA-DE']['clusters']}, 10 seeds): NMI / ARI in %")
    print("| method | NMI | ARI |\n|---|---|---|")
    for name, r in results.items():
        print(f"| {name} | {_pm(r['nmi']['runs'])} | {_pm(r['ari']['runs'])} |")
    return results


def public(job: Job, seeds: int, epochs: int | None, device: str) -> dict:
    split = SplitSetting("public").draw(job.labels, 0, public=job.loaded.public, dataset=job.name)
    scores: dict[str, list] = {"sklearn": [], "authors": []}
    for seed in range(seeds):
        z = GCA(_config(job, epochs, seed=seed), device=device).fit_transform(_data(job))
        for protocol in scores:
            scores[protocol].append(evaluate_embeddings(z, job.labels, split, protocol).mean)
    print(f"\n{job.name}, public split {[len(p) for p in split[0]]}: GCA-DE accuracy over {seeds} trainings")
    for protocol, values in scores.items():
        print(f"  {protocol}: {_pm(values)} %")
    return scores


#: The encoders compared (config changes each), GraphSAGE with both of its aggregators.
ENCODERS = {
    "gcn": {"encoder": "gcn"},
    "sage": {"encoder": "sage"},
    "sage (mean)": {"encoder": "sage", "sage_aggregator": "mean"},
    "gat": {"encoder": "gat"},
    "gin": {"encoder": "gin"},
}


def encoders(job: Job, seeds: int, epochs: int | None, device: str, names: list[str] | None = None) -> dict:
    splits = SplitSetting("random", 20).draw(job.labels, job.config.seed)
    results = {}
    print(f"\n{job.name}, encoders (20 random 10/10/80 splits)")
    print("| encoder | accuracy (%) | macro-F1 (%) | validation (%) | s/epoch |\n|---|---|---|---|---|")
    for name, changes in ENCODERS.items():
        if names and name not in names:
            continue
        estimator = GCA(_config(job, epochs, **changes), device=device)
        try:
            z = estimator.fit_transform(job.graph)
        except CollapseError as exc:  # a row that says so, and the other encoders still run
            results[name] = {"collapsed": str(exc)}
            print(f"| {name} | collapsed: {exc} | | | |", flush=True)
            continue
        accuracy = evaluate_embeddings(z, job.labels, splits)
        per_epoch = estimator.train_seconds / max(estimator.config.epochs, 1)
        results[name] = {"accuracy": accuracy.to_dict(), "seconds_per_epoch": per_epoch}
        print(
            f"| {name} | {accuracy.mean:.2f} ± {accuracy.std:.2f} | {np.mean(accuracy.macro_f1):.2f} | "
            f"{np.mean(accuracy.val_accuracies):.2f} | {per_epoch:.3f} |",
            flush=True,
        )
    return results


SECTIONS = {"link": link, "cluster": cluster, "public": public, "encoders": encoders}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", default=str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--datasets", nargs="+", default=["Cora"])
    parser.add_argument("--sections", nargs="+", choices=list(SECTIONS), default=list(SECTIONS))
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--epochs", type=int, help="cap on GCA's epochs (default: the shipped setting's)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--encoders", nargs="+", choices=list(ENCODERS), help="encoders section: these only")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="change the shipped setting")
    parser.add_argument("--out", default="runs/tasks")
    args = parser.parse_args()
    from gca.config import parse_overrides
    from gca.datasets import load_dataset

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    record: dict = {
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "epochs_cap": args.epochs,
        "set": args.set,
    }
    for name in args.datasets:
        job = Job.open(load_dataset(name, data_dir=args.data_dir), overrides=parse_overrides(args.set))
        job.prepare(GCA(job.config, device=args.device))
        for section in args.sections:
            if section == "public" and not job.loaded.public:
                continue
            start = time.perf_counter()
            extra = {"names": args.encoders} if section == "encoders" else {}
            record[f"{job.name}/{section}"] = SECTIONS[section](job, args.seeds, args.epochs, args.device, **extra)
            print(f"({section} on {job.name}: {time.perf_counter() - start:.0f} s)", flush=True)
            (out / "tasks.json").write_text(json.dumps(record, indent=1, default=float))


if __name__ == "__main__":
    main()
