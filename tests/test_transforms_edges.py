"""The edge transforms return the input's own edges, and every per-edge attribute moves with its edge.

Ids are encoded in the data: ``edge_attr[i] = (i, key(u, v))``, so a row that ends up beside another edge is seen.
The oracle is the rule of :mod:`gca.augment.transforms`, computed here by hand: the cleaned graph's units in
(source, target) order, one uniform draw each from the generator, kept when draw ≥ p; an input edge is kept when its
unit is ({min, max} on undirected graphs, the edge itself on directed ones), a self-loop always.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch_geometric.data import Batch, Data, HeteroData

from gca import GCAConfig
from gca.augment.prepared import prepare
from gca.augment.transforms import AdaptiveAugmentation, AdaptiveEdgeDropping, AdaptiveFeatureMasking, TransformError
from gca.errors import UserError
from gca.graph.graph import GraphError


def _key(u: int, v: int) -> float:
    return float(1000 * u + v)


def _with_ids(edges: list[tuple[int, int]], num_nodes: int, features: int = 4) -> Data:
    edge_index = torch.tensor(edges, dtype=torch.long).t().reshape(2, -1)
    ids = torch.arange(len(edges))
    keys = torch.tensor([_key(u, v) for u, v in edges], dtype=torch.float64)
    x = (torch.arange(num_nodes * features, dtype=torch.float32).reshape(num_nodes, features) % 3 == 0).float()
    return Data(
        x=x,
        edge_index=edge_index,
        edge_attr=torch.stack([ids.double(), keys], dim=1),
        edge_weight=ids.float(),
        edge_type=ids,
        edge_pairs=list(edges),
        edge_array=ids.numpy().copy(),
    )


def _oracle(data: Data, p: float, seed: int, centrality: str = "degree") -> list[int]:
    """The input positions the rule keeps for the first draw of ``torch.Generator().manual_seed(seed)``."""
    config = GCAConfig(p_e1=p, p_f1=0.0, p_tau=0.7, centrality=centrality)
    prepared = prepare(Data(x=torch.ones(data.num_nodes, 1), edge_index=data.edge_index), config)
    graph, prob = prepared.graph, prepared.views[0].edge_prob
    pairs = sorted(set(map(tuple, graph.edge_index.t().tolist())))
    units = pairs if graph.directed else [(u, v) for u, v in pairs if u < v]
    assert len(units) == prob.numel()
    draws = torch.rand(len(units), generator=torch.Generator().manual_seed(seed))
    kept = {unit for unit, r, q in zip(units, draws.tolist(), prob.tolist(), strict=True) if r >= q}
    keep = []
    for i, (u, v) in enumerate(data.edge_index.t().tolist()):
        unit = (u, v) if graph.directed else (min(u, v), max(u, v))
        if u == v or unit in kept:
            keep.append(i)
    return keep


def _assert_rows_follow_their_edges(out: Data, data: Data, expected: list[int]) -> None:
    ids = out.edge_attr[:, 0].long()
    assert ids.tolist() == expected  # the kept input edges, in the input's order
    assert torch.equal(out.edge_index, data.edge_index[:, ids])
    for j, (u, v) in enumerate(out.edge_index.t().tolist()):
        assert out.edge_attr[j, 1] == _key(u, v)
        assert out.edge_pairs[j] == (u, v)
    assert torch.equal(out.edge_weight, ids.float()) and torch.equal(out.edge_type, ids)
    assert out.edge_array.tolist() == ids.tolist()
    out.validate()


def test_the_issue_graph_keeps_every_edge_attribute_row_with_its_edge():
    # Ten edges: a triangle 0-1-2 both ways, 3→4 one way (so the graph is directed), 0→0, 2→0 again.
    edges = [(0, 1), (1, 0), (1, 2), (2, 1), (0, 2), (2, 0), (3, 4), (0, 0), (2, 0), (4, 4)]
    data = _with_ids(edges, 5)
    data.edge_attr = data.edge_attr[:, :1].float()  # edge_attr=[10, 1] as in the report
    for seed in range(8):
        out = AdaptiveEdgeDropping(p=0.5, generator=torch.Generator().manual_seed(seed))(data)
        expected = _oracle(data, 0.5, seed)
        assert out.edge_attr[:, 0].long().tolist() == expected
        assert torch.equal(out.edge_index, data.edge_index[:, expected])
        assert out.edge_attr.shape == (len(expected), 1) and 7 in expected and 9 in expected  # self-loops stay
        out.validate()
    assert data.edge_index.shape[1] == data.edge_attr.shape[0] == 10  # the input is left as it was


def test_self_loops_stay_and_both_directions_go_together():
    # [[0,0,1,2],[0,1,0,2]] used to come back as [[0,1],[1,0]]: the two self-loops are kept now.
    data = Data(x=torch.eye(3), edge_index=torch.tensor([[0, 0, 1, 2], [0, 1, 0, 2]]))
    seen = set()
    for seed in range(16):
        out = AdaptiveEdgeDropping(p=0.5, generator=torch.Generator().manual_seed(seed))(data)
        seen.add(tuple(map(tuple, out.edge_index.t().tolist())))
    assert seen == {((0, 0), (0, 1), (1, 0), (2, 2)), ((0, 0), (2, 2))}  # one unit {0, 1}: p = min(0.5, p_τ)


@st.composite
def graphs(draw):
    n = draw(st.integers(1, 9))
    pair = st.tuples(st.integers(0, n - 1), st.integers(0, n - 1))
    base = draw(st.lists(pair, max_size=14))
    if draw(st.booleans()):  # undirected: every edge with its reverse, repeats and all
        base = base + [(v, u) for u, v in base]
    order = draw(st.permutations(range(len(base))))
    return [base[i] for i in order], n


@settings(max_examples=150)
@given(
    graph=graphs(),
    p=st.sampled_from([0.2, 0.5, 0.9]),
    seed=st.integers(0, 2**16),
    centrality=st.sampled_from(["degree", "pagerank", "eigenvector"]),
    both=st.booleans(),
)
def test_any_graph_keeps_the_rules_edges_with_their_attributes(graph, p, seed, centrality, both):
    edges, n = graph
    data = _with_ids(edges, n)
    make = AdaptiveAugmentation if both else AdaptiveEdgeDropping
    transform = make(
        p, **({"p_f": 0.3} if both else {}), centrality=centrality, generator=torch.Generator().manual_seed(seed)
    )
    out = transform(data)
    _assert_rows_follow_their_edges(out, data, _oracle(data, p, seed, centrality))
    assert out.num_nodes == n and data.edge_index.shape[1] == len(edges)


def test_attributes_that_are_not_per_edge_are_shared_untouched():
    data = _with_ids([(0, 1), (1, 0), (1, 2), (2, 1)], 3)
    data.y, data.graph_id, data.note = torch.tensor([0, 1, 1]), torch.tensor([7]), "kept"
    # A link split's supervision pairs: as many as the edges (RandomLinkSplit's training split), yet no edges of it.
    data.edge_label_index, data.edge_label = torch.tensor([[0, 1, 2, 0], [1, 2, 0, 2]]), torch.tensor([1, 1, 0, 0])
    out = AdaptiveEdgeDropping(0.9, generator=torch.Generator().manual_seed(1))(data)
    assert out.edge_index.shape[1] < 4
    for key in ("x", "y", "graph_id", "note", "edge_label_index", "edge_label"):
        assert out[key] is data[key]


def test_with_as_many_edges_as_nodes_only_edge_named_keys_are_per_edge_as_pyg_says():
    data = _with_ids([(0, 1), (1, 0), (1, 2), (2, 1)], 4)  # E = N = 4: PyG calls "weight" a node attribute
    data.weight = torch.arange(4.0)
    assert data.is_edge_attr("edge_weight") and not data.is_edge_attr("weight")
    out = AdaptiveEdgeDropping(0.9, generator=torch.Generator().manual_seed(1))(data)
    assert out.edge_index.shape[1] < 4 and out.weight is data.weight
    _assert_rows_follow_their_edges(out, data, _oracle(data, 0.9, 1))


def test_edges_keep_the_inputs_dtype_and_edge_dropping_needs_no_features():
    edge_index = torch.tensor([[0, 1, 1, 2, 3, 3], [1, 0, 2, 1, 3, 0]], dtype=torch.int32)
    data = Data(edge_index=edge_index, num_nodes=5, edge_weight=torch.arange(6.0))
    out = AdaptiveEdgeDropping(0.5, generator=torch.Generator().manual_seed(2))(data)
    assert out.edge_index.dtype == torch.int32 and out.x is None and out.num_nodes == 5
    assert (3, 3) in map(tuple, out.edge_index.t().tolist())
    for j, (u, v) in enumerate(out.edge_index.t().tolist()):
        assert edge_index.t().tolist()[int(out.edge_weight[j])] == [u, v]


def test_a_batch_keeps_each_graphs_kept_edges_in_its_slices():
    parts = [
        _with_ids([(0, 1), (1, 0), (1, 2), (2, 1), (0, 0)], 3),
        _with_ids([(0, 1), (1, 0)], 2),
        _with_ids([(0, 2), (2, 0), (1, 2), (2, 1), (0, 1), (1, 0)], 3),
    ]
    for i, part in enumerate(parts):
        part.edge_attr[:, 0] += 100 * i  # ids unique across the batch
        del part.edge_pairs, part.edge_array  # lists and arrays do not batch edge by edge
    batch = Batch.from_data_list(parts)
    out = AdaptiveEdgeDropping(0.6, generator=torch.Generator().manual_seed(5))(batch)
    assert 0 < out.edge_index.shape[1] < batch.edge_index.shape[1]
    assert torch.equal(out.ptr, batch.ptr) and torch.equal(out.batch, batch.batch)
    for i, example in enumerate(out.to_data_list()):
        ids = example.edge_attr[:, 0].long() - 100 * i
        assert torch.equal(example.edge_index, parts[i].edge_index[:, ids])
        assert torch.equal(example.edge_weight, parts[i].edge_weight[ids])
    assert batch.get_example(0).edge_index.shape[1] == 5  # the input batch's slices are its own


@pytest.mark.parametrize("make", [AdaptiveEdgeDropping, AdaptiveFeatureMasking, AdaptiveAugmentation])
def test_inputs_a_transform_cannot_take_give_one_line(make):
    hetero = HeteroData()
    hetero["paper"].x = torch.eye(3)
    hetero["paper", "cites", "paper"].edge_index = torch.tensor([[0, 1], [1, 2]])
    no_edges = Data(x=torch.eye(3))
    cases = [
        (hetero, "to_homogeneous()"),
        ({"x": torch.eye(2)}, "got dict"),
        (no_edges, "needs data.edge_index"),
        (Data(x=torch.eye(2), edge_index=[[0], [1]]), "dense [2, E] tensor"),
    ]
    for data, words in cases:
        with pytest.raises(TransformError) as caught:
            make()(data)
        assert isinstance(caught.value, UserError) and "\n" not in str(caught.value)
        assert words in str(caught.value) and make.__name__ in str(caught.value)
    with pytest.raises(GraphError, match="edge ids must lie in"):
        make()(Data(x=torch.eye(2), edge_index=torch.tensor([[0], [5]])))


def test_a_sparse_adjacency_beside_the_edges_is_refused_by_edge_dropping():
    data = Data(x=torch.eye(3), edge_index=torch.tensor([[0, 1], [1, 0]]))
    data.adj_t = torch.eye(3).to_sparse()
    for make in (AdaptiveEdgeDropping, AdaptiveAugmentation):
        with pytest.raises(TransformError, match="data.adj_t holds them too"):
            make()(data)
    assert AdaptiveFeatureMasking()(data).adj_t is data.adj_t  # masking leaves the edges alone


def test_feature_checks_are_gcas():
    edge_index = torch.tensor([[0, 1], [1, 0]])
    cases = [
        (Data(edge_index=edge_index, num_nodes=2), "no node features"),
        (Data(x=torch.tensor([[1.0], [float("nan")]]), edge_index=edge_index), "NaN or infinite"),
        (Data(x=torch.ones(3, 2), edge_index=edge_index, num_nodes=2), "2 nodes but 3 feature rows"),
    ]
    for data, words in cases:
        with pytest.raises(GraphError, match=words):
            AdaptiveFeatureMasking()(data)
    assert np.isfinite(AdaptiveEdgeDropping()(cases[1][0]).x[0].numpy()).all()  # edge dropping never reads x


def test_a_bad_probability_names_the_transforms_own_argument():
    from gca.augment.transforms import AdaptiveAugmentation, AdaptiveEdgeDropping, AdaptiveFeatureMasking
    from gca.config import ConfigError

    with pytest.raises(ConfigError, match=r"^AdaptiveEdgeDropping: p must be a probability") as caught:
        AdaptiveEdgeDropping(p=1.5)
    assert "p_e1" not in str(caught.value)
    with pytest.raises(ConfigError, match=r"^AdaptiveFeatureMasking: p must be"):
        AdaptiveFeatureMasking(p=float("nan"))
    with pytest.raises(ConfigError, match=r"^AdaptiveAugmentation: p_f must be"):
        AdaptiveAugmentation(p_f=2.0)


def test_an_edge_attribute_of_another_length_is_refused_not_left_misaligned():
    from gca.augment.transforms import AdaptiveEdgeDropping, TransformError

    n = 8
    ring = torch.tensor([[i, (i + 1) % n] for i in range(n)] + [[(i + 1) % n, i] for i in range(n)]).t()
    data = Data(x=torch.eye(n), edge_index=ring, edge_weight=torch.ones(2 * n - 1))
    with pytest.raises(TransformError, match="edge_weight has 15 rows but the graph has 16 edges"):
        AdaptiveEdgeDropping(p=0.3)(data)
