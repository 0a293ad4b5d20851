"""``gca embed``: embed a graph with a trained encoder (inductive use)."""

from __future__ import annotations

import argparse
import sys

from ..config import ConfigError
from .common import cache_arguments, graph_arguments, inputs, open_graph
from .shell import import_libraries, warn


def add_parser(sub) -> None:
    emb = sub.add_parser("embed", help="embed a graph with a trained encoder (inductive use)")
    emb.add_argument("--checkpoint", required=True, help="model.pt (or checkpoint.pt) written by gca train")
    graph_arguments(emb)
    cache_arguments(emb)
    emb.add_argument("--device", default="auto", help="auto (CUDA if available), cpu or cuda[:N]")
    emb.add_argument("--out", default="runs/embed", help="output folder for embeddings.npy (default: runs/embed)")
    emb.add_argument("--export", metavar="FILE", help="also write the embeddings keyed by node id (.csv/.parquet)")
    emb.add_argument("--quiet", action="store_true", help="no progress of inference (shown where it takes a few "
                     "seconds)")  # fmt: skip


def run(args: argparse.Namespace) -> int:
    from ..outputs.folder import RunOutputs

    outputs = RunOutputs(args.out, args.export, inputs(args))
    try:
        return _embed_into(outputs, args)
    finally:
        outputs.release()


def _embed_into(outputs, args: argparse.Namespace) -> int:
    outputs.refuse_other_runs(("embeddings.npy",), "gca embed")
    import_libraries()

    from ..run.job import Job
    from ..train.distributed import resolve_device
    from ..train.estimator import GCA

    estimator = GCA.load(args.checkpoint, device=resolve_device(args.device))
    estimator.progress = not args.quiet  # inference by blocks shows its rows where it takes a few seconds
    loaded, store = open_graph(args)
    job = Job(loaded, estimator.config, store=store, store_graph=args.cache)
    graph = job.clean(estimator.config.feature_norm)
    for warning in job.warnings:
        warn(warning)
    for note in store.notes if store is not None else ():
        print(f"gca: {note}", file=sys.stderr)
    if graph.num_features != estimator.in_channels:
        raise ConfigError(
            f"{job.name} has {graph.num_features} features per node but the encoder in {args.checkpoint} was "
            f"trained on {estimator.in_channels}; embed graphs with the same feature columns"
        )
    with outputs:
        staged = outputs.stage_path("embeddings.npy")
        embeddings = estimator.embed(graph, out=staged)  # a large graph's written there block by block
        if staged.is_file():
            outputs.wrote("embeddings.npy")
        outputs.write_embeddings(embeddings.numpy(), job.node_ids)
        written = outputs.commit(owned=("embeddings.npy",))
    print(f"{job.name}: {graph.num_nodes} nodes embedded with {args.checkpoint}; wrote "
          + ", ".join(str(p) for p in written))  # fmt: skip
    return 0
