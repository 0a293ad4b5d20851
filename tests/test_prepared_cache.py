"""The prepared graph on disk (gca.run.store): equal to the graph cleaned from the input, array for array; used only
for the input, version and contents it was made from; rebuilt after a kill, a truncation or a change; and training
from it gives the embeddings training from the input gives, bit for bit."""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from gca.cli import main
from gca.cli.common import graph_source, load_graph
from gca.graph.features import dense_input
from gca.graph.graph import prepare_graph
from gca.graph.sampling import edge_unit_ids
from gca.run import store as cache_module
from gca.run.job import Job
from gca.run.store import PreparedStore


def _npz_graph(path: Path, n: int = 120, dense: bool = True, seed: int = 0, half: bool = False) -> Path:
    """A graph whose feature column 0 is the node's id over n (a misaligned row shows), with repeated edges, self-loops
    and an isolated node, in the gnn-benchmark npz layout (members stored uncompressed: they are mapped)."""
    rng = np.random.default_rng(seed)
    source = rng.integers(0, n - 1, 6 * n)
    target = rng.integers(0, n - 1, 6 * n)  # node n - 1 has no edge
    adj = sp.csr_matrix((np.ones(source.size, dtype=np.float32), (source, target)), shape=(n, n))
    adj.data[:] = 1  # repeats were summed into counts, which would be edge weights: an unweighted graph
    x = rng.random((n, 8)).astype(np.float16 if half else np.float32)
    x[:, 0] = np.arange(n) / n  # distinct for every node (float16: n ≤ 2048)
    arrays = {
        "adj_data": adj.data,
        "adj_indices": adj.indices,
        "adj_indptr": adj.indptr,
        "adj_shape": adj.shape,
        "labels": np.arange(n) % 3,
    }
    if dense:
        arrays["attr_matrix"] = x
    else:
        sparse = sp.csr_matrix((rng.random((n, 30)) < 0.1).astype(np.float32))
        arrays.update(
            attr_data=sparse.data, attr_indices=sparse.indices, attr_indptr=sparse.indptr, attr_shape=sparse.shape
        )
    np.savez(path, **arrays)
    return path


def _csv_graph(folder: Path) -> list[str]:
    """Edge, feature and label files with string ids (the files' order is not the node order)."""
    folder.mkdir(parents=True, exist_ok=True)
    names = [f"n{i:03d}" for i in range(40)]
    rng = np.random.default_rng(3)
    edges = [(names[a], names[b]) for a, b in rng.integers(0, 40, (150, 2)) if a != b]
    (folder / "edges.csv").write_text("source,target\n" + "".join(f"{a},{b}\n" for a, b in edges))
    order = rng.permutation(40)
    (folder / "features.csv").write_text("".join(f"{names[i]},{i},{i % 5},{(i * 7) % 3}\n" for i in order))
    (folder / "labels.csv").write_text("".join(f"{names[i]},{'abc'[i % 3]}\n" for i in order if i % 9))
    return [str(folder / "edges.csv"), str(folder / "features.csv"), str(folder / "labels.csv")]


def _args(**given) -> argparse.Namespace:
    base = {
        "dataset": None,
        "data_dir": None,
        "edges": None,
        "features": None,
        "labels": None,
        "directed": False,
        "cache": None,
    }
    return argparse.Namespace(**{**base, **given})


def _assert_same_graph(stored, cleaned) -> None:
    assert stored.num_nodes == cleaned.num_nodes and stored.directed == cleaned.directed
    assert stored.edge_index.dtype == cleaned.edge_index.dtype
    assert torch.equal(stored.edge_index, cleaned.edge_index)
    assert stored.warnings == cleaned.warnings
    if sp.issparse(cleaned.raw_features):
        assert sp.issparse(stored.raw_features)
        assert (stored.raw_features != cleaned.raw_features).nnz == 0
    else:
        assert stored.raw_features.dtype == cleaned.raw_features.dtype
        assert np.array_equal(stored.raw_features, cleaned.raw_features)
    a, b = dense_input(stored.features), dense_input(cleaned.features)
    a, b = (m.to_dense() if hasattr(m, "to_dense") else m for m in (a, b))
    assert torch.equal(a, b)
    assert (stored.y is None) == (cleaned.y is None)
    if cleaned.y is not None:
        assert torch.equal(stored.y, cleaned.y)


@pytest.mark.parametrize("kind", ["dense", "float16", "sparse", "files", "directed files"])
@pytest.mark.parametrize("norm", ["none", "row"])
def test_the_prepared_graph_equals_the_graph_cleaned_from_the_input(tmp_path, cache_dir, kind, norm):
    if kind in ("files", "directed files"):
        edges, features, labels = _csv_graph(tmp_path / "files")
        args = _args(edges=edges, features=features, labels=labels, directed=kind == "directed files")
    else:
        args = _args(dataset=str(_npz_graph(tmp_path / "g.npz", dense=kind != "sparse", half=kind == "float16")))
    loaded = load_graph(args)
    store = PreparedStore(graph_source(args))
    assert not store.usable() and store.write(
        load_graph(args), prepare_graph(load_graph(args).data, loaded.directed, norm)
    )
    again = PreparedStore(graph_source(args))
    assert again.usable() and again.notes == []
    reopened = again.loaded()
    for field in ("name", "named", "node_ids", "directed", "warnings", "class_names"):
        assert getattr(reopened, field) == getattr(loaded, field), field
    assert torch.equal(reopened.data.y, loaded.data.y)
    for norm_asked in ("none", "row"):  # the raw features are stored: either normalisation opens from them
        _assert_same_graph(again.graph(norm_asked), prepare_graph(load_graph(args).data, loaded.directed, norm_asked))
    assert again.graph(norm).edge_index.dtype == torch.int32


def test_splits_and_class_names_travel_with_the_prepared_graph(tmp_path, cache_dir, shared_data):
    args = _args(dataset="Cora", data_dir=str(shared_data))
    source = graph_source(args)
    assert source is not None and source.paths == (str((shared_data / "Cora" / "raw").resolve()),)
    loaded = load_graph(args)
    store = PreparedStore(source, tmp_path / "c")
    assert store.write(loaded, prepare_graph(loaded.data, loaded.directed))
    again = PreparedStore(source, tmp_path / "c")
    assert again.usable()
    reopened = again.loaded()
    assert reopened.public is not None and len(reopened.public) == len(loaded.public)
    for mine, theirs in zip(reopened.public, loaded.public, strict=True):
        for a, b in zip(mine, theirs, strict=True):
            assert np.array_equal(a, b)
    assert reopened.splits == loaded.splits  # None for Cora (random splits are drawn from the seed)


def _train(folder: Path, out: str, *extra: str) -> tuple[np.ndarray, dict]:
    args = [
        "train",
        "--dataset",
        str(folder / "g.npz"),
        "--epochs",
        "2",
        "--quiet",
        "--splits",
        "1",
        "--set",
        "hidden=16",
        "--set",
        "batch_size=32",
        "--set",
        "fanout=5,5",
        "--out",
        str(folder / out),
        *extra,
    ]
    assert main(args) == 0
    return np.load(folder / out / "embeddings.npy"), json.loads((folder / out / "results.json").read_text())


def test_training_from_the_prepared_graph_equals_training_from_the_input(tmp_path, cache_dir, capsys):
    _npz_graph(tmp_path / "g.npz", n=300)
    plain, record = _train(tmp_path, "plain", "--no-cache")
    assert "prepared_graph" not in record and not cache_dir.exists()
    written, record = _train(tmp_path, "writes", "--cache")
    assert record["prepared_graph"]["opened"] is False
    assert "stored the prepared graph in" in capsys.readouterr().err
    opened, record = _train(tmp_path, "opens")  # no flag: a usable folder is opened whatever the graph's size
    assert record["prepared_graph"]["opened"] is True
    assert np.array_equal(plain, written) and np.array_equal(plain, opened)
    folder = Path(record["prepared_graph"]["folder"])
    kept = {p.stem.split("-")[0] for p in folder.glob("*.npy")}
    assert {"centrality", "views", "sampler"} <= kept  # what training derives was added for later runs
    units = np.load(folder / "sampler-units.npy")
    store = PreparedStore(graph_source(_args(dataset=str(tmp_path / "g.npz"))))
    assert store.usable()
    g = store.graph("none")
    assert np.array_equal(units, edge_unit_ids(g.edge_index, g.num_nodes, True).numpy())


def test_small_graphs_are_not_written_unless_asked_and_no_cache_reads_nothing(tmp_path, cache_dir):
    _npz_graph(tmp_path / "g.npz")
    _, record = _train(tmp_path, "auto")
    assert "prepared_graph" not in record and not cache_dir.exists()  # 10^7 directed edges and up only
    _train(tmp_path, "writes", "--cache")
    _, record = _train(tmp_path, "off", "--no-cache")
    assert "prepared_graph" not in record


def _stored_folder(tmp_path: Path) -> tuple[Path, PreparedStore]:
    _train(tmp_path, "first", "--cache")
    store = PreparedStore(graph_source(_args(dataset=str(tmp_path / "g.npz"))))
    assert store.usable()
    return store.folder, store


def test_a_prepared_graph_of_other_contents_is_rebuilt_not_trusted(tmp_path, cache_dir, capsys):
    _npz_graph(tmp_path / "g.npz", n=200, seed=0)
    folder, _ = _stored_folder(tmp_path)
    stat = (tmp_path / "g.npz").stat()
    _npz_graph(tmp_path / "changed.npz", n=200, seed=1)  # same size, other edges and features
    os.replace(tmp_path / "changed.npz", tmp_path / "g.npz")
    os.utime(tmp_path / "g.npz", ns=(stat.st_atime_ns, stat.st_mtime_ns))  # even the modification time kept
    capsys.readouterr()
    rebuilt, record = _train(tmp_path, "after", "--cache")
    err = capsys.readouterr().err
    assert "was made from other contents of the input files" in err and "stored the prepared graph" in err
    assert record["prepared_graph"]["opened"] is False
    fresh, _ = _train(tmp_path, "fresh", "--no-cache")
    assert np.array_equal(rebuilt, fresh)
    assert not list(cache_dir.glob("prepared/.*"))  # no stale or partial folder is left


@pytest.mark.parametrize(
    "damage",
    ["version", "format", "truncated", "missing", "meta", "keys", "shape", "nodes", "directed", "replaced", "file"],
)
def test_a_prepared_graph_of_another_version_or_damaged_is_rebuilt(tmp_path, cache_dir, capsys, damage):
    _npz_graph(tmp_path / "g.npz")
    folder, _ = _stored_folder(tmp_path)
    meta = json.loads((folder / "meta.json").read_text())
    if damage == "version":
        meta["gca"] = "0.0.1"
    elif damage == "format":
        meta["format"] = 0
    if damage in ("version", "format"):
        (folder / "meta.json").write_text(json.dumps(meta))
    elif damage == "truncated":
        with (folder / "edge_index.npy").open("r+b") as f:
            f.truncate(f.seek(0, 2) - 4)
    elif damage == "missing":
        (folder / "x.npy").unlink()
    elif damage == "keys":
        del meta["loaded"]
        (folder / "meta.json").write_text(json.dumps(meta))
    elif damage == "shape":  # a complete .npy, but not the array meta.json names: fewer edges
        np.save(folder / "edge_index.npy", np.load(folder / "edge_index.npy")[:, :-2])
    elif damage in ("nodes", "directed"):  # meta.json edited by hand, its entries then disagreeing with the arrays
        meta["num_nodes" if damage == "nodes" else "directed"] = 119 if damage == "nodes" else True
        (folder / "meta.json").write_text(json.dumps(meta))
    elif damage == "replaced":  # the same shape and dtype, other contents: the labels permuted
        np.save(folder / "y.npy", np.load(folder / "y.npy")[::-1].copy())
    elif damage == "file":  # something else where the folder should be
        import shutil

        shutil.rmtree(folder)
        folder.write_text("not a folder")
    else:
        (folder / "meta.json").write_text("{")
    capsys.readouterr()
    rebuilt, record = _train(tmp_path, "after", "--cache")
    err = capsys.readouterr().err
    assert "it was removed, and the graph is read from the input" in err or damage == "file"
    assert record["prepared_graph"]["opened"] is False
    assert np.array_equal(rebuilt, _train(tmp_path, "fresh", "--no-cache")[0])
    assert PreparedStore(graph_source(_args(dataset=str(tmp_path / "g.npz")))).usable()


def test_a_prepared_graph_for_another_input_is_not_used(tmp_path, cache_dir):
    first = _npz_graph(tmp_path / "a.npz", seed=0)
    second = _npz_graph(tmp_path / "b.npz", seed=1)
    one, two = (graph_source(_args(dataset=str(p))) for p in (first, second))
    assert one.key != two.key
    loaded = load_graph(_args(dataset=str(first)))
    store = PreparedStore(one)
    assert store.write(loaded, prepare_graph(loaded.data))
    impostor = PreparedStore(two)
    impostor.folder = store.folder  # a folder found under another input's name (copied, renamed)
    assert not impostor.usable() and "was made from another input" in impostor.notes[0]


def test_a_touched_or_copied_input_with_the_same_contents_keeps_its_prepared_graph(tmp_path, cache_dir):
    _npz_graph(tmp_path / "g.npz")
    folder, _ = _stored_folder(tmp_path)
    before = json.loads((folder / "meta.json").read_text())["identity"]
    os.utime(tmp_path / "g.npz", ns=(1, 10**18))
    store = PreparedStore(graph_source(_args(dataset=str(tmp_path / "g.npz"))))
    assert store.usable() and store.notes == []
    after = json.loads((folder / "meta.json").read_text())["identity"]
    assert after != before and after[0][2] == 10**18  # remembered: the next run does not hash the file again


def test_no_space_for_the_prepared_graph_is_one_line_and_the_run_goes_on(tmp_path, cache_dir, monkeypatch, capsys):
    _npz_graph(tmp_path / "g.npz")
    monkeypatch.setattr(cache_module.shutil, "disk_usage", lambda path: SimpleNamespace(free=1000))
    embeddings, record = _train(tmp_path, "run", "--cache")
    assert "the prepared graph was not stored: it needs" in capsys.readouterr().err
    assert "prepared_graph" not in record and not list((cache_dir / "prepared").iterdir())
    assert np.array_equal(embeddings, _train(tmp_path, "fresh", "--no-cache")[0])


def test_gca_prepare_writes_once_and_a_killed_prepare_is_rebuilt(tmp_path, cache_dir, capsys):
    """kill -9 while ``gca prepare`` writes (whenever it lands: before, during or after the write), then a rerun:
    the rerun stores a usable folder equal to the cleaned input, and no partial folder is left."""
    graph = _npz_graph(tmp_path / "g.npz", n=60_000)
    env = {**os.environ, "GCA_CACHE_DIR": str(cache_dir)}
    command = [sys.executable, "-m", "gca.cli", "prepare", "--dataset", str(graph)]
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        if list((cache_dir / "prepared").glob(".*partial*")) if (cache_dir / "prepared").is_dir() else []:
            break
        time.sleep(0.005)
    process.send_signal(signal.SIGKILL)
    process.wait()
    # the rerun and a third run, as the killed one would have run them, here (GCA_CACHE_DIR is cache_dir)
    assert main(command[3:]) == 0
    assert "g: 60000 nodes" in capsys.readouterr().out
    assert main(command[3:]) == 0
    assert "already prepared" in capsys.readouterr().out
    store = PreparedStore(graph_source(_args(dataset=str(graph))))
    assert store.usable()
    loaded = load_graph(_args(dataset=str(graph)))
    _assert_same_graph(store.graph("none"), prepare_graph(loaded.data))
    assert not list((cache_dir / "prepared").glob(".*"))


def test_gca_prepare_refuses_an_input_that_is_not_on_disk(capsys):
    assert main(["prepare"]) != 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "gca prepare stores a graph read from disk" in err


def test_a_job_opened_from_the_prepared_graph_keeps_its_warnings_and_summary(tmp_path, cache_dir):
    _npz_graph(tmp_path / "g.npz")
    args = _args(dataset=str(tmp_path / "g.npz"))
    fresh = Job.open(load_graph(args))
    fresh.clean("none")
    store = PreparedStore(graph_source(args))
    store.write(load_graph(args), prepare_graph(load_graph(args).data))
    opened = Job.open(store.loaded(), store=store)
    opened.clean("none")
    assert opened.warnings == fresh.warnings and opened.stored
    assert opened.config == fresh.config


def test_every_value_of_an_edge_stays_with_its_edge_in_the_prepared_graph(tmp_path, cache_dir):
    """A weighted graph with edge features whose values encode their edge (u·1000 + v): after storing and opening,
    each edge still carries its own weight and features, and the views built from it draw the same units."""
    from torch_geometric.data import Data

    from gca.config import GCAConfig
    from gca.datasets.base import LoadedDataset
    from gca.graph.sparse import edge_values
    from gca.run.integrity import GraphSource
    from gca.train.estimator import GCA

    rng = np.random.default_rng(5)
    n = 50
    pairs = {(int(a), int(b)) for a, b in rng.integers(0, n, (200, 2)) if a != b}
    pairs |= {(b, a) for a, b in pairs}
    index = torch.tensor(sorted(pairs)).t()
    code = (torch.minimum(index[0], index[1]) * 1000 + torch.maximum(index[0], index[1])).double()
    data = Data(
        x=torch.rand(n, 6),
        edge_index=index,
        edge_weight=code.float() / 1000,
        edge_attr=torch.stack([code, -code], 1).float(),
    )
    (tmp_path / "input.bin").write_bytes(b"graph")
    source = GraphSource.of("weighted", [tmp_path / "input.bin"], "python")
    graph = prepare_graph(data)
    store = PreparedStore(source)
    assert store.write(LoadedDataset("weighted", data, named=False), graph)
    opened = PreparedStore(source)
    assert opened.usable()
    again = opened.graph("none")
    weight, attr = edge_values(again.edge_index)
    u, v = again.edge_index.long()
    expected = (torch.minimum(u, v) * 1000 + torch.maximum(u, v)).float()
    assert torch.equal(attr[:, 0], expected) and torch.equal(attr[:, 1], -expected)
    assert torch.allclose(weight, expected / 1000)
    assert torch.equal(again.edge_weight, graph.edge_weight) and torch.equal(again.edge_attr, graph.edge_attr)
    estimator = GCA(GCAConfig(hidden=8, proj_hidden=8, epochs=1))
    fresh, kept = estimator.prepare(graph), estimator.prepare(again, store=opened)
    reused = estimator.prepare(opened.graph("none"), store=opened)  # read back from the folder this time
    for a, b, c in zip(fresh.views, kept.views, reused.views, strict=True):
        assert torch.equal(a.edge_prob, b.edge_prob) and torch.equal(a.edge_prob, c.edge_prob)
        assert torch.equal(a.feature_prob, c.feature_prob)
        assert torch.equal(a.units, c.units)
    assert torch.equal(fresh.centrality, reused.centrality)


def test_a_kept_array_of_another_shape_is_computed_again(tmp_path, cache_dir):
    _npz_graph(tmp_path / "g.npz")
    folder, _ = _stored_folder(tmp_path)
    centrality = next(folder.glob("centrality-*.npy"))
    right = np.load(centrality)
    np.save(centrality, right[:-1])  # complete, but one node short
    _, record = _train(tmp_path, "again")
    assert record["prepared_graph"]["opened"] is True
    assert np.array_equal(np.load(centrality), right)  # computed and stored again


@pytest.mark.parametrize(
    "pattern",
    ["centrality-*", "views-*-edge1", "views-*-edge2", "views-*-feature1", "views-*-feature2", "sampler-units"],
)
def test_a_derived_array_replaced_by_another_of_the_same_shape_is_computed_again(tmp_path, cache_dir, capsys, pattern):
    _npz_graph(tmp_path / "g.npz")
    folder, _ = _stored_folder(tmp_path)
    derived = json.loads((folder / "meta.json").read_text())["derived"]
    assert {p.stem for p in folder.glob("*.npy")} >= set(derived) and len(derived) == 6  # each recorded when added
    path = next(folder.glob(f"{pattern}.npy"))
    right = np.load(path)
    np.save(path, right[::-1].copy())  # the same shape and dtype, the values moved to other nodes/edges/features
    assert not np.array_equal(np.load(path), right)
    capsys.readouterr()
    opened, record = _train(tmp_path, "again")
    err = [line for line in capsys.readouterr().err.splitlines() if "prepared graph" in line]
    assert record["prepared_graph"]["opened"] is True
    assert err == [
        f"gca: the prepared graph in {folder} holds a {path.name} whose contents are not the ones "
        "written (replaced since); it is computed again"
    ], err
    assert np.array_equal(np.load(path), right)  # computed and stored again, and recorded: the next run trusts it
    assert np.array_equal(opened, _train(tmp_path, "fresh", "--no-cache")[0])
    capsys.readouterr()
    assert np.array_equal(_train(tmp_path, "third")[0], opened) and "prepared graph" not in capsys.readouterr().err


def _simulate_read_only(monkeypatch, folder: Path) -> None:
    """``folder`` as a read-only mount shows it (for a root user, whom chmod does not stop): opening a file for
    writing, renaming or removing a file there fails with EROFS — removing one even when there is none, as Linux
    checks the mount before it looks the name up."""
    import errno
    import pathlib

    def inside(path) -> bool:
        return Path(os.path.abspath(path)).is_relative_to(folder)

    def refuse(path) -> OSError:
        return OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))

    opened, unlink, replace = pathlib.Path.open, pathlib.Path.unlink, os.replace

    def open_(self, mode="r", *args, **kwargs):
        if inside(self) and any(c in mode for c in "wax+"):
            raise refuse(self)
        return opened(self, mode, *args, **kwargs)

    def unlink_(self, missing_ok=False):
        if inside(self):
            raise refuse(self)
        return unlink(self, missing_ok)

    def replace_(src, dst, *args, **kwargs):
        if inside(src) or inside(dst):
            raise refuse(dst)
        return replace(src, dst, *args, **kwargs)

    monkeypatch.setattr(pathlib.Path, "open", open_)
    monkeypatch.setattr(pathlib.Path, "unlink", unlink_)
    monkeypatch.setattr(os, "replace", replace_)


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@pytest.mark.parametrize("how", ["read-only mount", "no write permission"])
def test_a_read_only_prepared_graph_computes_what_it_lacks_in_memory_and_says_so_once(
    tmp_path, cache_dir, capsys, monkeypatch, how
):
    """A prepared graph made with degree centrality and mounted read-only (or without write permission) for a run
    with eigenvector centrality: the five arrays it lacks (the centrality, the views' four probabilities) are
    computed in memory, one line says they were not stored, the folder is left as it was, and the embeddings equal
    those of a run without a prepared graph."""
    _npz_graph(tmp_path / "g.npz")
    folder, _ = _stored_folder(tmp_path)
    before = _files(folder)
    capsys.readouterr()
    if how == "read-only mount":
        _simulate_read_only(monkeypatch, folder)
    else:
        if os.geteuid() == 0:
            pytest.skip("root writes whatever the permissions (the read-only mount case covers it)")
        folder.chmod(0o555)
    try:
        embeddings, record = _train(tmp_path, "eigen", "--centrality", "eigenvector")
    finally:
        folder.chmod(0o755)
    err = capsys.readouterr().err
    said = [line for line in err.splitlines() if "prepared graph" in line]
    reason = "Read-only file system" if how == "read-only mount" else "Permission denied"
    assert said == [
        f"gca: the prepared graph in {folder} could not be written ({reason}): centrality-eigenvector "
        "and 4 more arrays were computed in memory for this run and not stored"
    ], err
    assert record["prepared_graph"]["opened"] is True
    assert _files(folder) == before
    monkeypatch.undo()
    assert np.array_equal(embeddings, _train(tmp_path, "fresh", "--no-cache", "--centrality", "eigenvector")[0])


def test_a_refused_prepared_graph_is_removed_once_not_hashed_on_every_run(tmp_path, cache_dir, capsys):
    _npz_graph(tmp_path / "g.npz")
    folder, _ = _stored_folder(tmp_path)
    meta = json.loads((folder / "meta.json").read_text())
    meta["gca"] = "0.0.1"
    (folder / "meta.json").write_text(json.dumps(meta))
    capsys.readouterr()
    _train(tmp_path, "second")  # below 10^7 edges and no --cache: the stale folder goes, nothing is written
    assert "it was removed" in capsys.readouterr().err and not folder.exists()
    _train(tmp_path, "third")
    assert "prepared graph" not in capsys.readouterr().err
    assert not [p for p in (cache_dir / "prepared").iterdir()]


def test_gca_prepare_says_what_is_wrong_with_missing_files(tmp_path, cache_dir, capsys):
    assert main(["prepare", "--edges", str(tmp_path / "none.csv"), "--features", str(tmp_path / "x.csv")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "none.csv" in err[0] and "does not exist" in err[0], err
    assert not cache_dir.exists()


def test_a_malformed_inference_block_size_is_said_before_training(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("GCA_INFERENCE_ROWS", "abc")
    log = tmp_path / "log.csv"
    assert (
        main(
            [
                "train",
                "--epochs",
                "3",
                "--quiet",
                "--no-eval",
                "--set",
                "warmup_steps=0",
                "--log-csv",
                str(log),
                "--out",
                str(tmp_path / "out"),
            ]
        )
        == 2
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "GCA_INFERENCE_ROWS='abc'" in err[0] and "rows of an inference block" in err[0], err
    assert not log.exists() or len(log.read_text().splitlines()) <= 1  # no epoch was trained
    assert not (tmp_path / "out").exists()


def test_the_views_are_weighed_a_block_at_a_time_after_the_heap_is_trimmed_with_the_same_probabilities(monkeypatch):
    """gca prepare's peak: the views' temporaries are those of one block of edges (not of all of them, which made
    the command's peak above the reading's), made after the cleaning's freed memory went back to the kernel; the
    probabilities do not depend on the block."""
    import gca.augment.augmentors as augmentors
    import gca.augment.prepared as prepared
    from gca.config import build_config
    from gca.datasets import karate_club

    assert augmentors.UNIT_BLOCK <= 1 << 20
    graph = prepare_graph(karate_club(), directed=False)
    config = build_config("Karate")
    events: list[str] = []
    monkeypatch.setattr(prepared, "trim_heap", lambda: events.append("trimmed"))
    built = prepared.build_augmentors
    monkeypatch.setattr(prepared, "build_augmentors", lambda *a, **k: (events.append("views"), built(*a, **k))[1])
    whole = prepared.prepare(graph, config)
    assert events == ["trimmed", "views"]
    monkeypatch.setattr(augmentors, "UNIT_BLOCK", 7)  # 156 directed edges in 23 blocks
    blocked = prepared.prepare(graph, config)
    for one, other in zip(whole.views, blocked.views, strict=True):
        assert torch.allclose(one.edge_prob, other.edge_prob, rtol=1e-6, atol=0)
        assert torch.equal(one.feature_prob, other.feature_prob)
