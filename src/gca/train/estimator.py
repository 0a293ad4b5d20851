"""The :class:`GCA` estimator: the configuration, the parts it wires together, and ``fit`` / ``embed``.

``fit`` prepares the graph (:mod:`gca.augment.prepared`), builds the model, the optimiser and the batch source
(:mod:`gca.train.batches`), restores a checkpoint if asked, runs the loop (:func:`gca.train.loop.train`) and embeds
(:func:`gca.train.inference.encode_graph`); :mod:`gca.train.fitting` does the training and its checks. The parts a
user passes in (``encoder=``, ``objective=``):

* are never changed — not trained, not moved; ``fit`` trains a copy (``model.encoder``);
* are deep-copied (on the CPU) when the estimator is made, and every ``fit`` starts from that copy, so fitting twice
  equals fitting once; gca's own parts are built afresh by every ``fit`` after seeding with ``config.seed``;
* are copied by :func:`clone` at those initial weights, never trained ones.

``copy.deepcopy`` and ``pickle`` of an estimator, fitted or not, give one that embeds exactly as it does. Design
notes: docs/design/training.md.
"""

from __future__ import annotations

import contextlib
import copy
import pickle
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch
from torch_geometric.data import Data

from ..augment.prepared import Kept, PreparedGraph, preparation_steps, prepare
from ..config import ConfigError, GCAConfig
from ..graph.graph import Graph, prepare_graph
from ..logger_protocol import LOG, check_loggers
from ..nn.model import GCAModel
from ..progress import phase
from ..provenance import utc_now
from .batches import BatchSource, batch_source
from .checkpoint import Resume, TrainingCheckpoints, WarmStart, model_state, save_checkpoint
from .distributed import Placement, resolve_device
from .fit_cache import check_memory, fit_key, graph_claim, remembered
from .fitting import check_parts, feature_names, fit_estimator, fresh, initial_copy, load_estimator, memory_for
from .inference import encode_graph, inference_rows
from .loop import TrainingError
from .nodes import GraphNodes as GraphNodes
from .nodes import _tensor_of_bytes as _tensor_of_bytes  # pickles of GraphNodes that name this module load

log = LOG.getChild("train.estimator")


class GCA:
    """Self-supervised node embeddings with GCA (Zhu et al., WWW 2021; the method: docs/method.md).

    scikit-learn's estimator conventions, on a graph (docs/api.md): ``get_params`` / ``set_params`` also reach the
    fields of ``config`` by name, and ``sklearn.base.clone``, ``check_is_fitted`` and searches of a ``Pipeline`` of GCA
    and a classifier over one graph's nodes (:class:`GraphNodes`) work. A bare GCA has no ``score``;
    ``check_estimator`` skips it (its input is no 2-D array).

    Learned state: ``embedding_``, ``model``, ``in_channels``, ``losses`` (per epoch), ``from_memory_``,
    ``feature_names_in_`` (``data.feature_names``, else ``None``) and ``provenance`` (:mod:`gca.provenance`; these two
    are saved with the model), and the seconds ``train_seconds`` (the loop), ``embed_seconds`` and ``prepare_seconds``.

    For example, ``z = GCA(GCAConfig(epochs=200)).fit_transform(data)`` embeds the nodes of a PyG ``Data``.

    Parameters
    ----------
    config
        The run's settings (:class:`~gca.config.GCAConfig`, validated here); ``None`` for the defaults.
    device
        ``"auto"`` (CUDA when available, else the CPU), ``"cpu"``, ``"cuda"``, ``"cuda:N"``, ``"mps"`` or a
        ``torch.device``; one this machine lacks is a ``ConfigError``. Ignored when ``placement`` is given.
    progress
        Show each phase's progress on stderr (:mod:`gca.progress`): training's epochs (updates, for mini-batches) and
        any other phase that takes a few seconds or more.
    objective
        A module ``objective(u, v) → loss`` (a scalar to minimise) in place of Eq. 2's contrastive loss; ``None`` for
        GCA's own.
    batches
        A factory ``batches(prepared, device)`` returning the :class:`~gca.train.batches.BatchSource` to train on;
        ``None`` for :func:`gca.train.batches.batch_source`.
    placement
        Where this process trains among several (:class:`~gca.train.distributed.Placement`, as under torchrun);
        ``None`` for a single process on ``device``.
    encoder
        Your own encoder module, called as PyTorch Geometric's: ``encoder(x, edge_index)`` → an ``[N, config.hidden]``
        float tensor (checked on a few nodes first; :mod:`gca.nn.encoders`); ``None`` for ``config.encoder``'s.
    loggers
        Metric loggers (:mod:`gca.loggers`), each with ``log(metrics, step)``: they get each epoch's ``loss`` and
        ``lr`` and are closed when ``fit`` ends, however it ends. ``None`` for none.
    memory
        A folder (``str`` or ``Path``) or a ``joblib.Memory`` where fitted models are kept, so that a fit of the same
        settings on the same graph reads its model instead of training it (:mod:`gca.train.fit_cache`; nodes and
        labels are no part of the key). ``None`` (the default) keeps nothing.
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
        # the arguments as given (the only locals yet), for get_params: scikit-learn's clone rebuilds the estimator
        self._params = {name: value for name, value in locals().items() if name != "self"}
        check_parts(config, placement, objective, batches, encoder)
        check_memory(memory)
        self.memory = memory  # opened (a folder made) by the first fit that uses it, never here
        self.config = config or GCAConfig()
        self.config.validate()
        self.loggers = check_loggers(loggers)
        try:
            self.device = placement.device if placement is not None else resolve_device(device)
        except TrainingError as exc:  # a setting, said as one: set_params' callers catch ValueError
            raise ConfigError(*exc.args) from None
        self.progress, self.objective, self.batches, self.placement = progress, objective, batches, placement
        self.encoder = encoder  # None: the one config.encoder names (gca.nn.encoders)
        # what every fit starts from: copies taken now, so neither training nor later changes to the modules reach it
        self._initial_encoder = initial_copy(encoder, "encoder")
        self._initial_objective = initial_copy(objective, "objective")
        self.model: GCAModel | None = None  # learned state: set by fit or load
        self.in_channels: int | None = None
        self.prepared: PreparedGraph | None = None
        self.losses, self.train_seconds, self.embed_seconds = [], 0.0, 0.0  # per epoch; the loop's; inference's
        self.embedding_: torch.Tensor | None = None  # every node's embedding after fit
        self.embedding_file_: Path | None = None  # the .npy file embedding_ maps, when fit embedded out of core
        self._directed: bool | None = None  # how transform reads a Data: as fit read its graph
        self.from_memory_ = False  # whether the last fit read its model from memory instead of training
        self.provenance: dict | None = None  # versions, device and times of the training (gca.provenance)
        self.feature_names_in_: list[str] | None = None  # the feature columns' names, where the graph named them

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor's arguments as given, in a new dict; with ``deep``, also every field of ``config`` by its
        own name, or ``config__<name>`` where a constructor argument has that name (``config__encoder`` is the
        built-in encoder's name, ``encoder`` the module passed in).

        Parameters
        ----------
        deep
            Include every field of ``config`` (scikit-learn's nested parameters).
        """
        params = dict(self._params)
        if not deep:
            return params
        fields = {(f"config__{k}" if k in params else k): v for k, v in self.config.to_dict().items()}
        return {**params, **fields}

    def set_params(self, **params: Any) -> GCA:
        """Change constructor arguments and config fields (``set_params(lr=0.01)``, or ``config__<field>``, which
        ``config__encoder="gat"`` needs; NumPy scalars are read as Python numbers); returns the estimator, untrained.
        An unknown name or a refused value is a ``ConfigError`` with a suggestion and changes nothing.

        Parameters
        ----------
        **params
            Constructor arguments (``device="cpu"``) and config fields (``tau=0.5``) with their new values.
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
        """A deep copy; the prepared graph goes through pickle, which, unlike ``copy.deepcopy``, copies sparse CSR
        tensors (its features may be one)."""
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
        """Clean the graph and compute centrality and both views' probabilities, for :meth:`fit` to train on (once
        for several fits).

        Parameters
        ----------
        data
            A PyG ``Data`` (cleaned by :func:`~gca.graph.graph.prepare_graph` with ``config.feature_norm``), or an
            already cleaned :class:`~gca.graph.graph.Graph`.
        directed
            How a ``Data`` is cleaned, as :meth:`fit` reads it.
        store
            Where centrality, the views' probabilities and the sampler's unit ids are read from when an earlier run
            kept them, and kept when not (:class:`gca.run.store.PreparedStore`); ``None``: computed here.
        on_step
            Told the name of each step once done (:func:`gca.augment.prepared.preparation_steps`); ``None``: the
            estimator's ``progress`` shows them (those of a few seconds or more).
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
        """``batches`` if given, else :func:`gca.train.batches.batch_source` for ``placement`` (``None``: the
        estimator's, or a single process on its device)."""
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
        resume: bool | Resume = False,
        on_epoch: Callable[..., None] | None = None,
        embeddings_file: str | Path | None = None,
        scratch: str | Path | None = None,
        on_update: Callable[[int, int | None], None] | None = None,
        init_from: str | Path | WarmStart | None = None,
    ) -> GCA:
        """Train ``config.epochs`` epochs on the graph ``X``, setting :attr:`embedding_`, ``model`` and ``losses``;
        returns the estimator. Under torchrun a graph embedded in blocks of rows is embedded by all processes
        together: rank 0's :attr:`embedding_` holds every node's, the others' is ``None``.

        Parameters
        ----------
        X
            A PyG ``Data`` (``x``, ``edge_index``, optionally ``edge_weight`` / ``edge_attr``), a cleaned
            :class:`~gca.graph.graph.Graph`, a :class:`~gca.augment.prepared.PreparedGraph` from :meth:`prepare`
            (used as it is), or :class:`GraphNodes` (trained on its whole graph, as the paper's transductive setting).
        y
            Ignored (accepted for scikit-learn's pipelines and searches).
        directed
            ``None``: undirected exactly when every edge has its reverse; ``False``: undirected, an edge listed one
            way gets its reverse (with its weight and edge features), here and in :meth:`transform`; ``True``: as given.
        checkpoint, checkpoint_every, resume
            The training checkpoint file (:class:`TrainingCheckpoints`; ``None`` for none), written after every
            ``checkpoint_every`` epochs (``0`` never, negative an error) and, with ``resume``, continued from exactly
            when it exists (one of other settings or another graph is refused); ``resume`` may be the
            :class:`~gca.train.checkpoint.Resume` a :class:`~gca.train.checkpoint.ResumeCheck` read before, continued
            from without reading its file again.
        on_epoch
            ``on_epoch(epoch, embed)`` after every epoch (from 1), ``embed()`` giving every node's current embeddings;
            a hook with a parameter ``loss`` (or ``**kwargs``) also gets the epoch's mean loss by that keyword.
        embeddings_file
            A new ``.npy`` path (else a ``ValueError``): where the graph is embedded in blocks on the CPU, the
            embeddings are written there; :attr:`embedding_` is then its mapping and :attr:`embedding_file_` its path.
        scratch
            The folder where a torchrun rank without ``embeddings_file`` maps its matrices on the CPU (files unlinked at
            once); ``None``, or a folder that cannot be made: in memory.
        on_update
            ``on_update(update, updates)`` after every update: the updates so far (from 1, on from a resumed
            checkpoint's) and those planned (:class:`gca.train.fast.LongRunHint`); ``None`` for none.
        init_from
            An earlier model's file (:meth:`save`, ``gca train``'s ``model.pt``), or the
            :class:`~gca.train.checkpoint.WarmStart` read from it, to warm-start from (same widths, layers and feature
            width; optimiser and schedule start afresh); a checkpoint ``resume`` reads wins over it.
        """
        self.config.validate()  # again: its fields may have been set since the estimator was made
        saves = TrainingCheckpoints(checkpoint, checkpoint_every, resume)
        started = utc_now()
        inference_rows()  # a malformed GCA_INFERENCE_ROWS is said before training, not after it
        if embeddings_file is not None and Path(embeddings_file).exists():
            raise ValueError(f"embeddings_file {embeddings_file} exists; give the path of a new file")
        memory = memory_for(
            self,
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
        self.feature_names_in_ = feature_names(data, self.prepared.graph.num_features)
        self._directed = self.prepared.graph.directed if isinstance(data, PreparedGraph | Graph) else directed
        self.from_memory_ = False
        if memory is None:
            return fit_estimator(self, saves, started, on_epoch, embeddings_file, scratch, on_update, init_from)
        graph = self.prepared.graph
        fingerprint = graph.fingerprint()
        key = fit_key(self.config.to_dict(), self.device, graph, fingerprint)
        trained = remembered(
            memory,
            key,
            graph_claim(graph, fingerprint),
            lambda: fit_estimator(self, saves, started, None, None, None, None)._kept(),
            self._restore,
        )
        log.info("%s the model of key %s in %s", "trained" if trained else "read", key, memory)
        return self

    def _kept(self) -> dict:
        """What memory keeps of this fit (:func:`gca.train.fit_cache.remembered`): the model checkpoint, the
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

    def fit_transform(self, X: Data | Graph | PreparedGraph | GraphNodes, y: Any = None, **kwargs: Any) -> torch.Tensor:
        """:meth:`fit`, then the embeddings of ``X``'s nodes (float32, on the CPU): :attr:`embedding_`, or for
        :class:`GraphNodes` its nodes' rows, in their order (``None`` where :meth:`fit` leaves it so).

        Parameters
        ----------
        X, y
            As :meth:`fit` takes them.
        **kwargs
            :meth:`fit`'s keyword options (``directed``, ``checkpoint``, ``on_epoch``, …).
        """
        embedding = self.fit(X, y, **kwargs).embedding_
        return embedding[X.index] if isinstance(X, GraphNodes) and embedding is not None else embedding

    def transform(
        self, X: Data | Graph | PreparedGraph | GraphNodes | None = None, *, directed: bool | None = None
    ) -> torch.Tensor:
        """scikit-learn's name for :meth:`embed`; for :class:`GraphNodes`, its nodes' rows (in their order) of its
        whole graph's embeddings.

        Parameters
        ----------
        X
            As :meth:`embed` takes it, or :class:`GraphNodes`; ``None`` for the training graph.
        directed
            How a ``Data`` is cleaned, as in :meth:`fit`; ``None`` keeps what ``fit`` was given.
        """
        if isinstance(X, GraphNodes):
            return self.embed(X.data, directed=directed)[X.index]
        return self.embed(X, directed=directed)

    def embed(
        self,
        data: Data | Graph | PreparedGraph | None = None,
        out: str | Path | None = None,
        *,
        directed: bool | None = None,
    ) -> torch.Tensor:
        """Embeddings of ``data`` with the trained encoder: float32, on the CPU, one row per node. A ``Data`` is
        cleaned as :meth:`fit` cleaned its graph, so embedding the training data again gives :attr:`embedding_`.

        Parameters
        ----------
        data
            A PyG ``Data``, a :class:`~gca.graph.graph.Graph` or a :class:`~gca.augment.prepared.PreparedGraph` with
            the training graph's number of features (else a ``TrainingError``); ``None`` for the training graph.
        out
            A new ``.npy`` path: where the graph is embedded in blocks on the CPU, the embeddings are written there
            and the tensor returned is its mapping; ``None``: in memory.
        directed
            How a ``Data`` is cleaned, as in :meth:`fit`; ``None`` keeps what ``fit`` was given.
        """
        if self.model is None or (data is None and self.graph is None):
            untrained = self.model is None
            raise TrainingError("the model is not trained yet; call fit() first" if untrained else "no graph to embed")
        data = self.graph if data is None else data
        data = data.graph if isinstance(data, PreparedGraph) else data
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
        where the graph named its features (``gca embed`` reads another graph's named features into them).

        Parameters
        ----------
        path
            The file to write (replaced if it exists). An untrained estimator is a ``TrainingError``.
        """
        save_checkpoint(path, self.state())

    @classmethod
    def load(cls, path: str | Path, device: str = "auto", encoder: torch.nn.Module | None = None) -> GCA:
        """A trained estimator from :meth:`save`, ``gca train`` or a training checkpoint (:func:`load_checkpoint`):
        ``embed(data)`` works at once, ``embedding_`` is ``None`` until :meth:`fit`, ``feature_names_in_`` holds the
        names the file records (else ``None``).

        Parameters
        ----------
        path
            The file; a damaged or foreign one is a ``CheckpointError``.
        device
            Where the model is placed, as the constructor's ``device``.
        encoder
            For a model trained with your own encoder: a new module of the same class and shape, a copy of which the
            weights load into; ``None`` for gca's encoders (a model trained with yours is then a ``CheckpointError``).
        """
        return load_estimator(cls, path, device, encoder)


def clone(estimator: GCA, **changes: Any) -> GCA:
    """A fresh, untrained estimator with ``estimator``'s device, placement, parts and memory, and its configuration
    with ``changes`` (scikit-learn's ``clone`` and ``set_params`` in one). A user's encoder or objective is a copy of
    the one ``estimator`` was made with, at its initial weights; ``loggers`` are the same objects.

    Parameters
    ----------
    estimator
        The estimator to copy (fitted or not; it is not changed).
    **changes
        Config fields to change in the copy (``seed=1``, ``tau=0.5``), checked as ``GCAConfig.replace`` checks them.
    """
    # the device as given ("cpu", not torch.device("cpu")), so get_params of the copy equals the original's
    return GCA(
        estimator.config.replace(**changes),
        device=estimator._params["device"],
        progress=estimator.progress,
        objective=fresh(estimator._initial_objective),
        batches=estimator.batches,
        placement=estimator.placement,
        encoder=fresh(estimator._initial_encoder),
        loggers=estimator._params["loggers"],
        memory=estimator.memory,
    )
