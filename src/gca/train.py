"""Training (Algorithm 1 of Zhu et al., WWW 2021) and the :class:`GCA` estimator that wires its parts together.

Once per graph, :func:`prepare` cleans the graph and computes centrality and both views' removal and masking
probabilities. Then every step of :func:`train` runs, top to bottom (:func:`train_step`):

1. sample two views t, t' ~ T of the batch's graph — kept edges and a feature mask each (:mod:`gca.augment`);
2. build each view's normalised adjacency D̂^{-1/2}(Ã + I)D̂^{-1/2} (:mod:`gca.graph`);
3. embed both views with the shared encoder f (:mod:`gca.encoder`);
4. compute the objective (−J of Eq. 2) on the projections g(·) of the batch's anchors (:mod:`gca.objective`);
5. take one optimiser step.

The loop takes its pieces as parts: a :class:`~gca.batches.BatchSource` (the whole graph every epoch, or sampled
subgraphs), a :class:`~gca.model.GCAModel` (encoder, projection head and objective passed in) and an optimiser.
Checkpoints are written by a hook, in the format of :mod:`gca.checkpoint`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch_geometric import seed_everything
from torch_geometric.data import Data

from . import distributed
from .augment import ViewAugmentor, build_augmentors
from .batches import Batch, BatchSource, FullGraphBatches, NeighborBatches
from .centrality import node_centrality
from .checkpoint import (
    CheckpointError,
    check_resumable,
    load_checkpoint,
    model_state,
    restore_training_state,
    save_checkpoint,
    training_state,
)
from .collapse import CollapseWatch
from .config import GCAConfig
from .errors import UserError
from .graph import Graph, layered_normalized_adjacency, normalized_adjacency, prepare_graph
from .model import GCAModel
from .progress import Progress


class TrainingError(UserError, RuntimeError):
    """Training cannot go on (e.g. the loss diverged); the message is one line meant for the user."""


class CollapseError(TrainingError):
    """Training collapsed: the loss sat at its value for uniform similarities (:mod:`gca.collapse`)."""


def resolve_device(device: str | torch.device = "auto") -> torch.device:
    """``auto`` → CUDA when available, else CPU. ``cpu``, ``cuda``, ``cuda:N`` and ``mps`` are accepted where this
    machine has them; any other name — even one PyTorch knows, such as ``meta`` — is an error naming the choices."""
    if str(device) == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(device)
    except (RuntimeError, TypeError, ValueError):
        raise TrainingError(f"unknown device {device!r}; use auto, cpu, cuda or cuda:N") from None
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise TrainingError(f"--device {device} was requested but no CUDA device is available; use --device cpu")
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise TrainingError(
                f"--device {device}: this machine has {torch.cuda.device_count()} CUDA device(s), numbered from 0"
            )
    elif device.type == "mps":
        if not (getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()):
            raise TrainingError("--device mps was requested but Apple's MPS backend is not available; use cpu")
    elif device.type != "cpu" or device.index not in (None, 0):
        raise TrainingError(f"device {str(device)!r} cannot train gca; use auto, cpu, cuda or cuda:N")
    return device


@dataclass
class PreparedGraph:
    """What GCA computes once per graph: the cleaned graph, node centrality (``None`` for uniform augmentation)
    and the two view samplers with their per-edge and per-feature probabilities."""

    graph: Graph
    centrality: torch.Tensor | None
    views: tuple[ViewAugmentor, ViewAugmentor]
    seconds: float = 0.0


def prepare(data: Data | Graph, config: GCAConfig, directed: bool | None = None) -> PreparedGraph:
    """Clean ``data`` (unless it is a :class:`Graph` already) and compute centrality and both views' probabilities."""
    start = time.perf_counter()
    graph = data if isinstance(data, Graph) else prepare_graph(data, directed, config.feature_norm)
    adaptive = config.centrality != "uniform" and "adaptive" in (config.edge_drop, config.feature_mask)
    centrality = None
    if adaptive:
        centrality = node_centrality(config.centrality, graph.edge_index, graph.num_nodes, graph.directed)
    views = build_augmentors(
        graph, centrality, (config.p_e1, config.p_e2), (config.p_f1, config.p_f2), config.p_tau,
        edge_drop=config.edge_drop, feature_mask=config.feature_mask, edge_scheme=config.edge_scheme,
        feature_weighting=config.feature_weighting,
    )  # fmt: skip
    return PreparedGraph(graph, centrality, views, time.perf_counter() - start)


def train_step(model: GCAModel, optimizer: torch.optim.Optimizer, batch: Batch, generator: torch.Generator) -> float:
    """One iteration of Algorithm 1 on ``batch``; returns the objective's value before the update."""
    model.train()
    embeddings = []
    for view in batch.views:
        edges = view.sample_edges(generator)
        if batch.layer_rows is not None:  # a sampled subgraph: each layer only where its output is read
            adjacency = layered_normalized_adjacency(edges, batch.num_nodes, batch.layer_rows)
        else:
            adjacency = normalized_adjacency(edges, batch.num_nodes, symmetric=view.symmetric)
        h = model(batch.features, adjacency, view.sample_feature_mask(generator))
        embeddings.append(h if batch.anchors is None else h[batch.anchors])
    loss = model.loss(*embeddings)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    return float(loss.detach())


def train(
    model: GCAModel,
    optimizer: torch.optim.Optimizer,
    source: BatchSource,
    epochs: int,
    generator: torch.Generator,
    first_epoch: int = 0,
    after_epoch: Callable[[int, list[float]], None] | None = None,
    progress: bool = False,
    learning_rate: Callable[[int], float] | None = None,
    collapse: CollapseWatch | None = None,
) -> list[float]:
    """Epochs ``first_epoch … epochs − 1`` of Algorithm 1; returns each epoch's mean loss over its batches.

    ``after_epoch(finished_epochs, losses)`` runs after every epoch (checkpoints); ``learning_rate(t)`` sets the
    optimiser's rate before update t (the warm-up; t is the optimiser's own count, so a resumed run follows the
    same schedule). A loss that is not finite stops training with a :class:`TrainingError`,
    and one that sits at its value for uniform similarities — collapse, watched by ``collapse`` (default
    :class:`~gca.collapse.CollapseWatch`) when the objective knows that value — with a :class:`CollapseError`.
    """
    losses: list[float] = []
    uniform = getattr(model.objective, "uniform_loss", None)
    collapse = collapse or CollapseWatch()
    bar = Progress(epochs, "GCA", "epoch", enabled=progress, initial=first_epoch)
    for epoch in range(first_epoch, epochs):
        step_losses, flat_values = [], []
        for batch in source.batches(epoch, generator):
            if learning_rate is not None:
                rate = learning_rate(updates_taken(optimizer))
                for group in optimizer.param_groups:
                    group["lr"] = rate
            step_losses.append(train_step(model, optimizer, batch, generator))
            if uniform is not None:
                flat_values.append(uniform(batch.num_nodes if batch.anchors is None else len(batch.anchors)))
        loss = float(np.mean(step_losses))
        if not np.isfinite(loss):
            raise TrainingError(f"the loss became {loss} at epoch {epoch + 1}; lower the learning rate or raise tau")
        if uniform is not None:
            gaps = [step - flat for step, flat in zip(step_losses, flat_values, strict=True)]
            message = collapse.update(epoch + 1, gaps, flat_values[0])
            if message:
                bar.close()
                raise CollapseError(message)
        losses.append(loss)
        bar.update(loss=f"{loss:.4f}")
        if after_epoch is not None:
            after_epoch(epoch + 1, losses)
    bar.close()
    return losses


def warmup_schedule(lr: float, warmup_steps: int) -> Callable[[int], float] | None:
    """The learning rate of update t (from 0): rising linearly to ``lr`` over the first ``warmup_steps`` updates,
    then constant — or ``None`` (Adam at ``lr`` throughout, as Algorithm 1) when ``warmup_steps`` is 0 or 1."""
    if warmup_steps <= 1:
        return None
    return lambda step: lr * min(1.0, (step + 1) / warmup_steps)


def updates_taken(optimizer: torch.optim.Optimizer) -> int:
    """How many updates ``optimizer`` has made — Adam's own step count, which checkpoints carry, so a resumed run
    continues a schedule keyed on it exactly."""
    for state in optimizer.state.values():
        if "step" in state:
            return int(state["step"])
    return 0


#: Inference processes graphs larger than this many nodes in chunks of this many rows (see :func:`encode_graph`).
INFERENCE_CHUNK_ROWS = 65_536


@torch.no_grad()
def encode_graph(model: GCAModel, graph: Graph, chunk_rows: int = INFERENCE_CHUNK_ROWS) -> torch.Tensor:
    """Frozen embeddings H = f(X, A) of ``graph`` (no augmentation, eval mode, no autograd), on the model's device.

    Graphs with more than ``chunk_rows`` nodes are embedded layer by layer over chunks of rows, so memory stays
    about two of one layer's activations (:meth:`gca.encoder.GCNEncoder.forward_in_chunks`).
    """
    model.eval()
    adjacency = normalized_adjacency(graph.edge_index, graph.num_nodes, symmetric=not graph.directed, coalesced=True)
    encoder = model.encoder
    if chunk_rows > 0 and graph.num_nodes > chunk_rows and hasattr(encoder, "forward_in_chunks"):
        return encoder.forward_in_chunks(graph.features, adjacency, chunk_rows)
    return model(graph.features, adjacency).detach()


def _check_weights(weights: Any, in_channels: int, config: GCAConfig) -> None:
    """Refuse weights whose names or shapes are not those of the model ``config`` describes — compared on PyTorch's
    meta device, so a file whose config claims a huge width costs nothing before it is refused."""
    if not isinstance(weights, dict) or not all(isinstance(v, torch.Tensor) for v in weights.values()):
        raise TypeError("its 'model' entry is not a table of tensors")
    if in_channels < 1:
        raise ValueError(f"in_channels is {in_channels}")
    with torch.device("meta"):
        expected = {k: tuple(v.shape) for k, v in GCAModel.from_config(in_channels, config).state_dict().items()}
    found = {k: tuple(v.shape) for k, v in weights.items()}
    for name in sorted(set(expected) | set(found)):
        if expected.get(name) != found.get(name):
            raise ValueError(f"its config needs {name} of shape {expected.get(name)}, the file holds {found.get(name)}")


class GCA:
    """Self-supervised node embeddings with GCA.

    >>> from gca import GCA, GCAConfig
    >>> embeddings = GCA(GCAConfig(epochs=200)).fit(data)   # data: torch_geometric.data.Data  # doctest: +SKIP

    ``fit`` prepares the graph (or takes what :meth:`prepare` returned), trains for ``config.epochs`` epochs and
    returns the embeddings of every node (a float32 tensor on the CPU). ``losses`` holds the loss per epoch,
    ``train_seconds`` the time spent in the training loop only and ``embed_seconds`` the final inference's.

    Parts can be replaced without touching the loop: ``objective`` (a module ``(u, v) → loss``) takes the place
    of Eq. 2's, and ``batches(prepared, device)`` returns the :class:`~gca.batches.BatchSource` to train on.
    """

    def __init__(
        self,
        config: GCAConfig | None = None,
        device: str = "auto",
        progress: bool = False,
        objective: torch.nn.Module | None = None,
        batches: Callable[[PreparedGraph, torch.device], BatchSource] | None = None,
    ) -> None:
        self.config = config or GCAConfig()
        self.config.validate()
        self.device = resolve_device(device)
        self.progress = progress
        self.objective = objective  # None: the paper's objective (ContrastiveObjective with the config's tau)
        self.batches = batches  # None: the whole graph every epoch (FullGraphBatches)
        self.model: GCAModel | None = None
        self.in_channels: int | None = None
        self.prepared: PreparedGraph | None = None
        self.losses: list[float] = []
        self.train_seconds = 0.0
        self.embed_seconds = 0.0  # inference of all nodes' embeddings after training

    @property
    def graph(self) -> Graph | None:
        """The graph trained on (after :meth:`fit`)."""
        return None if self.prepared is None else self.prepared.graph

    @property
    def prepare_seconds(self) -> float:
        return 0.0 if self.prepared is None else self.prepared.seconds

    def prepare(self, data: Data | Graph, directed: bool | None = None) -> PreparedGraph:
        """Clean the graph and compute centrality and both views' probabilities (once per graph)."""
        return prepare(data, self.config, directed)

    def batch_source(self, prepared: PreparedGraph) -> BatchSource:
        """Where training batches come from: ``batches`` if given; else sampled subgraphs when the config sets a
        ``batch_size`` (this process's share of them under torchrun); else the whole graph, on this device."""
        if self.batches is not None:
            return self.batches(prepared, self.device)
        views = (prepared.views[0].to(self.device), prepared.views[1].to(self.device))
        cfg = self.config
        if cfg.batch_size:
            rank, world_size = distributed.place()
            return NeighborBatches(prepared.graph.to(self.device), views, cfg.batch_size, cfg.fanouts,
                                   cfg.steps_per_epoch, cfg.seed, rank, world_size)  # fmt: skip
        return FullGraphBatches(prepared.graph.to(self.device), views)

    def fit(
        self,
        data: Data | Graph | PreparedGraph,
        directed: bool | None = None,
        checkpoint: str | Path | None = None,
        checkpoint_every: int = 0,
        resume: bool = False,
        on_epoch: Callable[[int, Callable[[], torch.Tensor]], None] | None = None,
    ) -> torch.Tensor:
        """Train on ``data`` and return the embeddings of its nodes.

        ``on_epoch(epoch, embed)`` runs after every epoch (numbered from 1) with a function that returns the
        current embeddings of every node — for validation during training (``gca tune`` stops unpromising
        trials with it); an exception it raises ends training.

        With ``checkpoint`` and ``checkpoint_every = k``, the full training state is written atomically to
        ``checkpoint`` every k epochs (:mod:`gca.checkpoint`). ``resume=True`` continues from that file when it
        exists, and the run then ends exactly where an uninterrupted run with the same seed ends; a checkpoint
        made with other settings or on another graph is refused.
        """
        if checkpoint_every < 0:
            raise TrainingError(f"checkpoint_every must be non-negative, got {checkpoint_every}")
        cfg = self.config
        self.prepared = data if isinstance(data, PreparedGraph) else self.prepare(data, directed)
        graph = self.prepared.graph
        # hashing the graph costs a pass over its edges and features: only when checkpoints are written or read
        fingerprint = graph.fingerprint() if checkpoint is not None and (checkpoint_every or resume) else ""
        seed_everything(cfg.seed)
        self.in_channels = graph.num_features
        self.model = model = GCAModel.from_config(self.in_channels, cfg, self.objective).to(self.device)
        optimizer = torch.optim.Adam(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
        generator = torch.Generator(device=self.device).manual_seed(cfg.seed)
        source = self.batch_source(self.prepared)
        world_size = distributed.place()[1]
        if world_size > 1 and cfg.batch_size:  # data parallel: each process its own anchors
            distributed.average_gradients(optimizer, world_size)
        self.losses, first_epoch, earlier_seconds = [], 0, 0.0
        if resume and checkpoint is not None and Path(checkpoint).is_file():
            state = load_checkpoint(checkpoint)
            check_resumable(state, cfg.to_dict(), self.in_channels, fingerprint)
            restore_training_state(state, model, optimizer, generator)
            try:
                source.load_state_dict(state["batches"])
            except (KeyError, TypeError, ValueError) as exc:
                raise CheckpointError(f"cannot resume from {checkpoint}: {exc}") from None
            self.losses = [float(v) for v in state["losses"]]
            first_epoch, earlier_seconds = int(state["epoch"]), float(state["train_seconds"])
        start = time.perf_counter()

        def after_epoch(epoch: int, losses: list[float]) -> None:
            save(epoch, losses)
            if on_epoch is not None:
                on_epoch(epoch, lambda: encode_graph(model, graph.to(self.device)).cpu())

        def save(epoch: int, losses: list[float]) -> None:
            if checkpoint is not None and checkpoint_every and epoch % checkpoint_every == 0:
                seconds = earlier_seconds + time.perf_counter() - start
                self.losses[first_epoch:] = losses
                state = training_state(self.state(), optimizer, generator, epoch, seconds, fingerprint,
                                       source.state_dict())  # fmt: skip
                save_checkpoint(checkpoint, state)

        warmup = cfg.warmup_updates
        advice = f"lower the learning rate (lr={cfg.lr:g}) or lengthen the warm-up (warmup_steps={warmup} now)"
        losses = train(model, optimizer, source, cfg.epochs, generator, first_epoch, after_epoch, self.progress,
                       learning_rate=warmup_schedule(cfg.lr, warmup),
                       collapse=CollapseWatch(advice=advice))  # fmt: skip
        self.losses[first_epoch:] = losses
        source = None  # a sampler's arrays are not needed for inference
        if self.device.type == "cuda":
            torch.cuda.synchronize()
        self.train_seconds = earlier_seconds + time.perf_counter() - start
        start = time.perf_counter()
        embeddings = encode_graph(model, graph.to(self.device)).cpu()
        self.embed_seconds = time.perf_counter() - start
        if not torch.isfinite(embeddings).all():  # the last update is checked here: its loss is never computed
            bad = float((~torch.isfinite(embeddings)).float().mean())
            raise TrainingError(
                f"training ended with non-finite embeddings ({bad:.0%} of the values); lower the learning rate "
                f"(lr={cfg.lr})"
            )
        return embeddings

    def fit_transform(self, data: Data | Graph | PreparedGraph, directed: bool | None = None, **kwargs) -> torch.Tensor:
        """scikit-learn's name for :meth:`fit`, which already returns the embeddings of ``data``'s nodes."""
        return self.fit(data, directed, **kwargs)

    def embed(self, data: Data | Graph | None = None) -> torch.Tensor:
        """Embeddings of ``data`` (default: the training graph) with the trained encoder."""
        if self.model is None:
            raise TrainingError("the model is not trained yet; call fit() first")
        if data is None:
            if self.graph is None:
                raise TrainingError("no graph to embed; pass one")
            data = self.graph
        graph = data if isinstance(data, Graph) else prepare_graph(data, feature_norm=self.config.feature_norm)
        if graph.num_features != self.in_channels:
            raise TrainingError(
                f"the graph has {graph.num_features} features but the encoder was trained on {self.in_channels}"
            )
        return encode_graph(self.model, graph.to(self.device)).cpu()

    def state(self) -> dict:
        """A model checkpoint made of tensors and plain values only (loadable with ``weights_only=True``)."""
        if self.model is None:
            raise TrainingError("the model is not trained yet; call fit() first")
        return model_state(self.config.to_dict(), self.in_channels, self.model, self.losses)

    def save(self, path: str | Path) -> None:
        """Write the model checkpoint atomically (temporary file, then rename)."""
        save_checkpoint(path, self.state())

    @classmethod
    def load(cls, path: str | Path, device: str = "auto") -> GCA:
        """A trained estimator from :meth:`save` (or from a training checkpoint); see :func:`load_checkpoint`."""
        state = load_checkpoint(path)
        try:
            config, in_channels = GCAConfig(**state["config"]), int(state["in_channels"])
            _check_weights(state["model"], in_channels, config)  # before anything of the claimed size is built
            estimator = cls(config, device=device)
            estimator.in_channels = in_channels
            estimator.model = GCAModel.from_config(in_channels, config).to(estimator.device)
            estimator.model.load_state_dict(state["model"])
        except (KeyError, TypeError, ValueError, RuntimeError, UserError) as exc:
            raise CheckpointError(f"{path} is a damaged gca checkpoint ({type(exc).__name__}: {exc})") from None
        estimator.losses = [float(v) for v in state.get("losses", [])]
        return estimator
