"""MVGRL (Hassani & Khasahmadi, ICML 2020), the Table 3 baseline. **Views.** The adjacency view is the GCN operator
Â = D̃^{-1/2}(A + I)D̃^{-1/2} (:func:`gca.graph.sparse.normalized_adjacency_entries`); the diffusion view is
personalised PageRank, α = 0.2,

    S = α (I − (1 − α) T)^{-1} = α Σ_{k≥0} (1 − α)^k T^k,   T = D̃^{-1/2}(A + I)D̃^{-1/2} = Â,

with the self-loops of the authors' ``compute_ppr`` (the paper writes D^{-1/2} A D^{-1/2}). S is dense and exact
where its N² float32 entries fit :data:`DENSE_BYTES` (:func:`ppr_dense`); beyond, it is built B rows at a time from
the series truncated after K = ⌈ln ε / ln(1 − α)⌉ − 1 terms (every entry within ε = :data:`PPR_TOLERANCE`, as
‖T‖₂ ≤ 1; a column also stops once (1 − α)/α · ‖t_K‖₂ ≤ ε), each row keeping its fewest largest entries that hold
:data:`KEPT_MASS` of its mass, at most :data:`MAX_ENTRIES` in all (:func:`ppr_by_mass`; the record names the form).

**Model.** One GCN layer per view, not shared: h = PReLU(M X W + b), M = Â or S, 512 units, on row-normalised
features; summary s = σ(mean_v h_v) per view. A bilinear D(z, g) = zᵀ W g + b scores positives D(h^S_v, s^Â) and
D(h^Â_v, s^S), and as negatives the same with nodes encoded from row-shuffled features (one permutation a step); the
loss is the binary cross-entropy of the four sets of scores (labels 1, 1, 0, 0). ``heads=True`` adds the paper's
projection heads, f_ψ on nodes and f_φ on summaries: D(f_ψ(h^S_v), f_φ(s^Â)), …. Embedding: h^Â + h^S on the whole
graph, from the weights of the lowest loss.

**Training** (``node/train.py``): Adam, lr 0.001, no weight decay, a step per epoch on 4 subgraphs of 2,000 nodes (a
smaller graph whole), stopping after 20 epochs without a new lowest loss, at most 3,000 (quick: :data:`QUICK_EPOCHS`).

**Differs from the authors' code** (why: docs/design/application.md): S in float32 by Cholesky, not min-max scaled,
sparse beyond :data:`DENSE_BYTES`; uniform subgraphs; Â's self-loops once; negatives shuffled per batch; no heads.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F
from torch_geometric.data import Data

from ..graph.sparse import normalized_adjacency_entries
from ..progress import step
from ..train.loop import TrainingError
from .training import Trained, fit, seeded_inputs

#: Teleport probability of the PPR diffusion (paper §4).
ALPHA = 0.2
#: Width of each view's encoder (one GCN layer) and of the projection heads (paper §4, node classification).
HIDDEN = 512
#: Nodes per sampled subgraph and subgraphs per step (the authors' ``node/train.py``).
SAMPLE_SIZE, BATCH_SIZE = 2000, 4
#: Adam's learning rate, the early-stopping patience and the most epochs (the authors' ``node/train.py``).
LR, PATIENCE, EPOCHS = 0.001, 20, 3000
#: The cap on epochs in quick mode.
QUICK_EPOCHS = 400
#: The bound on every entry's truncation error in the diffusion series (module docstring).
PPR_TOLERANCE = 1e-4
#: Bytes the diffusion's dense blocks may take (sets the block of rows: :func:`ppr_block`).
PPR_BLOCK_BYTES = 128 * 2**20
#: S is kept dense and exact, as the reference keeps it, where its N² float32 entries take at most this many bytes
#: (Amazon-Photo 0.23 GB, Amazon-Computers 0.76 GB, Coauthor-CS 1.34 GB; Coauthor-Physics's 4.8 GB does not fit).
#: Computing it holds about three such matrices at once.
DENSE_BYTES = 2 * 2**30
#: Above :data:`DENSE_BYTES`, each row of S keeps its fewest largest entries that hold at least this fraction of
#: the row's mass (:func:`ppr_by_mass`) …
KEPT_MASS = 0.95
#: … but no more than this many entries in all (N rows share it evenly: about 1.3 GB of index and value), so that
#: memory stays bounded on any graph; a row the cap cuts keeps less than :data:`KEPT_MASS`, and the record says
#: the mass kept on average.
MAX_ENTRIES = 2**26

Entries = tuple[torch.Tensor, torch.Tensor]  # ([2, E] (row, column) index, [E] values) of a sparse N × N matrix


def series_terms(alpha: float, tolerance: float) -> int:
    """The smallest K with (1 − α)^{K+1} ≤ ``tolerance``: the a priori number of terms after the first."""
    return max(0, math.ceil(math.log(tolerance) / math.log(1.0 - alpha)) - 1)


def ppr_block(num_nodes: int, budget_bytes: int | None = None) -> int:
    """Rows of S computed at once: the N × B blocks :func:`ppr_rows` and :func:`ppr_by_mass` hold — three float32
    ones for the series, then the sorted values, their int64 positions and running sums (24 bytes an entry) — fit
    ``budget_bytes`` (default :data:`PPR_BLOCK_BYTES`)."""
    budget = PPR_BLOCK_BYTES if budget_bytes is None else budget_bytes
    return max(1, min(num_nodes, budget // (24 * max(1, num_nodes))))


def ppr_rows(
    transition: torch.Tensor, rows: torch.Tensor, alpha: float = ALPHA, tolerance: float = PPR_TOLERANCE
) -> torch.Tensor:
    """Rows ``rows`` of S = α(I − (1 − α)T)^{-1} as the columns of a dense N × B block, each entry within
    ``tolerance`` of the exact value (module docstring); ``transition`` is Tᵀ as a sparse N × N tensor."""
    n, b = transition.shape[0], rows.numel()
    total = torch.zeros(n, b, dtype=torch.float32, device=transition.device)
    total[rows, torch.arange(b, device=rows.device)] = alpha
    term, active = total.clone(), torch.arange(b, device=rows.device)  # the columns whose series goes on
    decay = 1.0 - alpha
    for _ in range(series_terms(alpha, tolerance)):
        term = decay * torch.sparse.mm(transition, term)
        if active.numel() == b:
            total += term
        else:
            total[:, active] += term
        going = decay / alpha * term.norm(dim=0) > tolerance
        if not going.all():
            term, active = term[:, going], active[going]
            if not active.numel():
                break
    return total


def ppr_by_mass(
    edge_index: torch.Tensor,
    num_nodes: int,
    mass: float = KEPT_MASS,
    alpha: float = ALPHA,
    tolerance: float = PPR_TOLERANCE,
    block: int | None = None,
    max_entries: int = MAX_ENTRIES,
) -> tuple[Entries, torch.Tensor]:
    """The diffusion view cut row by row: each row of S keeps its fewest largest entries whose sum reaches ``mass``
    of the row's sum (ties at the cut broken by position; ``mass`` ≥ 1 keeps every non-zero entry), at most
    ``max_entries`` // N of them, as (row, column) entries sorted by row, rows of ``block`` nodes at a time (default
    :func:`ppr_block`); and the fraction of its mass each row kept. Both sums are the truncated series' (each entry
    within ``tolerance`` of S's), so a row keeps at least ``mass`` of its computed mass unless the cap cut it.

    Parameters
    ----------
    edge_index
        The graph's edges (u → v: row v of Â aggregates u).
    """
    most = max(1, max_entries // max(1, num_nodes))
    index, weight = normalized_adjacency_entries(edge_index, num_nodes)
    # Tᵀ: its column v is T's row v, so the series on Tᵀ gives the rows of S
    transition = _operator((index.flip(0), weight), num_nodes)
    block = block or ppr_block(num_nodes)
    rows, columns, values, kept_mass = [], [], [], []
    for start in range(0, num_nodes, block):
        chosen = torch.arange(start, min(start + block, num_nodes))
        part = ppr_rows(transition, chosen, alpha, tolerance)  # N × B: column j is row chosen[j]
        ordered, order = part.sort(dim=0, descending=True, stable=True)
        total = ordered.sum(0)
        running = ordered.cumsum(0)
        if mass >= 1:
            count = (ordered > 0).sum(0)
        else:  # the entries before the one that reaches the mass, and that one
            count = (running < mass * total).sum(0) + 1
        count = count.clamp(max=most)
        keep = (torch.arange(num_nodes).unsqueeze(1) < count) & (ordered > 0)
        kept_mass.append(torch.where(keep, ordered, 0).sum(0) / total.clamp(min=torch.finfo(total.dtype).tiny))
        where = keep.t().nonzero()  # (column j of the block, rank) pairs in row order
        rows.append(chosen[where[:, 0]])
        columns.append(order[where[:, 1], where[:, 0]])
        values.append(ordered[where[:, 1], where[:, 0]])
    return (torch.stack([torch.cat(rows), torch.cat(columns)]), torch.cat(values)), torch.cat(kept_mass)


def ppr_dense(edge_index: torch.Tensor, num_nodes: int, alpha: float = ALPHA) -> torch.Tensor:
    """S = α (I − (1 − α)Â)^{-1} as a dense N × N float32 matrix, as the reference computes it: by a Cholesky
    factorisation of I − (1 − α)Â where Â is symmetric (an undirected graph: its eigenvalues lie in [α, 2 − α], so
    the factorisation is exact to float32's rounding), else by an LU inverse.

    Parameters
    ----------
    edge_index
        The graph's edges (u → v: row v of Â aggregates u).
    """
    index, weight = normalized_adjacency_entries(edge_index, num_nodes)
    system = torch.zeros(num_nodes, num_nodes)
    system.index_put_((index[0], index[1]), -(1.0 - alpha) * weight, accumulate=True)
    system.diagonal().add_(1.0)
    if torch.equal(system, system.t()):
        factor, info = torch.linalg.cholesky_ex(system)
        if info == 0:
            del system
            return torch.cholesky_inverse(factor).mul_(alpha)
    return torch.linalg.inv(system).mul_(alpha)


class Diffusion:
    """The diffusion view S of a graph: dense and exact where its N² float32 entries fit ``dense_bytes`` (default
    :data:`DENSE_BYTES`; :func:`ppr_dense`), else sparse, each row keeping ``mass`` of its own and each entry within
    ``tolerance`` (:func:`ppr_by_mass`)."""

    def __init__(
        self,
        edge_index: torch.Tensor,
        num_nodes: int,
        dense_bytes: int | None = None,
        mass: float = KEPT_MASS,
        tolerance: float = PPR_TOLERANCE,
    ) -> None:
        self.num_nodes = num_nodes
        self.dense = 4 * num_nodes**2 <= (DENSE_BYTES if dense_bytes is None else dense_bytes)
        if self.dense:
            self.matrix = ppr_dense(edge_index, num_nodes)
            self.entries_per_row = float(torch.count_nonzero(self.matrix)) / num_nodes
            self.kept_mass = 1.0
        else:
            self.entries, kept = ppr_by_mass(edge_index, num_nodes, mass, tolerance=tolerance)
            self.entries_per_row = self.entries[1].numel() / num_nodes
            self.kept_mass = float(kept.mean())

    def describe(self) -> dict:
        """What the record says of it: ``dense`` (and its bytes) or ``sparse``, the mean fraction of each row's mass
        kept and the mean entries kept per row."""
        form = {"form": "dense", "bytes": 4 * self.num_nodes**2} if self.dense else {"form": "sparse"}
        return {**form, "kept_mass": self.kept_mass, "entries_per_row": self.entries_per_row}

    def batch(self, subsets: list[torch.Tensor], device: torch.device) -> torch.Tensor:
        """The operator of the subgraphs on ``subsets``: dense, ``[G, n, n]`` (the submatrices of S, as the
        reference slices them); sparse, their block-diagonal matrix (:func:`induced_batch`)."""
        if self.dense:
            return torch.stack([self.matrix[nodes.unsqueeze(1), nodes] for nodes in subsets]).to(device)
        return induced_batch(self.entries, subsets, self.num_nodes).to(device)

    def whole(self, device: torch.device) -> torch.Tensor:
        """S on the whole graph, as an operator (dense, or a sparse matrix)."""
        return self.matrix.to(device) if self.dense else _operator(self.entries, self.num_nodes).to(device)


def _operator(entries: Entries, size: int) -> torch.Tensor:
    return torch.sparse_coo_tensor(entries[0], entries[1], (size, size), check_invariants=False).coalesce()


def induced_batch(entries: Entries, subsets: list[torch.Tensor], num_nodes: int) -> torch.Tensor:
    """The block-diagonal sparse operator of the submatrices of ``entries`` on each node subset, in order (the
    whole graph's values between the subset's nodes, not renormalised)."""
    position = torch.full((num_nodes,), -1, dtype=torch.long)
    index, values = entries
    parts, offset = [], 0
    for nodes in subsets:
        position[nodes] = torch.arange(offset, offset + nodes.numel())
        row, col = position[index[0]], position[index[1]]
        keep = (row >= offset) & (col >= offset)
        parts.append((torch.stack([row[keep], col[keep]]), values[keep]))
        position[nodes] = -1
        offset += nodes.numel()
    return _operator((torch.cat([p[0] for p in parts], 1), torch.cat([p[1] for p in parts])), offset)


class _Projection(nn.Module):
    """The paper's projection head (§3): an MLP with two hidden layers and PReLU, plus a linear shortcut."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.mlp = nn.Sequential(
            nn.Linear(width, width),
            nn.PReLU(),
            nn.Linear(width, width),
            nn.PReLU(),
            nn.Linear(width, width),
            nn.PReLU(),
        )
        self.shortcut = nn.Linear(width, width)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return self.mlp(h) + self.shortcut(h)


class _ViewEncoder(nn.Module):
    """One GCN layer, PReLU(M X W + b), with X W exposed so that shuffled rows reuse it."""

    def __init__(self, in_channels: int, width: int) -> None:
        super().__init__()
        self.lin = nn.Linear(in_channels, width, bias=False)
        nn.init.xavier_uniform_(self.lin.weight)
        self.bias = nn.Parameter(torch.zeros(width))
        self.act = nn.PReLU()

    def forward(self, xw: torch.Tensor, operator: torch.Tensor) -> torch.Tensor:
        """PReLU(M X W + b) for ``operator`` M: a sparse matrix, a dense N × N one, or a dense ``[G, n, n]`` batch of
        G graphs' operators (the rows of ``xw`` are then the G graphs' n nodes, one graph after another)."""
        if operator.layout != torch.strided:
            return self.act(torch.sparse.mm(operator, xw) + self.bias)
        if operator.dim() == 3:
            return self.act(
                torch.bmm(operator, xw.view(operator.shape[0], operator.shape[2], -1)).flatten(0, 1) + self.bias
            )
        return self.act(operator @ xw + self.bias)


class MVGRL(nn.Module):
    """The two view encoders, the bilinear discriminator and, with ``heads``, the node and graph projection heads."""

    def __init__(self, in_channels: int, width: int = HIDDEN, heads: bool = False) -> None:
        super().__init__()
        self.adjacency_encoder = _ViewEncoder(in_channels, width)
        self.diffusion_encoder = _ViewEncoder(in_channels, width)
        self.node_head = _Projection(width) if heads else nn.Identity()
        self.graph_head = _Projection(width) if heads else nn.Identity()
        self.discriminator = nn.Bilinear(width, width, 1)
        nn.init.xavier_uniform_(self.discriminator.weight)
        nn.init.zeros_(self.discriminator.bias)

    def _score(self, h: torch.Tensor, summaries: torch.Tensor) -> torch.Tensor:
        """D(f_ψ(h_v), g) for each node v against its graph's projected summary g (one row per graph): zᵀ(W g) + b
        with W g computed once per graph, not ``nn.Bilinear`` per node."""
        z = self.node_head(h).view(summaries.shape[0], -1, h.shape[1])
        weighted = summaries @ self.discriminator.weight[0].t()
        return (z * weighted.unsqueeze(1)).sum(-1).reshape(-1) + self.discriminator.bias

    def embed(self, x: torch.Tensor, adjacency: torch.Tensor, diffusion: torch.Tensor) -> torch.Tensor:
        """h^Â + h^S, the embedding (module docstring)."""
        return self.adjacency_encoder(self.adjacency_encoder.lin(x), adjacency) + self.diffusion_encoder(
            self.diffusion_encoder.lin(x), diffusion
        )

    def loss(
        self,
        x: torch.Tensor,
        rows: torch.Tensor,
        adjacency: torch.Tensor,
        diffusion: torch.Tensor,
        graphs: int,
        permutation: torch.Tensor,
    ) -> torch.Tensor:
        """The BCE of the cross-view node–graph scores on a batch of ``graphs`` equal-sized graphs (block-diagonal
        operators); the batch's node i has features ``x[rows[i]]`` (each distinct node's X W is computed once, as
        subgraphs overlap), and ``permutation`` shuffles the batch's rows for the negatives."""
        xa, xd = self.adjacency_encoder.lin(x), self.diffusion_encoder.lin(x)
        shuffled = rows[permutation]
        h_a, h_d = self.adjacency_encoder(xa[rows], adjacency), self.diffusion_encoder(xd[rows], diffusion)
        neg_a = self.adjacency_encoder(xa[shuffled], adjacency)
        neg_d = self.diffusion_encoder(xd[shuffled], diffusion)
        size = rows.numel() // graphs
        s_a = self.graph_head(torch.sigmoid(h_a.view(graphs, size, -1).mean(1)))
        s_d = self.graph_head(torch.sigmoid(h_d.view(graphs, size, -1).mean(1)))
        scores = torch.cat(
            [self._score(h_d, s_a), self._score(h_a, s_d), self._score(neg_d, s_a), self._score(neg_a, s_d)]
        )
        labels = torch.cat([torch.ones(2 * rows.numel()), torch.zeros(2 * rows.numel())]).to(scores)
        return F.binary_cross_entropy_with_logits(scores, labels)


def mvgrl_embeddings(
    data: Data,
    seed: int,
    quick: bool,
    device: torch.device,
    *,
    diffusion: Diffusion | None = None,
    sample_size: int = SAMPLE_SIZE,
    batch_size: int = BATCH_SIZE,
    epochs: int | None = None,
    heads: bool = False,
    progress: bool = False,
) -> Trained:
    """MVGRL's embeddings of every node (module docstring), N × 512, float32, detached, and its training, whose
    ``details`` say how the diffusion was kept (:meth:`Diffusion.describe`).

    ``diffusion`` defaults to ``Diffusion(data.edge_index, N)``; ``epochs`` is the cap (default 3,000, quick
    :data:`QUICK_EPOCHS`). A loss that is not finite raises :class:`gca.train.loop.TrainingError`."""
    x, edge_index = seeded_inputs(data, seed, torch.device("cpu"))
    n = x.shape[0]
    adjacency = normalized_adjacency_entries(edge_index, n)
    if diffusion is None:
        with step("MVGRL diffusion", progress):
            diffusion = Diffusion(edge_index, n)
    elif diffusion.num_nodes != n:
        raise ValueError(f"the diffusion is of a graph of {diffusion.num_nodes} nodes, the data's of {n}")
    model = MVGRL(x.shape[1], heads=heads).to(device)
    x = x.to(device)
    generator = torch.Generator().manual_seed(seed)
    whole = n <= sample_size

    def loss_of(m: nn.Module) -> torch.Tensor:
        if whole:
            subsets = [torch.arange(n)]
        else:
            subsets = [torch.randperm(n, generator=generator)[:sample_size].sort().values for _ in range(batch_size)]
        distinct, rows = torch.cat(subsets).unique(return_inverse=True)
        a = induced_batch(adjacency, subsets, n).to(device)
        s = diffusion.batch(subsets, device)
        permutation = torch.randperm(rows.numel(), generator=generator).to(device)
        return m.loss(x[distinct.to(device)], rows.to(device), a, s, len(subsets), permutation)

    cap = epochs if epochs is not None else (QUICK_EPOCHS if quick else EPOCHS)
    history = fit("MVGRL", model, loss_of, lr=LR, epochs=cap, patience=PATIENCE, progress=progress)
    history.details["diffusion"] = diffusion.describe()
    with torch.no_grad():
        z = model.embed(x, _operator(adjacency, n).to(device), diffusion.whole(device))
    if not torch.isfinite(z).all():
        raise TrainingError("MVGRL's embeddings are not finite")
    return Trained(z.detach().float(), history)
