"""One mini-batch update on the CPU, broken into its phases: where the time of a ``batch_size`` step goes.

The dataset is loaded with gca's loaders and trained with its shipped Table 5 config
(``gca.config.build_config(name)``) and ``batch_size`` anchors per step (fan-outs 10, 10 by default). The batch
source, the model and the optimiser are built as :meth:`gca.GCA.fit` builds them; then each update runs the
steps of :func:`gca.train.loop.train_step` written out one by one, each phase timed with ``time.perf_counter``:

* ``sample``       — the L-hop subgraph around the step's anchors (:meth:`NeighborSampler.sample`);
* ``batch``        — its batch: the sampled rows of the features, each view's units (:meth:`NeighborBatches.batch`);
* ``edges``        — both views' edge dropping (:meth:`SubgraphView.sample_edges`);
* ``operators``    — both views' normalised adjacency, one block per layer
  (:func:`gca.graph.sparse.layered_normalized_adjacency`);
* ``mask + X·W``   — both views' feature mask and the first layer's X (diag(m) W₁);
* ``layer 1 rest`` — the first layer's aggregation M (X W₁) + b and its activation (or (M X) W₁ where the layer
  aggregates first);
* ``layers 2..L``  — the remaining layers, down to the anchors' rows;
* ``projection``   — g(·) of both views' anchor embeddings;
* ``objective``    — the objective's forward pass;
* ``backward``     — ``loss.backward()`` (every phase's gradient);
* ``optimiser``    — ``zero_grad`` and Adam's step.

``--compare`` alternates, update by update in one process, the update as it ran before the cuts measured in
docs/benchmarks.md (the sampled sparse features' transpose by sorting; the first layer multiplying every entry of
a sparse X and every row of a dense one) with the library's, and prints both tables and the ratio of their medians.

The first update's loss is checked against :func:`gca.train.loop.train_step`'s, each run on its own copy of the
model, optimiser and random state (both ways of the first layer), so the written-out step is the library's step.
``--torch-profile`` adds PyTorch's operator table of one more update (where the backward pass's time goes).

    python benchmarks/update_profile.py --dataset Amazon-Photo --data-dir /tmp/gdata [--updates 30] [--warmup 3]
                                        [--compare] [--batch-size 1024] [--fanout 10,10] [--threads 1]
                                        [--torch-profile]
"""

from __future__ import annotations

import argparse
import copy
import datetime
import platform
import statistics
import time
from collections import defaultdict

import torch

import gca.graph.sparse as sparse
from gca.augment.prepared import prepare
from gca.config import build_config
from gca.datasets.registry import load_dataset
from gca.graph.sparse import layered_normalized_adjacency, normalized_adjacency
from gca.nn.gcn import _aggregate_first
from gca.nn.model import GCAModel
from gca.precision import update_precision
from gca.train.batches import batch_source
from gca.train.loop import train_step

PHASES = (
    "sample",
    "batch",
    "edges",
    "operators",
    "mask + X·W",
    "layer 1 rest",
    "layers 2..L",
    "projection",
    "objective",
    "backward",
    "optimiser",
)


def build(dataset: str, data_dir: str | None, batch_size: int, fanout: tuple[int, ...]):
    """(config, batch source, model, optimiser, generator) as ``GCA.fit`` builds them, on the CPU."""
    loaded = load_dataset(dataset, data_dir)
    config = build_config(loaded.name).replace(batch_size=batch_size, fanout=fanout)
    prepared = prepare(loaded.data, config)
    graph = prepared.graph
    device = torch.device("cpu")
    torch.manual_seed(config.seed)
    model = GCAModel.from_config(graph.num_features, config, edge_dim=graph.edge_dim).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    generator = torch.Generator(device=device).manual_seed(config.seed)
    source = batch_source(graph, prepared.views, config, device)
    return config, graph, source, model, optimizer, generator


class Clock:
    """Seconds spent in each phase of the current update."""

    def __init__(self) -> None:
        self.times: dict[str, float] = defaultdict(float)
        self.last = time.perf_counter()

    def lap(self, phase: str) -> None:
        now = time.perf_counter()
        self.times[phase] += now - self.last
        self.last = now


def _transpose_before(
    crow: torch.Tensor, col: torch.Tensor, values: torch.Tensor, size: tuple[int, int]
) -> torch.Tensor:
    """The sampled features' transpose as :meth:`SparseMatrix.take_rows` built it before: sorting 64-bit keys."""
    row = torch.repeat_interleave(torch.arange(size[0]), crow.diff())
    return sparse.square_csr(col, row, values, size[1], size[0])


def profiled_update(
    model: GCAModel,
    optimizer: torch.optim.Optimizer,
    source,
    anchors: torch.Tensor,
    generator: torch.Generator,
    plain: bool = False,
) -> tuple[float, dict[str, float]]:
    """One update of :func:`train_step` on the subgraph around ``anchors``, phase by phase (same draws, same
    order); returns the loss and each phase's seconds. ``plain``: the update as before this file's cuts (the
    "before" table of ``--compare``) — the sampled sparse features' transpose by sorting, and the first layer
    multiplying every entry of a sparse X, or every row of a dense one, by diag(m) W (no
    :meth:`gca.nn.gcn.GCNLayer.transformed`)."""
    clock = Clock()
    sub = source.sampler.sample(anchors, generator)
    clock.lap("sample")
    transpose = sparse.csr_transpose
    sparse.csr_transpose = _transpose_before if plain else transpose
    try:
        batch = source.batch(sub)
    finally:
        sparse.csr_transpose = transpose
    clock.lap("batch")
    model.train()
    encoder = model.encoder
    embeddings = []
    # the forward pass in the precision the run resolves (train_step's region: gca.precision)
    with update_precision(model.objective.resolved("cpu")[1], "cpu"):
        for view in batch.views:
            edges = view.sample_edges(generator)
            clock.lap("edges")
            if batch.layer_rows is not None:
                operators = layered_normalized_adjacency(edges, batch.num_nodes, batch.layer_rows)
            else:
                whole = normalized_adjacency(edges, batch.num_nodes, symmetric=view.symmetric)
                operators = [whole] * len(encoder.layers)
            clock.lap("operators")
            mask = view.sample_feature_mask(generator)
            first = encoder.layers[0]
            weight = first.weight * mask.unsqueeze(1)
            if _aggregate_first(batch.features, weight):
                clock.lap("mask + X·W")
                h = first.activation((operators[0] @ batch.features) @ weight + first.bias)
            else:
                operator, xw = (
                    (operators[0], batch.features @ weight)
                    if plain
                    else first.transformed(batch.features, operators[0], mask, weight)
                )
                clock.lap("mask + X·W")
                h = first.activation(operator @ xw + first.bias)
            clock.lap("layer 1 rest")
            for layer, operator in zip(encoder.layers[1:], operators[1:], strict=True):
                h = layer(h, operator)
            embeddings.append(h if batch.anchors is None else h[batch.anchors])
            clock.lap("layers 2..L")
        projected = [model.projector(h) for h in embeddings]
        clock.lap("projection")
        loss = model.objective(*projected)
        clock.lap("objective")
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    clock.lap("backward")
    optimizer.step()
    clock.lap("optimiser")
    return float(loss.detach()), dict(clock.times)


def check_against_train_step(config, source, model, optimizer, generator, anchors: torch.Tensor) -> float:
    """The first update's loss from :func:`train_step` and from :func:`profiled_update` (both of its first-layer
    paths), each on its own copy of the model, optimiser and random state: all must be equal, bit for bit."""
    losses = []
    state, global_state = generator.get_state(), torch.get_rng_state()  # RReLU draws from the global generator
    for how in ("train_step", "profiled", "plain"):
        twin = copy.deepcopy(model)
        twin_optimizer = torch.optim.Adam(twin.parameters(), lr=config.lr, weight_decay=config.weight_decay)
        twin_optimizer.load_state_dict(optimizer.state_dict())
        twin_generator = torch.Generator().manual_seed(0)
        twin_generator.set_state(state)
        torch.set_rng_state(global_state)
        if how == "train_step":
            batch = source.batch(source.sampler.sample(anchors, twin_generator))
            losses.append(train_step(twin, twin_optimizer, batch, twin_generator, twin.objective.resolved("cpu")[1]))
        else:
            losses.append(profiled_update(twin, twin_optimizer, source, anchors, twin_generator, how == "plain")[0])
    torch.set_rng_state(global_state)
    if len(set(losses)) != 1:
        raise SystemExit(f"the first update's losses differ (train_step, profiled, plain): {losses}")
    return losses[0]


def table(rows: list[dict[str, float]]) -> tuple[str, float]:
    """The markdown table of per-phase medians (ms) and shares, and the median of the updates' totals."""
    medians = {phase: statistics.median(r.get(phase, 0.0) for r in rows) * 1e3 for phase in PHASES}
    total = statistics.median(sum(r.values()) * 1e3 for r in rows)
    lines = ["| phase | ms per update (median) | share |", "|---|---:|---:|"]
    lines += [
        f"| {phase} | {medians[phase]:.1f} | {100 * medians[phase] / sum(medians.values()):.1f} % |" for phase in PHASES
    ]
    lines.append(f"| **update** (median of totals) | **{total:.1f}** | |")
    return "\n".join(lines), total


def update_parser(description: str, updates: int, threads: int) -> argparse.ArgumentParser:
    """The arguments the update benchmarks share (this one and ``update_bound.py``): the dataset, the batch, and how
    many updates on how many threads."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="Amazon-Photo")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--fanout", default="10,10")
    parser.add_argument("--updates", type=int, default=updates)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--threads", type=int, default=threads)
    return parser


def main() -> None:
    parser = update_parser(__doc__, updates=30, threads=1)
    parser.add_argument(
        "--compare",
        action="store_true",
        help="alternate updates as they ran before (every entry of X multiplied, the transpose "
        "sorted) with the library's; print both tables and their ratio",
    )
    parser.add_argument("--torch-profile", action="store_true", help="PyTorch's operator table of one more update")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    fanout = tuple(int(k) for k in args.fanout.split(","))
    config, graph, source, model, optimizer, generator = build(args.dataset, args.data_dir, args.batch_size, fanout)
    needed = (args.warmup + args.updates) * (2 if args.compare else 1) + 1
    anchors = [a for epoch in range(needed) for a in source.anchor_batches(epoch)][:needed]
    loss = check_against_train_step(config, source, model, optimizer, generator, anchors[0])

    modes = (True, False) if args.compare else (False,)  # plain (before), library (after)
    rows: dict[bool, list[dict[str, float]]] = {mode: [] for mode in modes}
    sizes = []
    for i in range(args.warmup + args.updates):
        order = modes if i % 2 == 0 else modes[::-1]  # alternate which goes first
        for j, plain in enumerate(order):
            step_anchors = anchors[i * len(modes) + j]
            times = profiled_update(model, optimizer, source, step_anchors, generator, plain)[1]
            if i >= args.warmup:
                rows[plain].append(times)
        sizes.append(source.sampler.sample(anchors[i], torch.Generator().manual_seed(i)).num_nodes)

    cpu = next(
        (line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")),
        platform.processor(),
    )
    print(
        f"{args.dataset}: {graph.num_nodes} nodes, {graph.edge_index.shape[1]} directed edges, "
        f"{graph.num_features} features ({type(graph.features).__name__}); batch_size {args.batch_size}, fan-outs "
        f"{fanout}, median {statistics.median(sizes):.0f} sampled nodes"
    )
    print(
        f"{args.updates} updates after {args.warmup} warm-ups{' each way' if args.compare else ''}, "
        f"{args.threads} thread(s); {cpu}; torch {torch.__version__}; {datetime.date.today()}"
    )
    print(
        f"first update's loss {loss!r}: train_step, the profiled step and the plain first layer agree bit for bit "
        f"(objective and precision: {' '.join(model.objective.resolved('cpu'))})"
    )
    totals = {}
    for plain in modes:
        text, totals[plain] = table(rows[plain])
        if args.compare:
            print("\nbefore (every entry of X multiplied):" if plain else "\nafter (library):")
        print(text)
    if args.compare:
        print(f"\nupdate time after / before: {totals[False] / totals[True]:.3f}")

    if args.torch_profile:
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CPU]) as prof:
            profiled_update(model, optimizer, source, anchors[-1], generator)
        print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=20))


if __name__ == "__main__":
    main()
