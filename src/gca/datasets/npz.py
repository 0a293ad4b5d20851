"""Graph files in the gnn-benchmark npz layout (``adj_*`` and ``attr_*`` CSR arrays, optional ``labels``): the
adjacency's values are edge weights unless all are 1, and a stored (``numpy.savez``) ``attr_matrix`` is read through
a copy-on-write memory map (:func:`mapped_member`), compressed files whole."""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np
import scipy.sparse as sp
import torch
from torch_geometric.data import Data

from ..graph.edges import (
    checked_edge_weights,
    csr_blocks,
    listed_edges,
    repeated_edges_warning,
    undirected_edges,
    weighted_listed_edges,
)
from .base import DatasetError, class_labels, float32_features, stored_features

#: Members mapped from the file when stored uncompressed (:func:`mapped_member`).
MAPPED = ("attr_matrix", "adj_data", "adj_indices", "adj_indptr")
#: .npy format versions whose header gca reads, with NumPy's reader of each (``numpy.save`` writes 1.0, or 2.0 for
#: a header over 64 KiB; 3.0 only for structured arrays with non-Latin-1 field names, which gca does not read).
NPY_VERSIONS = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}


def mapped_member(path: Path, name: str) -> np.ndarray | None:
    """The ``name`` array (without ``.npy``) of an .npz file as a copy-on-write memory map; ``None`` where it cannot be
    mapped (no such member, a compressed one, a header other than .npy format 1.0/2.0)."""
    try:
        with zipfile.ZipFile(path) as archive:
            info = archive.getinfo(f"{name}.npy")
    except (KeyError, zipfile.BadZipFile, OSError):
        return None
    if info.compress_type != zipfile.ZIP_STORED:
        return None
    with path.open("rb") as f:
        f.seek(info.header_offset)
        local = f.read(30)  # the member's local header: its name and extra field lengths at bytes 26-29
        if len(local) < 30 or local[:4] != b"PK\x03\x04":
            return None
        name_length, extra_length = int.from_bytes(local[26:28], "little"), int.from_bytes(local[28:30], "little")
        f.seek(info.header_offset + 30 + name_length + extra_length)
        try:  # numpy.load reads an archive's members whole: a member is mapped from its header's offset
            read = NPY_VERSIONS.get(np.lib.format.read_magic(f))
            if read is None:
                return None
            shape, fortran, dtype = read(f)
        except ValueError:
            return None
        offset = f.tell()
    if dtype.hasobject or offset + int(np.prod(shape)) * dtype.itemsize > path.stat().st_size:
        return None
    return np.memmap(path, dtype=dtype, mode="c", shape=shape, order="F" if fortran else "C", offset=offset)


def read_npz_graph(path: str | Path, directed: bool = False) -> Data:
    """A graph in the gnn-benchmark npz layout (``adj_*``, ``attr_*`` CSR arrays, optional ``labels``).

    Features stay sparse and keep their values. The adjacency's values are the edges' weights, checked and merged as
    an edge file's weight column is (:func:`~gca.graph.edges.weighted_listed_edges`); all 1 — the Amazon/Coauthor
    files' — is unweighted.

    Parameters
    ----------
    path
        An ``.npz`` file in that layout; a missing or malformed file is a :class:`~gca.datasets.base.DatasetError`.
    directed
        Keep the edges as listed; ``False`` reads the graph as undirected (as the paper uses the Amazon/Coauthor
        files): an edge listed in both directions is one edge.

    Returns
    -------
    Data
        ``x`` (sparse or dense, as stored), ``edge_index``, ``edge_weight`` where the adjacency holds weights other
        than 1, and ``y`` where the file has labels.
    """
    return read_npz(Path(path), directed)[0]


def read_npz(path: Path, directed: bool) -> tuple[Data, list[str]]:
    if not path.is_file():
        raise DatasetError(f"graph file {path} does not exist")
    try:
        # members stored uncompressed are mapped, not read: dense features and the adjacency's arrays
        mapped = {name: member for name in MAPPED if (member := mapped_member(path, name)) is not None}
        skip = {"node_names", "attr_names", "class_names", "idx_to_node", *mapped}
        with np.load(path, allow_pickle=False) as f:
            arrays = {k: f[k] for k in f.files if k not in skip}
        arrays.update(mapped)
    except Exception as exc:  # noqa: BLE001 - any unreadable file is the same user error
        raise DatasetError(f"cannot read {path} as an .npz graph file ({type(exc).__name__}: {exc})") from None
    try:
        adj = sp.csr_matrix(
            (arrays["adj_data"], arrays["adj_indices"], arrays["adj_indptr"]), shape=tuple(arrays["adj_shape"])
        )
        if "attr_data" in arrays:
            attr = sp.csr_matrix(
                (arrays["attr_data"], arrays["attr_indices"], arrays["attr_indptr"]), shape=tuple(arrays["attr_shape"])
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
    num_nodes = adj.shape[0]

    def entry(i: int) -> str:
        return f"the adjacency entry at row {int(np.searchsorted(adj.indptr, i, 'right')) - 1}, column {adj.indices[i]}"

    weight = checked_edge_weights(adj.data, path, entry)  # adj_data
    edge_weight = None
    if weight is not None:  # the values are the edges' weights, checked and merged as edge files' are
        rows = np.repeat(np.arange(num_nodes, dtype=np.int64), np.diff(adj.indptr))
        edge_index, edge_weight, repeated = weighted_listed_edges(
            rows,
            adj.indices,
            weight,
            num_nodes,
            directed,
            path,
            entry,
            "give both directions the same value in adj_data (1 everywhere for an unweighted graph; a matrix built "
            "from an edge list with repeats holds their counts)",
        )
        del adj, rows, weight, arrays["adj_data"], arrays["adj_indices"]
    elif directed:
        coo = adj.tocoo()
        del adj, arrays["adj_data"], arrays["adj_indices"]
        edge_index, repeated = listed_edges(coo.row, coo.col, num_nodes, directed)
        del coo
    else:  # read a block of rows at a time: no row array, no 64-bit edge list
        edge_index, repeated, _ = undirected_edges(csr_blocks(adj.indptr, adj.indices), num_nodes, adj.nnz)
        del adj, arrays["adj_data"], arrays["adj_indices"]
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
        x = torch.from_numpy(np.ascontiguousarray(stored_features(attr, path)))
    data = Data(x=x, edge_index=edge_index, num_nodes=num_nodes)
    if edge_weight is not None:
        data.edge_weight = edge_weight
    notes = [repeated_edges_warning(path, repeated, edge_weight is not None)] if repeated else []
    if "labels" in arrays:
        data.y, label_notes = class_labels(arrays["labels"], path, num_nodes)
        notes += label_notes
    return data, notes
