"""The library objects the commands share: a job (graph + configuration + warnings + splits) and a process's
placement among several."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch_geometric.data import Data

from gca import GCA
from gca.config import ConfigError
from gca.datasets import karate_club, load_dataset
from gca.datasets.base import LoadedDataset
from gca.graph.graph import GraphError
from gca.run.job import Job
from gca.train.checkpoint import CheckpointError, TrainingCheckpoints
from gca.train.distributed import BlockShare, Placement


def test_a_job_layers_the_dataset_setting_a_config_and_overrides():
    job = Job.open(load_dataset("Karate"), None, {"epochs": 3, "tau": 0.7})
    assert (job.config.epochs, job.config.tau) == (3, 0.7)
    unnamed = LoadedDataset("my graph", karate_club(), named=False)
    with pytest.raises(ConfigError, match="shipped setting of the paper's datasets"):
        Job.open(unnamed, "authors")


def test_a_job_gathers_the_warnings_of_the_files_and_of_the_cleaned_graph():
    data = karate_club()
    data.edge_index = torch.cat([data.edge_index, torch.tensor([[0], [0]])], dim=1)  # one self-loop, dropped
    job = Job(LoadedDataset("loops", data, warnings=["read 1 line twice"]), GCA().config.replace(epochs=1))
    assert job.warnings == ["read 1 line twice"]  # the graph is not cleaned yet
    job.prepare(GCA(job.config, device="cpu"))
    assert job.warnings[0] == "read 1 line twice" and len(job.warnings) > 1
    assert "self-loop" in " ".join(job.warnings[1:])
    assert job.summary(GCA(job.config, device="cpu")).startswith("loops: 34 nodes, 156 directed edges (undirected)")


def test_a_job_draws_the_same_splits_from_its_seed_and_none_without_labels():
    job = Job.open(load_dataset("Karate"), None, {"seed": 3})
    first, second = job.splits(4), job.splits(4)
    assert len(first) == 4 and all(np.array_equal(a[0], b[0]) for a, b in zip(first, second, strict=True))
    other = Job.open(load_dataset("Karate"), None, {"seed": 4}).splits(4)
    assert not np.array_equal(first[0][0], other[0][0])
    unlabelled = Job(LoadedDataset("x", Data(x=torch.eye(3), edge_index=torch.tensor([[0, 1], [1, 0]]))), job.config)
    assert unlabelled.splits(4) is None


def test_a_training_job_refuses_a_graph_whose_only_edges_are_self_loops():
    data = Data(x=torch.eye(4), edge_index=torch.tensor([[0, 1], [0, 1]]))
    job = Job(LoadedDataset("loops", data), GCA().config)
    with pytest.raises(GraphError, match="only self-loops"):
        job.prepare(GCA(job.config, device="cpu"))
    assert job.prepare(GCA(job.config, device="cpu"), require_edges=False).graph.num_nodes == 4


def test_a_placement_decides_the_objective_share_the_hook_and_who_writes():
    alone = Placement(torch.device("cpu"))
    assert alone.writes and alone.objective_share(0) is None and alone.record() == {}
    third = Placement(torch.device("cpu"), rank=2, world_size=3)
    assert not third.writes
    assert third.objective_share(0) == BlockShare(2, 3)  # exact full-graph objective: a share of its rows
    assert third.objective_share(256) is None  # mini-batches: each process its own batches' objective
    assert third.record() == {"distributed": {"world_size": 3, "backend": "gloo"}}
    optimizer = torch.optim.Adam([torch.nn.Parameter(torch.zeros(2))])
    third.attach(optimizer, 0)  # full graph: no gradient hook
    assert not optimizer._optimizer_step_pre_hooks
    third.attach(optimizer, 256)
    assert len(optimizer._optimizer_step_pre_hooks) == 1
    assert Placement.joined(torch.device("cpu")) == alone  # no process group joined in the tests' process


def test_training_checkpoints_refuse_a_negative_period_and_are_unused_without_a_path(tmp_path):
    with pytest.raises(CheckpointError, match="non-negative"):
        TrainingCheckpoints(tmp_path / "c.pt", every=-1)
    assert not TrainingCheckpoints(None, every=5).used
    assert not TrainingCheckpoints(tmp_path / "c.pt").used
    assert TrainingCheckpoints(tmp_path / "c.pt", resume=True).used


def test_a_mini_batch_run_keeps_the_full_graph_settings_updates_unless_epochs_are_given(tmp_path):
    karate = load_dataset("Karate")  # 34 nodes; its shipped setting trains 100 full-graph epochs
    job = Job.open(karate, None, {"batch_size": 8})  # ⌈34 / 8⌉ = 5 updates per epoch
    assert job.config.epochs == 20 and job.schedule == {"full_graph_epochs": 100, "updates_per_epoch": 5, "epochs": 20}
    assert Job.open(karate, None, {"batch_size": 8}, world_size=2).config.epochs == 34  # ⌈34 / 16⌉ = 3 per process
    assert Job.open(karate, None, {"batch_size": 8, "steps_per_epoch": 7}).config.epochs == 15  # ⌈100 / 7⌉
    explicit = Job.open(karate, None, {"batch_size": 8, "epochs": 40})
    assert explicit.config.epochs == 40 and explicit.schedule is None
    own = tmp_path / "mine.toml"
    own.write_text("epochs = 30\nbatch_size = 8\n")
    assert Job.open(karate, str(own)).config.epochs == 30  # the user's own file is obeyed too
    assert Job.open(karate).schedule is None  # full-graph training is left alone
    job.prepare(GCA(job.config, device="cpu"))
    assert "20 epochs of 5 updates keep the full-graph setting's 100 updates" in job.summary(GCA(job.config))
