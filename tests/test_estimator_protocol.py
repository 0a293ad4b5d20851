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
    assert set(shallow) == {
        "config",
        "device",
        "progress",
        "objective",
        "batches",
        "placement",
        "encoder",
        "loggers",
        "memory",
    }
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


# scikit-learn's conventions: fit(X, y=None, **kwargs), Pipeline, model selection over one graph's nodes, NumPy
# scalars in set_params, a refused set_params changing nothing, and scikit-learn's own checks that apply.


def _labels() -> np.ndarray:
    return karate_club().y.numpy()


def test_fit_takes_y_second_and_ignores_it_and_directed_is_keyword_only():
    data, y = karate_club(), _labels()
    plain = GCA(CONFIG, device="cpu").fit(data).embedding_
    assert torch.equal(GCA(CONFIG, device="cpu").fit(data, y).embedding_, plain)
    assert torch.equal(GCA(CONFIG, device="cpu").fit(data, np.zeros(34)).embedding_, plain)  # no label is read
    assert torch.equal(GCA(CONFIG, device="cpu").fit_transform(data, y, directed=None), plain)
    with pytest.raises(TypeError):
        GCA(CONFIG, device="cpu").fit(data, None, False)


def test_a_pipeline_of_gca_and_a_classifier_fits_and_predicts_on_a_graph():
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline

    data, y = karate_club(), _labels()
    pipe = Pipeline([("gca", GCA(CONFIG, device="cpu")), ("lr", LogisticRegression(max_iter=500))]).fit(data, y)
    z = GCA(CONFIG, device="cpu").fit_transform(data)
    alone = LogisticRegression(max_iter=500).fit(z.numpy(), y)
    assert np.array_equal(pipe.predict(data), alone.predict(z.numpy()))
    assert pipe.score(data, y) == alone.score(z.numpy(), y)


def test_graph_nodes_split_like_an_array_and_index_their_graphs_rows():
    from gca.train.estimator import GraphNodes

    data = karate_club()
    nodes = GraphNodes(data)
    assert nodes.shape == (34,) and len(nodes) == 34
    picked = nodes[np.array([5, 2, 9])]
    assert picked.data is data and picked.index.tolist() == [5, 2, 9]
    assert picked[np.array([True, False, True])].index.tolist() == [5, 9] and picked[1:].index.tolist() == [2, 9]
    assert picked[np.array([2]), ...].index.tolist() == [9]
    estimator = GCA(CONFIG, device="cpu")
    rows = estimator.fit_transform(picked)
    assert torch.equal(rows, estimator.embedding_[[5, 2, 9]]) and estimator.embedding_.shape[0] == 34
    assert torch.equal(estimator.transform(picked), rows)
    with pytest.raises(ConfigError, match=r"node ids must lie in \[0, 33\]"):
        GraphNodes(data, [0, 34])


def test_cross_val_score_over_a_graphs_nodes_is_the_linear_evaluation_of_each_fold():
    """GCA fits on the whole graph without labels; the classifier learns each fold's training labels and is
    scored on its held-out nodes: the score equals that computed by hand from one unsupervised embedding."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold, cross_val_score
    from sklearn.pipeline import Pipeline

    from gca.train.estimator import GraphNodes

    data, y = karate_club(), _labels()
    folds = StratifiedKFold(3, shuffle=True, random_state=0)
    pipe = Pipeline([("gca", GCA(CONFIG, device="cpu")), ("lr", LogisticRegression(max_iter=500))])
    scores = cross_val_score(pipe, GraphNodes(data), y, cv=folds)
    z = GCA(CONFIG, device="cpu").fit_transform(data).numpy()
    by_hand = [
        LogisticRegression(max_iter=500).fit(z[train], y[train]).score(z[test], y[test])
        for train, test in folds.split(z, y)
    ]
    assert scores.tolist() == by_hand


def test_a_grid_search_over_numpy_values_runs_on_one_graph():
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GridSearchCV, StratifiedKFold
    from sklearn.pipeline import Pipeline

    from gca.train.estimator import GraphNodes

    pipe = Pipeline([("gca", GCA(CONFIG, device="cpu")), ("lr", LogisticRegression(max_iter=500))])
    grid = {"gca__epochs": np.arange(1, 3), "gca__tau": np.array([0.6])}  # 2 candidates × 2 folds, and the refit
    folds = StratifiedKFold(2, shuffle=True, random_state=0)
    search = GridSearchCV(pipe, grid, cv=folds).fit(GraphNodes(karate_club()), _labels())
    assert len(search.cv_results_["params"]) == 2 and 0.0 <= search.best_score_ <= 1.0
    best = search.best_estimator_.named_steps["gca"].config
    assert type(best.epochs) is int and type(best.tau) is float


def test_set_params_reads_numpy_scalars_as_python_numbers():
    estimator = GCA(CONFIG, device="cpu").set_params(
        epochs=np.int64(2),
        tau=np.float64(0.5),
        hidden=np.int32(4),
        lr=np.float32(0.25),
        fanout=(np.int64(3), np.int64(2)),
    )
    config = estimator.config
    assert (config.epochs, config.tau, config.hidden, config.lr, config.fanout) == (2, 0.5, 4, 0.25, (3, 2))
    assert type(config.epochs) is int and type(config.tau) is float and type(config.fanout[0]) is int
    with pytest.raises(ConfigError, match="must be a number"):
        estimator.set_params(lr=np.bool_(True))


def test_a_refused_set_params_leaves_the_estimator_exactly_as_it_was():
    estimator = GCA(CONFIG, device="auto").fit(karate_club())
    before = dict(vars(estimator))
    params = estimator.get_params(deep=False)
    for change in (
        {"lr": 0.5, "device": "cpu", "tau": -1.0},
        {"device": "cpu", "lr": 0.5, "loggers": 3},
        {"lr": 0.5, "device": "nowhere"},
        {"progress": True, "config": 0.5},
        {"lr": 0.5, "encoder": "gat"},
        {"placement": "rank0", "seed": 4},
    ):
        with pytest.raises((ConfigError, ValueError)):
            estimator.set_params(**change)
        assert vars(estimator).keys() == before.keys()
        assert all(vars(estimator)[k] is v for k, v in before.items()), change
        assert all(estimator.get_params(deep=False)[k] is v for k, v in params.items())
    assert estimator.embedding_ is before["embedding_"] and estimator.model is not None


def test_config_encoder_is_the_built_in_encoders_name_and_encoder_the_module():
    module = GCNConv(34, 8)
    estimator = GCA(CONFIG, device="cpu", encoder=module)
    deep = estimator.get_params()
    assert deep["encoder"] is module and deep["config__encoder"] == "gcn"
    assert estimator.set_params(config__encoder="gat", config__tau=0.7).config.encoder == "gat"
    assert estimator.config.tau == 0.7 and estimator.get_params(deep=False)["encoder"] is module
    with pytest.raises(ConfigError, match="config__encoder"):
        GCA(CONFIG, device="cpu").set_params(encoder="gat")


def test_check_is_fitted_and_transform_leaves_the_estimator_as_it_was():
    from sklearn.exceptions import NotFittedError
    from sklearn.utils.validation import check_is_fitted

    estimator = GCA(CONFIG, device="cpu")
    with pytest.raises(NotFittedError):
        check_is_fitted(estimator)
    data = karate_club()
    estimator.fit(data)
    check_is_fitted(estimator)
    params, state = estimator.get_params(), dict(vars(estimator))
    estimator.transform(data)  # scikit-learn's check_dict_unchanged, on a graph
    assert vars(estimator) == state and estimator.get_params() == params  # and check_dont_overwrite_parameters


#: scikit-learn's own checks (sklearn.utils.estimator_checks) that apply to an estimator of graphs. check_estimator
#: itself runs none of them on GCA: its tags say the input is no 2-D array, so it skips the estimator whole.
APPLICABLE = [
    "check_estimator_cloneable",
    "check_estimator_repr",
    "check_estimator_tags_renamed",
    "check_valid_tag_types",
    "check_get_params_invariance",
    "check_set_params",
    "check_parameters_default_constructible",
    "check_mixin_order",
]
_ARRAY = "fits on a 2-D NumPy array; GCA takes a graph (its graph equivalents are the tests above)"
#: The checks check_estimator would yield for a transformer, left out, each with why.
LEFT_OUT = {
    "check_no_attributes_set_in_init": "the learned state is set to None when made (`model is None` reads "
    "'untrained'); __sklearn_is_fitted__ says whether it was fitted",
    "check_do_not_raise_errors_in_init_or_set_params": "gca refuses a bad value in one line where it is given "
    "(a GCAConfig checks itself), not later in fit",
    "check_transformers_unfitted": "an unfitted transform raises gca's TrainingError (a RuntimeError), not "
    "scikit-learn's NotFittedError; check_is_fitted works (tested above)",
    "check_array_api_input": "array API inputs are 2-D arrays",
    **{
        name: _ARRAY
        for name in (
            "check_fit_score_takes_y",
            "check_estimators_overwrite_params",
            "check_dont_overwrite_parameters",
            "check_estimators_fit_returns_self",
            "check_readonly_memmap_input",
            "check_estimators_unfitted",
            "check_n_features_in_after_fitting",
            "check_positive_only_tag_during_fit",
            "check_estimators_dtypes",
            "check_fit_idempotent",
            "check_fit_check_is_fitted",
            "check_n_features_in",
            "check_fit1d",
            "check_fit2d_predict1d",
            "check_fit2d_1sample",
            "check_fit2d_1feature",
            "check_dict_unchanged",
            "check_methods_sample_order_invariance",
            "check_methods_subset_invariance",
            "check_complex_data",
            "check_dtype_object",
            "check_estimators_empty_data_messages",
            "check_pipeline_consistency",
            "check_estimators_nan_inf",
            "check_estimators_pickle",
            "check_f_contiguous_array_estimator",
            "check_estimator_sparse_array",
            "check_estimator_sparse_matrix",
            "check_estimator_sparse_tag",
            "check_transformer_data_not_an_array",
            "check_transformer_general",
            "check_transformer_n_iter",
        )
    },
}


def test_every_check_scikit_learn_yields_for_gca_is_run_or_left_out_with_a_reason():
    import warnings

    from sklearn.utils import estimator_checks as checks

    estimator = GCA(CONFIG, device="cpu")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yielded = {
            getattr(check, "func", check).__name__
            for source in (
                checks._yield_api_checks(estimator),
                checks._yield_checks(estimator),
                checks._yield_transformer_checks(estimator),
            )
            for check in source
        }
    yielded |= {
        "check_parameters_default_constructible",
        "check_get_params_invariance",
        "check_set_params",
        "check_fit_idempotent",
        "check_fit_check_is_fitted",
        "check_n_features_in",
        "check_fit1d",
        "check_fit2d_predict1d",
        "check_fit2d_1sample",
        "check_fit2d_1feature",
        "check_dict_unchanged",
        "check_methods_sample_order_invariance",
        "check_methods_subset_invariance",
    }
    assert yielded <= set(APPLICABLE) | set(LEFT_OUT), yielded - set(APPLICABLE) - set(LEFT_OUT)
    assert not set(APPLICABLE) & set(LEFT_OUT)


@pytest.mark.parametrize("name", APPLICABLE)
def test_scikit_learns_own_check_passes(name):
    import warnings

    from sklearn.utils import estimator_checks as checks

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # check_set_params warns that gca checks values in set_params
        getattr(checks, name)("GCA", GCA(CONFIG, device="cpu"))
