"""A user's encoder must return one floating-point row per node, ``hidden`` wide: anything else is one line naming
the encoder's class, the shape it returned and the shape it must return — before training (a pass on the first 4
nodes), in training (the whole graph, or a sampled subgraph in mini-batch mode) and in inference."""

from __future__ import annotations

import re

import pytest
import torch
from torch import nn

import gca
from gca import GCAConfig
from gca.datasets import karate_club
from gca.errors import UserError
from gca.nn.encoders import EncoderError, check_encoder_output

FULL = GCAConfig(epochs=2, hidden=8, proj_hidden=8)
MINI = FULL.replace(batch_size=8, fanout=(4, 4))


class _Linear(nn.Module):
    """x W: one 8-wide row per node, then ``reshape`` — what each test's encoder gets wrong."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(34, 8)

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor):
        return self.reshape(self.lin(x))

    def reshape(self, h: torch.Tensor):
        return h


class OneRow(_Linear):
    def reshape(self, h):
        return h[:1]


class Table(_Linear):
    """33 learned rows whatever the input: one short of karate's 34 nodes."""

    def __init__(self) -> None:
        super().__init__()
        self.table = nn.Parameter(torch.zeros(33, 8))

    def reshape(self, h):
        return self.table + h.sum()


class ThreeD(_Linear):
    def reshape(self, h):
        return h.unsqueeze(1)


class Integers(_Linear):
    def reshape(self, h):
        return h.long()


class WithAttention(_Linear):
    def reshape(self, h):
        return h, h


class Narrow(_Linear):
    def reshape(self, h):
        return h[:, :7]


class DropsLastOfMany(_Linear):
    """Right on the 4-node check, one row short on anything larger: caught in training."""

    def reshape(self, h):
        return h if h.shape[0] <= 4 else h[:-1]


class DropsLastInInference(_Linear):
    """Right on the 4-node check and in training, one row short in eval mode on more nodes: caught in the final
    inference."""

    def reshape(self, h):
        return h[:-1] if not self.training and h.shape[0] > 4 else h


def _refused(config: GCAConfig, encoder: nn.Module) -> str:
    with pytest.raises(EncoderError) as error:
        gca.GCA(config, device="cpu", encoder=encoder).fit_transform(karate_club())
    message = str(error.value)
    assert isinstance(error.value, UserError) and "\n" not in message
    return message


@pytest.mark.parametrize("config", [FULL, MINI], ids=["full-graph", "mini-batch"])
@pytest.mark.parametrize(
    ("encoder", "expected"),
    [
        (OneRow, "encoder OneRow returned shape (1, 8) for 4 nodes; it must return one row per node: (4, 8)"),
        (Table, "encoder Table returned shape (33, 8) for 4 nodes; it must return one row per node: (4, 8)"),
        (ThreeD, "encoder ThreeD returned shape (4, 1, 8) for 4 nodes; it must return one row per node: (4, 8)"),
        (
            Narrow,
            "encoder Narrow returned shape (4, 7) for 4 nodes, but the projection head takes hidden = 8 "
            "columns: (4, 8); set hidden to the encoder's output width",
        ),
        (
            Integers,
            "encoder Integers returned shape (4, 8) of dtype torch.int64 for 4 nodes; it must return "
            "floating-point embeddings",
        ),
        (
            WithAttention,
            "encoder WithAttention returned a tuple, not a tensor, for 4 nodes; it must return one row "
            "per node: (4, 8)",
        ),
    ],
    ids=["one-row", "33-rows", "3-d", "narrow", "integers", "tuple"],
)
def test_a_wrong_output_is_refused_before_training(config, encoder, expected):
    assert _refused(config, encoder()) == expected


def test_a_row_short_in_full_graph_training_is_refused():
    expected = "encoder DropsLastOfMany returned shape (33, 8) for 34 nodes; it must return one row per node: (34, 8)"
    assert _refused(FULL, DropsLastOfMany()) == expected


def test_a_row_short_on_a_sampled_subgraph_is_refused():
    message = _refused(MINI, DropsLastOfMany())
    found = re.fullmatch(
        r"encoder DropsLastOfMany returned shape \((\d+), 8\) for (\d+) nodes; it must return one "
        r"row per node: \((\d+), 8\)",
        message,
    )
    assert found is not None
    returned, nodes, wanted = map(int, found.groups())
    assert returned == nodes - 1 and wanted == nodes and 4 < nodes <= 34  # the subgraph's node count


@pytest.mark.parametrize("config", [FULL, MINI], ids=["full-graph", "mini-batch"])
def test_a_row_short_in_the_final_inference_is_refused(config):
    expected = (
        "encoder DropsLastInInference returned shape (33, 8) for 34 nodes; it must return one row per node: (34, 8)"
    )
    assert _refused(config, DropsLastInInference()) == expected


def test_embedding_a_graph_checks_the_rows_too():
    estimator = gca.GCA(MINI, device="cpu", encoder=_Linear())
    estimator.fit(karate_club())
    estimator.model.encoder.reshape = lambda h: h[:1]  # the trained copy goes wrong afterwards
    with pytest.raises(EncoderError, match=r"^encoder _Linear returned shape \(1, 8\) for 34 nodes; .*: \(34, 8\)$"):
        estimator.embed(karate_club())


def test_the_shape_rule_by_hand():
    encoder = nn.Identity()
    good = torch.zeros(3, 5)
    assert check_encoder_output(encoder, good, 3, 5) is good
    assert check_encoder_output(encoder, good, 3) is good  # any width without a projection head to feed
    cases = [
        (torch.zeros(2, 5), 3, 5, "returned shape (2, 5) for 3 nodes; it must return one row per node: (3, 5)"),
        (torch.zeros(3), 3, None, "returned shape (3,) for 3 nodes; it must return one row per node: (3, hidden)"),
        (torch.tensor(0.0), 3, 5, "returned shape () for 3 nodes; it must return one row per node: (3, 5)"),
        (
            torch.zeros(3, 5, dtype=torch.bool),
            3,
            5,
            "returned shape (3, 5) of dtype torch.bool for 3 nodes; it must return floating-point embeddings",
        ),
        ([good], 3, 5, "returned a list, not a tensor, for 3 nodes; it must return one row per node: (3, 5)"),
    ]
    for out, rows, hidden, expected in cases:
        with pytest.raises(EncoderError) as error:
            check_encoder_output(encoder, out, rows, hidden)
        assert str(error.value) == "encoder Identity " + expected


@pytest.mark.parametrize("dtype", [torch.float64, torch.float16])
def test_an_encoder_of_another_float_precision_is_one_line(dtype):
    class Widened(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(34, 8)

        def forward(self, x, edge_index):
            return self.lin(x).to(dtype)

    config = gca.GCAConfig(epochs=1, hidden=8, proj_hidden=8)
    with pytest.raises(EncoderError, match=f"returned {str(dtype).removeprefix('torch.')} embeddings; return float32"):
        gca.GCA(config, device="cpu", encoder=Widened()).fit(karate_club())
