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
    assert (cache_dir / "processed-data" / "Cora" / "processed").is_dir()


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
        assert (cache_dir / "processed-data" / "Cora" / "processed").is_dir()
        assert not (data_dir / "Cora" / "processed").exists()
    finally:
        for root, dirs, _ in os.walk(data_dir):
            os.chmod(root, 0o755)
            for name in dirs:
                os.chmod(os.path.join(root, name), 0o755)


def test_forced_read_only_path_goes_to_cache(shared_data, cache_dir, monkeypatch):
    import gca.datasets as ds

    monkeypatch.setattr(ds, "_writable", lambda path: False)
    loaded = load_dataset("Cora", data_dir=shared_data)
    assert loaded.data.num_nodes == 2708
    mirror = cache_dir / "processed-data" / "Cora"
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


def test_missing_dataset_names_expected_files(tmp_path, cache_dir, monkeypatch):
    import torch_geometric.data.download as download

    def offline(*args, **kwargs):
        raise OSError("network is unreachable")

    monkeypatch.setattr(download.urllib.request, "urlopen", offline)
    with pytest.raises(DatasetError) as info:
        load_dataset("Amazon-Photo", data_dir=tmp_path)
    message = str(info.value)
    assert "amazon_electronics_photo.npz" in message and str(tmp_path / "Photo" / "raw") in message
    assert "\n" not in message


def test_unknown_dataset():
    with pytest.raises(DatasetError, match="unknown dataset"):
        load_dataset("Cora2")


def test_karate_factions():
    data = karate_club()
    assert data.num_nodes == 34 and data.edge_index.shape[1] == 156
    assert int((data.y == 0).sum()) == len(KARATE_INSTRUCTOR_FACTION) == 17
    assert data.y[0] == 0 and data.y[33] == 1
