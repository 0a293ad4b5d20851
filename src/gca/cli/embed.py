"""``gca embed``: embed a graph with a trained encoder (inductive use)."""

from __future__ import annotations

import argparse

from ..config import ConfigError
from ..stderr import say, warn
from .common import cache_arguments, check_graph_arguments, graph_arguments, graph_request, inputs, started
from .guard import import_libraries, imports_held, interrupted

#: The names gca embed writes in its output folder: the embeddings and their record.
EMBED_FILES = ("embeddings.npy", "results.json")


def add_parser(sub) -> None:
    emb = sub.add_parser("embed", help="embed a graph with a trained encoder (inductive use)")
    emb.add_argument("--checkpoint", required=True, help="model.pt (or checkpoint.pt) written by gca train")
    graph_arguments(emb)
    cache_arguments(emb)
    emb.add_argument("--device", default="auto", help="auto (CUDA if available), cpu or cuda[:N]")
    emb.add_argument(
        "--out", default="runs/embed", help="output folder for embeddings.npy and results.json (default: runs/embed)"
    )
    emb.add_argument("--export", metavar="FILE", help="also write the embeddings keyed by node id (.csv/.parquet)")
    emb.add_argument(
        "--quiet", action="store_true", help="no progress of inference (shown where it takes a few seconds)"
    )


def run(args: argparse.Namespace) -> int:
    with imports_held():
        from ..outputs.folder import RunOutputs

    check_graph_arguments(args)
    if args.dataset is None and not args.edges:  # the training default (Karate) is no graph to embed with a model
        raise ConfigError(
            "gca embed needs the graph to embed: give --dataset NAME|PATH or --edges FILE --features "
            "FILE (with the feature columns the model was trained on)"
        )
    outputs = RunOutputs(args.out, args.export, inputs(args), progress=not args.quiet)
    try:
        return _embed_into(outputs, args)
    except KeyboardInterrupt:
        outputs.release()  # first: a folder this run made and left empty is removed
        interrupted(outputs.after_stop())
        return 130
    finally:
        outputs.release()


def _embed_into(outputs, args: argparse.Namespace) -> int:
    outputs.refuse_other_runs(EMBED_FILES, "gca embed")
    import_libraries()

    from ..io import json_bytes
    from ..provenance import file_record
    from ..run.inputs import command_provenance, open_graph
    from ..run.job import Job
    from ..train.distributed import resolve_device
    from ..train.estimator import GCA

    estimator = GCA.load(args.checkpoint, device=resolve_device(args.device))
    checkpoint = file_record(args.checkpoint)  # the file just read and checked
    # sparse features by id are read into the columns the model was trained on: by name or number
    columns = (estimator.feature_names_in_ or estimator.in_channels) if args.edges else None
    estimator.progress = not args.quiet  # inference by blocks shows its rows where it takes a few seconds
    graph_asked = graph_request(args, feature_names=columns)
    read = open_graph(graph_asked, record=True)  # each input's digest taken as it is read, for results.json
    loaded, store = read.loaded, read.store
    job = Job(loaded, estimator.config, store=store, store_graph=args.cache)
    graph = job.clean(estimator.config.feature_norm)
    for warning in job.warnings:
        warn(warning)
    for note in store.notes if store is not None else ():
        say(f"gca: {note}")
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
        record = {
            "dataset": job.name,
            "num_nodes": graph.num_nodes,
            "dimensions": int(embeddings.shape[1]),
            "device": str(estimator.device),
            # the model used, and where it came from as its file records it (None: the file records none)
            "checkpoint": {**checkpoint, "provenance": estimator.provenance},
            "provenance": command_provenance(graph_asked, estimator.device, read, (checkpoint,), **started(args)),
        }
        outputs.write("results.json", lambda f: f.write(json_bytes(record)))
        written = outputs.commit(owned=EMBED_FILES)
    print(
        f"{job.name}: {graph.num_nodes} nodes embedded with {args.checkpoint}; wrote "
        + ", ".join(str(p) for p in written)
    )
    return 0
