"""Reading a user's files: gca's readers against PyArrow's own read of the same files, and ``gca prepare``'s memory.

Generated graphs (kept in ``--folder``), each measurement a fresh process: its seconds, its peak memory beyond the
imports and the gca function running at the peak. Default: a row per size and id kind (string ids: two CSVs;
integer ids: a TSV and an ``.npy``), PyArrow against gca. ``--prepare``: ``gca prepare``'s peak per edge. ``--long
NODES``: a long ``id,feature,value`` table, PyArrow against gca. ``--large``: ``gca prepare`` of CSV and Parquet.

    python benchmarks/files.py [--edges 2000000 ...] [--ids string|integer] [--folder DIR] [--repeats 3]
    python benchmarks/files.py --prepare|--long 1000000|--large [--repeats 3] [--folder DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import statistics
import sys
import threading
import time
import traceback
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
from harness import case, table

FEATURES = 32
NODES_PER_EDGE = 0.1  # of the generated graphs
BLOCK = 1 << 22
PLAIN = pacsv.WriteOptions(quoting_style="none")


def named(prefix: str, numbers: np.ndarray):
    return pc.binary_join_element_wise(prefix, pa.array(numbers).cast(pa.string()), "")


def write_edges(path: Path, nodes: int, edges: int, rng: np.random.Generator, ids: str, parquet: Path | None = None):
    """Random pairs, a block at a time: ``string`` ids as a CSV, ``integer`` as a TSV, ``large`` as CSV and Parquet."""
    import pyarrow.parquet as pq

    delimiter = "\t" if ids == "integer" else ","
    options = pacsv.WriteOptions(include_header=False, quoting_style="none", delimiter=delimiter)
    schema = pa.schema([("source", pa.int64()), ("target", pa.int64())])
    with path.open("wb") as f, pq.ParquetWriter(parquet, schema) if parquet else contextlib.nullcontext() as row_groups:
        f.write(b"" if ids == "integer" else b"source,target\n")
        for start in range(0, edges, BLOCK):
            count = min(BLOCK, edges - start)
            pairs = {"source": rng.integers(0, nodes, count), "target": rng.integers(0, nodes, count)}
            if parquet:
                row_groups.write_table(pa.table(pairs, schema=schema))
            if ids == "string":
                pairs = {key: named("n", value) for key, value in pairs.items()}
            pacsv.write_csv(pa.table(pairs), f, options)


def write_graph(folder: Path, edges: int, ids: str, nodes: int = 0) -> dict[str, Path]:
    """The graph's files, written once into ``folder``; ``long``: string ids, a long feature table of 10 rows a node."""
    nodes, string = nodes or int(edges * NODES_PER_EDGE), ids != "integer"
    stem = f"long-{nodes}-{edges}" if ids == "long" else f"{ids}-{edges}"
    paths = {"edges": folder / f"{stem}-edges.{'csv' if string else 'tsv'}"}
    paths["features"] = folder / f"{stem}-features.{'csv' if string else 'npy'}"
    if all(p.exists() for p in paths.values()):
        return paths
    rng = np.random.default_rng(0)
    write_edges(paths["edges"], nodes, edges, rng, "string" if string else "integer")
    if ids == "long":  # rows shuffled, features named from 1,000 names
        node = rng.permutation(np.repeat(np.arange(nodes), 10))
        words, values = named("w", rng.integers(0, 1000, node.size)), rng.random(node.size).astype(np.float32)
        columns = {"id": named("n", node), "feature": words, "value": values}
    elif string:
        x, order = rng.standard_normal((nodes, FEATURES)).astype(np.float32), rng.permutation(nodes)
        columns = {"id": named("n", order), **{f"f{j}": x[order, j] for j in range(FEATURES)}}  # rows reordered
    else:
        np.save(paths["features"], rng.standard_normal((nodes, FEATURES)).astype(np.float32))
        return paths
    pacsv.write_csv(pa.table(columns), paths["features"], PLAIN)
    return paths


def write_large(folder: Path, nodes: int, edges: int, features: int) -> dict[str, Path]:
    """Integer-id edges as CSV and Parquet and float16 features as ``.npy``, written once, a block at a time."""
    paths = {"csv": folder / f"large-{edges}-edges.csv", "parquet": folder / f"large-{edges}-edges.parquet"}
    paths["features"] = folder / f"large-{nodes}-features.npy"
    if not paths["csv"].exists() or not paths["parquet"].exists():
        write_edges(paths["csv"], nodes, edges, np.random.default_rng(0), "large", paths["parquet"])
    if not paths["features"].exists():
        rng = np.random.default_rng(1)
        array = np.lib.format.open_memmap(paths["features"], mode="w+", dtype=np.float16, shape=(nodes, features))
        for start in range(0, nodes, BLOCK):
            array[start : start + BLOCK] = rng.standard_normal((min(BLOCK, nodes - start), features))
        array.flush()
    return paths


def measure(mode: str, edges: str, features: str, threads: int) -> dict:
    """One measurement in this fresh process, after the imports: its seconds and peaks."""
    import torch

    from gca.cli.dispatch import main as gca
    from gca.cli.guard import import_libraries
    from gca.datasets import load_files
    from gca.graph.graph import prepare_graph

    import_libraries()
    torch.set_num_threads(threads)

    def status(key: str) -> int:
        text = Path("/proc/self/status").read_text()
        return next((int(line.split()[1]) * 1024 for line in text.splitlines() if line.startswith(key)), 0)

    before, seen, caller = status("VmRSS"), {"peak": 0, "anon": 0, "where": ""}, threading.get_ident()

    def phase() -> str:  # the innermost gca function the main thread is running
        inner = [f for f in traceback.extract_stack(sys._current_frames()[caller]) if "/gca/" in f.filename]
        where = Path(inner[-1].filename) if inner else Path()
        return f"{where.parent.name}/{where.name}:{inner[-1].name}" if inner else ""

    def sample() -> None:
        while True:
            now, seen["anon"] = status("VmRSS"), max(seen["anon"], status("RssAnon"))
            if now > seen["peak"]:
                seen["peak"], seen["where"] = now, phase()
            time.sleep(0.005)

    threading.Thread(target=sample, daemon=True).start()
    start = time.perf_counter()
    if mode == "prepare":
        ok = gca(["prepare", "--edges", edges, "--features", features, "--quiet"]) == 0
    elif mode == "gca":
        ok = prepare_graph(load_files(edges, features).data, directed=False).num_nodes > 0
    elif features.endswith(".npy"):  # pyarrow, integer ids: the rows are the ids
        options = pacsv.ReadOptions(autogenerate_column_names=True)
        e = pacsv.read_csv(edges, read_options=options, parse_options=pacsv.ParseOptions(delimiter="\t"))
        nodes = np.load(features).shape[0]
        ok = bool(e.column(0).to_numpy().max() < nodes and e.column(1).to_numpy().max() < nodes)
    else:  # pyarrow, string ids mapped to the feature table's rows (pyarrow-long: its unique ids and feature names)
        e, f = pacsv.read_csv(edges), pacsv.read_csv(features)
        ids = pc.unique(f.column(0).combine_chunks()) if mode == "pyarrow-long" else f.column(0).combine_chunks()
        rows = [pc.index_in(e.column(c), value_set=ids) for c in (0, 1)]
        if mode == "pyarrow-long":
            rows += [pc.index_in(f.column(0), value_set=ids)]
            rows += [pc.index_in(f.column(1), value_set=pc.unique(f.column(1).combine_chunks()))]
        ok = all(r.null_count == 0 for r in rows)
    seconds, peak = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return {"seconds": seconds, "before": before, "peak": peak, "beyond": peak - before, "ok": ok, **seen}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--edges", type=int, action="append", help="input edges (default: 2·10⁶ and 2·10⁷)")
    parser.add_argument("--ids", choices=("string", "integer"), action="append", help="id kinds (default both)")
    parser.add_argument("--folder", default="runs/files-bench", help="where the generated files are kept")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--repeats", type=int, default=1, help="runs of each (the fastest is kept)")
    parser.add_argument("--prepare", action="store_true", help="instead: gca prepare's peak memory")
    parser.add_argument("--long", type=int, metavar="NODES", help="instead: a long feature table over NODES nodes")
    parser.add_argument("--large", action="store_true", help="instead: gca prepare on --large-edges edges")
    parser.add_argument("--large-nodes", type=int, default=10_000_000)
    parser.add_argument("--large-edges", type=int, default=300_000_000)
    parser.add_argument("--large-features", type=int, default=16)
    parser.add_argument("--large-kind", choices=("csv", "parquet"), action="append", help="which (default both)")
    parser.add_argument("--case", nargs=4, help=argparse.SUPPRESS)  # MODE EDGES FEATURES THREADS, in a process
    args = parser.parse_args()
    if args.case:
        return print(json.dumps(measure(*args.case[:3], int(args.case[3]))))
    folder, edges = Path(args.folder), args.edges or [2_000_000, 20_000_000]
    folder.mkdir(parents=True, exist_ok=True)
    os.environ["GCA_CACHE_DIR"] = str(folder / "cache")  # gca prepare's, emptied before and after each run

    def runs(mode: str, paths: dict, repeats: int = args.repeats):  # each measurement, with what gca prepare stored
        for _ in range(repeats):
            shutil.rmtree(folder / "cache", ignore_errors=True)
            result = case(__file__, mode, paths["edges"], paths["features"], args.threads)
            stored = sum(p.stat().st_size for p in (folder / "cache").rglob("*") if p.is_file())
            shutil.rmtree(folder / "cache", ignore_errors=True)
            if result is None or not result["ok"]:
                raise SystemExit(f"{mode} failed")
            yield {**result, "stored": stored}

    if args.prepare:
        count, paths = edges[0], write_graph(folder, edges[0], "string")
        features = int(count * NODES_PER_EDGE) * FEATURES * 4
        print(f"{count:,} string-id edges, features {features / 1e6:.1f} MB (float32)")
        row = table("imports MB | peak MB | beyond imports MB (B/edge) | less twice the features B/edge | s | phase")
        beyond = []
        for r in runs("prepare", paths):
            beyond.append(r["beyond"])
            row(
                f"{r['before'] / 1e6:.0f} | {r['peak'] / 1e6:.0f} | {r['beyond'] / 1e6:.0f} ({r['beyond'] / count:.1f})"
                f" | {(r['beyond'] - 2 * features) / count:.1f} | {r['seconds']:.1f} | {r['where']}"
            )
        for name, value in (("min", min(beyond)), ("median", statistics.median(beyond))):
            print(
                f"{name}: {value / 1e6:.0f} MB beyond the imports ({value / count:.1f} B/edge), "
                f"{(value - 2 * features) / count:.1f} B/edge less twice the features"
            )
    elif args.long:
        paths, times = write_graph(folder, edges[0], "long", args.long), {}
        for mode in ("pyarrow-long", "gca"):
            results = list(runs(mode, paths))
            print(f"{mode:>13}: " + ", ".join(f"{r['seconds']:.2f} s ({r['beyond'] / 1e6:.0f} MB)" for r in results))
            times[mode] = sorted(r["seconds"] for r in results)
        low = times["gca"][0] / times["pyarrow-long"][0]
        mid = statistics.median(times["gca"]) / statistics.median(times["pyarrow-long"])
        print(
            f"{args.long:,} nodes, {edges[0]:,} edges: gca over PyArrow {low:.2f} (fastest of each), "
            f"{mid:.2f} (medians)"
        )
    elif args.large:
        start = time.perf_counter()
        paths = write_large(folder, args.large_nodes, args.large_edges, args.large_features)
        sizes = ", ".join(f"{p.name} {p.stat().st_size / 1e9:.2f} GB" for p in paths.values())
        print(f"files ready in {time.perf_counter() - start:.0f} s: {sizes}")
        row = table("input | s | peak resident | peak anonymous | reached in | prepared graph")
        for kind in args.large_kind or ("csv", "parquet"):
            for r in runs("prepare", {"edges": paths[kind], "features": paths["features"]}, repeats=1):
                row(
                    f"{kind} | {r['seconds']:.0f} | {r['peak'] / 2**30:.2f} GiB | {r['anon'] / 2**30:.2f} GiB | "
                    f"{r['where']} | {r['stored'] / 1e9:.2f} GB"
                )
    else:
        row = table("edges | ids | PyArrow s | gca s | ratio | gca beyond MB | features MB | B/edge")
        for count in edges:
            for ids in args.ids or ["string", "integer"]:
                paths, features = write_graph(folder, count, ids), int(count * NODES_PER_EDGE) * FEATURES * 4
                base, ours = (min(runs(mode, paths), key=lambda r: r["seconds"]) for mode in ("pyarrow", "gca"))
                row(
                    f"{count:,} | {ids} | {base['seconds']:.2f} | {ours['seconds']:.2f} | "
                    f"{ours['seconds'] / base['seconds']:.2f} | {ours['beyond'] / 1e6:.0f} | {features / 1e6:.0f} | "
                    f"{(ours['beyond'] - features) / count:.1f}"
                )


if __name__ == "__main__":
    main()
