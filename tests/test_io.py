"""Atomic result files: permissions from the umask without touching process-wide state, no leaks on failure."""

from __future__ import annotations

import os
import stat

import pytest

from gca.io import atomic_write, atomic_write_text


def _open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_never_changes_the_process_umask(tmp_path, monkeypatch):
    """Setting the umask (even briefly, to read it) races with every other thread that creates files."""

    def forbidden(mask):
        raise AssertionError(f"os.umask({mask:o}) was called")

    monkeypatch.setattr(os, "umask", forbidden)
    atomic_write_text(tmp_path / "a.txt", "hello")
    assert (tmp_path / "a.txt").read_text() == "hello"


def test_permissions_follow_the_umask(tmp_path):
    old = os.umask(0o027)
    try:
        atomic_write_text(tmp_path / "b.txt", "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "b.txt").stat().st_mode) == 0o640


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts descriptors through /proc")
def test_a_failure_leaks_no_descriptor_and_no_file(tmp_path, monkeypatch):
    def failing_chmod(*args, **kwargs):
        raise PermissionError("chmod refused")

    monkeypatch.setattr(os, "chmod", failing_chmod)
    before = _open_descriptors()
    for _ in range(5):
        try:
            atomic_write_text(tmp_path / "c.txt", "x")
        except PermissionError:
            pass

    def failing_write(f):
        raise ValueError("disk full")

    with pytest.raises(ValueError):
        atomic_write(tmp_path / "d.txt", failing_write)
    assert _open_descriptors() == before
    assert sorted(p.name for p in tmp_path.iterdir()) in (["c.txt"], [])
