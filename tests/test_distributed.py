"""Exact GCA over two processes (gloo on CPU, spawned processes): the shares add up to the single-process result."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from gca.objective import attention_loss, contrastive_loss
from gca.train.distributed import BlockShare

pytestmark = pytest.mark.skipif(not dist.is_available() or not dist.is_gloo_available(), reason="needs gloo")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _spawn(worker, *args, processes: int = 2) -> None:
    """``worker(rank, *args)`` in ``processes`` processes, forked from a server that imported this module (and with
    it PyTorch and gca) once per pytest process: a spawned process would import them again, most of its time."""
    import multiprocessing

    multiprocessing.get_context("forkserver").set_forkserver_preload([__name__])
    mp.start_processes(worker, args=args, nprocs=processes, join=True, start_method="forkserver")


def _inputs(n: int = 300, d: int = 16) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(7)
    return torch.randn(n, d, generator=g, dtype=torch.float64), torch.randn(n, d, generator=g, dtype=torch.float64)


def _loss(backend: str, u: torch.Tensor, v: torch.Tensor, share: BlockShare | None = None) -> torch.Tensor:
    if backend == "attention":
        return attention_loss(u, v, 0.5, share=share)
    return contrastive_loss(u, v, 0.5, block_size=64, share=share)


def _objective_worker(rank: int, world: int, port: int, out: str) -> None:
    """Both backends in one process group."""
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        for backend in ("blocked", "attention"):
            u, v = (t.requires_grad_() for t in _inputs())
            loss = _loss(backend, u, v, BlockShare(rank, world))
            loss.backward()
            torch.save({"loss": loss.detach(), "gu": u.grad, "gv": v.grad}, f"{out}/{backend}-rank{rank}.pt")
    finally:
        dist.destroy_process_group()


def test_block_shares_cover_every_block_once_and_balance_the_work():
    n, block = 1000, 64
    starts = list(range(0, n, block))
    for world in (1, 2, 3, 4):
        shares = [BlockShare(r, world).block_starts(n, block) for r in range(world)]
        assert sorted(s for share in shares for s in share) == starts
        work = [sum((n - s) * (min(s + block, n) - s) for s in share) for share in shares]
        assert max(work) <= 1.2 * sum(work) / world  # equal row counts would give rank 0 about 1.75× its part


def test_row_ranges_are_contiguous_disjoint_and_near_equal():
    for rows in (7, 1000, 1001):
        for world in (1, 2, 3, 4):
            ranges = [BlockShare(r, world).row_range(rows) for r in range(world)]
            assert ranges[0][0] == 0 and ranges[-1][1] == rows
            assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:], strict=False))  # contiguous, no overlap
            sizes = [stop - start for start, stop in ranges]
            assert max(sizes) - min(sizes) <= 1


def test_sharded_objective_equals_the_single_process_one(tmp_path):
    _spawn(_objective_worker, 2, _free_port(), str(tmp_path))
    for backend, rtol in (("blocked", 1e-10), ("attention", 1e-6)):
        _assert_shares_add_up(tmp_path, backend, rtol)


def _assert_shares_add_up(tmp_path: Path, backend: str, rtol: float) -> None:
    u, v = (t.requires_grad_() for t in _inputs())
    loss = _loss(backend, u, v)
    loss.backward()
    for rank in range(2):
        got = torch.load(tmp_path / f"{backend}-rank{rank}.pt")
        torch.testing.assert_close(got["loss"], loss.detach(), rtol=rtol / 100, atol=0)
        for name, want in (("gu", u.grad), ("gv", v.grad)):
            torch.testing.assert_close(got[name], want, rtol=rtol, atol=rtol * 1e-4 * float(want.abs().max()))


def _torchrun() -> list[str]:
    script = Path(sys.executable).with_name("torchrun")
    return [str(script)] if script.exists() else [sys.executable, "-m", "torch.distributed.run"]


def _gca_here(*args: str, **env: str) -> None:
    """``gca ARGS`` run in this process, set up as each torchrun rank below runs (one thread, and ``env``), then
    restored: a one-process reference computed with the libraries loaded already, not in a new interpreter. It
    must succeed."""
    from gca.cli import main

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with pytest.MonkeyPatch.context() as patch:
            for name, value in env.items():
                patch.setenv(name, value)
            assert main(list(args)) == 0, args
    finally:
        torch.set_num_threads(threads)


_KARATE = ["train", "--dataset", "Karate", "--no-eval", "--quiet", "--seed", "3", "--set", "block_size=8"]


def _karate_torchrun(out: Path, epochs: int, *extra: str) -> dict:
    """Karate trained by torchrun with 2 CPU processes; its results.json."""
    done = subprocess.run(
        [
            *_torchrun(),
            "--standalone",
            "--nproc-per-node",
            "2",
            "-m",
            "gca",
            *_KARATE,
            "--epochs",
            str(epochs),
            "--out",
            str(out),
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads((out / "results.json").read_text())


@pytest.fixture(scope="module")
def karate_by_two(tmp_path_factory) -> Path:
    """The --out folder of 20 epochs of Karate (blocked objective) trained by two processes: what one process
    trains, and what a run interrupted and resumed under torchrun continues to."""
    out = tmp_path_factory.mktemp("torchrun") / "two"
    _karate_torchrun(out, 20, "--set", "loss_backend=blocked")
    return out


@pytest.mark.xdist_group("karate_by_two")
@pytest.mark.parametrize("backend", ["blocked", "attention"])
def test_two_processes_train_like_one_and_write_once(tmp_path, backend, request):
    """torchrun with 2 CPU processes: the same losses and embeddings as one process; only rank 0 writes."""
    single = tmp_path / "one"
    if backend == "blocked":
        double = request.getfixturevalue("karate_by_two")
    else:
        double = tmp_path / "two"
        _karate_torchrun(double, 20, "--set", f"loss_backend={backend}")
    # one process (in this one), with the default block size
    _gca_here(*_KARATE[:-2], "--epochs", "20", "--set", f"loss_backend={backend}", "--out", str(single))
    one = json.loads((single / "results.json").read_text())
    two = json.loads((double / "results.json").read_text())
    assert two["distributed"] == {"world_size": 2, "backend": "gloo"} and "distributed" not in one
    assert one["config"]["block_size"] != 8 and two["config"]["block_size"] == 8
    np.testing.assert_allclose(two["losses"], one["losses"], rtol=1e-5)
    a, b = np.load(single / "embeddings.npy"), np.load(double / "embeddings.npy")
    assert np.abs(a - b).max() <= 1e-4 * np.abs(a).max()
    assert sorted(p.name for p in double.iterdir()) == ["embeddings.npy", "model.pt", "results.json"]


def _children(pid: int) -> list[int]:
    kids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            kids.append(int(stat.parent.name))
    return kids


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="finds the ranks through /proc")
def test_a_killed_rank_stops_the_others_with_one_line(tmp_path):
    import signal
    import time

    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(
        [
            *_torchrun(),
            "--standalone",
            "--nproc-per-node",
            "2",
            "-m",
            "gca",
            "train",
            "--dataset",
            "Karate",
            "--epochs",
            "10000000",
            "--no-eval",
            "--quiet",
            "--set",
            "block_size=8",
            "--checkpoint-every",
            "50",
            "--out",
            str(tmp_path / "o"),
        ],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    # into training, however slow the start: rank 0 has written a checkpoint
    deadline = time.time() + 240
    while not (tmp_path / "o" / "checkpoint.in-progress.pt").exists() and time.time() < deadline:
        time.sleep(0.1)
    ranks = _children(proc.pid)
    assert len(ranks) == 2, "torchrun's two ranks were not training"
    os.kill(ranks[-1], signal.SIGKILL)
    _, err = proc.communicate(timeout=120)  # bounded: the survivor notices the closed connection
    assert proc.returncode != 0
    # gca's own lines about the failure (10^7 epochs also draws the long-run warning, which is not about it)
    ours = [line for line in err.splitlines() if line.startswith("gca:") and not line.startswith("gca: warning:")]
    assert ours and all(line.startswith("gca: error:") or line.startswith("gca: interrupted") for line in ours), ours
    # torchrun's launcher reports the failed rank with its own traceback; none may come from gca's code
    assert not re.search(r'File ".*/gca/[a-z_/]+\.py"', err), err
    assert not (tmp_path / "o" / "results.json").exists()


@pytest.mark.xdist_group("karate_by_two")
def test_resume_under_torchrun_continues_exactly(tmp_path, karate_by_two):
    _karate_torchrun(tmp_path / "a", 10, "--set", "loss_backend=blocked", "--checkpoint-every", "5")
    resumed = _karate_torchrun(
        tmp_path / "a", 20, "--set", "loss_backend=blocked", "--checkpoint-every", "5", "--resume"
    )
    straight = json.loads((karate_by_two / "results.json").read_text())
    assert len(resumed["losses"]) == 20
    np.testing.assert_allclose(resumed["losses"], straight["losses"], rtol=1e-6)
    np.testing.assert_allclose(
        np.load(tmp_path / "a" / "embeddings.npy"), np.load(karate_by_two / "embeddings.npy"), rtol=0, atol=1e-6
    )


def _minibatch_worker(rank: int, world: int, port: int, out: str) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        from gca import GCA, GCAConfig
        from gca.datasets import karate_club

        config = GCAConfig(epochs=3, hidden=8, proj_hidden=8, batch_size=8, fanout=(4,), lr=0.01, seed=5)
        estimator = GCA(config, device="cpu")
        source = estimator.batch_source(estimator.prepare(karate_club()))
        anchors = torch.cat(source.anchor_batches(0))
        estimator.fit(karate_club())
        torch.save(
            {"anchors": anchors, "model": estimator.model.state_dict(), "steps": source.steps}, f"{out}/rank{rank}.pt"
        )
    finally:
        dist.destroy_process_group()


def test_mini_batch_processes_take_disjoint_anchors_and_stay_identical(tmp_path):
    """Data parallelism: each rank its own anchors, gradients averaged, so every rank holds the same model."""
    _spawn(_minibatch_worker, 2, _free_port(), str(tmp_path))
    one, two = (torch.load(tmp_path / f"rank{r}.pt") for r in range(2))
    assert one["steps"] == two["steps"] == 3  # ⌈34 / (8 · 2)⌉ steps each
    assert sorted(torch.cat([one["anchors"], two["anchors"]]).tolist()) == list(range(34))
    for name, value in one["model"].items():
        torch.testing.assert_close(value, two["model"][name], rtol=0, atol=0)


def test_mini_batch_resume_under_torchrun_continues_exactly(tmp_path):
    env = {**os.environ, "OMP_NUM_THREADS": "1"}

    def torchrun(out: Path, epochs: int, *extra: str) -> subprocess.Popen:
        return subprocess.Popen(
            [
                *_torchrun(),
                "--standalone",
                "--nproc-per-node",
                "2",
                "-m",
                "gca",
                "train",
                "--dataset",
                "Karate",
                "--epochs",
                str(epochs),
                "--no-eval",
                "--quiet",
                "--set",
                "batch_size=8",
                "--set",
                "fanout=4",
                "--out",
                str(out),
                *extra,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )

    def results(process: subprocess.Popen, out: Path) -> dict:
        _, err = process.communicate(timeout=300)
        assert process.returncode == 0, err[-2000:]
        return json.loads((out / "results.json").read_text())

    # the uninterrupted run alongside the first part of the interrupted one (each --standalone has its own port)
    first, whole = torchrun(tmp_path / "a", 4, "--checkpoint-every", "2"), torchrun(tmp_path / "b", 8)
    results(first, tmp_path / "a")
    resumed = results(torchrun(tmp_path / "a", 8, "--checkpoint-every", "2", "--resume"), tmp_path / "a")
    straight = results(whole, tmp_path / "b")
    assert len(resumed["losses"]) == 8
    np.testing.assert_allclose(resumed["losses"], straight["losses"], rtol=1e-6)
    np.testing.assert_allclose(
        np.load(tmp_path / "a" / "embeddings.npy"), np.load(tmp_path / "b" / "embeddings.npy"), rtol=0, atol=1e-6
    )


_WORLDS = (3, 2)  # the processes of each group, in turn: 3 first, then ranks 0 and 1 alone


def _inference_worker(rank: int, _: int, ports: list[int], out: str) -> None:
    """Rank ``rank`` embeds every case of tests/test_streaming.py's graphs with its share of the rows, in a group of
    each size of :data:`_WORLDS` it belongs to; rank 0 saves what it holds, the other ranks map their matrices in a
    scratch folder of their own."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from test_streaming import _graphs

    from gca.config import GCAConfig
    from gca.nn.model import GCAModel
    from gca.train.distributed import RowRanges
    from gca.train.inference import encode_graph

    os.environ["MASTER_ADDR"] = "127.0.0.1"
    for world, port in zip(_WORLDS, ports, strict=True):
        if rank >= world:
            return
        os.environ["MASTER_PORT"] = str(port)
        dist.init_process_group("gloo", rank=rank, world_size=world)
        torch.manual_seed(0)
        results = {}
        try:
            for case, (x, graph) in enumerate(_graphs()):
                for layers in (2, 3):
                    model = GCAModel.from_config(
                        x.shape[1], GCAConfig(hidden=16, proj_hidden=16, activation="prelu", layers=layers)
                    )
                    model.load_state_dict(torch.load(f"{out}/model-{x.shape[1]}-{layers}.pt"))
                    scratch = Path(out) / f"scratch-{world}-{rank}-{case}-{layers}"
                    scratch.mkdir()
                    target = Path(out) / f"emb-{world}-{case}-{layers}.npy" if rank == 0 and case % 2 else None
                    got = encode_graph(
                        model, graph, chunk_rows=17, out=target, share=RowRanges(rank, world), scratch=scratch
                    )
                    assert (got is None) == (rank != 0)
                    assert list(scratch.iterdir()) == []  # every scratch file unlinked once mapped
                    if rank == 0:
                        results[(case, layers)] = got.clone()
            if rank == 0:
                torch.save(results, f"{out}/shared-{world}.pt")
        finally:
            dist.destroy_process_group()


def test_inference_shared_by_processes_equals_one_process(tmp_path):
    """Each process embeds its range of rows of every layer (gca.train.distributed.RowRanges); rank 0's embeddings
    equal one process's, bit for bit, for every feature form, direction, normalisation and depth — in memory and
    written out of core — with ranges that do not start on a block boundary (203 rows, blocks of 17), in groups of
    3 and of 2 processes (one start of 3 processes)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from test_streaming import _graphs

    from gca.config import GCAConfig
    from gca.nn.model import GCAModel
    from gca.train.inference import encode_graph

    alone = {}
    for case, (x, graph) in enumerate(_graphs()):
        for layers in (2, 3):
            model = GCAModel.from_config(
                x.shape[1], GCAConfig(hidden=16, proj_hidden=16, activation="prelu", layers=layers)
            )
            path = tmp_path / f"model-{x.shape[1]}-{layers}.pt"
            if path.exists():
                model.load_state_dict(torch.load(path))
            else:
                torch.save(model.state_dict(), path)
            alone[(case, layers)] = encode_graph(model, graph, chunk_rows=17)
    ports = [_free_port() for _ in _WORLDS]
    _spawn(_inference_worker, 0, ports, str(tmp_path), processes=max(_WORLDS))
    for world in _WORLDS:
        shared = torch.load(tmp_path / f"shared-{world}.pt")
        assert shared.keys() == alone.keys()
        for key, embeddings in alone.items():
            assert torch.equal(shared[key], embeddings), (world, key)
        for case, layers in alone:
            if case % 2:  # written out of core by rank 0: the file holds every rank's rows
                written = np.load(tmp_path / f"emb-{world}-{case}-{layers}.npy")
                assert np.array_equal(written, alone[(case, layers)].numpy()), (world, case, layers)


def _random_npz(path: Path, n: int, edges: int, features: int, seed: int) -> Path:
    """A random graph of ``n`` nodes (``edges`` listed pairs, undirected when read) with dense float32 features, in
    the gnn-benchmark npz layout."""
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    source, target = rng.integers(0, n, edges), rng.integers(0, n, edges)
    adj = sp.csr_matrix((np.ones(source.size, dtype=np.float32), (source, target)), shape=(n, n))
    adj.data[:] = 1  # repeats were summed into counts, which would be edge weights: an unweighted graph
    np.savez(
        path,
        adj_data=adj.data,
        adj_indices=adj.indices,
        adj_indptr=adj.indptr,
        adj_shape=adj.shape,
        attr_matrix=rng.random((n, features)).astype(np.float32),
    )
    return path


def _launched(tmp_path: Path, script: str, *args: str, **env: str) -> subprocess.CompletedProcess:
    """torchrun with 2 CPU processes, each started through a launcher script whose body is ``script`` (a POSIX
    shell's, reading ``$RANK``; it runs gca with ``"$@"``), given ``args``; ``env`` added to the environment."""
    import stat

    launcher = tmp_path / "launch.sh"
    launcher.write_text(f"#!/bin/sh\n{script}\n")
    launcher.chmod(launcher.stat().st_mode | stat.S_IXUSR)
    return subprocess.run(
        [*_torchrun(), "--standalone", "--nproc-per-node", "2", "--no-python", str(launcher), *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "OMP_NUM_THREADS": "1", **env},
    )


def test_two_processes_share_inference_in_gca_train(tmp_path):
    """torchrun with 2 CPU processes on a graph embedded in blocks (GCA_INFERENCE_ROWS=50 for its 300 nodes): the
    embeddings written equal one process's, and results.json says 2 processes embedded it."""
    _random_npz(tmp_path / "g.npz", 300, 2000, 12, seed=0)
    common = [
        "train",
        "--dataset",
        str(tmp_path / "g.npz"),
        "--epochs",
        "3",
        "--no-eval",
        "--quiet",
        "--set",
        "batch_size=64",
        "--set",
        "fanout=5,5",
        "--set",
        "hidden=16",
        "--no-cache",
    ]
    blocks = {"GCA_INFERENCE_ROWS": "50", "GCA_CACHE_DIR": str(tmp_path / "c")}
    env = {**os.environ, "OMP_NUM_THREADS": "1", **blocks}
    _gca_here(*common, "--out", str(tmp_path / "one"), **blocks)
    done = subprocess.run(
        [*_torchrun(), "--standalone", "--nproc-per-node", "2", "-m", "gca", *common, "--out", str(tmp_path / "two")],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    one = json.loads((tmp_path / "one" / "results.json").read_text())
    two = json.loads((tmp_path / "two" / "results.json").read_text())
    assert one["inference_processes"] == 1 and two["inference_processes"] == 2
    assert one["embeddings_out_of_core"] and two["embeddings_out_of_core"]
    # data-parallel training averages two processes' gradients, so the trained model is not one process's: the
    # embeddings two processes wrote are compared with one process embedding their model (gca embed)
    _gca_here(
        "embed",
        "--checkpoint",
        str(tmp_path / "two" / "model.pt"),
        "--dataset",
        str(tmp_path / "g.npz"),
        "--no-cache",
        "--out",
        str(tmp_path / "again"),
        **blocks,
    )
    shared, alone = np.load(tmp_path / "two" / "embeddings.npy"), np.load(tmp_path / "again" / "embeddings.npy")
    assert np.array_equal(shared, alone)
    assert sorted(p.name for p in (tmp_path / "two").iterdir()) == ["embeddings.npy", "model.pt", "results.json"]
    assert list((tmp_path / "c" / "scratch").iterdir()) == []


def test_processes_with_their_own_folders_and_prepared_graphs_share_inference(tmp_path):
    """Two processes as two machines would run them: each in its own working folder with its own GCA_CACHE_DIR —
    rank 0's prepared graph made by gca prepare, rank 1's a copy of it (as copied to another machine) — through a
    launcher script. Both open their prepared graph, share inference, and nothing is written in rank 1's folders
    but its (emptied) scratch; the embeddings equal one process embedding the model."""
    import shutil
    import stat

    graph = _random_npz(tmp_path / "g.npz", 240, 1500, 10, seed=1)
    blocks = {"GCA_INFERENCE_ROWS": "40", "GCA_CACHE_DIR": str(tmp_path / "c0")}
    env = {**os.environ, "OMP_NUM_THREADS": "1", **blocks}
    _gca_here("prepare", "--dataset", str(graph), **blocks)
    shutil.copytree(tmp_path / "c0", tmp_path / "c1")
    for rank in (0, 1):
        (tmp_path / f"work{rank}").mkdir()
    launcher = tmp_path / "launch.sh"
    launcher.write_text(
        f'#!/bin/sh\ncd "{tmp_path}/work$RANK" && GCA_CACHE_DIR="{tmp_path}/c$RANK" exec '
        f'"{sys.executable}" -m gca "$@"\n'
    )
    launcher.chmod(launcher.stat().st_mode | stat.S_IXUSR)
    done = subprocess.run(
        [
            *_torchrun(),
            "--standalone",
            "--nproc-per-node",
            "2",
            "--no-python",
            str(launcher),
            "train",
            "--dataset",
            str(graph),
            "--epochs",
            "2",
            "--no-eval",
            "--quiet",
            "--set",
            "batch_size=64",
            "--set",
            "fanout=5,5",
            "--set",
            "hidden=16",
            "--out",
            str(tmp_path / "out"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    record = json.loads((tmp_path / "out" / "results.json").read_text())
    assert record["inference_processes"] == 2 and record["prepared_graph"]["opened"] is True
    assert record["prepared_graph"]["folder"].startswith(str(tmp_path / "c0"))
    assert list((tmp_path / "work1").iterdir()) == [] and list((tmp_path / "work0").iterdir()) == []
    assert list((tmp_path / "c1" / "scratch").iterdir()) == []
    assert sorted(p.name for p in (tmp_path / "c1").iterdir()) == ["prepared", "scratch"]
    # gca prepare ran without batch_size, so the sampler's unit ids were added by the mini-batch run to the prepared
    # graph each process opened: rank 1 opened its own copy
    for cache in ("c0", "c1"):
        assert len(list((tmp_path / cache / "prepared").glob("*/sampler-units.npy"))) == 1, cache
    _gca_here(
        "embed",
        "--checkpoint",
        str(tmp_path / "out" / "model.pt"),
        "--dataset",
        str(graph),
        "--out",
        str(tmp_path / "again"),
        **blocks,
    )
    assert np.array_equal(np.load(tmp_path / "out" / "embeddings.npy"), np.load(tmp_path / "again" / "embeddings.npy"))


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="finds the ranks and their phase through /proc")
def test_a_rank_killed_during_shared_inference_stops_the_other_with_one_line(tmp_path):
    """Rank 1 is killed once it has mapped an inference matrix (a scratch file in /proc/PID/maps): rank 0, waiting
    for its rows, stops with one line, no traceback of gca's, no result file and no scratch file left."""
    import signal
    import time

    _random_npz(tmp_path / "g.npz", 30_000, 200_000, 32, seed=0)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "GCA_INFERENCE_ROWS": "8", "GCA_CACHE_DIR": str(tmp_path / "c")}
    proc = subprocess.Popen(
        [
            *_torchrun(),
            "--standalone",
            "--nproc-per-node",
            "2",
            "-m",
            "gca",
            "train",
            "--dataset",
            str(tmp_path / "g.npz"),
            "--epochs",
            "1",
            "--no-eval",
            "--quiet",
            "--set",
            "batch_size=256",
            "--set",
            "steps_per_epoch=5",
            "--set",
            "hidden=64",
            "--out",
            str(tmp_path / "out"),
        ],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    victim, deadline = None, time.time() + 240
    while victim is None and time.time() < deadline and proc.poll() is None:
        for pid in _children(proc.pid):
            try:
                if (
                    b"RANK=1\x00" in Path(f"/proc/{pid}/environ").read_bytes()
                    and ".gca-scratch" in Path(f"/proc/{pid}/maps").read_text()
                ):
                    victim = pid
            except OSError:
                continue
        time.sleep(0.02)
    assert victim is not None, "rank 1 never reached inference"
    os.kill(victim, signal.SIGKILL)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode != 0
    ours = [line for line in err.splitlines() if line.startswith("gca:") and not line.startswith("gca: warning:")]
    # rank 0 either sees its peer gone ("gca: error: …") or is stopped first by torchrun, which ends the other
    # workers when one dies ("gca: interrupted; nothing was written"): which comes first is the scheduler's race
    assert ours and all(line.startswith(("gca: error:", "gca: interrupted")) for line in ours), ours
    assert not re.search(r'File ".*/gca/[a-z_/]+\.py"', err), err
    assert not (tmp_path / "out").exists()  # made by this run, left empty: removed
    assert list((tmp_path / "c" / "scratch").iterdir()) == []


@pytest.mark.parametrize("differ", ["settings", "features"])
def test_processes_started_differently_are_refused_with_one_line(tmp_path, differ):
    """Two processes through a launcher script that gives rank 1 another ``--set`` or another feature file of the
    same shape (the same edges): both stop before training, the user reads their common line once, torchrun exits
    non-zero, nothing is written."""
    graph = _random_npz(tmp_path / "g.npz", 80, 300, 6, seed=2)
    other = dict(np.load(graph))
    other["attr_matrix"] = other["attr_matrix"][::-1].copy()  # the same shape and values, on other nodes
    np.savez(tmp_path / "h.npz", **other)
    given = {
        "settings": ('--dataset "{g}"', '--dataset "{g}" --set tau=0.9'),
        "features": ('--dataset "{g}"', '--dataset "{h}"'),
    }[differ]
    zero, one = (text.format(g=graph, h=tmp_path / "h.npz") for text in given)
    done = _launched(
        tmp_path,
        f'if [ "$RANK" = 1 ]; then set -- "$@" {one}; else set -- "$@" {zero}; fi\nexec "{sys.executable}" -m gca "$@"',
        *["train", "--epochs", "2", "--no-eval", "--quiet", "--no-cache", "--set", "hidden=8"],
        *["--out", str(tmp_path / "out")],
    )
    assert done.returncode != 0
    ours = [line for line in done.stderr.splitlines() if line.startswith("gca:") and "warning" not in line[:13]]
    why = "were started with different settings" if differ == "settings" else "read different graphs"
    assert len(ours) == 1 and ours[0].startswith("gca: error: the processes " + why), ours
    assert "rank 1" in ours[0] and not re.search(r'File ".*/gca/[a-z_/]+\.py"', done.stderr), done.stderr[-3000:]
    assert not (tmp_path / "out" / "results.json").exists()


def test_a_missing_input_file_on_rank_1_alone_reaches_the_user_once(tmp_path):
    """torchrun with two processes whose feature file does not exist on rank 1 (rank 0's does): the user reads one
    ``gca: error:`` line naming the missing file — rank 0, stopped by torchrun when rank 1 exits, says no
    "interrupted" line that would read as the cause — and torchrun exits non-zero. (The same error on every rank,
    said once: tests/test_hostile.py.)"""
    graph = _random_npz(tmp_path / "g.npz", 60, 200, 5, seed=3)
    loaded = np.load(graph)
    import scipy.sparse as sp

    adj = sp.csr_matrix((loaded["adj_data"], loaded["adj_indices"], loaded["adj_indptr"]), shape=loaded["adj_shape"])
    edges = tmp_path / "edges.csv"
    np.savetxt(edges, np.stack(adj.nonzero(), axis=1), fmt="%d", delimiter=",", header="src,dst", comments="")
    np.save(tmp_path / "x.npy", loaded["attr_matrix"])
    gone = tmp_path / "nowhere" / "x.npy"
    zero = tmp_path / "x.npy"
    done = _launched(
        tmp_path,
        f'if [ "$RANK" = 1 ]; then X="{gone}"; else X="{zero}"; fi\n'
        f'exec "{sys.executable}" -m gca "$@" --features "$X"',
        *["train", "--edges", str(edges), "--epochs", "2", "--no-eval", "--quiet", "--set", "hidden=8"],
        *["--out", str(tmp_path / "out")],
    )
    assert done.returncode != 0
    ours = [line for line in done.stderr.splitlines() if line.startswith("gca:") and "warning" not in line[:13]]
    assert len(ours) == 1 and ours[0].startswith("gca: error:") and str(gone) in ours[0], done.stderr[-3000:]
    assert not re.search(r'File ".*/gca/[a-z_/]+\.py"', done.stderr), done.stderr[-3000:]
    assert not (tmp_path / "out" / "results.json").exists()


def test_a_rank_slow_to_say_its_refusal_is_not_stopped_before_it_has(tmp_path):
    """Rank 1 words its line only after rank 0 has said its own and left (a wait put in through
    ``sitecustomize``), as a loaded machine may order them: torchrun stops rank 1 meanwhile. A stop signal waits
    while an error is being handled, so rank 1 ends without a traceback, and its line, the same as rank 0's, is
    not said twice."""
    graph = _random_npz(tmp_path / "g.npz", 80, 300, 6, seed=2)
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        textwrap.dedent("""\
        import os
        if os.environ.get("RANK") == "1":
            import pathlib
            import time

            import gca.cli.guard as shell

            said = shell._one_line

            def others():
                found = []
                for stat in pathlib.Path("/proc").glob("[0-9]*/stat"):
                    try:
                        parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
                    except (OSError, IndexError, ValueError):
                        continue
                    if parent == os.getppid() and int(stat.parent.name) != os.getpid():
                        found.append(stat.parent.name)
                return found

            def after_rank_0(exc):
                deadline = time.monotonic() + 30
                while others() and time.monotonic() < deadline:
                    time.sleep(0.05)
                time.sleep(0.5)  # torchrun's SIGTERM lands here (it checks its processes every 0.1 s)
                return said(exc)

            shell._one_line = after_rank_0
        """)
    )
    path = os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))
    done = _launched(
        tmp_path,
        f'if [ "$RANK" = 1 ]; then set -- "$@" --set tau=0.9; fi\nexec "{sys.executable}" -m gca "$@"',
        *["train", "--dataset", str(graph), "--epochs", "2", "--no-eval", "--quiet", "--no-cache"],
        *["--set", "hidden=8", "--out", str(tmp_path / "out")],
        PYTHONPATH=path,
    )
    assert done.returncode != 0
    ours = [line for line in done.stderr.splitlines() if line.startswith("gca:") and "warning" not in line[:13]]
    assert len(ours) == 1 and "started with different settings" in ours[0], done.stderr[-3000:]
    assert not re.search(r'File ".*/gca/[a-z_/]+\.py"', done.stderr), done.stderr[-3000:]
    assert not (tmp_path / "out").exists()


_RESUMED = [
    "train",
    "--dataset",
    "Karate",
    "--no-eval",
    "--quiet",
    "--set",
    "hidden=8",
    "--seed",
    "1",
    "--checkpoint-every",
    "2",
]


@pytest.fixture(scope="module")
def checkpointed(tmp_path_factory) -> Path:
    """An --out folder whose run trained 4 epochs and kept its training checkpoint."""
    out = tmp_path_factory.mktemp("resumed") / "out"
    _gca_here(*_RESUMED, "--epochs", "4", "--out", str(out))
    return out


@pytest.mark.xdist_group("checkpointed")
@pytest.mark.parametrize("rank1", ["a copy", "none"])
def test_a_rank_resuming_while_another_starts_afresh_is_refused_with_one_line(tmp_path, checkpointed, rank1):
    """``--resume`` with each process's own --out, as on two machines: rank 0's holds a checkpoint of epoch 4, rank
    1's a copy of it (both resume and train epochs 5 to 8) or none (rank 1 would start afresh while rank 0 resumes:
    refused before training, the line both ranks find said once, nothing written; before, the ranks trained from
    different epochs and waited for each other's collectives)."""
    import shutil

    shutil.copytree(checkpointed, tmp_path / "zero")
    if rank1 == "a copy":
        shutil.copytree(checkpointed, tmp_path / "one")
    before = (tmp_path / "zero" / "results.json").read_bytes()
    done = _launched(
        tmp_path,
        f'if [ "$RANK" = 1 ]; then o=one; else o=zero; fi\nexec "{sys.executable}" -m gca "$@" --out "{tmp_path}/$o"',
        *_RESUMED,
        *["--epochs", "8", "--resume"],
        GCA_DIST_TIMEOUT="60",
    )
    if rank1 == "a copy":
        assert done.returncode == 0, done.stderr[-3000:]
        resumed = json.loads((tmp_path / "zero" / "results.json").read_text())
        assert len(resumed["losses"]) == 8 and resumed["losses"][:4] == json.loads(before)["losses"]
        return
    assert done.returncode != 0
    ours = [line for line in done.stderr.splitlines() if line.startswith("gca:") and "warning" not in line[:13]]
    assert len(ours) == 1, ours
    assert ours[0].startswith(
        "gca: error: the processes would not start from the same training state: rank 1 "
        "starts afresh (no --resume, or no checkpoint in its --out) while rank 0 resumes from "
        "epoch 4; "
    ), ours
    assert not re.search(r'File ".*/gca/[a-z_/]+\.py"', done.stderr), done.stderr[-3000:]
    assert (tmp_path / "zero" / "results.json").read_bytes() == before  # the earlier run, untouched


def test_the_starting_points_compared_say_epochs_and_checkpoints(tmp_path):
    """What :func:`gca.train.checkpoint.resume_point` gives the comparison, and the line each difference gets."""
    import hashlib

    from gca.cli.flags import FLAGS
    from gca.errors import render
    from gca.train.checkpoint import resume_point
    from gca.train.distributed import _AFRESH, _different_starts

    torch.save({"epoch": 3, "weights": torch.zeros(4)}, tmp_path / "c.pt")
    (tmp_path / "bad.pt").write_bytes(b"not a checkpoint")
    for name, epoch in (("c.pt", 3), ("bad.pt", -1)):
        digest = hashlib.sha256((tmp_path / name).read_bytes()).hexdigest()
        assert resume_point(tmp_path / name) == (epoch, digest)
    assert resume_point(None) is None and resume_point(tmp_path / "missing.pt") is None

    assert (
        _different_starts(1, 2, 4)
        .split(": ", 1)[1]
        .startswith("rank 1 resumes from epoch 2 while rank 0 resumes from epoch 4; ")
    )
    assert "rank 3 resumes from epoch 4 while rank 0 starts afresh" in _different_starts(3, 4, _AFRESH)
    assert (
        "rank 1 resumes from another checkpoint than rank 0's (both at epoch 4, their contents differ)"
        in _different_starts(1, 4, 4)
    )
    assert "rank 1 resumes from a checkpoint whose epoch cannot be read while rank 0" in _different_starts(1, -1, 4)
    starts = ((2, 4), (4, _AFRESH), (4, 4), (-1, 4), (_AFRESH, 4))
    all_lines = [render(_different_starts(1, a, b), FLAGS) for a, b in starts]  # as the command line says them
    assert all("\n" not in line and "or start them all without --resume" in line for line in all_lines)
