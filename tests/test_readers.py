"""The table readers (gca.datasets.files and its tables module): every form of edges, features and labels gives the
same graph, rows aligned with ids. Each node's features encode its id, so a misaligned row is seen, not averaged."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import scipy.sparse as sp

from gca.cli import main
from gca.datasets import DatasetError, load_files
from gca.datasets.files import tables as tables_module

N, WIDTH = 40, 6


def _graph(rng, ids):
    """A random graph over ``ids``; node k's active features are k % WIDTH and (k + 1) % WIDTH with values k + 1
    and 1, so the feature row tells which node it is."""
    edges = set()
    while len(edges) < 90:
        u, v = rng.integers(0, N, 2)
        if u != v:
            edges.add((int(min(u, v)), int(max(u, v))))
    edges = sorted(edges)
    dense = np.zeros((N, WIDTH), dtype=np.float32)
    for k in range(N):
        dense[k, k % WIDTH] += k + 1
        dense[k, (k + 1) % WIDTH] += 1
    return edges, dense


def _canonical(loaded):
    """The graph in terms of ids: the set of undirected id pairs and each id's feature row."""
    ids = loaded.node_ids
    ids = list(range(loaded.data.num_nodes)) if ids is None else [ids[i] for i in range(len(ids))]
    ids = [i.item() if hasattr(i, "item") else i for i in ids]
    x = loaded.data.x.to_dense().numpy() if loaded.data.x.is_sparse else loaded.data.x.numpy()
    pairs = {tuple(sorted((ids[u], ids[v]), key=str)) for u, v in loaded.data.edge_index.t().tolist()}
    rows = {ids[i]: tuple(x[i]) for i in range(len(ids))}
    return pairs, rows


@pytest.fixture(scope="module")
def string_graph(tmp_path_factory):
    """One string-id graph written in every feature form; rows shuffled so that file order is not id order."""
    tmp = tmp_path_factory.mktemp("forms")
    rng = np.random.default_rng(7)
    names = [f"user-{k:03d}" for k in range(N)]
    edges, dense = _graph(rng, names)
    order = rng.permutation(N)
    (tmp / "edges.csv").write_text("source,target\n" + "".join(f"{names[u]},{names[v]}\n" for u, v in edges))
    wide = "id," + ",".join(f"f{j}" for j in range(WIDTH)) + "\n"
    wide += "".join(names[k] + "," + ",".join(f"{v:g}" for v in dense[k]) + "\n" for k in order)
    (tmp / "wide.csv").write_text(wide)
    triples = [(names[k], j, float(dense[k, j])) for k in order for j in range(WIDTH) if dense[k, j]]
    (tmp / "long.csv").write_text("node,feature,value\n" + "".join(f"{a},{b},{c:g}\n" for a, b, c in triples))
    pq.write_table(
        pa.table(
            {"node": [t[0] for t in triples], "feature": [t[1] for t in triples], "value": [t[2] for t in triples]}
        ),
        tmp / "long.parquet",
    )
    pq.write_table(
        pa.table({"source": [names[u] for u, _ in edges], "target": [names[v] for _, v in edges]}),
        tmp / "edges.parquet",
    )
    as_object = {names[k]: {str(j): float(dense[k, j]) for j in range(WIDTH) if dense[k, j]} for k in order}
    (tmp / "values.json").write_text(json.dumps(as_object))
    np.save(tmp / "x.npy", dense[order])
    sp.save_npz(tmp / "x.npz", sp.csr_matrix(dense[order]))
    (tmp / "ids.txt").write_text("".join(names[k] + "\n" for k in order))
    return {"tmp": tmp, "names": names, "edges": edges, "dense": dense, "order": order}


FORMS = {
    "wide csv": lambda t: {"features": t / "wide.csv"},
    "long csv": lambda t: {"features": t / "long.csv"},
    "long parquet": lambda t: {"features": t / "long.parquet"},
    "json object of values": lambda t: {"features": t / "values.json"},
    "npy with ids": lambda t: {"features": t / "x.npy", "feature_ids": t / "ids.txt"},
    "sparse npz with ids": lambda t: {"features": t / "x.npz", "feature_ids": t / "ids.txt"},
}


@pytest.mark.parametrize("form", sorted(FORMS))
@pytest.mark.parametrize("edges", ["edges.csv", "edges.parquet"])
def test_every_feature_form_gives_the_same_graph_aligned_by_id(string_graph, form, edges):
    tmp, names, dense = string_graph["tmp"], string_graph["names"], string_graph["dense"]
    loaded = load_files(tmp / edges, **FORMS[form](tmp))
    pairs, rows = _canonical(loaded)
    assert pairs == {tuple(sorted((names[u], names[v]))) for u, v in string_graph["edges"]} | {
        tuple(sorted((names[v], names[u]))) for u, v in string_graph["edges"]
    }
    for k, name in enumerate(names):
        if name in rows:  # a node without edges or features is absent from no form: every form lists all 40
            np.testing.assert_array_equal(rows[name], dense[k], err_msg=f"{form}: {name}")
    assert set(rows) == set(names)
    sparse_forms = ("long", "json", "npz")
    assert loaded.data.x.is_sparse == any(word in form for word in sparse_forms)


def test_json_lists_of_active_features_and_list_of_lists(tmp_path):
    (tmp_path / "e.csv").write_text("a,b\nb,c\n")
    (tmp_path / "x.json").write_text(json.dumps({"a": [0, 2], "b": [1], "c": [2, 2]}))
    loaded = load_files(tmp_path / "e.csv", tmp_path / "x.json")
    assert loaded.node_ids == ["a", "b", "c"]
    np.testing.assert_array_equal(loaded.data.x.to_dense().numpy(), [[1, 0, 1], [0, 1, 0], [0, 0, 2]])
    assert any("more than once" in w for w in loaded.warnings)  # c lists feature 2 twice: summed, said
    (tmp_path / "rows.json").write_text(json.dumps([["w"], ["v", "w"], []]))  # row i is node i; named features
    (tmp_path / "i.csv").write_text("0,1\n1,2\n")
    rows = load_files(tmp_path / "i.csv", tmp_path / "rows.json")
    assert rows.feature_names == ["v", "w"] and rows.node_ids is None
    np.testing.assert_array_equal(rows.data.x.to_dense().numpy(), [[0, 1], [1, 1], [0, 0]])


def test_a_json_features_file_is_never_read_as_csv(tmp_path, capsys):
    (tmp_path / "e.csv").write_text("a,b\n")
    (tmp_path / "x.txt").write_text('{"a": [4708], "b": [1]}')  # any suffix: it starts like JSON
    loaded = load_files(tmp_path / "e.csv", tmp_path / "x.txt")
    assert loaded.data.x.shape == (2, 4709)
    (tmp_path / "bad.json").write_text('{"a": [1,}')
    with pytest.raises(DatasetError, match="not valid JSON"):
        load_files(tmp_path / "e.csv", tmp_path / "bad.json")


def test_nodes_of_the_edges_without_sparse_features_get_zero_rows_and_one_line(tmp_path):
    (tmp_path / "e.csv").write_text("a,b\nb,zz\n")
    (tmp_path / "x.csv").write_text("id,feature\na,w1\nb,w2\n")
    loaded = load_files(tmp_path / "e.csv", tmp_path / "x.csv")
    assert loaded.node_ids == ["a", "b", "zz"] and loaded.feature_names == ["w1", "w2"]
    np.testing.assert_array_equal(loaded.data.x.to_dense().numpy(), [[1, 0], [0, 1], [0, 0]])
    assert any("1 node of edge file" in w and "all zero" in w for w in loaded.warnings)
    (tmp_path / "w.csv").write_text("id,f\na,1\nb,2\n")  # a wide table lists every node: a missing one is an error
    with pytest.raises(DatasetError, match="'zz'"):
        load_files(tmp_path / "e.csv", tmp_path / "w.csv")


def test_64_bit_integer_ids_map_and_export_as_integers(tmp_path):
    base = 2**62
    (tmp_path / "e.tsv").write_text("".join(f"{base + k}\t{base + k + 1}\n" for k in range(5)))
    (tmp_path / "x.csv").write_text("node_id,a\n" + "".join(f"{base + k},{k}\n" for k in reversed(range(6))))
    (tmp_path / "y.csv").write_text("id,label\n" + "".join(f"{base + k},{k % 2}\n" for k in range(6)))
    loaded = load_files(tmp_path / "e.tsv", tmp_path / "x.csv", tmp_path / "y.csv")
    assert loaded.node_ids.dtype == np.int64 and loaded.node_ids.tolist() == [base + k for k in reversed(range(6))]
    x = loaded.data.x.numpy()[:, 0]
    assert (loaded.node_ids - base == x).all()  # each row's feature is its id's offset
    assert (loaded.data.y.numpy() == (loaded.node_ids - base) % 2).all()
    out = tmp_path / "o"
    assert (
        main(
            [
                "train",
                "--edges",
                str(tmp_path / "e.tsv"),
                "--features",
                str(tmp_path / "x.csv"),
                "--no-eval",
                "--epochs",
                "1",
                "--quiet",
                "--out",
                str(out),
                "--export",
                str(tmp_path / "emb.parquet"),
            ]
        )
        == 0
    )
    exported = pq.read_table(tmp_path / "emb.parquet")
    assert exported.schema.field("node_id").type == pa.int64()
    assert exported.column("node_id").to_pylist() == [base + k for k in reversed(range(6))]


def test_dataframes_and_arrow_tables_read_as_their_files(string_graph):
    pd = pytest.importorskip("pandas")
    tmp, names = string_graph["tmp"], string_graph["names"]
    from_files = _canonical(load_files(tmp / "edges.csv", tmp / "long.csv"))
    edges = pd.read_csv(tmp / "edges.csv")
    long = pd.read_csv(tmp / "long.csv")
    from_frames = load_files(edges, long)
    assert _canonical(from_frames) == from_files
    from_arrow = load_files(pa.Table.from_pandas(edges), pa.Table.from_pandas(long))
    assert _canonical(from_arrow) == from_files
    labels = pd.DataFrame({"node": names, "split": ["a"] * N, "team": [k % 3 for k in range(N)]})
    labelled = load_files(edges, long, labels, label_column="team")
    index = {name: i for i, name in enumerate(labelled.node_ids)}
    assert [int(labelled.data.y[index[n]]) for n in names] == [k % 3 for k in range(N)]


def test_text_conventions_read_alike(tmp_path):
    x = tmp_path / "x.npy"
    np.save(x, np.eye(4, dtype=np.float32))
    forms = {
        "plain.csv": "0,1\n1,2\n2,3\n",
        "header_crlf.csv": "source,target\r\n0,1\r\n1,2\r\n\r\n2,3\r\n",
        "bom.csv": "\ufeffsrc,dst\n0,1\n1,2\n2,3\n",
        "comments.txt": "# made by hand\n0 1\n\n   \n# more\n1    2\n\t2\t3  \n",
        "semicolons.csv": "0;1\n1;2\n2;3\n",
        "spaces_after_commas.csv": "0, 1\n1 ,2\n2, 3\n",
    }
    graphs = []
    for name, text in forms.items():
        (tmp_path / name).write_bytes(text.encode())
        graphs.append(load_files(tmp_path / name, x).data.edge_index.tolist())
    assert all(g == graphs[0] for g in graphs), dict(zip(forms, graphs, strict=True))


def test_blocks_of_a_large_file_read_as_one(tmp_path, monkeypatch):
    """Block boundaries (here every ~64 bytes) fall inside comments, blank lines and rows: same graph, and an error
    names the file's line however many blocks came before."""
    rng = np.random.default_rng(3)
    lines = ["# edges"]
    for k in range(300):
        lines.append(f"n{rng.integers(0, 50)},n{rng.integers(0, 50)}")
        if k % 37 == 0:
            lines += ["", "# a comment, with a comma"]
    (tmp_path / "e.csv").write_text("\n".join(lines) + "\n")
    (tmp_path / "x.csv").write_text("id,a\n" + "".join(f"n{k},{k}\n" for k in range(50)))
    whole = load_files(tmp_path / "e.csv", tmp_path / "x.csv")
    monkeypatch.setattr(tables_module, "BLOCK_BYTES", 64)
    blocked = load_files(tmp_path / "e.csv", tmp_path / "x.csv")
    assert blocked.data.edge_index.tolist() == whole.data.edge_index.tolist()
    lines[250] = "n1,n2,n3"
    (tmp_path / "bad.csv").write_text("\n".join(lines) + "\n")
    with pytest.raises(DatasetError, match="line 251: expected 2 columns like the first line, got 3"):
        load_files(tmp_path / "bad.csv", tmp_path / "x.csv")


def test_label_tables_pick_their_columns_and_skip_nodes_not_in_the_graph(tmp_path, capsys):
    (tmp_path / "e.csv").write_text("a,b\nb,c\nc,d\n")
    (tmp_path / "x.csv").write_text("id,f\na,1\nb,2\nc,3\nd,4\n")
    (tmp_path / "y.csv").write_text(
        "user,year,class,team\na,2001,x,red\nb,2002,y,blue\ngone,2003,x,red\nc,2004,NA,red\nd,2005,y,blue\n"
    )
    with pytest.raises(DatasetError, match="label_column"):
        load_files(tmp_path / "e.csv", tmp_path / "x.csv", tmp_path / "y.csv")
    loaded = load_files(
        tmp_path / "e.csv", tmp_path / "x.csv", tmp_path / "y.csv", id_column="user", label_column="team"
    )
    assert loaded.data.y.tolist() == [1, 0, 1, 0] and loaded.class_names == ["blue", "red"]
    assert any("1 label in" in w and "'gone'" in w and "skipped" in w for w in loaded.warnings)
    by_class = load_files(
        tmp_path / "e.csv", tmp_path / "x.csv", tmp_path / "y.csv", id_column="user", label_column="class"
    )
    assert by_class.data.y.tolist() == [0, 1, -1, 1]  # c's NA: unlabelled, never a class
    out = tmp_path / "o"
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
                "--id-column",
                "user",
                "--label-column",
                "team",
                "--epochs",
                "1",
                "--quiet",
                "--no-eval",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    assert "1 label in " + str(tmp_path / "y.csv") + " names a node that is not in the graph" in capsys.readouterr().err


def test_reading_flags_without_files_are_refused(tmp_path, capsys):
    assert main(["train", "--dataset", "karate", "--edge-weight", "w", "--out", str(tmp_path / "o")]) == 2
    assert "--edge-weight applies to --edges/--features files" in capsys.readouterr().err
    (tmp_path / "e.csv").write_text("0,1\n")
    (tmp_path / "x.csv").write_text("1\n2\n")
    assert (
        main(
            [
                "train",
                "--edges",
                str(tmp_path / "e.csv"),
                "--features",
                str(tmp_path / "x.csv"),
                "--feature-ids",
                str(tmp_path / "e.csv"),
                "--out",
                str(tmp_path / "o"),
            ]
        )
        == 2
    )
    assert "an .npy or .npz feature matrix" in capsys.readouterr().err


def test_a_string_id_graph_with_long_features_trains_and_exports_its_ids(string_graph, tmp_path):
    tmp, names = string_graph["tmp"], string_graph["names"]
    (tmp_path / "y.csv").write_text("node,label\n" + "".join(f"{n},{'ab'[k % 2]}\n" for k, n in enumerate(names)))
    out = tmp_path / "run"
    assert (
        main(
            [
                "train",
                "--edges",
                str(tmp / "edges.parquet"),
                "--features",
                str(tmp / "long.parquet"),
                "--labels",
                str(tmp_path / "y.csv"),
                "--epochs",
                "2",
                "--splits",
                "2",
                "--quiet",
                "--out",
                str(out),
                "--export",
                str(tmp_path / "emb.csv"),
            ]
        )
        == 0
    )
    lines = (tmp_path / "emb.csv").read_text().splitlines()
    assert lines[0].startswith("node_id,e0") and sorted(line.split(",")[0] for line in lines[1:]) == sorted(names)
    embeddings = np.load(out / "embeddings.npy")
    first = lines[1].split(",")
    np.testing.assert_allclose([float(v) for v in first[1:]], embeddings[0], rtol=1e-6)


def test_a_named_weight_column_among_others_is_the_one_read_and_checked(tmp_path):
    x = tmp_path / "x.npy"
    np.save(x, np.eye(3, dtype=np.float32))
    (tmp_path / "e.csv").write_text("src,dst,kind,stamp,w\n0,1,a,1700000000,2\n1,2,b,1700000001,heavy\n")
    with pytest.raises(DatasetError, match=r"line 3: has the weight 'heavy'"):
        load_files(tmp_path / "e.csv", x, edge_weight="w")
    (tmp_path / "e.csv").write_text("src,dst,kind,stamp,w\n0,1,a,1700000000,2\n1,2,b,1700000001,0.5\n")
    loaded = load_files(tmp_path / "e.csv", x, edge_weight="w")
    assert loaded.data.edge_weight.tolist() == [2, 2, 0.5, 0.5]
    assert any("'kind', 'stamp'" in w and "not read" in w for w in loaded.warnings)
    with pytest.raises(DatasetError, match="has no column 'weight2'"):
        load_files(tmp_path / "e.csv", x, edge_weight="weight2")


@pytest.mark.parametrize("form", sorted(FORMS))
def test_each_sparse_or_wide_form_trains_from_the_command_line_keeping_its_ids(string_graph, form, tmp_path):
    tmp, names = string_graph["tmp"], string_graph["names"]
    given = FORMS[form](tmp)
    extra = ["--feature-ids", str(given["feature_ids"])] if "feature_ids" in given else []
    export = tmp_path / "emb.parquet"
    assert (
        main(
            [
                "train",
                "--edges",
                str(tmp / "edges.csv"),
                "--features",
                str(given["features"]),
                *extra,
                "--epochs",
                "2",
                "--no-eval",
                "--quiet",
                "--out",
                str(tmp_path / "run"),
                "--export",
                str(export),
            ]
        )
        == 0
    )
    table = pq.read_table(export)
    assert table.schema.field("node_id").type == pa.string() and sorted(table.column("node_id").to_pylist()) == names
    np.testing.assert_array_equal(
        np.stack([table.column(c).to_numpy() for c in table.column_names[1:]], axis=1),
        np.load(tmp_path / "run" / "embeddings.npy"),
    )


def test_a_graph_from_dataframes_trains_with_the_estimator_and_exports_its_ids(string_graph, tmp_path):
    pd = pytest.importorskip("pandas")
    from gca import GCA, GCAConfig
    from gca.outputs.export import export_embeddings

    tmp, names = string_graph["tmp"], string_graph["names"]
    loaded = load_files(pd.read_csv(tmp / "edges.csv"), pd.read_csv(tmp / "long.csv"))
    model = GCA(GCAConfig(epochs=2, hidden=8, proj_hidden=8), device="cpu").fit(loaded.data)
    export_embeddings(tmp_path / "emb.csv", model.embedding_.numpy(), loaded.node_ids)
    frame = pd.read_csv(tmp_path / "emb.csv")
    assert sorted(frame["node_id"]) == names and frame.shape == (N, 9)
    row = frame.set_index("node_id").loc[loaded.node_ids[5]].to_numpy()
    np.testing.assert_allclose(row, model.embedding_.numpy()[5], rtol=1e-6)


def test_reading_a_large_file_says_how_far_it_has_come(tmp_path, monkeypatch, capsys):
    from gca.datasets import files as files_module

    monkeypatch.setattr(files_module, "PROGRESS_BYTES", 0)
    monkeypatch.setattr(tables_module, "BLOCK_BYTES", 1 << 10)
    (tmp_path / "e.csv").write_text("".join(f"{k},{k + 1}\n" for k in range(2000)))
    np.save(tmp_path / "x.npy", np.eye(2001, 3, dtype=np.float32))
    load_files(tmp_path / "e.csv", tmp_path / "x.npy", progress=True)
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("reading edges e.csv")]
    assert lines and lines[-1].startswith("reading edges e.csv: 1/1 MB"), lines
    load_files(tmp_path / "e.csv", tmp_path / "x.npy")  # progress=False: nothing
    assert "reading" not in capsys.readouterr().err


def test_embed_reads_named_sparse_features_into_the_columns_the_model_was_trained_on(string_graph, tmp_path, capsys):
    """Another file of the same graph — rows in another order, a word the model never saw — embeds each node as
    training did: its words land in the trained columns (sorted anew, 'a-new' would shift every column)."""
    tmp, names, dense = string_graph["tmp"], string_graph["names"], string_graph["dense"]
    rows = [(names[k], f"w{j}", float(dense[k, j])) for k in range(N) for j in range(WIDTH) if dense[k, j]]
    (tmp_path / "train.csv").write_text("node,word,count\n" + "".join(f"{a},{b},{c:g}\n" for a, b, c in rows))
    (tmp_path / "other.csv").write_text(
        "node,word,count\n" + "".join(f"{a},{b},{c:g}\n" for a, b, c in [*reversed(rows), (names[3], "a-new", 5.0)])
    )
    run = tmp_path / "run"
    assert (
        main(
            [
                "train",
                "--edges",
                str(tmp / "edges.csv"),
                "--features",
                str(tmp_path / "train.csv"),
                "--epochs",
                "2",
                "--no-eval",
                "--quiet",
                "--out",
                str(run),
                "--export",
                str(tmp_path / "train.parquet"),
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert (
        main(
            [
                "embed",
                "--checkpoint",
                str(run / "model.pt"),
                "--edges",
                str(tmp / "edges.csv"),
                "--features",
                str(tmp_path / "other.csv"),
                "--out",
                str(tmp_path / "emb"),
                "--export",
                str(tmp_path / "other.parquet"),
            ]
        )
        == 0
    )
    assert "1 feature (1 entries) that the model was not trained on are left out" in capsys.readouterr().err
    trained, other = (
        pq.read_table(tmp_path / f"{n}.parquet").to_pandas().set_index("node_id").sort_index()
        for n in ("train", "other")
    )
    np.testing.assert_allclose(other.to_numpy(), trained.to_numpy(), rtol=1e-5, atol=1e-6)


def test_an_id_list_keeps_each_line_whole(tmp_path):
    (tmp_path / "ids.txt").write_text("id\nSmith, J.\nDoe, A.\nRoe  B\n")  # commas and spaces inside ids
    np.save(tmp_path / "x.npy", np.arange(9, dtype=np.float32).reshape(3, 3))
    (tmp_path / "e.csv").write_text("source;target\nSmith, J.;Doe, A.\nDoe, A.;Roe  B\n")
    loaded = load_files(tmp_path / "e.csv", tmp_path / "x.npy", feature_ids=tmp_path / "ids.txt")
    assert loaded.node_ids == ["Smith, J.", "Doe, A.", "Roe  B"]
    assert loaded.data.edge_index.tolist() == [[0, 1, 1, 2], [1, 0, 2, 1]]
    (tmp_path / "short.txt").write_text("a\nb\n")
    with pytest.raises(DatasetError, match="holds 2 ids but .* has 3 rows"):
        load_files(tmp_path / "e.csv", tmp_path / "x.npy", feature_ids=tmp_path / "short.txt")


def test_self_loops_are_left_out_by_the_reader_once_and_the_graph_is_cleaning_s(tmp_path):
    """The reader leaves self-loops out (cleaning would copy the whole edge list to do it): the graph equals what
    cleaning makes of the raw pairs, and the loops are said once."""
    import torch
    from torch_geometric.data import Data

    from gca.graph.graph import prepare_graph

    rng = np.random.default_rng(11)
    pairs = rng.integers(0, 30, size=(200, 2))
    pairs[:7, 1] = pairs[:7, 0]  # loops, some repeated
    pairs[7] = pairs[0]
    (tmp_path / "e.csv").write_text("".join(f"{u},{v}\n" for u, v in pairs))
    np.save(tmp_path / "x.npy", rng.random((30, 4)).astype(np.float32))
    loaded = load_files(tmp_path / "e.csv", tmp_path / "x.npy")
    loops = len({int(u) for u, v in pairs if u == v})
    assert [w for w in loaded.warnings if "self-loop" in w] == [f"removed {loops} self-loops (GCN adds its own)"]
    ours = prepare_graph(loaded.data, directed=False)
    raw = Data(x=loaded.data.x, edge_index=torch.from_numpy(pairs.T.copy()), num_nodes=30)
    theirs = prepare_graph(raw, directed=False)
    assert torch.equal(ours.edge_index.long(), theirs.edge_index.long())
    assert not any("self-loop" in w for w in ours.warnings)


def test_a_dataframe_indexed_by_node_id_keeps_its_ids(tmp_path):
    pd = pytest.importorskip("pandas")
    edges = pd.DataFrame({"source": [30, 10], "target": [10, 20]})
    features = pd.DataFrame({"f": [1.0, 2.0, 3.0]}, index=pd.Index([10, 20, 30], name="node"))
    loaded = load_files(edges, features.iloc[::-1])  # rows 30, 20, 10: the index names them
    assert loaded.node_ids.tolist() == [30, 20, 10]
    assert loaded.data.x[:, 0].tolist() == [3.0, 2.0, 1.0]
    labels = pd.DataFrame({"label": ["a", "b", "a"]}, index=pd.Index([10, 20, 30], name="node"))
    assert load_files(edges, features, labels).data.y.tolist() == [0, 1, 0]
