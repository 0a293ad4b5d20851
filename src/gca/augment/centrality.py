"""Node centrality φ_c (Section 3.2 of Zhu et al., WWW 2021), computed once per graph on a SciPy sparse adjacency.

* **degree** — the number of neighbours; on directed graphs the in-degree (nodes pointing at v confer influence).
* **eigenvector** — the leading eigenvector of A (on directed graphs the eigenvector that sums *incoming* edges, i.e. of
  Aᵀ with A_uv = 1 for an edge u → v).
* **pagerank** — the solution of σ = α A D⁻¹ σ + 1 with α = 0.85, iterated until the largest change is below a relative
  tolerance.

Conventions shared by all three, so that every score is finite and strictly positive (the paper takes log φ):

* The graph is :func:`gca.graph.csr.binary_adjacency`'s: duplicate edges count once, self-loops are ignored.
* A node whose score is zero — an isolated node, a node no edge points to on a directed graph, or a node whose component
  has no cycle for the eigenvector measure — gets **half the smallest positive score** of the graph, so it ranks below
  every node with a positive score. If no node has a positive score (a graph without edges) every score is 1.
* **Eigenvector centrality on several components**: the Perron vector of each (weakly) connected component, scaled to a
  maximum of λ_c / λ_max — λ_c the component's spectral radius — and joined. On a connected graph this is the ordinary
  eigenvector centrality up to scale. Design notes: docs/design/core.md.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import scipy.sparse as sp
import scipy.sparse.csgraph as csgraph
import scipy.sparse.linalg as spla
import torch

from ..choices import CENTRALITIES
from ..graph.csr import _is_coalesced, _is_symmetric, binary_adjacency, count_ids, has_self_loops

#: Components up to this size use a dense eigensolver (faster and exact for small blocks).
_DENSE_EIG_MAX = 256


def _positive(scores: np.ndarray) -> np.ndarray:
    """Give zero (or numerically non-positive) scores half the smallest positive score; see module docstring."""
    scores = np.asarray(scores, dtype=np.float64).copy()
    positive = scores > 0
    if not positive.any():
        return np.ones_like(scores)
    scores[~positive] = 0.5 * scores[positive].min()
    return scores


def degree_centrality(edge_index: torch.Tensor, num_nodes: int, directed: bool = False) -> torch.Tensor:
    """Degree (undirected) or in-degree (``directed``) of every node as ``[N]`` float64 scores, with zeros replaced as
    documented."""
    simple = _is_coalesced(edge_index, num_nodes) and not has_self_loops(edge_index)
    if simple and (directed or _is_symmetric(edge_index, num_nodes)):
        # a prepared graph's edges (sorted, no repeats, no loops; both directions when undirected): the in-degree
        # is a count of targets — no 10^8-entry sparse matrix to build (measured: docs/large-graphs.md, "Memory")
        in_degree = count_ids(edge_index[1].cpu(), num_nodes).to(torch.float64).numpy()
    else:
        adj = binary_adjacency(edge_index, num_nodes)
        if not directed:
            adj = adj.maximum(adj.T)
        in_degree = np.asarray(adj.sum(axis=0)).ravel()
    return torch.from_numpy(_positive(in_degree))


def _perron_vector(block: sp.csr_matrix) -> tuple[float, np.ndarray]:
    """Spectral radius and non-negative leading eigenvector (max-normalised) of a non-negative square block."""
    n = block.shape[0]
    symmetric = (block != block.T).nnz == 0
    if n <= _DENSE_EIG_MAX:
        dense = block.toarray()
        if symmetric:
            values, vectors = np.linalg.eigh(dense)
            lam, vec = values[-1], vectors[:, -1]
        else:
            values, vectors = np.linalg.eig(dense)
            top = int(np.argmax(values.real))
            lam, vec = values[top].real, vectors[:, top].real
    else:
        # Lanczos / Arnoldi on the shifted matrix A + I: shifting keeps the Perron root the eigenvalue of
        # largest real part even on bipartite graphs, where −λ_max has the same modulus.
        shifted = block + sp.identity(n, format="csr")
        start = np.ones(n) / np.sqrt(n)
        if symmetric:
            values, vectors = spla.eigsh(shifted, k=1, which="LA", v0=start, tol=1e-10)
        else:
            values, vectors = spla.eigs(shifted, k=1, which="LR", v0=start, tol=1e-10)
        lam, vec = float(np.real(values[0])) - 1.0, np.real(vectors[:, 0])
    vec = np.abs(vec)  # the Perron vector is defined up to sign
    if lam <= 1e-12 or vec.max() <= 0:
        return 0.0, np.zeros(n)
    vec = vec / vec.max()
    vec[vec < 1e-12] = 0.0
    return float(lam), vec


def eigenvector_centrality(edge_index: torch.Tensor, num_nodes: int, directed: bool = False) -> torch.Tensor:
    """Leading-eigenvector centrality, component by component (module docstring), as ``[N]`` float64 scores;
    ``directed=False`` takes each edge in both directions."""
    adj = binary_adjacency(edge_index, num_nodes)
    if directed:
        adj = adj.T.tocsr()  # x_v ∝ Σ_u A_uv x_u: centrality flows along incoming edges
    else:
        adj = adj.maximum(adj.T).tocsr()
    n_comp, labels = csgraph.connected_components(adj, directed=directed, connection="weak")
    order = np.argsort(labels, kind="stable")
    bounds = np.searchsorted(labels[order], np.arange(n_comp + 1))
    scores = np.zeros(num_nodes)
    radii = np.zeros(n_comp)
    for c in range(n_comp):
        nodes = order[bounds[c] : bounds[c + 1]]
        if nodes.shape[0] == 1:
            continue  # an isolated node: score 0, replaced below
        lam, vec = _perron_vector(adj[nodes][:, nodes])
        radii[c] = lam
        scores[nodes] = lam * vec
    lam_max = radii.max()
    if lam_max > 0:
        scores /= lam_max
    return torch.from_numpy(_positive(scores))


def pagerank_centrality(
    edge_index: torch.Tensor,
    num_nodes: int,
    directed: bool = False,
    alpha: float = 0.85,
    tol: float = 1e-10,
    max_iter: int = 10_000,
) -> torch.Tensor:
    """PageRank scores σ = α A D⁻¹ σ + 1 (Eq. 5 of the paper), ``[N]`` float64, solved by fixed-point iteration.

    Here (A D⁻¹ σ)_v = Σ_{u → v} σ_u / d_out(u). A node without out-edges passes nothing on (its column of D⁻¹ is taken
    as zero), so every score is at least 1. The iteration is a contraction with factor ≤ α.

    Parameters
    ----------
    edge_index
        The graph's ``[2, E]`` edges.
    num_nodes
        N, the graph's nodes.
    directed
        Read the edges as directed; ``False`` takes each edge in both directions.
    alpha
        α, the damping factor, in (0, 1) (else a ``ValueError``).
    tol
        The iteration stops once the largest change is below ``tol`` times the largest score.
    max_iter
        The most iterations made.
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"PageRank damping alpha must lie in (0, 1), got {alpha}")
    adj = binary_adjacency(edge_index, num_nodes)
    if not directed:
        adj = adj.maximum(adj.T).tocsr()
    out_degree = np.asarray(adj.sum(axis=1)).ravel()
    inv_out = np.divide(1.0, out_degree, out=np.zeros_like(out_degree), where=out_degree > 0)
    propagate = (adj.T @ sp.diags(inv_out)).tocsr()  # (A D⁻¹) with A[v, u] = 1 for u → v
    sigma = np.ones(num_nodes)
    for _ in range(max_iter):
        new = alpha * (propagate @ sigma) + 1.0
        delta = np.abs(new - sigma).max()
        sigma = new
        if delta <= tol * sigma.max():
            break
    else:  # pragma: no cover - α < 1 guarantees convergence long before this
        raise RuntimeError(f"PageRank did not converge in {max_iter} iterations")
    return torch.from_numpy(_positive(sigma))


_MEASURES: dict[str, Callable[..., torch.Tensor]] = {
    "degree": degree_centrality,
    "eigenvector": eigenvector_centrality,
    "pagerank": pagerank_centrality,
}


def node_centrality(name: str, edge_index: torch.Tensor, num_nodes: int, directed: bool = False) -> torch.Tensor:
    """Node centrality by name as ``[N]`` float64 scores φ_c(v) > 0.

    Parameters
    ----------
    name
        ``"degree"``, ``"eigenvector"`` or ``"pagerank"`` (another name is a ``ValueError``).
    edge_index
        The graph's ``[2, E]`` edges.
    num_nodes
        N, the graph's nodes.
    directed
        Read the edges as directed; ``False`` takes each edge in both directions.
    """
    try:
        measure = _MEASURES[name]
    except KeyError:
        raise ValueError(f"unknown centrality {name!r}; choose one of {', '.join(CENTRALITIES)}") from None
    return measure(edge_index, num_nodes, directed=directed)
