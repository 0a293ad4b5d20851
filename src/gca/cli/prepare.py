"""``gca prepare``: clean a graph once and store its prepared form on disk (:mod:`gca.run.store`), so later runs —
and every process of a torchrun job — open it instead of reading and cleaning the input again."""

from __future__ import annotations

import argparse

from ..config import ConfigError, build_config, parse_overrides
from ..errors import UserError
from ..stderr import say, warn
from .common import check_graph_arguments, graph_arguments, graph_source, load_graph
from .guard import import_libraries


def add_parser(sub) -> None:
    prep = sub.add_parser("prepare", help="clean a graph once and store it on disk for later runs (large graphs)")
    graph_arguments(prep)
    prep.add_argument(
        "--config",
        help="TOML or JSON file of the hyperparameters the later runs use: centrality and the views' "
        "probabilities are stored for them (runs with other settings compute and add their own)",
    )
    prep.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override one hyperparameter (repeatable); with batch_size the sampler's unit ids are stored too",
    )
    prep.add_argument("--centrality", help="node centrality φ the later runs use (default: degree)")
    prep.add_argument("--quiet", action="store_true", help="no progress of the steps that take a few seconds")


def run(args: argparse.Namespace) -> int:
    overrides = parse_overrides(args.set)
    if args.centrality is not None:
        overrides["centrality"] = args.centrality
    build_config(None, args.config, overrides)  # checked before any data is read
    check_graph_arguments(args)
    import_libraries()
    source = graph_source(args)
    if source is None and (args.edges or args.dataset):
        load_graph(args)  # files that are missing or unreadable, an unknown name: said as any command says it
        source = graph_source(args)  # a named dataset it has just downloaded
    if source is None:
        raise ConfigError(
            "gca prepare stores a graph read from disk: give --dataset with an .npz file, a dataset "
            "folder or a named dataset present in --data-dir, or --edges/--features"
        )

    from ..run.job import Job
    from ..run.store import PreparedStore
    from ..train.estimator import GCA

    store = PreparedStore(source, progress=not args.quiet)
    found = store.usable()
    job = Job.open(store.loaded() if found else load_graph(args), args.config, overrides, store=store, store_graph=True)
    estimator = GCA(job.config, device="cpu", progress=not args.quiet)
    job.prepare(estimator, require_edges=False)
    for warning in job.warnings:
        warn(warning)
    for note in store.notes:
        say(f"gca: {note}")
    if not job.stored:
        raise UserError(f"the prepared graph of {job.name} could not be stored in {store.folder}; see the line above")
    graph = job.graph
    assert graph is not None
    kept = sorted(p.stem for p in store.folder.glob("*.npy") if p.stem.startswith(("centrality", "views", "sampler")))
    print(
        f"{job.name}: {graph.num_nodes} nodes, {graph.edge_index.shape[1]} directed edges "
        f"({'already prepared' if found else 'prepared'} in {job.prepared.seconds:.1f} s); {store.folder} holds "
        f"{store.size() / 1e9:.2f} GB" + (f", with {', '.join(kept)}" if kept else "")
    )
    return 0
