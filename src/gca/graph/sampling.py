"""Neighbourhood sampling for mini-batch GCA: the L-hop subgraph around a batch of anchor nodes.

For anchors (seeds) S₀ and fan-outs k₁, …, k_L, hop ℓ takes, for every node first reached at hop ℓ − 1, at most k_ℓ of
its in-neighbours u (edges u → v, the direction messages flow), uniformly without replacement (all of them when it has
fewer, or when k_ℓ = −1); the nodes reached for the first time form the next frontier. The subgraph holds every node
reached (anchors first, in the order given) and the sampled edges only — a GCN on it computes each anchor's L-layer
embedding from a sampled computation tree, as GraphSAGE (Hamilton et al., 2017) and PyTorch Geometric's
``NeighborLoader`` do. Its GCN normalisation uses the subgraph's degrees. Draws are vectorised over the whole frontier
(:func:`floyd_sample`).

Every sampled edge also carries its *unit*: the index of the item that topology augmentation keeps or removes
(:func:`gca.augment.augmentors.edge_units` — on undirected graphs the edge {u, v} with both its directions), so a view
of the subgraph removes edges with the probabilities computed once on the full graph. Design notes:
docs/design/core.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .csr import count_ids, edge_list_csr, has_self_loops, is_sorted, pair_reverse_edges
from .sparse import segment_ranges


@dataclass
class SampledSubgraph:
    """``nodes[i]`` is the full-graph id of local node i (anchors are nodes 0 … ``num_anchors`` − 1); ``edge_index``
    holds the sampled edges (source, target) in local ids and ``units`` each edge's augmentation unit in the full graph.
    """

    nodes: torch.Tensor
    edge_index: torch.Tensor
    units: torch.Tensor
    num_anchors: int
    #: nodes within 0, 1, …, L hops of the anchors (local ids are numbered hop by hop, so each is a prefix)
    hop_sizes: tuple[int, ...] = ()
    #: for each sampled edge, the position in the full graph's edge_index of the edge whose weight and features it
    #: carries (itself on a directed graph, its reverse — of equal values — on an undirected one)
    edge_ids: torch.Tensor | None = None

    @property
    def num_nodes(self) -> int:
        return int(self.nodes.numel())


def reverse_positions(edge_index: torch.Tensor, num_nodes: int) -> torch.Tensor:
    """For a coalesced edge_index that holds both directions of every edge, the position of each edge's reverse (int32
    below 2³¹ edges): read from the CSC of the edge list's own arrays (SciPy's linear-time counting sort, 32-bit
    indices), no sort of 64-bit keys."""
    import numpy as np

    count = edge_index.shape[1]
    source, target = edge_index.cpu().numpy()
    if count and not bool((source[1:] >= source[:-1]).all()):
        raise ValueError("edge_index must be coalesced (sorted by source)")
    positions = edge_list_csr(edge_index, num_nodes, np.arange(count, dtype=np.int32 if count < 2**31 else np.int64))
    indptr = positions.indptr
    columns = positions.tocsc()  # rows ascending within each column
    del positions
    if not (np.array_equal(columns.indptr, indptr) and np.array_equal(columns.indices, target)):
        raise ValueError("reverse positions need every edge's reverse in a coalesced edge_index")
    return torch.from_numpy(columns.data).to(edge_index.device)


def edge_unit_ids(edge_index: torch.Tensor, num_nodes: int, symmetric_units: bool) -> torch.Tensor:
    """For every directed edge of a coalesced ``edge_index``, the index of its augmentation unit (int32 below 2³¹
    units): with ``symmetric_units`` the edges (u, v) with u < v in ``edge_index`` order
    (:func:`gca.augment.augmentors.edge_units`), (v, u) in the unit of (u, v); otherwise every directed edge.
    Computed a block at a time (:func:`gca.graph.csr.pair_reverse_edges`)."""

    source, target = edge_index
    count = source.numel()
    if not symmetric_units:
        return torch.arange(count, device=edge_index.device, dtype=torch.int32 if count < 2**31 else torch.long)
    kind = torch.int32 if max(count // 2 + 1, num_nodes) < 2**31 else torch.long
    if not is_sorted(source):
        raise ValueError("edge_index must be coalesced (sorted by source)")
    units = torch.empty(count, dtype=kind)
    if has_self_loops(edge_index) or not pair_reverse_edges(edge_index, num_nodes, units.numpy()):
        raise ValueError("symmetric augmentation units need every edge's reverse in a coalesced edge_index")
    return units.to(edge_index.device)


class NeighborSampler:
    """Samples L-hop subgraphs around anchor nodes from the in-neighbour CSR of a graph (module docstring).

    ``fanouts[ℓ]`` is the number of neighbours drawn per node at hop ℓ + 1 (−1: all; 0 or below −1 is a ``ValueError``).
    ``edge_index`` is coalesced (:class:`gca.graph.graph.Graph`); ``undirected`` says it holds both directions of every
    edge — then in-neighbours are out-neighbours and its own row order is the CSR, so nothing is sorted.
    ``symmetric_units`` (needs ``undirected``) says topology augmentation keeps or removes both directions of an edge
    together (:func:`gca.augment.augmentors.edge_units`). ``units``: :func:`edge_unit_ids` of ``edge_index`` computed
    before (a stored prepared graph keeps them), used as given; ``None``: computed here. Indices are stored as int32
    when they fit.
    """

    def __init__(
        self,
        edge_index: torch.Tensor,
        num_nodes: int,
        fanouts: tuple[int, ...],
        undirected: bool = True,
        symmetric_units: bool = True,
        units: torch.Tensor | None = None,
    ) -> None:
        if any(k == 0 or k < -1 for k in fanouts):
            raise ValueError(f"fan-outs must be positive or -1 (all neighbours), got {fanouts}")
        if symmetric_units and not undirected:
            raise ValueError("symmetric augmentation units need an undirected graph")
        self.num_nodes = num_nodes
        self.undirected = undirected
        self.fanouts = tuple(int(k) for k in fanouts)
        device = edge_index.device
        source, target = edge_index
        # ids below 2³¹ in int32 (ogbn-papers100M: 1.1·10⁸ nodes, 3.2·10⁹ directed edges, 1.6·10⁹ undirected units)
        nodes_kind = torch.int32 if num_nodes < 2**31 else torch.long
        unit_count = source.numel() // 2 + 1 if undirected and symmetric_units else source.numel()
        units_kind = torch.int32 if unit_count < 2**31 else torch.long
        if undirected:
            # row v lists the edges (v, u); edge (u → v) is the reverse, in the same unit when units are symmetric
            self.neighbors = target.to(nodes_kind)
            if units is not None and (not symmetric_units or units.shape != source.shape):
                raise ValueError("units given to the sampler must be the symmetric unit id of every edge")
            units = (
                units
                if units is not None
                else (
                    edge_unit_ids(edge_index, num_nodes, True)
                    if symmetric_units
                    else reverse_positions(edge_index, num_nodes)
                )
            )
            self.units = units.to(device=device, dtype=units_kind)  # given units may come from a CPU store
            del units
            counts = count_ids(source, num_nodes)
        else:
            order = torch.argsort(target, stable=True)  # group edges by the node they point to
            self.neighbors = source[order].to(nodes_kind)
            self.units = order.to(units_kind)  # every directed edge is its own unit
            del order
            counts = count_ids(target, num_nodes)
        self.indptr = torch.zeros(num_nodes + 1, dtype=torch.long, device=device)
        self.indptr[1:] = torch.cumsum(counts, 0)
        # full-graph id → local id during one sample (−1: not reached); reset after each sample
        self._local = torch.full((num_nodes,), -1, dtype=torch.long, device=device)

    def sample(self, anchors: torch.Tensor, generator: torch.Generator | None = None) -> SampledSubgraph:
        """The subgraph around ``anchors`` (distinct full-graph node ids), drawn from ``generator`` (``None``: PyTorch's
        global one)."""
        device = self.indptr.device
        anchors = anchors.to(device=device, dtype=torch.long)
        local = self._local
        local[anchors] = torch.arange(anchors.numel(), device=device)
        nodes, sources, targets, units, ids = [anchors], [], [], [], []
        frontier, count = anchors, anchors.numel()
        sizes = [count]
        try:
            for fanout in self.fanouts:
                if frontier.numel() == 0:
                    break
                positions, target = self._hop(frontier, fanout, generator)
                neighbor = self.neighbors[positions].long()
                new = torch.unique(neighbor[local[neighbor] < 0])
                local[new] = torch.arange(count, count + new.numel(), device=device)
                count += new.numel()
                sources.append(local[neighbor])
                targets.append(local[target])
                units.append(self.units[positions].long())
                ids.append(positions if self.undirected else self.units[positions].long())
                nodes.append(new)
                sizes.append(count)
                frontier = new
            all_nodes = torch.cat(nodes)
        finally:
            local[torch.cat(nodes)] = -1
        empty = torch.empty(0, dtype=torch.long, device=device)
        edge_index = torch.stack([torch.cat(sources or [empty]), torch.cat(targets or [empty])])
        sizes += [count] * (len(self.fanouts) + 1 - len(sizes))  # hops after an empty frontier add nobody
        return SampledSubgraph(
            all_nodes,
            edge_index,
            torch.cat(units or [empty]),
            int(anchors.numel()),
            tuple(int(c) for c in sizes),
            torch.cat(ids or [empty]),
        )

    def _hop(
        self, frontier: torch.Tensor, fanout: int, generator: torch.Generator | None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """CSR positions of the sampled in-edges of ``frontier`` and the node each points to."""
        start = self.indptr[frontier]
        degree = self.indptr[frontier + 1] - start
        whole = degree if fanout < 0 else torch.where(degree <= fanout, degree, 0)
        # nodes with at most `fanout` neighbours keep all of them: positions start … start + degree − 1
        position_all = segment_ranges(start, whole)
        target_all = torch.repeat_interleave(frontier, whole)
        if fanout < 0:
            return position_all, target_all
        many = degree > fanout
        if not bool(many.any()):
            return position_all, target_all
        picks = floyd_sample(degree[many], fanout, generator)  # [M, fanout] distinct offsets per row
        position_some = (start[many].unsqueeze(1) + picks).reshape(-1)
        target_some = frontier[many].repeat_interleave(fanout)
        return torch.cat([position_all, position_some]), torch.cat([target_all, target_some])


def floyd_sample(population: torch.Tensor, k: int, generator: torch.Generator | None = None) -> torch.Tensor:
    """For every row i, ``k`` distinct integers drawn uniformly from [0, population[i]) (population[i] ≥ k), from
    ``generator`` (``None``: PyTorch's global one). Floyd's algorithm, one round per drawn item for all rows at once:
    in round j, t is uniform on [0, n − k + j]; t is taken unless an earlier round took it, in which case n − k + j
    (not yet takeable before this round) is taken. Every k-subset comes out with probability 1 / C(n, k).
    """
    rows = population.numel()
    picks = torch.empty(rows, k, dtype=torch.long, device=population.device)
    for j in range(k):
        upper = population - k + j  # the largest value this round may take
        draw = torch.rand(rows, generator=generator, device=population.device, dtype=torch.float64)
        t = torch.minimum((draw * (upper + 1).to(torch.float64)).long(), upper)
        taken = (picks[:, :j] == t.unsqueeze(1)).any(1) if j else torch.zeros_like(t, dtype=torch.bool)
        picks[:, j] = torch.where(taken, upper, t)
    return picks
