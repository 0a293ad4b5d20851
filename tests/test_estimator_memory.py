"""A search over a pipeline's classifier trains GCA once per distinct GCA setting: ``GCA(memory=...)`` keeps fitted
models keyed by the settings and the graph's contents (never by which nodes or labels a fold gives, which training
does not read), and ``Pipeline(memory=...)`` finds a fold it fitted before, as GraphNodes hash by their values."""

from __future__ import annotations

import errno
import os
import pickle
import warnings

import joblib
import numpy as np
import pytest
import torch
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline
from torch_geometric.data import Data

import gca.train.fitting as estimator_module
from gca.config import ConfigError, GCAConfig
from gca.datasets import karate_club
from gca.train.estimator import GCA, GraphNodes, clone

CONFIG = GCAConfig(epochs=3, hidden=8, proj_hidden=8, seed=1)
GRID = {"clf__C": [0.1, 1.0, 10.0]}


@pytest.fixture
def trainings(monkeypatch):
    """How many times the training loop ran (every GCA training, however it was started, runs it once)."""
    count = [0]
    loop = estimator_module.train

    def counted(*args, **kwargs):
        count[0] += 1
        return loop(*args, **kwargs)

    monkeypatch.setattr(estimator_module, "train", counted)
    return count


def _club() -> Data:
    club = karate_club()
    return Data(x=club.x, edge_index=club.edge_index, y=club.y)


def _search(memory=None, grid=GRID, pipeline_memory=None, **options) -> GridSearchCV:
    data = _club()
    pipe = Pipeline(
        [("gca", GCA(CONFIG, device="cpu", memory=memory)), ("clf", LogisticRegression())], memory=pipeline_memory
    )
    return GridSearchCV(pipe, grid, cv=2, **options).fit(GraphNodes(data), data.y.numpy())


def test_a_search_over_the_classifier_trains_gca_once_per_distinct_setting(trainings, tmp_path):
    plain = _search()
    assert trainings[0] == 7  # 2 folds × 3 candidates, and the refit: the same model each time
    trainings[0] = 0
    kept = _search(memory=tmp_path / "fits")
    assert trainings[0] == 1
    assert np.array_equal(kept.cv_results_["mean_test_score"], plain.cv_results_["mean_test_score"])
    assert torch.equal(kept.best_estimator_["gca"].embedding_, plain.best_estimator_["gca"].embedding_)
    trainings[0] = 0
    _search(memory=tmp_path / "fits", grid={**GRID, "gca__tau": [CONFIG.tau, CONFIG.tau / 2]})
    assert trainings[0] == 1  # CONFIG's tau is kept already; half of it trains once for its 6 fits (and refit)


def test_two_threads_fitting_one_setting_at_once_take_turns(trainings, tmp_path):
    with joblib.parallel_backend("threading", n_jobs=2):
        search = _search(memory=tmp_path, n_jobs=2)
    assert trainings[0] == 1 and search.best_estimator_["gca"].from_memory_


_ONE_FIT = """\
import json, os, sys, time

import torch

torch.cpu._is_amx_tile_supported = lambda: False  # a CPU with bf16 units, where auto once depended on a timing
torch.cpu._is_avx512_bf16_supported = lambda: True
pace, now = float(os.environ["GCA_TEST_PACE"]), [0.0, 1e-3]


def clock():  # this process's clock: each reading further on by a step that grows or shrinks
    now[1] *= pace
    now[0] += now[1]
    return now[0]


time.perf_counter = clock
from torch_geometric.data import Data

import gca.train.fitting as fitting
from gca.config import GCAConfig
from gca.datasets import karate_club
from gca.train.estimator import GCA

loop, trained = fitting.train, []


def slow(*args, **kwargs):  # a loaded machine: the training and its writing take a while
    trained.append(1)
    time.sleep(2.0)
    return loop(*args, **kwargs)


fitting.train = slow
club = karate_club()
data = Data(x=club.x, edge_index=club.edge_index)
model = GCA(GCAConfig(epochs=3, hidden=8, proj_hidden=8, seed=1), device="cpu", memory=sys.argv[1]).fit(data)
print(json.dumps({"trained": len(trained), "read": bool(model.from_memory_)}))
"""


def test_two_processes_fitting_one_setting_at_once_take_turns_on_a_loaded_machine(tmp_path):
    """Two processes fit one setting into one memory folder at once, on a CPU with bf16 units (faked), each with a
    clock of its own pace and a slow training (what load does): one trains, the other waits and reads its model.
    (When ``auto`` was measured at the run's start, the two processes could key the same setting by different
    precisions, and both trained.)"""
    import json
    import subprocess
    import sys

    script = tmp_path / "fit.py"
    script.write_text(_ONE_FIT)
    runs = [
        subprocess.Popen(
            [sys.executable, str(script), str(tmp_path / "memory")],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "GCA_TEST_PACE": pace, "OMP_NUM_THREADS": "1"},
        )
        for pace in ("0.9", "1.1")
    ]
    said = []
    for run in runs:
        out, err = run.communicate(timeout=300)
        assert run.returncode == 0, err[-3000:]
        said.append(json.loads(out.strip().splitlines()[-1]))
    assert sorted(s["trained"] for s in said) == [0, 1] and sorted(s["read"] for s in said) == [False, True], said


def test_another_setting_or_another_graph_trains_again_and_equal_values_read_the_kept_model(trainings, tmp_path):
    data = _club()
    first = GCA(CONFIG, device="cpu", memory=tmp_path).fit(data)
    again = GCA(CONFIG, device="cpu", memory=tmp_path).fit(GraphNodes(data)[[0, 5]])  # other nodes: same model
    assert trainings[0] == 1 and not first.from_memory_ and again.from_memory_
    assert torch.equal(again.embedding_, first.embedding_) and torch.equal(again.transform(data), first.embedding_)
    assert again.losses == first.losses and again.train_seconds == first.train_seconds
    copy = Data(x=data.x.clone(), edge_index=data.edge_index.clone())  # other tensors, equal values
    assert GCA(CONFIG, device="cpu", memory=tmp_path).fit(copy).from_memory_ and trainings[0] == 1
    GCA(CONFIG, device="cpu", memory=tmp_path).set_params(seed=2).fit(data)
    assert trainings[0] == 2
    data.x[0, 0] += 1.0  # changed in place through PyTorch
    assert not GCA(CONFIG, device="cpu", memory=tmp_path).fit(data).from_memory_ and trainings[0] == 3
    data.x.numpy()[0, 1] = 7.0  # and through a NumPy view, which moves no version counter
    assert not GCA(CONFIG, device="cpu", memory=tmp_path).fit(data).from_memory_ and trainings[0] == 4
    edges = data.edge_index.clone()
    edges[:, :2] = edges[:, :2].flip(1)  # the same graph, its edges in another order
    assert GCA(CONFIG, device="cpu", memory=tmp_path).fit(Data(x=data.x, edge_index=edges)).from_memory_
    assert GCA(CONFIG, device="cpu", memory=tmp_path).fit(data, directed=True).from_memory_ is False
    assert trainings[0] == 5  # another direction is another graph


def test_pipeline_memory_finds_a_fold_it_fitted_before_as_graph_nodes_hash_by_their_values(trainings, tmp_path):
    data, other = _club(), _club()
    nodes = GraphNodes(data)[[1, 2, 3]]
    assert joblib.hash(nodes) == joblib.hash(GraphNodes(other)[[1, 2, 3]])  # other tensors, equal values
    assert joblib.hash(nodes) != joblib.hash(GraphNodes(data)[[1, 2, 4]])
    other.x[0, 0] = 2.0
    assert joblib.hash(nodes) != joblib.hash(GraphNodes(other)[[1, 2, 3]])
    back = pickle.loads(pickle.dumps(nodes))
    assert torch.equal(back.index, nodes.index) and back.data.keys() == data.keys()
    for key in data.keys():
        assert torch.equal(back.data[key], data[key]) and back.data[key].dtype == data[key].dtype
    _search(pipeline_memory=str(tmp_path))
    assert trainings[0] == 3  # once per fold and the refit: the classifier's C no longer trains GCA again


def test_memory_is_a_setting_like_the_others_and_writes_nothing_before_a_fit(tmp_path):
    folder = tmp_path / "fits"
    estimator = GCA(CONFIG, device="cpu", memory=folder)
    assert estimator.get_params(deep=False)["memory"] is folder and clone(estimator).memory is folder
    assert f"memory={folder!r}" in repr(estimator) and not folder.exists()
    assert GCA(CONFIG, device="cpu", memory=joblib.Memory(None)).fit(_club()).from_memory_ is False
    for bad in (3, ""):
        with pytest.raises(ConfigError, match="memory") as caught:
            GCA(CONFIG, memory=bad)
        assert "\n" not in str(caught.value)


def test_a_fit_that_cannot_be_keyed_trains_and_says_why(trainings, tmp_path):
    from torch_geometric.nn import GCNConv

    data = _club()
    with pytest.warns(UserWarning, match="memory is not used for this fit, which trains: on_epoch watch or write"):
        GCA(CONFIG, device="cpu", memory=tmp_path).fit(data, on_epoch=lambda epoch, embed: None)
    with pytest.warns(UserWarning, match="your own encoder cannot be keyed"):
        GCA(CONFIG, device="cpu", memory=tmp_path, encoder=GCNConv(34, 8)).fit(data)
    estimator = GCA(CONFIG, device="cpu", memory=tmp_path)
    with pytest.warns(UserWarning, match="a Graph may carry features or views of other settings"):
        estimator.fit(estimator.prepare(data).graph)
    assert trainings[0] == 3
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert GCA(CONFIG, device="cpu", memory=tmp_path).fit(data).from_memory_ is False  # kept now, no word
        assert GCA(CONFIG, device="cpu", memory=tmp_path).fit(data).from_memory_
    assert trainings[0] == 4


def test_a_model_kept_by_other_gca_code_is_not_read(trainings, tmp_path, monkeypatch):
    import gca.train.fit_cache as memory_module

    data = _club()
    GCA(CONFIG, device="cpu", memory=tmp_path).fit(data)
    assert len(memory_module.source_digest()) == 32
    monkeypatch.setattr(memory_module, "source_digest", lambda: "edited training code")
    edited = GCA(CONFIG, device="cpu", memory=tmp_path).fit(data)
    assert trainings[0] == 2 and not edited.from_memory_


def test_graph_nodes_with_an_empty_tensor_pickle_and_come_back_alike():
    # a graph without edges, no nodes given, an empty attribute: tensors of no bytes
    data = Data(x=torch.ones(4, 3), edge_index=torch.empty(2, 0, dtype=torch.long), extra=torch.empty(0, 5))
    for nodes in (GraphNodes(data), GraphNodes(data, [])):
        back = pickle.loads(pickle.dumps(nodes))
        assert torch.equal(back.index, nodes.index) and back.index.dtype == torch.long
        for key in data.keys():
            assert back.data[key].shape == data[key].shape and back.data[key].dtype == data[key].dtype


def test_a_model_trained_at_another_resolved_precision_is_not_read(monkeypatch):
    # precision=auto is bf16 on a GPU with bf16 tensor cores and fp32 on an older one, both named "cuda"
    import gca.precision as precision
    from gca.graph.graph import prepare_graph
    from gca.train.fit_cache import fit_key

    graph, settings = prepare_graph(_club()), CONFIG.to_dict()
    keys = []
    for fast in (True, False):
        monkeypatch.setattr(precision, "bf16_tensor_cores", lambda device, fast=fast: fast)
        keys.append(fit_key(settings, torch.device("cuda"), graph))
    assert keys[0] != keys[1]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_graph_nodes_on_a_gpu_pickle_as_they_are():
    data = _club().to("cuda")
    nodes = GraphNodes(data, torch.tensor([1, 2], device="cuda"))
    back = pickle.loads(pickle.dumps(nodes))
    assert back.index.device.type == "cuda" and torch.equal(back.index.cpu(), torch.tensor([1, 2]))
    assert torch.equal(back.data.x.cpu(), data.x.cpu())


def test_a_memory_that_is_a_file_is_refused_in_one_line(tmp_path):
    path = tmp_path / "fits"
    path.write_text("not a folder")
    with pytest.raises(ConfigError, match="is a file, not a folder"):
        GCA(CONFIG, device="cpu", memory=path).fit(_club())
    assert path.read_text() == "not a folder"


# -- a memory folder is input like any other: what is found there is checked before it is served ---------------------


class _Planted:
    """Unpickled, creates the file ``marker``: a crafted entry whose code must never run."""

    def __init__(self, marker) -> None:
        self.marker = str(marker)

    def __reduce__(self) -> tuple:
        return (open, (self.marker, "w"))


def _kept_files(folder):
    """The files a memory folder keeps fitted models in (of whatever format)."""
    return [p for p in folder.rglob("*") if p.is_file() and p.suffix in (".pt", ".pkl")]


def _one_line_warning(caught, words: str) -> str:
    said = [str(w.message) for w in caught if issubclass(w.category, UserWarning) and words in str(w.message)]
    assert len(said) == 1 and "\n" not in said[0], [str(w.message) for w in caught]
    return said[0]


def test_a_crafted_file_in_the_memory_runs_no_code_and_the_fit_trains_again_saying_why(trainings, tmp_path):
    data, marker = _club(), tmp_path / "ran"
    memory = tmp_path / "fits"
    GCA(CONFIG, device="cpu", memory=memory).fit(data)
    for kept in _kept_files(memory):  # every kept model replaced by a pickle that would create the marker
        if kept.suffix == ".pt":
            torch.save(_Planted(marker), kept)
        else:
            kept.write_bytes(pickle.dumps(_Planted(marker)))
    for folder in [memory, *[p for p in memory.rglob("*") if p.is_dir()]]:
        (folder / "output.pkl").write_bytes(pickle.dumps(_Planted(marker)))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        again = GCA(CONFIG, device="cpu", memory=memory).fit(data)
    assert not marker.exists()
    assert "not read" in _one_line_warning(caught, "GCA's memory")
    assert not again.from_memory_ and trainings[0] == 2 and again.embedding_.shape == (34, 8)
    assert GCA(CONFIG, device="cpu", memory=memory).fit(data).from_memory_  # the entry was replaced
    assert trainings[0] == 2 and not marker.exists()


def test_another_graphs_kept_model_copied_over_this_ones_is_not_served(trainings, tmp_path):
    data = _club()
    ring = torch.arange(20)
    both_ways = torch.stack([torch.cat([ring, (ring + 1) % 20]), torch.cat([(ring + 1) % 20, ring])])
    other = Data(x=torch.rand(20, 34, generator=torch.Generator().manual_seed(0)), edge_index=both_ways)
    GCA(CONFIG, device="cpu", memory=tmp_path / "a").fit(data)
    GCA(CONFIG, device="cpu", memory=tmp_path / "b").fit(other)
    (mine,), (theirs,) = _kept_files(tmp_path / "a"), _kept_files(tmp_path / "b")
    mine.write_bytes(theirs.read_bytes())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fitted = GCA(CONFIG, device="cpu", memory=tmp_path / "a").fit(data)
    assert not fitted.from_memory_ and fitted.embedding_.shape == (34, 8) and trainings[0] == 3
    assert "another" in _one_line_warning(caught, "GCA's memory")


def test_a_lock_file_that_is_a_link_is_never_written_through(trainings, tmp_path):
    from gca.train.fit_cache import fit_key

    data, memory = _club(), tmp_path / "fits"
    memory.mkdir()
    target = tmp_path / "precious.txt"
    target.write_text("keep me")
    key = fit_key(CONFIG.to_dict(), torch.device("cpu"), GCA(CONFIG, device="cpu").prepare(data).graph)
    (memory / f".gca-fit-{key}.lock").symlink_to(target)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fitted = GCA(CONFIG, device="cpu", memory=memory).fit(data)
    assert target.read_text() == "keep me" and (memory / f".gca-fit-{key}.lock").is_symlink()
    assert "symbolic link" in _one_line_warning(caught, "GCA's memory")
    assert not fitted.from_memory_ and trainings[0] == 1 and fitted.embedding_.shape == (34, 8)
    (memory / f".gca-fit-{key}.lock").unlink()
    GCA(CONFIG, device="cpu", memory=memory).fit(data)
    (entry,) = _kept_files(memory)
    entry.unlink()
    entry.symlink_to(target)  # a kept model's name that links elsewhere: replaced by the link's own name
    with pytest.warns(UserWarning, match="symbolic link"):
        assert not GCA(CONFIG, device="cpu", memory=memory).fit(data).from_memory_
    assert target.read_text() == "keep me" and not entry.is_symlink() and trainings[0] == 3
    assert GCA(CONFIG, device="cpu", memory=memory).fit(data).from_memory_ and trainings[0] == 3


def test_a_memory_subfolder_that_is_a_link_leaves_the_memory_unused(trainings, tmp_path):
    (tmp_path / "fits").mkdir()
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "fits" / "joblib").symlink_to(tmp_path / "elsewhere")
    with pytest.warns(UserWarning, match="joblib is a symbolic link, which gca never writes through"):
        assert not GCA(CONFIG, device="cpu", memory=tmp_path / "fits").fit(_club()).from_memory_
    assert not list((tmp_path / "elsewhere").iterdir()) and trainings[0] == 1


def test_joblib_memory_clear_forgets_the_kept_models(trainings, tmp_path):
    GCA(CONFIG, device="cpu", memory=joblib.Memory(tmp_path, verbose=0)).fit(_club())
    assert GCA(CONFIG, device="cpu", memory=tmp_path).fit(_club()).from_memory_  # one folder, either way given
    joblib.Memory(tmp_path, verbose=0).clear()
    assert not GCA(CONFIG, device="cpu", memory=tmp_path).fit(_club()).from_memory_ and trainings[0] == 2


@pytest.mark.parametrize("error", [errno.EROFS, errno.ENOSPC])
def test_a_memory_that_cannot_be_written_trains_and_says_why_in_one_line(trainings, tmp_path, monkeypatch, error):
    import gca.train.fit_cache as memory_module

    def refused(path, write):
        raise OSError(error, os.strerror(error), str(path))

    monkeypatch.setattr(memory_module, "atomic_write", refused, raising=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fitted = GCA(CONFIG, device="cpu", memory=tmp_path).fit(_club())
    said = _one_line_warning(caught, "GCA's memory")
    assert "not kept" in said and os.strerror(error) in said
    assert not fitted.from_memory_ and fitted.embedding_.shape == (34, 8) and not _kept_files(tmp_path)


def test_a_memory_folder_that_cannot_be_made_trains_and_says_why_in_one_line(trainings, tmp_path):
    (tmp_path / "file").write_text("")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fitted = GCA(CONFIG, device="cpu", memory=tmp_path / "file" / "fits").fit(_club())
    assert "cannot be made" in _one_line_warning(caught, "GCA's memory")
    assert not fitted.from_memory_ and trainings[0] == 1


def test_a_memory_on_a_read_only_file_system_serves_what_it_holds_and_trains_what_it_lacks(
    trainings, tmp_path, monkeypatch
):
    import gca.outputs.folder as folder_module
    import gca.train.fit_cache as memory_module
    from gca.outputs.folder import OutputError

    data = _club()
    GCA(CONFIG, device="cpu", memory=tmp_path).fit(data)

    def read_only(*args, **kwargs):  # what a read-only mount does to every write (root's permission bits do not)
        raise OutputError(errno.EROFS, os.strerror(errno.EROFS))

    monkeypatch.setattr(folder_module, "hold_folder", read_only)
    monkeypatch.setattr(memory_module, "atomic_write", read_only)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert GCA(CONFIG, device="cpu", memory=tmp_path).fit(data).from_memory_
    with pytest.warns(UserWarning, match="not kept in GCA's memory") as caught:
        assert not GCA(CONFIG, device="cpu", memory=tmp_path).set_params(seed=5).fit(data).from_memory_
    assert len(caught) == 1 and trainings[0] == 2


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="needs a user whom file permissions bind")
def test_a_read_only_memory_folder_serves_what_it_holds_and_trains_what_it_lacks(trainings, tmp_path):
    data = _club()
    GCA(CONFIG, device="cpu", memory=tmp_path).fit(data)
    for folder in [tmp_path, *[p for p in tmp_path.rglob("*") if p.is_dir()]]:
        folder.chmod(0o555)
    try:
        assert GCA(CONFIG, device="cpu", memory=tmp_path).fit(data).from_memory_
        with pytest.warns(UserWarning, match="not kept"):
            assert not GCA(CONFIG, device="cpu", memory=tmp_path).set_params(seed=5).fit(data).from_memory_
    finally:
        for folder in [tmp_path, *[p for p in tmp_path.rglob("*") if p.is_dir()]]:
            folder.chmod(0o755)
    assert trainings[0] == 2
