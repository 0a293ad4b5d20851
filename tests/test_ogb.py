"""OGB's node-property layout, read offline from a small graph written by the test."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from gca.cli import main
from gca.datasets import DatasetError, load_dataset


def _write(path, rows, fmt):
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt") as f:
        for row in rows:
            f.write(",".join(fmt.format(v) for v in np.atleast_1d(row)) + "\n")


@pytest.fixture
def ogb_folder(tmp_path):
    """12 nodes in two triangles-of-triangles, 3 features, 2 classes, a 'time' split (6 / 3 / 3)."""
    folder = tmp_path / "data" / "ogbn_arxiv"
    rng = np.random.default_rng(0)
    edges = [
        (0, 1),
        (1, 2),
        (2, 0),
        (3, 4),
        (4, 5),
        (5, 3),
        (0, 3),
        (6, 7),
        (7, 8),
        (8, 6),
        (9, 10),
        (10, 11),
        (11, 9),
        (6, 9),
        (2, 8),
    ]
    _write(folder / "raw" / "edge.csv.gz", edges, "{}")
    _write(folder / "raw" / "node-feat.csv.gz", rng.random((12, 3)).round(5), "{}")
    _write(folder / "raw" / "node-label.csv.gz", [[0]] * 6 + [[1]] * 6, "{}")
    for part, nodes in (("train", [0, 1, 6, 7, 3, 9]), ("valid", [2, 8, 4]), ("test", [5, 10, 11])):
        _write(folder / "split" / "time" / f"{part}.csv.gz", [[n] for n in nodes], "{}")
    return folder


def test_ogb_folder_by_path_and_by_name(ogb_folder):
    loaded = load_dataset(str(ogb_folder))
    data = loaded.data
    assert data.num_nodes == 12 and tuple(data.x.shape) == (12, 3) and data.y.tolist() == [0] * 6 + [1] * 6
    assert data.edge_index.shape[1] == 30  # 15 edges, both directions
    ((train, valid, test),) = loaded.splits
    assert train.tolist() == [0, 1, 6, 7, 3, 9] and valid.tolist() == [2, 8, 4] and test.tolist() == [5, 10, 11]
    named = load_dataset("ogbn-arxiv", data_dir=ogb_folder.parent)
    assert named.name == "ogbn-arxiv" and torch.equal(named.data.edge_index, data.edge_index)


def test_missing_ogb_dataset_offline_is_one_line(tmp_path, offline):
    with pytest.raises(DatasetError) as info:
        load_dataset("ogbn-products", data_dir=tmp_path)
    message = str(info.value)
    assert "ogbn-products not found" in message and "products.zip" in message and "\n" not in message


def test_training_is_judged_on_the_official_split(ogb_folder, tmp_path, capsys):
    out = tmp_path / "out"
    assert (
        main(
            [
                "train",
                "--dataset",
                str(ogb_folder),
                "--epochs",
                "3",
                "--quiet",
                "--set",
                "hidden=8",
                "--set",
                "proj_hidden=8",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    accuracy = json.loads((out / "results.json").read_text())["accuracy"]
    assert len(accuracy["runs"]) == 1  # one official split, not 20 random ones
    assert "on 1 split (" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("labels", "words"),
    [
        ([[0]] * 6 + [[1]] * 5 + [[-3]], "node 11 is -3.0"),
        ([[0]] * 6 + [[1]] * 5 + [[0.3]], "node 11 is 0.3"),
        ([[0]] * 6 + [[1]] * 5 + [[float("inf")]], "node 11 is inf"),
        ([[0]] * 11, "one label per node (12)"),
        ([[0, 1]] * 12, "2 columns"),
    ],
)
def test_labels_that_are_not_class_numbers_are_refused(ogb_folder, labels, words):
    _write(ogb_folder / "raw" / "node-label.csv.gz", labels, "{}")
    with pytest.raises(DatasetError, match="node-label.csv.gz") as info:
        load_dataset(str(ogb_folder))
    assert words in str(info.value) and "\n" not in str(info.value)


def test_nan_labels_mark_unlabelled_nodes_left_out_of_evaluation(ogb_folder, tmp_path, capsys):
    _write(ogb_folder / "raw" / "node-label.csv.gz", [[0]] * 5 + [[float("nan")]] + [[1]] * 6, "{}")
    loaded = load_dataset(str(ogb_folder))
    assert loaded.data.y.tolist() == [0] * 5 + [-1] + [1] * 6
    assert loaded.warnings == [
        f"1 of 12 nodes in {ogb_folder / 'raw' / 'node-label.csv.gz'} have no label (NaN); "
        "they are left out of evaluation"
    ]
    out = tmp_path / "out"
    assert (
        main(
            [
                "train",
                "--dataset",
                str(ogb_folder),
                "--epochs",
                "2",
                "--quiet",
                "--set",
                "hidden=8",
                "--set",
                "proj_hidden=8",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    assert "have no label (NaN)" in capsys.readouterr().err
    accuracy = json.loads((out / "results.json").read_text())["accuracy"]
    assert accuracy["fitted_on"] == [6]  # the official split's training part; node 5 (unlabelled) is in test


@pytest.mark.parametrize(
    ("parts", "words"),
    [
        ({"valid": [2, 8, 4, 0]}, "share 1 nodes (e.g. node 0)"),
        ({"test": []}, "test.csv.gz lists no node"),
        ({"train": [0, 1, 6, 7, 3, 9, 9]}, "lists node 9 twice"),
    ],
)
def test_an_official_split_with_overlapping_empty_or_repeated_parts_is_refused(ogb_folder, parts, words):
    for part, nodes in parts.items():
        path = ogb_folder / "split" / "time" / f"{part}.csv.gz"
        if nodes:
            _write(path, [[n] for n in nodes], "{}")
        else:
            with gzip.open(path, "wt") as f:
                f.write("")
    with pytest.raises(DatasetError) as info:
        load_dataset(str(ogb_folder))
    assert words in str(info.value) and "\n" not in str(info.value)


def test_a_downloaded_archive_cannot_write_outside_the_data_folder(tmp_path, monkeypatch, ogb_folder):
    import zipfile

    archive = tmp_path / "crafted.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for name in ("raw/edge.csv.gz", "raw/node-feat.csv.gz"):
            zf.write(ogb_folder / name, f"arxiv/{name}")
        zf.writestr("../../outside.txt", "written through ../")
        zf.writestr("/tmp/absolute-gca-test.txt", "written to an absolute path")
    data_dir = tmp_path / "deep" / "data"

    def fake_download(url, folder, log=False):
        target = Path(folder) / "arxiv.zip"
        target.write_bytes(archive.read_bytes())
        return str(target)

    import torch_geometric.data

    monkeypatch.setattr(torch_geometric.data, "download_url", fake_download)
    loaded = load_dataset("ogbn-arxiv", data_dir=data_dir)
    assert loaded.data.num_nodes == 12
    assert not (tmp_path / "outside.txt").exists() and not (tmp_path / "deep" / "outside.txt").exists()
    assert not Path("/tmp/absolute-gca-test.txt").exists()
    inside = {p.relative_to(data_dir).as_posix() for p in data_dir.rglob("*") if p.is_file()}
    assert all(".." not in part for path in inside for part in path.split("/"))


@pytest.mark.parametrize("split", ["public", "auto"])
@pytest.mark.parametrize("protocol", ["sklearn", "authors"])
def test_unlabelled_nodes_of_the_official_split_are_removed_and_counted(ogb_folder, tmp_path, split, protocol):
    """Nodes 10 and 11 (test) and 9 (train) have NaN labels: evaluation scores the labelled test node alone, and
    results.json says how many were removed from each part."""
    _write(ogb_folder / "raw" / "node-label.csv.gz", [[0]] * 6 + [[1]] * 3 + [["nan"]] * 3, "{}")
    out = tmp_path / f"out-{split}-{protocol}"
    assert (
        main(
            [
                "train",
                "--dataset",
                str(ogb_folder),
                "--epochs",
                "2",
                "--quiet",
                "--set",
                "hidden=8",
                "--set",
                "proj_hidden=8",
                "--eval-split",
                split,
                "--eval-protocol",
                protocol,
                "--out",
                str(out),
            ]
        )
        == 0
    )
    record = json.loads((out / "results.json").read_text())
    assert record["evaluation_split"]["used"] == "the dataset's own split" and "train" not in record["evaluation_split"]
    assert record["evaluation_split"]["sizes"] == [5, 3, 1]
    assert record["evaluation_split"]["unlabelled_removed"] == {"train": 1, "val": 0, "test": 2}
    assert len(record["accuracy"]["runs"]) == 1 and record["accuracy"]["runs"][0] in (0.0, 100.0)


def test_reproduce_judges_an_official_split_without_its_unlabelled_nodes(ogb_folder):
    from gca.evaluate.splits import SplitSetting
    from gca.reproduce.execute import run_split

    _write(ogb_folder / "raw" / "node-label.csv.gz", [[0]] * 6 + [[1]] * 3 + [["nan"]] * 3, "{}")
    loaded = load_dataset(str(ogb_folder))
    for scheme in ("auto", "public"):
        train, val, test = run_split(loaded, 0, SplitSetting(scheme, 1))
        assert train.tolist() == [0, 1, 6, 7, 3] and val.tolist() == [2, 8, 4] and test.tolist() == [5]
