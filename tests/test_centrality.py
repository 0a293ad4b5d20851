import networkx as nx
import numpy as np
import pytest
import torch
from conftest import undirected

from gca.augment.centrality import degree_centrality, eigenvector_centrality, node_centrality, pagerank_centrality


def path_edges(n):
    return undirected([(i, i + 1) for i in range(n - 1)])


def test_degree_on_path_and_directed_graph():
    assert degree_centrality(path_edges(4), 4).tolist() == [1, 2, 2, 1]
    directed = torch.tensor([[0, 0, 1, 2], [1, 2, 2, 0]])
    assert degree_centrality(directed, 3, directed=True).tolist() == [1, 1, 2]  # in-degree


def test_duplicates_and_self_loops_do_not_count():
    edges = torch.cat([path_edges(4), torch.tensor([[1, 1], [2, 2]]), path_edges(4)], dim=1)
    assert degree_centrality(edges, 4).tolist() == [1, 2, 2, 1]
    assert torch.allclose(pagerank_centrality(edges, 4), pagerank_centrality(path_edges(4), 4))


def test_isolated_nodes_get_half_the_smallest_positive_score():
    # node 4 isolated
    scores = degree_centrality(path_edges(4), 5)
    assert scores.tolist() == [1, 2, 2, 1, 0.5]
    for name in ("degree", "eigenvector", "pagerank"):
        s = node_centrality(name, path_edges(4), 5)
        assert torch.isfinite(s).all() and (s > 0).all()
        assert s[4] < s[:4].min()


def test_graph_without_edges_is_all_ones():
    empty = torch.empty(2, 0, dtype=torch.long)
    for name in ("degree", "eigenvector", "pagerank"):
        assert node_centrality(name, empty, 3).tolist() == [1.0, 1.0, 1.0]


def test_pagerank_solves_the_papers_equation():
    # σ = α A D⁻¹ σ + 1 solved directly: (I − α A D⁻¹) σ = 1, with (A D⁻¹)[v, u] = 1/d_out(u) for u → v.
    rng = np.random.default_rng(0)
    n = 12
    edges = torch.from_numpy(rng.integers(0, n, size=(2, 40)))
    edges = edges[:, edges[0] != edges[1]]
    sigma = pagerank_centrality(edges, n, directed=True).numpy()
    adj = np.zeros((n, n))
    adj[edges[0], edges[1]] = 1.0
    out = adj.sum(1)
    m = np.zeros((n, n))
    for u in range(n):
        if out[u] > 0:
            m[:, u] = adj[u] / out[u]
    expected = np.linalg.solve(np.eye(n) - 0.85 * m, np.ones(n))
    np.testing.assert_allclose(sigma, expected, rtol=1e-8)


def test_pagerank_matches_networkx_up_to_scale_on_a_graph_without_sinks():
    g = nx.karate_club_graph()
    edges = undirected(list(g.edges()))
    ours = pagerank_centrality(edges, 34).numpy()
    theirs = np.array([nx.pagerank(g, alpha=0.85, tol=1e-12, weight=None)[v] for v in range(34)])
    np.testing.assert_allclose(ours / ours.sum(), theirs, rtol=1e-6)


def test_eigenvector_matches_dense_solver_on_connected_graph():
    g = nx.karate_club_graph()
    edges = undirected(list(g.edges()))
    ours = eigenvector_centrality(edges, 34).numpy()
    adj = nx.to_numpy_array(g, weight=None)
    vec = np.abs(np.linalg.eigh(adj)[1][:, -1])
    np.testing.assert_allclose(ours / ours.max(), vec / vec.max(), rtol=1e-8)


def test_eigenvector_large_component_uses_sparse_solver(monkeypatch):
    import gca.augment.centrality as c

    g = nx.barabasi_albert_graph(300, 3, seed=1)
    edges = undirected(list(g.edges()))
    monkeypatch.setattr(c, "_DENSE_EIG_MAX", 10)
    sparse = c.eigenvector_centrality(edges, 300).numpy()
    monkeypatch.setattr(c, "_DENSE_EIG_MAX", 10_000)
    dense = c.eigenvector_centrality(edges, 300).numpy()
    np.testing.assert_allclose(sparse, dense, rtol=1e-6)


def test_eigenvector_on_several_components_scales_by_spectral_radius():
    # a triangle (λ = 2) and a separate edge (λ = 1): the edge's nodes score 1/2 of the triangle's.
    edges = undirected([(0, 1), (1, 2), (0, 2), (3, 4)])
    scores = eigenvector_centrality(edges, 6).numpy()
    np.testing.assert_allclose(scores[:5], [1, 1, 1, 0.5, 0.5], rtol=1e-8)
    assert scores[5] == pytest.approx(0.25)  # isolated: half the smallest positive score


def test_eigenvector_on_bipartite_graph_converges():
    # the star is bipartite: −λ_max is also an eigenvalue; the shift must still find the Perron vector
    edges = undirected([(0, i) for i in range(1, 300)])
    scores = eigenvector_centrality(edges, 300).numpy()
    np.testing.assert_allclose(scores[1:] / scores[0], 1 / np.sqrt(299), rtol=1e-6)


def test_directed_eigenvector_uses_incoming_edges():
    # a directed cycle 0→1→2→0 plus 0→2: node 2 receives two edges and ranks highest
    edges = torch.tensor([[0, 1, 2, 0], [1, 2, 0, 2]])
    scores = eigenvector_centrality(edges, 3, directed=True).numpy()
    assert scores.argmax() == 2
    adj = np.zeros((3, 3))
    adj[edges[0], edges[1]] = 1
    values, vectors = np.linalg.eig(adj.T)
    vec = np.abs(vectors[:, np.argmax(values.real)].real)
    np.testing.assert_allclose(scores / scores.max(), vec / vec.max(), rtol=1e-8)


def test_unknown_centrality():
    with pytest.raises(ValueError, match="unknown centrality"):
        node_centrality("closeness", path_edges(3), 3)
