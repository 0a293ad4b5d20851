"""Mini-batch GCA: the neighbour sampler, the subgraph views and the batch source, against hand-computed oracles."""

from __future__ import annotations

import itertools
from collections import Counter

import numpy as np
import pytest
import torch
from conftest import undirected
from torch_geometric.data import Data

from gca import GCA, GCAConfig
from gca.augment.augmentors import FeatureMasker, SubgraphView
from gca.augment.prepared import prepare
from gca.config import ConfigError
from gca.datasets import karate_club
from gca.graph.graph import prepare_graph
from gca.graph.sampling import NeighborSampler, edge_unit_ids, floyd_sample
from gca.graph.sparse import layered_normalized_adjacency, scipy_to_sparse
from gca.nn.model import GCAModel
from gca.train.batches import NeighborBatches
from gca.train.loop import train_step


def _random_graph(n: int = 60, m: int = 200, seed: int = 0) -> Data:
    rng = np.random.default_rng(seed)
    pairs = rng.integers(0, n, size=(m, 2))
    edges = [(int(a), int(b)) for a, b in pairs if a != b]
    x = torch.from_numpy(rng.random((n, 6)).astype(np.float32))
    return Data(x=x, edge_index=undirected(edges), num_nodes=n)


def test_floyd_draws_distinct_values_and_every_subset_equally_often():
    population = torch.tensor([5] * 20000 + [3, 7, 100])
    picks = floyd_sample(population, 2, torch.Generator().manual_seed(0))
    assert picks.shape == (20003, 2)
    assert bool((picks[:, 0] != picks[:, 1]).all())
    assert bool((picks >= 0).all()) and bool((picks < population.unsqueeze(1)).all())
    counts = Counter(tuple(sorted(row)) for row in picks[:20000].tolist())
    assert set(counts) == set(itertools.combinations(range(5), 2))  # all C(5, 2) = 10 subsets
    # each subset has probability 1/10: 2000 expected, standard deviation 42
    assert all(abs(c - 2000) < 200 for c in counts.values()), counts


def test_edge_units_pair_both_directions_of_an_edge():
    graph = prepare_graph(_random_graph())
    units = edge_unit_ids(graph.edge_index, graph.num_nodes, symmetric_units=True)
    listed = graph.undirected_edges.t().tolist()  # the units augmentation samples, in order
    for (a, b), unit in zip(graph.edge_index.t().tolist(), units.tolist(), strict=True):
        assert listed[unit] == [min(a, b), max(a, b)]
    directed = edge_unit_ids(graph.edge_index, graph.num_nodes, symmetric_units=False)
    assert torch.equal(directed, torch.arange(graph.edge_index.shape[1]))


def _neighbors(edge_index: torch.Tensor, n: int) -> list[set[int]]:
    incoming = [set() for _ in range(n)]
    for a, b in edge_index.t().tolist():
        incoming[b].add(a)
    return incoming


def test_all_neighbours_give_the_l_hop_neighbourhood_with_its_edges():
    graph = prepare_graph(_random_graph())
    incoming = _neighbors(graph.edge_index, graph.num_nodes)
    sampler = NeighborSampler(graph.edge_index, graph.num_nodes, (-1, -1))
    anchors = torch.tensor([5, 17, 3])
    sub = sampler.sample(anchors)
    # oracle: breadth-first search, two hops
    hop1 = set().union(*(incoming[a] for a in anchors.tolist())) - set(anchors.tolist())
    hop2 = set().union(*(incoming[v] for v in hop1)) - hop1 - set(anchors.tolist())
    nodes = sub.nodes.tolist()
    assert nodes[:3] == [5, 17, 3] and len(nodes) == len(set(nodes))
    assert set(nodes) == set(anchors.tolist()) | hop1 | hop2
    got = {(nodes[s], nodes[t]) for s, t in sub.edge_index.t().tolist()}
    expected = {(u, v) for v in set(anchors.tolist()) | hop1 for u in incoming[v]}
    assert got == expected and sub.edge_index.shape[1] == len(expected)


def test_fanout_caps_each_nodes_sampled_neighbours():
    graph = prepare_graph(_random_graph(n=80, m=600))
    incoming = _neighbors(graph.edge_index, graph.num_nodes)
    sampler = NeighborSampler(graph.edge_index, graph.num_nodes, (3, 2))
    sub = sampler.sample(torch.arange(10), torch.Generator().manual_seed(1))
    nodes = sub.nodes.tolist()
    per_target = Counter(nodes[t] for t in sub.edge_index[1].tolist())
    for (s, t), unit in zip(sub.edge_index.t().tolist(), sub.units.tolist(), strict=True):
        u, v = nodes[s], nodes[t]
        assert u in incoming[v]  # every sampled edge exists
        assert graph.undirected_edges[:, unit].tolist() == [min(u, v), max(u, v)]
    for v in range(10):  # anchors: min(degree, 3) distinct neighbours each
        assert per_target[v] == min(len(incoming[v]), 3)
    for v, count in per_target.items():
        assert count == min(len(incoming[v]), 3 if v < 10 else 2)
    pairs = sub.edge_index.t().tolist()
    assert len(pairs) == len({tuple(p) for p in pairs})  # no edge twice
    # the sampler's scratch map is clean again: a second sample starts from nothing
    assert bool((sampler._local == -1).all())


@pytest.mark.parametrize("undirected_graph", [True, False])
def test_each_sampled_edge_carries_its_own_unit_when_directions_are_sampled_apart(undirected_graph):
    data = _random_graph(n=40, m=150, seed=2)
    if not undirected_graph:  # keep one direction of each edge: in-neighbours now differ from out-neighbours
        data.edge_index = data.edge_index[:, data.edge_index[0] < data.edge_index[1]]
    graph = prepare_graph(data, directed=not undirected_graph)
    positions = {tuple(e): i for i, e in enumerate(graph.edge_index.t().tolist())}
    sampler = NeighborSampler(
        graph.edge_index, graph.num_nodes, (4, 4), undirected=undirected_graph, symmetric_units=False
    )
    sub = sampler.sample(torch.tensor([39, 35, 30, 25]), torch.Generator().manual_seed(0))
    nodes = sub.nodes.tolist()
    assert sub.edge_index.shape[1] > 10
    for (s, t), unit in zip(sub.edge_index.t().tolist(), sub.units.tolist(), strict=True):
        assert positions[(nodes[s], nodes[t])] == unit  # the message edge u → v itself, never its reverse


def test_sampling_is_a_function_of_the_generator():
    graph = prepare_graph(_random_graph())
    sampler = NeighborSampler(graph.edge_index, graph.num_nodes, (2, 2))
    a = sampler.sample(torch.tensor([1, 2, 3]), torch.Generator().manual_seed(4))
    b = sampler.sample(torch.tensor([1, 2, 3]), torch.Generator().manual_seed(4))
    assert torch.equal(a.nodes, b.nodes) and torch.equal(a.edge_index, b.edge_index)


def test_a_subgraph_view_keeps_or_removes_both_directions_of_a_unit_together():
    edge_index = torch.tensor([[0, 1, 1, 2], [1, 0, 2, 1]])
    unit = torch.tensor([0, 0, 1, 1])
    view = SubgraphView(edge_index, unit, torch.tensor([0.0, 0.6]), FeatureMasker(torch.tensor([0.5, 0.0])))
    g = torch.Generator().manual_seed(0)
    kept_second = 0
    for _ in range(2000):
        kept = {tuple(e) for e in view.sample_edges(g).t().tolist()}
        assert {(0, 1), (1, 0)} <= kept  # probability 0: always kept
        assert ((1, 2) in kept) == ((2, 1) in kept)
        kept_second += (1, 2) in kept
    assert abs(kept_second / 2000 - 0.4) < 0.04
    masks = torch.stack([view.sample_feature_mask(g) for _ in range(2000)])
    assert bool((masks[:, 1] == 1).all()) and abs(float(masks[:, 0].mean()) - 0.5) < 0.04


def test_take_rows_of_sparse_features_and_its_gradient():
    dense = torch.tensor([[0.0, 2.0, 0.0], [1.0, 0.0, 3.0], [0.0, 0.0, 0.0], [4.0, 5.0, 0.0]])
    import scipy.sparse as sp

    matrix = scipy_to_sparse(sp.csr_matrix(dense.numpy()))
    index = torch.tensor([3, 0, 2, 3])
    rows = matrix.take_rows(index)
    assert torch.equal(rows.to_dense(), dense[index])
    w = torch.randn(3, 2, requires_grad=True)
    (rows @ w).pow(2).sum().backward()
    w2 = w.detach().clone().requires_grad_()
    (dense[index] @ w2).pow(2).sum().backward()
    torch.testing.assert_close(w.grad, w2.grad)


def _source(data: Data, config: GCAConfig, rank: int = 0, world: int = 1) -> NeighborBatches:
    prepared = prepare(data, config)
    return NeighborBatches(
        prepared.graph,
        prepared.views,
        config.batch_size,
        config.fanouts,
        config.steps_per_epoch,
        config.seed,
        rank,
        world,
    )


def test_an_epoch_passes_over_every_node_once_split_between_processes():
    config = GCAConfig(batch_size=8, seed=3)
    data = karate_club()
    one = _source(data, config).anchor_batches(epoch=0)
    assert len(one) == 5 and all(len(a) <= 8 for a in one)  # ⌈34 / 8⌉ near-equal batches
    assert sorted(torch.cat(one).tolist()) == list(range(34))
    ranks = [_source(data, config, r, 2).anchor_batches(epoch=0) for r in range(2)]
    assert len(ranks[0]) == len(ranks[1]) == 3  # equal step counts, or the all-reduce would wait forever
    assert sorted(torch.cat(ranks[0] + ranks[1]).tolist()) == list(range(34))
    assert not torch.equal(torch.cat(one), torch.cat(_source(data, config).anchor_batches(epoch=1)))
    fixed = _source(data, config.replace(steps_per_epoch=10)).anchor_batches(epoch=0)
    assert len(fixed) == 10 and all(len(a) == 8 and len(set(a.tolist())) == 8 for a in fixed)


def test_mini_batch_with_every_node_and_neighbour_is_the_full_graph_objective():
    """B = N, fan-out −1, no augmentation: the sampled subgraph is the whole graph (nodes permuted), so the first
    loss equals full-graph training's — the subgraph's adjacency, features and anchors line up."""
    base = dict(p_e1=0.0, p_e2=0.0, p_f1=0.0, p_f2=0.0, hidden=8, proj_hidden=8, epochs=1)
    data = karate_club()
    full_cfg = GCAConfig(**base)
    mini_cfg = GCAConfig(**base, batch_size=34, fanout=(-1,))
    prepared = prepare(data, full_cfg)
    (full_batch,) = GCA(full_cfg, device="cpu").batch_source(prepared).batches(0, torch.Generator())
    (mini_batch,) = _source(data, mini_cfg).batches(0, torch.Generator())
    assert mini_batch.num_nodes == 34 and mini_batch.anchors.numel() == 34
    losses = []
    for batch in (full_batch, mini_batch):
        torch.manual_seed(0)
        model = GCAModel.from_config(34, full_cfg)
        losses.append(train_step(model, torch.optim.SGD(model.parameters(), lr=0.0), batch, torch.Generator()))
    assert losses[0] == pytest.approx(losses[1], rel=1e-5)


def test_mini_batch_training_resumes_exactly(tmp_path):
    config = GCAConfig(epochs=4, hidden=8, proj_hidden=8, batch_size=8, fanout=(3,), lr=0.01)
    data = karate_club()
    straight = GCA(config, device="cpu").fit_transform(data)
    first = GCA(config.replace(epochs=2), device="cpu")
    first.fit(data, checkpoint=tmp_path / "c.pt", checkpoint_every=2)
    resumed = GCA(config, device="cpu")
    again = resumed.fit_transform(data, checkpoint=tmp_path / "c.pt", checkpoint_every=2, resume=True)
    assert torch.equal(again, straight)


def test_mini_batch_config_keys_are_checked():
    assert GCAConfig().replace(fanout="15, 10").fanouts == (15, 10)
    assert GCAConfig(layers=3).replace(fanout="5").fanouts == (5, 5, 5)
    with pytest.raises(ConfigError, match="at least 2 anchors"):
        GCAConfig().replace(batch_size=1)
    with pytest.raises(ConfigError, match="one per layer"):
        GCAConfig(layers=3).replace(batch_size=64, fanout="10,10")
    with pytest.raises(ConfigError, match="-1 \\(all neighbours\\)"):
        GCAConfig().replace(fanout="0,10")


@pytest.mark.parametrize("directed", [False, True])
@pytest.mark.parametrize("width", [6, 16])  # into a 16-wide first layer: (M X) W, and M (X W)
def test_layer_trimmed_encoder_gives_the_anchors_their_untrimmed_embeddings_and_gradients(directed, width):
    from gca.graph.sparse import layered_normalized_adjacency, normalized_adjacency
    from gca.nn.gcn import GCNEncoder

    data = _random_graph(300, 1500, seed=3)
    data.x = torch.rand(300, width, generator=torch.Generator().manual_seed(4)) if width != 6 else data.x
    if directed:
        data.edge_index = data.edge_index[:, data.edge_index[0] < data.edge_index[1]]
    graph = prepare_graph(data, directed=directed)
    sampler = NeighborSampler(
        graph.edge_index, graph.num_nodes, (3, 2, 2), undirected=not directed, symmetric_units=not directed
    )
    anchors = torch.randperm(300, generator=torch.Generator().manual_seed(1))[:20]
    sub = sampler.sample(anchors, torch.Generator().manual_seed(2))
    n1, n2 = sub.hop_sizes[1], sub.hop_sizes[2]
    assert sub.hop_sizes[0] == 20 and 20 < n1 < n2 < sub.num_nodes == sub.hop_sizes[3]
    x = data.x[sub.nodes]
    torch.manual_seed(0)
    encoder = GCNEncoder(x.shape[1], 8, num_layers=3, activation="prelu")
    layered = layered_normalized_adjacency(sub.edge_index, sub.num_nodes, (n2, n1, 20))
    assert [m.shape for m in layered] == [(n2, sub.num_nodes), (n1, n2), (20, n1)]
    trimmed = encoder(x, layered)
    torch.autograd.backward(trimmed.sum())
    trimmed_grads = [p.grad.clone() for p in encoder.parameters()]
    encoder.zero_grad()
    untrimmed = encoder(x, normalized_adjacency(sub.edge_index, sub.num_nodes, symmetric=False))[:20]
    torch.autograd.backward(untrimmed.sum())
    torch.testing.assert_close(trimmed, untrimmed, rtol=1e-5, atol=1e-6)
    for got, want in zip(trimmed_grads, (p.grad for p in encoder.parameters()), strict=True):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-6)
    with pytest.raises(ValueError, match="not numbered hop by hop"):  # node 5 read by the anchor, not computed
        layered_normalized_adjacency(torch.tensor([[5], [0]]), 6, (2, 1))


@pytest.mark.parametrize("weighted", [False, True])
def test_each_layer_block_is_the_full_operators_block_and_its_transpose_bit_for_bit(weighted):
    from gca.graph.sparse import edge_list, layered_normalized_adjacency, normalized_adjacency

    data = _random_graph(300, 1500, seed=5)
    graph = prepare_graph(data)
    sampler = NeighborSampler(graph.edge_index, graph.num_nodes, (3, 2), undirected=True)
    sub = sampler.sample(torch.arange(0, 300, 15), torch.Generator().manual_seed(6))
    edges = sub.edge_index
    if weighted:  # weights encode the edge's id: a block that misaligns values and entries reads other weights
        edges = edge_list(edges, 1.0 + torch.arange(edges.shape[1], dtype=torch.float32) / edges.shape[1])
    rows = (sub.hop_sizes[1], sub.hop_sizes[0])
    full = normalized_adjacency(edges, sub.num_nodes, symmetric=False).to_dense()
    blocks = layered_normalized_adjacency(edges, sub.num_nodes, rows)
    columns = sub.num_nodes
    for block, count in zip(blocks, rows, strict=True):
        assert torch.equal(block.to_dense(), full[:count, :columns])
        assert torch.equal(block.transpose.to_dense(), full[:count, :columns].t())
        columns = count
    with pytest.raises(ValueError, match="must not grow"):
        layered_normalized_adjacency(edges, sub.num_nodes, (rows[1], rows[0]))


def _view_of_sample(seed: int = 5, keep: float = 0.6):
    """A sampled subgraph of a random graph, two hops, with 40 % of its edges dropped as a view drops them."""
    data = _random_graph(300, 1500, seed=seed)
    graph = prepare_graph(data)
    sampler = NeighborSampler(graph.edge_index, graph.num_nodes, (3, 3), undirected=True)
    sub = sampler.sample(torch.arange(0, 300, 12), torch.Generator().manual_seed(seed))
    kept = torch.rand(sub.edge_index.shape[1], generator=torch.Generator().manual_seed(seed + 1)) < keep
    return data, sub, sub.edge_index[:, kept], (sub.hop_sizes[1], sub.hop_sizes[0])


def test_a_view_computes_each_layer_only_at_the_rows_the_next_reads_and_those_rows_are_the_full_operators():
    import gca.graph.sparse as sparse
    from gca.graph.sparse import normalized_adjacency

    _, sub, edges, rows = _view_of_sample()
    full = normalized_adjacency(edges, sub.num_nodes, symmetric=False).to_dense()
    leading = [
        (crow, col, values, shape)
        for crow, col, values, shape in (
            (m.matrix.crow_indices(), m.matrix.col_indices(), m.matrix.values(), m.shape)
            for m in _unpruned(edges, sub.num_nodes, rows)
        )
    ]
    pruned, kept = sparse._read_rows_only(leading)
    assert kept[0] is not None and kept[0].numel() < rows[0] and kept[1] is None  # the view left rows unread
    ids = [kept[0], torch.arange(rows[1])]
    columns = [torch.arange(sub.num_nodes), kept[0]]
    for block, row_ids, column_ids in zip(pruned, ids, columns, strict=True):
        matrix = sparse.csr_tensor(*block).to_dense()
        assert torch.equal(matrix, full[row_ids][:, column_ids])  # each kept row is the full operator's, in order
    # every row a later layer reads is kept: nothing the anchors depend on is dropped
    assert torch.equal(
        full[: rows[1], : rows[0]][:, ~torch.isin(torch.arange(rows[0]), kept[0])],
        torch.zeros(rows[1], rows[0] - kept[0].numel()),
    )
    blocks = layered_normalized_adjacency(edges, sub.num_nodes, rows)
    assert [b.shape for b in blocks] == [(kept[0].numel(), sub.num_nodes), (rows[1], kept[0].numel())]
    for block in blocks:
        assert torch.equal(block.transpose.to_dense(), block.to_dense().t())


def _unpruned(edges, num_nodes, rows):
    import gca.graph.sparse as sparse

    real = sparse._read_rows_only
    sparse._read_rows_only = lambda blocks: (blocks, [None] * len(blocks))
    try:
        return layered_normalized_adjacency(edges, num_nodes, rows)
    finally:
        sparse._read_rows_only = real


@pytest.mark.parametrize("width", [6, 16])  # (M X) W and M (X W) in the first layer
def test_the_anchors_embeddings_and_gradients_are_those_of_every_row_computed(width):
    from gca.nn.gcn import GCNEncoder

    data, sub, edges, rows = _view_of_sample(seed=8)
    generator = torch.Generator().manual_seed(9)
    x = data.x[sub.nodes] if width == 6 else torch.rand(sub.num_nodes, width, generator=generator)
    results = []
    for blocks in (layered_normalized_adjacency(edges, sub.num_nodes, rows), _unpruned(edges, sub.num_nodes, rows)):
        torch.manual_seed(0)
        encoder = GCNEncoder(x.shape[1], 8, num_layers=2, activation="prelu")
        out = encoder(x, blocks)
        out.pow(2).sum().backward()
        results.append((out, [p.grad for p in encoder.parameters()]))
    (pruned, grads), (every, every_grads) = results
    torch.testing.assert_close(pruned, every, rtol=1e-6, atol=1e-7)
    for got, want in zip(grads, every_grads, strict=True):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("directed", [False, True])
def test_three_layers_of_a_weighted_view_compute_the_anchors_of_every_row_computed(directed):
    from gca.graph.sparse import edge_list
    from gca.nn.gcn import GCNEncoder

    data = _random_graph(300, 1500, seed=11)
    if directed:
        data.edge_index = data.edge_index[:, data.edge_index[0] < data.edge_index[1]]
    graph = prepare_graph(data, directed=directed)
    sampler = NeighborSampler(
        graph.edge_index, graph.num_nodes, (3, 2, 2), undirected=not directed, symmetric_units=not directed
    )
    sub = sampler.sample(torch.arange(0, 300, 10), torch.Generator().manual_seed(12))
    kept = torch.rand(sub.edge_index.shape[1], generator=torch.Generator().manual_seed(13)) < 0.5
    edges = sub.edge_index[:, kept]
    # each edge's weight encodes its position: an entry moved to another row or column reads another weight
    edges = edge_list(edges, 0.5 + torch.arange(edges.shape[1], dtype=torch.float32) / edges.shape[1])
    rows = (sub.hop_sizes[2], sub.hop_sizes[1], sub.hop_sizes[0])
    pruned = layered_normalized_adjacency(edges, sub.num_nodes, rows)
    every = _unpruned(edges, sub.num_nodes, rows)
    assert pruned[0].shape[0] < every[0].shape[0] and pruned[1].shape[0] <= every[1].shape[0]  # rows left out
    x = torch.rand(sub.num_nodes, 24, generator=torch.Generator().manual_seed(14))  # multiplied first: 24 < 32
    outputs = []
    for blocks in (pruned, every):
        torch.manual_seed(0)
        encoder = GCNEncoder(24, 16, num_layers=3, activation="prelu")
        out = encoder(x, blocks)
        out.pow(2).sum().backward()
        outputs.append((out, [p.grad for p in encoder.parameters()]))
    torch.testing.assert_close(outputs[0][0], outputs[1][0], rtol=1e-6, atol=1e-7)
    for got, want in zip(outputs[0][1], outputs[1][1], strict=True):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-7)


def test_read_columns_refuses_an_index_that_leaves_out_a_column_with_entries():
    from gca.graph.sparse import SparseMatrix

    matrix = SparseMatrix(torch.tensor([[1.0, 0.0, 2.0, 0.0], [0.0, 3.0, 0.0, 4.0]]).to_sparse_csr())
    with pytest.raises(ValueError, match="not in index"):
        matrix.read_columns(torch.tensor([0, 2, 3]))
    assert torch.equal(matrix.read_columns(torch.tensor([0, 1, 2, 3])).to_dense(), matrix.to_dense())
