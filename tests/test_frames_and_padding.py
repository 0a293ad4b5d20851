"""DataFrames' indexes and spaces around ids: each row must reach the node its id names, or one line says why not."""

from __future__ import annotations

import numpy as np
import pytest

from gca.datasets import DatasetError, load_files

pd = pytest.importorskip("pandas")

EDGES = pd.DataFrame({"source": [0, 1, 2, 3], "target": [1, 2, 3, 0]})
FEATURES = pd.DataFrame({"id": [0, 1, 2, 3], "f": [0.0, 1.0, 2.0, 3.0]})


def _labels_by_node(loaded) -> dict[int, str | None]:
    return {
        int(n): (loaded.class_names[k] if k >= 0 else None)
        for n, k in zip(loaded.node_ids, loaded.data.y.tolist(), strict=True)
    }


def _one_line(*args, **kwargs) -> str:
    with pytest.raises(DatasetError) as caught:
        load_files(*args, **kwargs)
    message = str(caught.value)
    assert "\n" not in message
    return message


# ------------------------------------------------------------------------ an unnamed index is never read
@pytest.mark.parametrize("label_column", ["team", None])
def test_a_label_frame_left_by_filtering_rows_is_matched_by_its_id_column(label_column):
    raw = pd.DataFrame({"user": [3, 1, 2, 0, 5], "team": ["x", "y", None, "y", "x"]})
    labels = raw[raw.team.notna()]  # index 0, 1, 3, 4: row positions, not node ids
    loaded = load_files(EDGES, FEATURES, labels, label_column=label_column)
    assert _labels_by_node(loaded) == {0: "y", 1: "y", 2: None, 3: "x"}
    assert any("'5'" in w for w in loaded.warnings)  # node 5 is not in the graph


def test_a_numeric_feature_frame_with_an_unnamed_index_is_refused():
    """Rows numbered by position, which the index says they are not: row 0 would silently be node 0."""
    features = pd.DataFrame({"f": [9.0, 0.0, 1.0, 2.0, 3.0]}).iloc[1:]
    message = _one_line(EDGES, features)
    assert "unnamed index that is not 0..N-1" in message and "df.index.name" in message


def test_a_one_column_label_frame_with_an_unnamed_index_is_refused():
    labels = pd.DataFrame({"label": ["a", "b", "a"]}, index=[3, 1, 2])
    assert "label DataFrame has an unnamed index" in _one_line(EDGES, FEATURES, labels)


def test_a_text_id_column_is_the_id_whatever_the_unnamed_index():
    edges = pd.DataFrame({"source": ["a", "b"], "target": ["b", "c"]})
    features = pd.DataFrame({"user": ["z", "a", "b", "c"], "f": [9.0, 1.0, 2.0, 3.0]}).iloc[1:]
    loaded = load_files(edges, features)
    assert loaded.node_ids == ["a", "b", "c"]
    assert loaded.data.x[:, 0].tolist() == [1.0, 2.0, 3.0]


def test_an_unnamed_index_beside_an_id_column_is_not_a_feature():
    features = pd.DataFrame({"id": [9, 3, 2, 1, 0], "f": [9.0, 3.0, 2.0, 1.0, 0.0]}).iloc[1:]
    loaded = load_files(EDGES, features)
    assert loaded.data.x.shape == (4, 1)
    np.testing.assert_array_equal(loaded.data.x[:, 0].numpy(), np.asarray(loaded.node_ids, dtype=np.float32))


# ------------------------------------------------------------------------ an index that is also a column
def test_an_index_that_is_also_a_text_column_is_that_column():
    edges = pd.DataFrame({"source": ["a", "b"], "target": ["b", "c"]})
    features = pd.DataFrame({"user": ["c", "a", "b"], "f": [3.0, 1.0, 2.0]}).set_index("user", drop=False)
    loaded = load_files(edges, features)
    assert loaded.node_ids == ["c", "a", "b"] and loaded.data.x[:, 0].tolist() == [3.0, 1.0, 2.0]


@pytest.mark.parametrize("name", ["user", 0])
def test_an_index_that_is_also_a_numeric_column_is_the_ids_not_a_feature(name):
    features = pd.DataFrame({name: [3.0, 1.0, 2.0, 0.0], "f": [30.0, 10.0, 20.0, 0.0]})
    features.index = pd.Index([3, 1, 2, 0], name=name)
    loaded = load_files(EDGES, features)
    assert loaded.data.x.shape == (4, 1)
    np.testing.assert_array_equal(loaded.data.x[:, 0].numpy(), 10 * np.asarray(loaded.node_ids, dtype=np.float32))


def test_a_label_frame_indexed_by_its_own_id_column_labels_by_it():
    labels = pd.DataFrame({"user": [3, 0, 1], "team": ["x", "y", "y"]}).set_index("user", drop=False)
    loaded = load_files(EDGES, FEATURES, labels, label_column="team")
    assert _labels_by_node(loaded) == {0: "y", 1: "y", 2: None, 3: "x"}


def test_an_index_that_differs_from_its_namesake_column_is_one_line():
    labels = pd.DataFrame({"label": ["a", "b", "a"]}, index=pd.Index([1, 2, 3], name="label"))
    assert "index 'label' differs from its column 'label'" in _one_line(EDGES, FEATURES, labels)


# ------------------------------------------------------------------------ true/false is not a node id
def test_a_boolean_first_column_of_features_is_not_read_as_ids():
    features = pd.DataFrame({"flag": [True, False, True, False], "f": [0.0, 1.0, 2.0, 3.0]})
    message = _one_line(EDGES, features)
    assert "true/false" in message and "twice" not in message


def test_a_boolean_id_column_of_labels_is_one_line():
    labels = pd.DataFrame({"flag": [True, False], "label": ["a", "b"]})
    assert "true/false" in _one_line(EDGES, FEATURES, labels)


# ------------------------------------------------------------------------ spaces around ids, on any line
def _padded_late(tmp_path, wide: bool, late: str) -> tuple:
    """300 unpadded rows (more than the sampled lines) and then one padded row."""
    names = [f"n{i}" for i in range(300)]
    (tmp_path / "e.csv").write_text("".join(f"{a},{b}\n" for a, b in zip(names, names[1:], strict=False)))
    if wide:
        body = "id,f\n" + "".join(f"{n},{i}\n" for i, n in enumerate(names)) + late
    else:
        body = "id,feature\n" + "".join(f"{n},0\n" for n in names) + late
    (tmp_path / "f.csv").write_text(body)
    return tmp_path / "e.csv", tmp_path / "f.csv"


def test_a_padded_id_past_the_sampled_lines_of_a_long_file_is_its_node(tmp_path):
    loaded = load_files(*_padded_late(tmp_path, False, " n5,1\n"))
    assert len(loaded.node_ids) == 300 and " n5" not in loaded.node_ids
    row = loaded.node_ids.index("n5")
    assert loaded.data.x.to_dense()[row].tolist() == [1.0, 1.0]


def test_a_padded_repeat_past_the_sampled_lines_of_a_wide_file_is_named_with_its_line(tmp_path):
    message = _one_line(*_padded_late(tmp_path, True, " n5 ,5\n"))
    assert "lists node 'n5' twice (again on line 302)" in message


def test_a_padded_id_past_the_sampled_lines_of_a_wide_file_is_its_node(tmp_path):
    edges, features = _padded_late(tmp_path, True, "n300 ,300\n")
    edges.write_text(edges.read_text() + "n299,n300\n")
    loaded = load_files(edges, features)
    assert loaded.node_ids[-1] == "n300" and loaded.data.x[-1].tolist() == [300.0]


def test_a_node_listed_twice_in_a_wide_file_names_its_line(tmp_path):
    (tmp_path / "e.csv").write_text("a,b\n")
    (tmp_path / "f.csv").write_text("id,f\na,1\nb,2\n# note\na,3\n")
    assert "lists node 'a' twice (again on line 5)" in _one_line(tmp_path / "e.csv", tmp_path / "f.csv")
