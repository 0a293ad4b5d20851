"""Users' own graph files (gca.datasets.files) and the one-line errors and warnings of part 2 of issue 5."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp

from gca.cli import main
from gca.datasets import karate_club, load_files, read_edge_list
from gca.outputs.export import ExportError, export_embeddings

NAMES = [f"n{i}" for i in range(34)]


@pytest.fixture
def karate_files(tmp_path):
    """Karate as files: string ids with a header, integer ids without, CSV/npy/npz features, labels."""
    data = karate_club()
    ei = data.edge_index[:, data.edge_index[0] < data.edge_index[1]].numpy()
    x = np.random.default_rng(0).random((34, 5)).round(4)
    files = {
        "edges_str": "source,target\n" + "".join(f"{NAMES[u]},{NAMES[v]}\n" for u, v in ei.T),
        "edges_int": "".join(f"{u}\t{v}\n" for u, v in ei.T),
        "features_csv": "id,a,b,c,d,e\n" + "".join(NAMES[i] + "," + ",".join(map(str, x[i])) + "\n" for i in range(34)),
        "labels_str": "node,label\n"
        + "".join(f"{NAMES[i]},{('hi', 'officer')[int(data.y[i] != 0)]}\n" for i in range(34)),
        "labels_int": "".join(f"{i},{int(data.y[i])}\n" for i in range(34)),
    }
    paths = {}
    for key, text in files.items():
        paths[key] = tmp_path / f"{key}.{'tsv' if key == 'edges_int' else 'csv'}"
        paths[key].write_text(text)
    paths["features_npy"] = tmp_path / "features.npy"
    np.save(paths["features_npy"], x)
    paths["features_npz"] = tmp_path / "features.npz"
    sp.save_npz(paths["features_npz"], sp.csr_matrix(x))
    paths["x"], paths["y"], paths["edges"] = x, data.y.numpy(), ei
    return paths


def test_string_ids_map_to_feature_rows_and_labels(karate_files):
    loaded = load_files(karate_files["edges_str"], karate_files["features_csv"], karate_files["labels_str"])
    assert loaded.node_ids == NAMES and loaded.data.num_nodes == 34
    np.testing.assert_allclose(loaded.data.x.numpy(), karate_files["x"], rtol=1e-6)
    # labels: 'hi' < 'officer' → 0, 1; same partition as the built-in faction labels
    np.testing.assert_array_equal(loaded.data.y.numpy(), (karate_files["y"] != 0).astype(int))
    assert loaded.data.edge_index.shape[1] == 2 * karate_files["edges"].shape[1]  # undirected: both directions


def test_integer_ids_with_npy_and_sparse_npz_features_agree(karate_files):
    a = load_files(karate_files["edges_int"], karate_files["features_npy"], karate_files["labels_int"])
    b = load_files(karate_files["edges_int"], karate_files["features_npz"])
    np.testing.assert_allclose(a.data.x.numpy(), b.data.x.to_dense().numpy(), rtol=1e-6)
    assert a.data.edge_index.tolist() == b.data.edge_index.tolist()
    assert b.data.y is None


def test_directed_keeps_one_direction(karate_files):
    loaded = load_files(karate_files["edges_int"], karate_files["features_npy"], directed=True)
    assert loaded.data.edge_index.shape[1] == karate_files["edges"].shape[1] and loaded.directed


def test_header_detection(tmp_path):
    (tmp_path / "a.csv").write_text("src,dst\n0,1\n1,2\n")
    (tmp_path / "b.csv").write_text("alice,bob\nbob,carol\n")  # string ids, no header
    (tmp_path / "c.txt").write_text("# comment\n0 1\n\n1 2\n")
    assert read_edge_list(tmp_path / "a.csv")[:2] == (["0", "1"], ["1", "2"])
    assert read_edge_list(tmp_path / "b.csv") == (["alice", "bob"], ["bob", "carol"], False)
    assert read_edge_list(tmp_path / "c.txt") == (["0", "1"], ["1", "2"], True)


def test_cli_trains_on_files_without_labels_and_exports_by_node_id(karate_files, tmp_path):
    out = tmp_path / "run"
    args = [
        "train",
        "--edges",
        str(karate_files["edges_str"]),
        "--features",
        str(karate_files["features_csv"]),
        "--epochs",
        "5",
        "--quiet",
        "--out",
        str(out),
    ]
    assert main([*args, "--export", str(out / "emb.csv")]) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["accuracy"] is None  # no labels: embeddings only
    embeddings = np.load(out / "embeddings.npy")
    lines = (out / "emb.csv").read_text().splitlines()
    assert lines[0].split(",")[:2] == ["node_id", "e0"] and len(lines) == 35
    assert lines[1].split(",")[0] == "n0"
    np.testing.assert_allclose([float(v) for v in lines[1].split(",")[1:]], embeddings[0], rtol=1e-5)
    import pyarrow.parquet as pq

    assert main([*args, "--export", str(out / "emb.parquet")]) == 0
    # the first run's export inside the folder went with the rest of that run's files
    assert not (out / "emb.csv").exists()
    embeddings = np.load(out / "embeddings.npy")
    table = pq.read_table(out / "emb.parquet")
    assert table.column("node_id").to_pylist() == NAMES
    np.testing.assert_allclose(table.column("e3").to_numpy(), embeddings[:, 3])


def test_cli_evaluates_on_labelled_nodes_only(karate_files, tmp_path):
    partial = tmp_path / "partial.csv"
    partial.write_text("".join(f"{i},{int(karate_files['y'][i])}\n" for i in range(0, 34, 2)))  # half labelled
    out = tmp_path / "run"
    args = [
        "train",
        "--edges",
        str(karate_files["edges_int"]),
        "--features",
        str(karate_files["features_npy"]),
        "--labels",
        str(partial),
        "--epochs",
        "5",
        "--quiet",
        "--splits",
        "2",
        "--out",
        str(out),
    ]
    assert main(args) == 0
    assert json.loads((out / "results.json").read_text())["accuracy"]["mean"] >= 0


def _error(args, capsys) -> str:
    assert main(args) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and err[0].startswith("gca: error:"), err
    return err[0]


BAD_FILES = {
    # name: (edges text, features text, labels text or None, expected words in the error)
    "nan features": ("0,1\n1,2\n", "1,0\nnan,1\n0,1\n", None, "NaN"),
    "inf features": ("0,1\n1,2\n", "1,0\ninf,1\n0,1\n", None, "infinite"),
    "edge id out of range": ("0,1\n1,5\n", "1,0\n0,1\n0,1\n", None, "names node 5"),
    "negative edge id": ("0,1\n-1,2\n", "1,0\n0,1\n0,1\n", None, "negative"),
    "empty edge list": ("source,target\n", "1,0\n0,1\n0,1\n", None, "no edges"),
    "only self-loops": ("0,0\n1,1\n", "1,0\n0,1\n0,1\n", None, "only self-loops"),
    "edge node without features": ("a,b\nb,zz\n", "id,f\na,1\nb,2\n", None, "'zz'"),
    "string ids without id column": ("a,b\n", "1,0\n0,1\n", None, "id"),
    "labels only for unknown nodes": ("0,1\n1,2\n", "1,0\n0,1\n0,1\n", "0,x\n7,y\n", "only one class"),
    "one class": ("0,1\n1,2\n", "1,0\n0,1\n0,1\n", "0,x\n1,x\n2,x\n", "one class"),
    "node labelled twice": ("0,1\n1,2\n", "1,0\n0,1\n0,1\n", "0,x\n0,y\n", "twice"),
    "malformed edge line": ("0,1\n2\n", "1,0\n0,1\n0,1\n", None, "line 2"),
    "ragged feature rows": ("0,1\n", "1,0\n0,1,3\n", None, "columns"),
    "non-numeric feature": ("0,1\n", "1,0\n0,abc\n", None, "'abc'"),
}


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_bad_files_give_one_line_errors(case, tmp_path, capsys):
    edges, features, labels, expected = BAD_FILES[case]
    (tmp_path / "e.csv").write_text(edges)
    (tmp_path / "x.csv").write_text(features)
    args = [
        "train",
        "--edges",
        str(tmp_path / "e.csv"),
        "--features",
        str(tmp_path / "x.csv"),
        "--epochs",
        "1",
        "--quiet",
        "--out",
        str(tmp_path / "o"),
    ]
    if labels is not None:
        (tmp_path / "y.csv").write_text(labels)
        args += ["--labels", str(tmp_path / "y.csv")]
    assert expected in _error(args, capsys)
    assert not (tmp_path / "o" / "results.json").exists()


def test_unreadable_and_foreign_files(tmp_path, capsys):
    (tmp_path / "e.csv").write_text("0,1\n")
    (tmp_path / "bin.csv").write_bytes(b"\xff\xfe\x00\x81garbage")
    (tmp_path / "fake.npy").write_bytes(b"not numpy at all")
    np.save(tmp_path / "obj.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    (tmp_path / "fake.npz").write_bytes(b"PK\x03\x04 truncated")
    for edges, features, words in (
        (tmp_path / "missing.csv", tmp_path / "e.csv", "does not exist"),
        (tmp_path / "bin.csv", tmp_path / "e.csv", "not UTF-8"),
        (tmp_path / "e.csv", tmp_path / "fake.npy", "not a readable .npy"),
        (tmp_path / "e.csv", tmp_path / "obj.npy", "numeric"),
        (tmp_path / "e.csv", tmp_path / "fake.npz", "save_npz"),
        (tmp_path / "e.csv", tmp_path, "not a file"),
    ):
        message = _error(
            ["train", "--edges", str(edges), "--features", str(features), "--out", str(tmp_path / "o")], capsys
        )
        assert words in message, message


@pytest.mark.parametrize(
    ("override", "words"),
    [
        ("p_e1=1.0", "p_e1 must be a probability in [0, 1)"),
        ("p_f2=-0.1", "p_f2 must be a probability"),
        ("p_tau=1", "p_tau must be a probability in (0, 1)"),
        ("tau=0", "tau must be a finite number in (0, 100]"),
        ("tau=-1", "tau must be a finite"),
        ("ptau=0.5", "p_tau"),
    ],
)
def test_bad_hyperparameters(override, words, tmp_path, capsys):
    assert words in _error(["train", "--set", override, "--epochs", "1", "--out", str(tmp_path)], capsys)


def test_dubious_input_gives_warnings_not_errors(tmp_path, capsys):
    (tmp_path / "e.csv").write_text("0,1\n0,1\n1,1\n1,2\n")  # a duplicate, a self-loop; node 3 isolated
    (tmp_path / "x.csv").write_text("1,0,0\n0,1,0\n1,1,0\n0,1,0\n")  # the last column is all zero
    out = tmp_path / "o"
    assert (
        main(
            [
                "train",
                "--edges",
                str(tmp_path / "e.csv"),
                "--features",
                str(tmp_path / "x.csv"),
                "--epochs",
                "2",
                "--quiet",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    warnings = [line for line in capsys.readouterr().err.splitlines() if line.startswith("gca: warning:")]
    text = " ".join(warnings)
    for words in ("self-loop", "duplicate", "1 of 4 nodes have no edges", "1 of 3 feature columns are zero"):
        assert words in text, text
    assert np.isfinite(np.load(out / "embeddings.npy")).all()


def test_export_needs_a_known_suffix(tmp_path):
    with pytest.raises(ExportError, match="csv"):
        export_embeddings(tmp_path / "e.xlsx", np.zeros((1, 2)), ["a"])


def test_export_to_a_missing_folder_fails_before_training(karate_files, tmp_path, capsys):
    out = tmp_path / "run"
    args = [
        "train",
        "--edges",
        str(karate_files["edges_int"]),
        "--features",
        str(karate_files["features_npy"]),
        "--epochs",
        "2",
        "--quiet",
        "--out",
        str(out),
        "--export",
        str(tmp_path / "nowhere" / "e.csv"),
    ]
    assert "does not exist" in _error(args, capsys)
    assert not list(out.iterdir())  # nothing trained, nothing written


def _write(path, text):
    path.write_text(text)
    return path


def test_a_weight_column_is_read_as_edge_weights(tmp_path):
    """Hand-checked: both directions of each undirected edge carry the line's weight, aligned with edge_index."""
    x = _write(tmp_path / "x.csv", "1,0\n0,1\n1,1\n")
    loaded = load_files(_write(tmp_path / "e.csv", "source,target,weight\n0,1,2.5\n2,1,0.5\n"), x)
    assert loaded.data.edge_index.tolist() == [[0, 1, 1, 2], [1, 0, 2, 1]]
    assert loaded.data.edge_weight.tolist() == [2.5, 2.5, 0.5, 0.5] and not loaded.warnings  # headed: no note
    bare = load_files(_write(tmp_path / "b.tsv", "0\t1\t2.5\n2\t1\t0.5\n"), x)  # unheaded: not read, and said
    assert "edge_weight" not in bare.data and any(
        "1 column beyond source, target that are not read" in w for w in bare.warnings
    )
    named = load_files(tmp_path / "b.tsv", x, edge_weight=3)  # named by its number: read
    assert named.data.edge_weight.tolist() == [2.5, 2.5, 0.5, 0.5] and not named.warnings
    both = load_files(_write(tmp_path / "2.csv", "0,1,3\n1,0,3\n1,2,1\n0,1,4\n1,0,4\n"), x, edge_weight=3)
    assert both.data.edge_weight.tolist() == [7.0, 7.0, 1.0, 1.0]
    assert any("2 duplicate edges" in w and "weights summed" in w for w in both.warnings)
    directed = load_files(_write(tmp_path / "d.csv", "1,0,3\n0,1,2\n"), x, directed=True, edge_weight="3")
    assert directed.data.edge_index.tolist() == [[0, 1], [1, 0]] and directed.data.edge_weight.tolist() == [2, 3]


def test_a_column_of_ones_or_of_text_leaves_the_graph_unweighted(tmp_path):
    x = _write(tmp_path / "x.csv", "1,0\n0,1\n1,1\n")
    plain = load_files(_write(tmp_path / "p.csv", "0,1\n1,2\n"), x)
    ones = load_files(_write(tmp_path / "o.csv", "source,target,weight\n0,1,1\n1,2,1.0\n"), x)
    assert "edge_weight" not in ones.data and not ones.warnings and not plain.warnings
    assert ones.data.edge_index.dtype == plain.data.edge_index.dtype
    assert ones.data.edge_index.tolist() == plain.data.edge_index.tolist()
    text = load_files(_write(tmp_path / "t.csv", "0,1,friend\n1,2,2\n"), x)
    assert "edge_weight" not in text.data
    assert any("1 column beyond source, target that are not read" in w for w in text.warnings)
    timed = load_files(_write(tmp_path / "time.csv", "source,target,time\n0,1,1700000000\n1,2,1700000100\n"), x)
    assert "edge_weight" not in timed.data and any("not read" in w for w in timed.warnings)  # headed otherwise
    extra = load_files(_write(tmp_path / "four.csv", "0,1,2,x\n1,2,3,y\n"), x, edge_weight=3)
    assert extra.data.edge_weight.tolist() == [2, 2, 3, 3]
    assert any("1 column beyond source, target and weight" in w for w in extra.warnings)
    stamped = load_files(_write(tmp_path / "stamps.csv", "source,target,time,weight\n0,1,1700000000,2\n"), x)
    assert stamped.data.edge_weight.tolist() == [2, 2]  # the column named weight, never the timestamps
    assert any("'time'" in w and "not read" in w for w in stamped.warnings)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("0,1,2\n1,2,nan\n", r"e.csv, line 2: the edge weight nan is not finite"),
        ("0,1,2\n1,2,inf\n", r"line 2: the edge weight inf is not finite"),
        ("# c\n0,1,2\n1,2,-1\n", r"line 3: the edge weight -1 is negative"),
        ("0,1,1e39\n1,2,1\n", r"line 1: the edge weight 1e\+39 is beyond float32's range"),
        ("source,target,weight\n0,1,2\n1,2\n", r"line 3: expected 3 columns like the first line, got 2"),
        ("source,target,weight\n0,1,2\n1,2,\n", r"line 3: has no weight"),
        ("source,target,weight\n0,1,2\n1,2,heavy\n", r"line 3: has the weight 'heavy', which is not a number"),
        ("0,1,2\n1,0,3\n", r"edge \(0, 1\) has weight 2 \(line 1\) and \(1, 0\) has 3 \(line 2\)"),
        ("0,1,3e38\n0,1,3e38\n", r"summed weights of repeated edges go beyond float32's range"),
    ],
)
def test_bad_weights_in_an_edge_file_are_one_line_naming_the_line(tmp_path, text, message):
    from gca.datasets import DatasetError

    x = _write(tmp_path / "x.csv", "1,0\n0,1\n1,1\n")
    with pytest.raises(DatasetError, match=message) as error:
        load_files(_write(tmp_path / "e.csv", text), x, edge_weight=3)
    assert "\n" not in str(error.value)


def _npz_graph(path, adjacency, x, labels):
    np.savez(
        path,
        adj_data=adjacency.data,
        adj_indices=adjacency.indices,
        adj_indptr=adjacency.indptr,
        adj_shape=adjacency.shape,
        attr_matrix=x,
        labels=labels,
    )
    return path


def test_npz_adjacency_values_are_edge_weights_and_train_as_the_edge_file_does(tmp_path):
    """A weighted npz trains differently from the same npz with unit values, and bit for bit as the same graph
    given as an edge file with a weight column; unit values train bit for bit as the unweighted edge file."""
    import torch

    from gca import GCA, GCAConfig
    from gca.datasets import load_dataset

    karate = karate_club()
    rng = np.random.default_rng(3)
    ei = karate.edge_index[:, karate.edge_index[0] < karate.edge_index[1]].numpy()
    weights = rng.integers(1, 9, ei.shape[1]) / 2  # 0.5 … 4.5, exact in float32
    upper = sp.csr_matrix((weights, (ei[0], ei[1])), shape=(34, 34))
    weighted, unit = (upper + upper.T).tocsr(), (upper + upper.T).tocsr()
    unit.data[:] = 1.0
    x = rng.random((34, 6)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    edges = _write(
        tmp_path / "e.csv",
        "source,target,weight\n" + "".join(f"{u},{v},{w}\n" for u, v, w in zip(ei[0], ei[1], weights, strict=True)),
    )
    plain = _write(tmp_path / "p.csv", "".join(f"{u},{v}\n" for u, v in ei.T))
    labels = karate.y.numpy()

    config = GCAConfig(epochs=3, hidden=8, proj_hidden=8, seed=0)

    def embed(data):
        return GCA(config, device="cpu").fit(data).embedding_

    by_npz = load_dataset(str(_npz_graph(tmp_path / "w.npz", weighted, x, labels)))
    by_unit = load_dataset(str(_npz_graph(tmp_path / "u.npz", unit, x, labels)))
    by_file, by_plain = load_files(edges, tmp_path / "x.npy"), load_files(plain, tmp_path / "x.npy")
    assert torch.equal(by_npz.data.edge_index, by_file.data.edge_index)
    assert torch.equal(by_npz.data.edge_weight, by_file.data.edge_weight)
    assert sorted(set(by_npz.data.edge_weight.tolist())) == sorted(set(weights.tolist()))
    assert "edge_weight" not in by_unit.data
    a, b, c, d = (embed(loaded.data) for loaded in (by_npz, by_file, by_unit, by_plain))
    assert torch.equal(a, b) and torch.equal(c, d) and not torch.allclose(a, c, atol=1e-3)


def test_bad_npz_adjacency_values_are_one_line_naming_the_entry(tmp_path):
    from gca.datasets import DatasetError, load_dataset

    adjacency = sp.csr_matrix(np.array([[0, 2.0, 0], [2.0, 0, -1.0], [0, -1.0, 0]]))
    path = _npz_graph(tmp_path / "g.npz", adjacency, np.eye(3, dtype=np.float32), np.array([0, 1, 0]))
    with pytest.raises(
        DatasetError,
        match=r"g.npz, the adjacency entry at row 1, column 2: the edge weight -1 is "
        r"negative",
    ):
        load_dataset(str(path))
    adjacency = sp.csr_matrix(np.array([[0, 2.0, 0], [3.0, 0, 1.0], [0, 1.0, 0]]))
    path = _npz_graph(tmp_path / "a.npz", adjacency, np.eye(3, dtype=np.float32), np.array([0, 1, 0]))
    with pytest.raises(DatasetError, match=r"edge \(0, 1\) has weight 2 \(the adjacency entry at row 0, column 1\)"):
        load_dataset(str(path))


def test_nan_labels_in_a_label_file_are_unlabelled_nodes_not_a_class(tmp_path):
    (tmp_path / "e.csv").write_text("".join(f"{i},{(i + 1) % 6}\n" for i in range(6)))
    (tmp_path / "x.csv").write_text("".join(f"{i % 2},{i % 3}\n" for i in range(6)))
    (tmp_path / "y.csv").write_text("0,nan\n1,NaN\n2,0\n3,1\n4,0\n5,1\n")
    loaded = load_files(tmp_path / "e.csv", tmp_path / "x.csv", tmp_path / "y.csv")
    assert loaded.data.y.tolist() == [-1, -1, 0, 1, 0, 1]
    assert any("2 of the nodes listed" in w and "no label" in w for w in loaded.warnings)


def test_a_shots_error_names_the_class_as_the_label_file_does(tmp_path, capsys):
    from gca.cli import main

    (tmp_path / "e.csv").write_text("".join(f"{i},{(i + 1) % 30}\n" for i in range(30)))
    (tmp_path / "x.csv").write_text("".join(f"{i % 2},{i % 3},{i % 5}\n" for i in range(30)))
    (tmp_path / "y.csv").write_text("".join(f"{i},{'dog' if i < 3 else 'cat'}\n" for i in range(30)))
    assert (
        main(
            [
                "train",
                "--edges",
                str(tmp_path / "e.csv"),
                "--features",
                str(tmp_path / "x.csv"),
                "--labels",
                str(tmp_path / "y.csv"),
                "--epochs",
                "1",
                "--quiet",
                "--eval-split",
                "fewshot",
                "--shots",
                "3",
                "--out",
                str(tmp_path / "o"),
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "class 'dog'" in err and "give --shots 2 or fewer" in err


def test_an_export_inside_the_output_folder_goes_with_its_run(karate_files, tmp_path):
    """A folder with results.json holds one run's files: an earlier run's export inside it is removed by the next
    run there (which exports elsewhere, or not at all); an export beside the folder is the user's and stays."""
    out = tmp_path / "run"
    args = [
        "train",
        "--edges",
        str(karate_files["edges_str"]),
        "--features",
        str(karate_files["features_csv"]),
        "--epochs",
        "3",
        "--quiet",
        "--out",
        str(out),
    ]
    (out / "sub").mkdir(parents=True)
    assert main([*args, "--export", str(out / "sub" / "emb.csv")]) == 0
    assert (out / "sub" / "emb.csv").is_file()
    assert main([*args, "--seed", "1", "--export", str(tmp_path / "beside.csv")]) == 0
    assert not (out / "sub" / "emb.csv").exists() and (tmp_path / "beside.csv").is_file()
    assert main([*args, "--seed", "2"]) == 0
    assert (tmp_path / "beside.csv").is_file()  # not inside the folder: never removed
    assert sorted(p.name for p in out.iterdir()) == ["embeddings.npy", "model.pt", "results.json", "sub"]
    assert (
        main(
            [
                "embed",
                "--checkpoint",
                str(out / "model.pt"),
                "--edges",
                str(karate_files["edges_str"]),
                "--features",
                str(karate_files["features_csv"]),
                "--out",
                str(tmp_path / "e"),
                "--export",
                str(tmp_path / "e" / "x.csv"),
            ]
        )
        == 0
    )
    assert (
        main(
            [
                "embed",
                "--checkpoint",
                str(out / "model.pt"),
                "--edges",
                str(karate_files["edges_str"]),
                "--features",
                str(karate_files["features_csv"]),
                "--out",
                str(tmp_path / "e"),
            ]
        )
        == 0
    )
    assert sorted(p.name for p in (tmp_path / "e").iterdir()) == ["embeddings.npy", "results.json"]
