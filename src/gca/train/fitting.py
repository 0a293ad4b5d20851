"""The parts of a :class:`~gca.train.estimator.GCA` fit outside the estimator's own methods: checks of the parts a
user passes in, the model and its training settings, the training of a prepared graph, the checks of its final
embeddings, whether a fit is kept in memory, and a model read back from its file."""

from __future__ import annotations

import contextlib
import copy
import inspect
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch_geometric import seed_everything
from torch_geometric.data import Data

from ..augment.prepared import PreparedGraph
from ..config import ConfigError, GCAConfig
from ..errors import UserError
from ..graph.features import all_zero, identical_rows
from ..graph.graph import Graph
from ..logger_protocol import LOG, close_loggers
from ..mapped import trim_heap
from ..nn.encoders import check_encoder
from ..nn.model import GCAModel
from ..objective.collapse import CollapseWatch, likely_cause
from ..provenance import fit_record, utc_now
from .checkpoint import CheckpointError, TrainingCheckpoints, WarmStart, load_checkpoint, load_initial_weights
from .compiled import CompiledParts
from .distributed import Placement
from .fit_cache import memory_folder
from .inference import INFERENCE_CHUNK_ROWS, encode_graph, in_blocks
from .loop import CollapseError, TrainingError, train, warmup_schedule

log = LOG.getChild("train.estimator")


def _finite(embeddings: torch.Tensor, lr: float) -> torch.Tensor:
    """``embeddings``, refused when not finite: the last update is checked here, its loss is never computed."""
    # a block of rows at a time: no temporary of isfinite's on all of them
    if not all(bool(torch.isfinite(block).all()) for block in embeddings.split(INFERENCE_CHUNK_ROWS)):
        bad = float((~torch.isfinite(embeddings)).float().mean())
        raise TrainingError(
            f"training ended with non-finite embeddings ({bad:.0%} of the values); lower the learning rate (lr={lr})"
        )
    return embeddings


def _not_constant(embeddings: torch.Tensor, graph: Graph, config: GCAConfig) -> torch.Tensor:
    """``embeddings``, unless every node's is the same (to float32's resolution): then a :class:`CollapseError`.
    The loss watch misses this where the views differ but the graph tells no nodes apart (identical features on a
    regular graph): augmentation keeps the loss off log(2N − 1), yet the unaugmented graph embeds all nodes alike."""
    if embeddings.shape[0] < 2:
        return embeddings
    first, spread, largest = embeddings[:1], 0.0, 1e-30  # a block at a time: no N × d temporary
    for block in embeddings.split(INFERENCE_CHUNK_ROWS):
        spread = max(spread, float((block - first).abs().max()))
        largest = max(largest, float(block.abs().max()))
    if spread > 1e-6 * largest:
        return embeddings
    zero = all_zero(graph.features)
    cause = likely_cause(config.lr, config.weight_decay, zero, "", not zero and identical_rows(graph.features))
    if cause.startswith("lower the learning rate"):  # no setting at fault: the graph is what holds nothing
        cause = (
            "likely cause: no node differs from another in its features and neighbourhood as the encoder sees "
            "them (e.g. identical features on a regular graph); train on features that differ between nodes"
        )
    log.warning("training collapsed: every node's embedding is the same")
    raise CollapseError(f"training collapsed: every node's embedding is the same, so they carry no signal; {cause}")


def initial_copy(part: Any, what: str) -> Any:
    """A deep copy of a user's part as it is now (a module's on the CPU): the state every ``fit`` starts from."""
    if part is None:
        return None
    try:
        kept = copy.deepcopy(part)
    except Exception as exc:  # whatever the module holds that cannot be copied; one line for the user
        reason = str(exc).splitlines()[0] if str(exc) else ""
        raise ConfigError(
            f"the {what} {type(part).__name__} cannot be copied with copy.deepcopy ({type(exc).__name__}"
            f": {reason}); GCA trains a copy of it and keeps its initial weights"
        ) from None
    return kept.cpu() if isinstance(kept, torch.nn.Module) else kept


def fresh(initial: Any) -> Any:
    """A copy of a kept initial part to train (``None`` stays ``None``)."""
    return None if initial is None else copy.deepcopy(initial)


def _model(
    in_channels: int,
    config: GCAConfig,
    objective: torch.nn.Module | None,
    share: Any,
    encoder: torch.nn.Module | None,
    graph: Graph,
    device: torch.device,
) -> GCAModel:
    """The model a run trains, on ``device``; a user's encoder is checked on a few of the graph's nodes first."""
    if encoder is not None:
        check_encoder(encoder.to(device), graph.features.to(device), config.hidden, graph.edge_index)
    return GCAModel.from_config(in_channels, config, objective, share, encoder, edge_dim=graph.edge_dim).to(device)


def _update_precision(objective: torch.nn.Module, config: GCAConfig, device: torch.device) -> str:
    """What every update's forward pass computes in (:func:`gca.precision.update_precision`): the precision the
    objective resolves on ``device`` (``auto`` as :func:`~gca.objective.resolve_objective` makes it); for a user's
    objective that does not say, the config's ``precision``, fp32 under ``auto``."""
    if hasattr(objective, "resolved"):
        return objective.resolved(device)[1]
    return "fp32" if config.precision == "auto" else config.precision


def check_parts(config: Any, placement: Any, objective: Any, batches: Any, encoder: Any) -> None:
    """The constructor's arguments of a kind :class:`GCA` can use, or a :class:`ConfigError` naming the first that
    is not (scikit-learn's searches set them by name; a wrong kind would otherwise fail deep inside ``fit``)."""
    if config is not None and not isinstance(config, GCAConfig):
        raise ConfigError(f"config must be a GCAConfig (or None for the defaults), got {config!r}")
    if placement is not None and not isinstance(placement, Placement):
        raise ConfigError(f"placement must be a gca.train.Placement (or None), got {placement!r}")
    if encoder is not None and not isinstance(encoder, torch.nn.Module):
        named = "; a built-in encoder is chosen by name with config__encoder=…" if isinstance(encoder, str) else ""
        raise ConfigError(f"encoder must be a torch.nn.Module (or None){named}, got {encoder!r}")
    for name, part in (("objective", objective), ("batches", batches)):
        if part is not None and not callable(part):
            raise ConfigError(f"{name} must be callable (or None), got {part!r}")


def _takes_loss(hook: Callable[..., Any]) -> bool:
    """Whether the ``on_epoch`` hook takes the loss: a parameter named ``loss`` (or ``**kwargs``)."""
    try:
        parameters = inspect.signature(hook).parameters.values()
    except (TypeError, ValueError):  # a callable Python cannot inspect: called with two arguments
        return False
    return any(p.kind == p.VAR_KEYWORD or (p.name == "loss" and p.kind != p.POSITIONAL_ONLY) for p in parameters)


def feature_names(data: Any, width: int) -> list[str] | None:
    """The feature columns' names a ``Data`` carries (``data.feature_names``, as :func:`gca.datasets.load_files` sets
    them), checked against its ``width`` columns; ``None`` for none."""
    names = getattr(data, "feature_names", None) if isinstance(data, Data) else None
    if names is None:
        return None
    if not isinstance(names, (list, tuple)) or not all(isinstance(name, str) for name in names):
        raise ConfigError(
            f"data.feature_names must be a list of the feature columns' names, got "
            f"{type(names).__name__}; give one name per column, or delete the attribute"
        )
    if len(names) != width:
        raise ConfigError(
            f"data.feature_names has {len(names)} feature names for {width} feature columns; give one "
            "name per column, or delete the attribute"
        )
    return list(names)


def _collapse_watch(config: GCAConfig) -> CollapseWatch:
    """Collapse detection whose message says which of the run's settings to change."""
    return CollapseWatch(
        advice=f"lower the learning rate (lr={config.lr:g}) or lengthen the warm-up "
        f"(warmup_steps={config.warmup_updates} now)"
    )


def memory_for(estimator: Any, X: Any, options: dict[str, Any]) -> Path | None:
    """The folder this fit reads its model from and keeps it in (:mod:`gca.train.fit_cache`), or ``None``: none
    was given, or this fit cannot be keyed — then a ``UserWarning`` says why, and it trains."""
    memory = memory_folder(estimator.memory)
    if memory is None:
        return None
    parts = [name for name in ("encoder", "objective", "batches", "placement") if getattr(estimator, name) is not None]
    given = [name for name, value in options.items() if value]
    why = ""
    if parts:
        why = f"your own {' and '.join(parts)} cannot be keyed (its code is no part of the key)"
    elif estimator.loggers:
        why = "its loggers get the metrics of a training"
    elif isinstance(X, (Graph, PreparedGraph)):
        why = f"a {type(X).__name__} may carry features or views of other settings than the estimator's; give the Data"
    elif given:
        why = f"{' and '.join(given)} watch or write a training"
    if not why:
        return memory
    warnings.warn(f"GCA's memory is not used for this fit, which trains: {why}", UserWarning, stacklevel=3)
    return None


def fit_estimator(
    estimator: Any,
    saves: TrainingCheckpoints,
    started: str,
    on_epoch: Callable[..., None] | None,
    embeddings_file: str | Path | None,
    scratch: str | Path | None,
    on_update: Callable[[int, int | None], None] | None,
    init_from: str | Path | WarmStart | None = None,
) -> Any:
    """:meth:`~gca.train.estimator.GCA.fit`'s training of ``estimator.prepared``, and its final embeddings."""
    cfg = estimator.config
    graph, place = estimator.prepared.graph, estimator.placement or Placement.joined(estimator.device)
    fingerprint = saves.fingerprint(graph)  # a pass over the graph: only when it is needed
    seed_everything(cfg.seed)
    estimator.in_channels = graph.num_features
    share = place.objective_share(cfg.batch_size)
    encoder, objective = fresh(estimator._initial_encoder), fresh(estimator._initial_objective)
    estimator.model = model = _model(estimator.in_channels, cfg, objective, share, encoder, graph, estimator.device)
    if init_from is not None:
        load_initial_weights(init_from, model, estimator.in_channels)
    optimizer = torch.optim.Adam(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    place.attach(optimizer, cfg.batch_size)
    generator = torch.Generator(device=estimator.device).manual_seed(cfg.seed)
    source = estimator.batch_source(estimator.prepared, place)
    estimator.losses = saves.restore(
        cfg.to_dict(), estimator.in_channels, fingerprint, model, optimizer, generator, source
    )
    estimator.provenance = fit_record(
        estimator.device, started
    )  # a training checkpoint's: "finished" once training ends
    with_loss = on_epoch is not None and _takes_loss(on_epoch)
    log.info(
        "training on %d nodes, %d features: epochs %d to %d on %s",
        graph.num_nodes,
        estimator.in_channels,
        saves.first_epoch + 1,
        cfg.epochs,
        estimator.device,
    )

    def after_epoch(epoch: int, losses: list[float]) -> None:
        estimator.losses[saves.first_epoch :] = losses
        saves.after_epoch(epoch, estimator.state, optimizer, generator, fingerprint, source)
        if on_epoch is None:
            return
        if with_loss:
            on_epoch(epoch, embed, loss=losses[-1])
        else:
            on_epoch(epoch, embed)

    compiled = CompiledParts(model) if cfg.compile == "on" else None

    def embed() -> torch.Tensor:
        with compiled.paused() if compiled is not None else contextlib.nullcontext():
            return encode_graph(model, graph.to(estimator.device)).cpu()

    if cfg.precision == "auto":
        place.settle_precision()  # every process trains in the first one's choice
    try:
        estimator.losses[saves.first_epoch :] = train(
            model,
            optimizer,
            source,
            cfg.epochs,
            generator,
            saves.first_epoch,
            after_epoch,
            estimator.progress,
            learning_rate=warmup_schedule(cfg.lr, cfg.warmup_updates),
            collapse=_collapse_watch(cfg),
            loggers=estimator.loggers,
            on_update=on_update,
            precision=_update_precision(model.objective, cfg, estimator.device),
            compiled=compiled,
        )
    except BaseException:
        with contextlib.suppress(Exception):  # the training's own error is the one the user sees
            close_loggers(estimator.loggers)
        raise
    finally:
        if compiled is not None:
            compiled.restore()  # inference, pickles and copies see the eager model
    close_loggers(estimator.loggers)
    source = None  # a sampler's arrays are not needed for inference
    trim_heap()  # and what training freed goes back to the kernel before inference maps its matrices
    if estimator.device.type == "cuda":
        torch.cuda.synchronize()
    estimator.train_seconds = saves.seconds
    estimator.provenance = fit_record(estimator.device, started, utc_now())
    start = time.perf_counter()
    estimator.embed_processes_ = place.world_size if in_blocks(model, graph.num_nodes) else 1
    embedded = encode_graph(
        model,
        graph.to(estimator.device),
        out=embeddings_file,
        share=place.row_share(),
        scratch=scratch,
        progress=estimator.progress,
    )
    estimator.embedding_file_ = Path(embeddings_file) if embeddings_file and Path(embeddings_file).is_file() else None
    # under torchrun a graph embedded by blocks of rows is embedded by all processes together, and its
    # embeddings are rank 0's alone: the others hold None
    estimator.embedding_ = None if embedded is None else _not_constant(_finite(embedded.cpu(), cfg.lr), graph, cfg)
    estimator.embed_seconds = time.perf_counter() - start
    log.info(
        "trained in %.3f s, embedded %d nodes in %.3f s",
        estimator.train_seconds,
        graph.num_nodes,
        estimator.embed_seconds,
    )
    return estimator


def load_estimator(cls: type, path: str | Path, device: str, encoder: torch.nn.Module | None) -> Any:
    """A trained ``cls`` read from the model file ``path`` (:meth:`~gca.train.estimator.GCA.load`)."""
    state = load_checkpoint(path)
    user = state.get("user_encoder")
    if user and encoder is None:
        raise CheckpointError(
            f"{path} holds a model trained with your own encoder ({user}); load it in Python "
            f"with GCA.load(path, encoder=<a new {user.rsplit('.', 1)[-1]} of the same "
            "shape>)"
        )
    initial = initial_copy(encoder, "encoder")  # a module that cannot be copied is no fault of the file's
    try:
        estimator = cls(GCAConfig.from_saved(state["config"]), device=device)
        estimator.encoder, estimator._initial_encoder = encoder, initial
        estimator._params["encoder"] = encoder
        estimator.in_channels = int(state["in_channels"])
        model = GCAModel.from_weights(state["model"], estimator.in_channels, estimator.config, fresh(initial))
    except (KeyError, TypeError, ValueError, RuntimeError, UserError) as exc:
        if encoder is not None:  # the file is sound (checked above); the module given does not fit it
            raise CheckpointError(
                f"the encoder given ({type(encoder).__name__}) does not fit the weights in "
                f"{path} ({exc}); give a module of the class and shape it was trained with"
            ) from None
        raise CheckpointError(
            f"{path} is a damaged gca checkpoint ({type(exc).__name__}: {exc}); if it was "
            "trained with your own encoder, load it with GCA.load(path, encoder=…)"
        ) from None
    estimator.model, estimator.losses = model.to(estimator.device), [float(v) for v in state.get("losses", [])]
    estimator.provenance = state.get("provenance")  # the training's, kept when the model is saved again
    names = state.get("feature_names")
    if names is not None and len(names) != estimator.in_channels:
        raise CheckpointError(
            f"{path} is a damaged gca checkpoint ({len(names)} feature names for its "
            f"{estimator.in_channels} input features)"
        )
    estimator.feature_names_in_ = names
    return estimator
