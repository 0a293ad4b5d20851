"""What a command's ``results.json`` says of where its run came from (:mod:`gca.provenance`): the command line and
start time taken when the command started (:func:`gca.cli.dispatch.main`), the device, and the files the command
read — the graph's, a ``--config`` file, and what the command adds (``gca embed``'s checkpoint)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..provenance import (
    changed_inputs,
    command_line,
    digests_as_read,
    file_record,
    identities,
    input_records,
    run_record,
    utc_now,
)

#: The --edges/--features options beyond the three files: how they are read (they key the prepared graph too).
READING_FLAGS = ("edge_weight", "feature_ids", "feature_layout", "id_column", "label_column")


def _read_files(args: argparse.Namespace) -> list[Path]:
    """The files the command reads whose digests its record holds: the graph's and a ``--config`` file."""
    source = graph_source(args)
    files = source.files() if source is not None else []
    config = getattr(args, "config", None)
    if config is not None and Path(config).is_file():  # else a shipped setting's name ("authors")
        files.append(Path(config))
    return files


def inputs_before(args: argparse.Namespace) -> dict[str, list]:
    """The input files' identities before the graph is read (:func:`gca.provenance.identities`), where the command
    records its inputs (``args.record_inputs``); else empty."""
    return identities(_read_files(args)) if getattr(args, "record_inputs", False) else {}


def remember_inputs(
    args: argparse.Namespace, before: dict[str, list] | None = None, known: dict[str, str] | None = None
) -> None:
    """Each input file's size and SHA-256 as the graph was just read (:func:`gca.provenance.digests_as_read`), kept
    in ``args.inputs_read`` for :func:`command_provenance` — where the command records its inputs.

    Parameters
    ----------
    args
        The command's arguments.
    before
        The files' identities before they were read (:func:`inputs_before`).
    known
        SHA-256 by resolved path where the files were not read but a prepared graph was, whose record holds them.
    """
    if getattr(args, "record_inputs", False):
        args.inputs_read = digests_as_read(_read_files(args), before, known)


def command_provenance(
    args: argparse.Namespace, device: Any, store: Any = None, inputs: tuple[dict, ...] = (), **more: Any
) -> dict[str, Any]:
    """The command's provenance record, completed now: every file it read, each file's size and SHA-256 as taken
    when the graph was read (:func:`remember_inputs`; the prepared graph's record where the graph was read from one)
    — a file that changed since is recorded as it was read, marked ``changed``, and said in one warning line.

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
    taken = getattr(args, "inputs_read", None) or {}
    files = input_records(read, known, taken)
    config = getattr(args, "config", None)
    if config is not None and Path(config).is_file():  # else a shipped setting's name ("authors")
        files.append(file_record(config, read=taken.get(str(Path(config).expanduser().resolve()))))
    from .shell import warn

    for line in changed_inputs(files):
        warn(line)
    command = getattr(args, "command_line", None) or command_line(None)
    started = getattr(args, "started", None) or utc_now()
    prepared = store.provenance() if store is not None else None
    return run_record(command, started, device, [*files, *inputs], prepared, **more)


def graph_source(args: argparse.Namespace):
    """What the command reads, as a :class:`gca.run.cache.GraphSource`; ``None`` when it is nothing on disk (the
    built-in Karate club, a named dataset not downloaded yet)."""
    from pathlib import Path

    from ..datasets.registry import dataset_source
    from ..run.cache import GraphSource

    if args.edges and args.features:
        ids = getattr(args, "feature_ids", None)
        files = [args.edges, args.features, *([args.labels] if args.labels else []), *([ids] if ids else [])]
        if not all(Path(f).is_file() for f in files):
            return None  # reading them says what is wrong
        how = " ".join(f"{flag}={getattr(args, flag, None)}" for flag in READING_FLAGS)
        like = getattr(args, "feature_names", None)  # gca embed: the model's columns key how the features are read
        if like is not None:
            import hashlib

            how += f" columns={hashlib.sha256(repr(like).encode()).hexdigest()[:16]}"
        return GraphSource.of(
            Path(args.edges).stem, files, f"files directed={bool(args.directed)} labels={bool(args.labels)} {how}"
        )
    if args.edges or args.features or args.labels or not args.dataset or not args.dataset.strip():
        return None
    found = dataset_source(args.dataset, args.data_dir)
    if found is None:
        return None
    paths, how = found
    return GraphSource.of(Path(args.dataset).stem if how in ("npz", "folder") else args.dataset, paths, how)
