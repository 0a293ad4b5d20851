import os
import shutil

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from gca.datasets import KARATE_INSTRUCTOR_FACTION, DatasetError, karate_club, load_dataset, read_npz_graph


def test_planetoid_cora_from_read_only_folder(shared_data, cache_dir):
    loaded = load_dataset("Cora", data_dir=shared_data)
    data = loaded.data
    assert loaded.name == "Cora"
    assert data.x.shape == (2708, 1433) and data.y.max() == 6
    assert data.edge_index.shape[1] == 10556
    # nothing was written next to the raw files (not even by root): processing went to the cache
    assert not (shared_data / "Cora" / "processed").exists()
    assert len(list(cache_dir.glob("processed-data/*/Cora/processed"))) == 1


def test_read_only_copy_processes_into_cache(shared_data, tmp_path, cache_dir):
    data_dir = tmp_path / "ro"
    shutil.copytree(shared_data / "Cora", data_dir / "Cora")
    for root, dirs, files in os.walk(data_dir):
        for name in files:
            os.chmod(os.path.join(root, name), 0o444)
        for name in dirs:
            os.chmod(os.path.join(root, name), 0o555)
    os.chmod(data_dir, 0o555)
    try:
        loaded = load_dataset("cora", data_dir=data_dir)
        assert loaded.data.num_nodes == 2708
        assert len(list(cache_dir.glob("processed-data/*/Cora/processed"))) == 1
        assert not (data_dir / "Cora" / "processed").exists()
    finally:
        for root, dirs, _ in os.walk(data_dir):
            os.chmod(root, 0o755)
            for name in dirs:
                os.chmod(os.path.join(root, name), 0o755)


def test_forced_read_only_path_goes_to_cache(shared_data, cache_dir, monkeypatch):
    import gca.datasets.pyg as ds

    monkeypatch.setattr(ds, "_writable", lambda path: False)
    loaded = load_dataset("Cora", data_dir=shared_data)
    assert loaded.data.num_nodes == 2708
    (mirror,) = cache_dir.glob("processed-data/*/Cora")
    assert (mirror / "raw").is_symlink() and (mirror / "processed").is_dir()


def test_npz_cora(shared_data):
    data = read_npz_graph(shared_data / "npz" / "cora.npz")
    assert data.x.is_sparse and tuple(data.x.shape) == (2708, 1433)
    assert data.y.shape == (2708,)
    dense = data.x.to_dense()
    assert int((dense.abs().sum(0) == 0).sum()) == 1  # the one all-zero column of this variant
    row, col = data.edge_index
    assert torch.equal(torch.sort(row * 2708 + col).values, torch.sort(col * 2708 + row).values)  # undirected
    loaded = load_dataset(str(shared_data / "npz" / "cora.npz"))
    assert loaded.name == "cora" and loaded.data.num_nodes == 2708
    assert not loaded.named  # a file called cora.npz does not pick up the shipped Cora hyperparameters


def test_npz_round_trip_and_missing_arrays(tmp_path):
    adj = sp.csr_matrix(np.array([[0, 1, 0], [0, 0, 1], [0, 0, 0]], dtype=np.float32))
    attr = sp.csr_matrix(np.array([[1, 0], [0, 2.5], [1, 1]], dtype=np.float32))
    path = tmp_path / "g.npz"
    np.savez(
        path,
        adj_data=adj.data,
        adj_indices=adj.indices,
        adj_indptr=adj.indptr,
        adj_shape=adj.shape,
        attr_data=attr.data,
        attr_indices=attr.indices,
        attr_indptr=attr.indptr,
        attr_shape=attr.shape,
    )
    data = read_npz_graph(path)
    assert data.x.to_dense().tolist() == [[1, 0], [0, 2.5], [1, 1]]  # values kept, not binarised
    assert data.edge_index.shape[1] == 4 and data.y is None
    assert read_npz_graph(path, directed=True).edge_index.shape[1] == 2
    bad = tmp_path / "bad.npz"
    np.savez(bad, adj_data=adj.data)
    with pytest.raises(DatasetError, match="lacks the array"):
        read_npz_graph(bad)
    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"not a zip")
    with pytest.raises(DatasetError, match="cannot read"):
        read_npz_graph(junk)


def test_missing_dataset_names_expected_files(tmp_path, cache_dir, offline):
    with pytest.raises(DatasetError) as info:
        load_dataset("Amazon-Photo", data_dir=tmp_path)
    message = str(info.value)
    assert "amazon_electronics_photo.npz" in message and str(tmp_path / "Photo" / "raw") in message
    assert "\n" not in message


def test_unknown_dataset():
    with pytest.raises(DatasetError, match="unknown dataset"):
        load_dataset("Cora2")


def test_suite_data_is_a_read_only_copy(shared_data):
    """Tests see read-only data whether ../shared/data is read-only (CI) or writable (a user's clone)."""
    from conftest import SHARED_DATA

    assert shared_data.resolve() != SHARED_DATA.resolve()
    for path in [shared_data, *shared_data.rglob("*")]:
        assert not path.stat().st_mode & 0o222, f"{path} is writable"


def test_path_or_name_is_decided_by_what_exists(shared_data, cache_dir, tmp_path, monkeypatch):
    """A file is a graph file, a folder a dataset folder, anything else a name — separators do not decide."""
    monkeypatch.chdir(tmp_path)
    shutil.copy(shared_data / "npz" / "cora.npz", tmp_path / "g.npz")
    shutil.copy(shared_data / "npz" / "cora.npz", tmp_path / "graph")  # a file without .npz suffix or separator
    for name in ("./g.npz", "g.npz", "graph"):
        loaded = load_dataset(name)
        assert not loaded.named and loaded.data.num_nodes == 2708, name
    # a dataset folder by path, named as PyG names it or not; never processed into the (read-only) folder
    for folder in (shared_data / "Cora", tmp_path / "my-cora"):
        if not folder.exists():
            shutil.copytree(shared_data / "Cora", folder)
        loaded = load_dataset(str(folder))
        assert loaded.name == "Cora" and loaded.data.num_nodes == 2708
    assert not (shared_data / "Cora" / "processed").exists()
    (tmp_path / "empty").mkdir()
    with pytest.raises(DatasetError, match="holds none of the datasets"):
        load_dataset("empty")
    # a name with a separator that exists nowhere is an unknown dataset, on one line
    with pytest.raises(DatasetError, match="unknown dataset") as info:
        load_dataset("data/folder")
    assert "\n" not in str(info.value)
    # and a name is a name: in a read-only, empty data folder, the missing-files message
    empty_data = tmp_path / "empty-data"
    empty_data.mkdir(mode=0o555)
    with pytest.raises(DatasetError, match="Cora not found"):
        load_dataset("Cora", data_dir=empty_data)


def test_both_directions_listed_is_not_a_duplicate(tmp_path):
    """The common export lists (u, v) and (v, u); the npz and the edge-file readers agree on what that is."""
    from gca.datasets import load_files
    from gca.graph.graph import prepare_graph

    pairs = [(0, 1), (1, 2), (2, 3), (3, 0), (0, 2)]
    both = pairs + [(v, u) for u, v in pairs]
    (tmp_path / "both.csv").write_text("".join(f"{u},{v}\n" for u, v in both))
    np.save(tmp_path / "x.npy", np.eye(4, dtype=np.float32))
    loaded = load_files(tmp_path / "both.csv", tmp_path / "x.npy")
    graph = prepare_graph(loaded.data)
    assert loaded.warnings == [] and graph.warnings == []
    assert graph.edge_index.shape[1] == 10 and not graph.directed

    adj = sp.csr_matrix((np.ones(len(both)), ([u for u, _ in both], [v for _, v in both])), shape=(4, 4))
    attr = sp.csr_matrix(np.eye(4, dtype=np.float32))
    np.savez(
        tmp_path / "g.npz",
        adj_data=adj.data,
        adj_indices=adj.indices,
        adj_indptr=adj.indptr,
        adj_shape=adj.shape,
        attr_data=attr.data,
        attr_indices=attr.indices,
        attr_indptr=attr.indptr,
        attr_shape=attr.shape,
    )
    from_npz = load_dataset(str(tmp_path / "g.npz"))
    assert from_npz.warnings == []
    assert torch.equal(from_npz.data.edge_index, loaded.data.edge_index)

    # a line that really repeats is reported once, by the reader, with the count
    (tmp_path / "repeat.csv").write_text("0,1\n1,2\n0,1\n2,3\n")
    repeated = load_files(tmp_path / "repeat.csv", tmp_path / "x.npy")
    assert repeated.warnings == [f"{tmp_path / 'repeat.csv'} lists 1 duplicate edge (a pair listed again); merged"]
    assert prepare_graph(repeated.data).warnings == []


def test_npz_graph_loads_without_library_warnings(shared_data):
    """PyTorch warns once per process about sparse-invariant checks: a fresh process, every warning shown."""
    import subprocess
    import sys

    code = (
        "import sys, warnings; warnings.simplefilter('ignore'); from gca.datasets import read_npz_graph; "
        "warnings.simplefilter('always'); read_npz_graph(sys.argv[1])"
    )  # imports may warn; reading may not
    done = subprocess.run(
        [sys.executable, "-c", code, str(shared_data / "npz" / "cora.npz")], capture_output=True, text=True, check=True
    )
    assert "Warning" not in done.stderr, done.stderr


def test_karate_factions():
    data = karate_club()
    assert data.num_nodes == 34 and data.edge_index.shape[1] == 156
    assert int((data.y == 0).sum()) == len(KARATE_INSTRUCTOR_FACTION) == 17
    assert data.y[0] == 0 and data.y[33] == 1


def test_a_dataset_name_that_is_also_an_unrelated_folder_here_is_the_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "Karate").mkdir()  # e.g. an output folder named after the dataset
    (tmp_path / "Karate" / "results.json").write_text("{}")
    assert load_dataset("Karate").data.num_nodes == 34
    with pytest.raises(DatasetError, match="holds none of the datasets"):
        load_dataset("./Karate")  # written as a path, it is the folder


@pytest.mark.parametrize("folder_name", ["Cora", "MyCora"])
def test_raw_files_changed_after_processing_are_processed_again(shared_data, tmp_path, cache_dir, folder_name):
    """PyG never looks at raw files again once processed/ exists: a raw file edited in place (here the public
    test nodes' order, which moves labels' meaning nowhere but changes the split) must not be read from the old
    processed copy — whether it was processed into the folder itself (named as PyG names it, writable) or into
    the cache (named otherwise)."""
    folder = tmp_path / folder_name
    shutil.copytree(shared_data / "Cora", folder)
    for root, dirs, files in os.walk(tmp_path):
        for name in dirs + files:
            os.chmod(os.path.join(root, name), 0o755 if name in dirs else 0o644)
    first = load_dataset(str(folder))
    index = folder / "raw" / "ind.cora.test.index"
    lines = index.read_text().splitlines()
    index.write_text("\n".join([lines[1], lines[0], *lines[2:]]) + "\n")
    again = load_dataset(str(folder))
    fresh_copy = tmp_path / "fresh" / "Other"
    shutil.copytree(folder / "raw", fresh_copy / "raw")
    fresh = load_dataset(str(fresh_copy), cache_dir=tmp_path / "fresh-cache")
    assert torch.equal(again.data.x.to_dense(), fresh.data.x.to_dense())
    assert torch.equal(again.data.y, fresh.data.y) and torch.equal(again.data.edge_index, fresh.data.edge_index)
    assert not torch.equal(again.data.x.to_dense(), first.data.x.to_dense())  # the edit did change the graph


def test_a_directed_file_s_repeats_are_reported_once_by_the_reader(tmp_path):
    from gca.datasets import load_files
    from gca.graph.graph import prepare_graph

    np.save(tmp_path / "x.npy", np.eye(4, dtype=np.float32))
    (tmp_path / "d.csv").write_text("0,1\n1,2\n0,1\n2,3\n1,0\n0,1\n")
    loaded = load_files(tmp_path / "d.csv", tmp_path / "x.npy", directed=True)
    assert loaded.warnings == [f"{tmp_path / 'd.csv'} lists 2 duplicate edges (a pair listed again); merged"]
    assert loaded.data.edge_index.tolist() == [[0, 1, 1, 2], [1, 0, 2, 3]]
    assert prepare_graph(loaded.data, directed=True).warnings == []
