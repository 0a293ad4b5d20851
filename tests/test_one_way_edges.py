"""A graph declared undirected (``directed=False``) whose edges are listed one way — each once, as many files and
pipelines without ``to_undirected`` give them — is mirrored as the file loaders mirror theirs: the views and the
final operator see one undirected graph, so listing each edge once and listing both directions embed alike, and
``transform`` of the training data gives ``embedding_``. Weights and edge features go with their edges."""

from __future__ import annotations

import pytest
import torch
from torch_geometric.data import Data

from gca.config import GCAConfig
from gca.datasets import karate_club
from gca.graph.graph import GraphError, prepare_graph
from gca.train.estimator import GCA

CONFIG = GCAConfig(epochs=3, hidden=8, proj_hidden=8, seed=1)


def _one_way(edge_index: torch.Tensor, seed: int = 0) -> torch.Tensor:
    """Each undirected edge once, in a random direction and a random order."""
    once = edge_index[:, edge_index[0] < edge_index[1]]
    generator = torch.Generator().manual_seed(seed)
    flip = torch.rand(once.shape[1], generator=generator) < 0.5
    once = torch.where(flip, once.flip(0), once)
    return once[:, torch.randperm(once.shape[1], generator=generator)]


def _embeddings(data: Data) -> tuple[torch.Tensor, torch.Tensor]:
    estimator = GCA(CONFIG, device="cpu").fit(data, directed=False)
    return estimator.embedding_, estimator.transform(data)


def test_one_way_and_both_ways_give_the_same_embeddings_and_transform_gives_embedding_():
    club = karate_club()
    both = Data(x=club.x, edge_index=club.edge_index)
    one = Data(x=club.x, edge_index=_one_way(club.edge_index))
    assert one.edge_index.shape[1] * 2 == both.edge_index.shape[1]
    z_both, again_both = _embeddings(both)
    z_one, again_one = _embeddings(one)
    assert torch.equal(z_one, z_both)  # the same cleaned edge order: bit for bit
    assert torch.equal(again_one, z_one) and torch.equal(again_both, z_both)


def test_the_cleaned_graph_holds_both_directions_sorted_and_directed_none_mirrors_nothing():
    edges = torch.tensor([[2, 0, 3], [0, 1, 1]])  # 2→0, 0→1, 3→1
    graph = prepare_graph(Data(x=torch.eye(4), edge_index=edges), directed=False)
    assert not graph.directed and graph.edge_index.dtype == torch.int32
    assert graph.edge_index.tolist() == [[0, 0, 1, 1, 2, 3], [1, 2, 0, 3, 0, 1]]
    auto = prepare_graph(Data(x=torch.eye(4), edge_index=edges))
    assert auto.directed and auto.edge_index.shape[1] == 3


def test_weights_and_edge_features_go_with_their_edges_and_a_repeat_is_summed():
    # (u, v) carries weight 10u + v and feature row [u, v]: every added reverse must carry its edge's values
    edges = torch.tensor([[2, 0, 3, 3], [0, 1, 1, 1]])  # 3→1 listed twice: merged, weights summed
    weight = torch.tensor([20.0, 1.0, 31.0, 31.0])
    attr = edges.t().to(torch.float32)
    graph = prepare_graph(Data(x=torch.eye(4), edge_index=edges, edge_weight=weight, edge_attr=attr), directed=False)
    pairs = [tuple(p) for p in graph.edge_index.t().tolist()]
    assert pairs == [(0, 1), (0, 2), (1, 0), (1, 3), (2, 0), (3, 1)]
    by_pair = dict(zip(pairs, graph.edge_weight.tolist(), strict=True))
    assert by_pair == {(0, 1): 1.0, (1, 0): 1.0, (2, 0): 20.0, (0, 2): 20.0, (3, 1): 62.0, (1, 3): 62.0}
    rows = dict(zip(pairs, graph.edge_attr.tolist(), strict=True))
    assert rows[(0, 2)] == rows[(2, 0)] == [2.0, 0.0] and rows[(1, 3)] == rows[(3, 1)] == [6.0, 2.0]
    assert graph.warnings[0] == "merged 1 duplicate edge (their weights and edge features summed)"


def test_weighted_one_way_and_both_ways_train_alike():
    club = karate_club()
    once = _one_way(club.edge_index, seed=4)
    weight = 1.0 + (once[0] * 34 + once[1]).to(torch.float32) % 7  # a weight that depends on the edge
    both = torch.cat([once, once.flip(0)], 1)
    one = Data(x=club.x, edge_index=once, edge_weight=weight)
    mirrored = Data(x=club.x, edge_index=both, edge_weight=torch.cat([weight, weight]))
    z_one, again_one = _embeddings(one)
    z_both, _ = _embeddings(mirrored)
    assert torch.equal(z_one, z_both) and torch.equal(again_one, z_one)


def test_an_edge_listed_both_ways_with_different_weights_is_still_refused():
    edges = torch.tensor([[0, 1, 1], [1, 0, 2]])  # (0, 1) both ways, 1→2 one way
    data = Data(x=torch.eye(3), edge_index=edges, edge_weight=torch.tensor([1.0, 2.0, 3.0]))
    with pytest.raises(GraphError, match="different weight in each direction"):
        prepare_graph(data, directed=False)


def _one_way_warnings(data: Data, **fit) -> list[str]:
    """The one-way warnings of a fit and a transform of ``data`` (every warning recorded, none filtered)."""
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        estimator = GCA(CONFIG, device="cpu").fit(data, **fit)
        estimator.transform(data)
    return [str(w.message) for w in caught if "listed one way only" in str(w.message)]


def test_a_graph_whose_every_edge_is_one_way_is_said_once_to_train_directed():
    club = karate_club()
    one = Data(x=club.x, edge_index=_one_way(club.edge_index))
    said = _one_way_warnings(one)
    assert len(said) == 1 and "none of its 78 edges has its reverse" in said[0]
    assert "directed=False" in said[0] and "directed=True" in said[0]
    with pytest.warns(UserWarning, match="listed one way only"):
        graph = GCA(CONFIG, device="cpu").prepare(one).graph
    assert graph.directed and said[0] in graph.warnings


def test_no_one_way_warning_where_the_direction_is_given_or_some_edge_has_its_reverse():
    club = karate_club()
    once = _one_way(club.edge_index)
    one = Data(x=club.x, edge_index=once)
    assert _one_way_warnings(one, directed=False) == [] and _one_way_warnings(one, directed=True) == []
    assert _one_way_warnings(Data(x=club.x, edge_index=club.edge_index)) == []  # both ways: undirected
    mixed = torch.cat([once, once[:, :1].flip(0)], 1)  # one edge listed both ways: a directed graph, as given
    assert _one_way_warnings(Data(x=club.x, edge_index=mixed)) == []
    x = torch.eye(4)
    loops = torch.tensor([[0, 1, 2], [0, 1, 2]])
    for edges in (loops, torch.empty(2, 0, dtype=torch.long)):  # self-loops only, no edge: nothing one way
        assert _one_way_warnings(Data(x=x, edge_index=edges)) == []


def test_has_reverse_edge_finds_one_reverse_pair_among_one_way_edges(monkeypatch):
    from gca.graph import csr
    from gca.graph.csr import has_reverse_edge

    monkeypatch.setattr(csr, "PAIR_BLOCK", 8)

    edges = torch.tensor([[0, 1, 2, 3], [1, 2, 3, 0]])  # a directed cycle: no reverse
    assert not has_reverse_edge(edges, 4)
    assert has_reverse_edge(torch.tensor([[0, 1, 1, 2], [1, 0, 2, 3]]), 4)
    n = 2 * csr.PAIR_BLOCK + 5  # blocks of 8 edges: a pair whose reverse lies in another block is found
    chain = torch.stack([torch.arange(n - 1), torch.arange(1, n)])
    assert not has_reverse_edge(chain, n)
    last = torch.cat([chain, torch.tensor([[n - 1], [n - 2]])], 1)
    assert has_reverse_edge(last, n)
