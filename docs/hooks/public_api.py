"""The public API: the names a user calls, by module — what docs/api.md documents. Each one's parameters (a class's:
its constructor's) are all described in its NumPy-style Parameters section: the reference completes those sections
with the signature (``griffe_roles.py``), ``mkdocs build --strict`` fails on an empty row (``parameters_described.py``),
and ``tests/test_docs_reference.py`` reads the docstrings themselves. Other names document a parameter where it is not
obvious from its name and type.
"""

from __future__ import annotations

#: Module → names in it (``Class.method`` for a method).
USER_FACING = {
    "gca.train.estimator": [
        "GCA",
        "GCA.fit",
        "GCA.fit_transform",
        "GCA.transform",
        "GCA.embed",
        "GCA.prepare",
        "GCA.save",
        "GCA.load",
        "GCA.set_params",
        "GCA.get_params",
        "GraphNodes",
        "clone",
    ],
    "gca.config": ["build_config", "GCAConfig.replace", "read_config_file", "parse_overrides"],
    "gca.datasets.registry": ["load_dataset"],
    "gca.datasets.files": ["load_files"],
    "gca.datasets.npz": ["read_npz_graph"],
    "gca.datasets.base": ["LoadedDataset"],
    "gca.evaluate.classification": ["linear_evaluation", "evaluate_embeddings", "validation_accuracy"],
    "gca.evaluate.splits": ["random_splits", "SplitSetting", "SplitSetting.draw", "few_label_splits"],
    "gca.evaluate.probe": ["adam_probe", "initial_weights"],
    "gca.reproduce": ["Reproduction"],
    "gca.reproduce.execute": ["run_splits"],
    "gca.evaluate.linkpred": ["hold_out_edges", "score_links"],
    "gca.evaluate.clustering": ["cluster_embeddings"],
    "gca.augment.transforms": [
        "AdaptiveEdgeDropping",
        "AdaptiveFeatureMasking",
        "AdaptiveAugmentation",
        "AdaptiveEdgeDropping.forward",
        "AdaptiveFeatureMasking.forward",
        "AdaptiveAugmentation.forward",
    ],
    "gca.augment.centrality": ["node_centrality", "pagerank_centrality"],
    "gca.augment.augmentors": ["build_augmentors", "drop_probabilities", "feature_weights"],
    "gca.augment.prepared": ["prepare", "PreparedGraph"],
    "gca.loggers": [
        "CSVLogger",
        "TensorBoardLogger",
        "WandbLogger",
        "CSVLogger.log",
        "TensorBoardLogger.log",
        "WandbLogger.log",
        "CSVLogger.log_hyperparams",
        "check_loggers",
        "logged_run",
        "final_metrics",
        "TensorBoardLogger.continue_version",
        "Tagged",
        "Tagged.log",
    ],
    "gca.graph.graph": ["prepare_graph", "Graph"],
    "gca.graph.walks": ["random_walks"],
    "gca.nn.gcn": ["GCNEncoder", "ProjectionHead", "GCNEncoder.forward"],
    "gca.nn.encoders": ["MessagePassingEncoder", "MessagePassingEncoder.forward"],
    "gca.nn.model": ["GCAModel", "GCAModel.from_config", "GCAModel.loss"],
    "gca.objective": ["ContrastiveObjective"],
    "gca.objective.blocked": ["contrastive_loss"],
    "gca.objective.attention": ["attention_loss"],
    "gca.objective.reference": ["reference_loss"],
    "gca.train.loop": ["train", "train_step"],
    "gca.train.inference": ["encode_graph"],
    "gca.train.batches": ["batch_source", "Batch"],
    "gca.train.checkpoint": ["load_checkpoint", "save_checkpoint", "TrainingCheckpoints"],
    "gca.train.distributed": ["Placement", "resolve_device"],
    "gca.run.job": ["Job", "Job.open"],
    "gca.run.pipeline": ["run_gca", "logged_params"],
    "gca.run.tasks": ["link_prediction", "more_pretrainings"],
    "gca.run.logs": [
        "PretrainingLogs",
        "PretrainingLogs.series",
        "PretrainingLogs.summary",
        "CheckpointLink",
        "CheckpointLink.resume",
        "CheckpointLink.after_epoch",
    ],
    "gca.outputs.folder": ["RunOutputs"],
    "gca.outputs.export": ["export_embeddings"],
    "gca.train.fast": ["LongRunHint"],
}


def public_paths() -> set[str]:
    """The objects' full paths, as the reference's headings name them (``gca.train.estimator.GCA.fit``)."""
    return {f"{module}.{name}" for module, names in USER_FACING.items() for name in names}
