"""Where a well-kept library computes what gca needs, gca uses it unless ours measures faster: the two measurements.

gca's ``normalized_adjacency`` against PyTorch Geometric's ``gcn_norm`` and the same CSR build; scikit-learn's
``normalize(norm="l1")`` against a hand-written row normalisation. Printed: median seconds over ``--repeats``
calls after a warm-up, checked equal, and their ratio.

    python benchmarks/library_parts.py [--repeats 20]
"""

from __future__ import annotations

import argparse

import numpy as np
import scipy.sparse as sp
import torch
from harness import machine, median_seconds, random_graph, table
from sklearn.preprocessing import normalize
from torch_geometric.nn.conv.gcn_conv import gcn_norm

from gca.graph.graph import prepare_graph
from gca.graph.sparse import normalized_adjacency, square_csr


def pyg_adjacency(edge_index: torch.Tensor, num_nodes: int) -> torch.Tensor:
    ei, weight = gcn_norm(edge_index, None, num_nodes, add_self_loops=True)
    return square_csr(ei[1], ei[0], weight, num_nodes)


def hand_rows(x):
    sums = np.asarray(abs(x).sum(1)).ravel()
    inv = np.divide(1.0, sums, out=np.ones_like(sums, dtype=np.float64), where=sums > 0)
    return sp.diags(inv) @ x if sp.issparse(x) else x * inv[:, None]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    print(machine())
    row = table("graph | nodes | edges | gca s | PyG gcn_norm + CSR s | ratio (PyG / gca)")
    for name, (n, e, f) in (
        ("Amazon-Photo size", (7650, 119_081, 745)),
        ("Coauthor-Physics size", (34_493, 247_962, 8415)),
    ):
        ei = prepare_graph(random_graph(n, e, f)).edge_index
        ours = median_seconds(lambda ei=ei, n=n: normalized_adjacency(ei, n, symmetric=True), args.repeats)
        pyg = median_seconds(lambda ei=ei, n=n: pyg_adjacency(ei, n), args.repeats)
        a, b = normalized_adjacency(ei, n, symmetric=True).matrix, pyg_adjacency(ei, n)
        same = torch.equal(a.crow_indices(), b.crow_indices()) and torch.equal(a.col_indices(), b.col_indices())
        assert same and torch.allclose(a.values(), b.values(), atol=1e-6), "the two adjacency builds disagree"
        row(f"{name} | {n:,} | {ei.shape[1]:,} | {ours:.4f} | {pyg:.4f} | {pyg / ours:.2f}")
    print()
    row = table("features | shape | hand-written s | sklearn normalize s | ratio (sklearn / hand)")
    rng = np.random.default_rng(0)
    cases = {
        "sparse (Physics size, 30 nnz/row)": sp.random(
            34_493, 8415, density=30 / 8415, format="csr", rng=rng, dtype=np.float32
        ),
        "dense (169,343 × 128)": rng.standard_normal((169_343, 128), dtype=np.float32),
    }
    for name, x in cases.items():
        hand = median_seconds(lambda x=x: hand_rows(x), max(3, args.repeats // 4))
        lib = median_seconds(lambda x=x: normalize(x, norm="l1"), max(3, args.repeats // 4))
        h, s = hand_rows(x), normalize(x, norm="l1")
        assert np.allclose(*((h.toarray(), s.toarray()) if sp.issparse(h) else (h, s)), atol=1e-6)
        row(f"{name} | {x.shape[0]:,} × {x.shape[1]:,} | {hand:.4f} | {lib:.4f} | {lib / hand:.2f}")


if __name__ == "__main__":
    main()
