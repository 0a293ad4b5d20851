"""Evaluation splits (random fractions, public, few labels) and the F1 scores, against hand-computed cases."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.metrics import f1_score

from gca.evaluate.classification import linear_evaluation
from gca.evaluate.probe import macro_f1s
from gca.evaluate.splits import EvaluationError, SplitSetting, few_label_splits, index_splits, random_splits


def _labels(sizes=(30, 20, 10)) -> np.ndarray:
    return np.concatenate([np.full(n, c) for c, n in enumerate(sizes)])


def test_few_label_training_sets_hold_exactly_k_of_every_class_and_never_touch_the_other_parts():
    y = _labels()
    for train, val, test in few_label_splits(y, 5, shots=3, val=0.2, seed=1):
        assert np.bincount(y[train]).tolist() == [3, 3, 3]
        assert len(val) == 12 and len(test) == 60 - 9 - 12
        assert len(set(train) | set(val) | set(test)) == 60  # disjoint and covering


def test_splits_are_deterministic_per_seed_and_differ_between_seeds():
    y = torch.from_numpy(_labels())
    for setting in (SplitSetting("random", 3), SplitSetting("fewshot", 3, shots=2)):
        a, b, c = setting.draw(y, seed=5), setting.draw(y, seed=5), setting.draw(y, seed=6)
        assert all(np.array_equal(p, q) for s, t in zip(a, b, strict=True) for p, q in zip(s, t, strict=True))
        assert not np.array_equal(a[0][0], c[0][0])


def test_random_fractions_are_respected_and_the_test_part_may_be_smaller_than_the_rest():
    ((train, val, test),) = random_splits(100, 1, train=0.2, val=0.3, test=0.4, seed=0)
    assert (len(train), len(val), len(test)) == (20, 30, 40) and not set(test) & (set(train) | set(val))
    with pytest.raises(EvaluationError, match="add up to more than 1"):
        SplitSetting("random", train=0.5, val=0.4, test=0.2).check()


def test_a_k_above_the_smallest_class_and_a_public_split_a_dataset_lacks_are_one_line_errors():
    with pytest.raises(EvaluationError, match="no node of class 2 .* give shots=9 or fewer"):
        SplitSetting("fewshot", 2, shots=10).draw(torch.from_numpy(_labels()))
    with pytest.raises(EvaluationError, match="has no public split"):
        SplitSetting("public").draw(torch.from_numpy(_labels()), dataset="Karate")
    with pytest.raises(EvaluationError, match="goes with scheme='fewshot'"):
        SplitSetting("random", shots=3).check()


def test_unlabelled_nodes_are_never_in_a_split():
    y = torch.from_numpy(_labels())
    y[::7] = -1
    for split in SplitSetting("fewshot", 2, shots=2).draw(y) + SplitSetting("random", 2).draw(y):
        assert all((y[torch.from_numpy(part)] >= 0).all() for part in split)


def test_auto_takes_the_prescribed_splits_and_public_the_public_one():
    y = torch.from_numpy(_labels())
    own = [(np.arange(3), np.arange(3, 6), np.arange(6, 60))]
    assert SplitSetting("auto").draw(y, prescribed=own) is not own and len(SplitSetting("auto").draw(y)) == 20
    assert np.array_equal(SplitSetting("public").draw(y, public=own)[0][2], own[0][2])
    assert SplitSetting("auto").draw(y, prescribed=own)[0][0].tolist() == [0, 1, 2]


def test_macro_f1_by_hand_and_against_scikit_learn():
    # true 0 0 1 1 2, predicted 0 1 1 1 0: F1(0) = 2·1/(2+2) = 0.5, F1(1) = 2·2/(3+2) = 0.8, F1(2) = 0 → 0.4333…
    truth = torch.tensor([0, 0, 1, 1, 2])
    guess = torch.tensor([[0, 1, 1, 1, 0]])
    (score,) = macro_f1s(guess, truth, [torch.arange(5)], 3)
    assert score == pytest.approx((0.5 + 0.8 + 0.0) / 3)
    rng = np.random.default_rng(0)
    t, p = rng.integers(0, 5, 200), rng.integers(0, 4, 200)  # class 4 is never predicted
    (ours,) = macro_f1s(torch.from_numpy(p)[None], torch.from_numpy(t), [torch.arange(200)], 5)
    assert ours == pytest.approx(f1_score(t, p, average="macro", zero_division=0))


def test_linear_evaluation_reports_micro_f1_equal_to_accuracy_and_macro_f1():
    y = _labels((40, 40, 20))
    x = np.eye(3)[y] + 0.8 * np.random.default_rng(1).standard_normal((100, 3))
    result = linear_evaluation(x, y, random_splits(100, 3, seed=0, labels=y))
    np.testing.assert_allclose(result.micro_f1, result.accuracies)
    assert len(result.macro_f1) == 3 and all(0 < f <= 100 for f in result.macro_f1)
    record = result.to_dict()
    assert set(record["macro_f1"]) == {"mean", "std", "runs"} and "macro-F1" in str(result)


def test_coras_public_split_is_planetoids_20_per_class_500_and_1000(shared_data, cache_dir):
    from gca.datasets import load_dataset

    loaded = load_dataset("Cora", data_dir=shared_data)
    assert loaded.splits is None  # by default Cora is judged on random splits, as in GRACE and GCA
    ((train, val, test),) = SplitSetting("public").draw(loaded.data.y, public=loaded.public)
    assert (len(train), len(val), len(test)) == (140, 500, 1000)
    assert np.bincount(loaded.data.y.numpy()[train]).tolist() == [20] * 7


def test_gca_train_records_the_split_scheme_and_the_f1_scores(tmp_path, capsys):
    import json

    from gca.cli import main

    out = tmp_path / "few"
    assert (
        main(
            [
                "train",
                "--epochs",
                "2",
                "--quiet",
                "--eval-split",
                "fewshot",
                "--shots",
                "3",
                "--splits",
                "4",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    record = json.loads((out / "results.json").read_text())
    assert record["evaluation_split"] == {
        "scheme": "fewshot",
        "shots": 3,
        "val": 0.1,
        "test": None,
        "count": 4,
        "sizes": [6, 3, 25],
        "unlabelled_removed": {"train": 0, "val": 0, "test": 0},
    }
    assert len(record["accuracy"]["macro_f1"]["runs"]) == 4 and record["accuracy"]["micro_f1"]["mean"] > 0
    assert "macro-F1" in capsys.readouterr().out
    assert main(["train", "--epochs", "1", "--eval-split", "public", "--out", str(tmp_path / "p")]) == 2
    assert "Karate has no public split" in capsys.readouterr().err
    assert main(["train", "--eval-split", "random", "--train-frac", "0.7", "--val-frac", "0.4"]) == 2
    assert "add up to more than 1" in capsys.readouterr().err


def test_reproduce_judges_run_i_on_split_i_of_the_scheme_asked_and_keys_runs_by_it():
    from gca.datasets import load_dataset
    from gca.reproduce import Mode, Planner, run_split

    karate = load_dataset("Karate")
    few = SplitSetting("fewshot", shots=3)
    train, val, test = run_split(karate, 2, few)
    assert np.bincount(karate.data.y.numpy()[train]).tolist() == [3, 3]
    assert np.array_equal(run_split(karate, 2, few)[2], test)  # deterministic per run
    default, fewshot = Mode.create(False, protocol="sklearn"), Mode.create(True, split=few)
    assert default.judged() == {} and fewshot.judged()["split"]  # runs stored before the choice keep their keys
    default_runs = Planner(default, ()).gca_runs("Karate", {}, 1, None)
    few_runs = Planner(fewshot, ()).gca_runs("Karate", {}, 1, None)
    assert default_runs[0] != few_runs[0] and default_runs[0].config == few_runs[0].config
    assert "fewshot" in fewshot.describe()


def _official_with_unlabelled():
    """Labels with ids encoded: node i of class i % 3, except nodes 3, 7 (test) and 11 (train) unlabelled."""
    y = np.arange(30) % 3
    y[[3, 7, 11]] = -1
    split = (np.array([0, 1, 2, 11, 12, 13]), np.array([4, 5, 6, 8]), np.array([3, 7, 9, 10, 14, 15, 16, 17]))
    return torch.from_numpy(y), [split]


@pytest.mark.parametrize("scheme", ["public", "auto"])
def test_an_official_split_loses_its_unlabelled_nodes_and_says_how_many_from_each_part(scheme):
    y, official = _official_with_unlabelled()
    setting = SplitSetting(scheme, 1)
    drawn = setting.draw(y, prescribed=official, public=official)
    train, val, test = drawn[0]
    assert train.tolist() == [0, 1, 2, 12, 13] and val.tolist() == [4, 5, 6, 8]
    assert test.tolist() == [9, 10, 14, 15, 16, 17]
    assert drawn.removed == {"train": 1, "val": 0, "test": 2}
    assert setting.record(drawn)["unlabelled_removed"] == {"train": 1, "val": 0, "test": 2}


def test_a_part_of_unlabelled_nodes_only_is_one_line_and_random_draws_never_hold_one():
    y, _ = _official_with_unlabelled()
    with pytest.raises(EvaluationError, match="test part of Toy's split 1 holds no labelled node"):
        SplitSetting("public").draw(y, public=[(np.array([0, 1]), np.array([2]), np.array([3, 7]))], dataset="Toy")
    for setting in (SplitSetting("random", 5), SplitSetting("fewshot", 5, shots=2)):
        for split in setting.draw(y, seed=1):
            assert all((y[part] >= 0).all() for part in split)


@pytest.mark.parametrize("protocol", ["sklearn", "authors"])
def test_unlabelled_nodes_in_a_users_split_are_refused_not_scored(protocol):
    from gca.evaluate.classification import evaluate_embeddings

    y, official = _official_with_unlabelled()
    z = torch.nn.functional.one_hot(y.clamp(min=0), 3).float()
    with pytest.raises(EvaluationError, match="train part of split 1 holds 1 node"):
        evaluate_embeddings(z, y, official, protocol)


@pytest.mark.parametrize("protocol", ["sklearn", "authors"])
def test_public_split_with_unlabelled_test_nodes_scores_the_labelled_ones_only(protocol):
    """Embeddings that separate the classes perfectly: 100 % on the labelled test nodes. Scoring the unlabelled
    ones (as a class no one predicts) would give 6 of 8 = 75 %."""
    from gca.evaluate.classification import evaluate_embeddings

    y, official = _official_with_unlabelled()
    z = torch.nn.functional.one_hot(y.clamp(min=0), 3).float() * 5
    drawn = SplitSetting("public").draw(y, public=official)
    assert evaluate_embeddings(z, y, drawn, protocol).accuracies == [100.0]


@pytest.mark.parametrize("protocol", ["sklearn", "authors"])
def test_class_values_far_apart_are_renumbered_once_for_every_protocol(protocol):
    """Classes 0 and 10^9 are two classes: the same accuracy as classes 0 and 1, and no 10^9-wide layer."""
    from gca.evaluate.classification import evaluate_embeddings

    y = np.arange(40) % 2
    z = torch.from_numpy(np.stack([y, 1 - y], 1)).float() + 0.01 * torch.arange(40.0)[:, None] / 40
    splits = random_splits(40, 2, seed=3, labels=y)
    near = evaluate_embeddings(z, torch.from_numpy(y), splits, protocol)
    far = evaluate_embeddings(z, torch.from_numpy(y * 10**9), splits, protocol)
    assert far.accuracies == near.accuracies


def test_a_class_of_one_node_is_named_not_answered_with_shots_below_one():
    y = np.array([0] * 10 + [1] * 10 + [2])
    with pytest.raises(EvaluationError, match="class 2 has a single labelled node .* no shots ") as caught:
        SplitSetting("fewshot", 2, shots=1).draw(torch.from_numpy(y))
    assert "below 1" not in str(caught.value)


@pytest.mark.parametrize("protocol", ["sklearn", "authors"])
def test_a_training_part_of_one_class_is_refused_under_both_protocols(protocol):
    """The authors' probe reported the majority class's share (50 %) as an accuracy."""
    from gca.evaluate.classification import evaluate_embeddings

    y = torch.from_numpy(np.arange(12) % 2)
    split = (np.array([0, 2, 4]), np.array([1, 6]), np.array([3, 5, 7, 8, 9, 10, 11]))
    with pytest.raises(EvaluationError, match="training part of split 1 .* holds only one"):
        evaluate_embeddings(torch.randn(12, 4), y, [split], protocol)


def _masked_case():
    """Embeddings that separate three classes, a PyG-style split as masks and the same split as indices."""
    y = torch.from_numpy(_labels())
    z = torch.nn.functional.one_hot(y).float() + 0.3 * torch.randn(60, 3, generator=torch.Generator().manual_seed(0))
    order = np.random.default_rng(2).permutation(60)
    idx = (np.sort(order[:12]), np.sort(order[12:24]), np.sort(order[24:]))
    masks = tuple(torch.zeros(60, dtype=torch.bool).index_fill_(0, torch.from_numpy(i), True) for i in idx)
    return z, y, idx, masks


def test_boolean_masks_are_judged_as_the_indices_they_select():
    from gca.evaluate.classification import evaluate_embeddings, validation_accuracy
    from gca.evaluate.probe import adam_probe

    z, y, idx, masks = _masked_case()
    numpy_masks = tuple(m.numpy() for m in masks)
    by_index = linear_evaluation(z, y, [idx])
    for given in (masks, numpy_masks, (masks[0], idx[1], numpy_masks[2])):  # torch, NumPy, mixed with indices
        assert linear_evaluation(z, y, [given]).to_dict() == by_index.to_dict()
        assert validation_accuracy(z, y, [given]) == validation_accuracy(z, y, [idx])
    authors = evaluate_embeddings(z, y, [masks], "authors").to_dict()
    assert authors == evaluate_embeddings(z, y, [idx], "authors").to_dict()
    probed = [np.asarray(a).tolist() for a in adam_probe(z, y, [masks], epochs=20)]
    assert probed == [np.asarray(a).tolist() for a in adam_probe(z, y, [idx], epochs=20)]


def test_a_mask_of_another_length_or_a_part_of_another_kind_is_one_line():
    from gca.evaluate.splits import drop_unlabelled, index_splits

    z, y, idx, masks = _masked_case()
    cases = [
        (
            [(masks[0][:59], masks[1], masks[2])],
            r"the train part of split 1 is a boolean mask of 59 entries but there "
            r"are 60 nodes",
        ),
        ([(idx[0].astype(float), idx[1], idx[2])], "the train part of split 1 holds float64 values; give node indices"),
        (
            [(idx[0], idx[1], np.append(idx[2], 60))],
            r"the test part of split 1 holds node ids in \[\d+, 60\], "
            r"outside \[0, 59\]",
        ),
        ([(idx[0], -idx[1] - 1, idx[2])], r"the val part of split 1 holds node ids in \[-\d+, -\d+\]"),
        ([(masks[0].long(), masks[1], masks[2])], r"60 zeros and ones, one per node: a mask stored as integers\?"),
        ([(torch.stack([masks[0]] * 2, 1), masks[1], masks[2])], r"has shape \(60, 2\); give a 1-D array"),
        ([(idx[0], idx[1])], r"split 1 has 2 parts"),
        (idx, r"got one triple of arrays; pass \[\(train, val, test\)\]"),
    ]
    for splits, message in cases:
        with pytest.raises(EvaluationError, match=message) as caught:
            linear_evaluation(z, y, splits)
        assert "\n" not in str(caught.value) and isinstance(caught.value, ValueError)
    assert index_splits([idx], 60)[0] is idx  # index arrays pass through untouched
    unlabelled = y.clone()
    unlabelled[idx[2][:5]] = -1
    kept = drop_unlabelled([masks], unlabelled)
    assert kept.removed == {"train": 0, "val": 0, "test": 5} and np.array_equal(kept[0][2], idx[2][5:])


def test_a_part_that_selects_no_node_is_one_line_under_either_protocol():
    from gca.evaluate import classification

    x, y = torch.eye(12), torch.tensor([0, 1] * 6)
    train, val, test = (torch.zeros(12, dtype=torch.bool) for _ in range(3))
    train[:6], val[6:9] = True, True  # the test mask selects nothing
    for protocol in ("sklearn", "authors"):
        with pytest.raises(EvaluationError, match="the test part of split 1 holds no node"):
            classification.evaluate_embeddings(x, y, [(train, val, test)], protocol=protocol)
    with pytest.raises(EvaluationError, match="the val part of split 1 holds no node"):
        linear_evaluation(x, y, [(np.arange(6), np.empty(0, dtype=np.int64), np.arange(6, 12))])


def test_parts_that_share_nodes_are_one_line_not_a_test_accuracy_on_training_nodes():
    x, y = torch.eye(12), torch.tensor([0, 1] * 6)
    train = torch.zeros(12, dtype=torch.bool)
    train[:6] = True
    val, test = ~train, train.clone()  # the test mask is the training mask
    with pytest.raises(EvaluationError, match="the train and test parts of split 1 share 6 nodes"):
        linear_evaluation(x, y, [(train, val, test)])
    with pytest.raises(EvaluationError, match="the val and test parts of split 2 share 1 node"):
        index_splits([(np.arange(4), np.arange(4, 8), np.arange(8, 12)), ([0, 1], [2, 3, 4], [4, 5])], 12)
