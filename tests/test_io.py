"""Atomic result files: permissions from the umask without touching process-wide state, no leaks on failure; users'
documents (config and search-space files) read, or refused in one line."""

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


def test_a_users_document_is_read_or_refused_in_one_line(tmp_path):
    from gca.config import ConfigError, read_config_file
    from gca.io import read_document
    from gca.tune import TuneError, read_space

    (tmp_path / "ok.toml").write_text("tau = 0.5\n[gca]\nlr = 0.01\n")
    (tmp_path / "ok.json").write_text('{"tau": 0.5}')
    assert read_document(tmp_path / "ok.toml", "config", ConfigError) == {"tau": 0.5, "gca": {"lr": 0.01}}
    assert read_document(tmp_path / "ok.json", "config", ConfigError) == {"tau": 0.5}
    (tmp_path / "latin1.toml").write_bytes("tau = 0.5 # é\n".encode("latin-1"))
    (tmp_path / "bad.toml").write_text("tau = \n")
    (tmp_path / "bad.json").write_text("{tau: 0.5}")
    (tmp_path / "folder.toml").mkdir()
    for name, message in [
        ("missing.toml", "does not exist"),
        ("folder.toml", "is not a regular file"),
        ("latin1.toml", "is not UTF-8 text; save it as UTF-8"),
        ("bad.toml", "is not valid TOML"),
        ("bad.json", "is not valid JSON"),
    ]:
        with pytest.raises(ConfigError) as config_error:
            read_config_file(tmp_path / name)
        with pytest.raises(TuneError) as space_error:
            read_space(tmp_path / name)
        space_message = message.replace("JSON", "TOML")  # a search space is TOML whatever its name
        for error, what, said in ((config_error, "config", message), (space_error, "search space", space_message)):
            line = str(error.value)
            assert line.startswith(f"{what} file {tmp_path / name} ") and said in line and "\n" not in line
    (tmp_path / "space.yaml").write_text("[tau\n")
    with pytest.raises(TuneError, match="is not valid TOML"):  # named by how it was read, not by its suffix
        read_space(tmp_path / "space.yaml")


def test_a_lock_file_that_is_a_link_is_refused_in_one_line_and_its_target_kept(tmp_path):
    from gca.io import OutputError, hold_folder, release_folder

    target = tmp_path / "elsewhere.txt"
    target.write_text("keep me")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / ".gca-lock").symlink_to(target)
    with pytest.raises(OutputError, match="is a symbolic link") as caught:
        hold_folder(tmp_path / "out", ".gca-lock")
    assert "\n" not in str(caught.value) and target.read_text() == "keep me"
    release_folder(hold_folder(tmp_path / "out", ".other-lock"))  # a plain lock file: held, then removed
    assert not (tmp_path / "out" / ".other-lock").exists()
