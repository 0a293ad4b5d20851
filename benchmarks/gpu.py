"""Benchmarks (a)–(c) on a CUDA GPU, plus a correctness check of the blocked objective there.

The same cases as benchmarks/objective.py and benchmarks/epoch.py, measured on the GPU: seconds are the best of
``--repeats`` runs after a warm-up, each ended by ``torch.cuda.synchronize()``; memory is PyTorch's peak allocated
GPU memory for the case (``torch.cuda.max_memory_allocated``), not the process RSS. The GEMM bound is the time of
the method's matrix products alone at the fp32 throughput measured on this GPU for the same shapes (TF32 is off,
PyTorch's default for matmul, so the numbers are full fp32).

    python benchmarks/gpu.py [--data-dir ../shared/data] [--sizes 2708 7650 13752 34493] [--dims 128 256]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from epoch import PAPER_GRAPHS, gca_epochs, load, plain_epochs  # noqa: E402
from objective import plain_loss  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def sync() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def reset_peak() -> None:
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()


def peak_mb() -> float:
    return torch.cuda.max_memory_allocated() / 2**20 if torch.cuda.is_available() else float("nan")


def chosen_device(name: str, script: str) -> tuple[torch.device, str]:
    """(device, its name for the report); one line and exit where CUDA is asked for and absent."""
    device = torch.device(name)
    if device.type == "cuda" and not torch.cuda.is_available():
        sys.exit(f"{script}: no CUDA device is available")
    return device, torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu (dry run)"


def best_seconds(fn, repeats: int) -> float:
    fn()
    sync()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        sync()
        best = min(best, time.perf_counter() - start)
    return best


def matmul_throughput(rows: int, inner: int, cols: int, device: torch.device) -> float:
    a, b = torch.randn(rows, inner, device=device), torch.randn(inner, cols, device=device)
    out = torch.empty(rows, cols, device=device)
    return 2.0 * rows * inner * cols / best_seconds(lambda: torch.matmul(a, b, out=out), 10)


def correctness(device: torch.device) -> list[dict]:
    from gca.objective import contrastive_loss, reference_loss

    rows = []
    for n, d, block in ((1000, 128, 0), (3001, 256, 0), (3001, 256, 448)):
        g = torch.Generator(device=device).manual_seed(n)
        u = torch.randn(n, d, device=device, generator=g, requires_grad=True)
        v = torch.randn(n, d, device=device, generator=g, requires_grad=True)
        ref = reference_loss(u, v, 0.5)
        ref_grads = torch.autograd.grad(ref, (u, v))
        ours = contrastive_loss(u, v, 0.5, block)
        grads = torch.autograd.grad(ours, (u, v))
        value_err = abs(float(ours.detach() - ref.detach())) / abs(float(ref.detach()))
        grad_err = max(float((a - b).abs().max() / b.abs().max()) for a, b in zip(grads, ref_grads, strict=True))
        rows.append({"n": n, "d": d, "block": block or "auto", "value_rel_err": value_err, "grad_rel_err": grad_err})
    return rows


def objective_case(method: str, n: int, d: int, device: torch.device, repeats: int, block: int = 0) -> dict:
    from gca.objective import contrastive_loss

    reset_peak()
    torch.manual_seed(0)
    u = torch.randn(n, d, device=device, requires_grad=True)
    v = torch.randn(n, d, device=device, requires_grad=True)

    def step() -> None:
        loss = plain_loss(u, v, 0.5) if method == "plain" else contrastive_loss(u, v, 0.5, block)
        loss.backward()
        u.grad = v.grad = None

    seconds = best_seconds(step, repeats)
    return {"seconds": seconds, "peak_mb": peak_mb()}


def gemm_bound(n: int, d: int, block: int, device: torch.device) -> float:
    unit = 2.0 * (2 * n) ** 2 * d
    shapes = [(1.0, (block, d, 2 * n)), (0.5, (block, 2 * n, d)), (0.5, (2 * n, block, d))]
    return sum(share * unit / matmul_throughput(*shape, device) for share, shape in shapes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--sizes", type=int, nargs="+", default=[2708, 7650, 13752, 34493])
    parser.add_argument("--dims", type=int, nargs="+", default=[128, 256])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--graphs", type=int, default=3, help="how many of cora, photo, physics to run")
    parser.add_argument(
        "--epoch-graphs",
        nargs="+",
        metavar="GRAPH",
        help="the epoch table's graphs instead: cora, photo, physics, real-photo, real-computers, "
        "real-cs (the paper's graphs from --data-dir)",
    )
    parser.add_argument("--skip-objective", action="store_true", help="only the epoch table")
    parser.add_argument("--block-n", type=int, default=7650, help="N of the block-size table")
    parser.add_argument("--json", help="also write all numbers to this JSON file")
    parser.add_argument("--device", default="cuda", help=argparse.SUPPRESS)  # cpu: a dry run of this script
    args = parser.parse_args()
    device, name = chosen_device(args.device, "benchmarks/gpu.py")
    report: dict = {"device": name, "torch": torch.__version__}
    print(f"device: {report['device']}, torch {report['torch']}, TF32 matmul {torch.backends.cuda.matmul.allow_tf32}")

    if not args.skip_objective:
        objective_tables(args, device, report)
    epoch_table(args, device, report)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))


def objective_tables(args: argparse.Namespace, device: torch.device, report: dict) -> None:
    from gca.objective import auto_block_size

    report["correctness"] = correctness(device)
    print("\nblocked objective against the plain reference on the GPU (fp32):")
    print("| N | d | block | loss rel. error | max grad error / max grad |")
    print("|---|---|---|---|---|")
    for row in report["correctness"]:
        print(f"| {row['n']} | {row['d']} | {row['block']} | {row['value_rel_err']:.1e} | {row['grad_rel_err']:.1e} |")

    print("\n(a) objective forward + backward:")
    print("| N | d | plain s | plain peak | gca s | gca peak | speed-up | GEMM bound s | gca / bound | block |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    report["objective"] = []
    free = torch.cuda.mem_get_info()[0] if device.type == "cuda" else 8 * 2**30
    for n in args.sizes:
        for d in args.dims:
            plain = objective_case("plain", n, d, device, args.repeats) if 12 * n * n * 4 < 0.8 * free else None
            ours = objective_case("gca", n, d, device, args.repeats)
            block = auto_block_size(2 * n, device=device)
            bound = gemm_bound(n, d, block, device)
            report["objective"].append({"n": n, "d": d, "plain": plain, "gca": ours, "bound": bound, "block": block})
            p_s = f"{plain['seconds']:.4f}" if plain else "does not fit"
            p_m = f"{plain['peak_mb']:.0f} MB" if plain else "—"
            speed = f"{plain['seconds'] / ours['seconds']:.1f}×" if plain else "—"
            print(
                f"| {n:,} | {d} | {p_s} | {p_m} | {ours['seconds']:.4f} | {ours['peak_mb']:.0f} MB | {speed} | "
                f"{bound:.4f} | {ours['seconds'] / bound:.2f} | {block} |",
                flush=True,
            )

    print(f"\nblock size at N = {args.block_n:,}, d = 256:")
    print("| block rows | gca s | peak |")
    print("|---|---|---|")
    report["blocks"] = []
    for block in (64, 256, 1024, 4096, 15300):
        r = objective_case("gca", args.block_n, 256, device, args.repeats, block)
        report["blocks"].append({"block": block, **r})
        print(f"| {block} | {r['seconds']:.4f} | {r['peak_mb']:.0f} MB |", flush=True)


def epoch_table(args: argparse.Namespace, device: torch.device, report: dict) -> None:
    print("\n(b), (c) one training epoch (s/epoch over --epochs epochs after a warm-up; peak allocated GPU memory):")
    print("| graph | plain s/epoch | plain peak | gca s/epoch | gca peak | speed-up |")
    print("|---|---|---|---|---|---|")
    report["epoch"] = []
    real = {key: f"{name} (real, its setting's widths)" for key, name in PAPER_GRAPHS.items()}
    labels = {
        "cora": "Cora (2,708 nodes, d = 128)",
        "photo": "Amazon-Photo size (7,650, d = 256)",
        "physics": "Coauthor-Physics size (34,493, d = 128)",
        **real,
    }
    for name in args.epoch_graphs or list(labels)[: args.graphs]:
        label = labels[name]
        data, dims = load(name, args.data_dir, 30)
        row = {"graph": name}
        for method, fn in (("plain", plain_epochs), ("gca", gca_epochs)):
            reset_peak()
            try:
                seconds = fn(data, dims["hidden"], dims["proj_hidden"], args.epochs, device=args.device)
                row[method] = {"seconds": seconds, "peak_mb": peak_mb()}
            except torch.cuda.OutOfMemoryError:
                row[method] = None
        report["epoch"].append(row)
        plain, ours = row["plain"], row["gca"]
        speed = f"{plain['seconds'] / ours['seconds']:.1f}×" if plain and ours else "—"
        fmt = lambda r, k, p: p.format(r[k]) if r else "out of memory"  # noqa: E731
        print(
            f"| {label} | {fmt(plain, 'seconds', '{:.4f}')} | {fmt(plain, 'peak_mb', '{:.0f} MB')} | "
            f"{fmt(ours, 'seconds', '{:.4f}')} | {fmt(ours, 'peak_mb', '{:.0f} MB')} | {speed} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
