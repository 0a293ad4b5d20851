"""Benchmark (a): the objective's forward + backward pass, gca's blocked version against the plain formulation.

The plain formulation is written here, as most implementations write it: dense N×N similarity matrices for
θ(u, u) and θ(u, v), their exponentials, both directions, everything kept by autograd. Each case runs in a fresh
subprocess so that its peak RSS is its own. The GEMM bound is the time the method's matrix products alone would
take at this machine's measured matmul throughput for the same shapes.

    python benchmarks/objective.py [--sizes 2708 7650 13752 34493] [--dims 128 256] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time

import torch
from torch.nn import functional as F


def plain_loss(u: torch.Tensor, v: torch.Tensor, tau: float) -> torch.Tensor:
    """The direct formulation: four N×N matrices (refl and between similarity for each direction)."""

    def semi(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        a, b = F.normalize(a), F.normalize(b)
        refl = torch.exp(a @ a.t() / tau)
        between = torch.exp(a @ b.t() / tau)
        return -torch.log(between.diag() / (refl.sum(1) + between.sum(1) - refl.diag()))

    return 0.5 * (semi(u, v) + semi(v, u)).mean()


def _best_seconds(fn, repeats: int = 7, min_seconds: float = 0.05) -> float:
    """Best time per call over ``repeats`` samples, each long enough (≥ ``min_seconds``) to average out jitter."""
    fn()  # warm-up
    start = time.perf_counter()
    fn()
    calls = max(1, int(min_seconds / max(time.perf_counter() - start, 1e-9)))
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - start) / calls)
    return best


def matmul_throughput(rows: int, inner: int, cols: int, repeats: int = 7) -> float:
    """FLOP/s of torch's matmul for a [rows × inner] @ [inner × cols] product (best of ``repeats``)."""
    a, b, out = torch.randn(rows, inner), torch.randn(inner, cols), torch.empty(rows, cols)
    # Into a preallocated output: the throughput of the product itself, not of allocating its result.
    return 2.0 * rows * inner * cols / _best_seconds(lambda: torch.matmul(a, b, out=out), repeats)


def numpy_throughput(rows: int, inner: int, cols: int, repeats: int = 7) -> float:
    """The same for NumPy's matmul (OpenBLAS in the PyPI wheels)."""
    import numpy as np

    rng = np.random.default_rng(0)
    a = rng.standard_normal((rows, inner), dtype=np.float32)
    b = rng.standard_normal((inner, cols), dtype=np.float32)
    out = np.empty((rows, cols), dtype=np.float32)
    return 2.0 * rows * inner * cols / _best_seconds(lambda: np.matmul(a, b, out=out), repeats)


def library_table(n: int, d: int) -> None:
    """torch against NumPy (OpenBLAS) for the three product shapes of the blocked objective."""
    from gca.objective import auto_block_size

    block = auto_block_size(2 * n)
    print(f"matmul throughput for the objective's shapes at N = {n:,}, d = {d} (block = {block}), GFLOP/s:")
    print("| shape | torch | NumPy |")
    print("|---|---|---|")
    for label, shape in (
        ("similarity block (block × d)(d × 2N)", (block, d, 2 * n)),
        ("gradient M_r Z (block × 2N)(2N × d)", (block, 2 * n, d)),
        ("gradient M_rᵀ Z_r (2N × block)(block × d)", (2 * n, block, d)),
    ):
        print(f"| {label} | {matmul_throughput(*shape) / 1e9:.0f} | {numpy_throughput(*shape) / 1e9:.0f} |")
    print()


def run_case(method: str, n: int, d: int, repeats: int) -> dict:
    from gca.objective import auto_block_size, contrastive_loss

    torch.manual_seed(0)
    u = torch.randn(n, d, requires_grad=True)
    v = torch.randn(n, d, requires_grad=True)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        loss = plain_loss(u, v, 0.5) if method == "plain" else contrastive_loss(u, v, 0.5)
        loss.backward()
        times.append(time.perf_counter() - start)
        u.grad = v.grad = None
    out = {"seconds": min(times), "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
    if method == "gca":
        block = auto_block_size(2 * n)
        # The blocked method's products, in units of one (2N)²·d multiply-add sweep: the similarity blocks
        # (block × d)(d × 2N) twice (forward ½ + recompute ½ of the triangle), then M_r·Z (block × 2N)(2N × d) and
        # M_r·ᵀZ_r (2N × block)(block × d), ½ each. Each shape is timed on its own.
        unit = 2.0 * (2 * n) ** 2 * d
        shapes = [(1.0, (block, d, 2 * n)), (0.5, (block, 2 * n, d)), (0.5, (2 * n, block, d))]
        bound = sum(share * unit / matmul_throughput(*shape) for share, shape in shapes)
        out.update(gemm_bound_seconds=bound, gflop=2 * unit / 1e9, block=block)
    return out


def plain_fits(n: int) -> bool:
    """The plain version keeps about a dozen N×N fp32 tensors; skip it where that exceeds the memory here."""
    need = 12 * n * n * 4
    available = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")
    return need < 0.8 * available


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[2708, 7650, 13752, 34493])
    parser.add_argument("--dims", type=int, nargs="+", default=[128, 256])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--case", nargs=3, help=argparse.SUPPRESS)
    parser.add_argument("--no-library-table", action="store_true", help="skip the torch-vs-NumPy matmul table")
    args = parser.parse_args()
    if args.case:
        method, n, d = args.case[0], int(args.case[1]), int(args.case[2])
        print(json.dumps(run_case(method, n, d, args.repeats)))
        return

    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}, "
        f"{torch.get_num_threads()} threads"
    )
    if not args.no_library_table:
        library_table(7650, 256)
    header = "| N | d | plain s | plain peak RSS | gca s | gca peak RSS | speed-up | GEMM bound s | gca / bound |"
    print(header)
    print("|---" * (header.count("|") - 1) + "|")
    for n in args.sizes:
        for d in args.dims:
            results = {}
            for method in ("plain", "gca"):
                if method == "plain" and not plain_fits(n):
                    results[method] = None
                    continue
                proc = subprocess.run(
                    [sys.executable, __file__, "--case", method, str(n), str(d), "--repeats", str(args.repeats)],
                    capture_output=True,
                    text=True,
                )
                results[method] = json.loads(proc.stdout) if proc.returncode == 0 else None
            plain, gca = results["plain"], results["gca"]
            p_s = f"{plain['seconds']:.3f}" if plain else "does not fit"
            p_m = f"{plain['peak_rss_mb']:.0f} MB" if plain else "—"
            speed = f"{plain['seconds'] / gca['seconds']:.1f}×" if plain else "—"
            print(
                f"| {n:,} | {d} | {p_s} | {p_m} | {gca['seconds']:.3f} | {gca['peak_rss_mb']:.0f} MB | {speed} | "
                f"{gca['gemm_bound_seconds']:.3f} | {gca['seconds'] / gca['gemm_bound_seconds']:.2f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
