"""What a command's ``results.json`` says of where its run came from (:mod:`gca.provenance`): the command line and
start time taken when the command started (:func:`gca.cli.dispatch.main`), the device, and the files the command
read — the graph's, a ``--config`` file, and what the command adds (``gca embed``'s checkpoint)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..provenance import command_line, file_record, input_records, run_record, utc_now
from .common import graph_source


def command_provenance(args: argparse.Namespace, device: Any, store: Any = None, inputs: tuple[dict, ...] = (),
                       **more: Any) -> dict[str, Any]:  # fmt: skip
    """The command's provenance record, completed now: every file it read, each file's SHA-256 taken from the
    prepared graph's record where the graph was read from one (``store``) and the file is unchanged since.

    Parameters
    ----------
    args
        The command's arguments (with ``started`` and ``command_line`` where :func:`gca.cli.dispatch.main` set them).
    device
        The device the command ran on.
    store
        The prepared graph the command opened or wrote (:class:`gca.run.cache.PreparedStore`); ``None`` for none.
    inputs
        Further input files' records (:func:`gca.provenance.file_record`), listed after the graph's and the config's.
    **more
        Further entries of the record.
    """
    source = graph_source(args)  # after loading: a named dataset that was downloaded is on disk now
    if source is not None:
        read = source.named_files()
    else:  # the built-in Karate club; or files of the user's that are gone since they were read (said as unreadable)
        given = (getattr(args, n, None) for n in ("edges", "features", "labels", "feature_ids"))
        read = [(p, Path(p)) for p in given if p]
    known = store.recorded_sha256() if store is not None else {}
    files = input_records(read, known)
    config = getattr(args, "config", None)
    if config is not None and Path(config).is_file():  # else a shipped setting's name ("authors")
        files.append(file_record(config))
    command = getattr(args, "command_line", None) or command_line(None)
    started = getattr(args, "started", None) or utc_now()
    prepared = store.provenance() if store is not None else None
    return run_record(command, started, device, [*files, *inputs], prepared, **more)
