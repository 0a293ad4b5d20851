"""MVGRL (gca.reproduce.mvgrl): the dense and the blockwise diffusion against a float64 inverse, the sparse cut by
mass, the memory bound, the sampled subgraphs' operators, dense and sparse training agreeing, and training — seeded,
finite, and learning on two communities."""

from __future__ import annotations

import math

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch_geometric.data import Data
from torch_geometric.utils import stochastic_blockmodel_graph, to_undirected

from gca.reproduce import mvgrl
from gca.reproduce.mvgrl import (
    ALPHA,
    Diffusion,
    induced_batch,
    mvgrl_embeddings,
    normalized_adjacency_entries,
    ppr_by_mass,
    ppr_dense,
    ppr_rows,
    series_terms,
)
from gca.train.loop import TrainingError

CPU = torch.device("cpu")


def random_graph(n: int, edges: int, seed: int, isolated: int = 0) -> torch.Tensor:
    """An undirected random graph on n nodes whose last ``isolated`` nodes have no edge."""
    generator = torch.Generator().manual_seed(seed)
    return to_undirected(torch.randint(0, n - isolated, (2, edges), generator=generator), num_nodes=n)


def dense_ppr(edge_index: torch.Tensor, n: int, alpha: float = ALPHA) -> torch.Tensor:
    """α(I − (1 − α)T)^{-1} with T = D̃^{-1/2}(A + I)D̃^{-1/2}, by a dense inverse in float64."""
    index, weight = normalized_adjacency_entries(edge_index, n)
    t = torch.zeros(n, n, dtype=torch.float64)
    t[index[0], index[1]] = weight.double()
    return alpha * torch.linalg.inv(torch.eye(n, dtype=torch.float64) - (1 - alpha) * t)


def to_dense(entries: tuple[torch.Tensor, torch.Tensor], n: int) -> torch.Tensor:
    out = torch.zeros(n, n, dtype=torch.float64)
    out[entries[0][0], entries[0][1]] = entries[1].double()
    return out


def test_blockwise_ppr_matches_the_dense_inverse():
    n = 50
    edge_index = random_graph(n, 120, seed=0, isolated=2)
    exact = dense_ppr(edge_index, n)
    assert torch.allclose(exact[-1, -1], torch.tensor(1.0, dtype=torch.float64))  # an isolated node keeps all of it
    index, weight = normalized_adjacency_entries(edge_index, n)
    transition = torch.sparse_coo_tensor(index.flip(0), weight, (n, n)).coalesce()
    rows = torch.tensor([3, 0, 49, 17])
    block = ppr_rows(transition, rows, tolerance=1e-8)
    assert block.shape == (n, 4)
    assert torch.allclose(block.t().double(), exact[rows], atol=1e-5, rtol=0)
    # every row, kept whole (all its mass) and computed in blocks of 7 rows: S itself
    entries, kept = ppr_by_mass(edge_index, n, mass=1.0, tolerance=1e-8, block=7)
    assert torch.allclose(to_dense(entries, n), exact, atol=1e-5) and torch.allclose(kept, torch.ones(n))


def test_truncation_error_stays_within_its_bound():
    assert series_terms(0.2, 1e-4) == 41  # (0.8)^42 ≤ 1e-4 < (0.8)^41
    assert 0.8 ** (series_terms(0.2, 1e-2) + 1) <= 1e-2 < 0.8 ** series_terms(0.2, 1e-2)
    n = 40
    edge_index = random_graph(n, 60, seed=1)
    exact = dense_ppr(edge_index, n)
    for tolerance in (1e-1, 1e-2, 1e-3):
        approx = to_dense(ppr_by_mass(edge_index, n, mass=1.0, tolerance=tolerance, block=16)[0], n)
        error = (approx - exact).abs().max().item()
        assert error <= tolerance + 1e-6
    coarse = to_dense(ppr_by_mass(edge_index, n, mass=1.0, tolerance=1e-1)[0], n)
    assert (coarse - exact).abs().max() > 1e-4  # the bound is not vacuous: a loose tolerance does truncate


def test_directed_graph_rows_are_rows_of_s():
    """On a directed graph T is not symmetric: the series runs on Tᵀ so that a block is rows of S, not columns."""
    n = 12
    edge_index = torch.tensor([[i for i in range(n - 1)] + [0, 5], [i + 1 for i in range(n - 1)] + [7, 2]])
    exact = dense_ppr(edge_index, n)
    assert not torch.allclose(exact, exact.t())
    assert torch.allclose(
        to_dense(ppr_by_mass(edge_index, n, mass=1.0, tolerance=1e-8, block=5)[0], n), exact, atol=1e-5
    )
    assert torch.allclose(ppr_dense(edge_index, n).double(), exact, atol=1e-5)  # the LU path


def test_dense_diffusion_is_the_exact_inverse():
    n = 60
    edge_index = random_graph(n, 150, seed=6, isolated=3)
    exact = dense_ppr(edge_index, n)
    dense = ppr_dense(edge_index, n)
    assert dense.dtype == torch.float32 and dense.shape == (n, n)
    assert torch.allclose(dense.double(), exact, atol=1e-6, rtol=1e-5)


def test_the_mass_cut_keeps_each_rows_fewest_largest_entries_that_reach_the_mass():
    n, mass = 45, 0.8
    edge_index = random_graph(n, 90, seed=2, isolated=1)
    exact = dense_ppr(edge_index, n)
    ((rows, columns), values), kept = ppr_by_mass(edge_index, n, mass=mass, tolerance=1e-9, block=8)
    assert torch.equal(rows, rows.sort().values)
    for v in range(n):
        mine = rows == v
        chosen = columns[mine]
        assert len(set(chosen.tolist())) == chosen.numel() and (values[mine] > 0).all()
        ordered = exact[v].sort(descending=True).values
        assert (exact[v, chosen] >= ordered[chosen.numel() - 1] - 1e-7).all()  # no dropped entry is larger
        total = exact[v].sum()
        assert exact[v, chosen].sum() >= mass * total - 1e-6  # reaches the mass …
        assert ordered[: chosen.numel() - 1].sum() < mass * total + 1e-6  # … and one entry fewer would not
        assert kept[v].item() == pytest.approx((exact[v, chosen].sum() / total).item(), abs=1e-5)
        assert torch.allclose(values[mine].double(), exact[v, chosen], atol=1e-6)
    assert columns[rows == n - 1].tolist() == [n - 1]  # the isolated node keeps only itself, never a zero
    assert (kept >= mass - 1e-6).all()


def test_dense_and_sparse_diffusion_agree():
    """Kept whole (all its mass), the sparse diffusion is the dense one: the same operators on the same sampled
    subgraphs and the whole graph, and the same embeddings after a few epochs of training."""
    n = 70
    edge_index = random_graph(n, 200, seed=7)
    dense, sparse = Diffusion(edge_index, n), Diffusion(edge_index, n, dense_bytes=0, mass=1.0, tolerance=1e-9)
    assert dense.dense and not sparse.dense and sparse.kept_mass == pytest.approx(1.0)
    assert dense.describe()["form"] == "dense" and sparse.describe()["form"] == "sparse"
    assert torch.allclose(sparse.whole(CPU).to_dense(), dense.whole(CPU), atol=1e-5)
    subsets = [torch.tensor([1, 4, 9, 30]), torch.tensor([0, 4, 7, 69])]
    batch = dense.batch(subsets, CPU)
    assert batch.shape == (2, 4, 4)
    block_diagonal = sparse.batch(subsets, CPU).to_dense()
    assert torch.allclose(block_diagonal[:4, :4], batch[0], atol=1e-5)
    assert torch.allclose(block_diagonal[4:, 4:], batch[1], atol=1e-5) and (block_diagonal[:4, 4:] == 0).all()
    data = Data(x=torch.rand(n, 6, generator=torch.Generator().manual_seed(0)), edge_index=edge_index)
    a = mvgrl_embeddings(data, 0, True, CPU, sample_size=30, batch_size=2, epochs=4)
    b = mvgrl_embeddings(data, 0, True, CPU, sample_size=30, batch_size=2, epochs=4, diffusion=sparse)
    assert a.training.details["diffusion"]["form"] == "dense" and b.training.details["diffusion"]["form"] == "sparse"
    assert a.training.losses == pytest.approx(b.training.losses, rel=1e-5)
    torch.testing.assert_close(a.embeddings, b.embeddings, rtol=1e-4, atol=1e-5)


def test_dense_and_sparse_diffusion_agree_on_a_directed_graph():
    """S is not symmetric there: a transposed slice of the dense S or a swapped index in the sparse one shows."""
    n = 12
    edge_index = torch.tensor([[i for i in range(n - 1)] + [0, 5, 9], [i + 1 for i in range(n - 1)] + [7, 2, 3]])
    dense, sparse = Diffusion(edge_index, n), Diffusion(edge_index, n, dense_bytes=0, mass=1.0, tolerance=1e-9)
    exact = dense_ppr(edge_index, n)
    assert not torch.allclose(exact, exact.t())
    subsets = [torch.tensor([0, 2, 5, 7, 9]), torch.tensor([1, 3, 4, 8, 11])]
    batch, block_diagonal = dense.batch(subsets, CPU), sparse.batch(subsets, CPU).to_dense()
    for g, nodes in enumerate(subsets):
        assert torch.allclose(batch[g].double(), exact[nodes][:, nodes], atol=1e-5)
        assert torch.allclose(
            block_diagonal[5 * g : 5 * g + 5, 5 * g : 5 * g + 5].double(), exact[nodes][:, nodes], atol=1e-5
        )


def test_the_entry_cap_bounds_a_sparse_diffusion_and_its_record_says_the_mass_kept():
    n = 50
    edge_index = random_graph(n, 150, seed=8)
    ((rows, _), _), kept = ppr_by_mass(edge_index, n, mass=0.95, max_entries=3 * n)
    assert torch.bincount(rows, minlength=n).max() <= 3 and rows.numel() <= 3 * n
    assert kept.mean() < 0.95  # three entries a row hold less than 95 % here: the shortfall is said, not hidden
    described = Diffusion(edge_index, n, dense_bytes=0).describe()
    assert described["kept_mass"] >= 0.95 - 1e-6  # without the cap biting


def test_a_sparse_diffusions_kept_mass_is_in_the_record():
    data = small_data(n=60)
    trained = mvgrl_embeddings(
        data,
        0,
        True,
        CPU,
        sample_size=25,
        batch_size=2,
        epochs=2,
        diffusion=Diffusion(data.edge_index, 60, dense_bytes=0),
    )
    described = trained.training.to_dict()["diffusion"]
    assert described["form"] == "sparse" and 0.95 <= described["kept_mass"] <= 1.0 + 1e-6
    assert 1 <= described["entries_per_row"] <= 60


class _LargestDense(TorchDispatchMode):
    """Records the largest dense (strided) tensor that any operation returns."""

    def __init__(self) -> None:
        super().__init__()
        self.shapes: list[tuple[int, ...]] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in out if isinstance(out, (tuple, list)) else [out]:
            if isinstance(t, torch.Tensor) and t.layout == torch.strided:
                self.shapes.append(tuple(t.shape))
        return out


def test_diffusion_memory_is_bounded_by_the_block():
    """No N × N dense tensor: every dense tensor the diffusion makes is at most N × block (and the result with a
    small block is the one with a large block)."""
    n, block = 120, 8
    edge_index = random_graph(n, 300, seed=3)
    with _LargestDense() as seen:
        small = ppr_by_mass(edge_index, n, block=block)
    assert all(len(s) <= 2 for s in seen.shapes)
    assert not [s for s in seen.shapes if len(s) == 2 and min(s) > block]  # nothing wider than a block of rows
    assert all(s[1] <= block for s in seen.shapes if len(s) == 2 and s[0] == n)  # the blocks: N × at most block
    assert any(s == (n, block) for s in seen.shapes)
    large = ppr_by_mass(edge_index, n, block=n)
    assert torch.equal(small[0][0], large[0][0]) and torch.allclose(small[0][1], large[0][1], atol=1e-7)


def test_a_sparse_diffusions_training_never_makes_an_n_by_n_dense_tensor(monkeypatch):
    n = 600  # above the 512 units, so that no weight is mistaken for an N × N tensor
    monkeypatch.setattr(mvgrl, "PPR_BLOCK_BYTES", 24 * n * 32)  # diffusion blocks of 32 rows
    data = Data(x=torch.rand(n, 6), edge_index=random_graph(n, 1500, seed=4))
    with _LargestDense() as seen:
        sparse = Diffusion(data.edge_index, n, dense_bytes=0)
        z = mvgrl_embeddings(data, 0, True, CPU, sample_size=150, batch_size=2, epochs=2, diffusion=sparse).embeddings
        assert mvgrl.ppr_block(n) == 32
    assert z.shape == (n, 512)
    assert not [s for s in seen.shapes if sum(d >= n for d in s) >= 2]


def test_induced_batch_is_block_diagonal_of_the_submatrices():
    n = 30
    edge_index = random_graph(n, 60, seed=5)
    entries = normalized_adjacency_entries(edge_index, n)
    full = to_dense(entries, n)
    subsets = [torch.tensor([2, 5, 9, 11]), torch.tensor([0, 5, 7, 20])]
    batch = induced_batch(entries, subsets, n).to_dense().double()
    assert batch.shape == (8, 8)
    for b, nodes in enumerate(subsets):
        block = slice(4 * b, 4 * b + 4)
        assert torch.allclose(batch[block, block], full[nodes][:, nodes])
    assert (batch[:4, 4:] == 0).all() and (batch[4:, :4] == 0).all()


def small_data(seed: int = 0, n: int = 40) -> Data:
    generator = torch.Generator().manual_seed(seed)
    return Data(x=torch.rand(n, 10, generator=generator), edge_index=random_graph(n, 80, seed=seed))


def test_embeddings_are_seeded_finite_and_shaped():
    data = small_data()
    first = mvgrl_embeddings(data, 3, True, CPU, sample_size=25, batch_size=2, epochs=5).embeddings
    again = mvgrl_embeddings(data, 3, True, CPU, sample_size=25, batch_size=2, epochs=5).embeddings
    other = mvgrl_embeddings(data, 4, True, CPU, sample_size=25, batch_size=2, epochs=5).embeddings
    assert first.shape == (40, 512) and first.dtype == torch.float32 and not first.requires_grad
    assert torch.isfinite(first).all()
    assert torch.equal(first, again)
    assert not torch.equal(first, other)


def test_sparse_features_are_accepted():
    data = small_data()
    dense = mvgrl_embeddings(data, 0, True, CPU, epochs=2).embeddings
    data.x = data.x.to_sparse()
    assert torch.equal(mvgrl_embeddings(data, 0, True, CPU, epochs=2).embeddings, dense)


def test_a_non_finite_loss_raises_training_error(monkeypatch):
    monkeypatch.setattr(mvgrl.MVGRL, "loss", lambda self, *a: self.adjacency_encoder.bias.sum() * float("nan"))
    with pytest.raises(TrainingError, match="MVGRL"):
        mvgrl_embeddings(small_data(), 0, True, CPU, epochs=3)


def test_learns_two_communities():
    """Two dense communities joined by few edges; each node's features are noise plus a weak sign of its
    community. The loss falls from log 2, and a nearest-centroid probe on half the nodes tells the communities
    apart on the other half far better than the raw features do."""
    torch.manual_seed(0)
    size = 60
    edge_index = stochastic_blockmodel_graph([size, size], [[0.15, 0.005], [0.005, 0.15]])
    labels = torch.arange(2 * size) >= size
    generator = torch.Generator().manual_seed(1)
    x = torch.rand(2 * size, 16, generator=generator) + 0.5 * labels[:, None] * (torch.arange(16) < 8)
    data = Data(x=x, edge_index=edge_index, num_nodes=2 * size)
    z, training = mvgrl_embeddings(data, 0, True, CPU, epochs=60)
    losses = training.losses
    assert losses[0] == pytest.approx(math.log(2), abs=1e-3)
    assert min(losses) < 0.85 * losses[0]

    def probe(features: torch.Tensor) -> float:
        train = torch.arange(2 * size) % 2 == 0
        features = torch.nn.functional.normalize(features)
        centroids = torch.stack([features[train & ~labels].mean(0), features[train & labels].mean(0)])
        predicted = torch.cdist(features[~train], centroids).argmin(1).bool()
        return (predicted == labels[~train]).float().mean().item()

    assert probe(z) >= 0.95 > probe(x)
