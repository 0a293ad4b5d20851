"""The checked graph: :func:`prepare_graph` turns a PyTorch Geometric ``Data`` object into the :class:`Graph` that
training uses — edges coalesced, self-loops dropped, features in their form (:mod:`.features`) — once per graph.
Nothing here is specific to one view; each view's operator is built from the graph's edges (:mod:`.sparse`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
import torch
from torch_geometric.data import Data
from torch_geometric.utils import coalesce, remove_self_loops

from ..errors import UserError
from .features import Features, feature_forms, nonzero_columns
from .sparse import _is_coalesced, _is_symmetric, index_dtype


class GraphError(UserError, ValueError):
    """The input graph cannot be used; the message is one line meant for the user."""


#: Edge ids hashed at a time by :meth:`Graph.fingerprint` (as int64, so a digest never depends on the dtype kept).
_DIGEST_CHUNK = 1 << 24


@dataclass
class Graph:
    """A cleaned graph ready for GCA.

    ``edge_index`` is coalesced and free of self-loops, in :func:`~gca.graph.sparse.index_dtype` (int32 below 2³¹ nodes;
    operators built from it index in int64). On undirected graphs it holds both directions of every edge, sorted by
    source — the CSR of A that the sampler and inference read without a copy — and ``undirected_edges`` holds each edge
    once as (u, v) with u < v — the unit that topology augmentation keeps or removes. ``features`` is a
    :class:`~gca.graph.sparse.SparseMatrix` (sparse bag-of-words data), a dense tensor, or dense rows normalised as they
    are read (:class:`~gca.graph.features.RowNormalizedFeatures`; :func:`~gca.graph.features.dense_input` and
    :func:`~gca.graph.features.read_rows` take any of the three).
    """

    num_nodes: int
    edge_index: torch.Tensor
    directed: bool
    features: Features
    raw_features: sp.csr_matrix | np.ndarray
    y: torch.Tensor | None = None
    warnings: list[str] = field(default_factory=list)

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
        return digest.hexdigest()

    def to(self, device: torch.device | str) -> Graph:
        return Graph(
            num_nodes=self.num_nodes,
            edge_index=self.edge_index.to(device),
            directed=self.directed,
            features=self.features.to(device),
            raw_features=self.raw_features,
            y=None if self.y is None else self.y.to(device),
            warnings=list(self.warnings),
        )


def prepare_graph(data: Data, directed: bool | None = None, feature_norm: str = "none") -> Graph:
    """Validate ``data`` and build a :class:`Graph`.

    ``directed=None`` treats the graph as undirected exactly when every edge has its reverse. Duplicate edges and
    self-loops are removed (GCN adds its own self-loops) and reported in ``Graph.warnings``; NaN/inf features,
    out-of-range edge ids and size mismatches raise :class:`GraphError`. ``feature_norm="row"`` scales each row of
    the encoder's input to sum to 1 in absolute value (all-zero rows stay zero,
    :func:`~gca.graph.features.normalize_rows`);
    ``raw_features`` keeps the raw values, from which the feature weights w_i of the augmentation are computed.
    """
    if feature_norm not in ("row", "none"):
        raise GraphError(f"feature_norm must be 'row' or 'none', got {feature_norm!r}")
    if data.x is None:
        raise GraphError("the graph has no node features (data.x is None); pass a feature matrix")
    x = data.x
    num_nodes = int(x.shape[0])
    if x.dim() != 2 or num_nodes == 0 or x.shape[1] == 0:
        raise GraphError(f"node features must be a non-empty 2-D matrix, got shape {tuple(x.shape)}")
    if data.num_nodes is not None and int(data.num_nodes) != num_nodes:
        raise GraphError(f"the graph has {int(data.num_nodes)} nodes but {num_nodes} feature rows")
    values = x.coalesce().values() if x.is_sparse else x
    if not torch.isfinite(values).all():
        raise GraphError("node features contain NaN or infinite values; clean or impute them first")

    edge_index = data.edge_index if data.edge_index is not None else torch.empty(2, 0, dtype=torch.long)
    if edge_index.dim() != 2 or edge_index.shape[0] != 2:
        raise GraphError(f"edge_index must have shape [2, E], got {tuple(edge_index.shape)}")
    edge_index = edge_index.cpu()
    if edge_index.is_floating_point() or edge_index.is_complex():
        edge_index = edge_index.long()
    if edge_index.numel() and (edge_index.min() < 0 or edge_index.max() >= num_nodes):
        raise GraphError(
            f"edge ids must lie in [0, {num_nodes - 1}] for {num_nodes} nodes; found ids in "
            f"[{int(edge_index.min())}, {int(edge_index.max())}]"
        )
    edge_index = edge_index.to(index_dtype(num_nodes))  # compact from here on: the caller's copy can go
    warnings: list[str] = []
    num_raw = edge_index.shape[1]
    loops = edge_index[0] == edge_index[1]
    without_loops = remove_self_loops(edge_index)[0] if bool(loops.any()) else edge_index
    del loops
    if without_loops.shape[1] < num_raw:
        warnings.append(f"removed {num_raw - without_loops.shape[1]} self-loops (GCN adds its own)")
    edge_index = without_loops if _is_coalesced(without_loops, num_nodes) else coalesce(
        without_loops.long(), num_nodes=num_nodes).to(without_loops.dtype)  # PyG sorts 64-bit keys  # fmt: skip
    if directed is None:
        directed = not _is_symmetric(edge_index, num_nodes)
    if edge_index.shape[1] < without_loops.shape[1]:
        # On an undirected graph an edge is one pair in both directions: count duplicate pairs, not directed copies.
        if directed:
            merged = without_loops.shape[1] - edge_index.shape[1]
        else:
            merged = int((without_loops[0] < without_loops[1]).sum() - (edge_index[0] < edge_index[1]).sum())
        warnings.append(f"merged {merged} duplicate edge{'s' if merged != 1 else ''}")
    isolated = num_nodes - int((torch.bincount(edge_index.reshape(-1), minlength=num_nodes) > 0).sum())
    if isolated:
        warnings.append(
            f"{isolated} of {num_nodes} nodes have no edges; they are embedded from their own features only"
        )

    y = data.y if getattr(data, "y", None) is not None else None
    if y is not None and y.shape[0] != num_nodes:
        raise GraphError(f"the graph has {num_nodes} nodes but {y.shape[0]} labels")

    features, raw_features = feature_forms(x, feature_norm)
    zero_columns = int((~nonzero_columns(raw_features)).sum())
    if zero_columns:
        warnings.append(
            f"{zero_columns} of {x.shape[1]} feature columns are zero for every node; they carry no information "
            "(masking probability p_tau)"
        )
    return Graph(num_nodes, edge_index, bool(directed), features, raw_features, y, warnings)
