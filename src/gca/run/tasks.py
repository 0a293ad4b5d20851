"""What a run measures with its embeddings (:data:`gca.names.TASKS`): node classification
(:mod:`gca.evaluate.classification`, the default), link prediction (:mod:`gca.evaluate.linkpred`) or node
clustering (:mod:`gca.evaluate.clustering`).

Classification and clustering judge the embeddings of one training on the whole graph. Link prediction must hold
edges out *before* training, so it trains once per hold-out: :func:`link_prediction` draws hold-out i from seed
``run_seeds(config.seed, runs)[i]`` (:mod:`gca.seeds`: the seed itself first), trains GCA with that seed on the
edges left, embeds every node on that training graph and scores the held-out pairs.
"""

from __future__ import annotations

from typing import Any

import torch

from ..evaluate.linkpred import LinkResult, hold_out_edges, score_links
from ..names import TASK_COUNTS
from ..seeds import run_seeds
from ..train.estimator import GCA, clone
from .job import Job


def link_prediction(job: Job, estimator: GCA, runs: int = TASK_COUNTS["link"], val: float = 0.05,
                    test: float = 0.1) -> tuple[LinkResult, GCA, torch.Tensor, dict[str, Any]]:  # fmt: skip
    """``runs`` hold-outs of ``job``'s cleaned graph (:meth:`Job.prepare` or :meth:`Job.clean` first), each
    trained by a fresh copy of ``estimator`` (:func:`gca.train.estimator.clone`: its parts at their initial
    weights, even if ``estimator`` was fitted, its device, the hold-out's seed from :func:`gca.seeds.run_seeds`);
    returns the scores, the first run's estimator and embeddings (of its training graph) and the run's record
    (``results.json``: what was held out, the scores, the first training's time, device and configuration).
    ``estimator`` itself is not trained."""
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
    held_out = {"val_share": val, "test_share": test, "runs": runs,
                "train_edges": int(held.train_edge_index.shape[1]), "val_pairs": int(held.val_pos.shape[1]),
                "test_pairs": int(held.test_pos.shape[1])}  # fmt: skip
    record = {"dataset": job.name, "task": "link", "held_out": held_out, "link_prediction": result.to_dict(),
              "train_seconds": round(trained.train_seconds, 3), "device": str(trained.device),
              "config": trained.config.to_dict()}  # fmt: skip
    return result, trained, embeddings, record
