"""Where a CPU training update's time goes: PyTorch's profiler per ``record_function`` region of the library's
``train_step`` (and ``sample``, ``batch``): calls, ms per update and share of it. ``--bound``: the default update and
one forced to fp32, each as a multiple of its dense products' time alone in fp32 and in bf16.

    python benchmarks/profile_update.py --dataset Amazon-Photo --data-dir DATA [--updates 20] [--threads 2] [--bound]
"""

import argparse
import statistics
import time
from collections import Counter

import torch
from harness import DATA_DIR, alternated, load, machine, median_seconds, table, training
from torch.profiler import ProfilerActivity, record_function
from torch.utils._python_dispatch import TorchDispatchMode

from gca.precision import cpu_bf16_units, objective_reason, resolve_objective
from gca.train.loop import train_step

REGIONS = ("sample", "batch", "gca.view", "gca.operator", "gca.encoder", "gca.projection", "gca.objective")
REGIONS += ("gca.backward", "gca.optimizer")
aten = torch.ops.aten
PRODUCTS = {aten.mm.default, aten.addmm.default, aten.addmm_.default, aten.bmm.default}
# the fused attention kernels' products, (m, k, n) of length L and width d: forward QKᵀ, PV; backward FlashAttention-2's
FLASH = aten._scaled_dot_product_flash_attention_for_cpu.default
FLASH_BACKWARD = aten._scaled_dot_product_flash_attention_for_cpu_backward.default
ATTENTION = {FLASH: ("LdL", "LLd"), FLASH_BACKWARD: ("LdL", "LLd", "LdL", "LLd", "LLd")}


class DenseProducts(TorchDispatchMode):
    """Records (m, k, n) → count of every dense matrix product dispatched while active."""

    def __init__(self) -> None:
        super().__init__()
        self.shapes: Counter[tuple[int, int, int]] = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func in PRODUCTS:
            a, b = (args[0], args[1]) if func in (aten.mm.default, aten.bmm.default) else (args[1], args[2])
            if a.layout == torch.strided and b.layout == torch.strided:
                self.shapes[(a.shape[-2], a.shape[-1], b.shape[-1])] += a.shape[0] if a.dim() == 3 else 1
        elif func in ATTENTION:
            q = args[1] if func is FLASH_BACKWARD else args[0]
            sizes = {"L": q.shape[-2], "d": q.shape[-1]}
            for shape in ATTENTION[func]:
                self.shapes[tuple(sizes[c] for c in shape)] += q.shape[0] * q.shape[1]
        return func(*args, **(kwargs or {}))


def bound(shapes: Counter, dtype: torch.dtype, cache: dict) -> tuple[float, float]:
    """(FLOPs, seconds): the products' floating-point operations and the sum of their median times alone."""
    flops = seconds = 0.0
    for (m, k, n), count in shapes.items():
        if (m, k, n, dtype) not in cache:
            generator = torch.Generator().manual_seed(0)
            a, b = torch.randn(m, k, generator=generator).to(dtype), torch.randn(k, n, generator=generator).to(dtype)
            cache[(m, k, n, dtype)] = median_seconds(lambda a=a, b=b: torch.mm(a, b), 5)
        flops += 2.0 * m * k * n * count
        seconds += cache[(m, k, n, dtype)] * count
    return flops, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="Amazon-Photo")
    parser.add_argument("--data-dir", default=DATA_DIR)
    parser.add_argument("--batch-size", type=int, default=1024, help="anchors an update; 0: exact")
    parser.add_argument("--fanout", default="10,10")
    parser.add_argument("--updates", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--bound", action="store_true", help="also the update against its dense products' bound")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    fanout = tuple(int(k) for k in args.fanout.split(","))
    loaded, config = load(args.dataset, args.data_dir, batch_size=args.batch_size, fanout=fanout)
    graph, source, model, optimizer, generator = training(loaded.data, config)
    needed = range(3 * (args.warmup + args.updates) + 2 if args.batch_size else 0)
    anchors = iter([a for epoch in needed for a in source.anchor_batches(epoch)])  # each update its own
    whole = None if args.batch_size else next(iter(source.batches(0, generator)))
    sizes = []

    def update(objective: tuple[str, str] | None = None) -> float:
        """One update (sampled, batched, trained) in its wall seconds; ``objective``: (backend, precision)."""
        if objective:
            model.objective.backend, model.objective.precision = objective
        start = time.perf_counter()
        batch = whole
        if batch is None:
            with record_function("sample"):
                sub = source.sampler.sample(next(anchors), generator)
            with record_function("batch"):
                batch = source.batch(sub)
        train_step(model, optimizer, batch, generator, model.objective.resolved("cpu")[1])
        sizes.append(batch.num_nodes)
        return time.perf_counter() - start

    for _ in range(args.warmup):
        update()
    with torch.profiler.profile(activities=[ProfilerActivity.CPU]) as prof:
        walls = [update() for _ in range(args.updates)]
    print(
        f"{loaded.name}: {graph.num_nodes} nodes, {graph.edge_index.shape[1]} directed edges, {graph.num_features} "
        f"features ({type(graph.features).__name__}); batch_size {args.batch_size}, fan-outs {fanout}, median "
        f"{statistics.median(sizes):.0f} nodes an update; objective {' '.join(model.objective.resolved('cpu'))}"
    )
    print(f"{args.updates} updates after {args.warmup} warm-ups under the profiler; {machine()}")
    events = {e.key: e for e in prof.key_averages()}
    mean, held = 1e3 * sum(walls) / len(walls), 0.0
    row = table("region | calls per update | ms per update | share of the update")
    for name in (name for name in REGIONS if name in events):
        ms = events[name].cpu_time_total / 1e3 / args.updates
        held += ms
        row(f"{name} | {events[name].count / args.updates:g} | {ms:.1f} | {100 * ms / mean:.1f} %")
    row(f"in no region | | {mean - held:.1f} | {100 * (mean - held) / mean:.1f} %")
    row(f"**update** (mean; median {1e3 * statistics.median(walls):.1f}) | | **{mean:.1f}** | 100 %")
    if not args.bound:
        return

    kinds = {"default": resolve_objective(config.loss_backend, config.precision, "cpu"), "fp32": ("blocked", "fp32")}
    default, fp32 = (lambda: update(kinds["default"])), (lambda: update(kinds["fp32"]))
    alternated(default, fp32, args.warmup)
    times = dict(zip(kinds, alternated(default, fp32, args.updates), strict=True))
    chosen = f"{' '.join(kinds['default'])} ({objective_reason(config.loss_backend, config.precision, 'cpu')})"
    print(f"\ndefault: precision=auto → {chosen}; {args.updates} updates each, alternated")
    columns = "update | objective | ms (median) | dense GFLOP | fp32 bound ms (GFLOP/s) | × fp32 bound"
    row = table(f"{columns} | bf16 bound ms (GFLOP/s) | × bf16 bound")
    cache, medians = {}, {}
    for kind, (backend, precision) in kinds.items():
        with DenseProducts() as recorder:
            update((backend, precision))
        medians[kind] = ms = statistics.median(times[kind]) * 1e3
        flops, fp32 = bound(recorder.shapes, torch.float32, cache)
        text = f"{kind} | {backend} {precision} | {ms:.1f} | {flops / 1e9:.2f} | {fp32 * 1e3:.1f} "
        text += f"({flops / fp32 / 1e9:.0f}) | {ms / (fp32 * 1e3):.2f}×"
        if cpu_bf16_units() is None:
            row(f"{text} | unmeasured (no bf16 units) | —")
        else:
            bf16 = bound(recorder.shapes, torch.bfloat16, cache)[1]
            row(f"{text} | {bf16 * 1e3:.1f} ({flops / bf16 / 1e9:.0f}) | {ms / (bf16 * 1e3):.2f}×")
    ratio = medians["default"] / medians["fp32"]
    print(f"\ndefault / forced fp32 update time: {ratio:.3f} (speed-up {1 / ratio:.2f}×)")


if __name__ == "__main__":
    main()
