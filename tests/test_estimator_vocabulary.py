"""A model fitted from Python on a graph of named features (words) keeps their names: ``GCA.save`` writes them,
``GCA.load`` gives them back as ``feature_names_in_``, and ``gca embed`` maps another file's words to the same
columns — as it does for a model ``gca train`` wrote."""

from __future__ import annotations

import numpy as np
import pytest
from torch_geometric.data import Data

from gca import GCA, GCAConfig
from gca.cli import main
from gca.config import ConfigError
from gca.datasets import karate_club, load_files
from gca.train.checkpoint import CheckpointError, load_checkpoint, save_checkpoint

CONFIG = GCAConfig(epochs=2, hidden=8, proj_hidden=8, seed=0)
EDGES = "a,b\nb,c\nc,d\nd,e\ne,f\nf,a\na,d\n"
WORDS = "id,feature\na,red\na,blue\nb,green\nc,red\nc,green\nd,blue\ne,red\ne,blue\ne,green\nf,green\n"


def _words_graph(folder, words=WORDS, name="x.csv"):
    (folder / "e.csv").write_text(EDGES)
    (folder / name).write_text(words)
    return folder / "e.csv", folder / name


def test_a_model_fitted_on_words_keeps_their_names_through_save_and_load(tmp_path):
    loaded = load_files(*_words_graph(tmp_path), directed=False)
    assert loaded.feature_names == ["blue", "green", "red"]
    fitted = GCA(CONFIG, device="cpu").fit(loaded.data)
    assert fitted.feature_names_in_ == ["blue", "green", "red"]
    fitted.save(tmp_path / "m.pt")
    assert load_checkpoint(tmp_path / "m.pt")["feature_names"] == ["blue", "green", "red"]
    assert GCA.load(tmp_path / "m.pt", device="cpu").feature_names_in_ == ["blue", "green", "red"]
    numbered = GCA(CONFIG, device="cpu").fit(karate_club())  # features without names: none kept, none said
    assert numbered.feature_names_in_ is None
    numbered.save(tmp_path / "n.pt")
    assert "feature_names" not in load_checkpoint(tmp_path / "n.pt")
    assert GCA.load(tmp_path / "n.pt", device="cpu").feature_names_in_ is None


def test_gca_embed_maps_another_files_words_to_the_columns_of_a_model_saved_from_python(tmp_path, capsys):
    edges, words = _words_graph(tmp_path)
    fitted = GCA(CONFIG, device="cpu").fit(load_files(edges, words, directed=False).data)
    fitted.save(tmp_path / "m.pt")
    args = ["embed", "--checkpoint", str(tmp_path / "m.pt"), "--edges", str(edges), "--no-cache"]
    assert main([*args, "--features", str(words), "--out", str(tmp_path / "same")]) == 0, capsys.readouterr().err
    np.testing.assert_allclose(np.load(tmp_path / "same" / "embeddings.npy"), fitted.embedding_.numpy(), atol=1e-5)
    # no node has "blue" here, and "purple" is new: the file's own sorted words would be two other columns
    fewer = WORDS.replace("blue", "purple")
    _, other = _words_graph(tmp_path, fewer, "y.csv")
    assert main([*args, "--features", str(other), "--out", str(tmp_path / "other")]) == 0, capsys.readouterr().err
    x = load_files(edges, words, directed=False).data.x.to_dense()
    x[:, 0] = 0  # blue's column: nobody has it
    expected = fitted.embed(Data(x=x, edge_index=load_files(edges, words, directed=False).data.edge_index))
    np.testing.assert_allclose(np.load(tmp_path / "other" / "embeddings.npy"), expected.numpy(), atol=1e-5)


def test_feature_names_that_do_not_fit_the_columns_are_one_line(tmp_path):
    data = karate_club()
    data.feature_names = ["only", "two"]
    with pytest.raises(ConfigError, match="2 feature names for 34 feature columns") as caught:
        GCA(CONFIG, device="cpu").fit(data)
    assert "\n" not in str(caught.value)
    state = GCA(CONFIG, device="cpu").fit(karate_club()).state()
    save_checkpoint(tmp_path / "m.pt", {**state, "feature_names": ["one"]})
    with pytest.raises(CheckpointError, match="1 feature names for its 34 input features"):
        GCA.load(tmp_path / "m.pt", device="cpu")


def test_a_data_without_names_after_one_with_them_keeps_none(tmp_path):
    loaded = load_files(*_words_graph(tmp_path), directed=False)
    estimator = GCA(CONFIG, device="cpu").fit(loaded.data)
    plain = Data(x=loaded.data.x.to_dense(), edge_index=loaded.data.edge_index)
    assert estimator.fit(plain).feature_names_in_ is None  # the names of an earlier fit are not this one's
