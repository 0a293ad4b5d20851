"""Graph files in the gnn-benchmark npz layout (``adj_*`` and ``attr_*`` CSR arrays, optional ``labels``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import scipy.sparse as sp
import torch
from torch_geometric.data import Data

from .base import DatasetError, class_labels, edge_list, float32_features, repeated_edges_warning


def read_npz_graph(path: str | Path, directed: bool = False) -> Data:
    """A graph in the gnn-benchmark npz layout (``adj_*``, ``attr_*`` CSR arrays, optional ``labels``).

    Features stay sparse and keep their values. Unless ``directed``, edges are made undirected (as the
    Amazon/Coauthor files are used in the paper): an edge listed in both directions is one edge.
    """
    return read_npz(Path(path), directed)[0]


def read_npz(path: Path, directed: bool) -> tuple[Data, list[str]]:
    if not path.is_file():
        raise DatasetError(f"graph file {path} does not exist")
    try:
        with np.load(path, allow_pickle=False) as f:
            arrays = {k: f[k] for k in f.files if k not in ("node_names", "attr_names", "class_names", "idx_to_node")}
    except Exception as exc:  # noqa: BLE001 - any unreadable file is the same user error
        raise DatasetError(f"cannot read {path} as an .npz graph file ({type(exc).__name__}: {exc})") from None
    try:
        adj = sp.csr_matrix(
            (arrays["adj_data"], arrays["adj_indices"], arrays["adj_indptr"]), shape=tuple(arrays["adj_shape"])
        )
        if "attr_data" in arrays:
            attr = sp.csr_matrix(
                (arrays["attr_data"], arrays["attr_indices"], arrays["attr_indptr"]),
                shape=tuple(arrays["attr_shape"]),
            )
        elif "attr_matrix" in arrays:
            attr = np.asarray(arrays.pop("attr_matrix"))  # dense features stay dense
            if attr.ndim != 2:
                raise ValueError(f"attr_matrix must be 2-D, got shape {attr.shape}")
        else:
            raise KeyError("attr_data")
        adj.check_format(full_check=True)  # indices inside the shape, monotone index pointers
        if sp.issparse(attr):
            attr.check_format(full_check=True)
    except KeyError as exc:
        raise DatasetError(
            f"{path} lacks the array {exc.args[0]!r}: an npz graph needs adj_data/adj_indices/adj_indptr/adj_shape "
            "and attr_data/attr_indices/attr_indptr/attr_shape (or attr_matrix)"
        ) from None
    except (ValueError, TypeError) as exc:
        raise DatasetError(f"{path} holds malformed sparse arrays: {exc}") from None
    if adj.shape[0] != adj.shape[1] or adj.shape[0] != attr.shape[0]:
        raise DatasetError(f"{path}: adjacency {adj.shape} and features {attr.shape} do not describe the same nodes")
    coo = adj.tocoo()
    del adj, arrays["adj_data"], arrays["adj_indices"]
    edge_index, repeated = edge_list(coo.row, coo.col, coo.shape[0], directed)
    num_nodes = coo.shape[0]
    del coo
    if sp.issparse(attr):
        attr = attr.tocoo()
        attr.sum_duplicates()
        attr.data = float32_features(attr.data, path)
        x = torch.sparse_coo_tensor(
            torch.from_numpy(np.vstack([attr.row, attr.col]).astype(np.int64)),
            torch.from_numpy(attr.data.astype(np.float32)),
            size=attr.shape,
            check_invariants=True,
        ).coalesce()
    else:
        x = torch.from_numpy(np.ascontiguousarray(float32_features(attr, path)))
    data = Data(x=x, edge_index=edge_index, num_nodes=num_nodes)
    notes = [repeated_edges_warning(path, repeated)] if repeated else []
    if "labels" in arrays:
        data.y, label_notes = class_labels(arrays["labels"], path, num_nodes)
        notes += label_notes
    return data, notes
