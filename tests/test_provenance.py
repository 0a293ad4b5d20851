"""Where a result came from (gca.provenance): results.json and model.pt record the versions, the command line, the
times, the device and every input file with its SHA-256; gca embed records its checkpoint and that checkpoint's own
record; gca embed refuses to run without a graph; and after Ctrl-C the line says what the output folder holds."""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
import os
import platform
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pytest
import torch

import gca
from gca.cli import main
from gca.datasets.pyg import karate_club
from gca.outputs.folder import IN_PROGRESS
from gca.train.checkpoint import TrainingCheckpoints
from gca.train.estimator import GCA, GCAConfig

#: A run of a few seconds: Karate's size, 2 epochs, no warm-up, no evaluation.
QUICK = [
    "--epochs",
    "2",
    "--quiet",
    "--no-eval",
    "--set",
    "warmup_steps=0",
    "--set",
    "hidden=8",
    "--set",
    "proj_hidden=8",
]
KARATE = ["train", "--dataset", "Karate", *QUICK]


def _sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _graph_files(folder: Path) -> dict[str, Path]:
    """A 30-node graph as user files (a ring with chords; 5 features; two classes) and a config file."""
    folder.mkdir()
    edges = [(i, (i + 1) % 30) for i in range(30)] + [(i, (i + 7) % 30) for i in range(0, 30, 3)]
    files = {
        "edges": folder / "edges.csv",
        "features": folder / "x.npy",
        "labels": folder / "labels.csv",
        "config": folder / "setting.toml",
    }
    files["edges"].write_text("".join(f"{u},{v}\n" for u, v in edges))
    np.save(files["features"], np.random.default_rng(0).random((30, 5), dtype=np.float32))
    files["labels"].write_text("".join(f"{i},{'ab'[i % 2]}\n" for i in range(30)))
    files["config"].write_text("tau = 0.6\n")
    return files


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A training on user files given by relative paths, with a --config file: (argv, out folder, files)."""
    root = tmp_path_factory.mktemp("provenance")
    files = _graph_files(root / "graph")
    argv = [
        "train",
        "--edges",
        "graph/edges.csv",
        "--features",
        "graph/x.npy",
        "--labels",
        "graph/labels.csv",
        "--config",
        "graph/setting.toml",
        *QUICK,
        "--out",
        "run",
    ]
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GCA_CACHE_DIR", str(root / "cache"))  # no prepared graph of the user's is opened
        patch.chdir(root)
        assert main(argv) == 0
    return argv, root / "run", files


def _record(folder: Path) -> dict:
    return json.loads((folder / "results.json").read_text())


def _utc(text: str) -> datetime:
    moment = datetime.fromisoformat(text)
    assert moment.utcoffset() is not None and moment.utcoffset().total_seconds() == 0, text
    return moment


# -- gca train ---------------------------------------------------------------------------------------------------


def test_results_json_records_the_versions_of_the_code_that_ran(trained):
    versions = _record(trained[1])["provenance"]["versions"]
    expected = {"gca": gca.__version__, "python": platform.python_version()}
    for module, key in (
        ("torch", "torch"),
        ("torch_geometric", "torch_geometric"),
        ("sklearn", "scikit-learn"),
        ("numpy", "numpy"),
        ("scipy", "scipy"),
        ("pyarrow", "pyarrow"),
    ):
        if importlib.util.find_spec(module) is not None:
            expected[key] = str(importlib.import_module(module).__version__)
    assert versions == expected


def test_results_json_records_the_command_line_times_and_device(trained):
    argv, out, _ = trained
    provenance = _record(out)["provenance"]
    assert provenance["command"] == ["gca", *argv]
    started, finished = _utc(provenance["started"]), _utc(provenance["finished"])
    assert started <= finished <= datetime.now(timezone.utc)
    assert provenance["device"] == _record(out)["device"] == "cpu" and provenance["device_name"]
    assert provenance["platform"] == platform.platform()


def test_results_json_records_every_input_file_as_given_and_resolved_with_its_size_and_sha256(trained):
    _, out, files = trained
    inputs = _record(out)["provenance"]["inputs"]
    assert [entry["path"] for entry in inputs] == [
        "graph/edges.csv",
        "graph/x.npy",
        "graph/labels.csv",
        "graph/setting.toml",
    ]
    for entry, name in zip(inputs, ("edges", "features", "labels", "config"), strict=True):
        path = files[name]
        assert entry == {
            "path": entry["path"],
            "resolved": str(path.resolve()),
            "size": path.stat().st_size,
            "sha256": _sha256(path),
        }
    assert "prepared_graph" not in _record(out)["provenance"]  # a small graph is read from its files


def test_an_input_removed_before_the_record_is_made_is_listed_as_unreadable(tmp_path):
    from gca.provenance import file_record

    (tmp_path / "gone.csv").write_text("0,1\n")
    present = file_record(tmp_path / "gone.csv")
    assert present["sha256"] == _sha256(tmp_path / "gone.csv") and "unreadable" not in present
    (tmp_path / "gone.csv").unlink()
    assert file_record(tmp_path / "gone.csv") == {
        "path": str(tmp_path / "gone.csv"),
        "resolved": str(tmp_path.resolve() / "gone.csv"),
        "size": None,
        "sha256": None,
        "unreadable": "No such file or directory",
    }


def test_a_labels_file_rewritten_after_it_was_read_is_recorded_as_read(tmp_path, monkeypatch, capsys):
    """The digest is taken as the file is read: rewriting it before the record is made changes nothing recorded
    but ``changed``, said in one warning line."""
    import gca.run.train

    files = _graph_files(tmp_path / "graph")
    read = _sha256(files["labels"]), files["labels"].stat().st_size
    original = gca.run.train.command_provenance

    def rewritten_first(*args, **kwargs):
        files["labels"].write_text("".join(f"{i},{'cd'[i % 2]}\n" for i in range(31)))
        return original(*args, **kwargs)

    monkeypatch.setattr(gca.run.train, "command_provenance", rewritten_first)
    monkeypatch.setenv("GCA_CACHE_DIR", str(tmp_path / "cache"))
    assert (
        main(
            [
                "train",
                "--edges",
                str(files["edges"]),
                "--features",
                str(files["features"]),
                "--labels",
                str(files["labels"]),
                *QUICK,
                "--out",
                str(tmp_path / "run"),
            ]
        )
        == 0
    )
    entry = _record(tmp_path / "run")["provenance"]["inputs"][2]
    assert entry["path"] == str(files["labels"]) and _sha256(files["labels"]) != read[0]
    assert (entry["sha256"], entry["size"], entry["changed"]) == (*read, "after it was read")
    lines = [line for line in capsys.readouterr().err.splitlines() if "changed" in line]
    assert lines == [
        f"gca: warning: {files['labels']} changed after it was read; the run's record gives the "
        "SHA-256 of the contents read"
    ]
    unchanged = _record(tmp_path / "run")["provenance"]["inputs"][:2]
    assert [e["sha256"] for e in unchanged] == [_sha256(files["edges"]), _sha256(files["features"])]
    assert not any("changed" in e for e in unchanged)


def test_a_file_that_changed_while_it_was_read_has_no_digest(tmp_path):
    from gca.provenance import digests_as_read, file_record, identities

    path = tmp_path / "labels.csv"
    path.write_text("0,a\n")
    before = identities([path])
    path.write_text("0,b\n1,a\n")  # between the identity taken before the read and the digest after it
    taken = digests_as_read([path], before)[str(path.resolve())]
    assert (taken["sha256"], taken["size"], taken["changed"]) == (None, None, "while it was read")
    assert file_record(path, read=taken)["changed"] == "while it was read"
    again = digests_as_read([path], identities([path]))[str(path.resolve())]
    assert again["sha256"] == _sha256(path) and "changed" not in file_record(path, read=again)


def test_model_pt_holds_the_same_record_and_gca_load_keeps_it(trained):
    out = trained[1]
    state = torch.load(out / "model.pt", weights_only=True)  # plain values only: loadable without code
    assert state["provenance"] == _record(out)["provenance"]
    assert GCA.load(out / "model.pt", device="cpu").provenance == state["provenance"]


def test_a_built_in_graph_has_no_input_file(tmp_path):
    assert main([*KARATE, "--out", str(tmp_path / "run")]) == 0
    assert _record(tmp_path / "run")["provenance"]["inputs"] == []


def test_a_prepared_graph_on_disk_is_recorded_and_its_files_are_not_read_again(tmp_path, cache_dir, monkeypatch):
    files = _graph_files(tmp_path / "graph")
    graph = ["--edges", str(files["edges"]), "--features", str(files["features"])]
    assert main(["train", *graph, *QUICK, "--cache", "--out", str(tmp_path / "first")]) == 0  # writes it
    hashed = []
    import gca.io

    original = gca.io.hash_files
    monkeypatch.setattr(gca.io, "hash_files", lambda paths, *a: hashed.extend(paths) or original(paths, *a))
    monkeypatch.setattr("gca.provenance.hash_files", gca.io.hash_files)
    monkeypatch.setattr("gca.run.integrity.hash_files", gca.io.hash_files)
    assert main(["train", *graph, *QUICK, "--out", str(tmp_path / "second")]) == 0  # opens it
    first, second = (_record(tmp_path / name)["provenance"] for name in ("first", "second"))
    assert _record(tmp_path / "second")["prepared_graph"]["opened"] is True
    prepared = second["prepared_graph"]
    assert Path(prepared["folder"]).parent == cache_dir / "prepared" and prepared == first["prepared_graph"]
    assert len(prepared["key"]) == 16 and len(prepared["digest"]) == 40
    assert [entry["sha256"] for entry in second["inputs"]] == [_sha256(files["edges"]), _sha256(files["features"])]
    assert hashed == []  # the SHA-256 came from the prepared graph's record, not from reading the input again
    os.utime(files["edges"], ns=(1, 1))  # the same contents, touched: hashed again, and the same digest
    assert main(["train", *graph, *QUICK, "--out", str(tmp_path / "third")]) == 0
    assert _record(tmp_path / "third")["provenance"]["inputs"] == second["inputs"] and hashed


def test_a_resumed_run_records_the_checkpoint_it_continued_from(tmp_path):
    out = tmp_path / "run"
    assert main([*KARATE, "--checkpoint-every", "1", "--out", str(out)]) == 0
    read = _sha256(out / "checkpoint.pt")
    assert main([*KARATE, "--epochs", "3", "--resume", "--out", str(out)]) == 0
    resumed = _record(out)["provenance"]["resumed_from"]
    assert resumed["path"] == str(out / IN_PROGRESS) and resumed["sha256"] == read


# -- the Python API and older files ------------------------------------------------------------------------------


def test_a_model_saved_from_python_records_versions_device_and_times(tmp_path):
    config = GCAConfig(epochs=2, hidden=8, proj_hidden=8, warmup_steps=0)
    estimator = GCA(config, device="cpu").fit(karate_club())
    estimator.save(tmp_path / "model.pt")
    provenance = torch.load(tmp_path / "model.pt", weights_only=True)["provenance"]
    assert set(provenance) == {"versions", "device", "device_name", "platform", "started", "finished"}
    assert provenance["versions"]["torch"] == str(torch.__version__) and provenance["device"] == "cpu"
    assert _utc(provenance["started"]) <= _utc(provenance["finished"])


def test_a_cuda_device_is_recorded_with_the_gpus_name_and_cuda_version(monkeypatch):
    from gca.provenance import device_record

    names = []
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda index: names.append(index) or "NVIDIA H100 80GB HBM3")
    monkeypatch.setattr(torch.version, "cuda", "12.4")
    record = device_record(torch.device("cuda:1"))
    assert record == {
        "device": "cuda:1",
        "device_name": "NVIDIA H100 80GB HBM3 (CUDA 12.4)",
        "platform": platform.platform(),
    }
    assert names == [1]


def test_a_model_pt_from_before_provenance_still_loads_and_embeds(trained, tmp_path, capsys):
    state = torch.load(trained[1] / "model.pt", weights_only=True)
    del state["provenance"]
    torch.save(state, tmp_path / "old.pt")
    assert GCA.load(tmp_path / "old.pt", device="cpu").provenance is None
    graph = trained[2]
    assert (
        main(
            [
                "embed",
                "--checkpoint",
                str(tmp_path / "old.pt"),
                "--edges",
                str(graph["edges"]),
                "--features",
                str(graph["features"]),
                "--out",
                str(tmp_path / "emb"),
            ]
        )
        == 0
    )
    assert _record(tmp_path / "emb")["checkpoint"]["provenance"] is None


# -- gca embed ---------------------------------------------------------------------------------------------------


def test_embed_records_its_checkpoint_and_the_checkpoints_own_record(trained, tmp_path):
    _, run, files = trained
    argv = [
        "embed",
        "--checkpoint",
        str(run / "model.pt"),
        "--edges",
        str(files["edges"]),
        "--features",
        str(files["features"]),
        "--out",
        str(tmp_path / "emb"),
    ]
    assert main(argv) == 0
    assert sorted(p.name for p in (tmp_path / "emb").iterdir()) == ["embeddings.npy", "results.json"]
    record = _record(tmp_path / "emb")
    checkpoint = record["checkpoint"]
    assert {k: checkpoint[k] for k in ("path", "size", "sha256")} == {
        "path": str(run / "model.pt"),
        "size": (run / "model.pt").stat().st_size,
        "sha256": _sha256(run / "model.pt"),
    }
    assert checkpoint["provenance"] == _record(run)["provenance"]
    provenance = record["provenance"]
    assert provenance["command"] == ["gca", *argv]
    assert [entry["sha256"] for entry in provenance["inputs"]] == [
        _sha256(files["edges"]),
        _sha256(files["features"]),
        _sha256(run / "model.pt"),
    ]
    assert record["num_nodes"] == 30 and record["dimensions"] == np.load(tmp_path / "emb" / "embeddings.npy").shape[1]
    assert main(argv) == 0  # the folder is gca embed's own: a second embedding replaces the first


def test_embed_without_a_graph_is_one_line_and_writes_nothing(trained, tmp_path, capsys):
    capsys.readouterr()
    assert main(["embed", "--checkpoint", str(trained[1] / "model.pt"), "--out", str(tmp_path / "emb")]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert err == [
        "gca: error: gca embed needs the graph to embed: give --dataset NAME|PATH or --edges FILE "
        "--features FILE (with the feature columns the model was trained on)"
    ]
    assert captured.out == "" and not (tmp_path / "emb").exists()


def test_a_checkpoint_whose_provenance_is_not_plain_values_is_one_line(trained, tmp_path, capsys):
    state = torch.load(trained[1] / "model.pt", weights_only=True)
    state["provenance"]["versions"] = torch.zeros(2)
    torch.save(state, tmp_path / "bad.pt")
    capsys.readouterr()
    assert (
        main(["embed", "--checkpoint", str(tmp_path / "bad.pt"), "--dataset", "Karate", "--out", str(tmp_path / "emb")])
        == 2
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is a damaged gca checkpoint ('provenance' is" in err[0], err
    assert "not a table of plain values" in err[0] and not (tmp_path / "emb").exists()


# -- Ctrl-C ------------------------------------------------------------------------------------------------------


def _stop_training(monkeypatch, after_epoch: int = 0) -> None:
    """Ctrl-C during training: at once (``after_epoch`` 0), or once that epoch's checkpoint is written."""
    if not after_epoch:

        def interrupted(*args, **kwargs):
            raise KeyboardInterrupt

        monkeypatch.setattr("gca.run.pipeline.run_gca", interrupted)
        return
    original = TrainingCheckpoints.after_epoch

    def after(self, epoch, *args):
        original(self, epoch, *args)
        if epoch == after_epoch:
            raise KeyboardInterrupt

    monkeypatch.setattr(TrainingCheckpoints, "after_epoch", after)


def _interrupted(argv: list[str], capsys) -> str:
    capsys.readouterr()
    assert main(argv) == 130
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("gca: interrupted")]
    assert len(lines) == 1, lines
    return lines[0]


def test_ctrl_c_keeps_an_earlier_complete_run_and_says_so(tmp_path, capsys, monkeypatch):
    out = tmp_path / "run"
    assert main([*KARATE, "--out", str(out)]) == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    _stop_training(monkeypatch)
    line = _interrupted([*KARATE, "--seed", "5", "--out", str(out)], capsys)
    assert line == f"gca: interrupted; {out} keeps the earlier complete run, untouched"
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_ctrl_c_with_no_earlier_run_says_nothing_was_written(tmp_path, capsys, monkeypatch):
    _stop_training(monkeypatch)
    assert _interrupted([*KARATE, "--out", str(tmp_path / "new")], capsys) == "gca: interrupted; nothing was written"
    assert not (tmp_path / "new").exists()  # the folder the run made is removed again
    (tmp_path / "empty").mkdir()
    line = _interrupted([*KARATE, "--out", str(tmp_path / "empty")], capsys)
    assert line == f"gca: interrupted; {tmp_path / 'empty'} holds no results"
    assert list((tmp_path / "empty").iterdir()) == []


def test_ctrl_c_after_a_checkpoint_says_it_stays_for_resume(tmp_path, capsys, monkeypatch):
    out = tmp_path / "run"
    _stop_training(monkeypatch, after_epoch=1)
    line = _interrupted([*KARATE, "--checkpoint-every", "1", "--out", str(out)], capsys)
    assert line == (
        f"gca: interrupted; {out} holds no results; the training checkpoint {out / IN_PROGRESS} stays: "
        "the same command with --resume continues from it"
    )
    assert sorted(p.name for p in out.iterdir()) == [IN_PROGRESS]
    monkeypatch.undo()
    assert main([*KARATE, "--checkpoint-every", "1", "--resume", "--out", str(out)]) == 0  # as the line says
    assert "resuming from" in capsys.readouterr().err and (out / "results.json").is_file()


def test_ctrl_c_in_embed_says_what_its_folder_holds(trained, tmp_path, capsys, monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(GCA, "embed", interrupted)
    _, run, files = trained
    line = _interrupted(
        [
            "embed",
            "--checkpoint",
            str(run / "model.pt"),
            "--edges",
            str(files["edges"]),
            "--features",
            str(files["features"]),
            "--out",
            str(tmp_path / "emb"),
        ],
        capsys,
    )
    assert line == "gca: interrupted; nothing was written" and not (tmp_path / "emb").exists()
