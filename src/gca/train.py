"""Training (Algorithm 1 of Zhu et al., WWW 2021) and the :class:`GCA` estimator that wires its parts together.

Once per graph, :func:`prepare` cleans the graph and computes centrality and both views' removal and masking
probabilities. Then every step of :func:`train` runs, top to bottom (:func:`train_step`):

1. sample two views t, t' ~ T of the batch's graph — kept edges and a feature mask each (:mod:`gca.augment`);
2. build each view's normalised adjacency D̂^{-1/2}(Ã + I)D̂^{-1/2} (:mod:`gca.graph`; other encoders take the
   kept edges, :meth:`gca.model.GCAModel.encode`);
3. embed both views with the shared encoder f (:mod:`gca.encoder`);
4. compute the objective (−J of Eq. 2) on the projections g(·) of the batch's anchors (:mod:`gca.objective`);
5. take one optimiser step.

The loop takes its pieces as parts: a :class:`~gca.batches.BatchSource` (the whole graph every epoch, or sampled
subgraphs), a :class:`~gca.model.GCAModel` (encoder, projection head and objective passed in) and an optimiser.
Checkpoints are written by a hook, :class:`gca.checkpoint.TrainingCheckpoints`.
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

from .augment import ViewAugmentor, build_augmentors
from .batches import Batch, BatchSource, batch_source
from .centrality import node_centrality
from .checkpoint import CheckpointError, TrainingCheckpoints, load_checkpoint, model_state, save_checkpoint
from .collapse import CollapseWatch
from .config import GCAConfig
from .distributed import Placement
from .encoders import check_output_width
from .errors import UserError
from .graph import AdjacencyRows, Graph, dense_input, normalized_adjacency, prepare_graph
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
        h = model.encode(batch.features, edges, batch.num_nodes, view.symmetric, batch.layer_rows,
                         view.sample_feature_mask(generator))  # fmt: skip
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

    Graphs with more than ``chunk_rows`` nodes are embedded over blocks of rows
    (:meth:`gca.encoder.GCNEncoder.forward_in_chunks`), an undirected graph's operator built block by block
    (:class:`gca.graph.AdjacencyRows`), so memory stays about two N × hidden matrices beside the graph.
    """
    model.eval()
    if model.takes_edge_index:
        return model.encode(graph.features, graph.edge_index, graph.num_nodes).detach()
    encoder = model.encoder
    if chunk_rows > 0 and graph.num_nodes > chunk_rows and hasattr(encoder, "forward_in_chunks"):
        rows = (AdjacencyRows(graph.edge_index, graph.num_nodes) if not graph.directed else
                normalized_adjacency(graph.edge_index, graph.num_nodes, symmetric=False, coalesced=True))  # fmt: skip
        return encoder.forward_in_chunks(graph.features, rows, chunk_rows)
    adjacency = normalized_adjacency(graph.edge_index, graph.num_nodes, symmetric=not graph.directed, coalesced=True)
    return model(dense_input(graph.features), adjacency).detach()


def _finite(embeddings: torch.Tensor, lr: float) -> torch.Tensor:
    """``embeddings``, refused when not finite: the last update is checked here, its loss is never computed."""
    # a block of rows at a time: isfinite's temporaries on all of them are 1.6× the embeddings (2 GB at ogbn-products)
    if not all(bool(torch.isfinite(block).all()) for block in embeddings.split(INFERENCE_CHUNK_ROWS)):
        bad = float((~torch.isfinite(embeddings)).float().mean())
        raise TrainingError(f"training ended with non-finite embeddings ({bad:.0%} of the values); lower the learning "
                            f"rate (lr={lr})")  # fmt: skip
    return embeddings


def _model(in_channels: int, config: GCAConfig, objective: torch.nn.Module | None, share: Any,
           encoder: torch.nn.Module | None, graph: Graph, device: torch.device) -> GCAModel:  # fmt: skip
    """The model a run trains, on ``device``; a user's encoder is checked on a few of the graph's nodes first."""
    if encoder is not None:
        check_output_width(encoder.to(device), graph.features.to(device), config.hidden)
    return GCAModel.from_config(in_channels, config, objective, share, encoder).to(device)


def _collapse_watch(config: GCAConfig) -> CollapseWatch:
    """Collapse detection whose message says which of the run's settings to change."""
    return CollapseWatch(advice=f"lower the learning rate (lr={config.lr:g}) or lengthen the warm-up "
                                f"(warmup_steps={config.warmup_updates} now)")  # fmt: skip


class GCA:
    """Self-supervised node embeddings with GCA: ``GCA(GCAConfig(epochs=200)).fit(data)`` (a PyG ``Data``).

    ``fit`` (alias ``fit_transform``) trains ``config.epochs`` epochs and returns every node's embedding (float32, on
    the CPU). Learned state: ``model``, ``in_channels``, ``losses`` (per epoch); timings: ``train_seconds`` (the loop
    only), ``embed_seconds`` (the final inference), ``prepare_seconds``. Replaceable parts: ``objective`` (a module
    ``(u, v) → loss`` in place of Eq. 2's), ``batches(prepared, device)`` (a :class:`~gca.batches.BatchSource`) and
    ``placement`` (:class:`~gca.distributed.Placement`: where this process trains among several).
    """

    def __init__(self, config: GCAConfig | None = None, device: str | torch.device = "auto", progress: bool = False,
                 objective: torch.nn.Module | None = None,
                 batches: Callable[[PreparedGraph, torch.device], BatchSource] | None = None,
                 placement: Placement | None = None, encoder: torch.nn.Module | None = None) -> None:  # fmt: skip
        self.config = config or GCAConfig()
        self.config.validate()
        self.device = placement.device if placement is not None else resolve_device(device)
        self.progress, self.objective, self.batches, self.placement = progress, objective, batches, placement
        self.encoder = encoder  # None: the one config.encoder names (gca.encoders)
        self.model: GCAModel | None = None  # learned state: set by fit or load
        self.in_channels: int | None = None
        self.prepared: PreparedGraph | None = None
        self.losses, self.train_seconds, self.embed_seconds = [], 0.0, 0.0  # per epoch; the loop's; inference's

    graph = property(lambda self: None if self.prepared is None else self.prepared.graph, doc="The graph trained on.")
    prepare_seconds = property(lambda self: 0.0 if self.prepared is None else self.prepared.seconds)

    def prepare(self, data: Data | Graph, directed: bool | None = None) -> PreparedGraph:
        """Clean the graph and compute centrality and both views' probabilities (once per graph)."""
        return prepare(data, self.config, directed)

    def batch_source(self, prepared: PreparedGraph, placement: Placement | None = None) -> BatchSource:
        """``batches`` if given, else :func:`gca.batches.batch_source` for this process's placement."""
        if self.batches is not None:
            return self.batches(prepared, self.device)
        place = placement or self.placement or Placement.joined(self.device)
        return batch_source(prepared.graph, prepared.views, self.config, self.device, place.rank, place.world_size)

    def fit(self, data: Data | Graph | PreparedGraph, directed: bool | None = None,
            checkpoint: str | Path | None = None, checkpoint_every: int = 0, resume: bool = False,
            on_epoch: Callable[[int, Callable[[], torch.Tensor]], None] | None = None) -> torch.Tensor:  # fmt: skip
        """Train on ``data`` and return the embeddings of its nodes.

        ``on_epoch(epoch, embed)`` runs after every epoch (from 1) with a function returning the current embeddings
        of every node (``gca tune`` stops unpromising trials with it). ``checkpoint``, ``checkpoint_every`` and
        ``resume``: periodic training checkpoints and continuing exactly from one (:class:`TrainingCheckpoints`).
        """
        cfg, saves = self.config, TrainingCheckpoints(checkpoint, checkpoint_every, resume)
        self.prepared = data if isinstance(data, PreparedGraph) else self.prepare(data, directed)
        graph, place = self.prepared.graph, self.placement or Placement.joined(self.device)
        fingerprint = graph.fingerprint() if saves.used else ""  # a pass over the graph: only when it is needed
        seed_everything(cfg.seed)
        self.in_channels = graph.num_features
        share = place.objective_share(cfg.batch_size)
        self.model = model = _model(self.in_channels, cfg, self.objective, share, self.encoder, graph, self.device)
        optimizer = torch.optim.Adam(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
        place.attach(optimizer, cfg.batch_size)
        generator = torch.Generator(device=self.device).manual_seed(cfg.seed)
        source = self.batch_source(self.prepared, place)
        self.losses = saves.restore(cfg.to_dict(), self.in_channels, fingerprint, model, optimizer, generator, source)

        def after_epoch(epoch: int, losses: list[float]) -> None:
            self.losses[saves.first_epoch :] = losses
            saves.after_epoch(epoch, self.state, optimizer, generator, fingerprint, source)
            if on_epoch is not None:
                on_epoch(epoch, lambda: encode_graph(model, graph.to(self.device)).cpu())

        self.losses[saves.first_epoch :] = train(
            model, optimizer, source, cfg.epochs, generator, saves.first_epoch, after_epoch, self.progress,
            learning_rate=warmup_schedule(cfg.lr, cfg.warmup_updates), collapse=_collapse_watch(cfg))  # fmt: skip
        source = None  # a sampler's arrays are not needed for inference
        if self.device.type == "cuda":
            torch.cuda.synchronize()
        self.train_seconds = saves.seconds
        start = time.perf_counter()
        embeddings = _finite(encode_graph(model, graph.to(self.device)).cpu(), cfg.lr)
        self.embed_seconds = time.perf_counter() - start
        return embeddings

    def fit_transform(self, data: Data | Graph | PreparedGraph, directed: bool | None = None, **kwargs) -> torch.Tensor:
        """scikit-learn's name for :meth:`fit`, which already returns the embeddings of ``data``'s nodes."""
        return self.fit(data, directed, **kwargs)

    def embed(self, data: Data | Graph | None = None) -> torch.Tensor:
        """Embeddings of ``data`` (default: the training graph) with the trained encoder."""
        if self.model is None or (data is None and self.graph is None):
            untrained = self.model is None
            raise TrainingError("the model is not trained yet; call fit() first" if untrained else "no graph to embed")
        data = self.graph if data is None else data
        graph = data if isinstance(data, Graph) else prepare_graph(data, feature_norm=self.config.feature_norm)
        if graph.num_features != self.in_channels:
            raise TrainingError(f"the graph has {graph.num_features} features but the encoder was trained on "
                                f"{self.in_channels}")  # fmt: skip
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
    def load(cls, path: str | Path, device: str = "auto", encoder: torch.nn.Module | None = None) -> GCA:
        """A trained estimator from :meth:`save` (or a training checkpoint; :func:`load_checkpoint`); a model
        trained with a user's ``encoder`` loads into a fresh instance of it."""
        state = load_checkpoint(path)
        try:
            estimator = cls(GCAConfig.from_saved(state["config"]), device=device, encoder=encoder)
            estimator.in_channels = int(state["in_channels"])
            model = GCAModel.from_weights(state["model"], estimator.in_channels, estimator.config, encoder)
        except (KeyError, TypeError, ValueError, RuntimeError, UserError) as exc:
            raise CheckpointError(f"{path} is a damaged gca checkpoint ({type(exc).__name__}: {exc})") from None
        estimator.model, estimator.losses = model.to(estimator.device), [float(v) for v in state.get("losses", [])]
        return estimator
