"""Baselines of Table 3 (Zhu et al., WWW 2021), run on the same splits and, where unsupervised, the same evaluator.

Each is a function ``(data, splits, seed, quick, device, protocol)``: one training with ``seed``, judged on each of
``splits`` (supervised ones train once per split); an unsupervised one returns a :class:`BaselineResult`, its whole
evaluation and what its gradient steps did (:class:`gca.reproduce.training.TrainingHistory`). ``quick`` shortens the
schedules of :data:`SHORTENED_IN_QUICK`, rows a reproduction marks and does not compare with the paper.

* ``raw`` — the raw features, judged like every embedding (:func:`gca.evaluate.classification.evaluate_embeddings`);
  ``propagated-1``, ``-2``, ``-3`` (not in the paper) — Â^k X (SGC; Wu et al., ICML 2019; :mod:`gca.graph.propagate`)
  of the row-normalised features, projected to GCA's embedding width on the dataset (:func:`baseline_options`).
* ``dgi`` — PyG's ``DeepGraphInfomax`` (Veličković et al., 2019): a 512-unit GCN layer, PReLU, Adam (lr 0.001), up to
  300 epochs, patience 20 on the loss; ``gmi``, ``mvgrl`` — GMI-mean (Peng et al., WWW 2020) and MVGRL (Hassani &
  Khasahmadi, ICML 2020), memory-bounded (:mod:`gca.reproduce.gmi`, :mod:`gca.reproduce.mvgrl`); ``gae`` / ``vgae`` —
  PyG's (Kipf & Welling, 2016), GCN 256 → 128 (link prediction: 32 → 16), Adam (lr 0.01), 200 epochs.
* ``gcn`` / ``gat`` — supervised GCN (Kipf & Welling, 2017; 2 layers of 64 units, dropout 0.5, lr 0.01) and GAT
  (Veličković et al., 2018; 8 heads × 8 units, dropout 0.6, lr 0.005), weight decay 5e-4, 200 epochs on the split's
  training nodes, judged on its test nodes at the epoch of best validation accuracy.
* ``deepwalk`` — DeepWalk (Perozzi et al., KDD 2014, §6.1): γ = 80 uniform random walks (quick: 10) of t = 40 nodes
  from every node, skip-gram with hierarchical softmax, window w = 10, d = 128, one pass over the walks.
* ``node2vec`` — Grover & Leskovec (KDD 2016, §4.1): r = 10 biased walks of l = 80 nodes per node, negative-sampling
  skip-gram, context k = 10, d = 128, one epoch; p, q per split by validation from {0.25, 1, 4}² (quick: {0.5, 2}²).
* ``deepwalk+features`` — the DeepWalk embedding beside the raw features, each block ℓ2-normalised per row first.

Walks: :mod:`gca.graph.walks`; skip-gram: gensim's ``Word2Vec`` (the ``baselines`` extra). Unsupervised baselines see
row-normalised features; a loss that is not finite raises :class:`gca.train.loop.TrainingError` (a diverged run).
"""

from __future__ import annotations

import functools
import os
import zlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F
from torch_geometric import seed_everything
from torch_geometric.data import Data

from ..datasets.base import Split
from ..evaluate.classification import EvaluationResult, evaluate_embeddings, raw_feature_input
from ..evaluate.feature_baselines import propagated_label
from ..graph.csr import binary_adjacency
from ..graph.propagate import PROPAGATION_HOPS
from ..graph.walks import random_walks
from ..train.loop import TrainingError
from .gmi import gmi_embeddings
from .mvgrl import mvgrl_embeddings
from .training import Trained, TrainingHistory, fit, seeded_inputs


class BaselineUnavailable(RuntimeError):
    """The baseline cannot run in this environment (a package is missing); the message says why."""


#: ``(data, splits, seed, quick, device, protocol="sklearn") -> test accuracy in % per split`` (a list, or the
#: :class:`BaselineResult` that holds it); ``protocol`` names
#: how an unsupervised baseline's embeddings are judged (:data:`gca.evaluate.classification.PROTOCOLS`); supervised
#: ones ignore it.
Baseline = Callable[..., "list[float] | BaselineResult"]

#: The baselines whose schedule ``quick`` shortens: DGI 100 of 300 epochs, GAE and VGAE 100 of 200, DeepWalk 10 of 80
#: walks per node (also under DeepWalk + features), node2vec's p, q from {0.5, 2}² instead of {0.25, 1, 4}², GMI at
#: most 60 of 550 epochs (fewer on larger graphs: :func:`gca.reproduce.gmi.quick_epochs`), MVGRL at most 400 of 3,000
#: (a run that early stopping ends before the cap is not shortened: :meth:`gca.reproduce.report.Reporter.shortened`).
SHORTENED_IN_QUICK = frozenset({"dgi", "gae", "vgae", "deepwalk", "deepwalk+features", "node2vec", "gmi", "mvgrl"})


@dataclass
class BaselineResult:
    """What an unsupervised baseline's run gives its record: the evaluation of its embeddings and, where it trains
    by gradient steps, its :class:`TrainingHistory`."""

    evaluation: EvaluationResult
    training: TrainingHistory | None = None

    def record(self) -> dict:
        """The run record's ``accuracy`` (the whole evaluation) and, where there is one, ``training``."""
        training = {"training": self.training.to_dict()} if self.training is not None else {}
        return {"accuracy": self.evaluation.to_dict(), **training}


def _evaluate(
    embeddings: torch.Tensor | Trained,
    data: Data,
    splits: list[Split],
    protocol: str = "sklearn",
    progress: bool = False,
) -> BaselineResult:
    """The embeddings judged on ``splits``; a trained baseline's :class:`TrainingHistory` goes with them."""
    z, training = embeddings if isinstance(embeddings, Trained) else (embeddings, None)
    return BaselineResult(
        evaluate_embeddings(z.detach().cpu(), data.y, splits, protocol, progress=progress, desc="evaluate"), training
    )


def raw_features(
    data: Data,
    splits: list[Split],
    seed: int,
    quick: bool,
    device: torch.device,
    protocol: str = "sklearn",
    progress: bool = False,
) -> BaselineResult:
    x = data.x.to_dense() if data.x.is_sparse else data.x
    return _evaluate(torch.from_numpy(raw_feature_input(x.float().numpy(), protocol)), data, splits, protocol, progress)


def _propagated(k: int) -> Baseline:
    def run(
        data: Data,
        splits: list[Split],
        seed: int,
        quick: bool,
        device: torch.device,
        protocol: str = "sklearn",
        progress: bool = False,
        width: int | None = None,
    ) -> BaselineResult:
        from ..graph.graph import prepare_graph
        from ..graph.propagate import propagated_features

        x = propagated_features(prepare_graph(data), (k,), "row", width, seed=0)[k]
        return _evaluate(x, data, splits, protocol, progress)

    return run


def baseline_options(key: str, dataset: str) -> dict[str, int]:
    """The options a baseline takes besides the shared ones, for ``dataset``: the propagated rows' ``width``, GCA's
    embedding width there (its shipped setting's ``hidden``). A run's key records them
    (:meth:`gca.reproduce.plan.Planner.baseline_runs`) and the executor passes them."""
    if not key.startswith("propagated-"):
        return {}
    from ..config import build_config

    return {"width": build_config(dataset).hidden}


class _OneLayerGCN(nn.Module):
    """DGI's encoder: one graph convolution and its activation."""

    def __init__(self, conv: nn.Module, activation: nn.Module) -> None:
        super().__init__()
        self.conv, self.act = conv, activation

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        return self.act(self.conv(x, edge_index))


def dgi_embeddings(data: Data, seed: int, quick: bool, device: torch.device, progress: bool = False) -> Trained:
    """DGI's embeddings of every node (module docstring) and its training; the graph in ``data.edge_index`` is all
    it sees.

    Parameters
    ----------
    quick
        Quick mode's schedule: at most 100 epochs instead of 300 (both stop after 20 epochs without a lower loss).
    """
    from torch_geometric.nn import DeepGraphInfomax, GCNConv

    x, edge_index = seeded_inputs(data, seed, device)
    model = DeepGraphInfomax(
        512,
        encoder=_OneLayerGCN(GCNConv(x.shape[1], 512), nn.PReLU(512)),
        summary=lambda z, *args, **kwargs: torch.sigmoid(z.mean(dim=0)),
        corruption=lambda x, edge_index: (x[torch.randperm(x.size(0), device=x.device)], edge_index),
    ).to(device)
    history = fit(
        "DGI",
        model,
        lambda m: m.loss(*m(x, edge_index)),
        lr=0.001,
        epochs=100 if quick else 300,
        patience=20,
        progress=progress,
    )
    with torch.no_grad():
        return Trained(model(x, edge_index)[0], history)


def _embedded(embed: Callable[..., Trained | torch.Tensor]) -> Baseline:
    """The baseline that trains ``embed(data, seed, quick, device, progress=…)`` and judges its embeddings."""

    def run(
        data: Data,
        splits: list[Split],
        seed: int,
        quick: bool,
        device: torch.device,
        protocol: str = "sklearn",
        progress: bool = False,
    ) -> BaselineResult:
        return _evaluate(embed(data, seed, quick, device, progress=progress), data, splits, protocol, progress)

    return run


dgi = _embedded(dgi_embeddings)
gmi = _embedded(gmi_embeddings)
mvgrl = _embedded(mvgrl_embeddings)


class _AutoEncoderGCN(nn.Module):
    """GAE's and VGAE's encoder: GCN 256 → 128 (μ), plus log σ for VGAE."""

    def __init__(self, in_channels: int, variational: bool) -> None:
        from torch_geometric.nn import GCNConv

        super().__init__()
        self.conv1 = GCNConv(in_channels, 256)
        self.mu = GCNConv(256, 128)
        self.logstd = GCNConv(256, 128) if variational else None

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor):
        h = F.relu(self.conv1(x, edge_index))
        if self.logstd is None:
            return self.mu(h, edge_index)
        return self.mu(h, edge_index), self.logstd(h, edge_index)


def autoencoder_embeddings(
    data: Data, seed: int, quick: bool, device: torch.device, variational: bool = False, progress: bool = False
) -> Trained:
    """GAE's (or VGAE's mean μ) embeddings of every node, trained to reconstruct ``data.edge_index``, and the
    training.

    Parameters
    ----------
    quick
        Quick mode's schedule: 100 epochs instead of 200.
    variational
        VGAE (the encoder also gives log σ, and the loss adds the KL term divided by N) instead of GAE.
    """
    from torch_geometric.nn import GAE, VGAE

    x, edge_index = seeded_inputs(data, seed, device)
    model = (VGAE if variational else GAE)(_AutoEncoderGCN(x.shape[1], variational)).to(device)

    def loss(m: nn.Module) -> torch.Tensor:
        z = m.encode(x, edge_index)
        return m.recon_loss(z, edge_index) + (m.kl_loss() / x.shape[0] if variational else 0.0)

    history = fit(
        "VGAE" if variational else "GAE", model, loss, lr=0.01, epochs=100 if quick else 200, progress=progress
    )
    with torch.no_grad():
        z = model.encoder(x, edge_index)
    return Trained(z[0] if variational else z, history)  # the mean μ is the embedding


def _autoencoder(variational: bool) -> Baseline:
    return _embedded(functools.partial(autoencoder_embeddings, variational=variational))


def _supervised(architecture: str) -> Baseline:
    def run(
        data: Data,
        splits: list[Split],
        seed: int,
        quick: bool,
        device: torch.device,
        protocol: str = "sklearn",
        progress: bool = False,
    ) -> list[float]:
        """One end-to-end training per split, each from ``seed``."""
        return [one(data, split, seed, device) for split in splits]

    def one(data: Data, split: Split, seed: int, device: torch.device) -> float:
        from torch_geometric.nn import GATConv, GCNConv

        x, edge_index = seeded_inputs(data, seed, device)
        y = data.y.to(device)
        classes = int(y.max()) + 1
        if architecture == "gcn":
            layers = nn.ModuleList([GCNConv(x.shape[1], 64), GCNConv(64, classes)])
            dropout, lr, act = 0.5, 0.01, F.relu
        else:
            layers = nn.ModuleList(
                [GATConv(x.shape[1], 8, heads=8, dropout=0.6), GATConv(64, classes, heads=1, dropout=0.6)]
            )
            dropout, lr, act = 0.6, 0.005, F.elu
        layers = layers.to(device)
        optimizer = torch.optim.Adam(layers.parameters(), lr=lr, weight_decay=5e-4)
        train, val, test = (torch.as_tensor(idx, device=device) for idx in split)

        def forward(training: bool) -> torch.Tensor:
            h = F.dropout(x, dropout, training)
            h = F.dropout(act(layers[0](h, edge_index)), dropout, training)
            return layers[1](h, edge_index)

        best_val, test_at_best = -1.0, 0.0
        for _ in range(200):
            layers.train()
            optimizer.zero_grad()
            loss = F.cross_entropy(forward(True)[train], y[train])
            if not torch.isfinite(loss):
                raise TrainingError(f"{architecture.upper()}'s loss became {loss.item()}")
            loss.backward()
            optimizer.step()
            layers.eval()
            with torch.no_grad():
                pred = forward(False).argmax(1)
            val_acc = float((pred[val] == y[val]).float().mean())
            if val_acc > best_val:
                best_val, test_at_best = val_acc, 100.0 * float((pred[test] == y[test]).float().mean())
        return test_at_best

    return run


def skipgram_embeddings(
    walks: np.ndarray, num_nodes: int, dim: int, window: int, hierarchical: bool, seed: int
) -> np.ndarray:
    """Skip-gram (gensim's ``Word2Vec``) over ``walks`` (−1 is padding); row i is node i's vector (zero for a
    node that appears in no walk). Without gensim: :class:`BaselineUnavailable`.

    Parameters
    ----------
    walks
        ``[walks, length]`` node indices, one walk a row, ``-1`` after a walk's end.
    window
        The skip-gram context: nodes at most this many steps apart in a walk are pairs.
    hierarchical
        Hierarchical softmax (DeepWalk) instead of 5 negative samples a pair (node2vec).
    seed
        gensim's seed (one epoch over the walks; its worker threads may still order updates differently).
    """
    try:
        from gensim.models import Word2Vec
    except ImportError:
        raise BaselineUnavailable("skip-gram needs gensim: pip install gensim (the baselines extra)") from None
    sentences = [[str(v) for v in row[row >= 0]] for row in walks]
    model = Word2Vec(
        sentences,
        vector_size=dim,
        window=window,
        min_count=0,
        sg=1,
        hs=int(hierarchical),
        negative=0 if hierarchical else 5,
        epochs=1,
        seed=seed,
        workers=max(1, min(4, os.cpu_count() or 1)),
        hashfxn=_stable_hash,
    )
    out = np.zeros((num_nodes, dim), dtype=np.float32)
    for i, token in enumerate(model.wv.index_to_key):
        out[int(token)] = model.wv.vectors[i]
    return out


def _stable_hash(text: str) -> int:
    """gensim seeds each word vector from hash(word); Python's str hash changes per process (PYTHONHASHSEED)."""
    return zlib.crc32(text.encode())


def deepwalk_embeddings(data: Data, seed: int, quick: bool) -> np.ndarray:
    adjacency = binary_adjacency(data.edge_index, data.num_nodes)
    walks = random_walks(adjacency, walk_length=40, walks_per_node=10 if quick else 80, seed=seed)
    return skipgram_embeddings(walks, data.num_nodes, 128, window=10, hierarchical=True, seed=seed)


def _deepwalk(with_features: bool) -> Baseline:
    """DeepWalk's embedding judged alone, or beside the raw features (each block ℓ2-normalised per row)."""

    def embed(data: Data, seed: int, quick: bool, device: torch.device, progress: bool = False) -> torch.Tensor:
        seed_everything(seed)
        z = torch.from_numpy(deepwalk_embeddings(data, seed, quick))
        if with_features:
            x = data.x.to_dense() if data.x.is_sparse else data.x
            z = torch.cat([F.normalize(z), F.normalize(x.float())], dim=1)
        return z

    return _embedded(embed)


deepwalk, deepwalk_features = _deepwalk(False), _deepwalk(True)


def node2vec(
    data: Data,
    splits: list[Split],
    seed: int,
    quick: bool,
    device: torch.device,
    protocol: str = "sklearn",
    progress: bool = False,
) -> list[float]:
    """p, q chosen on each split's validation nodes; the test accuracy of that split's choice.

    Parameters
    ----------
    data
        The graph; only ``edge_index`` (the walks) and the labels ``y`` are read.
    quick
        Quick mode's grid: p, q ∈ {0.5, 2} instead of {0.25, 1, 4}.
    device
        Not read: walks and skip-gram run on the CPU (the signature of every baseline).
    """
    seed_everything(seed)
    adjacency = binary_adjacency(data.edge_index, data.num_nodes)
    grid = (0.5, 2.0) if quick else (0.25, 1.0, 4.0)
    best = [(-1.0, 0.0)] * len(splits)  # per split: (validation accuracy, test accuracy) of the best p, q so far
    for p in grid:
        for q in grid:
            walks = random_walks(adjacency, walk_length=80, walks_per_node=10, p=p, q=q, seed=seed)
            z = skipgram_embeddings(walks, data.num_nodes, 128, window=10, hierarchical=False, seed=seed)
            result = evaluate_embeddings(
                torch.from_numpy(z), data.y, splits, protocol, progress=progress, desc=f"evaluate p={p}, q={q}"
            )
            # a strictly better validation accuracy replaces the choice: on a tie the first p, q stays, so that no
            # test accuracy decides between them
            best = [
                (v, t) if v > b[0] else b
                for b, v, t in zip(best, result.val_accuracies, result.accuracies, strict=True)
            ]
    return [test for _, test in best]


#: What of a baseline's implementation its runs' keys name (:meth:`gca.reproduce.plan.Planner.baseline_runs`), so
#: that a record made by another implementation (e.g. MVGRL with another diffusion) is trained again rather than
#: reused.
IMPLEMENTATION: dict[str, dict[str, str]] = {"mvgrl": {"diffusion": "dense up to 2 GiB, else 95 % of each row's mass"}}

BASELINES: dict[str, tuple[str, str, Baseline]] = {
    # key: (row label in Table 3, training data, function)
    "raw": ("Raw features", "X", raw_features),
    **{
        f"propagated-{k}": (f"{propagated_label(k)} (SGC; not in the paper)", "X, A", _propagated(k))
        for k in PROPAGATION_HOPS
    },
    "node2vec": ("node2vec", "A", node2vec),
    "deepwalk": ("DeepWalk", "A", deepwalk),
    "deepwalk+features": ("DeepWalk + features", "X, A", deepwalk_features),
    "gae": ("GAE", "X, A", _autoencoder(variational=False)),
    "vgae": ("VGAE", "X, A", _autoencoder(variational=True)),
    "dgi": ("DGI", "X, A", dgi),
    "gmi": ("GMI", "X, A", gmi),
    "mvgrl": ("MVGRL", "X, A", mvgrl),
    "gcn": ("GCN", "X, A, Y", _supervised("gcn")),
    "gat": ("GAT", "X, A, Y", _supervised("gat")),
}
