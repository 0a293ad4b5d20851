"""Hostile but realistic input (issue 10): every case ends in a finite result or one `gca: error:` line and exit
status 2, with the output folder untouched — never a traceback, a silent NaN, a hang or files of two runs."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from gca.cli import main
from gca.datasets import karate_club

QUICK = ["--epochs", "2", "--quiet"]


def _error(args: list[str], capsys) -> str:
    code = main(args)
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    errors = [line for line in err if line.startswith("gca: error:")]
    assert code == 2 and len(errors) == 1 and not any("Traceback" in line for line in err), (code, err)
    return errors[0]


def _snapshot(folder: Path) -> dict[str, str]:
    """Every file below ``folder`` (hidden ones too) with a digest of its bytes."""
    if not folder.exists():
        return {}
    return {
        str(p.relative_to(folder)): hashlib.sha1(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.fixture
def karate(tmp_path) -> dict[str, Path]:
    """Karate as an integer edge list and .npy features, and an earlier finished run in ``out``."""
    data = karate_club()
    ei = data.edge_index[:, data.edge_index[0] < data.edge_index[1]].numpy()
    paths = {
        "edges": tmp_path / "edges.csv",
        "x": tmp_path / "x.npy",
        "labels": tmp_path / "labels.csv",
        "out": tmp_path / "out",
    }
    paths["edges"].write_text("".join(f"{u},{v}\n" for u, v in ei.T))
    np.save(paths["x"], np.eye(34, dtype=np.float32))
    paths["labels"].write_text("".join(f"{i},{int(data.y[i])}\n" for i in range(34)))
    assert (
        main(
            [
                "train",
                "--edges",
                str(paths["edges"]),
                "--features",
                str(paths["x"]),
                "--labels",
                str(paths["labels"]),
                "--out",
                str(paths["out"]),
                "--plots",
                *QUICK,
            ]
        )
        == 0
    )
    return paths


def _files(paths: dict[str, Path]) -> list[str]:
    return ["--edges", str(paths["edges"]), "--features", str(paths["x"]), "--labels", str(paths["labels"])]


# ----------------------------------------------------------------------------------------------- silent results
def test_non_finite_embeddings_are_an_error_never_an_output(tmp_path):
    """The loss is finite before every update, but the last update makes the weights NaN: the check after
    training catches what the loss cannot."""
    from gca import GCA, GCAConfig
    from gca.train.loop import TrainingError

    class InfiniteGradient(torch.nn.Module):
        def forward(self, u, v):  # value 0, gradient 1 / (2·sqrt(0)) = inf → Adam's update is NaN
            s = u.sum() + v.sum()
            return (s - s.detach()).abs().sqrt()

    estimator = GCA(GCAConfig(epochs=1, hidden=4, proj_hidden=4), device="cpu", objective=InfiniteGradient())
    with pytest.raises(TrainingError, match="non-finite embeddings"):
        estimator.fit(karate_club())


def test_huge_learning_rate_is_refused_before_training(karate, capsys):
    before = _snapshot(karate["out"])
    error = _error(
        ["train", *_files(karate), "--no-eval", "--set", "lr=1e30", "--out", str(karate["out"]), *QUICK], capsys
    )
    assert "lr must be a finite number in (0, 10]" in error
    assert _snapshot(karate["out"]) == before


def test_blank_first_cell_is_a_missing_number_not_a_header(tmp_path, capsys):
    (tmp_path / "e.csv").write_text("0,1\n1,2\n2,0\n")
    (tmp_path / "x.csv").write_text("1,,0\n0,1,0\n0,0,1\n")
    error = _error(
        [
            "train",
            "--edges",
            str(tmp_path / "e.csv"),
            "--features",
            str(tmp_path / "x.csv"),
            "--out",
            str(tmp_path / "o"),
            *QUICK,
        ],
        capsys,
    )
    assert "line 1: feature value '' is not a number" in error


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--splits", "0"], "--splits must lie in [1, 1000]"),
        (["--set", "tau=inf"], "tau must be a finite number"),
        (["--set", "epochs=abc", "--epochs", "2"], "epochs must be a number, got 'abc'"),
        (["--seed", "-1"], "seed must be an integer in [0, 4294967295]"),
        (["--seed", "123456789012345678901234567890"], "seed must be an integer in"),
        (["--set", "epochs=inf"], "epochs must be a finite number"),
        (["--set", "hidden=nan"], "hidden must be a finite number"),
        (["--set", "weight_decay=nan"], "weight_decay must be a finite number"),
        (["--set", "hidden=100000000"], "hidden must be an integer in [1, 65536]"),
        (["--set", "epochs=2.5"], "epochs must be an integer"),
        (["--set", "activation=tanh"], "activation must be one of"),
        (["--device", "meta"], "device 'meta' cannot train gca"),
        (["--device", "nonsense"], "unknown device"),
        (["--device", "cuda:7"], "cuda"),
        (["--out", ""], "--out is empty"),
    ],
)
def test_bad_values_end_before_training_with_one_line(args, words, karate, capsys):
    if args[:2] == ["--device", "cuda:7"] and torch.cuda.device_count() > 7:
        pytest.skip("this machine has a cuda:7")
    before = _snapshot(karate["out"])
    out = [] if "--out" in args else ["--out", str(karate["out"])]
    assert words in _error(["train", *_files(karate), *out, "--quiet", *args], capsys)
    assert _snapshot(karate["out"]) == before


def test_config_file_that_is_not_utf8(tmp_path, capsys):
    (tmp_path / "c.toml").write_bytes(b"tau = 0.5\n# \xff\xfe caf\xe9\n")
    assert "not UTF-8" in _error(["train", "--config", str(tmp_path / "c.toml"), "--out", str(tmp_path / "o")], capsys)


# ----------------------------------------------------------------------------------------------- file contents
def test_ids_beyond_int64(tmp_path, capsys):
    (tmp_path / "e.csv").write_text("0,1\n1,123456789012345678901234567890\n")
    np.save(tmp_path / "x.npy", np.eye(3, dtype=np.float32))
    error = _error(
        [
            "train",
            "--edges",
            str(tmp_path / "e.csv"),
            "--features",
            str(tmp_path / "x.npy"),
            "--out",
            str(tmp_path / "o"),
            *QUICK,
        ],
        capsys,
    )
    assert "names node 123456789012345678901234567890 but the features have 3 rows" in error


def _npz(path: Path, adj: sp.csr_matrix, attr: sp.csr_matrix, labels=None, **replace) -> None:
    arrays = dict(
        adj_data=adj.data,
        adj_indices=adj.indices,
        adj_indptr=adj.indptr,
        adj_shape=adj.shape,
        attr_data=attr.data,
        attr_indices=attr.indices,
        attr_indptr=attr.indptr,
        attr_shape=attr.shape,
    )
    if labels is not None:
        arrays["labels"] = labels
    arrays.update(replace)
    np.savez(path, **arrays)


def test_npz_index_arrays_outside_their_shape(tmp_path, capsys):
    adj = sp.csr_matrix(np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]], dtype=np.float32))
    attr = sp.csr_matrix(np.eye(3, dtype=np.float32))
    _npz(tmp_path / "bad_adj.npz", adj, attr, adj_indices=np.array([1, 0, 7, 1]))
    _npz(tmp_path / "bad_attr.npz", adj, attr, attr_indices=np.array([0, 1, 9]))
    for name in ("bad_adj.npz", "bad_attr.npz"):
        assert "malformed sparse arrays" in _error(
            ["train", "--dataset", str(tmp_path / name), "--out", str(tmp_path / "o"), *QUICK], capsys
        )


def test_npz_graph_with_one_class_fails_before_training(tmp_path, capsys):
    adj = sp.csr_matrix(np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]], dtype=np.float32))
    _npz(tmp_path / "g.npz", adj, sp.csr_matrix(np.eye(3, dtype=np.float32)), labels=np.zeros(3, dtype=np.int64))
    error = _error(["train", "--dataset", str(tmp_path / "g.npz"), "--out", str(tmp_path / "o"), "--quiet"], capsys)
    assert "only one class" in error
    assert _snapshot(tmp_path / "o") == {}


@pytest.mark.parametrize(
    ("array", "words"), [(np.eye(4) * (1 + 2j), "complex numbers"), (np.eye(4) * 1e300, "beyond float32's range")]
)
def test_features_a_float32_cast_would_change_are_refused(array, words, tmp_path, capsys):
    (tmp_path / "e.csv").write_text("0,1\n1,2\n2,3\n")
    np.save(tmp_path / "x.npy", array)
    assert words in _error(
        [
            "train",
            "--edges",
            str(tmp_path / "e.csv"),
            "--features",
            str(tmp_path / "x.npy"),
            "--out",
            str(tmp_path / "o"),
            *QUICK,
        ],
        capsys,
    )


def test_subnormal_features_train_to_finite_embeddings(karate, tmp_path, capsys):
    x = (np.random.default_rng(0).random((34, 4)) * 1e-40).astype(np.float32)  # float32 subnormals
    np.save(tmp_path / "tiny.npy", x)
    out = tmp_path / "tiny"
    assert (
        main(
            [
                "train",
                "--edges",
                str(karate["edges"]),
                "--features",
                str(tmp_path / "tiny.npy"),
                "--no-eval",
                "--out",
                str(out),
                *QUICK,
            ]
        )
        == 0
    )
    assert np.isfinite(np.load(out / "embeddings.npy")).all()


def test_zero_padded_ids_match_between_edge_and_label_files(tmp_path, capsys):
    (tmp_path / "e.csv").write_text("000,001\n001,002\n002,003\n003,000\n")
    (tmp_path / "y.csv").write_text("000,a\n001,a\n002,b\n003,b\n")
    np.save(tmp_path / "x.npy", np.eye(4, dtype=np.float32))
    assert (
        main(
            [
                "train",
                "--edges",
                str(tmp_path / "e.csv"),
                "--features",
                str(tmp_path / "x.npy"),
                "--labels",
                str(tmp_path / "y.csv"),
                "--no-eval",
                "--out",
                str(tmp_path / "o"),
                *QUICK,
            ]
        )
        == 0
    )


def test_a_huge_field_is_not_called_an_unbalanced_quote(tmp_path, capsys):
    (tmp_path / "e.csv").write_text("0,1\n1," + "9" * 200_000 + "\n")
    np.save(tmp_path / "x.npy", np.eye(2, dtype=np.float32))
    assert "longer than" in _error(
        [
            "train",
            "--edges",
            str(tmp_path / "e.csv"),
            "--features",
            str(tmp_path / "x.npy"),
            "--out",
            str(tmp_path / "o"),
            *QUICK,
        ],
        capsys,
    )


def test_semicolons_with_decimal_commas(tmp_path, capsys):
    (tmp_path / "e.csv").write_text("0,1\n1,2\n")
    (tmp_path / "x.csv").write_text("1,5;2,0\n0,5;1,0\n3,0;0,0\n")
    error = _error(
        [
            "train",
            "--edges",
            str(tmp_path / "e.csv"),
            "--features",
            str(tmp_path / "x.csv"),
            "--out",
            str(tmp_path / "o"),
            *QUICK,
        ],
        capsys,
    )
    assert "line 1: feature value '1,5' is not a number; decimal commas" in error


def test_undirected_duplicates_are_counted_as_pairs():
    from torch_geometric.data import Data

    from gca.graph.graph import prepare_graph

    pairs = [(0, 1), (1, 2), (0, 1)]  # (0, 1) twice, each in both directions
    edges = torch.tensor([p for u, v in pairs for p in ((u, v), (v, u))]).t()
    graph = prepare_graph(Data(x=torch.eye(3), edge_index=edges))
    assert "merged 1 duplicate edge" in graph.warnings


# ----------------------------------------------------------------------------------------------- outputs
def test_export_that_cannot_be_written_is_refused_before_training(karate, tmp_path, capsys):
    before = _snapshot(karate["out"])
    error = _error(
        [
            "train",
            *_files(karate),
            "--export",
            str(tmp_path / "missing" / "e.csv"),
            "--out",
            str(karate["out"]),
            *QUICK,
        ],
        capsys,
    )
    assert "does not exist; create it first" in error
    for target in (karate["edges"], karate["labels"]):  # an export over an input file
        assert "is one of the input files" in _error(
            ["train", *_files(karate), "--export", str(target), "--out", str(karate["out"]), *QUICK], capsys
        )
    assert _snapshot(karate["out"]) == before


def test_a_write_that_fails_after_training_leaves_the_earlier_run_whole(karate, tmp_path, capsys, monkeypatch):
    import gca.outputs.folder

    before = _snapshot(karate["out"])

    def full_disk(path, embeddings, node_ids, **_):
        Path(path).write_text("partial")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(gca.outputs.folder, "export_embeddings", full_disk)
    export = tmp_path / "emb.csv"
    error = _error(["train", *_files(karate), "--export", str(export), "--out", str(karate["out"]), *QUICK], capsys)
    assert error == f"gca: error: cannot write {export}: No space left on device"  # the user's path, not a temp file
    assert _snapshot(karate["out"]) == before and not export.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_a_failing_plot_leaves_no_loss_png(karate, capsys, monkeypatch):
    import gca.outputs.plots

    before = _snapshot(karate["out"])

    def broken(*args, **kwargs):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(gca.outputs.plots, "tsne_map", broken)
    _error(["train", *_files(karate), "--plots", "--out", str(karate["out"]), *QUICK], capsys)
    assert _snapshot(karate["out"]) == before


def test_a_folder_never_holds_two_runs(karate, capsys):
    """A second run without --plots removes the first run's plots: every file comes from one run."""
    out = karate["out"]
    assert {"loss.png", "tsne.png", "results.json"} <= set(_snapshot(out))
    assert main(["train", *_files(karate), "--out", str(out), "--seed", "3", *QUICK]) == 0
    assert set(_snapshot(out)) == {"embeddings.npy", "model.pt", "results.json"}
    assert json.loads((out / "results.json").read_text())["config"]["seed"] == 3
    # gca embed does not write into a training run's folder
    assert "holds another run's" in _error(
        [
            "embed",
            "--checkpoint",
            str(out / "model.pt"),
            "--edges",
            str(karate["edges"]),
            "--features",
            str(karate["x"]),
            "--out",
            str(out),
        ],
        capsys,
    )


def test_tiny_graph_with_plots_skips_tsne(tmp_path, capsys):
    (tmp_path / "e.csv").write_text("0,1\n1,2\n")
    (tmp_path / "y.csv").write_text("0,a\n1,b\n2,a\n")
    np.save(tmp_path / "x.npy", np.eye(3, dtype=np.float32))
    out = tmp_path / "o"
    assert (
        main(
            [
                "train",
                "--edges",
                str(tmp_path / "e.csv"),
                "--features",
                str(tmp_path / "x.npy"),
                "--labels",
                str(tmp_path / "y.csv"),
                "--no-eval",
                "--plots",
                "--out",
                str(out),
                *QUICK,
            ]
        )
        == 0
    )
    assert "t-SNE needs at least" in capsys.readouterr().err
    assert set(_snapshot(out)) == {"embeddings.npy", "model.pt", "results.json", "loss.png"}


def test_memory_exhaustion_is_one_line(karate, capsys, monkeypatch):
    from gca.train.estimator import GCA

    def exhausted(*args, **kwargs):
        raise RuntimeError(
            "[enforce fail at alloc_cpu.cpp:116] . DefaultCPUAllocator: not enough memory: you tried "
            "to allocate 400000000000 bytes."
        )

    monkeypatch.setattr(GCA, "fit", exhausted)
    before = _snapshot(karate["out"])
    assert "ran out of memory; lower hidden" in _error(
        ["train", *_files(karate), "--out", str(karate["out"]), *QUICK], capsys
    )
    assert _snapshot(karate["out"]) == before


# ----------------------------------------------------------------------------------------------- the real binary
#: The installed ``gca`` command (the console script next to this Python), as a user runs it.
GCA_BINARY = (
    [str(Path(sys.executable).with_name("gca"))]
    if Path(sys.executable).with_name("gca").exists()
    else [sys.executable, "-m", "gca"]
)


def _gca(*args: str, timeout: float = 120, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([*GCA_BINARY, *args], capture_output=True, text=True, timeout=timeout, **kwargs)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_a_pipe_as_input_file_does_not_hang(karate, tmp_path):
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    for flag in ("--edges", "--labels", "--features"):
        args = {"--edges": str(karate["edges"]), "--features": str(karate["x"]), "--labels": str(karate["labels"])}
        args[flag] = str(fifo)
        done = _gca("train", *[t for kv in args.items() for t in kv], "--out", str(tmp_path / "o"), *QUICK, timeout=60)
        assert done.returncode == 2 and "not a regular file" in done.stderr, (flag, done.stderr)


def test_help_and_argument_errors_do_not_load_pytorch():
    code = (
        "import sys; from gca.cli import main\n"
        "for argv in (['--help'], ['train', '--set', 'tau=abc'], ['train', '--seed', '-1']):\n"
        "    try:\n        main(argv)\n    except SystemExit:\n        pass\n"
        "print('torch' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip().splitlines()[-1] == "False", done.stdout + done.stderr
    assert "tau must be a number" in done.stderr and "seed must be an integer" in done.stderr


def test_a_wrong_input_path_is_refused_before_pytorch_loads(karate, tmp_path):
    """A missing file, a folder or a pipe among --edges/--features/--labels is said at once, before the readers and
    PyTorch load (seconds), and nothing is written."""
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    cases = {"--edges": tmp_path / "missing.csv", "--features": tmp_path, "--labels": fifo}
    said = {"--edges": "does not exist", "--features": "is a folder, not a file", "--labels": "not a regular file"}
    for flag, path in cases.items():
        args = {"--edges": str(karate["edges"]), "--features": str(karate["x"]), "--labels": str(karate["labels"])}
        args[flag] = str(path)
        argv = ["train", *[t for kv in args.items() for t in kv], "--out", str(tmp_path / "o")]
        code = f"import sys; from gca.cli import main\nprint(main({argv!r}), 'torch' in sys.modules)"
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
        assert done.stdout.split() == ["2", "False"], (flag, done.stdout, done.stderr)
        assert said[flag] in done.stderr and done.stderr.count("\n") == 1, (flag, done.stderr)
    assert not (tmp_path / "o").exists()


def _wait_for_gca_handlers(pid: int, limit: float = 60.0) -> None:
    """Wait until the process catches SIGTERM — the first thing the gca command does (gca.cli.startup); Python
    itself leaves SIGTERM alone. So the delays below count from a state the process reached, not from its start,
    and hold on a slow machine as on a fast one. (Where /proc is missing, return at once.)"""
    status = Path(f"/proc/{pid}/status")
    deadline = time.time() + limit
    while status.exists() and time.time() < deadline:
        caught = next((line.split()[1] for line in status.read_text().splitlines() if line.startswith("SigCgt:")), "0")
        if int(caught, 16) & (1 << (signal.SIGTERM - 1)):
            return
        time.sleep(0.001)


def _start_endless_run(out: Path, sigint) -> subprocess.Popen:
    """``gca train`` for 100,000 epochs, started with SIGINT's disposition ``sigint``. A child keeps only an
    *ignored* disposition across exec, and takes it from whoever ran the tests (a shell without job control starts
    ``pytest … &`` with SIGINT ignored), so the disposition is set here, around the start, for the test to mean one
    thing wherever it runs."""
    previous = signal.signal(signal.SIGINT, sigint)
    try:
        return subprocess.Popen(
            [*GCA_BINARY, "train", "--epochs", "100000", "--quiet", "--out", str(out)],
            stderr=subprocess.PIPE,
            text=True,
        )
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.mark.parametrize("delay", [0.0, 0.05, 0.3, 1.0, 1.3, 2.0])
def test_ctrl_c_at_any_moment_is_one_line(delay, tmp_path):
    proc = _start_endless_run(tmp_path / "o", signal.default_int_handler)  # a terminal's foreground job
    _wait_for_gca_handlers(proc.pid)
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "Traceback" not in err, err
    assert not (tmp_path / "o" / "results.json").exists()


@pytest.mark.parametrize("delay", [0.0, 0.05, 0.3, 2.0])
def test_an_ignored_ctrl_c_stays_ignored_and_sigterm_still_stops_the_run(delay, tmp_path):
    """A background job of a script (SIGINT ignored) is not ended by a Ctrl-C at any moment — not while it loads,
    not while it trains — and a SIGTERM still ends it with one line."""
    proc = _start_endless_run(tmp_path / "o", signal.SIG_IGN)
    _wait_for_gca_handlers(proc.pid)
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    try:
        time.sleep(1.0)
        assert proc.poll() is None, "the ignored Ctrl-C ended the run"
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "Traceback" not in err, err
    assert not (tmp_path / "o" / "results.json").exists()


def test_progress_in_a_log_file_is_plain_lines(tmp_path):
    log = tmp_path / "log.txt"
    with log.open("w") as stderr:
        done = subprocess.run(
            [*GCA_BINARY, "train", "--epochs", "50", "--no-eval", "--out", str(tmp_path / "o")],
            stderr=stderr,
            stdout=subprocess.DEVNULL,
            timeout=120,
        )
    text = log.read_text()
    assert done.returncode == 0 and "\r" not in text
    lines = [line for line in text.splitlines() if line.startswith("GCA:")]
    assert lines[0].startswith("GCA: 5/50 epochs, loss ") and lines[-1].startswith("GCA: 50/50 epochs")
    assert len(lines) == 10


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["train", "--seed", "1e3"], "argument --seed: invalid int value: '1e3'"),
        (["bogus"], "invalid choice: 'bogus'"),
        (["train", "--dataset", ""], "--dataset is empty"),
        (["reproduce", "table3", "--dataset", " ", "--out", "{tmp}/r"], "--dataset is empty"),
        (["train", "--dataset", "/dev/null"], "is not a regular file"),
        (["train", "--config", "{tmp}/list.json"], "must hold a table"),
        (["train", "--edges", "{tmp}/e.csv", "--features", "{tmp}/empty.npy"], "holds a 0×3 matrix"),
        (["embed", "--checkpoint", "{tmp}", "--dataset", "Karate", "--out", "{tmp}/emb"], "is not a file"),
    ],
)
def test_more_hostile_arguments(args, words, tmp_path, capsys):
    (tmp_path / "list.json").write_text("[1, 2]")
    (tmp_path / "e.csv").write_text("0,1\n")
    np.save(tmp_path / "empty.npy", np.zeros((0, 3), dtype=np.float32))
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    if "--out" not in args:
        args += ["--out", str(tmp_path / "o")]
    if "invalid" in words:
        with pytest.raises(SystemExit) as stop:  # argparse's own errors: one line, status 2, no usage block
            main(args)
        assert stop.value.code == 2
        err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
        assert len(err) == 1 and err[0].startswith("gca: error:") and words in err[0], err
        return
    assert words in _error(args, capsys)


def test_sigterm_leaves_the_earlier_run_and_no_staged_files(karate, tmp_path):
    before = _snapshot(karate["out"])
    proc = subprocess.Popen(
        [*GCA_BINARY, "train", *_files(karate), "--epochs", "100000", "--quiet", "--out", str(karate["out"])],
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(4)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "Traceback" not in err, err
    assert _snapshot(karate["out"]) == before


@pytest.mark.parametrize(
    ("labels", "words"),
    [
        (np.array([0, 1, -3]), "node 2 is -3"),
        (np.array([0.0, 0.3, 0.7]), "node 1 is 0.3"),
        (np.array([[1, 0], [0, 1], [1, 0]]), "labels have shape (3, 2)"),
        (np.array([0, 1]), "one label per node (3)"),
        (np.array(["a", "b", "a"]), "give class numbers"),
    ],
)
def test_npz_labels_that_are_not_class_numbers_are_refused(tmp_path, capsys, labels, words):
    adj = sp.csr_matrix(np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]], dtype=np.float32))
    _npz(tmp_path / "g.npz", adj, sp.csr_matrix(np.eye(3, dtype=np.float32)), labels=labels)
    error = _error(["train", "--dataset", str(tmp_path / "g.npz"), "--out", str(tmp_path / "o"), "--quiet"], capsys)
    assert "g.npz" in error and words in error
    assert _snapshot(tmp_path / "o") == {}


@pytest.mark.parametrize(
    ("env", "words"),
    [
        ({"WORLD_SIZE": "two"}, "WORLD_SIZE='two' is not an integer ≥ 1"),
        ({"WORLD_SIZE": "2", "RANK": "5"}, "RANK='5' is not an integer in [0, 1]"),
        ({"WORLD_SIZE": "2", "RANK": "0", "GCA_DIST_TIMEOUT": "soon"}, "GCA_DIST_TIMEOUT='soon' is not a positive"),
        ({"WORLD_SIZE": "2", "RANK": "0", "GCA_DIST_TIMEOUT": "nan"}, "GCA_DIST_TIMEOUT='nan' is not a positive"),
        ({"WORLD_SIZE": "2", "RANK": "0", "LOCAL_RANK": "-1"}, "LOCAL_RANK='-1' is not an integer ≥ 0"),
    ],
)
def test_malformed_environment_variables_are_one_line(tmp_path, capsys, monkeypatch, env, words):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    error = _error(["train", "--dataset", "Karate", "--epochs", "1", "--out", str(tmp_path / "o"), "--quiet"], capsys)
    assert words in error


@pytest.mark.parametrize(("rank", "device", "gpus"), [("0", "cuda", 1), ("1", "cuda", 1), ("1", "cuda:0", 2)])
def test_torchrun_processes_without_a_gpu_each_are_one_line_from_each_before_any_joins(
    tmp_path, capsys, monkeypatch, rank, device, gpus
):
    """Two processes on a machine with one GPU (rank 1 would take cuda:1, which is not there: a CUDA traceback), or
    both told cuda:0 (NCCL refuses two processes on one GPU): each process, rank 0 too, refuses before joining."""
    from gca.cli import peers

    monkeypatch.setattr(peers, "_run_store", lambda: None)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: gpus)
    monkeypatch.setattr(torch.distributed, "init_process_group", lambda *a, **k: pytest.fail("joined the group"))
    for name, value in {"WORLD_SIZE": "2", "RANK": rank, "LOCAL_RANK": rank, "LOCAL_WORLD_SIZE": "2"}.items():
        monkeypatch.setenv(name, value)
    args = ["train", "--dataset", "Karate", "--device", device, "--out", str(tmp_path / "o"), "--quiet"]
    error = _error(args, capsys)
    assert error == (
        f"gca: error: torchrun started 2 processes on this machine, which has {gpus} CUDA device(s): each needs a GPU "
        f"of its own (--device cuda, --nproc-per-node at most {gpus}) or the CPU (--device cpu)"
    )
    assert not (tmp_path / "o").exists()


class _RunStore:
    """torchrun's agent store as :mod:`gca.cli.peers` uses it: counters by key, shared by the "processes"."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    def add(self, key: str, amount: int) -> int:
        self.counts[key] = self.counts.get(key, 0) + amount
        return self.counts[key]

    def check(self, keys: list[str]) -> bool:
        return all(key in self.counts for key in keys)


def test_under_torchrun_an_error_every_rank_meets_is_printed_once_and_another_is_printed_too(
    tmp_path, capsys, monkeypatch
):
    """Ranks meeting the same wrong input say one line between them, whichever says it first; a rank meeting
    another error says its own; a rank interrupted after a peer failed adds nothing; without a store (not under
    torchrun's agent) every rank prints."""
    from gca.cli import guard, peers

    store = _RunStore()
    monkeypatch.setattr(peers, "_run_store", lambda: store)
    monkeypatch.setenv("WORLD_SIZE", "2")
    args = ["train", "--dataset", "Karate", "--set", "tau=-1", "--out", str(tmp_path / "o"), "--quiet"]
    for rank, lines in (("1", 1), ("0", 0)):
        monkeypatch.setenv("RANK", rank)
        assert main(args) == 2
        assert len(capsys.readouterr().err.strip().splitlines()) == lines, rank
    assert main([*args[:4], "tau=-2", *args[5:]]) == 2
    assert "tau" in capsys.readouterr().err
    guard.interrupted("files written before are kept as they were")
    assert capsys.readouterr().err == ""
    monkeypatch.setattr(peers, "_run_store", lambda: None)
    for rank in ("1", "0"):
        monkeypatch.setenv("RANK", rank)
        assert main(args) == 2
        assert len(capsys.readouterr().err.strip().splitlines()) == 1, rank


def test_empty_data_and_cache_variables_mean_the_defaults(monkeypatch):
    from gca.datasets import default_cache_dir, default_data_dir

    monkeypatch.setenv("GCA_DATA_DIR", "")
    monkeypatch.setenv("GCA_CACHE_DIR", " ")
    assert default_data_dir() == Path.home() / ".cache" / "gca" / "data"
    assert default_cache_dir() == Path.home() / ".cache" / "gca"


def test_an_unusable_home_gives_no_library_chatter(tmp_path):
    home = tmp_path / "home-is-a-file"
    home.write_text("")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "gca",
            "train",
            "--dataset",
            "Karate",
            "--epochs",
            "10",
            "--no-eval",
            "--quiet",
            "--plots",
            "--out",
            str(tmp_path / "o"),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "HOME": str(home), "GCA_CACHE_DIR": str(tmp_path / "cache")},
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip() == "", done.stderr  # not Matplotlib's notes about its config folder


def test_an_unwritable_cache_is_named_not_the_raw_files(shared_data, tmp_path, monkeypatch, capsys):
    blocked = tmp_path / "cache-is-a-file"
    blocked.write_text("")
    monkeypatch.setenv("GCA_CACHE_DIR", str(blocked))
    error = _error(
        [
            "train",
            "--dataset",
            "Cora",
            "--data-dir",
            str(shared_data),
            "--epochs",
            "1",
            "--out",
            str(tmp_path / "o"),
            "--quiet",
        ],
        capsys,
    )
    assert f"cannot write gca's cache folder {blocked}" in error and "GCA_CACHE_DIR" in error


def test_a_symlink_in_out_is_replaced_never_written_through(karate, capsys, tmp_path):
    outside = tmp_path / "precious.json"
    outside.write_text("not gca's")
    out = tmp_path / "linked"
    out.mkdir()
    (out / "results.json").symlink_to(outside)
    (out / "embeddings.npy").symlink_to(tmp_path / "nowhere.npy")
    assert main(["train", "--dataset", "Karate", "--epochs", "1", "--no-eval", "--quiet", "--out", str(out)]) == 0
    assert outside.read_text() == "not gca's" and not (tmp_path / "nowhere.npy").exists()
    assert not (out / "results.json").is_symlink() and json.loads((out / "results.json").read_text())["epochs"] == 1


def test_an_npz_claiming_a_billion_nodes_is_refused_fast(tmp_path, capsys):
    import resource

    adj = sp.csr_matrix(np.array([[0, 1], [1, 0]], dtype=np.float32))
    attr = sp.csr_matrix(np.eye(2, dtype=np.float32))
    _npz(tmp_path / "big.npz", adj, attr, adj_shape=np.array([10**9, 10**9]), attr_shape=np.array([10**9, 2]))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    error = _error(["train", "--dataset", str(tmp_path / "big.npz"), "--out", str(tmp_path / "o"), "--quiet"], capsys)
    assert "big.npz" in error and time.perf_counter() - start < 30
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 500_000  # kB: no 10⁹-row array was made


# -- odd but plausible text files (issue 52) ---------------------------------------------------------------------


def _edge_rows(loaded) -> set[tuple[int, int]]:
    return {tuple(pair) for pair in loaded.data.edge_index.t().tolist()}


def test_an_edge_file_opening_with_over_a_mib_of_comment_lines_is_read(tmp_path):
    from gca.datasets import load_files

    preamble = "".join(f"# exported by a tool, line {i} of its notes\n" for i in range(40_000))  # ~1.7 MB
    assert len(preamble) > 1 << 20
    (tmp_path / "x.csv").write_text("id,f\na,1\nb,2\nc,3\n")
    for name, body in (
        ("plain.csv", "a,b\nb,c\n"),
        ("headed.csv", "source,target\na,b\nb,c\n"),
        ("long.csv", "#" * (3 << 20) + "\n" + "source,target\na,b\nb,c\n"),
    ):
        (tmp_path / name).write_text(preamble + body if name != "long.csv" else body)
        loaded = load_files(tmp_path / name, tmp_path / "x.csv")
        assert loaded.node_ids == ["a", "b", "c"] and _edge_rows(loaded) == {(0, 1), (1, 0), (1, 2), (2, 1)}, name


def test_an_edge_file_opening_with_a_line_of_spaces_longer_than_a_mib_is_read(tmp_path, capsys):
    from gca.datasets import load_files

    (tmp_path / "x.csv").write_text("id,f\na,1\nb,2\nc,3\n")
    spaces = " " * (2 << 20)
    cases = {
        "blank.csv": spaces + "\na,b\nb,c\n",
        "after_comment.csv": "# c\n" + spaces + "\r\na,b\nb,c\n",
        "opening.csv": spaces + "a,b\nb,c\n",
        "edge.csv": " " * ((1 << 20) - 1) + "\na,b\nb,c\n",
    }
    for name, text in cases.items():
        (tmp_path / name).write_text(text)
        loaded = load_files(tmp_path / name, tmp_path / "x.csv")
        assert _edge_rows(loaded) == {(0, 1), (1, 0), (1, 2), (2, 1)}, name
    (tmp_path / "none.csv").write_text(spaces)  # nothing but spaces: no edges, said as for an empty file
    assert (
        main(
            [
                "train",
                "--edges",
                str(tmp_path / "none.csv"),
                "--features",
                str(tmp_path / "x.csv"),
                "--no-eval",
                "--out",
                str(tmp_path / "out"),
            ]
        )
        == 2
    )
    assert "holds no edges" in capsys.readouterr().err


def test_a_header_after_a_block_of_comment_lines_is_not_read_as_an_edge(tmp_path, monkeypatch):
    from gca.datasets import load_files
    from gca.datasets.files import tables

    monkeypatch.setattr(tables, "BLOCK_BYTES", 1 << 12)  # the comments fill the first blocks
    (tmp_path / "e.csv").write_text("".join(f"# note {i}\n" for i in range(2_000)) + "source,target\na,b\nb,c\n")
    (tmp_path / "x.csv").write_text("id,f\na,1\nb,2\nc,3\n")
    loaded = load_files(tmp_path / "e.csv", tmp_path / "x.csv")
    assert _edge_rows(loaded) == {(0, 1), (1, 0), (1, 2), (2, 1)}


def test_a_quoted_id_holding_a_line_break_is_refused_for_that_cause(tmp_path, capsys):
    (tmp_path / "x.csv").write_text("id,f\n" + "".join(f"n{i},{i}\n" for i in range(400)))
    many = "".join(f"n{i},n{i + 1}\n" for i in range(300))
    cases = {
        "early.csv": ('source,target\n"n1\nn2",n3\n', "line 2: a quoted value holds a line break"),
        "late.csv": (f'source,target\n{many}"n1\nn2",n3\n', "line 302: node id 'n1\\nn2' holds a line break"),
        "open.csv": (f'source,target\n{many}"n1,n3\nn4,n5\n', 'line 302: a quote (") is never closed'),
    }
    for name, (text, said) in cases.items():
        (tmp_path / name).write_text(text)
        error = _error(
            [
                "train",
                "--edges",
                str(tmp_path / name),
                "--features",
                str(tmp_path / "x.csv"),
                "--out",
                str(tmp_path / "o"),
                *QUICK,
            ],
            capsys,
        )
        assert f"{tmp_path / name}, {said}" in error, error
        assert "unbalanced" not in error and not (tmp_path / "o").exists()


def test_a_feature_id_holding_a_line_break_is_refused_naming_its_line(tmp_path, capsys):
    rows = "".join(f"n{i},{i}\n" for i in range(300))
    (tmp_path / "x.csv").write_text(f'id,f\n{rows}"n1\nn2",7\n')
    (tmp_path / "e.csv").write_text("n0,n1\n")
    error = _error(
        [
            "train",
            "--edges",
            str(tmp_path / "e.csv"),
            "--features",
            str(tmp_path / "x.csv"),
            "--out",
            str(tmp_path / "o"),
            *QUICK,
        ],
        capsys,
    )
    assert f"{tmp_path / 'x.csv'}, line 302: node id 'n1\\nn2' holds a line break" in error


def test_zero_padded_ids_are_exported_as_written(tmp_path):
    ids = ["00000554", "00000555", "00000556", "00000557"]
    (tmp_path / "x.csv").write_text("id,f,g\n" + "".join(f"{n},{i},1\n" for i, n in enumerate(ids)))
    (tmp_path / "e.csv").write_text("".join(f"{a},{b}\n" for a, b in zip(ids, ids[1:], strict=False)))
    (tmp_path / "y.csv").write_text("".join(f"{n},{'ab'[i % 2]}\n" for i, n in enumerate(ids)))
    assert (
        main(
            [
                "train",
                "--edges",
                str(tmp_path / "e.csv"),
                "--features",
                str(tmp_path / "x.csv"),
                "--labels",
                str(tmp_path / "y.csv"),
                "--no-eval",
                "--export",
                str(tmp_path / "emb.csv"),
                "--out",
                str(tmp_path / "o"),
                *QUICK,
            ]
        )
        == 0
    )
    lines = (tmp_path / "emb.csv").read_text().splitlines()
    assert [line.split(",")[0] for line in lines] == ["node_id", *ids]


def test_ids_that_change_as_integers_are_kept_as_text_and_a_mismatch_says_why(tmp_path, capsys):
    from gca.datasets import load_files

    (tmp_path / "e.csv").write_text("+5,-0\n-0,7\n")
    (tmp_path / "x.csv").write_text("id,f\n+5,1\n-0,2\n7,3\n")
    assert load_files(tmp_path / "e.csv", tmp_path / "x.csv").node_ids == ["+5", "-0", "7"]
    (tmp_path / "plain.csv").write_text("id,f\n 5 ,1\n0,2\n7,3\n")  # spaces around an id are not part of it
    (tmp_path / "plain_e.csv").write_text("5,0\n0,7\n")
    assert load_files(tmp_path / "plain_e.csv", tmp_path / "plain.csv").node_ids.tolist() == [5, 0, 7]
    (tmp_path / "x.csv").write_text("id,f\n007,1\n008,2\n")
    (tmp_path / "e.csv").write_text("7,8\n")
    error = _error(
        [
            "train",
            "--edges",
            str(tmp_path / "e.csv"),
            "--features",
            str(tmp_path / "x.csv"),
            "--out",
            str(tmp_path / "o"),
            *QUICK,
        ],
        capsys,
    )
    assert "node '7' of edge file" in error and "kept as written ('007') and matched exactly" in error
    (tmp_path / "e.csv").write_text("999,008\n")  # unknown however written: no word of spellings
    error = _error(
        [
            "train",
            "--edges",
            str(tmp_path / "e.csv"),
            "--features",
            str(tmp_path / "x.csv"),
            "--out",
            str(tmp_path / "o"),
            *QUICK,
        ],
        capsys,
    )
    assert "node '999' of edge file" in error and "has no row in feature file" in error
    assert "kept as written" not in error
