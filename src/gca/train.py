"""Training (Algorithm 1 of Zhu et al., WWW 2021) and the :class:`GCA` estimator that wraps it.

One epoch, top to bottom (:func:`train_step`):

1. sample two views t, t' ~ T — kept edges and a feature mask for each (:mod:`gca.augment`);
2. build each view's normalised adjacency D̂^{-1/2}(Ã + I)D̂^{-1/2} (:mod:`gca.graph`);
3. embed both views with the shared encoder f (:mod:`gca.encoder`);
4. compute −J of Eq. 2 on the projections g(·) (:mod:`gca.objective`);
5. take one Adam step.

Centrality and the removal/masking probabilities depend only on the original graph and are computed once, before
the loop.
"""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch_geometric.data import Data
from tqdm.auto import tqdm

from .augment import ViewAugmentor, build_augmentors
from .centrality import node_centrality
from .config import GCAConfig
from .graph import Graph, normalized_adjacency, prepare_graph
from .model import GCAModel


class TrainingError(RuntimeError):
    """Training cannot go on (e.g. the loss diverged); the message is one line meant for the user."""


def resolve_device(device: str | torch.device = "auto") -> torch.device:
    """``auto`` → CUDA when available, else CPU; ``cuda`` without a GPU is an error."""
    if str(device) == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(device)
    except (RuntimeError, TypeError):
        raise TrainingError(f"unknown device {device!r}; use auto, cpu, cuda or cuda:N") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise TrainingError("--device cuda was requested but no CUDA device is available; use --device cpu")
    return device


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)  # noqa: NPY002 - seeds code outside gca that uses the legacy global RNG
    torch.manual_seed(seed)


def train_step(
    model: GCAModel,
    optimizer: torch.optim.Optimizer,
    graph: Graph,
    views: tuple[ViewAugmentor, ViewAugmentor],
    generator: torch.Generator,
) -> float:
    """One iteration of Algorithm 1; returns −J before the update."""
    model.train()
    embeddings = []
    for view in views:
        edges = view.sample_edges(generator)
        adjacency = normalized_adjacency(edges, graph.num_nodes, symmetric=view.symmetric_units)
        mask = view.sample_feature_mask(generator)
        embeddings.append(model(graph.features, adjacency, mask))
    loss = model.loss(*embeddings)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    return float(loss.detach())


@torch.no_grad()
def embed(model: GCAModel, graph: Graph) -> torch.Tensor:
    """Frozen embeddings H = f(X, A) of the original graph (no augmentation, eval mode)."""
    model.eval()
    adjacency = normalized_adjacency(graph.edge_index, graph.num_nodes, symmetric=not graph.directed)
    return model(graph.features, adjacency).detach()


class GCA:
    """Self-supervised node embeddings with GCA.

    >>> from gca import GCA, GCAConfig
    >>> embeddings = GCA(GCAConfig(epochs=200)).fit(data)   # data: torch_geometric.data.Data  # doctest: +SKIP

    ``fit`` computes centrality and augmentation probabilities once, trains for ``config.epochs`` epochs and
    returns the embeddings of every node (a float32 tensor on the CPU). ``losses`` holds −J per epoch and
    ``train_seconds`` the time spent in the training loop only.
    """

    def __init__(self, config: GCAConfig | None = None, device: str = "auto", progress: bool = False) -> None:
        self.config = config or GCAConfig()
        self.config.validate()
        self.device = resolve_device(device)
        self.progress = progress
        self.model: GCAModel | None = None
        self.in_channels: int | None = None
        self.graph: Graph | None = None
        self.centrality: torch.Tensor | None = None
        self.views: tuple[ViewAugmentor, ViewAugmentor] | None = None
        self.losses: list[float] = []
        self.train_seconds = 0.0
        self.prepare_seconds = 0.0

    def prepare(self, data: Data | Graph, directed: bool | None = None) -> Graph:
        """Clean the graph, compute centrality and both views' probabilities (once per graph)."""
        start = time.perf_counter()
        cfg = self.config
        graph = data if isinstance(data, Graph) else prepare_graph(data, directed, cfg.feature_norm)
        adaptive = cfg.centrality != "uniform" and (cfg.edge_drop == "adaptive" or cfg.feature_mask == "adaptive")
        self.centrality = (
            node_centrality(cfg.centrality, graph.edge_index, graph.num_nodes, graph.directed) if adaptive else None
        )
        views = build_augmentors(
            graph,
            self.centrality,
            (cfg.p_e1, cfg.p_e2),
            (cfg.p_f1, cfg.p_f2),
            cfg.p_tau,
            edge_drop=cfg.edge_drop,
            feature_mask=cfg.feature_mask,
            edge_scheme=cfg.edge_scheme,
            feature_weighting=cfg.feature_weighting,
        )
        self.graph = graph.to(self.device)
        self.views = (views[0].to(self.device), views[1].to(self.device))
        self.prepare_seconds = time.perf_counter() - start
        return graph

    def fit(self, data: Data | Graph, directed: bool | None = None) -> torch.Tensor:
        """Train on ``data`` and return the embeddings of its nodes."""
        self.prepare(data, directed)
        assert self.graph is not None and self.views is not None
        cfg = self.config
        seed_everything(cfg.seed)
        self.in_channels = self.graph.num_features
        self.model = GCAModel.from_config(self.in_channels, cfg).to(self.device)
        optimizer = torch.optim.Adam(self.model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
        generator = torch.Generator(device=self.device).manual_seed(cfg.seed)
        self.losses = []
        bar = tqdm(range(cfg.epochs), desc="GCA", unit="epoch", disable=not self.progress, dynamic_ncols=True)
        start = time.perf_counter()
        for epoch in bar:
            loss = train_step(self.model, optimizer, self.graph, self.views, generator)
            if not np.isfinite(loss):
                raise TrainingError(
                    f"the loss became {loss} at epoch {epoch + 1}; lower the learning rate (lr={cfg.lr}) "
                    f"or raise the temperature (tau={cfg.tau})"
                )
            self.losses.append(loss)
            bar.set_postfix(loss=f"{loss:.4f}", refresh=False)
        if self.device.type == "cuda":
            torch.cuda.synchronize()
        self.train_seconds = time.perf_counter() - start
        return self.embed()

    def embed(self, data: Data | Graph | None = None) -> torch.Tensor:
        """Embeddings of ``data`` (default: the training graph) with the trained encoder."""
        if self.model is None:
            raise TrainingError("the model is not trained yet; call fit() first")
        if data is None:
            graph = self.graph
        elif isinstance(data, Graph):
            graph = data.to(self.device)
        else:
            graph = prepare_graph(data, feature_norm=self.config.feature_norm).to(self.device)
        if graph is None:
            raise TrainingError("no graph to embed; pass one")
        if graph.num_features != self.in_channels:
            raise TrainingError(
                f"the graph has {graph.num_features} features but the encoder was trained on {self.in_channels}"
            )
        return embed(self.model, graph).cpu()

    def state(self) -> dict[str, Any]:
        """A checkpoint made of tensors and plain values only (loadable with ``weights_only=True``)."""
        if self.model is None:
            raise TrainingError("the model is not trained yet; call fit() first")
        return {
            "format": "gca-checkpoint-1",
            "config": self.config.to_dict(),
            "in_channels": self.in_channels,
            "model": {k: v.detach().cpu() for k, v in self.model.state_dict().items()},
            "losses": list(self.losses),
        }

    def save(self, path: str | Path) -> None:
        """Write the checkpoint atomically (temporary file, then rename)."""
        path = Path(path)
        tmp = path.with_name(path.name + ".tmp")
        torch.save(self.state(), tmp)
        tmp.replace(path)

    @classmethod
    def load(cls, path: str | Path, device: str = "auto") -> GCA:
        """A trained estimator from :meth:`save`; unpickling of arbitrary objects is refused."""
        try:
            state = torch.load(Path(path), map_location="cpu", weights_only=True)
        except Exception as exc:  # noqa: BLE001 - any unreadable file is the same user error
            raise TrainingError(f"{path} is not a readable gca checkpoint ({type(exc).__name__})") from None
        if not isinstance(state, dict) or state.get("format") != "gca-checkpoint-1":
            raise TrainingError(f"{path} is not a gca checkpoint")
        estimator = cls(GCAConfig(**state["config"]), device=device)
        estimator.in_channels = int(state["in_channels"])
        estimator.model = GCAModel.from_config(estimator.in_channels, estimator.config).to(estimator.device)
        estimator.model.load_state_dict(state["model"])
        estimator.losses = list(state.get("losses", []))
        return estimator
