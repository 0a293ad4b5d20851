"""The :class:`GCA` estimator: the configuration, the parts it wires together, and ``fit`` / ``embed``.

``fit`` prepares the graph once (:mod:`gca.augment.prepared`), builds the model (:mod:`gca.nn`), the optimiser and
the batch source (:mod:`gca.train.batches`) for this process's :class:`~gca.train.distributed.Placement`, restores a
checkpoint if asked (:class:`gca.train.checkpoint.TrainingCheckpoints`), runs the loop (:func:`gca.train.loop.train`)
and returns the frozen embeddings (:func:`gca.train.loop.encode_graph`).

Rules for the parts a user passes in (``encoder=``, ``objective=``), as scikit-learn's estimators treat their
parameters:

* the module passed in is never changed — not trained, not moved to another device. ``fit`` trains a copy of it,
  ``model.encoder`` (``model.objective``);
* every ``fit`` starts from the weights the module had when the estimator was made: the estimator keeps a deep copy
  of it (on the CPU) taken then, so fitting twice equals fitting once, and a later change to the module passed in
  does not reach the estimator. The weights are kept, not re-drawn with ``reset_parameters``, which would replace
  the weights the user gave. gca's own parts are built afresh by every ``fit`` after seeding with ``config.seed``,
  so the same seed gives the same initial weights;
* :func:`clone` gives an untrained estimator whose parts are copies of those initial modules, never of trained ones
  — so every hold-out of :func:`gca.run.tasks.link_prediction` trains from the same initial state.

``copy.deepcopy`` and ``pickle`` of an estimator, fitted or not, both give one that embeds exactly as it does.
"""

from __future__ import annotations

import contextlib
import copy
import inspect
import pickle
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch_geometric import seed_everything
from torch_geometric.data import Data

from ..augment.prepared import Kept, PreparedGraph, preparation_steps, prepare
from ..config import ConfigError, GCAConfig
from ..disk import trim_heap
from ..errors import UserError
from ..graph.graph import Graph, prepare_graph
from ..loggers import LOG, check_loggers, close_loggers
from ..nn.encoders import check_encoder
from ..nn.model import GCAModel
from ..objective.collapse import CollapseWatch, likely_cause
from ..progress import phase
from ..provenance import fit_record, utc_now
from .batches import BatchSource, batch_source
from .checkpoint import (
    CheckpointError,
    TrainingCheckpoints,
    load_checkpoint,
    load_initial_weights,
    model_state,
    save_checkpoint,
)
from .compiled import CompiledParts
from .distributed import Placement, resolve_device
from .loop import (
    INFERENCE_CHUNK_ROWS,
    CollapseError,
    TrainingError,
    all_zero,
    encode_graph,
    identical_rows,
    in_blocks,
    inference_rows,
    train,
    warmup_schedule,
)
from .memory import check_memory, fit_key, graph_claim, memory_folder, remembered

log = LOG.getChild("train.estimator")


def _finite(embeddings: torch.Tensor, lr: float) -> torch.Tensor:
    """``embeddings``, refused when not finite: the last update is checked here, its loss is never computed."""
    # a block of rows at a time: isfinite's temporaries on all of them are 1.6× the embeddings (2 GB at ogbn-products)
    if not all(bool(torch.isfinite(block).all()) for block in embeddings.split(INFERENCE_CHUNK_ROWS)):
        bad = float((~torch.isfinite(embeddings)).float().mean())
        raise TrainingError(
            f"training ended with non-finite embeddings ({bad:.0%} of the values); lower the learning rate (lr={lr})"
        )
    return embeddings


def _not_constant(embeddings: torch.Tensor, graph: Graph, config: GCAConfig) -> torch.Tensor:
    """``embeddings``, unless every node's is the same (to float32's resolution): then a :class:`CollapseError`.
    The loss watch cannot see this case when the views differ in training while the graph itself leaves nothing to
    tell nodes apart — identical features on a regular graph: the views' masks and dropped edges keep the loss off
    log(2N − 1), yet the unaugmented graph embeds every node alike."""
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


def _initial_copy(part: Any, what: str) -> Any:
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


def _fresh(initial: Any) -> Any:
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
    objective resolves on ``device`` (:class:`~gca.objective.ContrastiveObjective`; ``auto`` as
    :func:`~gca.objective.resolve_objective` makes it); for a user's objective that does not say, the config's
    ``precision`` where it is set, and fp32 under ``auto`` — what it was built for is unknown."""
    if hasattr(objective, "resolved"):
        return objective.resolved(device)[1]
    return "fp32" if config.precision == "auto" else config.precision


def _check_parts(config: Any, placement: Any, objective: Any, batches: Any, encoder: Any) -> None:
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
    """Whether the ``on_epoch`` hook takes the loss: a parameter named ``loss`` (or ``**kwargs``). Hooks of two
    arguments, ``on_epoch(epoch, embed)``, are called as before."""
    try:
        parameters = inspect.signature(hook).parameters.values()
    except (TypeError, ValueError):  # a callable Python cannot inspect: called the old way
        return False
    return any(p.kind == p.VAR_KEYWORD or (p.name == "loss" and p.kind != p.POSITIONAL_ONLY) for p in parameters)


def _feature_names(data: Any, width: int) -> list[str] | None:
    """The names of the feature columns a ``Data`` carries (``data.feature_names``, as
    :func:`gca.datasets.load_files` sets them for a file that names its features), checked against its ``width``
    columns; ``None`` for none."""
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


class _TensorBytes:
    """A plain dense CPU tensor, pickled as the NumPy array of its bytes, its dtype and its shape (the pickle holds
    no address, so equal tensors pickle alike); unpickled, a tensor of its own memory."""

    def __init__(self, tensor: torch.Tensor) -> None:
        self.tensor = tensor

    def __reduce__(self) -> tuple:
        tensor = self.tensor
        flat = tensor.contiguous().reshape(-1).view(torch.uint8).numpy()
        return (_tensor_of_bytes, (flat, str(tensor.dtype).removeprefix("torch."), tuple(tensor.shape)))


def _tensor_of_bytes(flat: np.ndarray, dtype: str, shape: tuple[int, ...]) -> torch.Tensor:
    """The tensor :class:`_TensorBytes` pickled (copied: the array may be a read-only mapping of joblib's); a tensor
    of no elements (a graph without edges) is made empty, as its byte array cannot be viewed as another dtype."""
    if flat.size == 0:
        return torch.empty(shape, dtype=getattr(torch, dtype))
    return torch.from_numpy(np.array(flat)).view(getattr(torch, dtype)).reshape(shape)


def _plain(value: Any) -> bool:
    """Whether ``value`` is a tensor :class:`_TensorBytes` pickles: a plain dense CPU tensor without gradient (not
    a subclass such as PyG's ``EdgeIndex``, whose own pickle keeps what it knows)."""
    return (
        type(value) is torch.Tensor
        and value.layout == torch.strided
        and value.device.type == "cpu"
        and not value.requires_grad
        and not value.is_quantized
    )


def _stable_data(data: Any) -> Any:
    """A shallow copy of a PyG ``Data`` whose plain tensors pickle as :class:`_TensorBytes` (anything else as it
    is); an object of another kind is returned as it is."""
    if not isinstance(data, Data):
        return data
    copied = copy.copy(data)
    mapping = copied._store._mapping
    for key, value in list(mapping.items()):
        if _plain(value):
            mapping[key] = _TensorBytes(value)
    return copied


class GraphNodes:
    """Some nodes of one graph, as scikit-learn's model selection splits samples: ``GraphNodes(data)`` stands for
    every node of ``data`` (a PyG ``Data``, node i its row i) and ``nodes[idx]`` (an integer or boolean array, a
    slice, a list) for those of them, in that order — the same graph, fewer nodes. It has a ``shape`` of
    ``(len(nodes),)``, so ``cross_val_score``, ``GridSearchCV`` and ``train_test_split`` split it like an array,
    with ``y`` holding the labels of ``data``'s nodes in the same order.

    :class:`GCA` fits on the whole graph whatever nodes are given (every node's features and edges, never a
    label: the transductive setting of the paper) and ``transform`` gives the rows of the nodes given, so in
    ``Pipeline([("gca", GCA(...)), ("clf", LogisticRegression())])`` the classifier is trained on the labels of a
    fold's training nodes and scored on its held-out nodes — the linear evaluation of the paper, with
    scikit-learn's folds and scorer. Since no fold changes what GCA learns, ``GCA(memory=...)`` trains it once per
    setting for all folds (:mod:`gca.train.memory`). Pickled (and so hashed by joblib) by its values: equal graphs
    and nodes hash alike whatever tensors hold them, so ``Pipeline(memory=...)`` finds a fold it fitted before.

    Parameters
    ----------
    data
        The whole graph: a PyG ``Data`` with ``x`` and ``edge_index`` (anything else is a ``ConfigError``).
    index
        The ids of the nodes it stands for (a 1-D array or list of integers in ``[0, N)``, in the order wanted);
        ``None`` for every node in order.
    """

    def __init__(self, data: Data, index: Any = None) -> None:
        num_nodes = getattr(data, "num_nodes", None)
        if not (hasattr(data, "x") and hasattr(data, "edge_index")) or num_nodes is None:
            raise ConfigError(
                f"GraphNodes takes a torch_geometric.data.Data with x and edge_index, got {type(data).__name__}"
            )
        self.data = data
        self.index = torch.arange(int(num_nodes)) if index is None else torch.as_tensor(index, dtype=torch.long)
        if self.index.dim() != 1:
            raise ConfigError(f"GraphNodes takes a 1-D array of node ids, got shape {tuple(self.index.shape)}")
        if self.index.numel() and (int(self.index.min()) < 0 or int(self.index.max()) >= int(num_nodes)):
            raise ConfigError(
                f"GraphNodes: node ids must lie in [0, {int(num_nodes) - 1}], got "
                f"[{int(self.index.min())}, {int(self.index.max())}]"
            )

    @property
    def shape(self) -> tuple[int]:
        return (int(self.index.numel()),)

    def __len__(self) -> int:
        return int(self.index.numel())

    def __getitem__(self, key: Any) -> GraphNodes:
        if isinstance(key, tuple) and len(key) == 2 and key[1] is Ellipsis:  # nodes[idx, ...], as arrays are indexed
            key = key[0]
        if isinstance(key, slice):
            return GraphNodes(self.data, self.index[key])
        key = torch.as_tensor(np.asarray(key))
        key = key.reshape(-1) if key.dim() == 0 else key
        return GraphNodes(self.data, self.index[key if key.dtype == torch.bool else key.long()])

    def __repr__(self) -> str:
        return f"GraphNodes({len(self)} of {int(self.data.num_nodes)} nodes)"

    def __reduce__(self) -> tuple:
        """Pickled with every plain dense CPU tensor — of its graph and its node ids — as the NumPy array of its
        bytes with its dtype and shape (:class:`_TensorBytes`), so the pickle, and joblib's hash, which pickles,
        depend on the values alone: scikit-learn's ``Pipeline(memory=...)`` finds a fold it fitted before, in this
        process or another. PyTorch's own pickle of a tensor names its storage's address, so equal graphs hashed
        apart and the pipeline's memory never found anything. Unpickled, it is the same graph and nodes."""
        index = _TensorBytes(self.index) if _plain(self.index) else self.index  # ids on a GPU: PyTorch's pickle
        return (GraphNodes, (_stable_data(self.data), index))


class GCA:
    """Self-supervised node embeddings with GCA: ``z = GCA(GCAConfig(epochs=200)).fit_transform(data)`` (a PyG
    ``Data``).

    scikit-learn's estimator conventions, on a graph: ``fit(X, y=None, *, directed=None)`` trains ``config.epochs``
    epochs (``y`` ignored) and returns the estimator, whose ``embedding_`` holds every node's embedding (float32, on
    the CPU); ``fit_transform`` returns that embedding; ``transform(data)`` embeds a graph with the trained encoder
    (default: the training graph). ``get_params`` / ``set_params`` read and change the constructor's arguments
    and, by their own names, the fields of ``config`` (``set_params(lr=0.01, tau=0.5)``; ``config__encoder`` for
    the built-in encoder's name). What works with scikit-learn: ``sklearn.base.clone``, ``check_is_fitted``, a
    ``Pipeline`` of GCA and a classifier fitted on ``(data, y)``, and ``cross_val_score`` / ``GridSearchCV`` of
    that pipeline over one graph's nodes given as :class:`GraphNodes` (GCA fits on the whole graph without labels;
    the classifier learns each fold's training labels, its scorer scores the held-out nodes); with ``memory`` (a
    folder or a ``joblib.Memory``) such a search trains GCA once per distinct GCA setting, not once per fold and
    candidate (:mod:`gca.train.memory`; ``from_memory_`` says whether a fit read its model from there), and a
    ``Pipeline(memory=...)`` finds the folds it fitted (:class:`GraphNodes` hash by their values). A bare GCA has no
    ``score``, and ``check_estimator`` skips it (its input is no 2-D array). Learned state:
    ``embedding_``, ``model``, ``in_channels``, ``losses`` (per epoch), ``feature_names_in_`` (the feature columns'
    names where the ``Data`` carries them as ``data.feature_names``, as :func:`gca.datasets.load_files` sets them
    for a file that names its features; saved with the model and kept by :meth:`load`; else ``None``); timings:
    ``train_seconds`` (the loop only), ``embed_seconds`` (the final inference), ``prepare_seconds``;
    ``provenance``: the versions, device and times of the training (:mod:`gca.provenance`), saved with the model
    and kept by :meth:`load`. ``loggers``:
    metric loggers (:mod:`gca.loggers`: ``CSVLogger``, ``TensorBoardLogger``, ``WandbLogger`` or any object with
    ``log(metrics, step)``) that get each epoch's ``loss`` and ``lr``; a setting like ``progress``, so
    ``get_params`` and :func:`clone` carry them (the same logger objects). Replaceable parts: ``objective`` (a module
    ``(u, v) → loss`` in place of Eq. 2's), ``batches(prepared, device)`` (a :class:`~gca.train.batches.BatchSource`)
    and ``placement`` (:class:`~gca.train.distributed.Placement`: where this process trains among several).

    A user's ``encoder`` (and ``objective``) is copied when the estimator is made and never changed: each ``fit``
    trains a fresh copy of those initial weights (``model.encoder`` after it), so fitting twice gives the same
    embeddings as fitting once. ``copy.deepcopy`` and ``pickle`` work on a fitted estimator.

    Parameters
    ----------
    config
        The run's settings (:class:`~gca.config.GCAConfig`, validated here); ``None`` for the defaults. Its fields
        are also this estimator's parameters by name (``get_params`` / ``set_params``).
    device
        Where to train: ``"auto"`` (CUDA when available, else the CPU), ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or
        ``"mps"``, or a ``torch.device``; one this machine lacks is a ``ConfigError``. Ignored when ``placement``
        is given (its device is used).
    progress
        Show the progress of every phase on stderr (:mod:`gca.progress`: a bar on a terminal, else a plain line
        about every tenth of the work): training's epochs (its updates, for mini-batches), and — where one runs a
        few seconds or more — preparing the graph, embedding it in blocks, and :func:`gca.run.run_gca`'s
        evaluation.
    objective
        A module ``objective(u, v) → loss`` (a scalar to minimise) used in place of Eq. 2's contrastive loss;
        ``None`` for GCA's own. Copied now; each ``fit`` trains a fresh copy of it.
    batches
        A factory ``batches(prepared, device)`` returning the :class:`~gca.train.batches.BatchSource` to train on;
        ``None`` for :func:`gca.train.batches.batch_source` (full graph, or mini-batches as ``config`` says).
    placement
        Where this process trains among several (:class:`~gca.train.distributed.Placement`, as under torchrun);
        ``None`` for a single process on ``device``.
    encoder
        Your own encoder module, called as PyTorch Geometric's: ``encoder(x, edge_index)`` → an
        ``[N, config.hidden]`` float tensor (checked on a few nodes before training; :mod:`gca.nn.encoders`);
        ``None`` for the one ``config.encoder`` names. Copied now and never
        trained itself: each ``fit`` trains a fresh copy of these initial weights.
    loggers
        Metric loggers (:mod:`gca.loggers`), each an object with ``log(metrics, step)``; they get each epoch's
        ``loss`` and ``lr`` and are closed when ``fit`` ends. ``None`` for none.
    memory
        Where fitted models are kept, so that a fit of the same settings on the same graph reads the model instead
        of training it (:mod:`gca.train.memory`): a folder (``str`` or ``Path``) or a ``joblib.Memory`` (its
        folder), as scikit-learn's ``Pipeline(memory=...)`` takes it; ``None`` (the default) keeps nothing and
        every fit trains. A kept model is served only after it is checked against the fit's key and graph (a
        file that fails is trained again, with a warning line saying why); nothing there is ever run. A search
        over a pipeline's other steps then trains GCA once per distinct GCA setting. The key is every config
        field, the device (with the precision ``auto`` becomes there), the versions and the cleaned graph's
        contents — never which nodes or labels the fit is given, which training does not read.
    """

    def __init__(
        self,
        config: GCAConfig | None = None,
        device: str | torch.device = "auto",
        progress: bool = False,
        objective: torch.nn.Module | None = None,
        batches: Callable[[PreparedGraph, torch.device], BatchSource] | None = None,
        placement: Placement | None = None,
        encoder: torch.nn.Module | None = None,
        loggers: Sequence[Any] | None = None,
        memory: Any = None,
    ) -> None:
        # the arguments as given, for get_params: scikit-learn's clone rebuilds the estimator from them
        self._params = {
            "config": config,
            "device": device,
            "progress": progress,
            "objective": objective,
            "batches": batches,
            "placement": placement,
            "encoder": encoder,
            "loggers": loggers,
            "memory": memory,
        }
        _check_parts(config, placement, objective, batches, encoder)
        check_memory(memory)
        self.memory = memory  # opened (a folder made) by the first fit that uses it, never here
        self.config = config or GCAConfig()
        self.config.validate()
        self.loggers = check_loggers(loggers)
        try:
            self.device = placement.device if placement is not None else resolve_device(device)
        except TrainingError as exc:  # a setting, said as one: set_params' callers catch ValueError
            raise ConfigError(str(exc)) from None
        self.progress, self.objective, self.batches, self.placement = progress, objective, batches, placement
        self.encoder = encoder  # None: the one config.encoder names (gca.nn.encoders)
        # what every fit starts from: copies taken now, so neither training nor later changes to the modules reach it
        self._initial_encoder = _initial_copy(encoder, "encoder")
        self._initial_objective = _initial_copy(objective, "objective")
        self.model: GCAModel | None = None  # learned state: set by fit or load
        self.in_channels: int | None = None
        self.prepared: PreparedGraph | None = None
        self.losses, self.train_seconds, self.embed_seconds = [], 0.0, 0.0  # per epoch; the loop's; inference's
        self.embedding_: torch.Tensor | None = None  # every node's embedding after fit
        self.embedding_file_: Path | None = None  # the .npy file embedding_ maps, when fit embedded out of core
        self._directed: bool | None = None  # fit's directed=: how transform reads a Data it is given
        self.from_memory_ = False  # whether the last fit read its model from memory instead of training
        self.provenance: dict | None = None  # versions, device and times of the training (gca.provenance)
        self.feature_names_in_: list[str] | None = None  # the feature columns' names, where the graph named them

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor's arguments as given; with ``deep``, also every field of ``config`` by its own name — but
        a field named as a constructor argument is ``config__<name>`` (scikit-learn's name for a part's
        parameter): ``config__encoder`` is the built-in encoder's name, ``encoder`` the module passed in.

        Parameters
        ----------
        deep
            Include every field of ``config`` by name (scikit-learn's nested parameters); ``False`` gives the
            constructor's arguments only.

        Returns
        -------
        dict[str, Any]
            Parameter name → value, a new dict (changing it changes nothing here).
        """
        params = dict(self._params)
        if not deep:
            return params
        fields = {(f"config__{k}" if k in params else k): v for k, v in self.config.to_dict().items()}
        return {**params, **fields}

    def set_params(self, **params: Any) -> GCA:
        """Change constructor arguments and config fields (by name: ``set_params(lr=0.01)``, or ``config__<field>``,
        which ``config__encoder="gat"`` needs; NumPy scalars such as ``np.int64(2)`` are read as Python numbers);
        the estimator is then untrained. An unknown name or a refused value is an error with a suggestion, and
        leaves the estimator exactly as it was: every value is checked by building the changed estimator first,
        which then replaces this one's state.

        Parameters
        ----------
        **params
            Constructor arguments (``device="cpu"``, ``loggers=[...]``) and config fields (``tau=0.5``,
            ``config__encoder="gat"``) with their new values; an unknown name or a value ``GCAConfig.validate``
            refuses is a ``ConfigError``.

        Returns
        -------
        GCA
            This estimator (changed and untrained), so that calls chain.
        """
        fields = {k.removeprefix("config__"): v for k, v in params.items() if k not in self._params}
        given = {k: v for k, v in params.items() if k in self._params}
        if fields:  # else a config given is kept as given (None too), so get_params returns it
            config = given.get("config", self._params["config"]) or GCAConfig()
            given["config"] = config.replace(**fields)  # checks the keys and values
        changed = type(self)(**{**self._params, **given})  # raises before anything of self is touched
        self.__dict__.clear()
        self.__dict__.update(changed.__dict__)
        return self

    def __sklearn_tags__(self):  # noqa: ANN204 - scikit-learn's Tags, imported only when asked for
        """scikit-learn's tags: a transformer of graphs (not of 2-D arrays), unsupervised, fitted before use."""
        from sklearn.utils import InputTags, Tags, TargetTags, TransformerTags

        return Tags(
            estimator_type=None,
            target_tags=TargetTags(required=False),
            transformer_tags=TransformerTags(preserves_dtype=[]),
            input_tags=InputTags(two_d_array=False),
            non_deterministic=self.device.type == "cuda",
        )

    def __sklearn_is_fitted__(self) -> bool:
        """scikit-learn's ``check_is_fitted``: whether a model was trained (or loaded)."""
        return self.model is not None

    def __sklearn_clone__(self) -> GCA:
        """``sklearn.base.clone``: :func:`clone` (an untrained copy, a user's parts at their initial weights)."""
        return clone(self)

    def __repr__(self) -> str:
        """Like scikit-learn's: the arguments and config fields that differ from the defaults."""
        defaults = GCAConfig().to_dict()
        changed = [f"{k}={v!r}" for k, v in self.config.to_dict().items() if v != defaults[k]]
        shown = [f"config=GCAConfig({', '.join(changed)})"] if changed else []
        for name, default in (("device", "auto"), ("progress", False)):
            if self._params[name] != default:
                shown.append(f"{name}={self._params[name]!r}")
        for name in ("objective", "batches", "placement", "encoder"):
            if self._params[name] is not None:
                shown.append(f"{name}={type(self._params[name]).__name__}")
        if self.memory is not None:
            shown.append(f"memory={self.memory!r}")
        if self.loggers:
            shown.append(f"loggers=[{', '.join(type(logger).__name__ for logger in self.loggers)}]")
        return f"{type(self).__name__}({', '.join(shown)})"

    def __deepcopy__(self, memo: dict) -> GCA:
        """A deep copy; the prepared graph goes through pickle, as ``copy.deepcopy`` cannot copy sparse CSR tensors
        (its features may be one) while pickle can."""
        if self.prepared is not None and id(self.prepared) not in memo:
            memo[id(self.prepared)] = pickle.loads(pickle.dumps(self.prepared))
        twin = object.__new__(type(self))
        memo[id(self)] = twin
        twin.__dict__.update(copy.deepcopy(self.__dict__, memo))
        return twin

    graph = property(lambda self: None if self.prepared is None else self.prepared.graph, doc="The graph trained on.")
    prepare_seconds = property(lambda self: 0.0 if self.prepared is None else self.prepared.seconds)

    def prepare(
        self,
        data: Data | Graph,
        directed: bool | None = None,
        store: Kept | None = None,
        on_step: Callable[[str], None] | None = None,
    ) -> PreparedGraph:
        """Clean the graph and compute centrality and both views' probabilities (once per graph); ``store``: where
        they are kept between runs (:func:`gca.augment.prepared.prepare`). With ``progress`` on, the steps show
        on stderr where they take a few seconds or more (unless ``on_step`` is given: it is then told each step).

        Parameters
        ----------
        data
            A PyG ``Data`` (cleaned by :func:`~gca.graph.graph.prepare_graph` with ``config.feature_norm``), or an
            already cleaned :class:`~gca.graph.graph.Graph`.
        directed
            ``None``: undirected exactly when every edge has its reverse; ``False``: undirected, an edge listed one
            way gets its reverse; ``True``: directed as given.
        store
            Where centrality, the views' probabilities and the sampler's unit ids are read from when an earlier run
            kept them, and kept when not (such as :class:`gca.run.cache.PreparedStore`); ``None``: computed here.
        on_step
            Told the name of each step once done (:func:`gca.augment.prepared.preparation_steps`); ``None``: the
            estimator's progress shows them.

        Returns
        -------
        PreparedGraph
            The graph with its centrality and augmentors, to pass to :meth:`fit` (once for several fits).
        """
        if on_step is not None:
            return prepare(data, self.config, directed, encoder=self.encoder, store=store, on_step=on_step)
        steps = preparation_steps(self.config, clean=not isinstance(data, Graph))
        with contextlib.closing(phase(len(steps), "prepare", "step", enabled=self.progress)) as bar:
            return prepare(
                data,
                self.config,
                directed,
                encoder=self.encoder,
                store=store,
                on_step=lambda name: bar.update(1, done=name),
            )

    def batch_source(self, prepared: PreparedGraph, placement: Placement | None = None) -> BatchSource:
        """``batches`` if given, else :func:`gca.train.batches.batch_source` for this process's placement.

        Parameters
        ----------
        prepared
            The prepared graph to train on (:meth:`prepare`).
        placement
            The process's place among several; ``None`` for the estimator's ``placement`` (or a single process on
            its device). Not used when the estimator was given ``batches``.
        """
        if self.batches is not None:
            return self.batches(prepared, self.device)
        place = placement or self.placement or Placement.joined(self.device)
        return batch_source(
            prepared.graph, prepared.views, self.config, self.device, place.rank, place.world_size, prepared.unit_ids
        )

    def fit(
        self,
        X: Data | Graph | PreparedGraph | GraphNodes,
        y: Any = None,
        *,
        directed: bool | None = None,
        checkpoint: str | Path | None = None,
        checkpoint_every: int = 0,
        resume: bool = False,
        on_epoch: Callable[..., None] | None = None,
        embeddings_file: str | Path | None = None,
        scratch: str | Path | None = None,
        on_update: Callable[[int, int | None], None] | None = None,
        init_from: str | Path | None = None,
    ) -> GCA:
        """Train on the graph ``X``; its nodes' embeddings are then :attr:`embedding_`. Returns the estimator.

        scikit-learn's signature: ``y`` is accepted and ignored (the training is self-supervised: no label is
        read), so ``Pipeline([("gca", GCA(...)), ("clf", LogisticRegression())]).fit(data, y)`` works. ``X`` is a
        PyG ``Data``, a cleaned :class:`~gca.graph.graph.Graph`, a :class:`~gca.augment.prepared.PreparedGraph`,
        or :class:`GraphNodes` — some nodes of a graph, as scikit-learn's cross-validation splits them: training
        then uses the whole graph, every node's features and edges (the transductive setting of the paper), and
        :attr:`embedding_` holds every node's embedding. ``directed`` (keyword only): ``None`` calls the graph
        undirected exactly when every edge has its reverse; ``False`` declares it undirected — an edge listed one
        way gets its reverse (:func:`~gca.graph.graph.prepare_graph`) — and :meth:`transform` then reads a
        ``Data`` it is given the same way.

        ``embeddings_file`` (a new ``.npy`` path): embed out of core where the graph is embedded in blocks on the
        CPU (:func:`gca.train.loop.encode_graph`) — the embeddings are written to that file as they are computed
        and :attr:`embedding_` is its mapping; :attr:`embedding_file_` is then that path (else ``None``, and nothing
        is written there).

        Under torchrun (:class:`~gca.train.distributed.Placement`) a graph embedded in blocks of rows is embedded
        by every process together, each its range of rows of every layer (:func:`gca.train.loop.encode_graph`):
        rank 0's :attr:`embedding_` holds every node's, the other ranks' is ``None``. ``scratch``: the folder where
        a rank without ``embeddings_file`` maps its matrices on the CPU (its files are unlinked at once).

        ``on_epoch(epoch, embed)`` runs after every epoch (from 1) with a function returning the current embeddings
        of every node (``gca tune`` stops unpromising trials with it). A hook with a parameter named ``loss`` (or
        ``**kwargs``), ``on_epoch(epoch, embed, loss=None)``, also gets the epoch's mean loss by that keyword
        (``losses[epoch - 1]``); a hook of two arguments is called as before. The estimator's ``loggers`` get every
        epoch's metrics and are closed when ``fit`` ends, however it ends. ``checkpoint``, ``checkpoint_every`` and
        ``resume``: periodic training checkpoints and continuing exactly from one (:class:`TrainingCheckpoints`).
        ``on_update(update, updates)`` runs after every update with the updates made so far (counted from 1, on
        from a resumed checkpoint's) and those the run plans (:class:`gca.train.fast.LongRunHint` projects the run's
        time from the first ones).

        Parameters
        ----------
        X
            The graph: a PyG ``Data`` (``x``, ``edge_index``, optionally ``edge_weight`` / ``edge_attr``), a cleaned
            :class:`~gca.graph.graph.Graph`, a :class:`~gca.augment.prepared.PreparedGraph` from :meth:`prepare`
            (used as it is: ``directed`` is then not read), or :class:`GraphNodes`.
        y
            Ignored (accepted for scikit-learn's pipelines and searches); no label is read.
        directed
            ``None``: undirected exactly when every edge has its reverse; ``False``: undirected, an edge listed one
            way gets its reverse (with its weight and edge features); ``True``: directed as given.
        checkpoint
            The training checkpoint file written every ``checkpoint_every`` epochs and, with ``resume``, read;
            ``None`` for none.
        checkpoint_every
            Write ``checkpoint`` after every this many epochs; ``0`` never (a negative number is an error).
        resume
            Continue from ``checkpoint`` when that file exists (a checkpoint of other settings or another graph is
            refused); start afresh when it does not.
        on_epoch
            A hook ``on_epoch(epoch, embed)`` (or ``on_epoch(epoch, embed, loss=None)``) called after every epoch.
        embeddings_file
            A new ``.npy`` path to write the final embeddings to as they are computed, when the graph is embedded
            in blocks on the CPU; an existing file is a ``ValueError``.
        scratch
            The folder where a torchrun rank without ``embeddings_file`` maps its matrices (a folder that cannot be
            made keeps them in memory); ``None``: in memory.
        on_update
            A hook ``on_update(update, updates)`` called after every update; ``None`` for none.
        init_from
            An earlier model's file (:meth:`save`, ``gca train``'s ``model.pt``) whose weights training starts from
            instead of fresh ones — a warm start for retraining on a graph that changed a little, with fewer epochs
            (its settings' widths and layers, and the graph's feature width, must be the earlier model's; the
            optimiser and the schedule start afresh). A checkpoint that ``resume`` continues from wins over it.

        Returns
        -------
        GCA
            This estimator, trained: :attr:`embedding_`, ``model`` and ``losses`` are set.
        """
        saves = TrainingCheckpoints(checkpoint, checkpoint_every, resume)
        started = utc_now()
        inference_rows()  # a malformed GCA_INFERENCE_ROWS is said before training, not after it
        if embeddings_file is not None and Path(embeddings_file).exists():
            raise ValueError(f"embeddings_file {embeddings_file} exists; give the path of a new file")
        memory = self._memory_for(
            X,
            {
                "checkpoint": checkpoint,
                "resume": resume,
                "on_epoch": on_epoch,
                "on_update": on_update,
                "embeddings_file": embeddings_file,
                "scratch": scratch,
                "init_from": init_from,
            },
        )
        data = X.data if isinstance(X, GraphNodes) else X
        self.prepared = data if isinstance(data, PreparedGraph) else self.prepare(data, directed)
        self.feature_names_in_ = _feature_names(data, self.prepared.graph.num_features)
        self._directed = directed
        self.from_memory_ = False
        if memory is None:
            return self._train(saves, started, on_epoch, embeddings_file, scratch, on_update, init_from)
        graph = self.prepared.graph
        fingerprint = graph.fingerprint()
        key = fit_key(self.config.to_dict(), self.device, graph, fingerprint)
        trained = remembered(
            memory,
            key,
            graph_claim(graph, fingerprint),
            lambda: self._train(saves, started, None, None, None, None)._kept(),
            self._restore,
        )
        log.info("%s the model of key %s in %s", "trained" if trained else "read", key, memory)
        return self

    def _memory_for(self, X: Any, options: dict[str, Any]) -> Path | None:
        """The folder this fit reads its model from and keeps it in (:mod:`gca.train.memory`), or ``None``: none
        was given, or this fit cannot be keyed — then a ``UserWarning`` says why, and it trains."""
        memory = memory_folder(self.memory)
        if memory is None:
            return None
        parts = [name for name in ("encoder", "objective", "batches", "placement") if getattr(self, name) is not None]
        given = [name for name, value in options.items() if value]
        why = ""
        if parts:
            why = f"your own {' and '.join(parts)} cannot be keyed (its code is no part of the key)"
        elif self.loggers:
            why = "its loggers get the metrics of a training"
        elif isinstance(X, (Graph, PreparedGraph)):
            why = (
                f"a {type(X).__name__} may carry features or views of other settings than the estimator's; give "
                "the Data"
            )
        elif given:
            why = f"{' and '.join(given)} watch or write a training"
        if not why:
            return memory
        warnings.warn(f"GCA's memory is not used for this fit, which trains: {why}", UserWarning, stacklevel=3)
        return None

    def _kept(self) -> dict:
        """What memory keeps of this fit (:func:`gca.train.memory.remembered`): the model checkpoint, the
        embeddings and the training's timings."""
        return {
            "state": self.state(),
            "embedding": self.embedding_,
            "train_seconds": self.train_seconds,
            "embed_seconds": self.embed_seconds,
        }

    def _restore(self, kept: dict) -> None:
        """This estimator as the fit that :meth:`_kept` ``kept`` left it (its graph prepared already); weights
        that do not fit the model raise before anything of the estimator is changed."""
        state = kept["state"]
        model = GCAModel.from_weights(state["model"], int(state["in_channels"]), self.config).to(self.device)
        self.in_channels, self.model = int(state["in_channels"]), model
        self.losses, self.provenance = [float(v) for v in state["losses"]], state.get("provenance")
        self.embedding_, self.embedding_file_, self.embed_processes_ = kept["embedding"], None, 1
        self.train_seconds, self.embed_seconds = kept["train_seconds"], kept["embed_seconds"]
        self.from_memory_ = True

    def _train(
        self,
        saves: TrainingCheckpoints,
        started: str,
        on_epoch: Callable[..., None] | None,
        embeddings_file: str | Path | None,
        scratch: str | Path | None,
        on_update: Callable[[int, int | None], None] | None,
        init_from: str | Path | None = None,
    ) -> GCA:
        """:meth:`fit`'s training of the prepared graph (``self.prepared``), and its final embeddings."""
        cfg = self.config
        graph, place = self.prepared.graph, self.placement or Placement.joined(self.device)
        fingerprint = graph.fingerprint() if saves.used else ""  # a pass over the graph: only when it is needed
        seed_everything(cfg.seed)
        self.in_channels = graph.num_features
        share = place.objective_share(cfg.batch_size)
        encoder, objective = _fresh(self._initial_encoder), _fresh(self._initial_objective)
        self.model = model = _model(self.in_channels, cfg, objective, share, encoder, graph, self.device)
        if init_from is not None:
            load_initial_weights(init_from, model, self.in_channels)
        optimizer = torch.optim.Adam(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
        place.attach(optimizer, cfg.batch_size)
        generator = torch.Generator(device=self.device).manual_seed(cfg.seed)
        source = self.batch_source(self.prepared, place)
        self.losses = saves.restore(cfg.to_dict(), self.in_channels, fingerprint, model, optimizer, generator, source)
        self.provenance = fit_record(self.device, started)  # a training checkpoint's: "finished" once training ends
        with_loss = on_epoch is not None and _takes_loss(on_epoch)
        log.info(
            "training on %d nodes, %d features: epochs %d to %d on %s",
            graph.num_nodes,
            self.in_channels,
            saves.first_epoch + 1,
            cfg.epochs,
            self.device,
        )

        def after_epoch(epoch: int, losses: list[float]) -> None:
            self.losses[saves.first_epoch :] = losses
            saves.after_epoch(epoch, self.state, optimizer, generator, fingerprint, source)
            if on_epoch is None:
                return
            if with_loss:
                on_epoch(epoch, embed, loss=losses[-1])
            else:
                on_epoch(epoch, embed)

        compiled = CompiledParts(model) if cfg.compile == "on" else None

        def embed() -> torch.Tensor:
            with compiled.paused() if compiled is not None else contextlib.nullcontext():
                return encode_graph(model, graph.to(self.device)).cpu()

        if cfg.precision == "auto":
            place.settle_precision()  # every process trains in the first one's choice
        try:
            self.losses[saves.first_epoch :] = train(
                model,
                optimizer,
                source,
                cfg.epochs,
                generator,
                saves.first_epoch,
                after_epoch,
                self.progress,
                learning_rate=warmup_schedule(cfg.lr, cfg.warmup_updates),
                collapse=_collapse_watch(cfg),
                loggers=self.loggers,
                on_update=on_update,
                precision=_update_precision(model.objective, cfg, self.device),
                compiled=compiled,
            )
        except BaseException:
            with contextlib.suppress(Exception):  # the training's own error is the one the user sees
                close_loggers(self.loggers)
            raise
        finally:
            if compiled is not None:
                compiled.restore()  # inference, pickles and copies see the eager model
        close_loggers(self.loggers)
        source = None  # a sampler's arrays are not needed for inference
        trim_heap()  # and what training freed goes back to the kernel before inference maps its matrices
        if self.device.type == "cuda":
            torch.cuda.synchronize()
        self.train_seconds = saves.seconds
        self.provenance = fit_record(self.device, started, utc_now())
        start = time.perf_counter()
        self.embed_processes_ = place.world_size if in_blocks(model, graph.num_nodes) else 1
        embedded = encode_graph(
            model,
            graph.to(self.device),
            out=embeddings_file,
            share=place.row_share(),
            scratch=scratch,
            progress=self.progress,
        )
        self.embedding_file_ = Path(embeddings_file) if embeddings_file and Path(embeddings_file).is_file() else None
        # under torchrun a graph embedded by blocks of rows is embedded by all processes together, and its
        # embeddings are rank 0's alone: the others hold None
        self.embedding_ = None if embedded is None else _not_constant(_finite(embedded.cpu(), cfg.lr), graph, cfg)
        self.embed_seconds = time.perf_counter() - start
        log.info(
            "trained in %.3f s, embedded %d nodes in %.3f s", self.train_seconds, graph.num_nodes, self.embed_seconds
        )
        return self

    def fit_transform(self, X: Data | Graph | PreparedGraph | GraphNodes, y: Any = None, **kwargs: Any) -> torch.Tensor:
        """:meth:`fit` (``y`` ignored; ``directed`` and the other options by keyword), then the embeddings of
        ``X``'s nodes: :attr:`embedding_`, or for :class:`GraphNodes` its rows of those nodes, in their order.

        Parameters
        ----------
        X
            The graph, as :meth:`fit` takes it.
        y
            Ignored (no label is read).
        **kwargs
            :meth:`fit`'s keyword options (``directed``, ``checkpoint``, ``on_epoch``, …).

        Returns
        -------
        torch.Tensor
            A float32 tensor on the CPU, one row per node of ``X`` (``None`` on a torchrun rank other than 0 when
            the graph was embedded by all ranks together).
        """
        embedding = self.fit(X, y, **kwargs).embedding_
        return embedding[X.index] if isinstance(X, GraphNodes) and embedding is not None else embedding

    def transform(self, X: Data | Graph | GraphNodes | None = None, *, directed: bool | None = None) -> torch.Tensor:
        """scikit-learn's name for :meth:`embed`: ``X``'s embeddings with the trained encoder — for
        :class:`GraphNodes`, the rows of its nodes (in their order) of its whole graph's embeddings.

        Parameters
        ----------
        X
            The graph to embed (a PyG ``Data``, a :class:`~gca.graph.graph.Graph` or :class:`GraphNodes`) with the
            training graph's number of features; ``None`` for the training graph.
        directed
            How a ``Data`` is cleaned, as in :meth:`fit`; ``None`` keeps what ``fit`` was given.

        Returns
        -------
        torch.Tensor
            A float32 tensor on the CPU, one row per node of ``X``.
        """
        if isinstance(X, GraphNodes):
            return self.embed(X.data, directed=directed)[X.index]
        return self.embed(X, directed=directed)

    def embed(
        self, data: Data | Graph | None = None, out: str | Path | None = None, *, directed: bool | None = None
    ) -> torch.Tensor:
        """Embeddings of ``data`` (default: the training graph) with the trained encoder; with ``out`` (a new
        ``.npy`` path), out of core where the graph is embedded in blocks on the CPU
        (:func:`gca.train.loop.encode_graph`: the embeddings returned are then that file's mapping). A ``Data`` is
        cleaned as :meth:`fit` cleaned its graph: ``directed=None`` keeps the ``directed`` that ``fit`` was given
        (with ``directed=False``, an edge listed one way gets its reverse there and here alike, so embedding the
        training data again gives :attr:`embedding_`).

        Parameters
        ----------
        data
            The graph to embed (a PyG ``Data`` or a :class:`~gca.graph.graph.Graph`) with the training graph's
            number of features (else a ``TrainingError``); ``None`` for the training graph.
        out
            A new ``.npy`` path the embeddings are written to as they are computed, when the graph is embedded in
            blocks on the CPU; ``None`` keeps them in memory.
        directed
            How a ``Data`` is cleaned, as in :meth:`fit`; ``None`` keeps what ``fit`` was given.

        Returns
        -------
        torch.Tensor
            A float32 tensor on the CPU, one row per node (the mapping of ``out`` when it was written).
        """
        if self.model is None or (data is None and self.graph is None):
            untrained = self.model is None
            raise TrainingError("the model is not trained yet; call fit() first" if untrained else "no graph to embed")
        data = self.graph if data is None else data
        directed = self._directed if directed is None else directed
        graph = data if isinstance(data, Graph) else prepare_graph(data, directed, self.config.feature_norm)
        if graph.num_features != self.in_channels:
            raise TrainingError(
                f"the graph has {graph.num_features} features but the encoder was trained on {self.in_channels}"
            )
        return encode_graph(self.model, graph.to(self.device), out=out, progress=self.progress).cpu()

    def state(self) -> dict:
        """A model checkpoint made of tensors and plain values only (loadable with ``weights_only=True``)."""
        if self.model is None:
            raise TrainingError("the model is not trained yet; call fit() first")
        user = self._initial_encoder
        named = None if user is None else f"{type(user).__module__}.{type(user).__qualname__}"
        state = model_state(self.config.to_dict(), self.in_channels, self.model, self.losses, named, self.provenance)
        if self.feature_names_in_ is not None:  # gca embed maps another file's named features to these columns
            state["feature_names"] = list(self.feature_names_in_)
        return state

    def save(self, path: str | Path) -> None:
        """Write the model checkpoint atomically (temporary file, then rename), with :attr:`feature_names_in_`
        where the graph named its features (``gca embed`` then reads another graph's named features into them).

        Parameters
        ----------
        path
            The file to write (replaced if it exists); :meth:`load` reads it. An untrained estimator is a
            ``TrainingError``.
        """
        save_checkpoint(path, self.state())

    @classmethod
    def load(cls, path: str | Path, device: str = "auto", encoder: torch.nn.Module | None = None) -> GCA:
        """A trained estimator from :meth:`save` (or a training checkpoint; :func:`load_checkpoint`); a model
        trained with a user's ``encoder`` loads into a copy of a fresh instance of it (which stays as it is).

        Parameters
        ----------
        path
            A file written by :meth:`save`, ``gca train`` or a training checkpoint; a damaged or foreign file is a
            ``CheckpointError``.
        device
            Where the model is placed, as the constructor's ``device``.
        encoder
            For a model trained with your own encoder: a new module of the same class and shape, which the weights
            load into a copy of; ``None`` for a model of gca's encoders (one trained with yours then says so).

        Returns
        -------
        GCA
            A trained estimator: ``embed(data)`` works at once; its ``embedding_`` is ``None`` until :meth:`fit`;
            ``feature_names_in_`` holds the feature columns' names the file records (``None`` where it has none).
        """
        state = load_checkpoint(path)
        user = state.get("user_encoder")
        if user and encoder is None:
            raise CheckpointError(
                f"{path} holds a model trained with your own encoder ({user}); load it in Python "
                f"with GCA.load(path, encoder=<a new {user.rsplit('.', 1)[-1]} of the same "
                "shape>)"
            )
        initial = _initial_copy(encoder, "encoder")  # a module that cannot be copied is no fault of the file's
        try:
            estimator = cls(GCAConfig.from_saved(state["config"]), device=device)
            estimator.encoder, estimator._initial_encoder = encoder, initial
            estimator._params["encoder"] = encoder
            estimator.in_channels = int(state["in_channels"])
            model = GCAModel.from_weights(state["model"], estimator.in_channels, estimator.config, _fresh(initial))
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


def clone(estimator: GCA, **changes: Any) -> GCA:
    """A fresh, untrained estimator with ``estimator``'s device, placement and parts, and its configuration with
    ``changes`` (scikit-learn's ``clone`` and ``set_params`` in one): ``clone(gca, seed=1)``. A user's encoder or
    objective is a copy of the one ``estimator`` was made with, at its initial weights — never trained ones, whether
    ``estimator`` was fitted or not. Its ``loggers`` are the same objects: a logger names where metrics go.

    Parameters
    ----------
    estimator
        The estimator to copy (fitted or not; it is not changed).
    **changes
        Config fields to change in the copy (``seed=1``, ``tau=0.5``), checked as ``GCAConfig.replace`` checks them.

    Returns
    -------
    GCA
        A new, untrained estimator.
    """
    # the device as given ("cpu", not torch.device("cpu")), so get_params of the copy equals the original's
    return GCA(
        estimator.config.replace(**changes),
        device=estimator._params["device"],
        progress=estimator.progress,
        objective=_fresh(estimator._initial_objective),
        batches=estimator.batches,
        placement=estimator.placement,
        encoder=_fresh(estimator._initial_encoder),
        loggers=estimator._params["loggers"],
        memory=estimator.memory,
    )
