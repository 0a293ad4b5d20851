"""scikit-learn's estimator protocol on GCA: get_params / set_params, clone, fit returns self, transform, repr —
the conventions scikit-learn's check_estimator tests, on a graph instead of a matrix."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import sklearn.base
import torch
from torch_geometric.nn import GCNConv

from gca.config import ConfigError, GCAConfig
from gca.datasets import karate_club
from gca.train.estimator import GCA

CONFIG = GCAConfig(epochs=2, hidden=8, proj_hidden=8, seed=3)


def test_get_params_gives_the_arguments_as_given_and_deep_adds_the_config_fields():
    encoder = GCNConv(34, 8)
    estimator = GCA(CONFIG, device="cpu", encoder=encoder)
    shallow = estimator.get_params(deep=False)
    assert set(shallow) == {"config", "device", "progress", "objective", "batches", "placement", "encoder",
                            "loggers"}
    assert shallow["config"] is CONFIG and shallow["device"] == "cpu" and shallow["encoder"] is encoder
    deep = estimator.get_params()
    assert deep["lr"] == CONFIG.lr and deep["tau"] == CONFIG.tau and deep["epochs"] == 2


def test_sklearn_clone_is_an_untrained_copy_with_the_same_parameters():
    fitted = GCA(CONFIG, device="cpu").fit(karate_club())
    twin = sklearn.base.clone(fitted)
    assert twin is not fitted and twin.config == fitted.config and twin.model is None and twin.embedding_ is None
    assert twin.device == fitted.device
    torch.testing.assert_close(twin.fit_transform(karate_club()), fitted.embedding_, rtol=0, atol=0)
    assert sklearn.base.clone(GCA()).config == GCAConfig()


def test_set_params_changes_config_fields_by_name_and_returns_the_estimator():
    estimator = GCA(CONFIG, device="cpu").fit(karate_club())
    assert estimator.set_params(lr=0.01, tau=0.5) is estimator
    assert estimator.config == CONFIG.replace(lr=0.01, tau=0.5) and estimator.model is None  # untrained again
    assert estimator.get_params()["lr"] == 0.01
    with pytest.raises(ConfigError, match="did you mean 'lr'"):
        estimator.set_params(lrr=0.1)
    with pytest.raises(ConfigError, match="tau"):
        estimator.set_params(tau=-1.0)
    estimator.set_params(config=GCAConfig(epochs=1, hidden=8, proj_hidden=8), device="cpu")
    assert estimator.config.epochs == 1 and estimator.get_params()["epochs"] == 1


def test_fit_returns_the_estimator_and_transform_embeds_with_the_trained_encoder():
    data = karate_club()
    estimator = GCA(CONFIG, device="cpu")
    assert estimator.fit(data) is estimator
    z = estimator.embedding_
    assert z.shape == (34, 8) and z.dtype == torch.float32
    torch.testing.assert_close(estimator.transform(), z, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(estimator.transform(data), z, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(GCA(CONFIG, device="cpu").fit_transform(data), z, rtol=0, atol=0)
    assert pickle.loads(pickle.dumps(estimator)).embedding_.equal(z)


def test_the_repr_shows_what_differs_from_the_defaults():
    assert repr(GCA()) == "GCA()"
    shown = repr(GCA(GCAConfig(lr=0.01, epochs=20), device="cpu", encoder=GCNConv(3, 8)))
    assert shown == "GCA(config=GCAConfig(lr=0.01, epochs=20), device='cpu', encoder=GCNConv)"


def test_an_unknown_config_key_is_named_with_a_suggestion_and_is_a_type_error():
    with pytest.raises(TypeError, match="unknown config key 'lrr'; did you mean 'lr'"):
        GCAConfig(lrr=0.1)
    with pytest.raises(ConfigError):
        GCAConfig(lrr=0.1)


def test_a_heterogeneous_graph_or_another_object_is_one_line():
    from torch_geometric.data import HeteroData

    from gca.graph.graph import GraphError

    hetero = HeteroData()
    hetero["paper"].x = torch.randn(5, 3)
    hetero["paper", "cites", "paper"].edge_index = torch.tensor([[0, 1], [1, 2]])
    with pytest.raises(GraphError, match="homogeneous Data .*to_homogeneous"):
        GCA(CONFIG, device="cpu").fit(hetero)
    with pytest.raises(GraphError, match="got ndarray"):
        GCA(CONFIG, device="cpu").fit(np.zeros((3, 3)))


def test_scikit_learns_tags_and_html_repr_work_and_clone_keeps_the_device_as_given():
    from sklearn.utils import estimator_html_repr, get_tags

    estimator = GCA(CONFIG, device="cpu")
    tags = get_tags(estimator)
    assert tags.target_tags.required is False and tags.input_tags.two_d_array is False and tags.requires_fit
    assert "GCA" in estimator_html_repr(estimator)
    twin = sklearn.base.clone(estimator)
    assert twin.get_params(deep=False)["device"] == "cpu" and repr(twin) == repr(estimator)
