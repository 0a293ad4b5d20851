"""A researcher's own parts as PyTorch Geometric users write them: what works, and what is one clear error instead
of a silently wrong embedding or a traceback from inside the loop.

Every comparison is exact (CPU, fixed seeds); the graphs are Karate and hand-made ones."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch_geometric.data import Data
from torch_geometric.nn import GCNConv

from gca import GCA, GCAConfig
from gca.augment.prepared import prepare
from gca.datasets import karate_club
from gca.graph.graph import prepare_graph
from gca.graph.sparse import normalized_adjacency
from gca.nn.encoders import EncoderError
from gca.nn.gcn import GCNEncoder, ProjectionHead
from gca.nn.model import GCAModel
from gca.objective import ContrastiveObjective
from gca.train.batches import BatchSource
from gca.train.loop import TrainingError

CONFIG = GCAConfig(epochs=3, hidden=8, proj_hidden=8, seed=3)


class _Conv(nn.Module):
    def __init__(self, cached: bool = False) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.conv = GCNConv(34, 8, cached=cached)

    def forward(self, x, edge_index):
        return self.conv(x, edge_index).relu()


class _FirstGraph(nn.Module):
    """Keeps the number of nodes of the first graph it is called on, as a cache of the first graph would."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(34, 8)
        self.first_nodes: int | None = None

    def forward(self, x, edge_index):
        self.first_nodes = x.shape[0] if self.first_nodes is None else self.first_nodes
        return self.lin(x)


def test_a_cached_convolution_is_refused_and_the_check_leaves_the_encoder_as_it_was():
    """GCNConv(cached=True) would keep the first view's normalised edges for every view and for inference: refused
    in one line. The check before training runs on a copy, so what training's encoder first sees is the graph."""
    with pytest.raises(EncoderError, match=r"holds GCNConv\(cached=True\).*build it with cached=False"):
        GCA(CONFIG, device="cpu", encoder=_Conv(cached=True)).fit(karate_club())
    model = GCA(CONFIG, device="cpu", encoder=_FirstGraph()).fit(karate_club()).model
    assert model.encoder.first_nodes == 34  # not the check's 4 nodes


def test_transform_reads_a_data_as_the_prepared_graph_was_read():
    """A graph listed one way, prepared as undirected: transform of the same Data equals embedding_."""
    data = karate_club()
    row, col = data.edge_index
    one_way = Data(x=data.x, edge_index=data.edge_index[:, row < col])
    estimator = GCA(CONFIG, device="cpu")
    estimator.fit(prepare(one_way, CONFIG, directed=False))
    assert torch.equal(estimator.transform(one_way), estimator.embedding_)


def test_the_model_embeds_a_graph_given_as_an_edge_index_with_any_encoder():
    """model(x, edge_index), as PyTorch Geometric's models and its DGI example call them: gca's GCN gives what its
    normalised adjacency gives, a PyG encoder what encode gives."""
    graph = prepare_graph(karate_club())
    x = graph.features.to_dense() if hasattr(graph.features, "to_dense") else graph.features
    gcn = GCAModel(GCNEncoder(34, 8), ProjectionHead(8, 8), ContrastiveObjective(0.5))
    h = gcn(x, graph.edge_index)
    assert torch.equal(h, gcn(x, normalized_adjacency(graph.edge_index, 34, symmetric=False)))
    torch.testing.assert_close(h, gcn(x, normalized_adjacency(graph.edge_index, 34, symmetric=True)))
    pyg = GCAModel(_Conv(), ProjectionHead(8, 8), ContrastiveObjective(0.5))
    assert torch.equal(pyg(x, graph.edge_index), pyg.encode(x, graph.edge_index, 34))
    before = pyg.encoder.conv.lin.weight.detach().clone()
    pyg.reset_parameters()  # a user's encoder without reset_parameters: its children's
    assert not torch.equal(before, pyg.encoder.conv.lin.weight)


class _Returns(nn.Module):
    def __init__(self, what: str) -> None:
        super().__init__()
        self.what = what

    def forward(self, u, v):
        per_row = (u - v).pow(2).sum(1)
        return {
            "per-row": per_row,
            "float": float(per_row.mean()),
            "detached": per_row.mean().detach(),
            "nan": per_row.mean() * float("nan"),
        }[self.what]


@pytest.mark.parametrize(
    ("what", "message"),
    [
        ("per-row", r"objective _Returns returned a tensor of shape \(34,\), not a scalar loss autograd tracks"),
        ("float", r"objective _Returns returned a float, not a scalar loss"),
        ("detached", r"returned a tensor of shape \(\), not a scalar loss autograd tracks"),
    ],
)
def test_an_objective_that_returns_no_scalar_loss_is_one_line(what, message):
    with pytest.raises(TrainingError, match=message):
        GCA(CONFIG, device="cpu", objective=_Returns(what)).fit(karate_club())


def test_a_loss_that_is_not_finite_before_any_update_blames_the_parts_not_the_learning_rate():
    with pytest.raises(TrainingError, match="at epoch 1; the encoder or the objective computes values that are not"):
        GCA(CONFIG, device="cpu", objective=_Returns("nan")).fit(karate_club())


def test_a_batch_source_that_gives_no_batch_is_one_line():
    class Empty(BatchSource):
        def batches(self, epoch, generator):
            return iter(())

    with pytest.raises(TrainingError, match="Empty gave no batch to train on in epoch 1"):
        GCA(CONFIG, device="cpu", batches=lambda prepared, device: Empty()).fit(karate_club())


def test_edge_ids_that_are_not_whole_numbers_are_refused_not_truncated():
    from gca.graph.graph import GraphError

    data = karate_club()
    data.edge_index = data.edge_index.float() + 0.6
    with pytest.raises(GraphError, match="edge_index holds ids that are not whole numbers"):
        GCA(CONFIG, device="cpu").fit(data)
    data.edge_index = karate_club().edge_index.double()  # whole numbers in a float tensor read as the ids they are
    assert torch.equal(prepare_graph(data).edge_index, prepare_graph(karate_club()).edge_index)


def test_a_setting_changed_after_the_estimator_was_made_is_checked_when_it_fits():
    from dataclasses import replace

    from gca.config import ConfigError

    config = replace(CONFIG)
    estimator = GCA(config, device="cpu")
    config.tau = -1.0
    with pytest.raises(ConfigError, match="tau"):
        estimator.fit(karate_club())
