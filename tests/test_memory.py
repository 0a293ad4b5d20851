"""What keeps a large graph's memory bounded: one compact edge list shared by every part, no second copy of it in
the job, of the features' normalisation or of the augmentation units. Each test checks the arrangement on a small
graph; benchmarks/minibatch.py measures the bytes at ogbn-products' size."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import undirected
from sklearn.preprocessing import normalize
from torch_geometric.data import Data

import gca.graph.features as features_module
from gca import GCA, GCAConfig
from gca.datasets import karate_club
from gca.datasets.base import LoadedDataset
from gca.graph.csr import index_dtype
from gca.graph.graph import Graph, prepare_graph
from gca.graph.sampling import NeighborSampler, reverse_positions
from gca.run.job import Job


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_row_normalisation_in_blocks_equals_scikit_learns(monkeypatch, dtype):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((50, 9)) * 4).astype(dtype)
    x[[0, 17, 49]] = 0  # all-zero rows stay zero, also at a block's edges
    monkeypatch.setattr(features_module, "ROW_BLOCK", 7)
    ours = features_module.normalize_rows(x)
    theirs = normalize(x, norm="l1", axis=1, copy=True)
    assert ours.dtype == theirs.dtype and np.array_equal(ours, theirs)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int32])
@pytest.mark.parametrize("layout", ["csr", "csc", "coo"])
def test_sparse_row_normalisation_equals_scikit_learns_bit_for_bit(dtype, layout):
    """gca's own sparse l1 normalisation (no scikit-learn import in a run that evaluates nothing): the same dtype,
    structure and values, on rows of mixed magnitudes, an empty row, an explicit zero and rows of one entry."""
    import scipy.sparse as sp

    rng = np.random.default_rng(1)
    for trial in range(20):
        x = sp.random(40, 30, density=rng.choice([0.02, 0.2, 0.6]), random_state=trial, format="csr")
        x.data *= rng.choice([1e-6, 1.0, 1e3], size=x.data.size) * rng.choice([-10, 10], size=x.data.size)
        x.data[x.indptr[3] : x.indptr[4]] = 0  # an explicit zero row, and below an empty one
        x = sp.diags((np.arange(40) != 5).astype(float)) @ x
        x = x.astype(dtype).asformat(layout)
        ours, theirs = features_module.normalize_rows(x), normalize(x, norm="l1", axis=1, copy=True)
        assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
        for a, b in ((ours.indptr, theirs.indptr), (ours.indices, theirs.indices), (ours.data, theirs.data)):
            assert np.array_equal(a, b)
    assert isinstance(features_module.normalize_rows(sp.csr_array(x)), sp.csr_array)  # the container it came in
    assert features_module.normalize_rows(x.astype(np.longdouble)).dtype == np.float64  # as scikit-learn's


def test_a_cleaned_graph_keeps_int32_edges_and_the_same_fingerprint():
    data = karate_club()
    graph = prepare_graph(data)
    assert graph.edge_index.dtype == torch.int32
    wide = Graph(graph.num_nodes, graph.edge_index.long(), graph.directed, graph.features, graph.raw_features)
    assert graph.fingerprint() == wide.fingerprint()  # checkpoints made with int64 edges still resume
    assert index_dtype(2**31) == torch.long


def test_a_job_keeps_one_copy_of_the_edges():
    data = karate_club()
    job = Job.open(LoadedDataset("karate", data), overrides={"epochs": 1})
    job.prepare(GCA(job.config))
    assert job.loaded.data.edge_index is None  # the file's int64 edges are released ...
    assert job.graph.edge_index.dtype == torch.int32 and job.graph.edge_index.shape[1] == 156  # ... the graph's kept
    assert job.prepared.graph is job.graph and job.labels is not None


def test_the_views_list_their_units_only_when_they_draw_whole_graph_views():
    data = karate_club()
    estimator = GCA(GCAConfig(epochs=1, batch_size=8, fanout=(3, 3)))
    estimator.fit(data)
    for view in estimator.prepared.views:  # mini-batch training never drew a whole-graph view
        assert view.edges._units is None and view.edges.edge_index is estimator.graph.edge_index
    full = GCA(GCAConfig(epochs=1))
    full.fit(data)
    units = full.prepared.views[0].units
    assert units.shape[1] == 78 and bool((units[0] < units[1]).all())


def test_the_sampler_reads_the_graphs_own_column():
    graph = prepare_graph(karate_club())
    sampler = NeighborSampler(graph.edge_index, graph.num_nodes, (2, 2))
    assert sampler.neighbors.data_ptr() == graph.edge_index[1].data_ptr()  # no copy of the CSR columns
    assert sampler.units.dtype == torch.int32


def test_reverse_positions_by_hand():
    graph = prepare_graph(Data(x=torch.ones(4, 1), edge_index=undirected([(0, 1), (0, 3), (1, 2)])))
    pairs = graph.edge_index.t().tolist()  # (0,1) (0,3) (1,0) (1,2) (2,1) (3,0)
    reverse = reverse_positions(graph.edge_index, 4)
    assert reverse.dtype == torch.int32 and reverse.tolist() == [2, 5, 0, 4, 3, 1]
    assert all(pairs[r] == [v, u] for (u, v), r in zip(pairs, reverse.tolist(), strict=True))
    with pytest.raises(ValueError, match="reverse"):
        reverse_positions(torch.tensor([[0, 1], [1, 2]], dtype=torch.int32), 3)


def test_row_normalised_features_are_read_not_copied(monkeypatch):
    """Under feature_norm = "row" a dense graph keeps its raw features once; sampled batches divide the rows they
    read, bit for bit as normalize_rows, and never build the whole normalised matrix."""
    from gca.augment.prepared import prepare
    from gca.graph.features import RowNormalizedFeatures, normalize_rows
    from gca.train.batches import NeighborBatches

    x = torch.rand(34, 6, generator=torch.Generator().manual_seed(0)) - 0.5
    x[5] = 0  # an all-zero row stays zero
    data = karate_club()
    data.x = x
    prepared = prepare(data, GCAConfig())
    graph = prepared.graph
    assert isinstance(graph.features, RowNormalizedFeatures)
    assert graph.features.raw.data_ptr() == graph.raw_features.__array_interface__["data"][0]  # shared, not copied
    expected = torch.from_numpy(normalize_rows(graph.raw_features))
    assert torch.equal(graph.features.to_dense(), expected)
    assert torch.equal(graph.features.row_slice(3, 9), expected[3:9])

    def whole(self):
        raise AssertionError("a mini-batch step built the whole normalised matrix")

    monkeypatch.setattr(RowNormalizedFeatures, "to_dense", whole)
    source = NeighborBatches(graph, prepared.views, batch_size=8, fanouts=(3, 3))
    sampled = []
    sample = source.sampler.sample
    monkeypatch.setattr(source.sampler, "sample", lambda anchors, g: sampled.append(sample(anchors, g)) or sampled[-1])
    for batch in source.batches(0, torch.Generator()):
        assert torch.equal(batch.features, expected[sampled[-1].nodes])
    assert len(sampled) == 5  # ⌈34 / 8⌉ batches, each checked


def test_dense_features_stored_uncompressed_are_memory_mapped(tmp_path):
    """.npy feature files and the dense attr_matrix of an npz graph written by numpy.savez are read through a
    copy-on-write memory map; compressed members and other layouts are read whole, with the same values."""
    import scipy.sparse as sp

    from gca.datasets.files import read_features
    from gca.datasets.npz import mapped_member, read_npz_graph

    x = np.random.default_rng(0).random((34, 5)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    features, _ = read_features(tmp_path / "x.npy")
    assert isinstance(features, np.memmap) and np.array_equal(features, x)
    adj = sp.csr_matrix((np.ones(156, dtype=np.float32), karate_club().edge_index.numpy()), shape=(34, 34))
    arrays = {"adj_data": adj.data, "adj_indices": adj.indices, "adj_indptr": adj.indptr, "adj_shape": adj.shape}
    np.savez(tmp_path / "stored.npz", attr_matrix=x, **arrays)
    np.savez_compressed(tmp_path / "compressed.npz", attr_matrix=x, **arrays)
    np.savez(tmp_path / "fortran.npz", attr_matrix=np.asfortranarray(x), **arrays)
    assert isinstance(mapped_member(tmp_path / "stored.npz", "attr_matrix"), np.memmap)
    assert mapped_member(tmp_path / "compressed.npz", "attr_matrix") is None
    assert mapped_member(tmp_path / "stored.npz", "labels") is None
    for name in ("stored", "compressed", "fortran"):
        data = read_npz_graph(tmp_path / f"{name}.npz")
        assert torch.equal(data.x, torch.from_numpy(x)) and data.edge_index.shape[1] == 156


@pytest.mark.parametrize("feature_norm", ["row", "none"])
@pytest.mark.parametrize("batch_size", [0, 8])
def test_float16_features_are_kept_as_stored_and_train_as_their_float32_values(tmp_path, feature_norm, batch_size):
    """A float16 feature file stays float16 in memory (memory-mapped, half float32's bytes) and is widened as it is
    read. Every float16 value is exactly a float32 one, so training on it is bit for bit training on the same
    values stored as float32 — whole-graph and on sampled mini-batches, normalised or not."""
    from gca.datasets import load_files
    from gca.graph.features import DenseFeatures

    half = (np.random.default_rng(1).random((34, 6)) * 3).astype(np.float16)
    half[5] = 0
    edges = karate_club().edge_index.numpy().T
    np.savetxt(tmp_path / "edges.csv", edges[edges[:, 0] < edges[:, 1]], fmt="%d", delimiter=",")
    np.save(tmp_path / "half.npy", half)
    np.save(tmp_path / "single.npy", half.astype(np.float32))
    config = GCAConfig(
        epochs=3, hidden=8, proj_hidden=8, feature_norm=feature_norm, batch_size=batch_size, fanout=(3, 3), seed=0
    )
    runs = {}
    for name in ("half", "single"):
        loaded = load_files(tmp_path / "edges.csv", tmp_path / f"{name}.npy")
        estimator = GCA(config)
        prepared = estimator.prepare(loaded.data)
        runs[name] = (prepared.graph, estimator.fit_transform(prepared), loaded.data.x)
    graph, _, file_view = runs["half"]
    assert isinstance(graph.features, DenseFeatures) and graph.features.raw.dtype == torch.float16
    assert graph.features.raw.data_ptr() == file_view.data_ptr()  # the file's memory map itself: no copy
    assert graph.raw_features.dtype == np.float16
    assert torch.equal(
        graph.features.to_dense(),
        runs["single"][0].features.to_dense()
        if isinstance(runs["single"][0].features, DenseFeatures)
        else runs["single"][0].features,
    )
    assert torch.equal(runs["half"][1], runs["single"][1])
