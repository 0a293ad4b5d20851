"""The objective's time and memory per N, d and case (backend, precision), on the CPU or CUDA: one forward + backward
of −J on Gaussian views: seconds, peak memory, speed-up over ``plain``, a bound (the case's matrix products alone at
this device's rate) and the loss; on the CPU, first a table of those products' GFLOP/s in torch and NumPy.

    python benchmarks/objective.py [--sizes 2708 7650 13752 34493] [--dims 128 256] [--repeats 3]   # plain, gca
    python benchmarks/objective.py --device cuda --sizes 34493 1000000 --cases blocked-tf32 attention-bf16-flash
"""

import argparse
import itertools
import json
import time
from functools import partial
from pathlib import Path

import numpy as np
import torch
from harness import case, cuda_peak, machine, median_seconds, plain_fits, table
from torch.nn import functional as F

from gca.objective import ContrastiveObjective, attention_loss, auto_block_size, contrastive_loss, tf32_products

CASES = {"plain": ("plain", "fp32", ""), "gca": ("gca", "fp32", ""), "blocked-fp32": ("blocked", "fp32", "")}
CASES |= {"blocked-tf32": ("blocked", "tf32", ""), "attention-fp32": ("attention", "fp32", "efficient")}
CASES |= {f"attention-bf16-{kernel}": ("attention", "bf16", kernel) for kernel in ("flash", "efficient")}


def plain_loss(u: torch.Tensor, v: torch.Tensor, tau: float) -> torch.Tensor:
    """The direct formulation: four N×N matrices (refl and between similarity for each direction)."""

    def semi(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        a, b = F.normalize(a), F.normalize(b)
        refl = torch.exp(a @ a.t() / tau)
        between = torch.exp(a @ b.t() / tau)
        return -torch.log(between.diag() / (refl.sum(1) + between.sum(1) - refl.diag()))

    return 0.5 * (semi(u, v) + semi(v, u)).mean()


def measure(name: str, n: int, d: int, block: int, repeats: int, device: str, single: bool) -> dict:
    """One case's seconds, peak GPU memory (on CUDA) and loss."""
    backend, precision, kernel = CASES[name]
    torch.manual_seed(0)
    u, v = (torch.randn(n, d, device=device, requires_grad=True) for _ in range(2))
    losses = {
        "plain": lambda: plain_loss(u, v, 0.5),
        "gca": lambda: contrastive_loss(u, v, 0.5, block),
        "blocked": lambda: ContrastiveObjective(0.5, backend="blocked", precision=precision)(u, v),
        "attention": lambda: attention_loss(u, v, 0.5, precision, kernel),
    }
    value = {}

    def step() -> None:
        loss = losses[backend]()
        loss.backward()
        value["loss"] = float(loss.detach())
        u.grad = v.grad = None

    seconds, peak = cuda_peak(lambda: median_seconds(step, 1, 0) if single else median_seconds(step, repeats), device)
    return {"seconds": seconds, "peak_mb": peak, "loss": value["loss"]}


def rate(rows: int, inner: int, cols: int, device: str, dtype=torch.float32, tf32: bool = False, numpy=False) -> float:
    """Flop/s of a [rows × inner] @ [inner × cols] product (``numpy``: NumPy's), the median of 7 runs of 0.05 s."""
    a, b = torch.randn(rows, inner, device=device, dtype=dtype), torch.randn(inner, cols, device=device, dtype=dtype)
    out = torch.empty(rows, cols, device=device, dtype=dtype)
    product = (
        partial(np.matmul, a.numpy(), b.numpy(), out=out.numpy()) if numpy else partial(torch.matmul, a, b, out=out)
    )
    with tf32_products(tf32):
        calls = max(1, int(0.05 / max(median_seconds(product, 1), 1e-9)))
        seconds = median_seconds(lambda: [product() for _ in range(calls)], 7, 0) / calls
    return 2.0 * rows * inner * cols / seconds


def bound(name: str, n: int, d: int, block: int, device: str, dense: dict) -> float | None:
    """Seconds of the case's matrix products at this device's rate for each shape (``dense``: cached rates)."""
    backend, precision, _ = CASES[name]
    unit = 2.0 * (2 * n) ** 2 * d
    if backend == "attention":
        if precision not in dense:
            size, dtype = (8192 if device != "cpu" else 1024), torch.bfloat16 if precision == "bf16" else torch.float32
            dense[precision] = rate(size, size, size, device, dtype)
        return 4 * unit / dense[precision]
    if backend == "plain":
        return None
    shapes = [(1.0, (block, d, 2 * n)), (0.5, (block, 2 * n, d)), (0.5, (2 * n, block, d))]
    return sum(share * unit / rate(*shape, device, tf32=precision == "tf32") for share, shape in shapes)


def library_table(n: int, d: int) -> None:
    """torch against NumPy (OpenBLAS) for the three product shapes of the blocked objective."""
    block = auto_block_size(2 * n)
    print(f"matmul throughput for the objective's shapes at N = {n:,}, d = {d} (block = {block}), GFLOP/s:")
    row = table("shape | torch | NumPy")
    for label, shape in (
        ("similarity block (block × d)(d × 2N)", (block, d, 2 * n)),
        ("gradient M_r Z (block × 2N)(2N × d)", (block, 2 * n, d)),
        ("gradient M_rᵀ Z_r (2N × block)(block × d)", (2 * n, block, d)),
    ):
        row(f"{label} | {rate(*shape, 'cpu') / 1e9:.0f} | {rate(*shape, 'cpu', numpy=True) / 1e9:.0f}")
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cpu", help="cpu or cuda[:N]")
    parser.add_argument("--sizes", type=int, nargs="+", default=[2708, 7650, 13752, 34493])
    parser.add_argument("--dims", type=int, nargs="+", default=[128, 256])
    parser.add_argument("--cases", nargs="+", choices=list(CASES), default=["plain", "gca"])
    parser.add_argument("--block-rows", type=int, nargs="+", default=[0], help="gca's rows per block (0: auto)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--single-run-from", type=int, default=500_000, help="one cold run from this N")
    parser.add_argument("--skip-fp32-from", type=int, default=500_000, help="fp32 cases not run from this N")
    parser.add_argument("--deadline", type=float, default=float("inf"), help="seconds; later cases are not run")
    parser.add_argument("--no-library-table", action="store_true", help="skip the torch-against-NumPy table")
    parser.add_argument("--json", help="also write the rows to this file")
    parser.add_argument("--case", nargs=5, help=argparse.SUPPRESS)  # NAME N D BLOCK SINGLE: one case, in a process
    args = parser.parse_args()
    if args.case:
        name, n, d, block, single = args.case[0], *map(int, args.case[1:])
        return print(json.dumps(measure(name, n, d, block, args.repeats, "cpu", bool(single))))
    if args.device != "cpu" and not torch.cuda.is_available():
        raise SystemExit("objective.py: no CUDA device is available")
    print(machine(args.device))
    if args.device == "cpu" and not args.no_library_table:
        library_table(7650, 256)
    begin, rows, dense = time.perf_counter(), [], {}
    row = table("N | d | case | seconds | peak memory | × plain | bound s | seconds / bound | loss")
    for n, d in itertools.product(args.sizes, args.dims):
        cases = [(c, b) for c in args.cases for b in (args.block_rows if c == "gca" else [0])]
        plain = None
        for name, rows_per_block in cases:
            block = rows_per_block or auto_block_size(2 * n, device=args.device)
            label = f"{name}, {block} rows per block" if name == "gca" else name
            single = n >= args.single_run_from
            why = "fp32 at this N" if CASES[name][1] == "fp32" and name != "gca" and n >= args.skip_fp32_from else ""
            why = "does not fit" if name == "plain" and not plain_fits(n, args.device, free=True) else why
            why = "deadline" if time.perf_counter() - begin > args.deadline else why
            try:
                if why:
                    r = None
                elif args.device == "cpu":
                    r = case(__file__, name, n, d, block, int(single), "--repeats", args.repeats)
                else:
                    r = measure(name, n, d, block, args.repeats, args.device, single)
            except (torch.cuda.OutOfMemoryError, RuntimeError) as exc:
                r, why = None, f"failed: {str(exc).splitlines()[0][:80]}"
            if r is None:
                row(f"{n:,} | {d} | {label} | not run ({why or 'failed'}) | | | | |")
                continue
            plain = r if name == "plain" else plain
            peak = r["peak_rss_mb"] if args.device == "cpu" else r["peak_mb"]
            limit = bound(name, n, d, block, args.device, dense)
            speed = f"{plain['seconds'] / r['seconds']:.1f}×" if plain else "—"
            ratio = f"{limit:.4f} | {r['seconds'] / limit:.2f}" if limit else "— | —"
            row(f"{n:,} | {d} | {label} | {r['seconds']:.4f} | {peak:,.0f} MB | {speed} | {ratio} | {r['loss']:.7g}")
            rows.append({"n": n, "d": d, "case": name, "block": block, **r, "bound_seconds": limit})
    if dense:
        print("dense product: " + ", ".join(f"{p} {flops / 1e12:.1f} TFLOP/s" for p, flops in dense.items()))
    if args.json:
        Path(args.json).write_text(json.dumps({"machine": machine(args.device), "dense_flops": dense, "rows": rows}))


if __name__ == "__main__":
    main()
