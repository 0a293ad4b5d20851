"""Where a result came from: the record ``results.json`` and ``model.pt`` keep under ``"provenance"`` (its entries:
docs/usage.md, "Provenance"; design notes: docs/design/application.md).

* ``versions`` (gca, Python and the libraries: a library's ``__version__`` where imported, else the installed
  distribution's), ``device``, ``device_name`` and ``platform``, and ``started`` and ``finished`` (UTC, ISO-8601);
* for a command only: ``command`` and ``inputs``, every file the run read with its ``path``, ``resolved``, ``size`` and
  ``sha256`` as the run read them (:func:`digests_as_read`, :func:`file_record`), ``prepared_graph`` where the graph was
  read from one, and ``resumed_from`` for a resumed training.

A file that can no longer be read when the record is made is listed with ``unreadable`` saying why: gathering the record
never fails a run that has done its work. Everything is plain JSON values, so ``model.pt`` stays loadable with
``torch.load(weights_only=True)``. This module imports only gca's lowest layers (``gca``'s version, :mod:`gca.io`), and
no library that is not loaded yet.
"""

from __future__ import annotations

import platform
import sys
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

from .io import file_identity, hash_files
from .version import __version__

#: (module, distribution, key in ``versions``) of every library recorded; the last one only where installed.
_LIBRARIES = (
    ("torch", "torch", "torch"),
    ("torch_geometric", "torch_geometric", "torch_geometric"),
    ("sklearn", "scikit-learn", "scikit-learn"),
    ("numpy", "numpy", "numpy"),
    ("scipy", "scipy", "scipy"),
    ("pyarrow", "pyarrow", "pyarrow"),
)


def utc_now() -> str:
    """The time now, in UTC, as ISO-8601 to the second (``2025-06-01T09:30:00+00:00``)."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def versions() -> dict[str, str]:
    """gca's, Python's and each library's version; a library that is not installed (PyArrow is optional) is left out."""
    found = {"gca": __version__, "python": platform.python_version()}
    for module, distribution, key in _LIBRARIES:
        loaded = sys.modules.get(module)
        version = getattr(loaded, "__version__", None) if loaded is not None else None
        if version is None:
            try:
                version = metadata.version(distribution)
            except metadata.PackageNotFoundError:
                continue
        found[key] = str(version)  # torch's is a str subclass, which weights_only loading refuses
    return found


def _cpu_name() -> str:
    """The processor's model as the system names it (Linux: /proc/cpuinfo), else what :mod:`platform` says."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as info:
            for line in info:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def device_record(device: Any) -> dict[str, str]:
    """``device``, ``device_name`` and ``platform`` of the device (a ``torch.device`` or its name)."""
    name = str(device)
    if name.startswith("cuda"):
        import torch  # loaded already: a CUDA device was chosen

        index = torch.device(name).index
        model = torch.cuda.get_device_name(torch.cuda.current_device() if index is None else index)
        if torch.version.cuda:
            model += f" (CUDA {torch.version.cuda})"
    elif name == "mps":
        model = f"Apple GPU ({platform.machine()})"
    else:
        model = _cpu_name()
    return {"device": name, "device_name": model, "platform": platform.platform()}


def fit_record(device: Any, started: str, finished: str | None = None) -> dict[str, Any]:
    """What :meth:`gca.GCA.fit` records of a training: versions, device, times; ``finished`` is ``None`` while it runs
    (a training checkpoint)."""
    record: dict[str, Any] = {"versions": versions(), **device_record(device), "started": started}
    if finished is not None:
        record["finished"] = finished
    return record


def identities(files: list[str | Path]) -> dict[str, list]:
    """Each file's identity (:func:`gca.io.file_identity`) by resolved path, taken before the files are read; a file
    that cannot be reached is left out."""
    found = {}
    for path in files:
        resolved = Path(path).expanduser().resolve()
        try:
            found[str(resolved)] = file_identity([resolved])[0]
        except OSError:
            continue
    return found


def digests_as_read(
    files: list[str | Path], before: dict[str, list] | None = None, known: dict[str, str] | None = None
) -> dict[str, dict]:
    """Each input file's SHA-256 and size as the run read it, by resolved path, taken once it is read; a file that
    cannot be read is left out, and the ``known`` ones (SHA-256 of their present contents: a prepared graph's record)
    are not read again.

    A file whose identity changed between ``before`` (:func:`identities`) and the end of its hashing changed while it
    was read: its ``sha256`` and ``size`` are ``None`` and ``changed`` is ``"while it was read"``.
    """
    before, known = before or {}, known or {}
    taken = {}
    for path in files:
        resolved = Path(path).expanduser().resolve()
        key = str(resolved)
        try:
            start = file_identity([resolved])[0]
            sha256 = known.get(key) or hash_files([resolved])[0]
            end = file_identity([resolved])[0]
        except OSError:
            continue
        if start != end or before.get(key, end) != end:
            taken[key] = {"identity": end, "size": None, "sha256": None, "changed": "while it was read"}
        else:
            taken[key] = {"identity": end, "size": end[1], "sha256": sha256}
    return taken


def file_record(path: str | Path, sha256: str | None = None, read: dict | None = None) -> dict[str, Any]:
    """``path`` (as given), ``resolved``, ``size`` and ``sha256`` of an input file (``sha256`` given: where known for
    its present contents); where it can no longer be read, ``size`` and ``sha256`` are ``None`` and ``unreadable`` says
    why.

    With ``read`` (:func:`digests_as_read`), ``size`` and ``sha256`` are the file's as the run read it, and a file not
    the same now gets ``changed``: ``"after it was read"`` or ``"while it was read"`` (:func:`changed_inputs` words the
    warning).
    """
    resolved = Path(path).expanduser().resolve()
    record: dict[str, Any] = {"path": str(path), "resolved": str(resolved)}
    if read is not None:
        record.update(size=read["size"], sha256=read["sha256"])
        try:
            now = file_identity([resolved])[0]
        except OSError:
            now = None
        if read.get("changed") or now != read["identity"]:
            record["changed"] = read.get("changed") or "after it was read"
        return record
    try:
        record["size"] = resolved.stat().st_size
        record["sha256"] = sha256 if sha256 is not None else hash_files([resolved])[0]
    except OSError as exc:
        record.update(size=None, sha256=None, unreadable=exc.strerror or str(exc))
    return record


def changed_inputs(records: list[dict]) -> list[str]:
    """One warning line per input record (:func:`file_record`) of a file that changed while the run went on."""
    lines = []
    for record in records:
        if record.get("changed") == "while it was read":
            lines.append(
                f"{record['path']} changed while it was read; the run's record gives no SHA-256 for it "
                "(its contents as read are unknown)"
            )
        elif record.get("changed"):
            lines.append(
                f"{record['path']} changed after it was read; the run's record gives the SHA-256 of the contents read"
            )
    return lines


def input_records(
    files: list[tuple[str | Path, str | Path]], known: dict[str, str] | None = None, read: dict[str, dict] | None = None
) -> list[dict]:
    """:func:`file_record` of each input file, given as (the path as given, its resolved path); ``known``: SHA-256 by
    resolved path of files whose present contents they are (:meth:`gca.run.store.PreparedStore.recorded_sha256`);
    ``read``: :func:`digests_as_read`'s, which win over ``known``."""
    known, read = known or {}, read or {}
    return [
        file_record(given, known.get(str(resolved)), read.get(str(Path(resolved).expanduser().resolve())))
        for given, resolved in files
    ]


def run_record(
    command: list[str], started: str, device: Any, inputs: list[dict], prepared_graph: dict | None = None, **more: Any
) -> dict[str, Any]:
    """A command's record, completed now (``finished``): ``inputs`` from :func:`input_records`, ``prepared_graph`` from
    :meth:`gca.run.store.PreparedStore.provenance` (``None``: none was read), ``more`` further entries."""
    record: dict[str, Any] = {
        "command": [str(part) for part in command],
        "started": started,
        "finished": utc_now(),
        "versions": versions(),
        **device_record(device),
        "inputs": inputs,
    }
    if prepared_graph is not None:
        record["prepared_graph"] = prepared_graph
    record.update(more)
    return record


def command_line(argv: list[str] | None) -> list[str]:
    """The command line a run records: ``sys.argv`` where ``argv`` is ``None``, else ``["gca", *argv]``."""
    return list(sys.argv) if argv is None else ["gca", *map(str, argv)]
