"""Evaluations beyond node classification on random splits, per section (a Markdown table each, all in OUT/tasks.json):
``link``: GCA-DE, GAE and VGAE's ROC-AUC and AP on held-out edges; ``cluster``: k-means NMI and ARI; ``public``:
accuracy on the public split, both protocols; ``encoders``: accuracy, macro-F1, validation and s/epoch per encoder.

    python benchmarks/tasks.py --data-dir DATA --datasets Cora Amazon-Photo --out runs/tasks [--sections link ...]
"""

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch
from harness import DATA_DIR, machine, pm, table
from torch_geometric.data import Data

from gca import GCA, evaluate_embeddings, load_dataset
from gca.config import parse_overrides
from gca.evaluate.clustering import cluster_embeddings
from gca.evaluate.linkpred import hold_out_edges, score_links
from gca.evaluate.splits import SplitSetting
from gca.reproduce.baselines import autoencoder_embeddings, dgi_embeddings
from gca.reproduce.training import row_normalized_features
from gca.run.job import Job
from gca.train.loop import CollapseError


def _config(job: Job, epochs: int | None, **changes):
    config = job.config.replace(**changes)
    return config.replace(epochs=min(config.epochs, epochs)) if epochs else config


def _data(job: Job) -> Data:
    """The job's cleaned graph as a PyG ``Data`` (a prepared job keeps its edges in ``job.graph`` alone)."""
    graph = job.graph
    return Data(x=job.loaded.data.x, edge_index=graph.edge_index.long(), y=job.labels, num_nodes=graph.num_nodes)


def link(job: Job, seeds: int, epochs: int | None, device: str) -> dict:
    scores: dict[str, list] = {"GCA-DE": [], "GAE": [], "VGAE": []}
    for seed in range(seeds):
        held = hold_out_edges(job.graph.edge_index, job.graph.num_nodes, seed=seed)
        training = held.training_data(_data(job))
        gca = GCA(_config(job, epochs, seed=seed), device=device).fit_transform(training)
        scores["GCA-DE"].append(score_links(gca, held, seed))
        for name, variational in (("GAE", False), ("VGAE", True)):
            z = autoencoder_embeddings(training, seed, False, torch.device(device), variational).embeddings
            scores[name].append(score_links(z.cpu(), held, seed))
    print(f"\n{job.name}, link prediction ({seeds} hold-outs): test ROC-AUC / AP in %")
    row = table("method | cosine ROC-AUC | cosine AP | Hadamard LR ROC-AUC | Hadamard LR AP")
    for name, runs in scores.items():
        row(" | ".join([name, *(pm([r[s][m] for r in runs]) for s in ("cosine", "hadamard") for m in ("auc", "ap"))]))
    return scores


def cluster(job: Job, seeds: int, epochs: int | None, device: str) -> dict:
    data, labels = _data(job), job.labels
    embeddings = {
        "GCA-DE": GCA(_config(job, epochs), device=device).fit_transform(data),
        "DGI": dgi_embeddings(data, 0, False, torch.device(device)).embeddings.cpu(),
        "Raw features": row_normalized_features(data, torch.device("cpu")),
    }
    results = {name: cluster_embeddings(z, labels).to_dict() for name, z in embeddings.items()}
    print(f"\n{job.name}, k-means (k = {results['GCA-DE']['clusters']}, 10 seeds): NMI / ARI in %")
    row = table("method | NMI | ARI")
    for name, r in results.items():
        row(f"{name} | {pm(r['nmi']['runs'])} | {pm(r['ari']['runs'])}")
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
        print(f"  {protocol}: {pm(values)} %")
    return scores


#: The encoders compared: name (its first word the ``encoder``) → its other config changes.
ENCODERS = {"gcn": {}, "sage": {}, "sage (mean)": {"sage_aggregator": "mean"}, "gat": {}, "gin": {}}


def encoders(job: Job, seeds: int, epochs: int | None, device: str, names: list[str] | None = None) -> dict:
    splits = SplitSetting("random", 20).draw(job.labels, job.config.seed)
    results = {}
    print(f"\n{job.name}, encoders (20 random 10/10/80 splits)")
    row = table("encoder | accuracy (%) | macro-F1 (%) | validation (%) | s/epoch")
    for name in (name for name in ENCODERS if not names or name in names):
        estimator = GCA(_config(job, epochs, encoder=name.split()[0], **ENCODERS[name]), device=device)
        try:
            z = estimator.fit_transform(job.graph)
        except CollapseError as exc:  # a row that says so, and the other encoders still run
            results[name] = {"collapsed": str(exc)}
            row(f"{name} | collapsed: {exc} | | |")
            continue
        accuracy = evaluate_embeddings(z, job.labels, splits)
        per_epoch = estimator.train_seconds / max(estimator.config.epochs, 1)
        results[name] = {"accuracy": accuracy.to_dict(), "seconds_per_epoch": per_epoch}
        f1, validation = np.mean(accuracy.macro_f1), np.mean(accuracy.val_accuracies)
        row(f"{name} | {accuracy.mean:.2f} ± {accuracy.std:.2f} | {f1:.2f} | {validation:.2f} | {per_epoch:.3f}")
    return results


SECTIONS = {"link": link, "cluster": cluster, "public": public, "encoders": encoders}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default=DATA_DIR)
    parser.add_argument("--datasets", nargs="+", default=["Cora"])
    parser.add_argument("--sections", nargs="+", choices=list(SECTIONS), default=list(SECTIONS))
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--epochs", type=int, help="cap on GCA's epochs (default: the shipped setting's)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--encoders", nargs="+", choices=list(ENCODERS), help="encoders section: these only")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="change the shipped setting")
    parser.add_argument("--out", default="runs/tasks")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    record: dict = {"machine": machine(args.device), "epochs_cap": args.epochs, "set": args.set}
    print(record["machine"])
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
