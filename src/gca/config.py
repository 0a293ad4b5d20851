"""Hyperparameters: one plain dataclass, per-dataset files, and checked ``key=value`` overrides.

Precedence (lowest first, :func:`build_config`): the dataclass defaults → the dataset's shipped file
(``gca/configs/<name>.toml``) → ``config_file`` (``--config``) → ``overrides`` (``--set key=value``, ``--epochs``,
``--seed``, ``--centrality``). ``config_file`` may also name a shipped alternative (:data:`NAMED_CONFIGS`):
``"authors"`` is the authors' parameter files' setting, which differs from Table 5 for Amazon-Computers and Wiki-CS;
``"tuned"`` a setting found by ``gca tune --space wide`` on validation labels (``gca/configs/tuned/``).
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import math
import numbers
import re
from dataclasses import dataclass, fields
from importlib import resources
from pathlib import Path
from typing import Any

from .choices import CENTRALITY_CHOICES, ENCODERS, canonical_name
from .errors import UserError, option
from .io import parse_document, read_document

ACTIVATIONS = ("relu", "prelu", "rrelu", "elu")
CHOICES: dict[str, tuple[str, ...]] = {
    "activation": ACTIVATIONS,
    "centrality": CENTRALITY_CHOICES,
    "edge_drop": ("adaptive", "uniform"),
    "feature_mask": ("adaptive", "uniform"),
    "edge_scheme": ("paper", "authors"),
    "feature_weighting": ("auto", "binary", "dense"),
    "feature_norm": ("row", "none"),
    "loss_backend": ("auto", "blocked", "attention"),
    "precision": ("auto", "fp32", "tf32", "bf16"),
    "compile": ("off", "on"),
    "encoder": ENCODERS,
    "sage_aggregator": ("gcn", "mean"),
}


#: The automatic warm-up's first learning rate (GCAConfig.warmup_updates).
WARMUP_FIRST_RATE = 1e-3


class ConfigError(UserError, ValueError):
    """A configuration value or file is invalid; the message is one line meant for the user."""


class UnknownKeyError(ConfigError, TypeError):
    """A key that is no field of :class:`GCAConfig`; a ``TypeError`` too, as Python's own for an unexpected keyword
    is."""


@dataclass
class GCAConfig:
    """Everything that defines one GCA training run.

    The defaults are GRACE's Cora setting (Zhu et al., 2020, Appendix) run for 500 epochs; Table 5 of the GCA
    paper gives the per-dataset values shipped in ``gca/configs``.
    """

    # Augmentation (Section 3.2): removal / masking probabilities of view 1 and view 2, and the cut-off p_τ.
    p_e1: float = 0.2
    p_e2: float = 0.4
    p_f1: float = 0.3
    p_f2: float = 0.4
    p_tau: float = 0.7
    centrality: str = "degree"  # degree | eigenvector | pagerank | uniform (= GCA–T–A, i.e. GRACE)
    edge_drop: str = "adaptive"  # uniform → the GCA–T ablation
    feature_mask: str = "adaptive"  # uniform → the GCA–A ablation
    edge_scheme: str = "paper"  # "authors": tail-node centrality, each direction sampled on its own
    feature_weighting: str = "auto"  # binary: w_i = Σ x_ui φ(u); dense: Σ |x_ui| φ(u); auto detects {0, 1}
    feature_norm: str = "row"  # encoder input: rows scaled to sum 1 (standard GCN preprocessing) or "none"
    # Objective (Eq. 1-2).
    tau: float = 0.4
    block_size: int = 0  # rows of the similarity matrix per block in the fast objective; 0 = automatic
    loss_backend: str = "auto"  # blocked (gca's kernel) | attention (PyTorch's fused kernels) | auto (see precision)
    # The training update's precision (gca.precision): fp32 | tf32 (the objective on CUDA tensor cores; fp32 on CPUs)
    # | bf16 (mixed: dense products in bf16, weights, sparse products and the loss in fp32; attention backend only)
    # | auto: bf16 + attention on a GPU with bf16 tensor cores or a CPU whose bf16 units measure faster, else fp32
    precision: str = "auto"
    # on: the encoder and projection head run through torch.compile (gca.train.compiled); a failed compile trains
    # on eagerly, said in one line. off (the default): it gains little on CPUs (measured: docs/benchmarks.md)
    compile: str = "off"
    # Encoder and projection head. gcn: gca's own sparse GCN (the paper's); gat, sage, gin: PyTorch Geometric's
    # GATConv, SAGEConv, GINConv layers (gca.nn.encoders).
    encoder: str = "gcn"
    # GraphSAGE's aggregator (Hamilton et al., 2017, §3.3): gcn, the mean over the node and its neighbours with one
    # weight (GraphSAGE-GCN); mean, the neighbours' mean beside the node's own weight (GraphSAGE-mean)
    sage_aggregator: str = "gcn"
    layers: int = 2
    hidden: int = 128  # embedding width F'; inner GCN layers are first_layer_factor × hidden wide
    first_layer_factor: int = 2
    proj_hidden: int = 128
    activation: str = "relu"
    # Mini-batch training on sampled subgraphs (gca.train.batches.NeighborBatches); batch_size = 0 trains on the whole
    # graph every step, as the paper does.
    batch_size: int = 0  # anchor nodes per step
    fanout: tuple[int, ...] = (10, 10)  # neighbours sampled per node at each hop (−1: all); one value: every hop
    steps_per_epoch: int = 0  # 0: one pass over all nodes per epoch
    # Optimisation (Algorithm 1, Appendix A).
    lr: float = 5e-4
    # Updates over which the learning rate rises linearly to lr (gca.train.loop.warmup_schedule); 0: Adam at lr from
    # the first update, as Algorithm 1; -1: automatic, ceil(lr / 0.001) — see warmup_updates. One update per epoch
    # on the whole graph.
    warmup_steps: int = -1
    weight_decay: float = 1e-5
    epochs: int = 500
    seed: int = 0

    def __post_init__(self) -> None:
        if isinstance(self.fanout, list):  # from JSON, TOML or a checkpoint
            self.fanout = tuple(self.fanout)
        self.validate()

    def validate(self) -> None:
        """Raise :class:`ConfigError` naming the first invalid value: wrong type, not finite, or out of range."""
        for name in _FIELDS:
            _check_value(name, getattr(self, name))
        if self.precision == "bf16" and self.loss_backend == "blocked":
            raise ConfigError("precision=bf16 needs loss_backend=attention (the blocked objective computes in fp32)")
        if self.batch_size == 1:
            raise ConfigError("batch_size must be 0 (the whole graph) or at least 2 anchors, got 1")
        if self.batch_size and len(self.fanout) not in (1, self.layers):
            raise ConfigError(
                f"fanout has {len(self.fanout)} entries but the encoder has {self.layers} layers; give one per layer "
                f"(e.g. {option('fanout', [10] * self.layers, ','.join(['10'] * self.layers))}) or one for all"
            )

    @property
    def warmup_updates(self) -> int:
        """Updates of the learning-rate warm-up. Automatic (``warmup_steps = -1``): ⌈lr / 0.001⌉, so the first update
        moves each weight by at most 0.001 (Adam's first step is ±lr per weight) and the rate then rises linearly to lr;
        at lr ≤ 0.001, no warm-up, as Algorithm 1 (docs/method.md, "Collapse and the warm-up")."""
        if self.warmup_steps >= 0:
            return self.warmup_steps
        return max(1, math.ceil(self.lr / WARMUP_FIRST_RATE - 1e-9))

    @property
    def fanouts(self) -> tuple[int, ...]:
        """The fan-out of every hop, one per encoder layer."""
        return self.fanout * self.layers if len(self.fanout) == 1 else self.fanout

    def replace(self, **changes: Any) -> GCAConfig:
        """A copy with ``changes`` applied and checked; this one is not changed.

        Parameters
        ----------
        **changes
            Fields and their new values (``tau=0.5``); a string or NumPy scalar is read as the field's type (``"0.5"``,
            ``np.int64(2)``). An unknown field is an :class:`UnknownKeyError`, a refused value a :class:`ConfigError`.
        """
        _check_keys(changes)
        return dataclasses.replace(self, **{k: _coerce(k, v) for k, v in changes.items()})

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_saved(cls, saved: dict[str, Any]) -> GCAConfig:
        """The configuration a checkpoint recorded (:meth:`to_dict`), read as meant when written: a GraphSAGE model
        whose record has no ``sage_aggregator`` uses PyTorch Geometric's mean aggregator."""
        saved = dict(saved)
        if saved.get("encoder") == "sage":
            saved.setdefault("sage_aggregator", "mean")
        return cls(**saved)


_FIELDS = {f.name: f for f in fields(GCAConfig)}
_TYPES = {"float": float, "int": int, "str": str, "tuple[int, ...]": tuple}


def _check_keys(keys: Any) -> None:
    for key in keys:
        if key not in _FIELDS:
            close = difflib.get_close_matches(key, list(_FIELDS), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else f"; valid keys: {', '.join(_FIELDS)}"
            raise UnknownKeyError(f"unknown config key {key!r}{hint}")


_dataclass_init = GCAConfig.__init__


@functools.wraps(_dataclass_init)
def _checked_init(self: GCAConfig, *args: Any, **kwargs: Any) -> None:
    """The dataclass's ``__init__``, with an unknown keyword named and a near key suggested:
    ``GCAConfig(lrr=0.1)`` → "unknown config key 'lrr'; did you mean 'lr'?"."""
    _check_keys(kwargs)
    _dataclass_init(self, *args, **kwargs)


GCAConfig.__init__ = _checked_init  # type: ignore[method-assign]


#: Numeric keys: (lowest, highest, lowest allowed?, highest allowed?). Bounds beyond the paper's values keep a typo
#: (an extra zero, a sign) from becoming an hour of training or an allocation failure.
RANGES: dict[str, tuple[float, float, bool, bool]] = {
    "p_e1": (0.0, 1.0, True, False),
    "p_e2": (0.0, 1.0, True, False),
    "p_f1": (0.0, 1.0, True, False),
    "p_f2": (0.0, 1.0, True, False),
    "p_tau": (0.0, 1.0, False, False),
    "tau": (0.0, 100.0, False, True),
    "lr": (0.0, 10.0, False, True),
    "weight_decay": (0.0, 10.0, True, True),
    "block_size": (0, 2**31 - 1, True, True),
    "layers": (2, 16, True, True),
    "hidden": (1, 65_536, True, True),
    "first_layer_factor": (1, 64, True, True),
    "proj_hidden": (1, 65_536, True, True),
    "epochs": (0, 10_000_000, True, True),
    "warmup_steps": (-1, 10_000_000, True, True),
    "seed": (0, 2**32 - 1, True, True),
    "batch_size": (0, 2**31 - 1, True, True),
    "steps_per_epoch": (0, 10_000_000, True, True),
}
#: Largest fan-out accepted (−1 means all neighbours) and most hops.
MAX_FANOUT, MAX_HOPS = 1_000_000, 16
_NOTES = {
    "p_tau": " (the paper requires p_tau < 1)",
    "layers": " (the paper's encoder has two GCN layers)",
    "block_size": " (0 chooses it automatically)",
    "warmup_steps": " (-1 chooses it from lr, 0 turns the warm-up off)",
}


def _kind(key: str) -> type:
    kind = _FIELDS[key].type
    return _TYPES[kind] if isinstance(kind, str) else kind


def _check_value(key: str, value: Any) -> None:
    kind = _kind(key)
    if kind is tuple:
        valid = (
            isinstance(value, tuple)
            and 1 <= len(value) <= MAX_HOPS
            and all(isinstance(k, int) and not isinstance(k, bool) and (k == -1 or 1 <= k <= MAX_FANOUT) for k in value)
        )
        if not valid:
            raise ConfigError(
                f"{key} must be 1 to {MAX_HOPS} integers, each in [1, {MAX_FANOUT}] or -1 (all neighbours), "
                f"like 10,10; got {value!r}"
            )
        return
    if kind is str:
        if not isinstance(value, str):
            raise ConfigError(f"{key} must be text, got {value!r}")
        if key in CHOICES and value not in CHOICES[key]:
            raise ConfigError(f"{key} must be one of {', '.join(CHOICES[key])}; got {value!r}")
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (kind is int and not isinstance(value, int)):
        raise ConfigError(f"{key} must be {'an integer' if kind is int else 'a number'}, got {value!r}")
    low, high, low_ok, high_ok = RANGES[key]
    inside = (value >= low if low_ok else value > low) and (value <= high if high_ok else value < high)
    finite = isinstance(value, int) or math.isfinite(value)  # an int beyond a float's range is finite, and no error
    if not finite or not inside:
        span = f"[{low}, {high}]" if kind is int else f"{'[('[not low_ok]}{low:g}, {high:g}{'])'[not high_ok]}"
        what = "an integer" if kind is int else "a probability" if key.startswith("p_") else "a finite number"
        shown = repr(value) if len(repr(value)) <= 40 else f"a number of {len(str(abs(value)))} digits"
        raise ConfigError(f"{key} must be {what} in {span}{_NOTES.get(key, '')}, got {shown}")


def _coerce(key: str, value: Any) -> Any:
    """A value from the command line, a config file or Python as the key's type (text → number; a NumPy scalar, as
    ``ParameterGrid`` over ``np.arange`` gives, → ``int`` / ``float``); ranges are :meth:`GCAConfig.validate`'s."""
    kind = _kind(key)
    if kind is tuple:
        items = value.strip().strip("[]()").split(",") if isinstance(value, str) else value
        if isinstance(items, numbers.Integral) and not isinstance(items, bool):
            items = [items]
        if not isinstance(items, (list, tuple)):
            raise ConfigError(f"{key} must be a list of integers like 10,10; got {value!r}")
        out = []
        for item in items:
            text = item.strip() if isinstance(item, str) else item
            if isinstance(text, str) and re.fullmatch(r"[+-]?\d+", text):
                text = int(text)
            if not isinstance(text, numbers.Integral) or isinstance(text, bool):
                raise ConfigError(f"{key} must be a list of integers like 10,10; got {value!r}")
            out.append(int(text))
        return tuple(out)
    if kind is str:
        if not isinstance(value, str):
            raise ConfigError(f"{key} must be text, got {value!r}")
        return value.strip().lower() if key in CHOICES else value
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, str)):  # NumPy's bool is no number either
        raise ConfigError(f"{key} must be a number, got {value!r}")
    if isinstance(value, str):
        text = value.strip()
        if kind is int and re.fullmatch(r"[+-]?\d+", text):
            return int(text)  # exact, however many digits
        try:
            value = float(text)
        except ValueError:
            raise ConfigError(f"{key} must be a number, got {text!r}") from None
    if not math.isfinite(value):
        raise ConfigError(f"{key} must be a finite number, got {value!r}")
    if kind is int:
        if value != int(value):
            raise ConfigError(f"{key} must be an integer, got {value!r}")
        return int(value)
    return float(value)


def parse_overrides(items: list[str]) -> dict[str, str]:
    """``["tau=0.5", "epochs=100"]`` → ``{"tau": "0.5", "epochs": "100"}``: keys and values stripped of surrounding
    spaces, a key given twice keeping its last value (types are checked on apply).

    Parameters
    ----------
    items
        ``key=value`` strings (as ``--set`` takes them); one without ``=`` or with an empty key is a
        :class:`ConfigError`.
    """
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"{option('parse_overrides.items')} expects key=value, got {item!r}")
        out[key.strip()] = value.strip()
    return out


def read_config_file(path: str | Path) -> dict[str, Any]:
    """The keys and values of a TOML or JSON file of config keys (a ``[gca]`` table in TOML too), not yet checked
    against the fields' types.

    Parameters
    ----------
    path
        A ``.toml`` or ``.json`` file; a missing or unreadable file, a syntax error, or a key that is no
        :class:`GCAConfig` field is a :class:`ConfigError`.
    """
    data = read_document(path, "config", ConfigError)
    if isinstance(data, dict) and isinstance(data.get("gca"), dict):
        data = data["gca"]
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path} must hold a table of key = value pairs")
    _check_keys(data)
    return data


#: Shipped alternatives to a dataset's default setting, by the name ``config_file`` takes (:func:`build_config`).
NAMED_CONFIGS = ("authors", "tuned")


def shipped_config(dataset: str, variant: str = "") -> dict[str, Any]:
    """The hyperparameters shipped for ``dataset`` in any spelling (``variant``: ``""`` for the paper's setting, or one
    of :data:`NAMED_CONFIGS`); ``{}`` when none are."""
    resource = resources.files("gca") / "configs"
    if variant:
        resource = resource / variant
    resource = resource / (canonical_name(dataset) + ".toml")
    if not resource.is_file():
        return {}
    return parse_document(resource.read_text(), "toml")


def is_named_config(config_file: str | Path | None) -> bool:
    """Whether ``config_file`` names a shipped alternative rather than a file (a file of that name wins)."""
    return config_file is not None and str(config_file) in NAMED_CONFIGS and not Path(config_file).exists()


def _config_layer(dataset: str | None, config_file: str | Path | None) -> dict[str, Any]:
    if config_file is None:
        return {}
    if not is_named_config(config_file):
        return read_config_file(config_file)
    if dataset is None:  # checked again once the dataset is known
        return {}
    layer = shipped_config(dataset, str(config_file))
    if not layer:
        have = shipped_for(str(config_file))
        where = f"there is one for {', '.join(have)}" if have else "none is shipped yet"
        raise ConfigError(
            f"{option('config_file', str(config_file))}: no such setting is shipped for {dataset} ({where}); give a "
            "TOML or JSON file instead"
        )
    return layer


def shipped_for(variant: str) -> list[str]:
    """The datasets (as their files are named) a shipped alternative ``variant`` has a setting for."""
    folder = resources.files("gca") / "configs" / variant
    return sorted(p.name.removesuffix(".toml") for p in folder.iterdir() if p.name.endswith(".toml"))


def epochs_given(config_file: str | Path | None, overrides: dict[str, Any] | None) -> bool:
    """Whether the user set ``epochs`` (in ``overrides`` or their own config file) rather than taking a shipped
    setting's."""
    if "epochs" in (overrides or {}):
        return True
    return config_file is not None and not is_named_config(config_file) and "epochs" in read_config_file(config_file)


def mini_batch_epochs(
    epochs: int, num_nodes: int, batch_size: int, steps_per_epoch: int = 0, world_size: int = 1
) -> tuple[int, int]:
    """(epochs, updates per epoch) that keep a full-graph setting's ``epochs`` updates in mini-batch training:
    ⌈``epochs`` / :func:`batches_per_epoch`⌉ epochs (at least 1; 0 stays 0), which a longer run would overshoot."""
    steps = batches_per_epoch(num_nodes, batch_size, steps_per_epoch, world_size)
    return max(1, math.ceil(epochs / steps)) if epochs else 0, steps


def batches_per_epoch(num_nodes: int, batch_size: int, steps_per_epoch: int = 0, world_size: int = 1) -> int:
    """Updates one epoch makes: 1 on the whole graph (``batch_size`` 0); else ``steps_per_epoch``, or one pass over the
    N nodes in ⌈N / (B·K)⌉ batches of B = ``batch_size`` over K = ``world_size`` processes."""
    if not batch_size:
        return 1
    return steps_per_epoch or max(1, math.ceil(num_nodes / (batch_size * world_size)))


def planned_updates(config: GCAConfig, num_nodes: int, world_size: int = 1) -> int:
    """The updates a run of ``config`` makes on a graph of ``num_nodes`` nodes: epochs × :func:`batches_per_epoch`."""
    return config.epochs * batches_per_epoch(num_nodes, config.batch_size, config.steps_per_epoch, world_size)


def build_config(
    dataset: str | None = None, config_file: str | Path | None = None, overrides: dict[str, Any] | None = None
) -> GCAConfig:
    """Merge defaults, the dataset's shipped file, a user file (or a named alternative such as ``authors``) and
    overrides, in that order. Each layer is checked on its own, so an invalid value is a :class:`ConfigError` even when
    a later layer overrides it; an unknown key is an :class:`UnknownKeyError` with a suggestion.

    Parameters
    ----------
    dataset
        A dataset name whose shipped setting (``gca/configs``, Table 5 of the paper) is the first layer; ``None`` or a
        name with no shipped file (a path, your own graph) starts from the defaults.
    config_file
        A TOML or JSON file of config keys, or the name of a shipped alternative (``"authors"``; a file of that name
        wins); ``None`` for none.
    overrides
        Field → value, applied last (strings are read as the field's type, as ``--set`` gives them).
    """
    layers = [shipped_config(dataset) if dataset else {}, _config_layer(dataset, config_file), overrides or {}]
    merged: dict[str, Any] = {}
    for layer in layers:
        GCAConfig().replace(**layer)  # every layer checked on its own, also values a later layer overrides
        merged.update(layer)
    return GCAConfig().replace(**merged)
