"""Frozen embeddings of a trained model: :func:`encode_graph` embeds the whole graph (no augmentation, eval mode, no
autograd), in blocks of rows on a graph larger than :func:`inference_rows` — out of core on the CPU, shared by the
processes of a torchrun run."""

from __future__ import annotations

import contextlib
from pathlib import Path

import torch

from .. import environment
from ..graph.features import dense_input
from ..graph.graph import Graph
from ..graph.sparse import AdjacencyRows, normalized_adjacency
from ..mapped import DiskArrays
from ..nn.gcn import InferenceShare
from ..nn.model import GCAModel
from ..progress import phase

#: Inference processes graphs larger than this many nodes in chunks of this many rows (see :func:`encode_graph`);
#: ``GCA_INFERENCE_ROWS`` sets another number (fewer rows: less memory per block, more blocks).
INFERENCE_CHUNK_ROWS = 65_536


def inference_rows() -> int:
    """The rows of a block of inference: :data:`INFERENCE_CHUNK_ROWS`, or ``GCA_INFERENCE_ROWS`` where set."""
    return environment.env_int("GCA_INFERENCE_ROWS", INFERENCE_CHUNK_ROWS, 1, note=" (the rows of an inference block)")


def in_blocks(model: GCAModel, num_nodes: int, chunk_rows: int | None = None) -> bool:
    """Whether :func:`encode_graph` embeds a graph of ``num_nodes`` nodes in blocks of ``chunk_rows`` rows
    (``None``: :func:`inference_rows`), and so, under torchrun, shares the rows among the processes."""
    rows = inference_rows() if chunk_rows is None else chunk_rows
    return not model.takes_edge_index and rows > 0 and num_nodes > rows and hasattr(model.encoder, "forward_in_chunks")


@torch.no_grad()
def encode_graph(
    model: GCAModel,
    graph: Graph,
    chunk_rows: int | None = None,
    out: str | Path | None = None,
    share: InferenceShare | None = None,
    scratch: str | Path | None = None,
    progress: bool = False,
) -> torch.Tensor | None:
    """Frozen embeddings H = f(X, A) of ``graph`` (no augmentation, eval mode, no autograd), on the model's device.

    A graph of more than ``chunk_rows`` nodes is embedded over blocks of rows
    (:meth:`gca.nn.gcn.GCNEncoder.forward_in_chunks`; an undirected graph's operator built block by block,
    :class:`gca.graph.sparse.AdjacencyRows`), so memory stays about two N × hidden matrices beside the graph; a small
    graph, or one of an encoder without blocks, is embedded whole, by every process.

    Parameters
    ----------
    model
        The trained model (set to eval mode here).
    graph
        The cleaned graph, on the model's device.
    chunk_rows
        The rows of a block; ``None`` for :func:`inference_rows`.
    out
        A new ``.npy`` path, written only when embedding in blocks on the CPU (:class:`gca.mapped.DiskArrays`: each
        layer's output a scratch file, the embeddings this file, block by block); ``None``: in memory.
    share
        Under torchrun, this process's rows of every layer, embedded together with the other processes
        (:meth:`gca.train.distributed.Placement.row_share`); ``None`` for one process.
    scratch
        The folder a process without ``out`` maps its matrices in on the CPU, reserving only its own rows of the
        embeddings (where it cannot be made, they stay in memory); ``None``: in memory.
    progress
        Show the rows embedded, layer after layer, on stderr once inference by blocks has run a few seconds.

    Returns
    -------
    torch.Tensor | None
        ``[N, hidden]`` embeddings (the mapping of ``out`` when it was written); ``None`` on a torchrun process
        other than rank 0 when the processes embedded together.
    """
    model.eval()
    if model.takes_edge_index:
        return model.encode(graph.features, graph.edge_index, graph.num_nodes).detach()
    encoder = model.encoder
    chunk_rows = inference_rows() if chunk_rows is None else chunk_rows
    if in_blocks(model, graph.num_nodes, chunk_rows):
        rows = (
            AdjacencyRows(graph.edge_index, graph.num_nodes)
            if not graph.directed
            else normalized_adjacency(graph.edge_index, graph.num_nodes, symmetric=False, coalesced=True)
        )
        disk = None
        if model_device(model).type == "cpu" and out is not None:
            disk = DiskArrays(out)
        elif model_device(model).type == "cpu" and share is not None and scratch is not None and _made(scratch):
            disk = DiskArrays(None, scratch, final_rows=share.row_range(graph.num_nodes))
        start, stop = share.row_range(graph.num_nodes) if share is not None else (0, graph.num_nodes)
        layers = len(encoder.layers)
        with contextlib.closing(
            phase(layers * (stop - start), f"embed ({layers} layers)", "row", enabled=progress)
        ) as bar:
            embeddings = encoder.forward_in_chunks(
                graph.features, rows, chunk_rows, allocate=disk, share=share, on_rows=bar.update
            )
        if disk is not None and embeddings is not None:
            disk.flush()
        return embeddings
    adjacency = normalized_adjacency(graph.edge_index, graph.num_nodes, symmetric=not graph.directed, coalesced=True)
    return model(dense_input(graph.features), adjacency).detach()


def _made(folder: str | Path) -> bool:
    """Whether ``folder`` exists or could be made (a scratch folder that cannot be: the matrices stay in memory)."""
    try:
        Path(folder).mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return True


def model_device(model: torch.nn.Module) -> torch.device:
    """Where ``model``'s parameters lie (the CPU for a model without any)."""
    return next((p.device for p in model.parameters()), torch.device("cpu"))
