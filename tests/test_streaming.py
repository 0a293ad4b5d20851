"""Out-of-core inference (issue 34): each layer's output and the embeddings as files mapped into memory, written
a block of rows at a time — equal to in-memory inference by the same blocks bit for bit, and to inference of the
whole graph at once within float32 rounding, nothing left behind, a full disk refused
before anything is mapped — and evaluation that reads the labelled rows only."""

from __future__ import annotations

import errno
import json
import os

import numpy as np
import pytest
import torch
from sklearn.preprocessing import normalize as sklearn_normalize
from torch_geometric.data import Data

import gca.train.inference as inference
from gca.cli import main
from gca.config import GCAConfig
from gca.evaluate import classification
from gca.evaluate.classification import NormalizedRows, linear_evaluation
from gca.graph.graph import prepare_graph
from gca.mapped import DiskArrays, npy_map
from gca.nn.model import GCAModel
from gca.train.inference import encode_graph


def _graphs():
    g = torch.Generator().manual_seed(0)
    n = 203
    edges = torch.randint(0, n, (2, 900), generator=g)
    # dense wider than the first layer (M (X W)), narrower (its X̂ filled block by block), float16 as stored,
    # sparse bag-of-words
    features = (
        torch.rand(n, 40, generator=g),
        torch.rand(n, 8, generator=g),
        torch.rand(n, 8, generator=g).half(),
        (torch.rand(n, 300, generator=g) < 0.03).float(),
    )
    for x in features:
        for directed in (True, False):
            pairs = edges if directed else torch.cat([edges, edges.flip(0)], 1)
            for norm in ("row", "none"):
                yield x, prepare_graph(Data(x=x, edge_index=pairs), directed=directed, feature_norm=norm)


def test_streamed_inference_equals_in_memory_inference_bit_for_bit(tmp_path):
    for case, (x, graph) in enumerate(_graphs()):
        for layers in (2, 3):
            config = GCAConfig(hidden=16, proj_hidden=16, activation="prelu", layers=layers)
            model = GCAModel.from_config(x.shape[1], config)
            for rows in (17, 64):
                folder = tmp_path / f"{case}-{layers}-{rows}"
                folder.mkdir()
                in_memory = encode_graph(model, graph, chunk_rows=rows)
                streamed = encode_graph(model, graph, chunk_rows=rows, out=folder / "embeddings.npy")
                assert torch.equal(streamed, in_memory), (case, layers, rows)
                assert np.array_equal(np.load(folder / "embeddings.npy"), in_memory.numpy())
                assert sorted(p.name for p in folder.iterdir()) == ["embeddings.npy"]  # no scratch file left


#: How far embeddings computed by blocks of rows may lie from those computed whole, relative to their largest entry:
#: the dense products' kernels sum in an order that depends on a block's row count (a one-row block is a
#: matrix-vector product), so rows agree to float32 rounding, not bit for bit (measured here at most 2.9e-7).
BLOCK_TOLERANCE = 2e-6


def test_inference_by_blocks_of_any_size_equals_whole_inference_within_rounding():
    """Blocks of 1, 2 and 33 rows (203 nodes: a short last block) against the graph embedded whole: equal to the
    float32 rounding of the dense products (:data:`BLOCK_TOLERANCE`), for every feature form, direction,
    normalisation and depth — a row taken from another node, or a block skipped, would be off by the embeddings'
    own size."""
    for case, (x, graph) in enumerate(_graphs()):
        for layers in (2, 3):
            model = GCAModel.from_config(
                x.shape[1], GCAConfig(hidden=16, proj_hidden=16, activation="prelu", layers=layers)
            )
            whole = encode_graph(model, graph, chunk_rows=graph.num_nodes)  # not more nodes than rows: one pass
            scale = float(whole.abs().max())
            for rows in (1, 2, 33):
                blocks = encode_graph(model, graph, chunk_rows=rows)
                assert float((blocks - whole).abs().max()) <= BLOCK_TOLERANCE * scale, (case, layers, rows)
            # the bound tells rows apart: any two neighbouring rows differ by far more
            assert float((whole[1:] - whole[:-1]).abs().amax(1).min()) > 100 * BLOCK_TOLERANCE * scale, case


def test_a_small_graph_or_an_encoder_without_blocks_is_not_streamed(tmp_path):
    x, graph = next(_graphs())
    model = GCAModel.from_config(x.shape[1], GCAConfig(hidden=16, proj_hidden=16))
    assert torch.equal(encode_graph(model, graph, out=tmp_path / "a.npy"), encode_graph(model, graph))
    sage = GCAModel.from_config(x.shape[1], GCAConfig(hidden=16, proj_hidden=16, encoder="sage"))
    assert torch.equal(
        encode_graph(sage, graph, chunk_rows=17, out=tmp_path / "b.npy"), encode_graph(sage, graph, chunk_rows=17)
    )
    assert list(tmp_path.iterdir()) == []  # the caller saves what was returned


def test_a_full_disk_is_an_error_before_a_file_is_mapped(tmp_path, monkeypatch):
    def full(fd, offset, length):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "posix_fallocate", full)
    with pytest.raises(OSError, match="No space left"):
        npy_map(tmp_path / "e.npy", (10, 4), np.float32)
    with pytest.raises(OSError, match="No space left"):
        DiskArrays(tmp_path / "e.npy")((10, 4), torch.float32, False)
    assert list(tmp_path.iterdir()) == []  # neither the target nor a scratch file stays


def test_a_mapped_file_reserves_its_space_and_reads_back_as_npy_after_its_rows_leave_memory(tmp_path):
    mapped = npy_map(tmp_path / "e.npy", (100_000, 3), np.float32)
    assert os.stat(tmp_path / "e.npy").st_blocks * 512 >= 100_000 * 3 * 4  # reserved, not a sparse file
    values = np.arange(300_000, dtype=np.float32).reshape(100_000, 3)
    mapped.array[:50_000] = values[:50_000]
    mapped.drop(0, 50_001)  # written rows (and the page shared with row 50,000) leave the resident set …
    mapped.array[50_000:] = values[50_000:]
    assert np.array_equal(mapped.array, values)  # … and come back with their values
    mapped.flush()
    assert np.array_equal(np.load(tmp_path / "e.npy"), values)


def test_disk_arrays_let_a_scratch_matrix_go_with_its_tensor(tmp_path):
    import gc

    disk = DiskArrays(tmp_path / "e.npy")
    scratch = disk((1000, 4), torch.float32, False)
    scratch[:] = 1.0
    disk.written(scratch, 0, 1000)
    disk.written(torch.ones(3, 4), 0, 3)  # not one of its own: left alone
    assert torch.equal(scratch, torch.ones(1000, 4))
    ref = next(iter(disk._mapped.values()))[0]
    del scratch
    gc.collect()
    assert ref() is None  # the mapping (and its unlinked file's space) went with the tensor
    assert list(tmp_path.iterdir()) == []


def test_gca_train_writes_the_streamed_embeddings_once_and_equal_to_in_memory(tmp_path, monkeypatch):
    args = ["train", "--epochs", "3", "--quiet", "--splits", "2"]
    assert main([*args, "--out", str(tmp_path / "memory")]) == 0
    monkeypatch.setattr(inference, "INFERENCE_CHUNK_ROWS", 16)  # Karate's 34 nodes in blocks of 16
    assert main([*args, "--out", str(tmp_path / "disk")]) == 0
    memory, disk = (json.loads((tmp_path / d / "results.json").read_text()) for d in ("memory", "disk"))
    assert not memory["embeddings_out_of_core"] and disk["embeddings_out_of_core"]
    streamed = np.load(tmp_path / "disk" / "embeddings.npy")
    np.testing.assert_allclose(streamed, np.load(tmp_path / "memory" / "embeddings.npy"), rtol=1e-5, atol=1e-6)
    assert disk["accuracy"]["runs"] == memory["accuracy"]["runs"]
    assert sorted(p.name for p in (tmp_path / "disk").iterdir() if not p.name.startswith(".gca-lock")) == [
        "embeddings.npy",
        "model.pt",
        "results.json",
    ]


def test_evaluation_reads_rows_where_indexed_with_the_values_of_the_whole_matrix(monkeypatch):
    g = np.random.default_rng(0)
    y = np.repeat(np.arange(3), 100)
    x = g.normal(size=(300, 5)) + y[:, None] * 1.5
    whole = sklearn_normalize(x.astype(np.float64))
    rows = NormalizedRows(torch.from_numpy(x.astype(np.float32)))
    index = g.permutation(300)[:50]
    assert np.array_equal(NormalizedRows(x)[index], whole[index])
    splits = [(np.arange(0, 300, 3), np.arange(1, 300, 3), np.arange(2, 300, 3))]
    once = linear_evaluation(x, y, splits)
    monkeypatch.setattr(classification, "PREDICT_BLOCK", 7)  # validation and test predicted 7 rows at a time
    assert linear_evaluation(x, y, splits).accuracies == once.accuracies
    assert rows.shape == (300, 5)


def _scipy_undirected(source, target, n):
    """The reference: SciPy's A + Aᵀ of the listed pairs (a loop once), and the ordered pairs listed again."""
    import scipy.sparse as sp

    listed = sp.csr_matrix((np.ones(len(source), dtype=np.float32), (source, target)), shape=(n, n))
    both = (listed + listed.T).tocsr()
    both.sort_indices()
    return np.vstack([np.repeat(np.arange(n), np.diff(both.indptr)), both.indices]), len(source) - listed.nnz


def test_undirected_edges_built_block_by_block_equal_scipys_both_directions(monkeypatch):
    """Random multigraphs with loops, repeats and both directions listed, in blocks of 1 to 19 entries (rows
    longer than a block, empty rows, a block ending inside a row): the same edges in the same order, int32, and
    the same count of repeated ordered pairs as before."""
    from gca.graph import edges as base

    rng = np.random.default_rng(0)
    for case in range(200):
        n, m = int(rng.integers(1, 40)), int(rng.integers(0, 120))
        source, target = rng.integers(0, n, m).astype(np.int32), rng.integers(0, n, m).astype(np.int32)
        monkeypatch.setattr(base, "EDGE_BLOCK", int(rng.integers(1, 20)))
        expected, repeats = _scipy_undirected(source, target, n)
        edge_index, repeated = base.listed_edges(source, target, n, directed=False)
        assert edge_index.dtype == torch.int32 and repeated == repeats, case
        assert np.array_equal(edge_index.numpy(), expected), case
        indptr = np.zeros(n + 1, dtype=np.int64)  # the same edges read from a CSR a block of rows at a time
        order = np.lexsort((target, source))
        np.cumsum(np.bincount(source, minlength=n), out=indptr[1:])
        from_csr, again, _ = base.undirected_edges(base.csr_blocks(indptr, target[order]), n, m)
        assert np.array_equal(from_csr.numpy(), expected) and again == repeats, case
        loop_free, again, loops = base.undirected_edges(base.csr_blocks(indptr, target[order]), n, m, keep_loops=False)
        assert np.array_equal(loop_free.numpy(), expected[:, expected[0] != expected[1]]) and again == repeats, case
        assert loops == int((expected[0] == expected[1]).sum()), case
        upper = expected[:, expected[0] < expected[1]]  # listed once, sorted, as (smaller, larger): copied as it is
        loops = expected[:, expected[0] == expected[1]]
        for listed in (upper, np.hstack([upper, loops])):  # with loops it is not in that form: the general path
            rebuilt, none = base.listed_edges(listed[0].astype(np.int32), listed[1].astype(np.int32), n, False)
            want = expected if listed.shape[1] > upper.shape[1] else expected[:, expected[0] != expected[1]]
            assert np.array_equal(rebuilt.numpy(), want) and none == 0, case


def test_unit_ids_built_block_by_block_equal_those_read_through_each_edges_reverse(monkeypatch):
    """Units of random undirected graphs, in blocks of 1 to 9 edges, equal the cumulative count of forward edges
    read at each edge's reverse position — and a graph whose counts match but whose edges do not pair up is
    refused, as the reverse positions refused it."""
    from gca.graph import csr
    from gca.graph.sampling import edge_unit_ids, reverse_positions

    rng = np.random.default_rng(1)
    for case in range(100):
        n = int(rng.integers(2, 30))
        pairs = rng.integers(0, n, (2, int(rng.integers(1, 80))))
        graph = prepare_graph(
            Data(x=torch.ones(n, 1), edge_index=torch.from_numpy(np.hstack([pairs, pairs[::-1]]))), directed=False
        )
        if graph.edge_index.shape[1] == 0:
            continue
        source, target = graph.edge_index.long()
        forward = source < target
        position_unit = torch.cumsum(forward, 0) - 1
        expected = torch.where(forward, position_unit, position_unit[reverse_positions(graph.edge_index, n).long()])
        monkeypatch.setattr(csr, "PAIR_BLOCK", int(rng.integers(1, 10)))
        assert torch.equal(edge_unit_ids(graph.edge_index, n, True).long(), expected), case
    crossed = torch.tensor([[0, 1, 2, 3], [2, 3, 1, 0]], dtype=torch.int32)  # 0→2, 1→3, 2→1, 3→0
    with pytest.raises(ValueError, match="every edge's reverse"):
        edge_unit_ids(crossed, 4, True)


def test_the_symmetry_check_read_block_by_block_agrees_with_the_transpose(monkeypatch):
    """Coalesced random graphs — symmetric, with self-loops, with one reverse missing or replaced — in blocks of
    1 to 9 edges: symmetric exactly when A equals Aᵀ."""
    import scipy.sparse as sp

    from gca.graph import csr

    rng = np.random.default_rng(2)
    for case in range(200):
        n = int(rng.integers(1, 25))
        pairs = rng.integers(0, n, (2, int(rng.integers(1, 60))))
        kind = case % 3  # symmetric, symmetric with a reverse dropped, or a directed draw
        edges = np.hstack([pairs, pairs[::-1]]) if kind < 2 else pairs
        a = sp.coo_matrix((np.ones(edges.shape[1]), (edges[0], edges[1])), shape=(n, n)).tocsr()
        a.sum_duplicates()
        a.sort_indices()
        if kind == 1 and a.nnz:
            keep = np.ones(a.nnz, dtype=bool)
            keep[int(rng.integers(0, a.nnz))] = False
            a = sp.csr_matrix(
                (a.data[keep], (np.repeat(np.arange(n), np.diff(a.indptr))[keep], a.indices[keep])), shape=(n, n)
            )
        a.data[:] = 1  # structure only
        rows = np.repeat(np.arange(n), np.diff(a.indptr))
        edge_index = torch.from_numpy(np.vstack([rows, a.indices]).astype(np.int32))
        monkeypatch.setattr(csr, "PAIR_BLOCK", int(rng.integers(1, 10)))
        assert csr._is_symmetric(edge_index, n) == ((a != a.T).nnz == 0), case


def test_the_symmetry_answer_kept_for_a_tensor_follows_its_changes():
    from gca.graph.csr import _is_symmetric

    edge_index = torch.tensor([[0, 1, 1, 2], [1, 0, 2, 1]], dtype=torch.int32)
    assert _is_symmetric(edge_index, 3) and _is_symmetric(edge_index, 3)
    edge_index[1, 3] = 0  # in place: (2, 0) has no reverse; the kept answer must not be reused
    assert not _is_symmetric(edge_index, 3)
    assert _is_symmetric(torch.tensor([[0, 1], [1, 0]], dtype=torch.int32), 3)  # another tensor: asked anew
