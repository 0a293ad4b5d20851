"""The GCA authors' evaluation protocol (gca.evaluate.probe): their rules, batched exactly, behind --eval-protocol."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp
import torch

import gca.evaluate.probe as probe
from gca.cli import main
from gca.evaluate.classification import evaluate_embeddings, validation_accuracy
from gca.evaluate.probe import adam_probe, best_validation_check
from gca.evaluate.splits import EvaluationError, random_splits


def _separable(n: int = 300, classes: int = 3, seed: int = 0):
    generator = torch.Generator().manual_seed(seed)
    y = torch.randint(0, classes, (n,), generator=generator)
    x = 0.1 * torch.randn(n, 8, generator=generator)
    x[torch.arange(n), y] += 5.0  # class c lives far out on axis c: linearly separable
    return x, y


def test_best_validation_check_takes_the_first_of_the_best():
    val = np.array(
        [
            [0.50, 0.10, 0.0],
            [0.70, 0.30, 0.0],
            [0.70, 0.90, 0.0],  # split 0: tie with the check before → the earlier one stays
            [0.60, 0.90, 0.0],  # split 1: tie → stays at check 2; split 2: never above 0 → check 0
        ]
    )
    assert best_validation_check(val).tolist() == [1, 2, 0]


def test_the_reported_test_accuracy_is_the_one_at_the_chosen_check(monkeypatch):
    # Validation peaks early, test accuracy keeps rising: the protocol must report test at the peak, not the end.
    x, y = _separable()
    splits = random_splits(300, 2, seed=0, labels=y)
    test, val, epochs, _ = adam_probe(x, y, splits, epochs=200)
    assert np.all(epochs % 20 == 0) and np.all((20 <= epochs) & (epochs <= 200))
    seen = {}
    real = probe.best_validation_check

    def spy(accuracies):
        seen["val"] = accuracies
        return real(accuracies)

    monkeypatch.setattr(probe, "best_validation_check", spy)
    test2, val2, epochs2, _ = adam_probe(x, y, splits, epochs=200)
    assert seen["val"].shape == (10, 2)  # one row per check (every 20 epochs)
    np.testing.assert_array_equal(val2, seen["val"][epochs2 // 20 - 1, [0, 1]])
    np.testing.assert_array_equal(test, test2)


def test_linearly_separable_embeddings_score_100():
    x, y = _separable()
    result = evaluate_embeddings(x, y, random_splits(300, 3, seed=1, labels=y), "authors")
    assert result.accuracies == [100.0, 100.0, 100.0] and result.protocol == "authors"
    record = result.to_dict()
    assert record["protocol"] == "authors" and len(record["chosen_epoch"]) == 3 and "chosen_C" not in record


def test_batched_splits_equal_one_at_a_time_and_sparse_equals_dense(monkeypatch):
    x, y = _separable(seed=2)
    x = torch.relu(x)  # nonnegative, like bag-of-words, so a sparse copy is meaningful
    splits = random_splits(300, 3, seed=3, labels=y)
    batched = adam_probe(x, y, splits, epochs=100)
    monkeypatch.setattr(probe, "BATCHED_BYTES", 0)  # every split on its own
    single = adam_probe(x, y, splits, epochs=100)
    as_sparse = adam_probe(sp.csr_matrix(x.numpy()), y, splits, epochs=100)
    for a, b, c in zip(batched, single, as_sparse, strict=True):
        np.testing.assert_allclose(a, b)
        np.testing.assert_allclose(a, c)


def _bag_of_words(n: int = 240, d: int = 60, classes: int = 4, seed: int = 0):
    """Counts in [0, 3] at about 6 % of the entries, labels a noisy linear rule of them: a probe whose accuracy and
    chosen epoch differ between splits and checks, so a misaligned row, weight or split shows."""
    rng = np.random.default_rng(seed)
    x = rng.integers(1, 4, (n, d)) * (rng.random((n, d)) < 0.06)
    y = np.argmax(x @ rng.standard_normal((d, classes)) + 1.5 * rng.standard_normal((n, classes)), axis=1)
    return torch.from_numpy(x.astype(np.float32)), torch.from_numpy(y)


def test_sparse_bag_of_words_equals_the_dense_path_and_one_split_at_a_time(monkeypatch):
    from gca.seeds import run_seeds

    x, y = _bag_of_words()
    splits = random_splits(240, 4, seed=1, labels=y)
    assert torch.count_nonzero(x) <= probe.SPARSE_BELOW * x.numel()  # judged as a sparse matrix by default
    as_sparse = adam_probe(x, y, splits, epochs=300)
    assert len(set(as_sparse.epochs.tolist())) > 1 and len(set(as_sparse.test.tolist())) > 1  # informative
    given_sparse = adam_probe(sp.csr_matrix(x.numpy()), y, splits, epochs=300)
    monkeypatch.setattr(probe, "SPARSE_BELOW", -1.0)  # the dense batched path
    dense = adam_probe(x, y, splits, epochs=300)
    seeds = run_seeds(0, len(splits))
    alone = [adam_probe(x, y, [split], epochs=300, seed=seed) for split, seed in zip(splits, seeds, strict=True)]
    for field in range(4):
        np.testing.assert_array_equal(as_sparse[field], dense[field])
        np.testing.assert_array_equal(as_sparse[field], given_sparse[field])
        np.testing.assert_array_equal(as_sparse[field], np.concatenate([a[field] for a in alone]))


def test_splits_of_unequal_training_sizes_keep_their_own_rows_and_weights(monkeypatch):
    """Padding (dense) and the block boundaries (sparse) depend on each split's size: 10, 37 and 23 training
    nodes must each give what their split gives alone."""
    from gca.seeds import run_seeds

    x, y = _bag_of_words(seed=3)
    order = np.random.default_rng(4).permutation(240)
    splits = [
        (order[:10], order[100:140], order[140:]),
        (order[10:47], order[47:100], order[100:]),
        (order[200:223], order[:100], order[100:200]),
    ]
    as_sparse = adam_probe(x, y, splits, epochs=200)
    monkeypatch.setattr(probe, "SPARSE_BELOW", -1.0)
    dense = adam_probe(x, y, splits, epochs=200)
    alone = [
        adam_probe(x, y, [split], epochs=200, seed=seed) for split, seed in zip(splits, run_seeds(0, 3), strict=True)
    ]
    for field in range(4):
        np.testing.assert_array_equal(as_sparse[field], dense[field])
        np.testing.assert_array_equal(as_sparse[field], np.concatenate([a[field] for a in alone]))


def test_validation_search_reads_no_test_label():
    x, y = _separable(seed=4)
    splits = random_splits(300, 1, seed=5, labels=y)
    test = torch.from_numpy(splits[0][2])
    flipped = y.clone()
    flipped[test] = (flipped[test] + 1) % 3
    assert validation_accuracy(x, y, splits, protocol="authors") == validation_accuracy(
        x, flipped, splits, protocol="authors"
    )


def test_unknown_protocol_is_one_clear_error(tmp_path, capsys):
    x, y = _separable()
    with pytest.raises(EvaluationError, match="unknown evaluation protocol 'paper'; choose sklearn or authors"):
        evaluate_embeddings(x, y, random_splits(300, 1, labels=y), "paper")
    with pytest.raises(SystemExit) as stop:
        main(["train", "--eval-protocol", "paper", "--out", str(tmp_path / "r")])
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("gca: error:") and "authors" in err[0]


def test_gca_train_records_the_protocol(tmp_path):
    out = tmp_path / "run"
    assert (
        main(
            [
                "train",
                "--dataset",
                "Karate",
                "--epochs",
                "20",
                "--splits",
                "2",
                "--eval-raw",
                "--quiet",
                "--eval-protocol",
                "authors",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    record = json.loads((out / "results.json").read_text())
    assert record["accuracy"]["protocol"] == "authors" and record["raw_features_accuracy"]["protocol"] == "authors"
    assert len(record["accuracy"]["runs"]) == 2 and all(e % 20 == 0 for e in record["accuracy"]["chosen_epoch"])
