import numpy as np
import pytest
import torch

from gca.datasets import mask_splits
from gca.evaluate.classification import linear_evaluation
from gca.evaluate.splits import EvaluationError, random_splits


def test_random_splits_partition_the_nodes_10_10_80():
    splits = random_splits(1000, num_splits=20, seed=0)
    assert len(splits) == 20
    for train, val, test in splits:
        assert (len(train), len(val), len(test)) == (100, 100, 800)
        assert np.array_equal(np.sort(np.concatenate([train, val, test])), np.arange(1000))
    assert not np.array_equal(splits[0][0], splits[1][0])  # every split is a new draw
    again = random_splits(1000, num_splits=20, seed=0)
    assert all(np.array_equal(a[0], b[0]) for a, b in zip(splits, again, strict=True))


def test_random_splits_cover_every_class_on_tiny_graphs():
    labels = np.array([0] * 30 + [1] * 4)
    for train, _, _ in random_splits(34, num_splits=20, seed=0, labels=labels):
        assert set(labels[train]) == {0, 1}


def test_public_splits_from_two_dimensional_masks():
    n = 10
    train = torch.zeros(n, 3, dtype=torch.bool)
    val = torch.zeros(n, 3, dtype=torch.bool)
    for i in range(3):
        train[i, i] = True
        val[3 + i, i] = True
    test = torch.zeros(n, dtype=torch.bool)
    test[6:] = True
    splits = mask_splits(train, val, test)
    assert len(splits) == 3
    assert [s[0].tolist() for s in splits] == [[0], [1], [2]]
    assert all(s[2].tolist() == [6, 7, 8, 9] for s in splits)


def test_linear_evaluation_separates_informative_features_from_noise():
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 3, 600)
    informative = np.eye(3)[labels] + 0.3 * rng.standard_normal((600, 3))
    noise = rng.standard_normal((600, 3))
    splits = random_splits(600, num_splits=5, seed=1)
    good = linear_evaluation(informative, labels, splits)
    bad = linear_evaluation(noise, labels, splits)
    assert good.mean > 90 and bad.mean < 50
    assert len(good.chosen_c) == 5 and len(good.val_accuracies) == 5
    assert good.to_dict()["runs"] == good.accuracies


def test_evaluation_errors():
    with pytest.raises(EvaluationError):
        random_splits(2)
    with pytest.raises(EvaluationError, match="one label per node"):
        linear_evaluation(np.zeros((5, 2)), np.zeros(4), random_splits(5, 1))
    with pytest.raises(EvaluationError, match="holds only one of the labels"):
        linear_evaluation(np.random.default_rng(0).random((20, 2)), np.zeros(20), random_splits(20, 1))


def test_large_training_parts_are_fitted_on_a_bounded_sample():
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 3, 2000)
    features = np.eye(3)[labels] + 0.5 * rng.standard_normal((2000, 3))
    splits = random_splits(2000, num_splits=2, train=0.5, val=0.1, seed=0)
    full = linear_evaluation(features, labels, splits)
    bounded = linear_evaluation(features, labels, splits, max_train=200)
    assert full.fitted_on == [1000, 1000] and bounded.fitted_on == [200, 200]
    assert bounded.to_dict()["fitted_on"] == [200, 200]
    assert abs(bounded.mean - full.mean) < 3  # a few hundred nodes suffice for three classes in three dimensions
    again = linear_evaluation(features, labels, splits, max_train=200)
    assert again.accuracies == bounded.accuracies  # the sample is seeded


class _ScriptedClassifier:
    """A stand-in for LogisticRegression whose validation accuracy is a given function of C: it predicts the true
    class on the first ``round(score(C) · n)`` validation rows and a wrong one on the rest (rows carry their own
    label in column 0)."""

    score = staticmethod(lambda c: 0.5)
    fitted: list[float] = []

    def __init__(self, C=1.0, max_iter=100, warm_start=False):
        self.C = C

    def set_params(self, C):
        self.C = C
        return self

    def fit(self, x, y):
        _ScriptedClassifier.fitted.append(self.C)
        return self

    def predict(self, x):
        truth = np.rint(np.asarray(x)[:, 0] * np.sqrt(2)).astype(int)  # the normalised row (y, 1)/‖·‖ gives y back
        right = int(round(self.score(self.C) * len(truth)))
        return np.where(np.arange(len(truth)) < right, truth, truth + 1)


@pytest.mark.parametrize(
    ("score", "chosen", "fitted_after_grid", "extended", "at_edge"),
    [
        # the best of the grid is its top: 1e5 is better, 1e6 no better → 1e5, searched 1e-2 … 1e6
        (lambda c: (min(np.log10(c), 5) + 3) / 20, 1e5, [1e5, 1e6], True, False),
        # better at every step: 1e5, 1e6, 1e7 all tried (three steps), the choice still at the end of the search
        (lambda c: (np.log10(c) + 3) / 20, 1e7, [1e5, 1e6, 1e7], True, True),
        # the grid's bottom is best and 1e-3 only ties it: the first tried (1e-2) is kept
        (lambda c: 1.0 if c <= 1e-2 else 0.2, 1e-2, [1e-3], True, False),
        # an interior best: no extension
        (lambda c: 1.0 if c == 1.0 else 0.2, 1.0, [], False, False),
    ],
)
def test_the_c_search_goes_past_an_end_of_the_grid_while_validation_improves(
    monkeypatch, score, chosen, fitted_after_grid, extended, at_edge
):
    from sklearn import linear_model

    import gca.evaluate.classification as classification

    monkeypatch.setattr(linear_model, "LogisticRegression", _ScriptedClassifier)  # as the evaluation looks it up
    monkeypatch.setattr(_ScriptedClassifier, "score", staticmethod(score))
    monkeypatch.setattr(_ScriptedClassifier, "fitted", [])
    labels = np.arange(1000) % 2
    features = np.stack([labels, np.ones(1000)], axis=1).astype(float)  # ℓ2-normalised: (y, 1)/√(y² + 1)
    result = linear_evaluation(features, labels, random_splits(1000, num_splits=1, seed=0))
    assert result.chosen_c == [chosen]
    assert _ScriptedClassifier.fitted == [*classification.DEFAULT_C_GRID, *fitted_after_grid]
    assert result.c_extended == [extended] and result.c_at_edge == [at_edge]
    record = result.to_dict()
    assert (record["C_extended"], record["C_at_edge"]) == (int(extended), int(at_edge))
    assert ("C at the end of its search on 1 of 1 splits" in str(result)) is at_edge
