"""Shared fixtures: small hand-made graphs and a read-only copy of the Cora files in ../shared/data."""

from __future__ import annotations

import os
import shutil
import stat
import sys
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, settings
from torch_geometric.data import Data

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("GCA_TEST_DATA", REPO.parent / "shared" / "data"))

# Property tests draw the same examples on every run, as Hypothesis's own profile for CI does: a test passes or fails
# whoever runs it, and a user's `make test` checks exactly what CI checked.
settings.register_profile(
    "deterministic", derandomize=True, database=None, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("deterministic")


def pytest_configure(config) -> None:
    """Share the cores between pytest-xdist's workers instead of oversubscribing them.

    Each worker (and every `gca` or torchrun process a test starts, through the environment) gets its share of the
    cores as threads; two workers that each spun two OpenMP threads on a 2-core machine would wait on each other.
    """
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0"))
    if workers > 1:
        threads = str(max(1, (os.cpu_count() or 1) // workers))
        for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[name] = threads
        torch.set_num_threads(int(threads))


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items) -> None:
    """Stop, rather than run a group's tests in several workers: each would build the group's module fixture again.

    pytest-xdist's ``--dist loadgroup`` keeps a group together by a suffix on each test's id; with a pytest that
    drops it (9.2 with pytest-xdist 3.8: pytest-xdist issue 1386) the groups would be spread silently. A worker's
    error reaches the user as pytest-xdist's INTERNALERROR only, so the line goes to stderr first.
    """
    if getattr(config.option, "loadgroup", False):  # set in a pytest-xdist worker under --dist loadgroup
        lost = [item.nodeid for item in items if item.get_closest_marker("xdist_group") and "@" not in item.nodeid]
        if lost:
            line = (
                f"pytest-xdist did not keep the xdist_group of {lost[0]} (pytest {pytest.__version__}): install "
                "the versions pyproject.toml's dev extra names (pip install -e '.[dev]')"
            )
            print(line, file=sys.__stderr__, flush=True)
            raise pytest.UsageError(line)


@pytest.fixture(scope="session")
def shared_data(tmp_path_factory) -> Path:
    """A read-only copy of the test data, made by the suite itself.

    ../shared/data is read-only in CI but may be writable in a user's clone; the tests must see the same thing in
    both, and must never write next to the user's files. So they get their own copy with every write bit removed.
    """
    if not (SHARED_DATA / "Cora" / "raw" / "ind.cora.x").is_file():
        message = f"the test data is not at {SHARED_DATA} (set GCA_TEST_DATA)"
        if os.environ.get("CI"):
            pytest.fail(message)  # CI always has ../shared/data: a missing copy must not pass as skipped tests
        pytest.skip(message)
    copy = tmp_path_factory.mktemp("shared") / "data"
    for part in ("Cora/raw", "npz"):
        if (SHARED_DATA / part).is_dir():
            shutil.copytree(SHARED_DATA / part, copy / part)
    make_read_only(copy)
    return copy


def make_read_only(folder: Path) -> None:
    """Remove every write bit below ``folder`` (root can still write, but gca treats such folders as read-only)."""
    no_write = ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)
    for root, dirs, files in os.walk(folder, topdown=False):
        for name in files + dirs:
            path = os.path.join(root, name)
            os.chmod(path, stat.S_IMODE(os.stat(path).st_mode) & no_write)
    os.chmod(folder, stat.S_IMODE(os.stat(folder).st_mode) & no_write)


@pytest.fixture
def offline(monkeypatch) -> None:
    """No network: every download PyTorch Geometric starts fails as it does on a machine without one."""
    import torch_geometric.data.download as download

    def unreachable(*args, **kwargs):
        raise OSError("network is unreachable")

    monkeypatch.setattr(download.urllib.request, "urlopen", unreachable)


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
