"""Hyperparameters: one plain dataclass, per-dataset files, and checked ``key=value`` overrides.

Precedence (lowest first): the dataclass defaults → the dataset's shipped file (``gca/configs/<name>.toml``) →
``--config FILE`` → ``--set key=value`` and the dedicated CLI flags (``--epochs``, ``--seed``, ``--centrality``).
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import sys
from dataclasses import dataclass, fields
from importlib import resources
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from .names import CENTRALITY_CHOICES, canonical_name

ACTIVATIONS = ("relu", "prelu", "rrelu", "elu")
CHOICES: dict[str, tuple[str, ...]] = {
    "activation": ACTIVATIONS,
    "centrality": CENTRALITY_CHOICES,
    "edge_drop": ("adaptive", "uniform"),
    "feature_mask": ("adaptive", "uniform"),
    "edge_scheme": ("paper", "authors"),
    "feature_weighting": ("auto", "binary", "dense"),
    "feature_norm": ("row", "none"),
}


class ConfigError(ValueError):
    """A configuration value or file is invalid; the message is one line meant for the user."""


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
    # Encoder and projection head.
    layers: int = 2
    hidden: int = 128  # embedding width F'; inner GCN layers are first_layer_factor × hidden wide
    first_layer_factor: int = 2
    proj_hidden: int = 128
    activation: str = "relu"
    # Optimisation (Algorithm 1, Appendix A).
    lr: float = 5e-4
    weight_decay: float = 1e-5
    epochs: int = 500
    seed: int = 0

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Raise :class:`ConfigError` naming the first invalid value."""
        for name in ("p_e1", "p_e2", "p_f1", "p_f2"):
            value = getattr(self, name)
            if not 0.0 <= value < 1.0:
                raise ConfigError(f"{name} must be a probability in [0, 1), got {value}")
        if not 0.0 < self.p_tau < 1.0:
            raise ConfigError(f"p_tau must lie in (0, 1) (the paper requires p_tau < 1), got {self.p_tau}")
        if not self.tau > 0.0:
            raise ConfigError(f"tau must be positive, got {self.tau}")
        if not self.lr > 0.0:
            raise ConfigError(f"lr must be positive, got {self.lr}")
        if self.weight_decay < 0.0:
            raise ConfigError(f"weight_decay must be non-negative, got {self.weight_decay}")
        for name in ("hidden", "proj_hidden", "first_layer_factor"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.layers < 2:
            raise ConfigError(f"layers must be at least 2 (the paper's encoder has two GCN layers), got {self.layers}")
        if self.epochs < 0:
            raise ConfigError(f"epochs must be non-negative, got {self.epochs}")
        if not 0 <= self.seed < 2**32:
            raise ConfigError(f"seed must lie in [0, 2^32), got {self.seed}")
        if self.block_size < 0:
            raise ConfigError(f"block_size must be 0 (automatic) or positive, got {self.block_size}")
        for name, allowed in CHOICES.items():
            if getattr(self, name) not in allowed:
                raise ConfigError(f"{name} must be one of {', '.join(allowed)}; got {getattr(self, name)!r}")

    def replace(self, **changes: Any) -> GCAConfig:
        """A copy with ``changes`` applied and checked (unknown keys are an error with a suggestion)."""
        _check_keys(changes)
        return dataclasses.replace(self, **{k: _coerce(k, v) for k, v in changes.items()})

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


_FIELDS = {f.name: f for f in fields(GCAConfig)}
_TYPES = {"float": float, "int": int, "str": str}


def _check_keys(keys: Any) -> None:
    for key in keys:
        if key not in _FIELDS:
            close = difflib.get_close_matches(key, list(_FIELDS), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else f"; valid keys: {', '.join(_FIELDS)}"
            raise ConfigError(f"unknown config key {key!r}{hint}")


def _coerce(key: str, value: Any) -> Any:
    kind = _TYPES[_FIELDS[key].type] if isinstance(_FIELDS[key].type, str) else _FIELDS[key].type
    if kind is str:
        return str(value).lower() if key in CHOICES else str(value)
    if isinstance(value, bool):
        raise ConfigError(f"{key} must be a number, got {value!r}")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{key} must be a number, got {value!r}") from None
    if kind is int:
        if number != int(number):
            raise ConfigError(f"{key} must be an integer, got {value!r}")
        return int(number)
    return number


def parse_overrides(items: list[str]) -> dict[str, str]:
    """``["tau=0.5", "epochs=100"]`` → ``{"tau": "0.5", "epochs": "100"}`` (types are checked on apply)."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--set expects key=value, got {item!r}")
        out[key.strip()] = value.strip()
    return out


def read_config_file(path: str | Path) -> dict[str, Any]:
    """Read a TOML or JSON file of config keys (a ``[gca]`` table in TOML is also accepted)."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror or exc}") from None
    try:
        data = json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
    except (ValueError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"config file {path} is not valid {path.suffix.lstrip('.') or 'TOML'}: {exc}") from None
    if isinstance(data, dict) and isinstance(data.get("gca"), dict):
        data = data["gca"]
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path} must hold a table of key = value pairs")
    _check_keys(data)
    return data


def shipped_config(dataset: str) -> dict[str, Any]:
    """The hyperparameters shipped for a named dataset, or ``{}`` when none are shipped."""
    name = canonical_name(dataset) + ".toml"
    resource = resources.files("gca") / "configs" / name
    if not resource.is_file():
        return {}
    return tomllib.loads(resource.read_text())


def build_config(
    dataset: str | None = None,
    config_file: str | Path | None = None,
    overrides: dict[str, Any] | None = None,
) -> GCAConfig:
    """Merge defaults, the dataset's shipped file, a user file and overrides, in that order."""
    merged: dict[str, Any] = {}
    if dataset:
        merged.update(shipped_config(dataset))
    if config_file:
        merged.update(read_config_file(config_file))
    merged.update(overrides or {})
    return GCAConfig().replace(**merged)
