"""What the benchmark scripts (run as ``python benchmarks/NAME.py``, this folder on ``sys.path``) share."""

import concurrent.futures as futures
import contextlib
import datetime
import json
import multiprocessing
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from threadpoolctl import threadpool_limits

HERE = Path(__file__).resolve().parent
DATA_DIR = str(HERE.parents[1] / "shared" / "data")  # the default --data-dir: shared/data beside the checkout
GCA = [sys.executable, "-m", "gca"]  # the command line, in this interpreter


def machine(device: str = "cpu") -> str:
    """One line: the GPU (unless ``device`` is cpu), the CPU, its bf16 units, threads, torch's version, the date."""
    from gca.precision import cpu_bf16_units

    lines = Path("/proc/cpuinfo").read_text().splitlines() if os.path.exists("/proc/cpuinfo") else []
    cpu = next((line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")), platform.machine())
    gpu = f"{torch.cuda.get_device_name()}; " if device != "cpu" and torch.cuda.is_available() else ""
    return (
        f"{gpu}{cpu}, {os.cpu_count()} cores, bf16 units: {cpu_bf16_units() or 'none'} (PyTorch's CPU capability "
        f"{torch.backends.cpu.get_cpu_capability()}); {torch.get_num_threads()} thread(s); torch {torch.__version__}; "
        f"{datetime.date.today()}"
    )


def sync() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def plain_fits(nodes: int, device: str, free: bool = False) -> bool:
    """Whether the plain formulation's dozen N×N fp32 matrices fit in 80 % of the device's (``free``: free) memory."""
    if device != "cpu":
        memory = torch.cuda.mem_get_info()[0 if free else 1]
    else:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES" if free else "SC_PHYS_PAGES")
    return 12 * nodes**2 * 4 <= 0.8 * memory


def cuda_peak(fn, device: str) -> tuple:
    """(``fn()``, the peak MB PyTorch allocated during it on CUDA; None on the CPU)."""
    if device == "cpu":
        return fn(), None
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    return fn(), torch.cuda.max_memory_allocated() / 2**20


def median_seconds(fn, repeats: int = 5, warmup: int = 1) -> float:
    """The median seconds of a call of ``fn`` over ``repeats`` calls after ``warmup`` calls (CUDA synchronised)."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        sync()
        start = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def alternated(first, second, rounds: int) -> tuple[list, list]:
    """``rounds`` calls of each of two functions, the order swapped every round; returns each one's results."""
    results: tuple[list, list] = ([], [])
    for number in range(rounds):
        for kind in (0, 1) if number % 2 == 0 else (1, 0):
            results[kind].append((first, second)[kind]())
    return results


def run(command: list[str], env: dict | None = None, stop_at: float = float("inf")) -> dict:
    """``command`` in its own process: ``code`` (None if killed at ``stop_at``), ``wall``, peak memory, ``output``."""
    start, peaks, stopped = time.perf_counter(), {"RssAnon": 0.0, "RssFile": 0.0}, False
    with tempfile.TemporaryFile("w+") as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, env=env, text=True)
        while True:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            with contextlib.suppress(OSError):  # the process may end meanwhile
                for line in Path(f"/proc/{process.pid}/status").read_text().splitlines():
                    key, _, value = line.partition(":")
                    if key in peaks:
                        peaks[key] = max(peaks[key], int(value.split()[0]) / 1024)
            if not stopped and time.perf_counter() > stop_at:
                process.kill()
                stopped = True
            time.sleep(0.2)
        sink.seek(0)
        output = sink.read()
    code = None if stopped else os.waitstatus_to_exitcode(status)
    memory = {"peak_rss_mb": usage.ru_maxrss / 1024, "anon_mb": peaks["RssAnon"], "file_mb": peaks["RssFile"]}
    return {"code": code, "wall": time.perf_counter() - start, **memory, "output": output}


def checked(command: list[str], env: dict | None = None) -> dict:
    """:func:`run`, ended with the command's last output where it fails."""
    result = run(command, env)
    if result["code"] != 0:
        raise SystemExit(f"failed ({result['code']}): {' '.join(command)}\n{result['output'][-2000:]}")
    return result


def planted(size: str, folder: Path) -> Path:
    """``folder/SIZE_size.npz``: the planted graph of an OGB size (``benchmarks/synthetic.py``), written if absent."""
    graph = folder / f"{size}_size.npz"
    if not graph.exists():
        subprocess.run([sys.executable, str(HERE / "synthetic.py"), size, str(graph)], check=True)
    return graph


def case(script: str, *arguments) -> dict | None:
    """``python SCRIPT --case ARGS`` in its own process: its last JSON line, with ``peak_rss_mb``; None on failure."""
    result = run([sys.executable, script, "--case", *map(str, arguments)])
    lines = [line for line in result["output"].splitlines() if line.startswith("{")]
    if result["code"] != 0 or not lines:
        tail = result["output"].strip().splitlines()[-1:] or [f"exit {result['code']}"]
        print(f"  ({' '.join(map(str, arguments))} failed: {tail[0]})", file=sys.stderr)
        return None
    return {**json.loads(lines[-1]), "peak_rss_mb": result["peak_rss_mb"]}


def judges(workers: int) -> futures.ProcessPoolExecutor:
    """Spawned processes that judge embeddings under scikit-learn's protocol while the next training runs."""
    return futures.ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))


def judge_sklearn(features, labels, splits: list) -> dict:
    """In a judge, on one thread: the scikit-learn protocol on an embedding (or its ``.npy`` path), with its seconds."""
    from gca import evaluate_embeddings

    torch.set_num_threads(1)
    start = time.perf_counter()
    with threadpool_limits(1):
        result = evaluate_embeddings(np.load(features) if isinstance(features, str) else features, labels, splits)
    return {**result.to_dict(), "seconds": round(time.perf_counter() - start, 1)}


def collect(pool: futures.ProcessPoolExecutor, pending: dict, deadline: float = float("inf")) -> None:
    """Until ``deadline`` (perf_counter), gives each pending record ``sklearn`` or ``sklearn_status``; ends the pool."""
    timeout = None if deadline == float("inf") else max(1.0, deadline - time.perf_counter())
    done, not_done = futures.wait(pending, timeout=timeout)
    for future in done:
        try:
            pending[future]["sklearn"] = future.result()
        except Exception as exc:  # noqa: BLE001 — a judge's failure is reported beside the others' results
            pending[future]["sklearn_status"] = f"failed: {type(exc).__name__}: {exc}"
    for future in not_done:
        pending[future]["sklearn_status"] = "unfinished at the deadline"
    for process in list(getattr(pool, "_processes", {}).values()):
        process.terminate()
    pool.shutdown(wait=False, cancel_futures=True)


def load(name: str, data_dir: str | None = None, **overrides):
    """(the loaded dataset, its shipped setting with ``overrides``): what ``gca train --dataset NAME`` starts from."""
    from gca import build_config, load_dataset

    loaded = load_dataset(name, data_dir)
    return loaded, build_config(loaded.name, overrides=overrides or None)


def training(data, config, directed: bool | None = None):
    """What :meth:`gca.GCA.fit` builds on the CPU: (prepared graph, batch source, model, Adam, generator)."""
    from gca.augment.prepared import prepare
    from gca.nn.model import GCAModel
    from gca.train.batches import batch_source

    prepared = prepare(data, config, directed=directed)
    graph = prepared.graph
    torch.manual_seed(config.seed)
    model = GCAModel.from_config(graph.num_features, config, edge_dim=graph.edge_dim)
    optimizer = torch.optim.Adam(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    generator = torch.Generator().manual_seed(config.seed)
    return graph, batch_source(graph, prepared.views, config, torch.device("cpu")), model, optimizer, generator


def random_graph(nodes: int, edges: int, features: int, nnz: int = 30, seed: int = 0):
    """A PyG ``Data``: ``edges`` random undirected edges, ``nnz`` sparse binary features a node, 8 random classes."""
    from torch_geometric.data import Data
    from torch_geometric.utils import to_undirected

    rng = np.random.default_rng(seed)
    pairs = rng.integers(0, nodes, size=(2, int(edges * 1.05)))
    pairs = np.unique(np.sort(pairs[:, pairs[0] != pairs[1]], axis=0), axis=1)[:, :edges]
    entries = np.unique(np.repeat(np.arange(nodes), nnz) * features + rng.integers(0, features, size=nodes * nnz))
    index = torch.from_numpy(np.vstack([entries // features, entries % features]))
    x = torch.sparse_coo_tensor(index, torch.ones(entries.size), (nodes, features)).coalesce()
    edge_index = to_undirected(torch.from_numpy(pairs), num_nodes=nodes)
    return Data(x=x, edge_index=edge_index, y=torch.from_numpy(rng.integers(0, 8, nodes)))


def pm(values) -> str:
    """``mean ± std`` of ``values``, two decimals."""
    return f"{np.mean(values):.2f} ± {np.std(values):.2f}"


def table(header: str, rows=()):
    """Prints a Markdown table's ``header`` (columns joined by " | ") and ``rows``; returns the row printer."""

    def row(text: str) -> None:
        print(f"| {text} |", flush=True)

    row(header)
    print("|" + "---|" * (header.count(" | ") + 1), flush=True)
    for text in rows:
        row(text)
    return row
