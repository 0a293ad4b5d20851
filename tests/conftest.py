"""Shared fixtures: small hand-made graphs and the read-only Cora copy in ../shared/data."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch
from torch_geometric.data import Data

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("GCA_TEST_DATA", REPO.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not (SHARED_DATA / "Cora" / "raw" / "ind.cora.x").is_file():
        message = f"the read-only test data is not at {SHARED_DATA} (set GCA_TEST_DATA)"
        if os.environ.get("CI"):
            pytest.fail(message)  # CI always has ../shared/data: a missing copy must not pass as skipped tests
        pytest.skip(message)
    return SHARED_DATA


@pytest.fixture
def cache_dir(tmp_path, monkeypatch) -> Path:
    path = tmp_path / "cache"
    monkeypatch.setenv("GCA_CACHE_DIR", str(path))
    return path


def undirected(edges: list[tuple[int, int]]) -> torch.Tensor:
    both = edges + [(v, u) for u, v in edges]
    return torch.tensor(both, dtype=torch.long).t()


def path_graph(n: int = 4, features: torch.Tensor | None = None) -> Data:
    x = features if features is not None else torch.eye(n)
    return Data(x=x, edge_index=undirected([(i, i + 1) for i in range(n - 1)]))


def star_graph(leaves: int = 4) -> Data:
    return Data(x=torch.eye(leaves + 1), edge_index=undirected([(0, i) for i in range(1, leaves + 1)]))
