"""Files in and out: result files written so that an interruption (Ctrl-C, kill -9, a full disk) never leaves a
half-written one, the lock a folder is written under by one process at a time (run folders and the stores of
prepared graphs, fitted models and searches), and users' text files and TOML/JSON documents read with one-line
errors."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import secrets
import shutil
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from .errors import DatasetError, UserError, option

if TYPE_CHECKING:
    from filelock import FileLock


class OutputError(UserError, OSError):
    """An output location cannot be used or written; the message is one line naming the user's path."""


#: The lock file of a folder one gca process writes at a time (:func:`hold_folder`).
LOCK = ".gca-lock"


def atomic_write(path: str | Path, write: Callable[[IO[bytes]], Any]) -> None:
    """Call ``write`` on a temporary file in the target's folder, flush it to disk, then rename it over ``path``.

    The rename is atomic on POSIX and Windows file systems, so readers see the old file or the new one, never a
    part; the temporary file is removed if ``write`` fails. The file gets mode 0o666 less the process's umask, as
    any ordinary file; no process-wide state is read or changed, so several threads may call it.

    Parameters
    ----------
    write
        ``write(f)`` writes the contents to the open binary file ``f``.
    """
    path = Path(path)
    fd, tmp = _create_temporary(path)
    try:
        with os.fdopen(fd, "wb") as f:  # owns fd from here: closed on every path out of the block
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except RuntimeError as exc:  # torch.save reports a failed write (e.g. a full disk) as a RuntimeError
        full = _nearly_full(path.parent)  # measured before the partial file is removed
        tmp.unlink(missing_ok=True)
        if full:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path)) from None
        raise OSError(
            errno.EIO, f"writing failed ({str(exc).splitlines()[0] if str(exc) else 'RuntimeError'})", str(path)
        ) from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def file_identity(files: list[Path]) -> list[list]:
    """Each file's path, size, modification and change times (ns) and inode: any write to a file, or another file
    in its place, changes one of them (the change time cannot be set back), so equal identities mean files not
    touched since. What gca keeps computed from input files (a prepared graph, PyG's processed copy) is checked
    against it."""
    out = []
    for path in files:
        st = Path(path).stat()
        out.append([str(path), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino])
    return out


#: Bytes read at a time by :func:`hash_files`.
HASH_BLOCK = 1 << 23


def hash_files(files: list[Path], combined: Any = None) -> list[str]:
    """Each file's SHA-256 (hex), every file read once in blocks of 8 MiB. ``combined``, a :mod:`hashlib` object,
    is fed each file's name and size (``"NAME:SIZE;"``) and then its contents, in order — so the one read also gives
    a digest of the files together (:func:`gca.run.integrity.input_digests`)."""
    each = []
    for path in files:
        path = Path(path)
        digest = hashlib.sha256()
        with path.open("rb") as f:
            if combined is not None:
                combined.update(f"{path.name}:{os.fstat(f.fileno()).st_size};".encode())
            while block := f.read(HASH_BLOCK):
                digest.update(block)
                if combined is not None:
                    combined.update(block)
        each.append(digest.hexdigest())
    return each


def _nearly_full(folder: Path) -> bool:
    try:
        return shutil.disk_usage(folder).free < 1 << 20
    except OSError:
        return False


def _create_temporary(path: Path) -> tuple[int, Path]:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    while True:
        tmp = path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp"
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:  # pragma: no cover - 48 random bits
            continue


def key_digest(value: Any, size: int = 16, default: Callable[[Any], Any] | None = None) -> str:
    """The hex BLAKE2b digest (``size`` bytes) of ``value``'s JSON with sorted keys (``default`` for what JSON cannot
    hold): the key a store names an entry by — the prepared graph's, the fitted models', the views' probabilities."""
    return hashlib.blake2b(json.dumps(value, sort_keys=True, default=default).encode(), digest_size=size).hexdigest()


def atomic_write_text(path: str | Path, text: str) -> None:
    atomic_write(path, lambda f: f.write(text.encode()))


def json_bytes(value: Any) -> bytes:
    """``value`` as indented JSON; NaN and infinities are not JSON, so they raise instead of being written."""
    return (json.dumps(value, indent=2, allow_nan=False) + "\n").encode()


def atomic_write_json(path: str | Path, value: Any) -> None:
    atomic_write(path, lambda f: f.write(json_bytes(value)))


def read_json(path: str | Path) -> Any | None:
    """The JSON value in ``path``, or ``None`` if it is missing or unreadable (e.g. from a broken run)."""
    try:
        return parse_document(Path(path).read_text(), "json")
    except (OSError, ValueError):
        return None


def read_user_text(path: Path, what: str, error: type[Exception], hint: str) -> str:
    """The UTF-8 text of the user's file ``path`` (a byte-order mark is dropped), or ``error`` with one line:
    ``"{what} file {path} is not UTF-8 text; {hint}"`` or why it cannot be read."""
    try:
        return path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise error(f"{what} file {path} is not UTF-8 text; {hint}") from None
    except OSError as exc:
        raise error(f"cannot read {what} file {path}: {exc.strerror or exc}") from None


def check_regular_file(path: str | Path, what: str) -> None:
    """A regular file: a missing path, a folder, a FIFO or a device is a :class:`~gca.errors.DatasetError` in one
    line naming ``what`` it holds (a FIFO or a device would block or fail in the middle of reading). Light enough
    to run before the readers and PyTorch load, so a wrong path is said at once."""
    path = Path(path)
    if not path.exists():
        raise DatasetError(f"{what} file {path} does not exist")
    if path.is_dir():
        raise DatasetError(f"{what} file {path} is a folder, not a file")
    if not path.is_file():
        raise DatasetError(f"{what} file {path} is not a regular file (a pipe or a device); give a file on disk")


def read_document(path: str | Path, what: str, error: type[Exception], allow_json: bool = True) -> Any:
    """The TOML document in the user's file ``path`` — JSON where it ends in ``.json`` and ``allow_json`` — or
    ``error`` with one line: the file is missing or not a regular file, not UTF-8 text, or not valid TOML/JSON (and
    why), naming ``what`` the file holds."""
    path = Path(path)
    if not path.is_file():
        raise error(f"{what} file {path} " + ("is not a regular file" if path.exists() else "does not exist"))
    kind = "json" if allow_json and path.suffix.lower() == ".json" else "toml"
    text = read_user_text(path, what, error, "save it as UTF-8 " + ("TOML or JSON" if allow_json else "TOML"))
    try:
        return parse_document(text, kind)
    except ValueError as exc:
        raise error(f"{what} file {path} is not valid {kind.upper()}: {exc}") from None


def parse_document(text: str, kind: str, object_pairs_hook: Callable[[list], Any] | None = None) -> Any:
    """``text`` in ``kind`` ("json" or "toml") as Python values. Any malformed text is a ``ValueError`` — also
    nesting deep enough to exhaust Python's recursion limit, which a few kilobytes of brackets reach.

    Parameters
    ----------
    object_pairs_hook
        JSON only: builds each object from its (key, value) pairs, as :func:`json.loads`'s does (a key given twice
        is then seen, where a ``dict`` keeps the last); ``None``: a ``dict``.
    """
    if kind == "json":
        parse = json.loads if object_pairs_hook is None else partial(json.loads, object_pairs_hook=object_pairs_hook)
    elif sys.version_info >= (3, 11):
        import tomllib

        parse = tomllib.loads
    else:  # pragma: no cover
        import tomli

        parse = tomli.loads
    try:
        return parse(text)
    except RecursionError:
        raise ValueError("it is nested too deeply (brackets or tables inside one another)") from None


def hold_folder(folder: Path, name: str = LOCK, wait: bool = False) -> FileLock:
    """Hold an exclusive lock (``filelock``: ``flock`` on Unix) on ``folder``'s lock file ``name`` for as long as
    this process lives (or until :func:`release_folder`); when another process holds it, refuse with one line naming
    the process — or, with ``wait``, wait for it (a short critical section, such as creating a shared database).

    The holder writes its process id into the file and removes the file when it is done; a lock file that is a
    symbolic link is refused, never written through. The operating system releases the lock when the process ends,
    however it ends.
    """
    from filelock import FileLock, Timeout

    path = folder / name
    lock = FileLock(path, timeout=-1 if wait else 0, on_acquired=_write_pid)
    try:
        lock.acquire()
    except Timeout:
        holder = ""
        with contextlib.suppress(OSError), open(path, encoding="utf-8", opener=_no_follow) as file:
            holder = file.read().strip()
        who = f" (process {holder})" if holder.isdigit() else ""
        raise OutputError(
            f"{option('out', folder)} is in use by another gca run{who}; wait for it to finish or choose another folder"
        ) from None
    except OSError as exc:
        if exc.errno == errno.ELOOP or path.is_symlink():
            raise OutputError(
                f"the lock file {path} is a symbolic link, which gca never writes through; remove it"
            ) from None
        raise OutputError(f"cannot write into the output folder {folder}: {exc.strerror or exc}") from None
    return lock


def _write_pid(fd: int) -> None:
    """``filelock``'s ``on_acquired``: the lock file holds the holder's process id, for the refusal's message."""
    os.ftruncate(fd, 0)
    os.pwrite(fd, str(os.getpid()).encode(), 0)


def _no_follow(path: str, flags: int) -> int:
    """``os.open`` for :func:`open`'s ``opener``, refusing a symbolic link (``ELOOP``) where the system can."""
    return os.open(path, flags | getattr(os, "O_NOFOLLOW", 0), 0o666)


def release_folder(lock: FileLock | None) -> None:
    """Remove the lock file while still holding it, then let go (see :func:`hold_folder`); a process waiting on the
    removed file takes the lock of a new one (``lock``: ``None`` releases nothing)."""
    if lock is None:
        return
    with contextlib.suppress(OSError):
        os.unlink(lock.lock_file)
    lock.release()
