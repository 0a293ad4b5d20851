"""The checked graph: :func:`prepare_graph` turns a PyTorch Geometric ``Data`` into the :class:`Graph` that training
uses — edges coalesced, self-loops dropped, features in their form (:mod:`.features`) — once per graph.

**Edge weights and edge features.** ``data.edge_weight`` ([E], non-negative, finite) and ``data.edge_attr`` ([E] or
[E, D], finite) are kept, one row per directed edge of the cleaned graph, in ``Graph.edge_weight`` / ``Graph.edge_attr``
and carried by ``Graph.edge_index`` (a :class:`~gca.graph.sparse.EdgeList`), so each view's kept edges keep their own
values and the GCN uses the weighted adjacency D̃^{-1/2}(A_w + I)D̃^{-1/2} (:mod:`.sparse`). Cleaning rules:

* a self-loop is dropped with its weight and features (the GCN adds every node's own loop with weight 1);
* repeated edges (u, v) are merged into one whose weight — and each feature — is the **sum** of theirs, as
  ``scipy.sparse`` and PyTorch Geometric's ``coalesce`` do; the merge is reported in ``Graph.warnings``;
* ``directed=False`` mirrors each edge listed without its reverse, with the same weight and features, as the file
  loaders do (:func:`gca.graph.edges.undirected_edges`); a repeat is then the same ordered pair listed again.
  ``directed=None`` mirrors nothing: the graph is undirected only when every edge has its reverse;
* on an undirected graph both directions of an edge must carry the **same** weight and features after merging (the edge
  is augmentation's unit, and the operator is symmetric); else the graph is refused in one line (make them equal, or
  pass ``directed=True``);
* negative, NaN or infinite weights, a weight beyond float32's range (one line naming the edge; only a sum of merged
  weights that overflows is blamed on the merge), NaN or infinite features, out-of-range edge ids, a wrong shape or a
  non-numeric dtype: one line (:class:`GraphError`). Weights are float32; integer edge features keep their dtype.

A graph without either is cleaned exactly as an unweighted graph.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
import torch
from torch_geometric.data import Data
from torch_geometric.utils import coalesce

from ..errors import UserError
from .csr import _is_coalesced, _is_symmetric, index_dtype, known_symmetric, remember_symmetric
from .edges import undirected_edges
from .features import ROW_BLOCK, Features, feature_forms, nonzero_columns
from .sparse import edge_list


class GraphError(UserError, ValueError):
    """The input graph cannot be used; the message is one line meant for the user."""


#: Edge ids hashed at a time by :meth:`Graph.fingerprint` (as int64, so a digest never depends on the dtype kept).
_DIGEST_CHUNK = 1 << 24


@dataclass
class Graph:
    """A cleaned graph ready for GCA.

    ``edge_index`` is coalesced and free of self-loops, in :func:`~gca.graph.csr.index_dtype` (int32 below 2³¹ nodes).
    On undirected graphs it holds both directions of every edge, sorted by source — the CSR of A that the sampler and
    inference read without a copy — and ``undirected_edges`` holds each edge once as (u, v) with u < v, the unit that
    topology augmentation keeps or removes.

    Parameters
    ----------
    num_nodes
        N, the nodes.
    edge_index, directed
        ``[2, E]`` edges as above, and whether the graph is directed.
    features
        The encoder's input, one row per node: a :class:`~gca.graph.sparse.SparseMatrix`, a dense tensor, or dense
        rows normalised as read (:class:`~gca.graph.features.RowNormalizedFeatures`), as
        :func:`~gca.graph.features.dense_input` and :func:`~gca.graph.features.read_rows` take them.
    raw_features
        The features as given (SciPy CSR or NumPy), from which the augmentation's feature weights are computed.
    y
        One label per node, if any.
    warnings
        One line each about what cleaning changed (duplicates merged, self-loops removed, …).
    edge_weight, edge_attr
        ``[E]`` float32 weights and ``[E, D]`` edge features aligned with ``edge_index``, or ``None``.
    """

    num_nodes: int
    edge_index: torch.Tensor
    directed: bool
    features: Features
    raw_features: sp.csr_matrix | np.ndarray
    y: torch.Tensor | None = None
    warnings: list[str] = field(default_factory=list)
    edge_weight: torch.Tensor | None = None
    edge_attr: torch.Tensor | None = None

    def __post_init__(self) -> None:
        self.edge_index = edge_list(self.edge_index, self.edge_weight, self.edge_attr)

    @property
    def edge_dim(self) -> int | None:
        """The width D of ``edge_attr`` (``None`` without edge features)."""
        return None if self.edge_attr is None else int(self.edge_attr.shape[1])

    @property
    def num_features(self) -> int:
        return int(self.features.shape[1])

    @property
    def undirected_edges(self) -> torch.Tensor:
        row, col = self.edge_index
        return self.edge_index[:, row < col]

    def fingerprint(self) -> str:
        """A digest of the graph as trained on — node count, direction, edges and raw feature values — so a
        training checkpoint can tell the graph it was made on from any other."""
        digest = hashlib.blake2b(digest_size=16)
        digest.update(f"{self.num_nodes},{self.directed},{self.edge_index.shape[1]}".encode())
        flat = self.edge_index.cpu().reshape(-1)
        for start in range(0, flat.numel(), _DIGEST_CHUNK):  # the bytes of int64 ids, whatever the dtype kept
            digest.update(flat[start : start + _DIGEST_CHUNK].long().numpy().tobytes())
        raw = self.raw_features
        parts = (raw.indptr, raw.indices, raw.data) if sp.issparse(raw) else (np.ascontiguousarray(raw),)
        digest.update(str(raw.shape).encode())
        for part in parts:
            digest.update(np.ascontiguousarray(part).tobytes())
        for name, values in (("edge_weight", self.edge_weight), ("edge_attr", self.edge_attr)):
            if values is not None:  # only when present: an unweighted graph's digest is of its edges and features
                digest.update(f"{name}{tuple(values.shape)}{values.dtype}".encode())
                digest.update(values.detach().cpu().contiguous().numpy().tobytes())
        return digest.hexdigest()

    def to(self, device: torch.device | str) -> Graph:
        """The same graph with its tensors on ``device`` (``raw_features`` stay on the CPU)."""
        return Graph(
            num_nodes=self.num_nodes,
            edge_index=self.edge_index.to(device),
            directed=self.directed,
            features=self.features.to(device),
            raw_features=self.raw_features,
            y=None if self.y is None else self.y.to(device),
            warnings=list(self.warnings),
            edge_weight=None if self.edge_weight is None else self.edge_weight.to(device),
            edge_attr=None if self.edge_attr is None else self.edge_attr.to(device),
        )


def prepare_graph(data: Data, directed: bool | None = None, feature_norm: str = "none") -> Graph:
    """Validate ``data`` and build a :class:`Graph` by the cleaning rules of this module's docstring.

    Parameters
    ----------
    data
        A homogeneous PyG ``Data`` with ``x`` (a non-empty 2-D dense or sparse matrix) and ``edge_index`` (``[2, E]``);
        optionally ``edge_weight`` (``[E]``), ``edge_attr`` (``[E, D]``) and ``y``.
    directed
        ``None``: undirected exactly when every edge has its reverse; ``False``: undirected, an edge listed one way gets
        its reverse (with its weight and features), so listing each edge once and listing both directions give the same
        graph; ``True``: directed as given.
    feature_norm
        ``"row"``: the encoder's input rows scaled to sum 1 in absolute value (all-zero rows stay zero,
        :func:`~gca.graph.features.normalize_rows`); ``"none"``: as given.

    Returns
    -------
    Graph
        The cleaned graph; ``data`` is not changed.
    """
    if feature_norm not in ("row", "none"):
        raise GraphError(f"feature_norm must be 'row' or 'none', got {feature_norm!r}")
    if type(data).__name__ == "HeteroData":
        raise GraphError(
            "GCA trains on one node and one edge type: give a homogeneous Data (for a HeteroData, "
            "data.to_homogeneous() or one node type's subgraph)"
        )
    if not (hasattr(data, "x") and hasattr(data, "edge_index")):
        raise GraphError(f"GCA trains on a torch_geometric.data.Data (x and edge_index), got {type(data).__name__}")
    if data.x is None:
        raise GraphError("the graph has no node features (data.x is None); pass a feature matrix")
    x = data.x
    num_nodes = int(x.shape[0])
    if x.dim() != 2 or num_nodes == 0 or x.shape[1] == 0:
        raise GraphError(f"node features must be a non-empty 2-D matrix, got shape {tuple(x.shape)}")
    if data.num_nodes is not None and int(data.num_nodes) != num_nodes:
        raise GraphError(f"the graph has {int(data.num_nodes)} nodes but {num_nodes} feature rows")
    values = x.coalesce().values() if x.is_sparse else x
    if not all(bool(torch.isfinite(block).all()) for block in values.split(ROW_BLOCK)):  # no N × F temporary
        raise GraphError("node features contain NaN or infinite values; clean or impute them first")

    edge_index = data.edge_index if data.edge_index is not None else torch.empty(2, 0, dtype=torch.long)
    if edge_index.dim() != 2 or edge_index.shape[0] != 2:
        raise GraphError(f"edge_index must have shape [2, E], got {tuple(edge_index.shape)}")
    edge_index = edge_index.cpu()
    if edge_index.is_floating_point() and not bool((edge_index == edge_index.round()).all()):  # NaN too
        raise GraphError("edge_index holds ids that are not whole numbers; give the node ids as integers")
    if edge_index.is_floating_point() or edge_index.is_complex():
        edge_index = edge_index.long()
    if edge_index.numel() and (edge_index.min() < 0 or edge_index.max() >= num_nodes):
        raise GraphError(
            f"edge ids must lie in [0, {num_nodes - 1}] for {num_nodes} nodes; found ids in "
            f"[{int(edge_index.min())}, {int(edge_index.max())}]"
        )
    weight = _edge_weight(data, edge_index.shape[1])
    attr = _edge_attr(data, edge_index.shape[1])
    if weight is not None or attr is not None:
        return _prepare_weighted(data, x, num_nodes, edge_index, weight, attr, directed, feature_norm)
    edge_index = edge_index.to(index_dtype(num_nodes))  # compact from here on: the caller's copy can go
    warnings: list[str] = []
    num_raw = edge_index.shape[1]
    symmetric = known_symmetric(edge_index, num_nodes)
    loops = edge_index[0] == edge_index[1]
    without_loops = edge_index[:, ~loops] if bool(loops.any()) else edge_index
    del loops
    if symmetric and without_loops is not edge_index:  # a symmetric list without its loops is still symmetric
        remember_symmetric(without_loops, num_nodes)
    if without_loops.shape[1] < num_raw:
        warnings.append(f"removed {num_raw - without_loops.shape[1]} self-loops (GCN adds its own)")
    edge_index = (
        without_loops
        if _is_coalesced(without_loops, num_nodes)
        else coalesce(without_loops.long(), num_nodes=num_nodes).to(without_loops.dtype)
    )  # PyG sorts 64-bit keys
    one_way = directed is False and not _is_symmetric(edge_index, num_nodes)
    if directed is None:
        directed = not _is_symmetric(edge_index, num_nodes)
    if edge_index.shape[1] < without_loops.shape[1]:
        # On an undirected graph an edge is one pair in both directions: count duplicate pairs, not directed copies
        # (listed one way, a repeat is the same ordered pair listed again, as the file loaders count it).
        if directed or one_way:
            merged = without_loops.shape[1] - edge_index.shape[1]
        else:
            merged = int((without_loops[0] < without_loops[1]).sum() - (edge_index[0] < edge_index[1]).sum())
        warnings.append(f"merged {merged} duplicate edge{'s' if merged != 1 else ''}")
    if one_way:
        edge_index, _ = _mirrored(edge_index, num_nodes, [])
    isolated = num_nodes - int(_nodes_with_edges(edge_index, num_nodes).sum())
    if isolated:
        warnings.append(
            f"{isolated} of {num_nodes} nodes have no edges; they are embedded from their own features only"
        )
    return _finish(data, x, num_nodes, edge_index, bool(directed), feature_norm, warnings)


def _nodes_with_edges(edge_index: torch.Tensor, num_nodes: int) -> torch.Tensor:
    """[N] bool: which nodes are an end of some edge, read :data:`~gca.graph.features.ROW_BLOCK` · 64 edges at a time
    (no 64-bit copy of the edge list)."""
    seen = torch.zeros(num_nodes, dtype=torch.bool, device=edge_index.device)
    for block in edge_index.split(ROW_BLOCK * 64, dim=1):  # int32 or int64 indices as they are
        seen[block[0]] = True
        seen[block[1]] = True
    return seen


def _finish(
    data: Data,
    x: torch.Tensor,
    num_nodes: int,
    edge_index: torch.Tensor,
    directed: bool,
    feature_norm: str,
    warnings: list[str],
    weight: torch.Tensor | None = None,
    attr: torch.Tensor | None = None,
) -> Graph:
    """Labels and features checked and formed; the :class:`Graph`."""
    y = data.y if getattr(data, "y", None) is not None else None
    if y is not None and y.shape[0] != num_nodes:
        raise GraphError(f"the graph has {num_nodes} nodes but {y.shape[0]} labels")

    features, raw_features = feature_forms(x, feature_norm)
    zero_columns = int((~nonzero_columns(raw_features)).sum())
    if zero_columns:
        warnings.append(
            f"{zero_columns} of {x.shape[1]} feature columns are zero for every node; they carry no information"
        )  # (training masks them with the cap p_tau: docs/method.md; the line says nothing of masking, as
        # gca embed prints it too)
    return Graph(num_nodes, edge_index, bool(directed), features, raw_features, y, warnings, weight, attr)


def _edge_weight(data: Data, count: int) -> torch.Tensor | None:
    """``data.edge_weight`` checked (module docstring) as float64 on the CPU (merged so; kept as float32), or
    ``None``."""
    weight = getattr(data, "edge_weight", None)
    if weight is None:
        return None
    if not isinstance(weight, torch.Tensor):
        raise GraphError(f"edge_weight must be a tensor of shape [{count}], got a {type(weight).__name__}")
    if weight.dim() != 1 or weight.shape[0] != count:
        raise GraphError(
            f"edge_weight must have shape [{count}] (one weight per edge of edge_index), got {tuple(weight.shape)}"
        )
    if weight.is_complex() or weight.dtype == torch.bool:
        raise GraphError(f"edge_weight must hold real numbers, got dtype {weight.dtype}")
    weight = weight.detach().cpu().to(torch.float64)
    bad = ~torch.isfinite(weight)
    if bool(bad.any()):
        first = int(bad.nonzero()[0])
        raise GraphError(
            f"edge_weight holds {int(bad.sum())} NaN or infinite values (first at edge {first}: "
            f"{float(weight[first])}); clean them first"
        )
    if bool((weight < 0).any()):
        first = int((weight < 0).nonzero()[0])
        raise GraphError(
            f"edge_weight holds {int((weight < 0).sum())} negative values (first at edge {first}: "
            f"{float(weight[first]):g}); GCN weights must be non-negative"
        )
    overflow = torch.isinf(weight.to(torch.float32))  # finite here, infinite in the float32 the GCN uses
    if bool(overflow.any()):
        first = int(overflow.nonzero()[0])
        raise GraphError(
            f"edge_weight holds {int(overflow.sum())} values beyond float32's range (first at edge "
            f"{first}: {float(weight[first]):g}, the largest float32 is "
            f"{torch.finfo(torch.float32).max:.4g}); rescale edge_weight"
        )
    return weight


def _edge_attr(data: Data, count: int) -> torch.Tensor | None:
    """``data.edge_attr`` checked (module docstring) as [E, D] on the CPU, or ``None``."""
    attr = getattr(data, "edge_attr", None)
    if attr is None:
        return None
    if not isinstance(attr, torch.Tensor):
        raise GraphError(f"edge_attr must be a tensor of shape [{count}, D], got a {type(attr).__name__}")
    if attr.dim() not in (1, 2) or attr.shape[0] != count or (attr.dim() == 2 and attr.shape[1] == 0):
        raise GraphError(
            f"edge_attr must have shape [{count}, D] or [{count}] (one row per edge of edge_index), "
            f"got {tuple(attr.shape)}"
        )
    if attr.is_complex():
        raise GraphError(f"edge_attr must hold real numbers, got dtype {attr.dtype}")
    attr = attr.detach().cpu()
    attr = attr.unsqueeze(1) if attr.dim() == 1 else attr
    attr = attr.to(torch.float32) if attr.dtype == torch.bool else attr
    if attr.is_floating_point() and not bool(torch.isfinite(attr).all()):
        raise GraphError("edge_attr holds NaN or infinite values; clean or impute them first")
    return attr


def _prepare_weighted(
    data: Data,
    x: torch.Tensor,
    num_nodes: int,
    edge_index: torch.Tensor,
    weight: torch.Tensor | None,
    attr: torch.Tensor | None,
    directed: bool | None,
    feature_norm: str,
) -> Graph:
    """:func:`prepare_graph` for a graph with edge weights or features: the same cleaning, with every edge's values
    dropped, merged (summed) and checked alongside it (module docstring)."""
    warnings: list[str] = []
    edge_index = edge_index.long()
    keep = edge_index[0] != edge_index[1]
    loops = int((~keep).sum())
    if loops:
        edge_index = edge_index[:, keep]
        weight = None if weight is None else weight[keep]
        attr = None if attr is None else attr[keep]
        warnings.append(f"removed {loops} self-loops with their weights (GCN adds its own, of weight 1)")
    num_kept = edge_index.shape[1]
    values = [
        v
        for v in (weight, attr.to(torch.float64) if attr is not None and attr.is_floating_point() else attr)
        if v is not None
    ]
    merged_index, merged = coalesce(edge_index, values, num_nodes=num_nodes, reduce="sum")
    merged = list(merged)
    new_weight = merged.pop(0) if weight is not None else None
    new_attr = merged.pop(0) if attr is not None else None
    one_way = directed is False and not _is_symmetric(merged_index, num_nodes)
    if directed is None:
        directed = not _is_symmetric(merged_index, num_nodes)
    if merged_index.shape[1] < num_kept:
        if directed or one_way:
            count = num_kept - merged_index.shape[1]
        else:
            count = int((edge_index[0] < edge_index[1]).sum() - (merged_index[0] < merged_index[1]).sum())
        warnings.append(
            f"merged {count} duplicate edge{'s' if count != 1 else ''} (their weights and edge features summed)"
        )
    if one_way:
        present = [v for v in (new_weight, new_attr) if v is not None]
        merged_index, mirrored = _mirrored(merged_index, num_nodes, present)
        new_weight = mirrored.pop(0) if new_weight is not None else None
        new_attr = mirrored.pop(0) if new_attr is not None else None
    if new_weight is not None and not bool(torch.isfinite(new_weight.to(torch.float32)).all()):
        raise GraphError("merged duplicate edges' weights overflow float32; rescale edge_weight")
    if not directed:
        _check_symmetric_values(merged_index, num_nodes, new_weight, new_attr)
    isolated = num_nodes - int((torch.bincount(merged_index.reshape(-1), minlength=num_nodes) > 0).sum())
    if isolated:
        warnings.append(
            f"{isolated} of {num_nodes} nodes have no edges; they are embedded from their own features only"
        )
    new_weight = None if new_weight is None else new_weight.to(torch.float32)
    if new_attr is not None and attr is not None and new_attr.dtype != attr.dtype:
        new_attr = new_attr.to(attr.dtype)
    index = merged_index.to(index_dtype(num_nodes))
    return _finish(data, x, num_nodes, index, bool(directed), feature_norm, warnings, new_weight, new_attr)


def _mirrored(
    edge_index: torch.Tensor, num_nodes: int, values: list[torch.Tensor]
) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """Both directions of every edge of a coalesced, loop-free ``edge_index`` declared undirected whose edges are listed
    one way (some or all), built as the file loaders build theirs (:func:`gca.graph.edges.undirected_edges`); each of
    ``values`` ([E, …], a row per edge) follows: a listed edge keeps its own row, an added reverse takes the row of the
    edge it mirrors. An edge listed both ways keeps both rows (their equality is checked afterwards)."""
    pairs = edge_index.numpy()
    both = undirected_edges(lambda: [(pairs[0], pairs[1])], num_nodes, pairs.shape[1]).edge_index
    if not values:
        return both, []
    keys = edge_index[0].long() * num_nodes + edge_index[1].long()  # sorted: edge_index is coalesced
    wanted = both[0].long() * num_nodes + both[1].long()
    position = torch.searchsorted(keys, wanted).clamp_(max=keys.numel() - 1)
    listed = keys[position] == wanted
    reverse = torch.searchsorted(keys, both[1].long() * num_nodes + both[0].long()).clamp_(max=keys.numel() - 1)
    position = torch.where(listed, position, reverse)
    return both, [v[position] for v in values]


def _check_symmetric_values(
    edge_index: torch.Tensor, num_nodes: int, weight: torch.Tensor | None, attr: torch.Tensor | None
) -> None:
    """Refuse an undirected graph whose edge (u, v) and its reverse (v, u) carry different weights or features."""
    source, target = edge_index
    keys = source * num_nodes + target  # sorted: edge_index is coalesced
    reverse = target * num_nodes + source
    position = torch.searchsorted(keys, reverse).clamp_(max=max(keys.numel() - 1, 0))
    found = keys[position] == reverse if keys.numel() else torch.zeros(0, dtype=torch.bool)
    for name, values in (("weight", weight), ("edge_attr", attr)):
        if values is None:
            continue
        own, other = values[found], values[position[found]]
        differ = own != other if own.dim() == 1 else (own != other).any(1)
        if bool(differ.any()):
            at = int(found.nonzero()[differ.nonzero()[0]])
            u, v = int(source[at]), int(target[at])
            shown = (
                f"{float(values[at]):g} but ({v}, {u}) has {float(values[position[at]]):g}"
                if own.dim() == 1
                else f"a row that differs from ({v}, {u})'s"
            )
            raise GraphError(
                f"the graph is undirected but {int(differ.sum()) // 2 or 1} edges carry a different "
                f"{name} in each direction, e.g. ({u}, {v}) has {shown}; give both directions the same "
                f"{name}, or pass directed=True"
            )
