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
from gca.encoders import MessagePassingEncoder

KINDS = ["gat", "sage", "gin"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("batch_size", [0, 8])
def test_each_encoder_trains_and_resumes_exactly_from_a_checkpoint(kind, batch_size, tmp_path):
    config = GCAConfig(epochs=4, encoder=kind, batch_size=batch_size, fanout=(4, 4), hidden=16, proj_hidden=16)
    straight = GCA(config, device="cpu").fit(karate_club())
    assert straight.shape == (34, 16) and torch.isfinite(straight).all()
    checkpoint = tmp_path / "c.pt"
    GCA(config.replace(epochs=2), device="cpu").fit(karate_club(), checkpoint=checkpoint, checkpoint_every=2)
    resumed = GCA(config, device="cpu").fit(karate_club(), checkpoint=checkpoint, checkpoint_every=2, resume=True)
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
    GCA(config, device="cpu", encoder=Spy()).fit(karate_club())
    (x1, e1), (x2, e2) = seen[1:3]  # seen[0]: the width check before training
    full = karate_club().edge_index.shape[1]
    assert e1.shape[1] < full and e2.shape[1] < full  # dropped edges are absent
    for x in (x1, x2):  # identity features: a masked column is all zero, a kept one keeps its 1
        kept = x.sum(0)
        assert ((kept == 0) | (kept == 1)).all() and 0 < int(kept.sum()) < 34


def test_a_users_encoder_of_the_wrong_width_is_refused_before_training():
    with pytest.raises(ValueError, match="projection head takes hidden = 128"):
        GCA(GCAConfig(epochs=1), device="cpu", encoder=GCNConv(34, 7)).fit(karate_club())


def test_an_unknown_encoder_name_is_a_config_error():
    with pytest.raises(ConfigError, match="encoder must be one of gcn, gat, sage, gin"):
        GCAConfig(encoder="transformer")


def test_a_gat_model_saves_loads_and_embeds_from_the_command_line(tmp_path, capsys):
    out = tmp_path / "gat"
    assert main(["train", "--set", "encoder=gat", "--epochs", "3", "--quiet", "--out", str(out)]) == 0
    assert main(["embed", "--checkpoint", str(out / "model.pt"), "--out", str(tmp_path / "emb")]) == 0
    loaded = GCA.load(out / "model.pt", device="cpu")
    assert isinstance(loaded.model.encoder, MessagePassingEncoder) and loaded.model.encoder.kind == "gat"
    embedded = torch.from_numpy(np.load(tmp_path / "emb" / "embeddings.npy"))
    torch.testing.assert_close(embedded, loaded.embed(karate_club()))
    assert "wrote" in capsys.readouterr().out
