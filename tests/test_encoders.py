"""Encoders beyond the paper's GCN: PyTorch Geometric's GAT, GraphSAGE and GIN, and a user's own module."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn
from torch_geometric.nn import GCNConv

from gca import GCA, GCAConfig
from gca.cli import main
from gca.config import ConfigError
from gca.datasets import karate_club
from gca.nn.encoders import EncoderError, MessagePassingEncoder

KINDS = ["gat", "sage", "sage-mean", "gin"]  # sage-mean: encoder=sage, sage_aggregator=mean


def _encoder(kind: str) -> dict:
    return {"encoder": "sage", "sage_aggregator": "mean"} if kind == "sage-mean" else {"encoder": kind}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("batch_size", [0, 8])
def test_each_encoder_trains_and_resumes_exactly_from_a_checkpoint(kind, batch_size, tmp_path):
    config = GCAConfig(epochs=4, batch_size=batch_size, fanout=(4, 4), hidden=16, proj_hidden=16, **_encoder(kind))
    straight = GCA(config, device="cpu").fit_transform(karate_club())
    assert straight.shape == (34, 16) and torch.isfinite(straight).all()
    checkpoint = tmp_path / "c.pt"
    GCA(config.replace(epochs=2), device="cpu").fit(karate_club(), checkpoint=checkpoint, checkpoint_every=2)
    resumed = GCA(config, device="cpu").fit(karate_club(), checkpoint=checkpoint, checkpoint_every=2, resume=True)
    resumed = resumed.embedding_
    torch.testing.assert_close(resumed, straight, rtol=0, atol=0)


def test_views_reach_a_message_passing_encoder_as_kept_edges_and_masked_columns():
    seen = []

    class Spy(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = GCNConv(34, 8)

        def forward(self, x, edge_index):
            seen.append((x.clone(), edge_index.clone()))
            return self.conv(x, edge_index)

    config = GCAConfig(epochs=1, hidden=8, proj_hidden=8, p_e1=0.5, p_e2=0.5, p_f1=0.5, p_f2=0.5)
    GCA(config, device="cpu", encoder=Spy()).fit_transform(karate_club())
    (x1, e1), (x2, e2) = seen[1:3]  # seen[0]: the width check before training
    full = karate_club().edge_index.shape[1]
    assert e1.shape[1] < full and e2.shape[1] < full  # dropped edges are absent
    for x in (x1, x2):  # identity features: a masked column is all zero, a kept one keeps its 1
        kept = x.sum(0)
        assert ((kept == 0) | (kept == 1)).all() and 0 < int(kept.sum()) < 34


def test_a_users_encoder_of_the_wrong_width_is_refused_before_training():
    with pytest.raises(EncoderError) as error:
        GCA(GCAConfig(epochs=1), device="cpu", encoder=GCNConv(34, 7)).fit_transform(karate_club())
    assert str(error.value) == (
        "encoder GCNConv returned shape (4, 7) for 4 nodes, but the projection head takes "
        "hidden = 128 columns: (4, 128); set hidden to the encoder's output width"
    )


def test_an_unknown_encoder_name_is_a_config_error():
    with pytest.raises(ConfigError, match="encoder must be one of gcn, gat, sage, gin"):
        GCAConfig(encoder="transformer")


def test_a_gat_model_saves_loads_and_embeds_from_the_command_line(tmp_path, capsys):
    out = tmp_path / "gat"
    assert main(["train", "--set", "encoder=gat", "--epochs", "3", "--quiet", "--out", str(out)]) == 0
    assert (
        main(["embed", "--checkpoint", str(out / "model.pt"), "--dataset", "Karate", "--out", str(tmp_path / "emb")])
        == 0
    )
    loaded = GCA.load(out / "model.pt", device="cpu")
    assert isinstance(loaded.model.encoder, MessagePassingEncoder) and loaded.model.encoder.kind == "gat"
    embedded = torch.from_numpy(np.load(tmp_path / "emb" / "embeddings.npy"))
    torch.testing.assert_close(embedded, loaded.embed(karate_club()))
    assert "wrote" in capsys.readouterr().out


def test_graphsage_aggregators_by_hand():
    """gcn: the mean over the node and its neighbours, one weight; mean: the node's own weight beside its
    neighbours' mean. Identity weights, zero biases and non-negative inputs (ReLU changes nothing) on the path
    0 – 1 – 2; every layer's rows ℓ2-normalised."""
    x = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    edges = torch.tensor([[0, 1, 1, 2], [1, 0, 2, 1]])
    closed = torch.tensor([[1, 1, 0], [1, 1, 1], [0, 1, 1]], dtype=torch.float32)  # A + I
    neighbours = closed - torch.eye(3)

    def rows(m: torch.Tensor) -> torch.Tensor:
        return m / m.norm(dim=1, keepdim=True)

    for aggregator, layer in (
        ("gcn", lambda h: rows((closed @ h) / closed.sum(1, keepdim=True))),
        ("mean", lambda h: rows(h + (neighbours @ h) / neighbours.sum(1, keepdim=True))),
    ):
        encoder = MessagePassingEncoder("sage", 2, 2, 2, "relu", first_layer_factor=1, sage_aggregator=aggregator)
        with torch.no_grad():
            for conv in encoder.convs:
                conv.lin_l.weight.copy_(torch.eye(2))
                conv.lin_l.bias.zero_()
                if conv.root_weight:
                    conv.lin_r.weight.copy_(torch.eye(2))
        assert encoder.convs[0].root_weight == (aggregator == "mean")
        torch.testing.assert_close(encoder(x, edges), layer(layer(x)))
    with pytest.raises(ConfigError, match="sage_aggregator must be one of gcn, mean"):
        GCAConfig(sage_aggregator="max")


def test_a_graphsage_model_saved_before_the_aggregator_setting_loads_as_it_was_trained(tmp_path):
    config = GCAConfig(epochs=1, encoder="sage", sage_aggregator="mean", hidden=8, proj_hidden=8)
    estimator = GCA(config, device="cpu")
    estimator.fit(karate_club())
    state = estimator.state()
    del state["config"]["sage_aggregator"]  # as gca wrote it before the setting existed
    torch.save(state, tmp_path / "old.pt")
    loaded = GCA.load(tmp_path / "old.pt", device="cpu")
    assert loaded.config.sage_aggregator == "mean"
    torch.testing.assert_close(loaded.embed(karate_club()), estimator.embed(karate_club()))
