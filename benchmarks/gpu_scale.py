"""The exact objective at scale on a GPU: every backend and precision, seconds, peak memory, tensor-core bound.

For each N (synthetic Gaussian views, d = 128 by default) and each case — blocked fp32, blocked tf32, attention
fp32, attention bf16 with FlashAttention-2 and with the memory-efficient kernel — one forward + backward of the
objective: seconds (best of ``--repeats`` after a warm-up; a single cold run for N ≥ ``--single-run-from``, where
one run is already many seconds, bf16 first), PyTorch's peak allocated GPU memory, the loss (the inputs are equal
for every case of one N, so the losses differ only by arithmetic), and the tensor-core bound: the case's
matrix-product flops at the dense throughput this GPU reaches for its precision on an 8192³ product (fp32
without TF32 for the fp32 cases). Units: one full ZZᵀ costs u = 2·(2N)²·d flops; the blocked objective computes
2u (the upper block-triangle forward, its recomputation and two products backward), the attention route 4u (two
products in each of its two kernel calls).

    python benchmarks/gpu_scale.py [--sizes 34493 169343 1000000] [--dim 128] [--deadline 240] [--json FILE]
                                   [--backends blocked attention] [--precisions fp32 tf32 bf16]
                                   [--kernels auto flash efficient]

``--backends``, ``--precisions`` and ``--kernels`` keep only the cases they name (the exact objective at 10^6 nodes
against its bf16 bound alone: ``--sizes 1000000 --backends attention --precisions bf16``); the dense throughput is
measured only for the precisions kept.

Cases left when ``--deadline`` seconds have passed are reported as not run, never estimated.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gpu import best_seconds, chosen_device, peak_mb, reset_peak, sync  # noqa: E402

# (label, backend, precision, kernel, product units)
CASES = (
    ("blocked fp32", "blocked", "fp32", "auto", 2),
    ("blocked tf32", "blocked", "tf32", "auto", 2),
    ("attention fp32", "attention", "fp32", "efficient", 4),
    ("attention bf16 flash", "attention", "bf16", "flash", 4),
    ("attention bf16 efficient", "attention", "bf16", "efficient", 4),
)


def dense_throughput(precision: str, device: torch.device) -> float:
    """Flop/s of an 8192³ product in this precision (the GPU's practical tensor-core or fp32 peak)."""
    from gca.objective import tf32_products

    n = 8192 if device.type == "cuda" else 512
    dtype = torch.bfloat16 if precision == "bf16" else torch.float32
    a, b = torch.randn(n, n, device=device, dtype=dtype), torch.randn(n, n, device=device, dtype=dtype)
    with tf32_products(precision == "tf32"):
        seconds = best_seconds(lambda: a @ b, 5)
    return 2.0 * n**3 / seconds


def run_case(case: tuple, n: int, d: int, device: torch.device, repeats: int, single: bool) -> dict:
    from gca.objective import ContrastiveObjective, attention_loss

    label, backend, precision, kernel, _ = case
    torch.manual_seed(0)
    u = torch.randn(n, d, device=device, requires_grad=True)
    v = torch.randn(n, d, device=device, requires_grad=True)
    if backend == "attention":
        loss_fn = lambda: attention_loss(u, v, 0.5, precision, kernel)  # noqa: E731
    else:
        objective = ContrastiveObjective(0.5, backend="blocked", precision=precision)
        loss_fn = lambda: objective(u, v)  # noqa: E731
    value = {}

    def step() -> None:
        loss = loss_fn()
        loss.backward()
        value["loss"] = float(loss.detach())
        u.grad = v.grad = None

    reset_peak()
    if single:
        start = time.perf_counter()
        step()
        sync()
        seconds = time.perf_counter() - start
    else:
        seconds = best_seconds(step, repeats)
    return {"case": label, "n": n, "d": d, "seconds": seconds, "peak_mb": peak_mb(), "loss": value["loss"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[34_493, 169_343, 1_000_000])
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--single-run-from", type=int, default=500_000)
    parser.add_argument(
        "--skip-fp32-from",
        type=int,
        default=500_000,
        help="at N ≥ this, leave out the fp32 cases (minutes each on an H100)",
    )
    parser.add_argument("--deadline", type=float, default=240.0, help="seconds; later cases are reported not run")
    parser.add_argument("--json", help="also write the numbers to this JSON file")
    parser.add_argument("--backends", nargs="+", choices=("blocked", "attention"), default=["blocked", "attention"])
    parser.add_argument("--precisions", nargs="+", choices=("fp32", "tf32", "bf16"), default=["fp32", "tf32", "bf16"])
    parser.add_argument(
        "--kernels",
        nargs="+",
        choices=("auto", "flash", "efficient"),
        default=["auto", "flash", "efficient"],
        help="auto: the blocked cases' label",
    )
    parser.add_argument("--device", default="cuda", help=argparse.SUPPRESS)  # cpu: a dry run of this script
    args = parser.parse_args()
    device, name = chosen_device(args.device, "benchmarks/gpu_scale.py")
    begin = time.perf_counter()
    chosen = [c for c in CASES if c[1] in args.backends and c[2] in args.precisions and c[3] in args.kernels]
    if not chosen:
        sys.exit("gpu_scale.py: no case left by --backends, --precisions and --kernels")
    peaks = {p: dense_throughput(p, device) for p in ("fp32", "tf32", "bf16") if any(c[2] == p for c in chosen)}
    print(f"device: {name}, torch {torch.__version__}")
    print("dense 8192³ product: " + ", ".join(f"{p} {t / 1e12:.0f} TFLOP/s" for p, t in peaks.items()))
    print("\n| N | case | seconds | peak GPU memory | bound s | seconds / bound | loss |")
    print("|---|---|---|---|---|---|---|")
    rows = []
    for n in args.sizes:
        single = n >= args.single_run_from
        # where one run takes many seconds, the case a deadline must not cut goes first
        cases = sorted(chosen, key=lambda c: c[2] != "bf16") if single else chosen
        for case in cases:
            label, _, precision, _, units = case
            bound = units * 2.0 * (2 * n) ** 2 * args.dim / peaks[precision]
            if precision == "fp32" and n >= args.skip_fp32_from:
                print(f"| {n:,} | {label} | not run (fp32 at this N: minutes) | | {bound:.3f} | | |", flush=True)
                continue
            if time.perf_counter() - begin > args.deadline:
                print(f"| {n:,} | {label} | not run (deadline) | | {bound:.3f} | | |", flush=True)
                continue
            try:
                row = run_case(case, n, args.dim, device, args.repeats, single)
            except (torch.cuda.OutOfMemoryError, RuntimeError) as exc:
                print(f"| {n:,} | {label} | failed: {str(exc).splitlines()[0][:80]} | | {bound:.3f} | | |", flush=True)
                continue
            row["bound_seconds"] = bound
            rows.append(row)
            print(
                f"| {n:,} | {label} | {row['seconds']:.4f} | {row['peak_mb']:,.0f} MB | {bound:.4f} | "
                f"{row['seconds'] / bound:.1f} | {row['loss']:.7g} |",
                flush=True,
            )
    if args.json:
        Path(args.json).write_text(
            json.dumps({"device": name, "torch": torch.__version__, "dense_flops": peaks, "rows": rows}, indent=2)
        )


if __name__ == "__main__":
    main()
