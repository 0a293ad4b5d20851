"""``gca prepare`` from files: the command's peak resident memory beyond its imports, in bytes per input edge, and
where it is reached.

The graph is :mod:`benchmarks.files`'s (string ids ``n123``: an edge CSV with a header and an id-keyed feature CSV
of 32 float32 columns, 0.1 node per edge), written once into ``--folder``. Each run is a fresh process that
imports what the command imports (:func:`gca.cli.guard.import_libraries`, PyArrow), reads its resident memory,
then runs ``gca prepare --edges … --features …`` in-process into an empty cache folder and reads its peak
(``ru_maxrss``, what ``/usr/bin/time -v`` reports as the maximum resident set size). A thread samples the resident
memory every 5 ms and notes the phase the command was in at the peak (the innermost gca function then running).

It prints, per run, the peak beyond the imports in MB and per edge, and the same less twice the float32 features
(the criterion: at most 100 bytes per edge), then the minimum and median of the runs.

    python benchmarks/prepare_memory.py                          # 2·10⁶ edges, 3 runs
    python benchmarks/prepare_memory.py --edges 2000000 --runs 5 --folder /tmp/prepare-bench
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from files import FEATURES, NODES_PER_EDGE, write_graph  # noqa: E402

CHILD = r"""
import json, os, resource, sys, threading, time, traceback
def rss():
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmRSS"))
from gca.cli.guard import import_libraries
import_libraries()
import pyarrow, pyarrow.csv, pyarrow.compute  # noqa: F401 - the readers' libraries, imported as the command does
from gca.cli.dispatch import main
before = rss()
seen = {"peak": 0, "where": ""}
me = None
def phase():
    for ident, frame in sys._current_frames().items():
        if ident == me:
            continue
        stack = [f for f in traceback.extract_stack(frame) if "/gca/" in f.filename]
        if any(f.name == "run_guarded" for f in stack):
            f = stack[-1]
            return f"{Path(f.filename).parent.name}/{Path(f.filename).name}:{f.name}"
    return ""
from pathlib import Path
def sample():
    global me
    me = threading.get_ident()
    while True:
        now = rss()
        if now > seen["peak"]:
            seen["peak"], seen["where"] = now, phase()
        time.sleep(0.005)
threading.Thread(target=sample, daemon=True).start()
start = time.perf_counter()
code = main(["prepare", "--edges", sys.argv[1], "--features", sys.argv[2], "--quiet"])
seconds = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"code": code, "before": before, "peak": peak, "where": seen["where"], "seconds": seconds}))
"""


def measure(paths: dict[str, Path], cache: Path) -> dict:
    import shutil

    shutil.rmtree(cache, ignore_errors=True)
    env = {**os.environ, "GCA_CACHE_DIR": str(cache)}
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(paths["edges"]), str(paths["features"])],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    shutil.rmtree(cache, ignore_errors=True)
    if out.returncode != 0:
        raise SystemExit(f"gca prepare failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--edges", type=int, default=2_000_000, help="input edges (default 2·10⁶)")
    parser.add_argument("--folder", default="runs/prepare-bench", help="where the generated files are kept")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    folder = Path(args.folder)
    paths = write_graph(folder, args.edges, "string")
    features = int(args.edges * NODES_PER_EDGE) * FEATURES * 4
    print(
        f"{args.edges:,} edges, features {features / 1e6:.1f} MB (float32); per run: imports MB, peak MB, "
        "beyond imports MB (B/edge), less twice the features B/edge, seconds, phase at the peak",
        flush=True,
    )
    beyond = []
    for _ in range(args.runs):
        r = measure(paths, folder / "cache")
        extra = r["peak"] - r["before"]
        beyond.append(extra)
        print(
            f"  {r['before'] / 1e6:7.0f} {r['peak'] / 1e6:7.0f} {extra / 1e6:7.0f} ({extra / args.edges:5.1f}) "
            f"{(extra - 2 * features) / args.edges:7.1f} {r['seconds']:6.1f} s  {r['where']}",
            flush=True,
        )
    for name, value in (("min", min(beyond)), ("median", statistics.median(beyond))):
        print(
            f"{name}: {value / 1e6:.0f} MB beyond the imports, {value / args.edges:.1f} B/edge; less twice the "
            f"features {(value - 2 * features) / args.edges:.1f} B/edge",
            flush=True,
        )


if __name__ == "__main__":
    main()
