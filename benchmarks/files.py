"""Reading a user's files: gca's readers against PyArrow's own read of the same files, side by side.

For each size a generated graph is written as an edge CSV (``source,target``) and a feature CSV (``id`` plus F
numeric columns), with string ids (``n123``) or integer ids (edges as TSV without a header, features as ``.npy``).
Each measurement runs in a fresh process, one after another (never two at once), and reports its wall time and
its peak resident memory beyond what the process held before reading (PyTorch, PyG and PyArrow imported):

* **PyArrow**: ``pyarrow.csv.read_csv`` of both files (multi-threaded), then every edge's two ids mapped to rows
  with ``pyarrow.compute.index_in`` against the feature table's ids — the fastest read-and-map a user could write
  with the library, with no checks, no cleaning and no undirected edge list;
* **gca**: :func:`gca.datasets.load_files` (checks, id mapping, repeats merged, both directions of every edge) and
  :func:`gca.graph.graph.prepare_graph` — files to the prepared graph a run trains on.

It prints gca's time over PyArrow's and gca's peak memory in bytes per input edge beyond the features' own
(the float32 matrix); the criterion is a ratio within 3 and at most 100 bytes per edge.

    python benchmarks/files.py                    # 2·10⁶ and 2·10⁷ edges, string ids and integer ids
    python benchmarks/files.py --edges 2000000 --ids string --folder /tmp/files-bench
    python benchmarks/files.py --large --folder /data/bench   # gca prepare on 10⁷ nodes, 3·10⁸ edges (CSV, Parquet)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

FEATURES = 32
#: Nodes per edge of the generated graphs (2·10⁶ edges: 2·10⁵ nodes, as in the measurement that motivated this).
NODES_PER_EDGE = 0.1


def write_graph(folder: Path, edges: int, ids: str, seed: int = 0) -> dict[str, Path]:
    """Write the graph's files (once: kept in ``folder`` for the next measurement)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pacsv

    folder.mkdir(parents=True, exist_ok=True)
    nodes = int(edges * NODES_PER_EDGE)
    stem = f"{ids}-{edges}"
    paths = {
        "edges": folder / f"{stem}-edges.{'csv' if ids == 'string' else 'tsv'}",
        "features": folder / f"{stem}-features.{'csv' if ids == 'string' else 'npy'}",
    }
    if all(p.exists() for p in paths.values()):
        return paths
    rng = np.random.default_rng(seed)
    block = 1 << 22
    with paths["edges"].open("wb") as f:
        if ids == "string":
            f.write(b"source,target\n")
        for start in range(0, edges, block):
            count = min(block, edges - start)
            source, target = rng.integers(0, nodes, count), rng.integers(0, nodes, count)
            if ids == "string":
                table = pa.table(
                    {
                        "s": pc.binary_join_element_wise("n", pa.array(source).cast(pa.string()), ""),
                        "t": pc.binary_join_element_wise("n", pa.array(target).cast(pa.string()), ""),
                    }
                )
                pacsv.write_csv(table, f, pacsv.WriteOptions(include_header=False, quoting_style="none"))
            else:
                table = pa.table({"s": source, "t": target})
                pacsv.write_csv(table, f, pacsv.WriteOptions(include_header=False, delimiter="\t"))
    x = rng.standard_normal((nodes, FEATURES)).astype(np.float32)
    order = rng.permutation(nodes)  # feature rows in another order than the ids
    if ids == "string":
        columns = {"id": pc.binary_join_element_wise("n", pa.array(order).cast(pa.string()), "")}
        columns.update({f"f{j}": x[order, j] for j in range(FEATURES)})
        pacsv.write_csv(pa.table(columns), paths["features"], pacsv.WriteOptions(quoting_style="none"))
    else:
        np.save(paths["features"], x)
    return paths


def write_long(
    folder: Path, nodes: int, edges: int, per_node: int = 10, vocabulary: int = 1000, seed: int = 0
) -> dict[str, Path]:
    """String-id edges (``source,target``, ``edges`` random pairs over ``nodes`` ids ``n123``) and a long feature
    table (``id,feature,value``: ``per_node`` rows per node, features ``w17`` of ``vocabulary``, rows shuffled) —
    written once into ``folder``."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pacsv

    folder.mkdir(parents=True, exist_ok=True)
    paths = {
        "edges": folder / f"long-{nodes}-{edges}-edges.csv",
        "features": folder / f"long-{nodes}-{per_node}-features.csv",
    }
    rng = np.random.default_rng(seed)

    def named(prefix: str, numbers: np.ndarray):
        return pc.binary_join_element_wise(prefix, pa.array(numbers).cast(pa.string()), "")

    if not paths["edges"].exists():
        with paths["edges"].open("wb") as f:
            f.write(b"source,target\n")
            for start in range(0, edges, 1 << 22):
                count = min(1 << 22, edges - start)
                table = pa.table(
                    {"s": named("n", rng.integers(0, nodes, count)), "t": named("n", rng.integers(0, nodes, count))}
                )
                pacsv.write_csv(table, f, pacsv.WriteOptions(include_header=False, quoting_style="none"))
    if not paths["features"].exists():
        rows = nodes * per_node
        node = rng.permutation(np.repeat(np.arange(nodes), per_node))
        table = pa.table(
            {
                "id": named("n", node),
                "feature": named("w", rng.integers(0, vocabulary, rows)),
                "value": rng.random(rows).astype(np.float32),
            }
        )
        pacsv.write_csv(table, paths["features"], pacsv.WriteOptions(quoting_style="none"))
    return paths


CHILD = r"""
import json, resource, sys, time
import numpy as np, torch, torch_geometric, pyarrow as pa, pyarrow.csv as pacsv, pyarrow.compute as pc
from gca.datasets import load_files
from gca.graph.graph import prepare_graph
torch.set_num_threads(int(sys.argv[4]))
mode, edges, features = sys.argv[1], sys.argv[2], sys.argv[3]
def rss():
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmRSS"))
before = rss()
start = time.perf_counter()
if mode.startswith("pyarrow"):
    if mode == "pyarrow-long":  # node ids: the feature table's; edges, feature rows and columns mapped to numbers
        e = pacsv.read_csv(edges)
        f = pacsv.read_csv(features)
        ids = pc.unique(f.column(0).combine_chunks())
        rows = [pc.index_in(e.column(c), value_set=ids) for c in (0, 1)]
        rows.append(pc.index_in(f.column(0), value_set=ids))
        rows.append(pc.index_in(f.column(1), value_set=pc.unique(f.column(1).combine_chunks())))
        ok = all(r.null_count == 0 for r in rows)
    elif features.endswith(".npy"):
        e = pacsv.read_csv(edges, read_options=pacsv.ReadOptions(autogenerate_column_names=True),
                           parse_options=pacsv.ParseOptions(delimiter="\t"))
        x = np.load(features)
        rows = [e.column(0).to_numpy(), e.column(1).to_numpy()]
        ok = bool((rows[0].max() < x.shape[0]) & (rows[1].max() < x.shape[0]))
    else:
        e = pacsv.read_csv(edges)
        f = pacsv.read_csv(features)
        ids = f.column(0).combine_chunks()
        rows = [pc.index_in(e.column(c), value_set=ids) for c in (0, 1)]
        ok = all(r.null_count == 0 for r in rows)
    nodes = 0
else:
    loaded = load_files(edges, features)
    graph = prepare_graph(loaded.data, directed=False)
    ok, nodes = graph.num_nodes > 0, int(graph.edge_index.shape[1])
seconds = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"seconds": seconds, "peak_beyond": peak - before, "ok": ok, "directed_edges": nodes}))
"""


def measure(mode: str, paths: dict[str, Path], threads: int) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, mode, str(paths["edges"]), str(paths["features"]), str(threads)],
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        raise SystemExit(f"{mode} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def write_large(folder: Path, nodes: int, edges: int, features: int, seed: int = 0) -> dict[str, Path]:
    """An edge list of ``edges`` random pairs over ``nodes`` integer ids as CSV (``source,target``) and Parquet
    (row groups of 4·10⁶), and float16 features as ``.npy`` — written a block at a time (kept for the next run)."""
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    folder.mkdir(parents=True, exist_ok=True)
    paths = {
        "csv": folder / f"large-{edges}-edges.csv",
        "parquet": folder / f"large-{edges}-edges.parquet",
        "features": folder / f"large-{nodes}-features.npy",
    }
    block = 1 << 22
    if not paths["csv"].exists() or not paths["parquet"].exists():
        schema = pa.schema([("source", pa.int64()), ("target", pa.int64())])
        rng = np.random.default_rng(seed)
        with paths["csv"].open("wb") as f, pq.ParquetWriter(paths["parquet"], schema) as parquet:
            f.write(b"source,target\n")
            for start in range(0, edges, block):
                count = min(block, edges - start)
                table = pa.table(
                    {"source": rng.integers(0, nodes, count), "target": rng.integers(0, nodes, count)}, schema=schema
                )
                pacsv.write_csv(table, f, pacsv.WriteOptions(include_header=False))
                parquet.write_table(table)
    if not paths["features"].exists():
        rng = np.random.default_rng(seed + 1)
        array = np.lib.format.open_memmap(paths["features"], mode="w+", dtype=np.float16, shape=(nodes, features))
        for start in range(0, nodes, block):
            array[start : start + block] = rng.standard_normal((min(block, nodes - start), features))
        array.flush()
        del array
    return paths


def prepare_large(paths: dict[str, Path], kind: str, cache: Path) -> dict:
    """``gca prepare --edges FILE --features X`` in a fresh process under ``/usr/bin/time -v``: wall seconds and
    peak resident memory (the whole process: interpreter, libraries, the features' mapped pages included)."""
    import re
    import shutil
    import threading

    shutil.rmtree(cache, ignore_errors=True)
    command = [
        "/usr/bin/time",
        "-v",
        sys.executable,
        "-m",
        "gca.cli",
        "prepare",
        "--edges",
        str(paths[kind]),
        "--features",
        str(paths["features"]),
    ]
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "GCA_CACHE_DIR": str(cache)},
    )
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(process.stderr), daemon=True)
    reader.start()
    anon, where = 0, ""  # peak anonymous memory (the process's own, not mapped files' pages) and the phase then
    while process.poll() is None:
        for pid in _children(process.pid):
            try:
                status = Path(f"/proc/{pid}/status").read_text()
            except OSError:
                continue
            now = int(re.search(r"RssAnon:\s+(\d+)", status).group(1)) * 1024 if "RssAnon" in status else 0
            if now > anon:
                anon, where = now, (lines[-1].strip() if lines else "starting")
        time.sleep(0.5)
    stdout = process.stdout.read()
    reader.join()
    out = subprocess.CompletedProcess(command, process.returncode, stdout, "".join(lines))
    peak = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", out.stderr).group(1)) * 1024
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): ([\d:.]+)", out.stderr).group(1)
    seconds = sum(float(part) * 60**i for i, part in enumerate(reversed(wall.split(":"))))
    size = sum(p.stat().st_size for p in cache.rglob("*") if p.is_file())
    shutil.rmtree(cache, ignore_errors=True)
    if out.returncode != 0:
        raise SystemExit(f"gca prepare failed:\n{out.stderr[-3000:]}")
    return {
        "seconds": seconds,
        "peak": peak,
        "anon": anon,
        "anon_at": where,
        "stored": size,
        "said": out.stdout.strip(),
    }


def _children(pid: int) -> list[int]:
    """``pid`` and its descendants (``/usr/bin/time`` runs gca as its child)."""
    found, queue = [], [pid]
    while queue:
        current = queue.pop()
        found.append(current)
        try:
            queue += [int(c) for c in Path(f"/proc/{current}/task/{current}/children").read_text().split()]
        except OSError:
            pass
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--edges", type=int, action="append", help="input edges (default: 2·10⁶ and 2·10⁷)")
    parser.add_argument("--ids", choices=("string", "integer"), action="append", help="id kinds (default both)")
    parser.add_argument("--folder", default="runs/files-bench", help="where the generated files are kept")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--repeats", type=int, default=1, help="runs of each (the fastest is kept)")
    parser.add_argument(
        "--large",
        action="store_true",
        help="instead: gca prepare on a generated edge list of "
        "--large-nodes nodes and --large-edges edges, from CSV and from Parquet",
    )
    parser.add_argument("--large-nodes", type=int, default=10_000_000)
    parser.add_argument("--large-edges", type=int, default=300_000_000)
    parser.add_argument("--large-features", type=int, default=16)
    parser.add_argument("--large-kind", choices=("csv", "parquet"), action="append", help="which (default both)")
    parser.add_argument(
        "--long",
        type=int,
        metavar="NODES",
        help="instead: string-id edges and a long feature table "
        "(id, feature, value; 10 rows per node) over NODES nodes, --edges edges (default 2·10⁶)",
    )
    args = parser.parse_args()
    if args.long:
        edges = (args.edges or [2_000_000])[0]
        paths = write_long(Path(args.folder), args.long, edges)
        runs = {
            mode: [measure(mode, paths, args.threads) for _ in range(args.repeats)] for mode in ("pyarrow-long", "gca")
        }
        times = {mode: sorted(r["seconds"] for r in rs) for mode, rs in runs.items()}
        for mode, rs in runs.items():
            print(
                f"{mode:>13}: " + ", ".join(f"{r['seconds']:.2f} s ({r['peak_beyond'] / 1e6:.0f} MB)" for r in rs),
                flush=True,
            )
        low, mid = (
            times["gca"][0] / times["pyarrow-long"][0],
            times["gca"][len(times["gca"]) // 2] / times["pyarrow-long"][len(times["pyarrow-long"]) // 2],
        )
        print(
            f"{args.long:,} nodes, {edges:,} edges, long features: gca over PyArrow {low:.2f} (fastest of each), "
            f"{mid:.2f} (medians)",
            flush=True,
        )
        return
    if args.large:
        start = time.perf_counter()
        paths = write_large(Path(args.folder), args.large_nodes, args.large_edges, args.large_features)
        print(
            f"files ready in {time.perf_counter() - start:.0f} s: "
            + ", ".join(f"{p.name} {p.stat().st_size / 1e9:.2f} GB" for p in paths.values()),
            flush=True,
        )
        for kind in args.large_kind or ("csv", "parquet"):
            result = prepare_large(paths, kind, Path(args.folder) / "cache")
            print(
                f"{kind}: gca prepare {result['seconds']:.0f} s, peak resident {result['peak'] / 2**30:.2f} GiB "
                f"(of which anonymous, not mapped files' pages: {result['anon'] / 2**30:.2f} GiB, reached after "
                f"{result['anon_at']!r}), prepared graph {result['stored'] / 1e9:.2f} GB — {result['said']}",
                flush=True,
            )
        return
    print(
        f"{'edges':>12} {'ids':>8} {'pyarrow s':>10} {'gca s':>8} {'ratio':>6} {'gca MB':>8} "
        f"{'features MB':>12} {'B/edge':>7}"
    )
    for edges in args.edges or [2_000_000, 20_000_000]:
        for ids in args.ids or ["string", "integer"]:
            start = time.perf_counter()
            paths = write_graph(Path(args.folder), edges, ids)
            made = time.perf_counter() - start
            base = min(
                (measure("pyarrow", paths, args.threads) for _ in range(args.repeats)), key=lambda r: r["seconds"]
            )
            ours = min((measure("gca", paths, args.threads) for _ in range(args.repeats)), key=lambda r: r["seconds"])
            feature_bytes = int(edges * NODES_PER_EDGE) * FEATURES * 4
            per_edge = (ours["peak_beyond"] - feature_bytes) / edges
            print(
                f"{edges:>12,} {ids:>8} {base['seconds']:>10.2f} {ours['seconds']:>8.2f} "
                f"{ours['seconds'] / base['seconds']:>6.2f} {ours['peak_beyond'] / 1e6:>8.0f} "
                f"{feature_bytes / 1e6:>12.0f} {per_edge:>7.1f}"
                + (f"   (files written in {made:.0f} s)" if made > 1 else ""),
                flush=True,
            )


if __name__ == "__main__":
    main()
