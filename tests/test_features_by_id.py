"""Sparse features by id (long tables, JSON), feature tables' id columns and DataFrame indexes: every malformed
input is one line naming the file and where in it, nodes only the edges or the labels name are counted in one
warning, and every feature row lands on the node whose id it was given for."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from gca.cli import main
from gca.cli.guard import _is_out_of_memory
from gca.datasets import DatasetError, load_files, read_features


def _dense(loaded):
    x = loaded.data.x
    return (x.to_dense() if x.is_sparse else x).numpy()


def _one_line_error(*args, **kwargs) -> str:
    with pytest.raises(DatasetError) as caught:
        load_files(*args, **kwargs)
    message = str(caught.value)
    assert "\n" not in message and message.strip() == message
    return message


def _cli_error(capsys, edges, features, *extra) -> str:
    args = ["train", "--edges", str(edges), "--features", str(features), *map(str, extra), "--epochs", "1"]
    code = main([*args, "--quiet", "--no-eval", "--out", str(edges.parent / "out")])
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert code == 2 and len(err) == 1 and err[0].startswith("gca: error:"), err
    return err[0]


# ------------------------------------------------------------------------ a JSON list of lists: entry i is node i
def test_a_list_of_lists_gets_zero_rows_for_nodes_only_the_edges_name(tmp_path):
    (tmp_path / "e.csv").write_text("".join(f"{i},{i + 1}\n" for i in range(31)))  # nodes 0..31
    (tmp_path / "x.json").write_text(json.dumps([[i % 3, 3] for i in range(30)]))  # entries for nodes 0..29
    loaded = load_files(tmp_path / "e.csv", tmp_path / "x.json")
    assert loaded.data.num_nodes == 32 and len(loaded.node_ids) == 32
    rows = {int(node): row for node, row in zip(loaded.node_ids, _dense(loaded), strict=True)}
    for node in range(30):
        expected = np.zeros(4, dtype=np.float32)
        expected[[node % 3, 3]] = 1
        np.testing.assert_array_equal(rows[node], expected)
    assert not rows[30].any() and not rows[31].any()
    assert [w for w in loaded.warnings if "no features" in w] == [
        f"2 nodes of edge file {tmp_path / 'e.csv'} have no features in {tmp_path / 'x.json'}; their features are all "
        "zero"
    ]
    (tmp_path / "n.csv").write_text("0,1\n-4,2\n")
    assert "negative node id (-4)" in _one_line_error(tmp_path / "n.csv", tmp_path / "x.json")


def test_a_list_of_lists_naming_every_node_keeps_row_i_as_node_i(tmp_path):
    (tmp_path / "e.csv").write_text("0,1\n1,2\n")
    (tmp_path / "x.json").write_text(json.dumps([[0], [1], [0, 1]]))
    loaded = load_files(tmp_path / "e.csv", tmp_path / "x.json")
    assert loaded.node_ids is None and not any("no features" in w for w in loaded.warnings)
    np.testing.assert_array_equal(_dense(loaded), [[1, 0], [0, 1], [1, 1]])
    matrix, ids = read_features(tmp_path / "x.json")
    assert ids is None and matrix.shape == (3, 2)


# ------------------------------------------------------------------------ JSON: one line for every malformed file
BAD_JSON = {
    # name: (file text, words of the one-line error)
    "lists and objects mixed": ('{"a": [0], "b": {"1": 2.0}}', "mixes the two forms: node 'a' has a list"),
    "a list as a value": ('{"a": {"f": [1]}, "b": {"g": 1}}', "node 'a' gives feature 'f' the value [1]"),
    "a list as the only value": ('{"a": {"f": [1]}}', "node 'a' gives feature 'f' the value [1]"),
    "a text value": ('{"a": {"f": "x"}}', 'the value "x", which is not a number'),
    "nested 100,000 deep": ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    "node named twice": ('{"a": [1], "b": [2], "a": [3]}', "lists node 'a' twice"),
    "empty node id": ('{"": [1], "b": [2]}', "empty node id"),
    "null feature id": ('{"a": [1, null]}', "node 'a' has the feature id null"),
    "fractional feature id": ('{"a": [1.5]}', "node 'a' has the feature id 1.5"),
    "boolean feature id": ('{"a": [true]}', "feature id true (a JSON boolean)"),
    "list as feature id": ('{"a": [1, [2]]}', "feature id [2] (a JSON list)"),
    "a number as a node's entry": ('{"a": [1], "b": 7}', "node 'b' has a JSON number"),
    "a list of numbers": ("[[0], 3]", "entry 1 (node 1) has a JSON number"),
    "NaN value": ('{"a": {"f": 1}, "b": {"g": NaN}}', "node 'b' gives feature 'g' a value that is NaN"),
    "infinite value": ('{"a": {"f": -Infinity}}', "a value that is infinite"),
    "a string": ('"features"', "holds a JSON string"),
}


@pytest.mark.parametrize("case", sorted(BAD_JSON))
def test_a_malformed_json_features_file_is_one_line(case, tmp_path):
    text, words = BAD_JSON[case]
    (tmp_path / "e.csv").write_text("a,b\n" if text.startswith("{") else "0,1\n")
    (tmp_path / "x.json").write_text(text)
    message = _one_line_error(tmp_path / "e.csv", tmp_path / "x.json")
    assert words in message and str(tmp_path / "x.json") in message, message


def test_deep_json_and_mixed_forms_are_one_line_from_the_command_line(tmp_path, capsys):
    (tmp_path / "e.csv").write_text("a,b\n")
    (tmp_path / "deep.json").write_text("{" + '"a":{' * 50_000 + "}" * 50_001)
    assert "nested too deeply" in _cli_error(capsys, tmp_path / "e.csv", tmp_path / "deep.json")
    (tmp_path / "mixed.json").write_text('{"a": [0], "b": {"1": 2.0}}')
    assert "mixes the two forms" in _cli_error(capsys, tmp_path / "e.csv", tmp_path / "mixed.json")


# ------------------------------------------------------------------------ feature ids far beyond the features used
@pytest.mark.parametrize("big", [10**8, 2 * 10**9, 2**40])
def test_feature_ids_that_leave_most_columns_empty_are_read_as_names(big, tmp_path):
    (tmp_path / "e.csv").write_text("a,b\nb,c\n")
    (tmp_path / "x.json").write_text(json.dumps({"a": [big, 1], "b": [1], "c": [5]}))
    loaded = load_files(tmp_path / "e.csv", tmp_path / "x.json")
    assert loaded.feature_names == ["1", "5", str(big)]  # ordered by number, one column each
    np.testing.assert_array_equal(_dense(loaded), [[1, 0, 1], [1, 0, 0], [0, 1, 0]])
    assert any(f"feature ids reach {big:,} but only 3 are used" in w for w in loaded.warnings)
    (tmp_path / "long.csv").write_text(f"node,feature\na,{big}\na,1\nb,1\nc,5\n")  # a long table: the same columns
    np.testing.assert_array_equal(_dense(load_files(tmp_path / "e.csv", tmp_path / "long.csv")), _dense(loaded))


def test_a_numbered_vocabulary_that_is_mostly_used_stays_column_numbers(tmp_path):
    (tmp_path / "e.csv").write_text("a,b\n")
    (tmp_path / "x.json").write_text(json.dumps({"a": [0, 3], "b": [2]}))
    loaded = load_files(tmp_path / "e.csv", tmp_path / "x.json")
    assert loaded.feature_names is None and loaded.data.x.shape == (2, 4)


def test_a_failed_cpu_allocation_is_out_of_memory():
    message = (
        "[enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't allocate memory: you tried to "
        "allocate 102400001024 bytes. Error code 12 (Cannot allocate memory)"
    )
    assert _is_out_of_memory(RuntimeError(message))
    assert not _is_out_of_memory(RuntimeError("mat1 and mat2 shapes cannot be multiplied"))


# ------------------------------------------------------------------------ long tables: empty ids, NaN, located
BAD_LONG = {
    # name: (file text, words of the error, its line)
    "empty node id": ("id,feature\na,w\n,w2\nb,w\n", "the node id is empty", "line 3"),
    "blank node id": ("id,feature\na,w\nb,w\n  ,w2\n", "the node id is empty", "line 4"),
    "empty feature id": ("id,feature,value\na,w,1\nb,,2\n", "the feature id is empty", "line 3"),
    "NaN value": ("id,feature,value\na,w,1\nb,w,nan\n", "feature value 'nan' is NaN", "line 3"),
    "infinite value": (
        "# a comment\nid,feature,value\na,w,1\nb,w,2\nb,v,-inf\n",
        "feature value '-inf' is infinite",
        "line 5",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_LONG))
def test_a_malformed_long_table_is_one_line_naming_its_line(case, tmp_path):
    text, words, line = BAD_LONG[case]
    (tmp_path / "e.csv").write_text("a,b\n")
    (tmp_path / "x.csv").write_text(text)
    message = _one_line_error(tmp_path / "e.csv", tmp_path / "x.csv")
    assert message.startswith(f"{tmp_path / 'x.csv'}, {line}: {words}"), message


def test_a_nan_in_a_long_table_is_located_from_the_command_line(tmp_path, capsys):
    (tmp_path / "e.csv").write_text("0,1\n1,2\n")
    (tmp_path / "x.csv").write_text("id,feature,value\n0,w,1\n1,w,NaN\n2,w,1\n")
    message = _cli_error(capsys, tmp_path / "e.csv", tmp_path / "x.csv")
    assert f"{tmp_path / 'x.csv'}, line 3: feature value 'nan' is NaN" in message


def test_a_nan_in_a_long_parquet_table_is_located_by_its_row(tmp_path):
    table = pa.table({"node": ["a", "b", "c"], "feature": [0, 1, 2], "value": [1.0, 2.0, float("nan")]})
    pq.write_table(table, tmp_path / "x.parquet")
    (tmp_path / "e.csv").write_text("a,b\n")
    assert "row 3: feature value 'nan' is NaN" in _one_line_error(tmp_path / "e.csv", tmp_path / "x.parquet")


# ------------------------------------------------------------------------ wide tables: the id column
def test_an_empty_id_cell_of_a_feature_table_is_named_by_its_line(tmp_path, capsys):
    (tmp_path / "e.csv").write_text("a,b\nb,c\n")
    (tmp_path / "x.csv").write_text("id,f\na,1\n,2\nb,3\nc,4\n")
    message = _one_line_error(tmp_path / "e.csv", tmp_path / "x.csv")
    assert message == f"{tmp_path / 'x.csv'}, line 3: the node id is empty; give every row its node id"
    assert "line 3: the node id is empty" in _cli_error(capsys, tmp_path / "e.csv", tmp_path / "x.csv")


def test_a_nan_in_a_wide_table_is_named_by_its_line(tmp_path):
    (tmp_path / "e.csv").write_text("0,1\n")
    (tmp_path / "x.csv").write_text("1,0\n0,1\n2,inf\n")
    assert "x.csv, line 3: feature value 'inf' is infinite" in _one_line_error(tmp_path / "e.csv", tmp_path / "x.csv")


@pytest.mark.parametrize("kind", ["list", "struct"])
@pytest.mark.parametrize("form", ["wide", "long", "labels"])
def test_a_parquet_id_column_of_lists_or_structs_is_one_line(kind, form, tmp_path):
    ids = pa.array([[1], [2]]) if kind == "list" else pa.array([{"x": 1}, {"x": 2}])
    edges = tmp_path / "e.csv"
    edges.write_text("1,2\n")
    features = tmp_path / "x.csv"
    features.write_text("id,f\n1,1\n2,2\n")
    labels = None
    if form == "wide":
        features = tmp_path / "x.parquet"
        pq.write_table(pa.table({"id": ids, "f": [1.0, 2.0]}), features)
    elif form == "long":
        features = tmp_path / "x.parquet"
        pq.write_table(pa.table({"id": ids, "feature": [1, 2]}), features)
    else:
        labels = tmp_path / "y.parquet"
        pq.write_table(pa.table({"id": ids, "label": ["p", "q"]}), labels)
    message = _one_line_error(edges, features, labels)
    assert f"column 'id' holds {kind}<" in message and "values; a node id is an integer or text" in message, message


def test_a_dataframe_id_column_of_lists_is_one_line():
    pd = pytest.importorskip("pandas")
    edges = pd.DataFrame({"source": ["a"], "target": ["b"]})
    features = pd.DataFrame({"id": [["a"], ["b"]], "f": [1.0, 2.0]})
    assert "the feature table: column 'id' holds list<item: string> values" in _one_line_error(edges, features)


# ------------------------------------------------------------------------ a DataFrame's index of node ids
@pytest.mark.parametrize("name", ["user", "node"])
def test_a_dataframe_indexed_by_node_ids_aligns_each_row_with_its_node(name, tmp_path):
    """Node k's features are (k, 10k): wherever a row lands, it must be the row of the node its id names."""
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(3)
    ids = rng.permutation(np.arange(100, 140))  # integer ids, in no order
    edges = pd.DataFrame({"source": ids[:-1], "target": ids[1:]})
    features = pd.DataFrame({"a": ids.astype(float), "b": 10.0 * ids}, index=pd.Index(ids, name=name))
    features = features.sample(frac=1, random_state=1)  # rows in yet another order
    loaded = load_files(edges, features)
    x = _dense(loaded)
    assert x.shape == (40, 2)  # the index is the ids, never a feature column
    np.testing.assert_array_equal(x[:, 0], np.asarray(loaded.node_ids, dtype=np.float32))
    np.testing.assert_array_equal(x[:, 1], 10 * np.asarray(loaded.node_ids, dtype=np.float32))
    pairs = {(int(loaded.node_ids[u]), int(loaded.node_ids[v])) for u, v in loaded.data.edge_index.t().tolist()}
    listed = {(int(u), int(v)) for u, v in zip(ids[:-1], ids[1:], strict=True)}
    assert pairs == listed | {(v, u) for u, v in listed}


def test_an_unnamed_index_of_node_ids_is_refused_not_guessed():
    """An unnamed index may as well be row positions left by filtering rows: it is never read as ids, and numeric
    rows that would then be numbered by position against it are one line, not silently misaligned."""
    pd = pytest.importorskip("pandas")
    ids = np.random.default_rng(3).permutation(np.arange(100, 140))
    edges = pd.DataFrame({"source": ids[:-1], "target": ids[1:]})
    features = pd.DataFrame({"a": ids.astype(float), "b": 10.0 * ids}, index=pd.Index(ids))
    assert "unnamed index that is not 0..N-1" in _one_line_error(edges, features)


def test_a_named_default_index_is_the_node_ids_too():
    pd = pytest.importorskip("pandas")
    features = pd.DataFrame({"f": [5.0, 6.0, 7.0]})
    features.index.name = "user"
    loaded = load_files(pd.DataFrame({"s": [0, 1], "t": [1, 2]}), features)
    assert loaded.data.x.shape == (3, 1) and loaded.node_ids.tolist() == [0, 1, 2]


def test_an_index_named_by_id_column_labels_its_rows():
    pd = pytest.importorskip("pandas")
    edges = pd.DataFrame({"s": ["a", "b"], "t": ["b", "c"]})
    features = pd.DataFrame({"f": [1.0, 2.0, 3.0]}, index=pd.Index(["c", "a", "b"], name="user"))
    labels = pd.DataFrame({"label": ["x", "y", "x"]}, index=pd.Index(["b", "c", "a"], name="user"))
    loaded = load_files(edges, features, labels, id_column="user")
    assert loaded.node_ids == ["c", "a", "b"]
    assert [loaded.class_names[k] for k in loaded.data.y.tolist()] == ["y", "x", "x"]


def test_a_dataframe_with_a_multiindex_is_one_line():
    pd = pytest.importorskip("pandas")
    index = pd.MultiIndex.from_tuples([(0, "a"), (1, "b")], names=["graph", "node"])
    features = pd.DataFrame({"f": [1.0, 2.0]}, index=index)
    message = _one_line_error(pd.DataFrame({"s": [0], "t": [1]}), features)
    assert "indexed by 2 levels (graph, node)" in message


# ------------------------------------------------------------------------ labels of nodes not in the graph
@pytest.mark.parametrize("form", ["long", "json", "list of lists"])
def test_labels_of_absent_nodes_with_sparse_features_are_skipped_and_counted(form, tmp_path, capsys):
    names = [f"n{i}" for i in range(6)]
    integer = form == "list of lists"

    def node(i: int) -> str:
        return str(i) if integer else names[i]

    (tmp_path / "e.csv").write_text("".join(f"{node(i)},{node(i + 1)}\n" for i in range(5)))
    if form == "long":
        (tmp_path / "x.csv").write_text("node,feature\n" + "".join(f"{node(i)},w{i % 2}\n" for i in range(6)))
        features = tmp_path / "x.csv"
    elif form == "json":
        (tmp_path / "x.json").write_text(json.dumps({node(i): [i % 2] for i in range(6)}))
        features = tmp_path / "x.json"
    else:
        (tmp_path / "x.json").write_text(json.dumps([[i % 2] for i in range(6)]))
        features = tmp_path / "x.json"
    gone = [f"{1000 + k}" if integer else f"gone{k}" for k in range(50)]
    rows = [f"{node(i)},{'pq'[i % 2]}\n" for i in range(6)] + [f"{g},p\n" for g in gone]
    (tmp_path / "y.csv").write_text("node,label\n" + "".join(rows))
    loaded = load_files(tmp_path / "e.csv", features, tmp_path / "y.csv")
    assert loaded.data.num_nodes == 6 and loaded.data.y.tolist() == [0, 1, 0, 1, 0, 1]
    assert loaded.node_ids is None if integer else loaded.node_ids == names
    assert [w for w in loaded.warnings if "not in the graph" in w] == [
        f"50 labels in {tmp_path / 'y.csv'} name nodes that are not in the graph (e.g. '{gone[0]}'); skipped"
    ]
    if form == "long":  # the command line trains on it, and says so once
        args = ["train", "--edges", str(tmp_path / "e.csv"), "--features", str(features), "--labels"]
        args += [str(tmp_path / "y.csv"), "--epochs", "1", "--quiet", "--no-eval", "--out", str(tmp_path / "o")]
        assert main(args) == 0
        assert capsys.readouterr().err.count("name nodes that are not in the graph") == 1


# ------------------------------------------------------------------------ ids follow one rule across the files
def test_a_json_node_without_features_keeps_its_own_row_when_ids_are_kept_as_written(tmp_path):
    (tmp_path / "e.csv").write_text("01,1\n1,2\n2,01\n")
    (tmp_path / "x.json").write_text('{"01": {}, "1": {"0": 1}, "2": {"0": 2}}')  # x of a node is its number
    loaded = load_files(tmp_path / "e.csv", tmp_path / "x.json")
    assert loaded.node_ids == ["01", "1", "2"]
    np.testing.assert_array_equal(_dense(loaded), [[0], [1], [2]])


@pytest.mark.parametrize(
    "text, edges",
    [('{"1": [1], "2": [2], "a": []}', "1,2\n2,a\n"), ('{"1": [1], "2": [2], "007": []}', "1,2\n2,007\n")],
)
def test_a_json_node_without_features_whose_id_is_text_is_read(tmp_path, text, edges):
    (tmp_path / "e.csv").write_text(edges)
    (tmp_path / "x.json").write_text(text)
    loaded = load_files(tmp_path / "e.csv", tmp_path / "x.json")
    rows = {str(node): row for node, row in zip(loaded.node_ids, _dense(loaded), strict=True)}
    assert (
        rows["1"].tolist() == [0, 1, 0]
        and rows["2"].tolist() == [0, 0, 1]
        and not any(r.any() for k, r in rows.items() if k not in ("1", "2"))
    )


def test_json_nodes_all_without_features_are_one_line(tmp_path, capsys):
    (tmp_path / "e.csv").write_text("1,2\n2,3\n")
    (tmp_path / "x.json").write_text('{"1": [], "2": [], "3": []}')
    assert "3×0 matrix" in _one_line_error(tmp_path / "e.csv", tmp_path / "x.json")
    assert "3×0 matrix" in _cli_error(capsys, tmp_path / "e.csv", tmp_path / "x.json")


def test_a_json_value_true_is_not_a_number(tmp_path):
    (tmp_path / "e.csv").write_text("0,1\n")
    (tmp_path / "x.json").write_text('{"0": {"1": true}, "1": {"1": 1}}')
    message = _one_line_error(tmp_path / "e.csv", tmp_path / "x.json")
    assert "node '0' gives feature '1' the value true, which is not a number" in message


@pytest.mark.parametrize("header", ["node,feature\n", "node,feature,value\n", "id,f\n"])
@pytest.mark.parametrize("layout", ["auto", "long"])
def test_a_feature_file_of_only_a_header_says_so(tmp_path, header, layout):
    (tmp_path / "e.csv").write_text("a,b\n")
    (tmp_path / "x.csv").write_text(header)
    message = _one_line_error(tmp_path / "e.csv", tmp_path / "x.csv", feature_layout=layout)
    assert message == f"feature file {tmp_path / 'x.csv'} has a header but no rows"


def test_a_long_table_of_names_without_a_header_keeps_its_first_row(tmp_path):
    (tmp_path / "e.csv").write_text("a,b\nb,c\n")
    (tmp_path / "x.csv").write_text("a,apple\nb,banana\nc,cherry\n")
    loaded = load_files(tmp_path / "e.csv", tmp_path / "x.csv", feature_layout="long")
    assert loaded.node_ids == ["a", "b", "c"] and loaded.feature_names == ["apple", "banana", "cherry"]
    np.testing.assert_array_equal(_dense(loaded), np.eye(3))
    (tmp_path / "h.csv").write_text("user,word\na,apple\nb,banana\nc,cherry\n")  # a known column name: a header
    loaded = load_files(tmp_path / "e.csv", tmp_path / "h.csv", feature_layout="long")
    assert loaded.node_ids == ["a", "b", "c"] and loaded.feature_names == ["apple", "banana", "cherry"]


@pytest.mark.parametrize(
    "rows, names", [("a,007\nb,7\nc,8\n", ["007", "7", "8"]), ("a,007\nb,7\nc,x7\n", ["007", "7", "x7"])]
)
def test_feature_ids_written_so_they_would_change_as_integers_are_names_as_written(tmp_path, rows, names):
    (tmp_path / "e.csv").write_text("a,b\nb,c\n")
    (tmp_path / "x.csv").write_text("node,feature\n" + rows)
    loaded = load_files(tmp_path / "e.csv", tmp_path / "x.csv")
    assert loaded.feature_names == names
    np.testing.assert_array_equal(_dense(loaded), np.eye(3))  # node a has 007, b has 7, c the third


@pytest.mark.parametrize(
    "name, text",
    [
        ("x.json", '{"1": [10], "2": [9], "3": [18446744073709551616]}'),
        ("x.csv", "node,feature\n1,10\n2,9\n3,18446744073709551616\n"),
    ],
)
def test_feature_ids_beyond_64_bits_are_names_in_numeric_order_with_a_warning(tmp_path, name, text):
    (tmp_path / "e.csv").write_text("1,2\n2,3\n")
    (tmp_path / name).write_text(text)
    loaded = load_files(tmp_path / "e.csv", tmp_path / name)
    assert loaded.feature_names == ["9", "10", "18446744073709551616"]
    np.testing.assert_array_equal(_dense(loaded), [[0, 1, 0], [1, 0, 0], [0, 0, 1]])
    assert any("beyond 64 bits" in w and "numeric order" in w for w in loaded.warnings)


def test_an_empty_value_cell_of_a_long_table_is_refused_naming_its_line(tmp_path):
    (tmp_path / "e.csv").write_text("a,b\n")
    (tmp_path / "x.csv").write_text("node,feature,value\na,f,2\nb,g,\n")
    message = _one_line_error(tmp_path / "e.csv", tmp_path / "x.csv")
    assert "line 3" in message and "feature value '' is not a number" in message


def test_counts_of_one_are_said_in_the_singular(tmp_path):
    (tmp_path / "e.csv").write_text("a,b\nb,c\n")
    (tmp_path / "x.csv").write_text("node,feature\na,f\nb,g\n")
    (tmp_path / "y.csv").write_text("node,label\na,x\nb,nan\nc,y\nz,y\n")
    loaded = load_files(tmp_path / "e.csv", tmp_path / "x.csv", tmp_path / "y.csv")
    assert (
        f"1 node of edge file {tmp_path / 'e.csv'} has no features in {tmp_path / 'x.csv'}; its features are all "
        "zero" in loaded.warnings
    )
    assert (
        f"1 label in {tmp_path / 'y.csv'} names a node that is not in the graph (e.g. 'z'); skipped" in loaded.warnings
    )
    assert any(w.startswith("1 of the nodes listed") and "has no label" in w for w in loaded.warnings)
