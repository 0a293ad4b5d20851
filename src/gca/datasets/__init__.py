"""Graphs from every source gca reads: the paper's named datasets (PyTorch Geometric), npz graph files, OGB's
node-property folders, users' edge/feature/label files, and the built-in Karate club — one registry
(:mod:`.registry`) decides which source a name or path belongs to; :mod:`.base` holds what they share."""

from ..graph.edges import listed_edges
from .base import (
    DatasetError,
    LoadedDataset,
    Split,
    check_regular_file,
    class_labels,
    default_cache_dir,
    default_data_dir,
    float32_features,
    mask_splits,
)
from .files import load_files, read_edge_list, read_features, read_labels
from .npz import read_npz_graph
from .pyg import DATASETS, KARATE_INSTRUCTOR_FACTION, KARATE_LEADERS, KARATE_NAMES, karate_club
from .registry import DATASET_NAMES, check_dataset_name, dataset_display_name, load_dataset

__all__ = [
    "DATASETS",
    "DATASET_NAMES",
    "KARATE_INSTRUCTOR_FACTION",
    "KARATE_LEADERS",
    "KARATE_NAMES",
    "DatasetError",
    "LoadedDataset",
    "Split",
    "check_dataset_name",
    "check_regular_file",
    "class_labels",
    "dataset_display_name",
    "default_cache_dir",
    "default_data_dir",
    "listed_edges",
    "float32_features",
    "karate_club",
    "load_dataset",
    "load_files",
    "mask_splits",
    "read_edge_list",
    "read_features",
    "read_labels",
    "read_npz_graph",
]
