"""GMI — Graphical Mutual Information maximisation (Peng et al., WWW 2020), the Table 3 baseline, memory-bounded.

GMI maximises, for every node i, the feature mutual information I(h_i; X_i) = Σ_{j ∈ N(i)} w_ij I(h_i; x_j) and the
topology mutual information I(w_ij; a_ij), w_ij = σ(h_iᵀ h_j), each by a discriminator's Jensen–Shannon estimator,
sp(t) = log(1 + eᵗ). As the reference code (github.com/zpeng27/GMI: *GMI-mean*, w_ij = 1 / |N(i)|):

    L = α · JSD[ D₁(x_i, h_i) ]  +  β · JSD[ D₂(h_i, n_i) ]  +  γ · L_rec,

* JSD[D(a_i, b_i)] = mean_i sp(−D(a_i, b_i)) + mean_{i, k} sp(D(a_{π_k(i)}, b_i)), K negatives π_k(i) per node drawn
  uniformly from the other nodes; D(a, b) = σ(aᵀ W b + c), bilinear, the sigmoid inside D as in the reference code;
* D₁ scores the node's row-normalised features x_i against h_i; D₂ scores h_i against n_i = PReLU(mean_{j ∈ N(i)}
  x_j W₁), W₁ the first layer's weight (before propagation);
* L_rec = (w₂ / N²) Σ_{i, j} [ t_ij · w₁ · (−log σ(s_ij)) + (1 − t_ij) · (−log(1 − σ(s_ij))) ], s_ij = h_iᵀ h_j, over
  all N² pairs, target T = A + I; with m = |T| / 2, w₁ = (N² − m) / m and w₂ = N² / (N² − m).

Settings (the reference code's defaults): two GCN layers (Â = D^−½ (A + I) D^−½) of 512 units with PReLU; α = 0.8,
β = 1, γ = 1, K = 5 for each discriminator; Adam, lr 0.001, no weight decay; up to 550 epochs, stopping after 20
without a new lowest loss, the lowest's weights kept (:func:`gca.reproduce.training.fit`). The embedding is H. Quick
mode caps the epochs by :func:`quick_epochs`. Differs from the reference (reasons: docs/design/application.md): L_rec
is exact with no N × N tensor held, through logits in row blocks of :data:`BLOCK_ELEMENTS` with its gradient in the
same sweep (:class:`_ReconstructionLoss`), no 1e−10 inside the logarithms,

    L_rec = (w₂ / N²) · [ Σ_{all i, j} sp(s_ij) + Σ_{(i, j) ∈ T} (w₁ · sp(−s_ij) − sp(s_ij)) ];

the weights kept are those right after the lowest loss's step; sparse products; seeded negatives.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import torch
from torch import nn
from torch.nn import functional as F
from torch_geometric import seed_everything
from torch_geometric.data import Data

from ..graph.csr import binary_adjacency
from ..graph.features import normalize_rows
from ..graph.sparse import SparseMatrix, normalized_adjacency_entries
from .training import Trained, fit

#: Loss weights α (I(h_i; x_i)), β (I(h_i; neighbours' x_j)), γ (reconstruction), and negatives per node: the
#: reference code's defaults.
ALPHA, BETA, GAMMA, NEGATIVES = 0.8, 1.0, 1.0, 5
#: Width of both GCN layers and of the embedding.
HIDDEN = 512
#: Maximal epochs and the early-stopping patience on the loss (reference defaults), Adam's learning rate.
EPOCHS, PATIENCE, LR = 550, 20, 0.001
#: Quick mode's epoch cap on Amazon-Photo (7,650 nodes), and its floor on larger graphs (:func:`quick_epochs`).
QUICK_EPOCHS, QUICK_NODES, QUICK_FLOOR = 60, 7650, 10
#: Elements of one N × b block of similarities in the reconstruction loss (32 MiB in float32 per buffer).
BLOCK_ELEMENTS = 1 << 23
#: Features with fewer nonzeros than this fraction are kept sparse.
SPARSE_FEATURES_BELOW = 0.1


def quick_epochs(num_nodes: int) -> int:
    """Quick mode's epoch cap: :data:`QUICK_EPOCHS` × (:data:`QUICK_NODES` / N)², the all-pairs work of 60 epochs on
    Amazon-Photo, at most :data:`QUICK_EPOCHS` and at least :data:`QUICK_FLOOR`."""
    return max(QUICK_FLOOR, min(QUICK_EPOCHS, int(QUICK_EPOCHS * (QUICK_NODES / num_nodes) ** 2)))


class _Sparse(SparseMatrix):
    """A SciPy sparse matrix as a CSR tensor with its stored transpose (:class:`gca.graph.sparse.SparseMatrix`):
    autograd's backward is a CSR product with the transpose, deterministic on CPU, no scatter."""

    def __init__(self, matrix: sp.spmatrix, device: torch.device) -> None:
        super().__init__(_csr_tensor(matrix.tocsr(), device), _csr_tensor(matrix.T.tocsr(), device))


def _csr_tensor(m: sp.csr_matrix, device: torch.device) -> torch.Tensor:
    m = m.astype(np.float32)
    m.sort_indices()
    return torch.sparse_csr_tensor(
        torch.from_numpy(m.indptr.astype(np.int64)),
        torch.from_numpy(m.indices.astype(np.int64)),
        torch.from_numpy(m.data),
        size=m.shape,
    ).to(device)


def _adjacency(edge_index: torch.Tensor, num_nodes: int) -> sp.csr_matrix:
    """The binary adjacency of ``edge_index`` (duplicates merged), self-loops removed, float32."""
    return binary_adjacency(edge_index, num_nodes).astype(np.float32)


def gcn_propagation(a: sp.csr_matrix) -> sp.csr_matrix:
    """Â = D^−½ (A + I) D^−½ with D the degrees of A + I (Kipf & Welling, 2017): gca's operator
    (:func:`gca.graph.sparse.normalized_adjacency_entries`) of the edges j → i for every a_ij = 1, so that row i
    sums over the columns of A's row i."""
    coo = a.tocoo()
    (row, col), value = normalized_adjacency_entries(torch.from_numpy(np.stack([coo.col, coo.row])), a.shape[0])
    return sp.csr_matrix((value.numpy(), (row.numpy(), col.numpy())), shape=a.shape)


def neighbour_mean(a: sp.csr_matrix) -> sp.csr_matrix:
    """Each row divided by its degree (an isolated node's row stays zero): the mean over the neighbours."""
    degree = np.asarray(a.sum(axis=1)).ravel()
    return sp.diags(np.divide(1.0, degree, out=np.zeros_like(degree), where=degree > 0)) @ a


def _features(data: Data, device: torch.device) -> torch.Tensor | _Sparse:
    """The row-normalised features: dense, or :class:`_Sparse` when under :data:`SPARSE_FEATURES_BELOW` nonzero."""
    x = data.x.coalesce() if data.x.is_sparse else data.x
    nonzero = x._nnz() if x.is_sparse else int(torch.count_nonzero(x))
    if nonzero >= SPARSE_FEATURES_BELOW * x.shape[0] * x.shape[1]:
        x = x.to_dense() if x.is_sparse else x
        return torch.from_numpy(np.asarray(normalize_rows(x.float().numpy()), dtype=np.float32)).to(device)
    if x.is_sparse:
        (row, col), values = x.indices().numpy(), x.values().float().numpy()
        m = sp.csr_matrix((values, (row, col)), shape=tuple(x.shape))
    else:
        m = sp.csr_matrix(x.float().numpy())
    return _Sparse(normalize_rows(m), device)


def _matmul(x: torch.Tensor | _Sparse, w: torch.Tensor) -> torch.Tensor:
    return x @ w


class _GCNLayer(nn.Module):
    """PReLU(Â (x W) + b), also returning x W (before propagation) for the neighbour term."""

    def __init__(self, in_channels: int, out_channels: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(in_channels, out_channels))
        self.bias = nn.Parameter(torch.zeros(out_channels))
        self.act = nn.PReLU()
        nn.init.xavier_uniform_(self.weight)

    def forward(self, x: torch.Tensor | _Sparse, propagation: _Sparse) -> tuple[torch.Tensor, torch.Tensor]:
        xw = _matmul(x, self.weight)
        return self.act(propagation @ xw + self.bias), xw


class _Bilinear(nn.Module):
    """D(a, b) = aᵀ W b + c (the sigmoid is applied by the caller), initialised as ``nn.Bilinear`` with Xavier."""

    def __init__(self, left: int, right: int) -> None:
        super().__init__()
        weight = torch.empty(1, left, right)
        nn.init.xavier_uniform_(weight)
        self.weight = nn.Parameter(weight[0])
        self.bias = nn.Parameter(torch.zeros(()))

    def scores(
        self, left: torch.Tensor | _Sparse, right: torch.Tensor, negatives: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Scores of the pairs (left_i, right_i) and (left_{negatives[k, i]}, right_i), shapes N and K × N."""
        u = _matmul(left, self.weight)  # aᵀ W of every node, N × right
        positive = (u * right).sum(dim=1) + self.bias
        negative = torch.stack([(u[idx] * right).sum(dim=1) for idx in negatives]) + self.bias
        return positive, negative


def jsd_loss(positive: torch.Tensor, negative: torch.Tensor) -> torch.Tensor:
    """−Î_JSD: mean sp(−D) over the positive pairs plus mean sp(D) over the negatives, D = σ(score) as in the
    reference code."""
    return F.softplus(-torch.sigmoid(positive)).mean() + F.softplus(torch.sigmoid(negative)).mean()


def negative_samples(num_nodes: int, count: int, device: torch.device) -> torch.Tensor:
    """``count`` × N node ids, entry [k, i] uniform over the nodes other than i (torch's generator)."""
    if num_nodes < 2:
        raise ValueError("GMI needs at least two nodes to draw negatives")
    draw = torch.randint(0, num_nodes - 1, (count, num_nodes), device=device)
    return draw + (draw >= torch.arange(num_nodes, device=device)).long()


class _ReconstructionLoss(torch.autograd.Function):
    """L_rec of the module docstring for embeddings H (N × d), value and gradient in one sweep over row blocks of
    S = HHᵀ: no N × N tensor, O(N·block + N·d) memory, ~2·N²·d multiply-adds.

    With f_t(s) the loss of a pair of target t (sp(s) for t = 0, w₁·sp(−s) for t = 1) and C_ij = f′_{t_ij}(s_ij),
    ∂L/∂h_i = Σ_j (C_ij + C_ji) h_j since s_ij = s_ji; C + Cᵀ = 2 σ(S) + D + Dᵀ with D nonzero only on T,
    D_ij = −w₁ σ(−s_ij) − σ(s_ij). A block of rows gets its rows of D from T's pairs in those rows and of Dᵀ from
    Tᵀ's, both read off the block of S already computed."""

    @staticmethod
    def forward(ctx, h: torch.Tensor, target: ReconstructionTarget, block: int) -> torch.Tensor:
        need_grad = ctx.needs_input_grad[0]
        n, w1 = h.shape[0], target.positive_weight
        grad = torch.empty_like(h) if need_grad else None
        total = torch.zeros((), dtype=torch.float64, device=h.device)
        for start in range(0, n, block):
            stop = min(start + block, n)
            s = h[start:stop] @ h.T
            total += F.softplus(s).sum().double()  # all pairs as non-edges: −log(1 − σ(s)) = sp(s)
            pairs = target.flat_positions(start, stop, transposed=False)
            s_t = s.view(-1)[pairs]
            total += (w1 * F.softplus(-s_t) - F.softplus(s_t)).sum().double()  # the pairs of T as edges instead
            if need_grad:
                m = torch.sigmoid(s).mul_(2.0)
                m.view(-1).index_add_(0, pairs, -w1 * torch.sigmoid(-s_t) - torch.sigmoid(s_t))
                pairs = target.flat_positions(start, stop, transposed=True)
                s_t = s.view(-1)[pairs]
                m.view(-1).index_add_(0, pairs, -w1 * torch.sigmoid(-s_t) - torch.sigmoid(s_t))
                torch.mm(m, h, out=grad[start:stop])
        if need_grad:
            ctx.save_for_backward(grad.mul_(target.scale))
        return (total * target.scale).to(h.dtype)

    @staticmethod
    def backward(ctx, grad_output: torch.Tensor):
        (grad,) = ctx.saved_tensors
        return grad_output * grad, None, None


class ReconstructionTarget:
    """The target T = A + I of L_rec, its pairs in CSR order (and those of Tᵀ), and the reference's weights w₁
    (positives) and w₂ / N² (``scale``)."""

    def __init__(self, a: sp.csr_matrix, device: torch.device) -> None:
        n = a.shape[0]
        t = (a + sp.identity(n, dtype=np.float32, format="csr")).tocsr()
        t.sort_indices()
        t_t = t.T.tocsr()
        t_t.sort_indices()
        self.num_nodes = n
        self._csr = [self._flat(m, device) for m in (t, t_t)]
        half = t.nnz / 2  # the reference's edge count: the positives of its dense A + I, halved
        self.positive_weight = (n * n - half) / half
        self.scale = (n * n / (n * n - half)) / (n * n)  # w₂ / N²

    @staticmethod
    def _flat(m: sp.csr_matrix, device: torch.device) -> tuple[np.ndarray, torch.Tensor]:
        """The row pointer and row · N + column of every pair, in CSR order."""
        rows = np.repeat(np.arange(m.shape[0], dtype=np.int64), np.diff(m.indptr))
        return m.indptr.astype(np.int64), torch.from_numpy(rows * m.shape[0] + m.indices).to(device)

    def flat_positions(self, start: int, stop: int, transposed: bool) -> torch.Tensor:
        """Positions in a row-major (stop − start) × N block of the pairs of T (or Tᵀ) in rows start … stop − 1."""
        indptr, flat = self._csr[int(transposed)]
        return flat[indptr[start] : indptr[stop]] - start * self.num_nodes

    def loss(self, h: torch.Tensor, block: int | None = None) -> torch.Tensor:
        return _ReconstructionLoss.apply(h, self, block or max(1, BLOCK_ELEMENTS // h.shape[0]))


class GMI(nn.Module):
    """The two-layer GCN encoder and GMI's two discriminators (module docstring)."""

    def __init__(self, in_channels: int, hidden: int = HIDDEN) -> None:
        super().__init__()
        self.gcn1 = _GCNLayer(in_channels, hidden)
        self.gcn2 = _GCNLayer(hidden, hidden)
        self.features_disc = _Bilinear(in_channels, hidden)  # D₁(x_i, h_i)
        self.neighbour_disc = _Bilinear(hidden, hidden)  # D₂(h_i, n_i)
        self.neighbour_act = nn.PReLU()

    def encode(self, x: torch.Tensor | _Sparse, propagation: _Sparse) -> tuple[torch.Tensor, torch.Tensor]:
        """H and x W₁ (the first layer's features before propagation)."""
        h1, xw = self.gcn1(x, propagation)
        return self.gcn2(h1, propagation)[0], xw

    def loss(
        self,
        x: torch.Tensor | _Sparse,
        propagation: _Sparse,
        mean: _Sparse,
        target: ReconstructionTarget,
        negatives: int = NEGATIVES,
        block: int | None = None,
    ) -> torch.Tensor:
        h, xw = self.encode(x, propagation)
        n = h.shape[0]
        neighbours = self.neighbour_act(mean @ xw)
        own = jsd_loss(*self.features_disc.scores(x, h, negative_samples(n, negatives, h.device)))
        local = jsd_loss(*self.neighbour_disc.scores(h, neighbours, negative_samples(n, negatives, h.device)))
        return ALPHA * own + BETA * local + GAMMA * target.loss(h, block)


def gmi_embeddings(
    data: Data,
    seed: int,
    quick: bool,
    device: torch.device,
    *,
    epochs: int | None = None,
    block: int | None = None,
    progress: bool = False,
) -> Trained:
    """GMI's embeddings (N × 512) of every node (module docstring) and its training; the graph in
    ``data.edge_index`` is all it sees.

    ``epochs`` overrides the epoch cap (:data:`EPOCHS`, or :func:`quick_epochs` with ``quick``) and ``block`` the
    rows per block of the reconstruction loss. A loss that is not finite raises
    :class:`gca.train.loop.TrainingError`."""
    seed_everything(seed)
    n = data.num_nodes
    x = _features(data, device)
    a = _adjacency(data.edge_index, n)
    propagation, mean = _Sparse(gcn_propagation(a), device), _Sparse(neighbour_mean(a), device)
    target = ReconstructionTarget(a, device)
    in_channels = x.shape[1]
    model = GMI(in_channels).to(device)
    cap = epochs if epochs is not None else (quick_epochs(n) if quick else EPOCHS)
    history = fit(
        "GMI",
        model,
        lambda m: m.loss(x, propagation, mean, target, block=block),
        lr=LR,
        epochs=cap,
        patience=PATIENCE,
        progress=progress,
    )
    with torch.no_grad():
        return Trained(model.encode(x, propagation)[0].detach().float(), history)
