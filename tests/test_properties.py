"""Property-based tests (hypothesis) over random small graphs: probabilities, symmetry, robustness."""

from __future__ import annotations

import numpy as np
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch_geometric.data import Data

from gca import GCA, GCAConfig
from gca.augment.augmentors import build_augmentors
from gca.augment.centrality import node_centrality
from gca.graph.graph import prepare_graph
from gca.graph.sparse import normalized_adjacency


@st.composite
def small_graphs(draw, directed: bool = False):
    """1–12 nodes (isolated ones allowed), at least one edge between distinct nodes, features that may have
    all-zero columns, binary or real-valued."""
    n = draw(st.integers(2, 12))
    pairs = draw(
        st.lists(
            st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)).filter(lambda e: e[0] != e[1]),
            min_size=1,
            max_size=30,
        )
    )
    edges = torch.tensor(pairs, dtype=torch.long).t()
    if not directed:
        edges = torch.cat([edges, edges.flip(0)], dim=1)
    f = draw(st.integers(1, 6))
    binary = draw(st.booleans())
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    x = (rng.random((n, f)) < 0.4).astype(np.float32) if binary else rng.normal(size=(n, f)).astype(np.float32)
    zero_columns = draw(st.lists(st.integers(0, f - 1), max_size=f))
    x[:, zero_columns] = 0.0
    return Data(x=torch.from_numpy(x), edge_index=edges)


probabilities = st.floats(0.0, 0.99)
centralities = st.sampled_from(["degree", "eigenvector", "pagerank"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_graphs(), centralities, probabilities, probabilities, st.floats(0.01, 0.99))
def test_probabilities_lie_in_0_to_p_tau_and_are_finite(data, centrality, p_e, p_f, p_tau):
    graph = prepare_graph(data)
    phi = node_centrality(centrality, graph.edge_index, graph.num_nodes, graph.directed)
    assert torch.isfinite(phi).all() and (phi > 0).all()
    views = build_augmentors(graph, phi, (p_e, p_e), (p_f, p_f), p_tau)
    for view in views:
        for prob in (view.edge_prob, view.feature_prob):
            assert torch.isfinite(prob).all()
            assert (prob >= 0).all() and (prob <= p_tau + 1e-6).all()


@settings(max_examples=40, deadline=None)
@given(small_graphs(), centralities, probabilities, st.integers(0, 2**31 - 1))
def test_views_of_undirected_graphs_are_symmetric(data, centrality, p_e, seed):
    graph = prepare_graph(data)
    assert not graph.directed
    phi = node_centrality(centrality, graph.edge_index, graph.num_nodes)
    view, _ = build_augmentors(graph, phi, (p_e, p_e), (0.2, 0.2), 0.7)
    edges = view.sample_edges(torch.Generator().manual_seed(seed))
    dense = torch.zeros(graph.num_nodes, graph.num_nodes)
    dense[edges[0], edges[1]] = 1
    assert torch.equal(dense, dense.t())
    adjacency = normalized_adjacency(edges, graph.num_nodes, symmetric=True).to_dense()
    torch.testing.assert_close(adjacency, adjacency.t())


@settings(max_examples=25, deadline=None)
@given(small_graphs(directed=True), centralities)
def test_directed_graphs_keep_finite_probabilities(data, centrality):
    graph = prepare_graph(data, directed=True)
    phi = node_centrality(centrality, graph.edge_index, graph.num_nodes, directed=True)
    for view in build_augmentors(graph, phi, (0.3, 0.4), (0.1, 0.2), 0.7):
        assert torch.isfinite(view.edge_prob).all() and (view.edge_prob <= 0.7 + 1e-6).all()


@settings(max_examples=15, deadline=None)
@given(small_graphs(), centralities)
def test_training_never_crashes_or_returns_nan(data, centrality):
    """Finite embeddings of every node — or, where the graph leaves nothing to tell nodes apart (two connected nodes
    whose GCN inputs average to the same row), the one-line collapse error instead of a result."""
    from gca.train.loop import CollapseError

    config = GCAConfig(epochs=2, hidden=4, proj_hidden=4, centrality=centrality)
    try:
        embeddings = GCA(config, device="cpu").fit_transform(data)
    except CollapseError as collapsed:
        assert "\n" not in str(collapsed) and "training collapsed" in str(collapsed)
        return
    assert embeddings.shape == (data.num_nodes, 4) and torch.isfinite(embeddings).all()


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 12), st.lists(st.tuples(st.integers(0, 11), st.integers(0, 11)), max_size=40), st.booleans())
def test_symmetry_check_agrees_with_pyg_is_undirected(n, pairs, mirror):
    from torch_geometric.utils import coalesce, is_undirected

    from gca.graph.csr import _is_symmetric

    pairs = [(a % n, b % n) for a, b in pairs if a % n != b % n]
    if mirror:  # half the examples undirected by construction, so both answers are exercised
        pairs += [(b, a) for a, b in pairs]
    edges = torch.tensor(pairs, dtype=torch.long).t().reshape(2, -1)
    edges = coalesce(edges, num_nodes=n)
    assert _is_symmetric(edges, n) == is_undirected(edges, num_nodes=n)


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 12),
    st.lists(st.tuples(st.integers(0, 11), st.integers(0, 11)), max_size=40),
    st.booleans(),
    st.booleans(),
    st.booleans(),
)
def test_degree_centrality_counts_each_neighbour_once_on_any_edge_list(n, pairs, mirror, tidy, directed):
    """The count-of-targets shortcut for prepared edges and the sparse-matrix path agree on every input."""
    from torch_geometric.utils import coalesce, remove_self_loops

    from gca.augment.centrality import degree_centrality

    pairs = [(a % n, b % n) for a, b in pairs]
    if mirror:
        pairs += [(b, a) for a, b in pairs]
    edges = torch.tensor(pairs, dtype=torch.long).t().reshape(2, -1)
    if tidy:  # what prepare_graph hands over: the shortcut applies
        edges = coalesce(remove_self_loops(edges)[0], num_nodes=n)
    a = np.zeros((n, n))
    for u, v in edges.t().tolist():
        if u != v:
            a[u, v] = 1.0  # duplicates once, loops dropped
    if not directed:
        a = np.maximum(a, a.T)
    expected = a.sum(0)
    got = degree_centrality(edges, n, directed).numpy()
    positive = expected > 0
    np.testing.assert_allclose(got[positive], expected[positive])
    assert (got > 0).all()  # zeros replaced as documented


def test_the_symmetry_answer_kept_for_a_tensor_notices_numpy_writes_and_takes_inference_tensors():
    """prepare_graph asks whether the edges are symmetric and keeps the answer for the same tensor: a write through
    a NumPy view (no version counter moves) must be noticed, and an inference tensor (none kept) must be taken."""
    edges = torch.tensor([[0, 1, 1, 2], [1, 0, 2, 1]], dtype=torch.int32)  # clean in gca's dtype: used as it is
    data = Data(x=torch.eye(3), edge_index=edges)
    assert not prepare_graph(data).directed
    edges.numpy()[1, 3] = 0  # 2 → 0 instead of 2 → 1: still coalesced, no longer symmetric
    assert prepare_graph(data).directed
    with torch.inference_mode():
        frozen = Data(x=torch.eye(3), edge_index=torch.tensor([[0, 1, 1, 2], [1, 0, 2, 1]], dtype=torch.int32))
    assert not prepare_graph(frozen).directed
    with torch.inference_mode():
        frozen.edge_index[1, 3] = 0
    assert prepare_graph(frozen).directed
