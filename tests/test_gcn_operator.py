"""GMI and MVGRL propagate with gca's GCN operator D̂^{-1/2}(A + I)D̂^{-1/2}: equal, within float32's rounding, to
the formula built by hand as a dense matrix, and to the PyTorch Geometric entries MVGRL was built on."""

import numpy as np
import torch
from torch_geometric.nn.conv.gcn_conv import gcn_norm

from gca.graph.sparse import normalized_adjacency, normalized_adjacency_entries
from gca.reproduce import gmi
from gca.reproduce.mvgrl import normalized_adjacency_entries as mvgrl_entries

# 7 nodes, 5 and 6 isolated; 0–1, 1–2, 2–3 undirected, 3 → 4 and 0 → 4 one way only; no edge listed twice
EDGES = torch.tensor([[0, 1, 1, 2, 2, 3, 3, 0], [1, 0, 2, 1, 3, 2, 4, 4]])
N = 7


def _dense_formula(adjacency: np.ndarray) -> np.ndarray:
    """D̂^{-1/2}(A + I)D̂^{-1/2}, D̂ the row sums of A + I, in float64."""
    a_hat = adjacency + np.eye(len(adjacency))
    d = a_hat.sum(axis=1) ** -0.5
    return d[:, None] * a_hat * d[None, :]


def _dense(index: torch.Tensor, values: torch.Tensor, n: int) -> np.ndarray:
    out = np.zeros((n, n))
    np.add.at(out, (index[0].numpy(), index[1].numpy()), values.double().numpy())
    return out


def test_gmis_propagation_is_the_dense_formula():
    a = np.zeros((N, N))
    a[EDGES[0], EDGES[1]] = 1  # GMI's row i sums over i's out-neighbours j (a_ij = 1)
    got = gmi.gcn_propagation(gmi._adjacency(EDGES, N))
    assert got.dtype == np.float32
    np.testing.assert_allclose(got.toarray(), _dense_formula(a), rtol=1e-6, atol=0)
    assert got[5, 5] == 1 and got[6].nnz == 1  # an isolated node keeps its own features


def test_mvgrls_adjacency_is_the_dense_formula_and_gcas_operator():
    a = np.zeros((N, N))
    a[EDGES[1], EDGES[0]] = 1  # row v aggregates its in-neighbours u (edges u → v)
    index, values = mvgrl_entries(EDGES, N)
    assert values.dtype == torch.float32
    np.testing.assert_allclose(_dense(index, values, N), _dense_formula(a), rtol=1e-6, atol=0)
    operator = normalized_adjacency(EDGES, N, symmetric=False).to_dense().double().numpy()
    np.testing.assert_allclose(_dense(index, values, N), operator, rtol=1e-6, atol=0)


def test_the_entries_are_pyg_gcn_norms_transposed_a_listed_self_loop_kept_once():
    edges = torch.cat([EDGES, torch.tensor([[2, 5], [2, 5]])], dim=1)  # two self-loops listed
    pyg_index, pyg_values = gcn_norm(edges, None, N, add_self_loops=True)
    index, values = normalized_adjacency_entries(edges, N)
    assert torch.equal(index, pyg_index.flip(0))  # the same entries in the same order
    torch.testing.assert_close(values, pyg_values.float(), rtol=1e-6, atol=0)
