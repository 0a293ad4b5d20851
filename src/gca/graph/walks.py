"""Random walks on a CSR graph, all walkers at once: DeepWalk's uniform walks and node2vec's biased ones.

* **DeepWalk** (Perozzi et al., KDD 2014): the next node is a uniformly random neighbour of the current one.
* **node2vec** (Grover & Leskovec, KDD 2016, §3.2): a second-order walk. Having moved t → v, the walk moves to a
  neighbour x of v with unnormalised probability α(x) = 1/p if x = t (return), 1 if x is a neighbour of t, and 1/q
  otherwise (in-out). It is sampled by rejection: propose x uniformly among v's neighbours and accept with probability
  α(x)/max(1/p, 1, 1/q), over all walkers still rejecting at once.

Membership "x is a neighbour of t" is a binary search in the sorted keys row·N + col of the CSR matrix. A walk that
reaches a node without out-neighbours stops there; the rest of its row is −1.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def random_walks(
    adjacency: sp.csr_matrix, walk_length: int, walks_per_node: int, p: float = 1.0, q: float = 1.0, seed: int = 0
) -> np.ndarray:
    """``walks_per_node`` walks of ``walk_length`` nodes from every node.

    ``p = q = 1`` is DeepWalk's uniform walk (first order, no rejection); otherwise node2vec's biased walk. Row k starts
    at node k mod N.

    Parameters
    ----------
    adjacency
        The graph's N × N adjacency as a SciPy CSR matrix (:func:`~gca.graph.csr.binary_adjacency`).
    walk_length
        The nodes of each walk, its start included.
    walks_per_node
        The walks started at every node.
    p, q
        node2vec's return and in-out parameters; ``p = q = 1`` for DeepWalk.
    seed
        Seeds the walks.

    Returns
    -------
    numpy.ndarray
        ``[N · walks_per_node, walk_length]`` int64 node ids, −1 after a dead end.
    """
    if walk_length < 1 or walks_per_node < 1:
        raise ValueError("walk_length and walks_per_node must be at least 1")
    if p <= 0 or q <= 0:
        raise ValueError(f"node2vec's p and q must be positive, got p={p}, q={q}")
    rng = np.random.default_rng(seed)
    n = adjacency.shape[0]
    indptr, indices = adjacency.indptr.astype(np.int64), adjacency.indices.astype(np.int64)
    degree = np.diff(indptr)
    walks = np.full((n * walks_per_node, walk_length), -1, dtype=np.int64)
    walks[:, 0] = np.tile(np.arange(n, dtype=np.int64), walks_per_node)
    biased = not (p == 1.0 and q == 1.0)
    keys = np.repeat(np.arange(n, dtype=np.int64), degree) * n + indices if biased else None  # sorted: CSR order
    weights = np.array([1.0 / p, 1.0, 1.0 / q])
    bound = weights.max()
    alive = degree[walks[:, 0]] > 0
    for step in range(1, walk_length):
        idx = np.flatnonzero(alive)
        if idx.size == 0:
            break
        current = walks[idx, step - 1]
        if not biased or step == 1:  # the first step of node2vec has no previous node: uniform
            walks[idx, step] = _uniform_neighbour(current, indptr, indices, degree, rng)
        else:
            previous = walks[idx, step - 2]
            chosen = np.empty_like(current)
            todo = np.arange(idx.size)
            while todo.size:
                proposal = _uniform_neighbour(current[todo], indptr, indices, degree, rng)
                back = proposal == previous[todo]
                near = _contains(keys, previous[todo] * n + proposal)
                alpha = np.where(back, weights[0], np.where(near, weights[1], weights[2]))
                accept = rng.random(todo.size) * bound < alpha
                chosen[todo[accept]] = proposal[accept]
                todo = todo[~accept]
            walks[idx, step] = chosen
        alive[idx] = degree[walks[idx, step]] > 0
    return walks


def _uniform_neighbour(
    nodes: np.ndarray, indptr: np.ndarray, indices: np.ndarray, degree: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    offsets = (rng.random(nodes.size) * degree[nodes]).astype(np.int64)
    return indices[indptr[nodes] + offsets]


def _contains(sorted_keys: np.ndarray, queries: np.ndarray) -> np.ndarray:
    position = np.searchsorted(sorted_keys, queries)
    position = np.minimum(position, sorted_keys.size - 1)
    return sorted_keys[position] == queries
