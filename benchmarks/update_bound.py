"""One mini-batch update against the machine's own limit: its dense products' FLOPs, the rates this CPU multiplies
matrices of those shapes at (fp32, and bf16 where it has bf16 units), and the update's time as a multiple of
that bound — the default update (``precision=auto``, resolved here) and the update forced to fp32
(``precision=fp32``, ``loss_backend=blocked``), alternated update by update in one process.

The dataset, config, batch source, model and optimiser are built as ``benchmarks/update_profile.py`` builds them
(the shipped Table 5 config, ``batch_size`` anchors, fan-outs 10, 10). Each update is :func:`gca.train.loop.
train_step`. One more update of each kind runs under a dispatch mode that records every dense product the update
makes — ``mm``, ``addmm``, ``bmm`` with strided operands (the sparse aggregation M·H is memory-bound, not counted)
and the fused attention kernels (forward: S = QKᵀ and P V; backward: five products of the same shapes, as
FlashAttention-2 computes them) — with its shape and dtype. Each recorded product is then timed alone, at its
shape, in fp32 and in bf16: the bound of an update is the sum of its products' times in the precision it ran them
in (the fp32 update's) or in bf16 (the default update's, on a CPU with bf16 units). On a CPU without bf16 units
bf16 is emulated in software: the bf16 rates and bounds are printed as unmeasured.

    python benchmarks/update_bound.py --dataset Amazon-Photo --data-dir /tmp/gdata [--updates 20] [--warmup 3]
                                      [--threads 2] [--batch-size 1024] [--fanout 10,10]
"""

from __future__ import annotations

import datetime
import platform
import statistics
import time
from collections import Counter

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from update_profile import build, update_parser

from gca.objective import resolve_objective
from gca.precision import cpu_bf16_units, objective_reason
from gca.train.loop import train_step

aten = torch.ops.aten
PRODUCTS = {aten.mm.default, aten.addmm.default, aten.addmm_.default, aten.bmm.default}
# the fused attention kernels' products, as (m, k, n) of the sequence length L and width d: forward S = QKᵀ and
# P V; backward recomputes S and forms dV = Pᵀ dO, dP = dO Vᵀ, dQ = dS K and dK = dSᵀ Q (FlashAttention-2)
ATTENTION = {
    aten._scaled_dot_product_flash_attention_for_cpu.default: ("LdL", "LLd"),
    aten._scaled_dot_product_flash_attention_for_cpu_backward.default: ("LdL", "LLd", "LdL", "LLd", "LLd"),
}


class DenseProducts(TorchDispatchMode):
    """Records (m, k, n, count) of every dense matrix product dispatched while active."""

    def __init__(self) -> None:
        super().__init__()
        self.shapes: Counter[tuple[int, int, int]] = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in PRODUCTS:
            a, b = (args[0], args[1]) if func in (aten.mm.default, aten.bmm.default) else (args[1], args[2])
            if a.layout == torch.strided and b.layout == torch.strided:
                batches = a.shape[0] if a.dim() == 3 else 1
                self.shapes[(a.shape[-2], a.shape[-1], b.shape[-1])] += batches
        elif func in ATTENTION:
            q = args[1] if func is aten._scaled_dot_product_flash_attention_for_cpu_backward.default else args[0]
            sizes = {"L": q.shape[-2], "d": q.shape[-1]}
            for shape in ATTENTION[func]:
                self.shapes[tuple(sizes[c] for c in shape)] += q.shape[0] * q.shape[1]
        return func(*args, **kwargs)


def gemm_seconds(shape: tuple[int, int, int], dtype: torch.dtype, repeats: int = 5) -> float:
    """The median seconds of one product of ``shape`` in ``dtype`` on this CPU (after a warm-up)."""
    m, k, n = shape
    generator = torch.Generator().manual_seed(0)
    a = torch.randn(m, k, generator=generator).to(dtype)
    b = torch.randn(k, n, generator=generator).to(dtype)
    torch.mm(a, b)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        torch.mm(a, b)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def bound(shapes: Counter, dtype: torch.dtype, cache: dict) -> tuple[float, float]:
    """(FLOPs, seconds): the products' floating-point operations and the sum of their times alone in ``dtype``."""
    flops = seconds = 0.0
    for shape, count in shapes.items():
        if count <= 0:
            continue
        if (shape, dtype) not in cache:
            cache[(shape, dtype)] = gemm_seconds(shape, dtype)
        flops += 2.0 * shape[0] * shape[1] * shape[2] * count
        seconds += cache[(shape, dtype)] * count
    return flops, seconds


def main() -> None:
    args = update_parser(__doc__, updates=20, threads=2).parse_args()
    torch.set_num_threads(args.threads)
    fanout = tuple(int(k) for k in args.fanout.split(","))
    config, graph, source, model, optimizer, generator = build(args.dataset, args.data_dir, args.batch_size, fanout)
    device = torch.device("cpu")
    default = resolve_objective(config.loss_backend, config.precision, device)
    kinds = {"default": default, "fp32": ("blocked", "fp32")}
    needed = args.warmup + args.updates + 1
    anchors = [a for epoch in range(2 * needed) for a in source.anchor_batches(epoch)][: 2 * needed]

    def update(kind: str, step_anchors: torch.Tensor) -> float:
        backend, precision = kinds[kind]
        model.objective.backend, model.objective.precision = backend, precision
        batch = source.batch(source.sampler.sample(step_anchors, generator))
        start = time.perf_counter()
        train_step(model, optimizer, batch, generator, precision)
        return time.perf_counter() - start

    times: dict[str, list[float]] = {kind: [] for kind in kinds}
    order = list(kinds)
    for i in range(args.warmup + args.updates):
        for j, kind in enumerate(order if i % 2 == 0 else order[::-1]):  # alternate which goes first
            seconds = update(kind, anchors[2 * i + j])
            if i >= args.warmup:
                times[kind].append(seconds)
    shapes = {}
    for kind in kinds:
        with DenseProducts() as recorder:
            update(kind, anchors[-1 - (kind == "fp32")])
        shapes[kind] = recorder.shapes

    cpu = next(
        (line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")),
        platform.processor(),
    )
    units = cpu_bf16_units()
    print(
        f"{args.dataset}: {graph.num_nodes} nodes, {graph.num_features} features; batch_size {args.batch_size}, "
        f"fan-outs {fanout}; {args.updates} updates of each kind after {args.warmup} warm-ups, alternated; "
        f"{args.threads} thread(s); {cpu} (bf16 units: {units or 'none'}, PyTorch's CPU capability "
        f"{torch.backends.cpu.get_cpu_capability()}); torch {torch.__version__}; "
        f"{datetime.date.today()}"
    )
    print(
        f"default: precision=auto → {' '.join(default)} "
        f"({objective_reason(config.loss_backend, config.precision, device)})"
    )
    cache: dict = {}
    lines = [
        "| update | objective | ms (median) | dense GFLOP | fp32 bound ms (GFLOP/s) | × fp32 bound "
        "| bf16 bound ms (GFLOP/s) | × bf16 bound |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    medians = {}
    for kind, (backend, precision) in kinds.items():
        medians[kind] = statistics.median(times[kind]) * 1e3
        flops, fp32 = bound(shapes[kind], torch.float32, cache)
        row = (
            f"| {kind} | {backend} {precision} | {medians[kind]:.1f} | {flops / 1e9:.2f} | "
            f"{fp32 * 1e3:.1f} ({flops / fp32 / 1e9:.0f}) | {medians[kind] / (fp32 * 1e3):.2f}× |"
        )
        if units is None:
            row += " unmeasured (no bf16 units) | — |"
        else:
            _, bf16 = bound(shapes[kind], torch.bfloat16, cache)
            row += f" {bf16 * 1e3:.1f} ({flops / bf16 / 1e9:.0f}) | {medians[kind] / (bf16 * 1e3):.2f}× |"
        lines.append(row)
    print("\n".join(lines))
    print(
        f"\ndefault / forced fp32 update time: {medians['default'] / medians['fp32']:.3f} "
        f"(speed-up {medians['fp32'] / medians['default']:.2f}×)"
    )


if __name__ == "__main__":
    main()
