"""Nightly retraining: a warm start from an earlier model (GCA.fit(init_from=…), --init-from) and the rotation of new
embeddings onto earlier ones (gca.evaluate.stability, --align-to), matched by node id."""

import json

import numpy as np
import pytest
import torch

from gca import GCA, GCAConfig
from gca.cli import main
from gca.datasets import karate_club
from gca.evaluate.stability import AlignmentError, align_embeddings, node_cosines, shared_rows
from gca.outputs.export import ExportError, export_embeddings, read_embeddings
from gca.train.checkpoint import CheckpointError


def _config(**changes):
    return GCAConfig(**{"hidden": 8, "proj_hidden": 8, "epochs": 5, "warmup_steps": 0, **changes})


def test_a_warm_start_of_zero_epochs_embeds_with_the_earlier_model_exactly(tmp_path):
    data = karate_club()
    earlier = GCA(_config(seed=1), device="cpu").fit(data)
    earlier.save(tmp_path / "model.pt")
    warm = GCA(_config(epochs=0, seed=7), device="cpu").fit(data, init_from=tmp_path / "model.pt")
    torch.testing.assert_close(warm.embedding_, earlier.embedding_, rtol=0, atol=0)
    fresh = GCA(_config(epochs=0, seed=7), device="cpu").fit(data)
    assert not torch.equal(fresh.embedding_, earlier.embedding_)  # the weights came from the file, not the seed
    trained = GCA(_config(epochs=3, seed=7), device="cpu").fit(data, init_from=tmp_path / "model.pt")
    assert not torch.equal(trained.embedding_, earlier.embedding_) and len(trained.losses) == 3


def test_a_warm_start_from_a_model_of_other_widths_or_features_is_refused(tmp_path):
    data = karate_club()
    GCA(_config(), device="cpu").fit(data).save(tmp_path / "model.pt")
    with pytest.raises(CheckpointError, match="of shape .* earlier model's settings"):
        GCA(_config(hidden=16), device="cpu").fit(data, init_from=tmp_path / "model.pt")
    wider = data.clone()
    wider.x = torch.cat([data.x, data.x[:, :3]], 1)
    with pytest.raises(CheckpointError, match="trained on 34 feature columns, this graph has 37"):
        GCA(_config(), device="cpu").fit(wider, init_from=tmp_path / "model.pt")
    with pytest.raises(CheckpointError, match="does not exist"):
        GCA(_config(), device="cpu").fit(data, init_from=tmp_path / "missing.pt")


def _orthogonal(d, seed):
    q, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((d, d)))
    return q


def test_procrustes_undoes_a_rotation_on_nodes_matched_by_id():
    rng = np.random.default_rng(0)
    previous = rng.standard_normal((50, 6)).astype(np.float32)
    previous_ids = [f"n{i}" for i in range(50)]
    # the new run: nodes 0-39 of the previous run in another order plus 5 new nodes, its space rotated
    order = rng.permutation(40)
    new_ids = [previous_ids[i] for i in order] + [f"new{i}" for i in range(5)]
    new = np.concatenate([previous[order], rng.standard_normal((5, 6))]) @ _orthogonal(6, 1)
    new_rows, previous_rows = shared_rows(new_ids, previous_ids)
    assert [new_ids[r] for r in new_rows] == [previous_ids[r] for r in previous_rows]  # ids line up row for row
    aligned, alignment = align_embeddings(new, previous, new_rows, previous_rows)
    np.testing.assert_allclose(aligned[new_rows], previous[previous_rows], atol=1e-5)
    assert alignment.shared == 40 and alignment.cosine_after == pytest.approx(1.0, abs=1e-6)
    assert alignment.cosine_before < 0.9 and alignment.without_cosine == 0
    np.testing.assert_allclose(np.linalg.norm(aligned, axis=1), np.linalg.norm(new, axis=1), rtol=1e-5)  # a rotation


def test_integer_and_text_ids_are_one_node_and_zero_rows_have_no_cosine():
    assert [r.tolist() for r in shared_rows([3, 1, 2], ["1", "2", "9"])] == [[1, 2], [0, 1]]
    with pytest.raises(AlignmentError, match="twice"):
        shared_rows([1, 2], [1, 1])
    cos = node_cosines(np.array([[1.0, 0.0], [0.0, 0.0], [1.0, 1.0]]), np.array([[1.0, 0.0], [1.0, 0.0], [-1.0, -1.0]]))
    assert cos[0] == pytest.approx(1.0) and np.isnan(cos[1]) and cos[2] == pytest.approx(-1.0)
    previous = np.array([[1.0, 0.0], [0.0, 0.0], [0.0, 1.0]], dtype=np.float32)
    _, alignment = align_embeddings(previous.copy(), previous)
    assert alignment.without_cosine == 1 and alignment.cosine_after == pytest.approx(1.0)


def test_alignment_refusals():
    with pytest.raises(AlignmentError, match="same width"):
        align_embeddings(np.ones((4, 2)), np.ones((4, 3)))
    with pytest.raises(AlignmentError, match="same nodes in the same order"):
        align_embeddings(np.ones((4, 2)), np.ones((5, 2)))
    with pytest.raises(AlignmentError, match="only 1 nodes"):
        align_embeddings(np.ones((4, 2)), np.ones((4, 2)), np.array([0]), np.array([0]))


def test_an_export_reads_back_with_its_ids(tmp_path):
    values = np.arange(12, dtype=np.float32).reshape(4, 3) / 7
    for suffix in (".csv", ".tsv", ".parquet"):
        path = tmp_path / f"e{suffix}"
        export_embeddings(path, values, ["a", "b", "c", "d"])
        ids, read = read_embeddings(path)
        assert ids == ["a", "b", "c", "d"]
        np.testing.assert_array_equal(read, values)
    (tmp_path / "bad.csv").write_text("id,x\n1,2\n")
    with pytest.raises(ExportError, match="needs the columns node_id, e0"):
        read_embeddings(tmp_path / "bad.csv")
    with pytest.raises(ExportError, match="does not exist"):
        read_embeddings(tmp_path / "none.parquet")


def test_gca_train_warm_starts_and_aligns_to_an_earlier_run(tmp_path, capsys):
    first = tmp_path / "first"
    common = ["train", "--quiet", "--no-eval", "--set", "warmup_steps=0"]
    assert main([*common, "--epochs", "20", "--out", str(first), "--export", str(tmp_path / "first.parquet")]) == 0
    second = tmp_path / "second"
    assert (
        main(
            [
                *common,
                "--epochs",
                "3",
                "--seed",
                "5",
                "--out",
                str(second),
                "--init-from",
                str(first / "model.pt"),
                "--align-to",
                str(tmp_path / "first.parquet"),
            ]
        )
        == 0
    )
    assert "aligned to" in capsys.readouterr().out
    record = json.loads((second / "results.json").read_text())
    moved = record["alignment"]
    assert moved["shared_nodes"] == 34 and moved["cosine_after"] >= moved["cosine_before"]
    read = {entry["path"] for entry in record["provenance"]["inputs"]}
    assert str(first / "model.pt") in read and str(tmp_path / "first.parquet") in read
    earlier, aligned = np.load(first / "embeddings.npy"), np.load(second / "embeddings.npy")
    cosines = node_cosines(aligned, earlier)
    assert np.nanmean(cosines) == pytest.approx(moved["cosine_after"], abs=1e-5)  # what is written was aligned
    # the model written is the run's own, unrotated: it embeds the graph as the run's encoder did before alignment
    restored = GCA.load(second / "model.pt", device="cpu").embed(karate_club()).numpy()
    assert np.nanmean(node_cosines(restored, earlier)) == pytest.approx(moved["cosine_before"], abs=1e-5)


def test_the_file_to_start_from_is_read_once_and_a_warm_start_fits_as_its_file(tmp_path, monkeypatch):
    """``--init-from`` is read once, for the check before the graph loads and the training after it; a
    :class:`WarmStart` read from a file starts a fit exactly as the file's path does."""
    import gca.train.checkpoint as checkpoint

    common = ["train", "--quiet", "--no-eval", "--set", "warmup_steps=0"]
    assert main([*common, "--epochs", "2", "--out", str(tmp_path / "first")]) == 0
    read, load = [], checkpoint.load_checkpoint
    monkeypatch.setattr(checkpoint, "load_checkpoint", lambda path: read.append(str(path)) or load(path))
    model = str(tmp_path / "first" / "model.pt")
    assert main([*common, "--epochs", "1", "--init-from", model, "--out", str(tmp_path / "second")]) == 0
    assert read == [model]
    monkeypatch.undo()
    data = karate_club()
    GCA(_config(seed=1), device="cpu").fit(data).save(tmp_path / "model.pt")
    start = checkpoint.WarmStart.read(tmp_path / "model.pt")
    from_start = GCA(_config(epochs=2, seed=7), device="cpu").fit(data, init_from=start).embedding_
    from_file = GCA(_config(epochs=2, seed=7), device="cpu").fit(data, init_from=tmp_path / "model.pt").embedding_
    assert torch.equal(from_start, from_file)


def test_gca_train_refuses_what_cannot_start_or_align(tmp_path, capsys):
    out = tmp_path / "a"
    assert main(["train", "--quiet", "--no-eval", "--epochs", "2", "--out", str(out)]) == 0
    wide = ["train", "--quiet", "--no-eval", "--epochs", "1", "--set", "hidden=4"]
    assert main([*wide, "--out", str(tmp_path / "b"), "--init-from", str(out / "model.pt")]) != 0
    assert (
        main(
            [
                "train",
                "--quiet",
                "--no-eval",
                "--epochs",
                "1",
                "--out",
                str(tmp_path / "c"),
                "--align-to",
                str(tmp_path / "nothing.npy"),
            ]
        )
        != 0
    )
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("gca: error:")]
    assert len(errors) == 2 and "Traceback" not in err
    assert "of shape" in errors[0] and "nothing.npy does not exist" in errors[1]
    assert not (tmp_path / "b" / "results.json").exists() and not (tmp_path / "c" / "results.json").exists()
