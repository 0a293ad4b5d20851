"""Which source a graph comes from: :func:`load_dataset` consults the registry of sources below — an npz file
(:mod:`.npz`), the first folder reader that recognises a folder, else a name in :data:`NAMED`. A PyG dataset's own
name (:data:`ALIASES`: ``Photo``, ``CS``, ``WikiCS``) is looked up as the paper's, so a run under either is the
same run — same configuration, same recorded name."""

from __future__ import annotations

import difflib
import os
from collections.abc import Callable
from pathlib import Path

from ..choices import canonical_name
from ..errors import option
from . import npz, ogb, pyg
from .base import DatasetError, LoadedDataset, check_regular_file, default_cache_dir, default_data_dir

#: Named datasets: canonical key → (display name, loader(data_dir, cache_dir)).
NAMED: dict[str, tuple[str, Callable[[Path, Path], LoadedDataset]]] = {
    **{
        key: ("Karate", lambda data_dir, cache_dir: LoadedDataset("Karate", pyg.karate_club()))
        for key in pyg.KARATE_NAMES
    },
    **{
        key: (spec.name, lambda data_dir, cache_dir, spec=spec: pyg.load_spec(spec, data_dir / spec.folder, cache_dir))
        for key, spec in pyg.DATASETS.items()
    },
    **{
        key: (name, lambda data_dir, cache_dir, key=key: ogb.load_named(key, data_dir))
        for key, (name, _, _) in ogb.OGB_DATASETS.items()
    },
}
#: Folder readers, in order: (recognises the folder?, read it).
FOLDER_READERS: tuple[tuple[Callable[[Path], bool], Callable[[Path, Path], LoadedDataset]], ...] = (
    (ogb.is_ogb_folder, lambda folder, cache_dir: ogb.read_ogb_folder(folder)),
    (pyg.is_dataset_folder, pyg.load_folder),
)
#: Other names of a named dataset: PyG's (its folder under the data directory) → the paper's, as canonical keys.
ALIASES: dict[str, str] = {
    alias: key for key, spec in pyg.DATASETS.items() if (alias := canonical_name(spec.folder)) != key
}
DATASET_NAMES = tuple(dict.fromkeys(name for name, _ in NAMED.values()))


def named_key(name: str) -> str:
    """The :data:`NAMED` key a dataset name is looked up by: case, spaces, dashes and underscores do not matter, and
    PyG's name is the paper's (:data:`ALIASES`)."""
    key = canonical_name(name)
    return ALIASES.get(key, key)


def dataset_display_name(name: str) -> str:
    """The paper's spelling of a named dataset ('amazon photo', 'Photo' → 'Amazon-Photo'); other text as is."""
    entry = NAMED.get(named_key(name))
    return entry[0] if entry else name


def load_dataset(name: str, data_dir: str | Path | None = None, cache_dir: str | Path | None = None) -> LoadedDataset:
    """Load a graph by path or by name: an existing file is an ``.npz`` graph file, an existing folder one dataset's
    folder (OGB's node-property layout, with its official split, or PyTorch Geometric's ``FOLDER/raw/…``), anything
    else one of :data:`DATASET_NAMES` (spelt as :func:`named_key` allows). A bare name that is also a folder without
    a dataset's files in it (say, an output folder called ``Cora``) is the name.

    Parameters
    ----------
    name
        A dataset name (``"Cora"``, ``"amazon-photo"`` or PyG's ``"Photo"``, ``"ogbn-arxiv"``, ``"karate"``), or the
        path of an ``.npz`` graph file or a dataset folder; anything else is a
        :class:`~gca.datasets.base.DatasetError` listing the names.
    data_dir
        The folder named datasets are read from (``data_dir/Cora/raw/…``), and downloaded into when missing and
        online; ``None`` for ``$GCA_DATA_DIR``, else ``~/.cache/gca/data``. Not read for a path.
    cache_dir
        Where processed files go when a dataset's own folder is read-only or named otherwise; ``None`` for
        ``$GCA_CACHE_DIR``, else ``~/.cache/gca``.

    Returns
    -------
    LoadedDataset
        The graph, its benchmark's splits where it has them, and the warnings about the files read.
    """
    cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    path = Path(name).expanduser()
    if path.is_file():
        data, notes = npz.read_npz(path, directed=False)
        return LoadedDataset(path.stem, data, named=False, warnings=notes)
    named = NAMED.get(named_key(name)) if "/" not in name and os.sep not in name else None
    if path.is_dir():
        for recognises, read in FOLDER_READERS:
            if recognises(path):
                return read(path, cache_dir)
        if named is not None:  # a bare dataset name that happens to be a folder here (e.g. an output folder)
            return named[1](Path(data_dir) if data_dir is not None else default_data_dir(), cache_dir)
        raise DatasetError(
            f"{path} is a folder but holds none of the datasets gca knows in its raw/ sub-folder (e.g. "
            f"raw/ind.cora.x for Cora, raw/amazon_electronics_photo.npz for Amazon-Photo); give a dataset folder, "
            f"an .npz graph file, or {option('edges')}/{option('features')}"
        )
    if path.exists():
        check_regular_file(path, "graph")
    entry = named
    if entry is None:
        raise unknown_dataset(name)
    return entry[1](Path(data_dir) if data_dir is not None else default_data_dir(), cache_dir)


def unknown_dataset(name: str) -> DatasetError:
    """The error for a name that is no named dataset, file or folder: it names the closest dataset name (difflib, at
    least 0.6 similar), if any."""
    keys = {**{key: entry[0] for key, entry in NAMED.items()}, **{a: NAMED[k][0] for a, k in ALIASES.items()}}
    close = difflib.get_close_matches(canonical_name(name), list(keys), n=1, cutoff=0.6)
    hint = f"did you mean {keys[close[0]]}? " if close else ""
    return DatasetError(
        f"unknown dataset {name!r} (no file or folder of that name exists either); {hint}choose one of "
        f"{', '.join(DATASET_NAMES)}, or give the path of an .npz graph file or of a dataset folder"
    )


def check_dataset_name(name: str) -> str:
    """``name``'s display name if it is a named dataset or an existing file or folder; else the :func:`unknown_dataset`
    error, before anything is read or written."""
    if Path(name).expanduser().exists() or ("/" not in name and os.sep not in name and named_key(name) in NAMED):
        return dataset_display_name(name)
    raise unknown_dataset(name)


def dataset_source(name: str, data_dir: str | Path | None = None) -> tuple[list[Path], str] | None:
    """``(paths, how)``: the files and folders :func:`load_dataset` reads ``name`` from (an npz file; a folder's
    ``raw/`` and OGB's ``split/``, not the rest of it) and which reader; ``None`` for Karate and a named dataset not
    yet there."""
    path = Path(name).expanduser()
    if path.is_file():
        return [path], "npz"

    def read(folder: Path) -> list[Path]:
        return [folder / part for part in ("raw", "split") if (folder / part).is_dir()]

    named = NAMED.get(named_key(name)) if "/" not in name and os.sep not in name else None
    if path.is_dir() and any(recognises(path) for recognises, _ in FOLDER_READERS):
        return read(path), "folder"
    if named is None:
        return None
    folder_dir = Path(data_dir) if data_dir is not None else default_data_dir()
    key = named_key(name)
    if key in ogb.OGB_DATASETS:
        folder = folder_dir / ogb.OGB_DATASETS[key][1]
        return (read(folder), f"ogb {key}") if ogb.is_ogb_folder(folder) else None
    if key in pyg.DATASETS:
        folder = folder_dir / pyg.DATASETS[key].folder
        return (read(folder), f"pyg {key}") if pyg.is_dataset_folder(folder) else None
    return None
