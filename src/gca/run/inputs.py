"""Where a command's graph comes from (:class:`GraphRequest`, checked before anything is read), the graph loaded from it
or from its prepared folder (:func:`open_graph`), and what ``results.json`` says of the files read
(:func:`command_provenance`): each file's size and SHA-256 as taken when the graph was read."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config import ConfigError
from ..errors import option
from ..io import check_regular_file
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
from ..stderr import warn

#: The --edges/--features options beyond the three files: how they are read (they key the prepared graph too).
READING_FLAGS = ("edge_weight", "feature_ids", "feature_layout", "id_column", "label_column")


@dataclass(frozen=True)
class GraphRequest:
    """The graph a command reads, as its options say it (``gca train --help``): a ``dataset`` (none and no files:
    Karate) in ``data_dir``, or the user's files and how they are read (:data:`READING_FLAGS`); ``feature_names``: the
    columns a trained model expects; ``config``: a configuration file, its digest recorded with the graph's; ``cache``:
    the prepared graph (``None``: opened where one exists, ``False``: never)."""

    dataset: str | None = None
    data_dir: str | None = None
    edges: str | None = None
    features: str | None = None
    labels: str | None = None
    directed: bool = False
    edge_weight: str | None = None
    feature_ids: str | None = None
    feature_layout: str | None = "auto"
    id_column: str | None = None
    label_column: str | None = None
    feature_names: list[str] | int | None = field(default=None, repr=False)
    config: str | None = None
    cache: bool | None = None
    progress: bool = True

    def reading(self) -> dict[str, Any]:
        """How the files are read, by option (:data:`READING_FLAGS`)."""
        return {flag: getattr(self, flag) for flag in READING_FLAGS}


@dataclass
class GraphRead:
    """A graph as read: the dataset, its prepared folder (opened or to be written; ``None``: none), and each input
    file's size and SHA-256 as read, by resolved path (:func:`gca.provenance.digests_as_read`; empty: not taken)."""

    loaded: Any
    store: Any = None
    digests: dict[str, Any] = field(default_factory=dict)


def check_graph(request: GraphRequest) -> None:
    """The graph's options checked together, before anything is read (from the files, or a prepared graph)."""
    given = [option(flag) for flag, value in request.reading().items() if value not in (None, "auto")]
    if given and not request.edges:
        raise ConfigError(
            f"{given[0]} applies to {option('edges')}/{option('features')} files; give them, or leave it out"
        )
    if request.feature_ids and not str(request.features or "").lower().endswith((".npy", ".npz")):
        raise ConfigError(
            f"{option('feature_ids')} names the rows of an .npy or .npz feature matrix; a table gives its ids in "
            f"an id column ({option('id_column', command_line='NAME')})"
        )
    if request.edges or request.features or request.labels:
        if not (request.edges and request.features):
            raise ConfigError(
                f"{option('edges')} and {option('features')} go together ({option('labels')} is optional); give both"
            )
        if request.dataset:
            raise ConfigError(f"give either {option('dataset')} or {option('edges')}/{option('features')}, not both")
        _check_files(request)
        return
    if request.directed:
        raise ConfigError(
            f"{option('directed', True)} applies to {option('edges')} files; named datasets know their own direction"
        )
    if request.dataset is not None and not request.dataset.strip():
        raise ConfigError(f"{option('dataset')} is empty; give a dataset name or the path of a graph file or folder")


def _check_files(request: GraphRequest) -> None:
    """Each of the user's files is a regular file, said before the readers (and PyTorch) load."""
    for path, what in (
        (request.edges, "edge"),
        (request.features, "feature"),
        (request.labels, "label"),
        (request.feature_ids, "feature id"),
    ):
        if path is not None:
            check_regular_file(path, what)


def load_graph(request: GraphRequest, record: bool = False) -> GraphRead:
    """The graph read from its files; where ``record``, each file's digest is taken as it is read."""
    from ..datasets import load_dataset, load_files

    check_graph(request)
    before = identities(_read_files(request)) if record else {}
    if request.edges:
        reading = request.reading()
        reading["feature_layout"] = reading["feature_layout"] or "auto"
        loaded = load_files(
            request.edges,
            request.features,
            request.labels,
            directed=request.directed,
            **reading,
            feature_names=request.feature_names,
            progress=request.progress,
        )
    else:
        loaded = load_dataset(request.dataset or "Karate", data_dir=request.data_dir)
    return GraphRead(loaded, digests=digests_as_read(_read_files(request), before) if record else {})


def open_graph(request: GraphRequest, record: bool = False) -> GraphRead:
    """The graph from its prepared folder when a usable one exists (unless ``cache`` is ``False``), else
    :func:`load_graph`; the store is ``None`` under ``cache=False`` and for inputs not on disk, and its notes are the
    caller's to print. Where ``record``, each input's digest is taken as read (or from the prepared graph's record)."""
    from .store import PreparedStore

    check_graph(request)
    source = graph_source(request) if request.cache is not False else None
    if source is None:
        return load_graph(request, record)
    store = PreparedStore(source, progress=request.progress)
    if store.usable():
        known = store.recorded_sha256()
        return GraphRead(store.loaded(), store, digests_as_read(_read_files(request), None, known) if record else {})
    read = load_graph(request, record)
    read.store = store
    return read


def graph_source(request: GraphRequest):
    """What the command reads, as a :class:`gca.run.integrity.GraphSource`; ``None`` when it is nothing on disk."""
    from ..datasets.registry import dataset_source
    from .integrity import GraphSource

    if request.edges and request.features:
        ids = request.feature_ids
        labels = request.labels
        files = [request.edges, request.features, *([labels] if labels else []), *([ids] if ids else [])]
        if not all(Path(f).is_file() for f in files):
            return None  # reading them says what is wrong
        how = " ".join(f"{flag}={value}" for flag, value in request.reading().items())
        like = request.feature_names  # gca embed: the model's columns key how the features are read
        if like is not None:
            import hashlib

            how += f" columns={hashlib.sha256(repr(like).encode()).hexdigest()[:16]}"
        return GraphSource.of(
            Path(request.edges).stem, files, f"files directed={bool(request.directed)} labels={bool(labels)} {how}"
        )
    dataset = request.dataset
    if request.edges or request.features or request.labels or not dataset or not dataset.strip():
        return None
    found = dataset_source(dataset, request.data_dir)
    if found is None:
        return None
    paths, how = found
    return GraphSource.of(Path(dataset).stem if how in ("npz", "folder") else dataset, paths, how)


def _read_files(request: GraphRequest) -> list[Path]:
    """The files the command reads whose digests its record holds: the graph's and a configuration file."""
    source = graph_source(request)
    files = source.files() if source is not None else []
    if request.config is not None and Path(request.config).is_file():  # else a shipped setting's name ("authors")
        files.append(Path(request.config))
    return files


def command_provenance(
    request: GraphRequest,
    device: Any,
    read: GraphRead | None = None,
    inputs: tuple[dict, ...] = (),
    command: list[str] | None = None,
    started: str | None = None,
    **more: Any,
) -> dict[str, Any]:
    """The command's provenance record: every file it read, each file's size and SHA-256 as taken when the graph was
    read (``read.digests``; ``None``: none taken) — a file changed since is recorded as read, marked ``changed``, and
    said in one warning line. ``inputs``: further files' records, listed after the graph's and the config's; ``command``
    and ``started``: ``None`` for this process's command line and now."""
    source = graph_source(request)  # after loading: a named dataset that was downloaded is on disk now
    if source is not None:
        named = source.named_files()
    else:  # the built-in Karate club; or files of the user's that are gone since they were read (said as unreadable)
        given = (request.edges, request.features, request.labels, request.feature_ids)
        named = [(p, Path(p)) for p in given if p]
    store = read.store if read is not None else None
    known = store.recorded_sha256() if store is not None else {}
    taken = read.digests if read is not None else {}
    files = input_records(named, known, taken)
    config = request.config
    if config is not None and Path(config).is_file():  # else a shipped setting's name ("authors")
        files.append(file_record(config, read=taken.get(str(Path(config).expanduser().resolve()))))
    for line in changed_inputs(files):
        warn(line)
    prepared = store.provenance() if store is not None else None
    return run_record(command or command_line(None), started or utc_now(), device, [*files, *inputs], prepared, **more)
