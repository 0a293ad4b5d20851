"""What a run measures with its embeddings (:data:`gca.choices.TASKS`): node classification (the default), link
prediction or node clustering. Classification and clustering judge one training on the whole graph, which
:func:`more_pretrainings` repeats with other seeds (``--seeds K``); link prediction holds edges out *before* training,
so :func:`link_prediction` trains once per hold-out, with the hold-out's seed, on the edges left."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from ..choices import TASK_COUNTS
from ..evaluate.classification import EvaluationResult
from ..evaluate.linkpred import LinkResult, hold_out_edges, score_links
from ..seeds import run_seeds, training_seeds
from ..train.estimator import GCA, clone
from .job import Job

if TYPE_CHECKING:
    from .logs import PretrainingLogs


def link_prediction(
    job: Job, estimator: GCA, runs: int = TASK_COUNTS["link"], val: float = 0.05, test: float = 0.1
) -> tuple[LinkResult, GCA, torch.Tensor, dict[str, Any]]:
    """``runs`` hold-outs of ``job``'s cleaned graph, each trained by a fresh copy of ``estimator``
    (:func:`gca.train.estimator.clone`: initial weights even if ``estimator`` was fitted, its device, the hold-out's
    seed from :func:`gca.seeds.run_seeds`).

    Parameters
    ----------
    job
        The job whose graph is held out (:meth:`Job.prepare` or :meth:`Job.clean` first).
    estimator
        The estimator cloned for each hold-out (not trained itself).
    runs
        How many hold-outs, each with its own seed.
    val, test
        The shares of the edges held out for validation and testing.

    Returns
    -------
    tuple[LinkResult, GCA, torch.Tensor, dict[str, Any]]
        The scores, the first run's estimator and embeddings (of its training graph), and the run's record
        (``results.json``: what was held out, the scores, the first training's time, device and configuration).
    """
    graph = job.graph
    assert graph is not None, "prepare or clean the job's graph first"
    result, first = LinkResult(), None
    for seed in run_seeds(estimator.config.seed, runs):
        held = hold_out_edges(graph.edge_index, graph.num_nodes, val, test, seed, directed=graph.directed)
        trained = clone(estimator, seed=seed)
        training = trained.prepare(held.training_data(job.loaded.data), directed=graph.directed)
        embeddings = trained.fit_transform(training)
        result.runs.append(score_links(embeddings, held, seed))
        if first is None:
            first = (trained, embeddings, held)
    trained, embeddings, held = first
    held_out = {
        "val_share": val,
        "test_share": test,
        "runs": runs,
        "train_edges": int(held.train_edge_index.shape[1]),
        "val_pairs": int(held.val_pos.shape[1]),
        "test_pairs": int(held.test_pos.shape[1]),
    }
    record = {
        "dataset": job.name,
        "task": "link",
        "held_out": held_out,
        "link_prediction": result.to_dict(),
        "train_seconds": round(trained.train_seconds, 3),
        "device": str(trained.device),
        "config": trained.config.to_dict(),
    }
    return result, trained, embeddings, record


def more_pretrainings(
    job: Job,
    estimator: GCA,
    first: EvaluationResult,
    count: int,
    splits: list,
    protocol: str,
    logs: PretrainingLogs | None = None,
) -> tuple[str, dict[str, Any]]:
    """``count`` pretrainings in all, ``first`` the one ``estimator`` made: the others train fresh copies with the next
    seeds of :func:`gca.seeds.training_seeds`, each a run of :func:`gca.run.pipeline.run_gca`. Returns one line to print
    and ``results.json``'s ``pretrainings``: the seeds, each one's mean accuracy, and their mean ± std.

    Parameters
    ----------
    job
        The job whose prepared graph every pretraining trains on.
    estimator, first
        The estimator that made ``first`` (cloned for the others, not trained again), and its evaluation.
    count
        The pretrainings in all, ``first`` included.
    splits, protocol
        The evaluation splits every pretraining is judged on, and ``"sklearn"`` or ``"authors"``.
    logs
        The series' loggers (:class:`gca.run.logs.PretrainingLogs`, whose loggers ``estimator`` has); ``None``: each
        pretraining is a plain run of ``estimator``'s loggers (a CSV log written afresh by each).
    """
    from .pipeline import logged_params, run_gca

    seeds = training_seeds(estimator.config.seed, count)
    results = [first]
    for index, seed in enumerate(seeds[1:], start=1):
        again = clone(estimator, seed=seed)
        if logs is not None:
            logs.pretraining(index)
        run = run_gca(again, job.prepared, dataset=job.name, labels=job.labels, splits=splits, protocol=protocol)
        assert run.evaluation is not None, "judged on the splits given"
        results.append(run.evaluation)
        if logs is not None:
            logs.ran(run.record.get("logged_to", []))
    means = [r.mean for r in results]
    record = {
        "count": count,
        "seeds": seeds,
        "accuracy": means,
        "mean": float(np.mean(means)),
        "std": float(np.std(means)),
        "splits_each": len(splits),
        "protocol": protocol,
    }
    line = (
        f"{record['mean']:.2f} ± {record['std']:.2f} % over {count} pretrainings (seeds "
        f"{', '.join(map(str, seeds))}), each judged on {len(splits)} split{'s' if len(splits) > 1 else ''} "
        f"({protocol} protocol)"
    )
    if logs is not None:
        logs.summary(record, logged_params(estimator, job.name), estimator.config.epochs)
    return line, record
