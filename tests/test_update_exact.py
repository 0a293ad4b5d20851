"""A mini-batch update costs less but computes the same, bit for bit: the first layer's sparse X (diag(m) W) skips
the entries whose terms are exact zeros or never read (:func:`gca.nn.gcn._entries_read`), and a sampled subgraph's
features get their transpose by a counting sort (:func:`gca.graph.sparse.csr_transpose`). Each is compared with the
computation it replaces — patched back in — on embeddings, losses, gradients and whole training runs."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from conftest import undirected
from torch_geometric.data import Data

import gca.graph.sparse as sparse
import gca.nn.gcn as gcn
from gca import GCA, GCAConfig
from gca.augment.prepared import prepare
from gca.graph.sparse import SparseMatrix, layered_normalized_adjacency, scipy_to_sparse, square_csr
from gca.nn.model import GCAModel
from gca.train.batches import NeighborBatches


def _bag_of_words_graph(n: int = 240, m: int = 900, features: int = 120, seed: int = 0) -> Data:
    """A random graph with sparse 0/1 features (5 % dense: gca keeps them as a SparseMatrix), a few empty rows."""
    rng = np.random.default_rng(seed)
    pairs = rng.integers(0, n, size=(m, 2))
    edges = sorted({(int(min(a, b)), int(max(a, b))) for a, b in pairs if a != b})
    x = (rng.random((n, features)) < 0.05).astype(np.float32)
    x[:5] = 0.0
    return Data(x=torch.from_numpy(x), edge_index=undirected(edges), num_nodes=n)


def _old_transpose(crow: torch.Tensor, col: torch.Tensor, values: torch.Tensor, size: tuple[int, int]) -> torch.Tensor:
    """The transpose as SparseMatrix.take_rows built it before: sorting (column, row) keys."""
    row = torch.repeat_interleave(torch.arange(size[0]), crow.diff())
    return square_csr(col, row, values, size[1], size[0])


def _plain(h, adjacency, feature_mask):
    """Every entry of X multiplied, as the first layer did before."""
    return h


def _same_csr(a: torch.Tensor, b: torch.Tensor) -> bool:
    return (
        a.shape == b.shape
        and torch.equal(a.crow_indices(), b.crow_indices())
        and torch.equal(a.col_indices(), b.col_indices())
        and torch.equal(a.values(), b.values())
    )


@pytest.mark.parametrize("shape", [(50, 30), (0, 7), (9, 1)])
def test_take_rows_gives_the_transpose_sorting_gave(shape):
    generator = torch.Generator().manual_seed(shape[0])
    dense = torch.rand(shape, generator=generator) * (torch.rand(shape, generator=generator) < 0.2)
    matrix = scipy_to_sparse(sp.csr_matrix(dense.numpy()))
    for index in (
        torch.randint(0, max(shape[0], 1), (shape[0] // 2,), generator=generator).unique(),
        torch.arange(shape[0]).flip(0),
        torch.empty(0, dtype=torch.long),
    ):
        rows = matrix.take_rows(index)
        m = rows.matrix
        want = _old_transpose(m.crow_indices(), m.col_indices(), m.values(), tuple(m.shape))
        assert _same_csr(rows.transpose, want)
        assert torch.equal(rows.transpose.to_dense(), dense[index].t())
        # the path for other devices (a stable sort of the columns) gives the same arrays
        assert _same_csr(sparse._sorted_transpose(m.crow_indices(), m.col_indices(), m.values(), tuple(m.shape)), want)


def test_keep_drops_exactly_the_entries_outside_the_rows_and_columns():
    generator = torch.Generator().manual_seed(1)
    dense = torch.rand(40, 25, generator=generator) * (torch.rand(40, 25, generator=generator) < 0.3)
    matrix = scipy_to_sparse(sp.csr_matrix(dense.numpy()))
    rows, columns = torch.rand(40, generator=generator) < 0.7, torch.rand(25, generator=generator) < 0.6
    for r, c in ((rows, columns), (rows, None), (None, columns), (None, None)):
        kept = matrix.keep(r, c)
        want = dense * (torch.ones(40, 1) if r is None else r[:, None]) * (torch.ones(25) if c is None else c)
        assert torch.equal(kept.to_dense(), want) and torch.equal(kept.transpose.to_dense(), want.t())
        assert kept.matrix.values().numel() == int((want != 0).sum())


def _batch_and_model(activation: str = "prelu"):
    data = _bag_of_words_graph()
    config = GCAConfig(
        hidden=16,
        proj_hidden=16,
        batch_size=24,
        fanout=(4, 3),
        p_f1=0.3,
        p_f2=0.4,
        p_e1=0.3,
        p_e2=0.5,
        activation=activation,
    )
    prepared = prepare(data, config)
    assert isinstance(prepared.graph.features, SparseMatrix)
    source = NeighborBatches(prepared.graph, prepared.views, config.batch_size, config.fanouts, seed=5)
    batch = next(iter(source.batches(0, torch.Generator())))
    torch.manual_seed(0)
    return batch, GCAModel.from_config(prepared.graph.num_features, config)


def test_the_first_layer_gives_the_anchors_their_embeddings_loss_and_gradients_bit_for_bit(monkeypatch):
    batch, model = _batch_and_model()
    generator = torch.Generator().manual_seed(7)
    draws = [(view.sample_edges(generator), view.sample_feature_mask(generator)) for view in batch.views]
    dropped = 0
    for edges, mask in draws:  # both kinds of entries are skipped on this batch
        operators = layered_normalized_adjacency(edges, batch.num_nodes, batch.layer_rows)
        kept = gcn._entries_read(batch.features, operators[0], mask)
        unread = operators[0].shape[1] - int(operators[0].matrix.col_indices().unique().numel())
        assert unread > 0 and bool((mask == 0).any())
        dropped += batch.features.matrix.values().numel() - kept.matrix.values().numel()
    assert dropped > 0
    results = []
    for entries_read in (gcn._entries_read, _plain):
        monkeypatch.setattr(gcn, "_entries_read", entries_read)
        twin = copy.deepcopy(model)
        embeddings = [
            twin.encode(batch.features, edges, batch.num_nodes, False, batch.layer_rows, mask)[batch.anchors]
            for edges, mask in draws
        ]
        loss = twin.loss(*embeddings)
        loss.backward()
        results.append((embeddings, loss.detach(), [p.grad for p in twin.parameters()]))
    (now, loss_now, grads_now), (before, loss_before, grads_before) = results
    assert all(torch.equal(a, b) for a, b in zip(now, before, strict=True))
    assert torch.equal(loss_now, loss_before)
    assert all(torch.equal(a, b) for a, b in zip(grads_now, grads_before, strict=True))


@pytest.mark.parametrize("batch_size, activation", [(24, "prelu"), (24, "rrelu"), (0, "relu")])
def test_training_runs_are_unchanged_bit_for_bit(monkeypatch, batch_size, activation):
    """Whole runs — mini-batch and full-graph (whose first layer skips masked columns too) — against the code they
    replace: the same losses and the same embeddings."""
    data = _bag_of_words_graph(seed=2)
    config = GCAConfig(
        hidden=16,
        proj_hidden=16,
        batch_size=batch_size,
        fanout=(4, 3),
        epochs=3,
        lr=0.01,
        p_f1=0.3,
        p_f2=0.4,
        activation=activation,
    )
    runs = []
    for entries_read, transpose in ((gcn._entries_read, sparse.csr_transpose), (_plain, _old_transpose)):
        monkeypatch.setattr(gcn, "_entries_read", entries_read)
        monkeypatch.setattr(sparse, "csr_transpose", transpose)
        estimator = GCA(config, device="cpu")
        runs.append((estimator.fit_transform(data), estimator.losses))
    (now, losses_now), (before, losses_before) = runs
    assert losses_now == losses_before
    assert torch.equal(now, before)


def test_csr_transpose_of_half_precision_values_takes_the_sorting_path():
    crow, col = torch.tensor([0, 2, 2, 3]), torch.tensor([1, 3, 0])
    values = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float16)
    got = sparse.csr_transpose(crow, col, values, (3, 4))
    assert _same_csr(got, _old_transpose(crow, col, values, (3, 4)))
    assert torch.equal(got.to_dense(), torch.sparse_csr_tensor(crow, col, values, (3, 4)).to_dense().t())


def test_read_columns_renumbers_the_columns_that_hold_entries_and_drops_the_transposes_empty_rows():
    generator = torch.Generator().manual_seed(3)
    dense = torch.rand(12, 40, generator=generator) * (torch.rand(12, 40, generator=generator) < 0.3)
    dense[:, ::3] = 0.0  # every third column unread
    matrix = scipy_to_sparse(sp.csr_matrix(dense.numpy()))
    index = dense.any(0).nonzero().squeeze(1)
    narrow = matrix.read_columns(index)
    assert torch.equal(narrow.to_dense(), dense[:, index])
    assert torch.equal(narrow.transpose.to_dense(), dense[:, index].t())
    h = torch.arange(40, dtype=torch.float32).unsqueeze(1) * torch.tensor([1.0, -0.5])  # row i holds its id
    assert torch.equal(narrow @ h[index], matrix @ h)


def _dense_batch_and_model():
    data = _bag_of_words_graph()
    data.x = torch.rand(data.num_nodes, 120, generator=torch.Generator().manual_seed(4))  # dense features
    config = GCAConfig(hidden=16, proj_hidden=16, batch_size=24, fanout=(4, 3), p_e1=0.5, p_e2=0.6)
    prepared = prepare(data, config)
    source = NeighborBatches(prepared.graph, prepared.views, config.batch_size, config.fanouts, seed=5)
    batch = next(iter(source.batches(0, torch.Generator())))
    assert isinstance(batch.features, torch.Tensor) and batch.features.layout == torch.strided
    torch.manual_seed(0)
    return batch, GCAModel.from_config(prepared.graph.num_features, config)


def test_dense_features_are_multiplied_at_the_rows_the_first_layer_reads_only_with_the_same_results(monkeypatch):
    batch, model = _dense_batch_and_model()
    generator = torch.Generator().manual_seed(7)
    draws = [(view.sample_edges(generator), view.sample_feature_mask(generator)) for view in batch.views]
    for edges, _ in draws:  # rows are skipped on this batch
        first = layered_normalized_adjacency(edges, batch.num_nodes, batch.layer_rows)[0]
        narrow, rows = gcn._dense_rows_read(batch.features, first)
        assert rows.shape[0] < batch.features.shape[0] and narrow.shape == (first.shape[0], rows.shape[0])
    results = []
    for rows_read in (gcn._dense_rows_read, lambda h, adjacency: (adjacency, h)):
        monkeypatch.setattr(gcn, "_dense_rows_read", rows_read)
        twin = copy.deepcopy(model)
        embeddings = [
            twin.encode(batch.features, edges, batch.num_nodes, False, batch.layer_rows, mask)[batch.anchors]
            for edges, mask in draws
        ]
        loss = twin.loss(*embeddings)
        loss.backward()
        results.append((torch.cat(embeddings), loss.detach(), [p.grad for p in twin.parameters()]))
    (now, loss_now, grads_now), (before, loss_before, grads_before) = results
    # the skipped rows' terms are never read; the products' kernels may round a row differently with fewer rows
    torch.testing.assert_close(now, before, rtol=1e-6, atol=1e-7)
    torch.testing.assert_close(loss_now, loss_before, rtol=1e-6, atol=0.0)
    for got, want in zip(grads_now, grads_before, strict=True):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-7)
