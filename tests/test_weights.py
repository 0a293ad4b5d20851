"""Weighted graphs: edge_weight and edge_attr kept through cleaning, edge dropping and sampled subgraphs, the GCN's
weighted operator, and the per-edge arguments of PyTorch Geometric encoders."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn
from torch_geometric.data import Data
from torch_geometric.nn import GATConv

from gca import GCA, GCAConfig
from gca.augment.prepared import prepare
from gca.errors import UserError
from gca.graph.graph import GraphError, prepare_graph
from gca.graph.sampling import NeighborSampler
from gca.graph.sparse import AdjacencyRows, edge_values, layered_normalized_adjacency, normalized_adjacency
from gca.nn.encoders import EncoderError, check_encoder
from gca.nn.model import GCAModel
from gca.train.batches import NeighborBatches


def _path3(weights=(2.0, 3.0)) -> Data:
    """0 —w01— 1 —w12— 2, both directions listed."""
    w01, w12 = weights
    edge_index = torch.tensor([[0, 1, 1, 2], [1, 0, 2, 1]])
    return Data(x=torch.eye(3), edge_index=edge_index, edge_weight=torch.tensor([w01, w01, w12, w12]))


# Â = D̃^{-1/2}(A_w + I)D̃^{-1/2} by hand for w01 = 2, w12 = 3: D̃ = (1 + 2, 1 + 2 + 3, 1 + 3) = (3, 6, 4).
HAND = torch.tensor(
    [[1 / 3, 2 / math.sqrt(18), 0.0], [2 / math.sqrt(18), 1 / 6, 3 / math.sqrt(24)], [0.0, 3 / math.sqrt(24), 1 / 4]]
)


def test_the_weighted_operator_of_a_three_node_path_equals_the_hand_computed_one():
    graph = prepare_graph(_path3())
    assert not graph.directed and graph.edge_weight.tolist() == [2.0, 2.0, 3.0, 3.0]
    for symmetric, coalesced in ((True, True), (True, False), (False, False)):
        matrix = normalized_adjacency(graph.edge_index, 3, symmetric=symmetric, coalesced=coalesced).to_dense()
        torch.testing.assert_close(matrix, HAND, rtol=1e-6, atol=1e-7)
    rows = AdjacencyRows(graph.edge_index, 3)
    torch.testing.assert_close(
        torch.cat([rows.row_slice(0, 2).to_dense(), rows.row_slice(2, 3).to_dense()]), HAND, rtol=1e-6, atol=1e-7
    )
    layered = layered_normalized_adjacency(graph.edge_index, 3, [3, 1])
    # the anchor 0 reads nodes 0 and 1 only: the first layer keeps those rows, the second reads them
    torch.testing.assert_close(layered[0].to_dense(), HAND[:2], rtol=1e-6, atol=1e-7)
    torch.testing.assert_close(layered[1].to_dense(), HAND[:1, :2], rtol=1e-6, atol=1e-7)
    assert HAND[0, 2] == 0


def test_the_weighted_operator_equals_pyg_gcn_norm():
    from torch_geometric.nn.conv.gcn_conv import gcn_norm

    graph = prepare_graph(_path3((0.5, 7.0)))
    index, values = gcn_norm(
        graph.edge_index.long().as_subclass(torch.Tensor), graph.edge_weight, 3, add_self_loops=True
    )
    pyg = torch.zeros(3, 3).index_put_((index[1], index[0]), values, accumulate=True)
    ours = normalized_adjacency(graph.edge_index, 3, symmetric=True, coalesced=True).to_dense()
    torch.testing.assert_close(ours, pyg, rtol=1e-6, atol=1e-7)


def _key(u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """An undirected edge's id, the same in both directions: min·1000 + max."""
    return (torch.minimum(u, v) * 1000 + torch.maximum(u, v)).to(torch.float64)


def _messy_undirected(seed: int, n: int = 40, m: int = 90) -> Data:
    """A random undirected graph listed in shuffled order with both directions, some edges repeated (their weights
    and features split in parts that sum to the id) and self-loops; each edge's weight is its id min·1000 + max
    and its features (min, max)."""
    g = torch.Generator().manual_seed(seed)
    pairs = torch.randint(0, n, (2, m), generator=g)
    pairs = pairs[:, pairs[0] != pairs[1]]
    pairs = torch.unique(torch.sort(pairs, dim=0).values, dim=1)  # u < v, distinct
    u, v = pairs
    key = _key(u, v)
    attr = torch.stack([u, v], 1).to(torch.float32)
    rows, weights, attrs = [], [], []
    for a, b in ((u, v), (v, u)):  # both directions, equal values
        rows.append(torch.stack([a, b]))
        weights.append(key)
        attrs.append(attr)
    repeat = torch.randperm(u.numel(), generator=g)[: u.numel() // 3]  # listed twice in both directions
    # the repeated edges' weights are two whole parts of the id, the first at most the id
    split = torch.floor(key[repeat] * torch.rand(repeat.numel(), generator=g, dtype=torch.float64))
    for direction, (a, b) in enumerate(((u, v), (v, u))):
        weights[direction] = weights[direction].clone()
        attrs[direction] = attrs[direction].clone()
        weights[direction][repeat] = split  # the first copy
        attrs[direction][repeat] = 0.0
        rows.append(torch.stack([a[repeat], b[repeat]]))
        weights.append(key[repeat] - split)  # the second copy: together the id
        attrs.append(attr[repeat])
    loops = torch.randint(0, n, (5,), generator=g)
    rows.append(torch.stack([loops, loops]))
    weights.append(torch.full((5,), 99999.0, dtype=torch.float64))
    attrs.append(torch.full((5, 2), -1.0))
    edge_index, weight, edge_attr = torch.cat(rows, 1), torch.cat(weights), torch.cat(attrs)
    order = torch.randperm(edge_index.shape[1], generator=g)
    return Data(
        x=torch.rand(n, 5, generator=g),
        edge_index=edge_index[:, order],
        edge_weight=weight[order],
        edge_attr=edge_attr[order],
    )


def _assert_own_values(
    edge_index: torch.Tensor, weight: torch.Tensor, attr: torch.Tensor | None, nodes: torch.Tensor | None = None
) -> None:
    source, target = edge_index.long()
    if nodes is not None:  # a subgraph's local ids
        source, target = nodes[source], nodes[target]
    assert torch.equal(weight.to(torch.float64), _key(source, target))
    if attr is not None:
        assert torch.equal(
            attr, torch.stack([torch.minimum(source, target), torch.maximum(source, target)], 1).to(attr.dtype)
        )


@pytest.mark.parametrize("seed", range(6))
def test_every_kept_edge_keeps_its_own_weight_after_cleaning_dropping_and_sampling(seed):
    data = _messy_undirected(seed)
    graph = prepare_graph(data)
    assert not graph.directed and graph.edge_weight.dtype == torch.float32
    assert any("merged" in w for w in graph.warnings) and any("self-loops" in w for w in graph.warnings)
    _assert_own_values(graph.edge_index, graph.edge_weight, graph.edge_attr)
    assert edge_values(graph.edge_index)[0] is graph.edge_weight
    prepared = prepare(graph, GCAConfig(p_e1=0.5, p_e2=0.3, p_tau=0.9))
    for view in prepared.views:
        for draw in range(3):
            edges = view.sample_edges(torch.Generator().manual_seed(draw))
            weight, attr = edge_values(edges)
            assert 0 < edges.shape[1] < graph.edge_index.shape[1]
            _assert_own_values(edges, weight, attr)
    # mini-batch: every sampled edge of every view carries the values of the full-graph edge it stands for
    source = NeighborBatches(graph, prepared.views, batch_size=5, fanouts=(3, 2))
    sub = source.sampler.sample(torch.arange(5), torch.Generator().manual_seed(seed))
    batch = source.batch(sub)
    for view in batch.views:
        edges = view.sample_edges(torch.Generator().manual_seed(1))
        weight, attr = edge_values(edges)
        assert edges.shape[1] > 0
        _assert_own_values(edges, weight, attr, sub.nodes)


def test_a_directed_graphs_weights_follow_their_edges():
    g = torch.Generator().manual_seed(3)
    pairs = torch.unique(torch.randint(0, 30, (2, 80), generator=g), dim=1)
    pairs = pairs[:, pairs[0] != pairs[1]]
    pairs = pairs[:, ~torch.isin(pairs[1] * 1000 + pairs[0], pairs[0] * 1000 + pairs[1])]  # no reverse: directed
    order = torch.randperm(pairs.shape[1], generator=g)
    u, v = pairs[:, order]
    data = Data(
        x=torch.rand(30, 4, generator=g), edge_index=torch.stack([u, v]), edge_weight=(u * 1000 + v).to(torch.float32)
    )
    graph = prepare_graph(data)
    assert graph.directed
    source, target = graph.edge_index.long()
    assert torch.equal(graph.edge_weight, (source * 1000 + target).to(torch.float32))
    prepared = prepare(graph, GCAConfig(p_e1=0.5, p_e2=0.5))
    edges = prepared.views[0].sample_edges(torch.Generator().manual_seed(0))
    s, t = edges.long()
    assert torch.equal(edge_values(edges)[0], (s * 1000 + t).to(torch.float32))
    sub = NeighborSampler(graph.edge_index, 30, (4, 4), undirected=False, symmetric_units=False).sample(
        torch.arange(6), torch.Generator().manual_seed(0)
    )
    s, t = sub.nodes[sub.edge_index[0]], sub.nodes[sub.edge_index[1]]
    assert torch.equal(graph.edge_weight[sub.edge_ids], (s * 1000 + t).to(torch.float32))


def test_without_weights_the_graph_is_as_before():
    data = _messy_undirected(0)
    plain = prepare_graph(Data(x=data.x, edge_index=data.edge_index))
    weighted = prepare_graph(data)
    assert type(plain.edge_index) is torch.Tensor and plain.edge_weight is None
    assert torch.equal(plain.edge_index, weighted.edge_index.as_subclass(torch.Tensor))
    assert plain.edge_index.dtype == weighted.edge_index.dtype
    assert edge_values(plain.edge_index) == (None, None)


@pytest.mark.parametrize("batch_size", [0, 6])
def test_training_with_weights_of_one_equals_training_without_bit_for_bit(batch_size):
    data = _messy_undirected(1)
    plain = Data(x=data.x, edge_index=data.edge_index)
    ones = Data(x=data.x, edge_index=data.edge_index, edge_weight=torch.ones(data.edge_index.shape[1]))
    ones.edge_weight[(data.edge_index[0] == data.edge_index[1]).nonzero()] = 5.0  # self-loops: dropped anyway
    # repeated edges are summed: give each copy 1 / copies so merged weights are 1.0
    key = data.edge_index[0] * 1000 + data.edge_index[1]
    _, inverse, counts = torch.unique(key, return_inverse=True, return_counts=True)
    ones.edge_weight = torch.where(
        data.edge_index[0] == data.edge_index[1], ones.edge_weight, 1.0 / counts[inverse].float()
    )
    config = GCAConfig(epochs=3, hidden=8, proj_hidden=8, batch_size=batch_size, fanout=(3, 3))
    a = GCA(config, device="cpu").fit(plain)
    b = GCA(config, device="cpu").fit(ones)
    assert torch.equal(b.graph.edge_weight, torch.ones_like(b.graph.edge_weight))
    assert a.losses == b.losses
    assert torch.equal(a.embedding_, b.embedding_)


def test_weights_change_training_and_inference():
    data = _messy_undirected(2)
    config = GCAConfig(epochs=2, hidden=8, proj_hidden=8)
    a = GCA(config, device="cpu").fit(Data(x=data.x, edge_index=data.edge_index))
    b = GCA(config, device="cpu").fit(data)
    assert not torch.equal(a.embedding_, b.embedding_)


def test_a_gat_with_edge_dim_reads_edge_attr_aligned_with_its_edges():
    data = _messy_undirected(4)
    seen = []

    class Spy(nn.Module):
        """A GAT layer over edge_attr that checks every attr row against the ids its edge encodes (on the whole
        graph; a sampled subgraph's local ids are checked in the property test above)."""

        def __init__(self, whole: bool) -> None:
            super().__init__()
            self.conv, self.whole = GATConv(5, 8, edge_dim=2), whole

        def forward(self, x, edge_index, edge_attr):
            s, t = edge_index
            assert type(edge_index) is torch.Tensor and edge_attr.shape == (edge_index.shape[1], 2)
            if self.whole:
                assert torch.equal(edge_attr, torch.stack([torch.minimum(s, t), torch.maximum(s, t)], 1).float())
            seen.append(edge_index.shape[1])
            return self.conv(x, edge_index, edge_attr)

    for batch_size in (0, 5):
        seen.clear()
        config = GCAConfig(epochs=2, hidden=8, proj_hidden=8, batch_size=batch_size, fanout=(3, 3), p_e1=0.4)
        z = GCA(config, device="cpu", encoder=Spy(batch_size == 0)).fit_transform(data)
        assert z.shape == (40, 8) and len(seen) >= 5 and len(set(seen)) > 1
    # gca's own gat built with edge_dim runs on the views' attributes
    graph = prepare_graph(data)
    model = GCAModel.from_config(5, GCAConfig(encoder="gat", hidden=8, proj_hidden=8), edge_dim=graph.edge_dim)
    view = prepare(graph, GCAConfig()).views[0]
    h = model.encode(graph.features, view.sample_edges(torch.Generator().manual_seed(0)), graph.num_nodes)
    assert h.shape == (40, 8)
    assert "encoder.convs.0.lin_edge.weight" in model.state_dict()
    again = GCAModel.from_weights(model.state_dict(), 5, GCAConfig(encoder="gat", hidden=8, proj_hidden=8))
    assert again.encoder.edge_dim == 2


def test_an_encoder_that_requires_edge_attr_on_a_graph_without_one_is_one_line():
    class NeedsAttr(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(5, 8)

        def forward(self, x, edge_index, edge_attr):
            return self.lin(x)

    data = _messy_undirected(0)
    plain = Data(x=data.x, edge_index=data.edge_index)
    with pytest.raises(EncoderError) as error:
        GCA(GCAConfig(epochs=1, hidden=8, proj_hidden=8), device="cpu", encoder=NeedsAttr()).fit(plain)
    assert "requires edge_attr" in str(error.value) and "\n" not in str(error.value)
    graph = prepare_graph(plain)
    with pytest.raises(EncoderError, match="requires edge_attr"):
        check_encoder(NeedsAttr(), graph.features, 8, graph.edge_index)
    check_encoder(NeedsAttr(), prepare_graph(data).features, 8, prepare_graph(data).edge_index)  # passes


def test_unused_edge_values_are_warned_about():
    data = _messy_undirected(0)
    attr_only = Data(x=data.x, edge_index=data.edge_index, edge_attr=data.edge_attr)
    warnings = prepare(prepare_graph(attr_only), GCAConfig()).graph.warnings
    assert "edge_attr is not used by the gcn encoder; use encoder=gat (edge_dim) or give edge_weight" in warnings
    weighted = Data(x=data.x, edge_index=data.edge_index, edge_weight=data.edge_weight)
    warnings = prepare(prepare_graph(weighted), GCAConfig(encoder="sage")).graph.warnings
    assert any(w.startswith("edge_weight is not used by the sage encoder") for w in warnings)
    assert not any("not used" in w for w in prepare(prepare_graph(weighted), GCAConfig()).graph.warnings)


@pytest.mark.parametrize(
    ("weight", "message"),
    [
        (lambda e: -torch.ones(e), "negative"),
        (lambda e: torch.full((e,), float("nan")), "NaN or infinite"),
        (lambda e: torch.tensor([1.0] * (e - 1) + [float("inf")]), "NaN or infinite"),
        (lambda e: torch.ones(e + 1), "must have shape"),
        (lambda e: torch.ones(e, 2), "must have shape"),
        (lambda e: [1.0] * e, "must be a tensor"),
        (lambda e: torch.ones(e, dtype=torch.bool), "real numbers"),
    ],
)
def test_bad_weights_are_one_line(weight, message):
    data = _path3()
    data.edge_weight = weight(4)
    with pytest.raises(GraphError, match=message) as error:
        prepare_graph(data)
    assert isinstance(error.value, UserError) and "\n" not in str(error.value)


def test_a_single_weight_beyond_float32_is_blamed_on_its_edge_not_on_a_merge():
    """1e39 is finite in float64 and infinite as the float32 the GCN uses: one line naming the edge. Only a sum of
    merged duplicates that overflows is blamed on the merge."""
    data = _path3()
    data.edge_weight = torch.tensor([1.0, 1.0, 1e39, 1e39], dtype=torch.float64)
    with pytest.raises(GraphError, match=r"2 values beyond float32's range \(first at edge 2: 1e\+39") as error:
        prepare_graph(data)
    assert "merged" not in str(error.value) and "\n" not in str(error.value)
    largest = torch.finfo(torch.float32).max
    data.edge_weight = torch.tensor([1.0, 1.0, largest, largest], dtype=torch.float64)  # the largest: kept
    assert prepare_graph(data).edge_weight[2] == largest
    merged = Data(
        x=torch.eye(2),
        edge_index=torch.tensor([[0, 0, 1, 1], [1, 1, 0, 0]]),
        edge_weight=torch.full((4,), largest, dtype=torch.float64),
    )
    with pytest.raises(GraphError, match="merged duplicate edges' weights overflow"):
        prepare_graph(merged)


def test_bad_edge_attr_and_asymmetric_weights_are_one_line():
    data = _path3()
    data.edge_attr = torch.tensor([[1.0], [float("nan")], [0.0], [0.0]])
    with pytest.raises(GraphError, match="edge_attr holds NaN"):
        prepare_graph(data)
    data.edge_attr = torch.ones(3, 2)
    with pytest.raises(GraphError, match="edge_attr must have shape"):
        prepare_graph(data)
    asymmetric = _path3()
    asymmetric.edge_weight = torch.tensor([2.0, 5.0, 3.0, 3.0])
    with pytest.raises(GraphError, match=r"\(0, 1\) has 2 but \(1, 0\) has 5.*directed=True") as error:
        prepare_graph(asymmetric)
    assert "\n" not in str(error.value)
    assert prepare_graph(asymmetric, directed=True).edge_weight.tolist() == [2.0, 5.0, 3.0, 3.0]
    attr = _path3()
    attr.edge_attr = torch.tensor([[1.0], [2.0], [3.0], [3.0]])
    with pytest.raises(GraphError, match="different edge_attr"):
        prepare_graph(attr)


def test_a_weighted_graph_pickles_copies_and_moves_with_its_weights():
    import copy
    import pickle

    graph = prepare_graph(_messy_undirected(5))
    for twin in (pickle.loads(pickle.dumps(graph)), copy.deepcopy(graph), graph.to("cpu")):
        assert torch.equal(edge_values(twin.edge_index)[0], graph.edge_weight)
        assert torch.equal(twin.edge_weight, graph.edge_weight)
    assert (
        graph.fingerprint()
        != prepare_graph(Data(x=_messy_undirected(5).x, edge_index=_messy_undirected(5).edge_index)).fingerprint()
    )


def test_edge_values_an_encoder_ignores_are_said_to_a_python_user(caplog):
    import logging

    from gca import GCA, GCAConfig

    n = 12
    ring = torch.tensor([[i, (i + 1) % n] for i in range(n)] + [[(i + 1) % n, i] for i in range(n)]).t()
    data = Data(x=torch.eye(n), edge_index=ring, edge_weight=torch.ones(2 * n))
    with caplog.at_level(logging.WARNING, logger="gca"), pytest.warns(UserWarning, match="edge_weight is not used"):
        GCA(GCAConfig(epochs=1, hidden=8, proj_hidden=8, encoder="sage"), device="cpu").fit(data)
    assert any("edge_weight is not used" in r.getMessage() for r in caplog.records)
