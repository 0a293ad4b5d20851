"""One GCA run — fit → judge → plots → result record — the path ``gca train``, ``gca reproduce`` and ``gca tune`` take.

The caller loads the graph, builds the estimator and prepares the graph (so it can report on it first); then
:func:`run_gca` trains, judges the frozen embeddings and draws the plots asked for, and returns a :class:`RunResult`
whose :attr:`~RunResult.record` is the JSON-ready summary. Nothing here prints or writes other than those plots.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..augment.prepared import PreparedGraph
from ..config import planned_updates
from ..datasets.base import Split
from ..evaluate.classification import EvaluationResult, evaluate_embeddings
from ..evaluate.clustering import ClusterResult, cluster_embeddings
from ..evaluate.feature_baselines import FeatureBaselines, judge_feature_baselines, versus_baselines
from ..evaluate.stability import align_embeddings, shared_rows
from ..loggers import final_metrics, logged_run, where_logged
from ..train.checkpoint import Resume, WarmStart
from ..train.estimator import GCA


@dataclass
class RunResult:
    """What :func:`run_gca` returns: ``[N, hidden]`` float32 ``embeddings`` on the CPU, the evaluations (``None``
    where skipped or not asked for), the JSON-ready ``record`` (``results.json``) and the plots drawn."""

    embeddings: torch.Tensor
    evaluation: EvaluationResult | None
    raw_evaluation: EvaluationResult | None
    record: dict[str, Any]
    plots: list[Path] = field(default_factory=list)
    clusters: ClusterResult | None = None
    baselines: FeatureBaselines | None = None


@dataclass
class AlignTarget:
    """Earlier embeddings to rotate a run's embeddings onto (:mod:`gca.evaluate.stability`), matched by node id: the
    shared nodes' rows in this graph and in ``embeddings`` (``None`` for both: the same nodes in the same order), and
    the ``source`` file."""

    embeddings: np.ndarray
    new_rows: np.ndarray | None
    previous_rows: np.ndarray | None
    source: str


def align_target(path: str | Path, node_ids: list | None, num_nodes: int) -> AlignTarget:
    """The embeddings of ``path`` — an earlier run's ``--export`` file (matched by node id) or its ``embeddings.npy``
    (rows in this graph's order) — for a graph whose row i has id ``node_ids[i]`` (``None``: i)."""
    from ..outputs.export import read_embeddings

    ids, values = read_embeddings(path)
    values = np.array(values, dtype=np.float32)  # a copy: the file may be the one this run replaces
    if not np.isfinite(values).all():
        from ..evaluate.stability import AlignmentError

        raise AlignmentError(f"{path} holds values that are not finite; align to a run that finished")
    if ids is None:
        return AlignTarget(values, None, None, str(path))
    new_rows, previous_rows = shared_rows(node_ids if node_ids is not None else range(num_nodes), ids)
    return AlignTarget(values, new_rows, previous_rows, str(path))


def _gpu_peak(device: torch.device) -> dict[str, float]:
    """PyTorch's peak allocated memory on a CUDA device since the process began (empty on CPUs)."""
    if device.type != "cuda":
        return {}
    return {"gpu_peak_mb": round(torch.cuda.max_memory_allocated(device) / 2**20, 1)}


def _world_size(estimator: GCA) -> int:
    """Processes that shared each update's anchors."""
    place = estimator.placement
    return place.world_size if place is not None else 1


def _objective_used(estimator: GCA) -> dict[str, str]:
    """The backend and precision the objective computed with (what ``auto`` became on this device)."""
    objective = getattr(estimator.model, "objective", None)
    if not hasattr(objective, "resolved"):
        return {}
    from ..objective import objective_reason

    backend, precision = objective.resolved(estimator.device)
    why = objective_reason(objective.backend, objective.precision, estimator.device)
    return {"objective": f"{backend} {precision}", "objective_reason": why}


def logged_params(estimator: GCA, dataset: str) -> dict[str, Any]:
    """The hyperparameters a run logs (:func:`gca.loggers.logged_run`): ``dataset`` and the config's fields, those left
    automatic as the run will use them — ``loss_backend`` and ``precision`` as the objective resolves them on the device
    (a user's objective without ``resolved``: as the config sets them), ``warmup_steps`` as
    :attr:`~gca.config.GCAConfig.warmup_updates`. ``results.json`` keeps the config as given.

    Parameters
    ----------
    estimator, dataset
        The estimator that will train (its config, device and objective), and the dataset's name.
    """
    config = estimator.config
    params: dict[str, Any] = {"dataset": dataset, **config.to_dict(), "warmup_steps": config.warmup_updates}
    objective = estimator.objective
    if objective is None or hasattr(objective, "resolved"):
        from ..objective import resolve_objective

        resolved = (
            resolve_objective(config.loss_backend, config.precision, estimator.device)
            if objective is None
            else objective.resolved(estimator.device)
        )
        params["loss_backend"], params["precision"] = resolved
    return params


def run_gca(
    estimator: GCA,
    prepared: PreparedGraph,
    *,
    dataset: str,
    labels: torch.Tensor | None = None,
    splits: list[Split] | None = None,
    eval_raw: bool = False,
    protocol: str = "sklearn",
    clusters: int = 0,
    checkpoint: str | Path | None = None,
    checkpoint_every: int = 0,
    resume: bool | Resume = False,
    plots: tuple[Path, Path] | None = None,
    plot_title: str = "",
    on_epoch: Callable[[int, Callable[[], torch.Tensor]], None] | None = None,
    embeddings_file: str | Path | None = None,
    scratch: str | Path | None = None,
    on_update: Callable[[int, int | None], None] | None = None,
    init_from: str | Path | WarmStart | None = None,
    align_to: AlignTarget | None = None,
) -> RunResult:
    """Train ``estimator`` on ``prepared``, evaluate, cluster and plot as asked, and return the embeddings, evaluations
    and record.

    The run is one run of the estimator's loggers: :func:`logged_params` first, the record's ``accuracy``,
    ``raw_features_accuracy`` and ``clustering`` at step ``config.epochs``; ``record["logged_to"]`` lists where they
    went.

    Parameters
    ----------
    estimator
        The estimator to train (untrained or not: ``fit`` starts afresh).
    prepared
        The prepared graph (:meth:`GCA.prepare <gca.train.estimator.GCA.prepare>` or :meth:`Job.prepare
        <gca.run.job.Job.prepare>`).
    dataset
        The dataset's name, for the record and the loggers.
    labels, splits
        One label per node (−1: none; ``None`` for an unlabelled graph), and the evaluation splits (``None`` skips
        evaluation).
    eval_raw
        Also judge the raw features and the propagated features Â^k X, k = 1, 2, 3 on the same splits, and whether the
        embeddings beat the best of them (:func:`gca.evaluate.feature_baselines.judge_feature_baselines`).
    protocol
        ``"sklearn"`` or ``"authors"`` (:data:`gca.choices.PROTOCOLS`).
    clusters
        k-means runs on the embeddings; ``0`` skips clustering.
    checkpoint, checkpoint_every, resume
        Training checkpoints, as :meth:`GCA.fit <gca.train.estimator.GCA.fit>` takes them.
    plots, plot_title
        ``(loss.png, tsne.png)`` paths to draw the loss curve and the t-SNE map to (``None``: no plots), and their
        title.
    on_epoch, on_update
        Hooks after every epoch and every update (:class:`gca.train.fast.LongRunHint`), as ``GCA.fit`` takes them.
    embeddings_file, scratch, init_from
        Out-of-core embeddings' ``.npy`` path, where a torchrun process other than the first maps its matrices, and an
        earlier model's file (or :class:`~gca.train.checkpoint.WarmStart`) to start from, as ``GCA.fit`` takes them.
    align_to
        Earlier embeddings (:func:`align_target`) to rotate this run's onto before they are judged and returned;
        ``record["alignment"]`` says how far they moved.
    """
    with logged_run(estimator.loggers, logged_params(estimator, dataset)):
        result = _run(
            estimator,
            prepared,
            dataset,
            labels,
            splits,
            eval_raw,
            protocol,
            clusters,
            plots,
            plot_title,
            dict(
                checkpoint=checkpoint,
                checkpoint_every=checkpoint_every,
                resume=resume,
                on_epoch=on_epoch,
                embeddings_file=embeddings_file,
                scratch=scratch,
                on_update=on_update,
                init_from=init_from,
            ),
            align_to,
        )
        if estimator.loggers:  # the evaluation's numbers, at the last epoch, before the loggers close
            final = final_metrics(result.record, ("accuracy", "raw_features_accuracy", "clustering"))
            if final:
                for logger in estimator.loggers:
                    logger.log(final, estimator.config.epochs)
    if estimator.loggers:
        result.record["logged_to"] = where_logged(estimator.loggers)
    return result


def _run(
    estimator: GCA,
    prepared: PreparedGraph,
    dataset: str,
    labels: torch.Tensor | None,
    splits: list[Split] | None,
    eval_raw: bool,
    protocol: str,
    clusters: int,
    plots: tuple[Path, Path] | None,
    plot_title: str,
    fit: dict[str, Any],
    align_to: AlignTarget | None = None,
) -> RunResult:
    """:func:`run_gca`'s training, evaluation and plots (``fit``: the arguments of :meth:`GCA.fit_transform`)."""
    config = estimator.config
    embeddings = estimator.fit_transform(prepared, **fit)
    alignment = None
    if align_to is not None and embeddings is not None:  # rotated in place (a mapped file's too), then judged
        writable = embeddings.numpy().flags.writeable
        aligned, alignment = align_embeddings(
            embeddings,
            align_to.embeddings,
            align_to.new_rows,
            align_to.previous_rows,
            out=embeddings.numpy() if writable else None,
        )
        embeddings = embeddings if writable else torch.from_numpy(aligned)
    record: dict[str, Any] = {
        "dataset": dataset,
        "centrality": config.centrality,
        "epochs": config.epochs,
        "updates": planned_updates(config, prepared.graph.num_nodes, _world_size(estimator)),
        "warmup_updates": config.warmup_updates,  # what warmup_steps = -1 (automatic) became
        "train_seconds": round(estimator.train_seconds, 3),
        "prepare_seconds": round(estimator.prepare_seconds, 3),
        "seconds_per_epoch": round(estimator.train_seconds / max(config.epochs, 1), 5),
        "embed_seconds": round(estimator.embed_seconds, 3),
        "embeddings_out_of_core": estimator.embedding_file_ is not None,
        "inference_processes": getattr(estimator, "embed_processes_", 1),
        "final_loss": estimator.losses[-1] if estimator.losses else None,
        "losses": list(estimator.losses),
        "device": str(estimator.device),
        **_gpu_peak(estimator.device),
        **_objective_used(estimator),
        **(estimator.placement.record() if estimator.placement is not None else {}),
        "config": config.to_dict(),
        "accuracy": None,
        **({"alignment": {**alignment.to_dict(), "to": align_to.source}} if alignment is not None else {}),
    }
    evaluation = raw = baselines = None
    if splits is not None and labels is not None:
        start = time.perf_counter()
        # the authors' probe trains on the training device (a GPU runs its 20 classifiers in about a second)
        evaluation = evaluate_embeddings(
            embeddings, labels, splits, protocol, device=estimator.device, progress=estimator.progress
        )
        record["accuracy"] = evaluation.to_dict()
        record["eval_seconds"] = round(time.perf_counter() - start, 3)
        if eval_raw:
            start = time.perf_counter()
            baselines = judge_feature_baselines(
                prepared.graph,
                labels,
                splits,
                protocol,
                config.feature_norm,
                width=int(embeddings.shape[1]),
                device=estimator.device,
                progress=estimator.progress,
            )
            raw = baselines.raw
            record["raw_features_accuracy"] = raw.to_dict()
            record["propagated_features_accuracy"] = {str(k): r.to_dict() for k, r in baselines.propagated.items()}
            record["propagation"] = baselines.propagation()
            record["versus_feature_baselines"] = versus_baselines(evaluation, baselines)
            record["raw_eval_seconds"] = round(time.perf_counter() - start, 3)
    grouped = None
    if clusters and labels is not None:
        grouped = cluster_embeddings(embeddings, labels, clusters, config.seed)
        record["clustering"] = grouped.to_dict()
    written: list[Path] = []
    if plots is not None:
        from ..outputs.plots import MIN_TSNE_NODES, loss_curve, tsne_map

        loss_path, tsne_path = plots
        loss_curve(estimator.losses, loss_path, f"{plot_title}: GCA training loss")
        written.append(Path(loss_path))
        if labels is not None and len(embeddings) >= MIN_TSNE_NODES:
            tsne_map(embeddings, labels, tsne_path, f"{plot_title}: t-SNE of GCA embeddings", config.seed)
            written.append(Path(tsne_path))
    return RunResult(embeddings, evaluation, raw, record, written, grouped, baselines)
