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
from .io import atomic_write
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
        self._prepared: Graph | None = None  # what prepare() returned last, so fit() on it does not redo it
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
        self._prepared = graph
        return graph

    def fit(
        self,
        data: Data | Graph,
        directed: bool | None = None,
        checkpoint: str | Path | None = None,
        checkpoint_every: int = 0,
        resume: bool = False,
    ) -> torch.Tensor:
        """Train on ``data`` and return the embeddings of its nodes.

        With ``checkpoint`` and ``checkpoint_every = k``, the full training state (weights, Adam's moments, the
        epoch, the losses and every random-number generator state) is written atomically to ``checkpoint``
        every k epochs. ``resume=True`` continues from that file when it exists, and the run then ends exactly
        where an uninterrupted run with the same seed ends. Given the graph that :meth:`prepare` returned, the
        centrality and probabilities computed there are used as they are.
        """
        if data is not self._prepared:
            self.prepare(data, directed)
        assert self.graph is not None and self.views is not None
        cfg = self.config
        if checkpoint_every < 0:
            raise TrainingError(f"checkpoint_every must be non-negative, got {checkpoint_every}")
        seed_everything(cfg.seed)
        self.in_channels = self.graph.num_features
        self.model = GCAModel.from_config(self.in_channels, cfg).to(self.device)
        optimizer = torch.optim.Adam(self.model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
        generator = torch.Generator(device=self.device).manual_seed(cfg.seed)
        self.losses = []
        first_epoch, earlier_seconds = 0, 0.0
        if resume and checkpoint is not None and Path(checkpoint).is_file():
            first_epoch, earlier_seconds = self._restore(load_checkpoint(checkpoint), optimizer, generator)
        bar = tqdm(
            range(first_epoch, cfg.epochs), desc="GCA", unit="epoch", disable=not self.progress, dynamic_ncols=True,
            initial=first_epoch, total=cfg.epochs,
        )  # fmt: skip
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
            if checkpoint is not None and checkpoint_every and (epoch + 1) % checkpoint_every == 0:
                seconds = earlier_seconds + time.perf_counter() - start
                save_checkpoint(checkpoint, self._training_state(optimizer, generator, epoch + 1, seconds))
        if self.device.type == "cuda":
            torch.cuda.synchronize()
        self.train_seconds = earlier_seconds + time.perf_counter() - start
        return self.embed()

    def _training_state(
        self, optimizer: torch.optim.Optimizer, generator: torch.Generator, epoch: int, seconds: float
    ) -> dict[str, Any]:
        state = self.state()
        state.update(
            format=TRAINING_FORMAT,
            epoch=epoch,
            train_seconds=seconds,
            optimizer=optimizer.state_dict(),
            rng={
                "generator": generator.get_state(),
                "torch": torch.get_rng_state(),
                "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
                "python": _python_rng_state(),
                "numpy": _numpy_rng_state(),
            },
        )
        return state

    def _restore(
        self, state: dict[str, Any], optimizer: torch.optim.Optimizer, generator: torch.Generator
    ) -> tuple[int, float]:
        if state.get("format") != TRAINING_FORMAT:
            raise TrainingError("the checkpoint holds a trained model, not a training state; it cannot be resumed")
        saved = state["config"]
        current = self.config.to_dict()
        changed = [k for k in current if k != "epochs" and saved.get(k) != current[k]]
        if changed:
            k = changed[0]
            raise TrainingError(
                f"the checkpoint was made with {k}={saved.get(k)!r} but this run has {k}={current[k]!r}; "
                "resume with the same settings or start without --resume"
            )
        if int(state["in_channels"]) != self.in_channels:
            raise TrainingError(
                f"the checkpoint was trained on {state['in_channels']} features but this graph has {self.in_channels}"
            )
        epoch = int(state["epoch"])
        if epoch > self.config.epochs:
            raise TrainingError(f"the checkpoint is at epoch {epoch}, beyond this run's {self.config.epochs} epochs")
        assert self.model is not None
        self.model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        rng = state["rng"]
        generator.set_state(rng["generator"])
        torch.set_rng_state(rng["torch"])
        if torch.cuda.is_available() and rng["cuda"]:
            torch.cuda.set_rng_state_all(rng["cuda"])
        _set_python_rng_state(rng["python"])
        _set_numpy_rng_state(rng["numpy"])
        self.losses = [float(v) for v in state["losses"]]
        return epoch, float(state.get("train_seconds", 0.0))

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
            "format": MODEL_FORMAT,
            "config": self.config.to_dict(),
            "in_channels": self.in_channels,
            "model": {k: v.detach().cpu() for k, v in self.model.state_dict().items()},
            "losses": list(self.losses),
        }

    def save(self, path: str | Path) -> None:
        """Write the checkpoint atomically (temporary file, then rename)."""
        save_checkpoint(path, self.state())

    @classmethod
    def load(cls, path: str | Path, device: str = "auto") -> GCA:
        """A trained estimator from :meth:`save` (or from a training checkpoint); see :func:`load_checkpoint`."""
        state = load_checkpoint(path)
        try:
            estimator = cls(GCAConfig(**state["config"]), device=device)
            estimator.in_channels = int(state["in_channels"])
            estimator.model = GCAModel.from_config(estimator.in_channels, estimator.config).to(estimator.device)
            estimator.model.load_state_dict(state["model"])
        except (KeyError, TypeError, ValueError, RuntimeError) as exc:
            raise TrainingError(f"{path} is a damaged gca checkpoint ({type(exc).__name__}: {exc})") from None
        estimator.losses = [float(v) for v in state.get("losses", [])]
        return estimator


MODEL_FORMAT = "gca-checkpoint-1"
TRAINING_FORMAT = "gca-training-checkpoint-1"


def save_checkpoint(path: str | Path, state: dict[str, Any]) -> None:
    """``torch.save`` through a temporary file and a rename: a kill leaves the old checkpoint or the new one."""
    atomic_write(path, lambda f: torch.save(state, f))


def load_checkpoint(path: str | Path) -> dict[str, Any]:
    """Read a gca checkpoint with ``torch.load(weights_only=True)``: only tensors and plain Python values are
    unpickled, so a crafted file cannot run code; truncated, foreign or crafted files raise :class:`TrainingError`."""
    path = Path(path)
    if not path.is_file():
        raise TrainingError(f"checkpoint {path} does not exist" if not path.exists() else f"{path} is not a file")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - any unreadable file is the same user error
        text = str(exc)
        if "GLOBAL" in text:  # the unpickler met a reference to code (a class or function) and refused it
            reason = "it refers to Python objects other than tensors and plain values, which are never loaded"
        else:
            reason = f"truncated, or not written by torch.save: {type(exc).__name__}"
        raise TrainingError(f"{path} is not a readable gca checkpoint ({reason}); nothing in it was run") from None
    if not isinstance(state, dict) or state.get("format") not in (MODEL_FORMAT, TRAINING_FORMAT):
        raise TrainingError(f"{path} is not a gca checkpoint (no gca format marker)")
    return state


def _python_rng_state() -> list[Any]:
    version, internal, gauss = random.getstate()
    return [version, list(internal), gauss]


def _set_python_rng_state(state: list[Any]) -> None:
    version, internal, gauss = state
    random.setstate((version, tuple(internal), gauss))


def _numpy_rng_state() -> dict[str, Any]:
    name, keys, pos, has_gauss, cached = np.random.get_state()  # noqa: NPY002 - the legacy RNG seed_everything sets
    return {"name": name, "keys": torch.from_numpy(keys.astype(np.int64)), "pos": int(pos),
            "has_gauss": int(has_gauss), "cached": float(cached)}  # fmt: skip


def _set_numpy_rng_state(state: dict[str, Any]) -> None:
    keys = state["keys"].numpy().astype(np.uint32)
    np.random.set_state((state["name"], keys, state["pos"], state["has_gauss"], state["cached"]))  # noqa: NPY002
