"""Whether to train on the whole graph or in mini-batches: :func:`choose_training`, one rule read from the graph's
size, the device and the settings — never a clock or a test set, so every run of one command chooses alike.

| ``training`` | on a CPU (every device but CUDA) | on CUDA |
|---|---|---|
| ``"fast"``: :func:`fast_choice` | mini-batches from :data:`CPU_MIN_NODES` nodes | over :data:`CUDA_MAX_EXACT_NODES` |
| ``"auto"``: :func:`default_choice` | where exact is estimated over :data:`EXACT_BOUND_SECONDS` | as configured |
| ``"exact"``, ``"config"`` | as configured | as configured |

``"fast"`` is ``--fast``, ``"auto"`` ``gca train``'s default. Mini-batches are :data:`FAST_BATCH_SIZE` anchors with
fan-out :data:`FAST_FANOUT`, keeping the full-graph setting's updates (:func:`gca.config.mini_batch_epochs`); keys
the user set (``batch_size``, ``fanout``) are kept, and said so. :class:`LongRunHint` chooses nothing: it warns once
when a started run projects past :data:`LONG_RUN_SECONDS`. Design notes: docs/design/training.md.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import torch

from ..config import GCAConfig, mini_batch_epochs
from ..errors import option
from ..graph.features import SPARSE_FEATURE_DENSITY
from ..objective.blocked import CPU_KEEP_BYTES
from ..progress import duration, print_above_progress
from ..stderr import spoken

#: Anchors per mini-batch update (measured on the paper's graphs: docs/benchmarks.md, "Mini-batch on 2 CPU cores").
FAST_BATCH_SIZE = 1024
#: Neighbours sampled per node at every hop (one value serves every layer count).
FAST_FANOUT: tuple[int, ...] = (10,)
#: On a CPU, graphs of at least this many nodes (4 anchor sets) train in mini-batches; a smaller graph (Cora) stays
#: exact, where a mini-batch update is barely faster and its anchors would be a third of the graph
#: (measured: docs/large-graphs.md, "The fast path").
CPU_MIN_NODES = 4 * FAST_BATCH_SIZE
#: On a CUDA device, graphs of up to this many nodes train exactly (the crossover estimated above, rounded down).
CUDA_MAX_EXACT_NODES = 40_000

KEYS = ("batch_size", "fanout")


@dataclass(frozen=True)
class FastChoice:
    """What the fast path chose for one graph on one device, and why (one line, for the run's header).

    Parameters
    ----------
    batch_size
        The anchors per batch chosen; 0: the whole graph at every update.
    kept
        The keys the user set, which the choice leaves as they are.
    by
        ``"--fast"`` (:func:`fast_choice`) or ``"default"`` (:func:`default_choice`).
    exact_seconds
        The exact schedule's estimated seconds on this device; ``None`` where not estimated.
    """

    batch_size: int  # 0: the whole graph at every update
    fanout: tuple[int, ...]
    reason: str
    kept: tuple[str, ...] = ()  # keys the user set, which the choice leaves as they are
    by: str = "--fast"  # who chose: "--fast", or "default" (gca train's rule on a CPU: default_choice)
    exact_seconds: float | None = None  # the exact schedule's estimated seconds (default_choice)

    @property
    def mini_batch(self) -> bool:
        return self.batch_size > 0

    def layer(self) -> dict:
        """The configuration keys it sets: ``batch_size`` (and ``fanout`` with mini-batches), less those kept."""
        values = {"batch_size": self.batch_size, **({"fanout": self.fanout} if self.mini_batch else {})}
        return {key: value for key, value in values.items() if key not in self.kept}

    def keeping(self, given: Iterable[str]) -> FastChoice:
        """The same choice, leaving to the user the keys among ``given`` (those their file and overrides set)."""
        kept = tuple(key for key in KEYS if key in set(given))
        return dataclasses.replace(self, kept=kept)

    def apply(self, config: GCAConfig, num_nodes: int, world_size: int = 1) -> GCAConfig:
        """``config`` with the choice, and — when it trains in mini-batches — the epochs that keep ``config``'s
        number of updates (:func:`gca.config.mini_batch_epochs`). For a script::

            choice = fast_choice(data.num_nodes, "cpu")
            model = GCA(choice.apply(build_config("Amazon-Photo"), data.num_nodes)).fit(data)
        """
        config = config.replace(**self.layer())
        if config.batch_size and config.epochs:
            epochs, _ = mini_batch_epochs(
                config.epochs, num_nodes, config.batch_size, config.steps_per_epoch, world_size
            )
            config = config.replace(epochs=epochs)
        return config

    def describe(self) -> str:
        """``--fast chose …``: what was chosen (the header names batch size and fan-out), why, and what it kept."""
        what = "mini-batches" if self.mini_batch else "exact training (the whole graph at every update)"
        kept = f"; your {' and '.join(self.kept)} kept" if self.kept else ""
        if self.by == "default":
            keeps = "--exact keeps the paper's full-graph training" if self.mini_batch else "--fast for mini-batches"
            return f"{what} by default: {self.reason} ({keeps}){kept}"
        if "batch_size" in self.kept:  # the user's batch size decides between exact and mini-batch training
            return f"--fast kept your batch_size (it would have chosen {what}: {self.reason})"
        return f"--fast chose {what}: {self.reason}{kept}"

    def record(self, config: GCAConfig | None = None) -> dict:
        """For ``results.json`` (``fast_path``): what trained — ``config``'s batch size and fan-out, which may be
        the user's where they were kept — and, under ``chosen``, what the fast path chose and why, its fan-out one
        value per layer of ``config``'s encoder; ``chosen_by`` (``--fast`` or ``default``) and, where estimated,
        ``exact_estimate_seconds``."""
        fanout = list(self.fanout)
        if config is not None and self.mini_batch and len(fanout) == 1:  # one value serves every layer: say each
            fanout = fanout * config.layers
        chosen = {
            "training": "mini-batch" if self.mini_batch else "exact",
            "batch_size": self.batch_size,
            "fanout": fanout,
        }
        ran, batch = chosen, 0 if config is None else config.batch_size
        if config is not None:
            fanouts = list(config.fanouts) if batch else []
            ran = {"training": "mini-batch" if batch else "exact", "batch_size": batch, "fanout": fanouts}
        estimate = {} if self.exact_seconds is None else {"exact_estimate_seconds": round(self.exact_seconds, 1)}
        return {
            **ran,
            "chosen": chosen,
            "reason": self.reason,
            "kept_user_keys": list(self.kept),
            "chosen_by": self.by,
            **estimate,
        }


def choose_training(
    training: str, data: Any, device: str | torch.device = "cpu", config: GCAConfig | None = None, world_size: int = 1
) -> FastChoice | None:
    """What ``training`` chooses for ``data`` (a PyG ``Data``) on ``device`` — the table of the module docstring;
    ``None`` where the configuration decides. ``"auto"`` estimates ``config``'s exact schedule over ``world_size``
    processes."""
    if training == "fast":
        return fast_choice(data.num_nodes, device)
    if training == "auto":
        if config is None:
            raise ValueError('training="auto" estimates the exact schedule of a configuration; pass config')
        edges = 0 if data.edge_index is None else int(data.edge_index.shape[1])
        return default_choice(data.num_nodes, edges, data.x, config, device, world_size)
    if training not in ("exact", "config"):
        raise ValueError(f'training must be "fast", "auto", "exact" or "config", got {training!r}')
    return None


def fast_choice(num_nodes: int, device: str | torch.device = "cpu") -> FastChoice:
    """``training="fast"``'s choice for a graph of ``num_nodes`` nodes on ``device`` (the rule: module docstring)."""
    if num_nodes < 0:
        raise ValueError(f"num_nodes must be non-negative, got {num_nodes}")
    kind = torch.device(device).type
    where = "the CPU" if kind == "cpu" else kind  # other accelerators (mps) follow the CPU's rule
    if kind == "cuda":
        if num_nodes <= CUDA_MAX_EXACT_NODES:
            return FastChoice(
                0,
                (),
                f"{num_nodes:,} nodes on CUDA, up to {CUDA_MAX_EXACT_NODES:,}, where an exact "
                "update costs less than a mini-batch one",
            )
        return FastChoice(
            FAST_BATCH_SIZE,
            FAST_FANOUT,
            f"{num_nodes:,} nodes on CUDA, over {CUDA_MAX_EXACT_NODES:,}, "
            "where an exact update (O(N²)) costs more than a mini-batch one",
        )
    if num_nodes < CPU_MIN_NODES:
        return FastChoice(
            0,
            (),
            f"{num_nodes:,} nodes on {where}, below {CPU_MIN_NODES:,} (4 batches of "
            f"{FAST_BATCH_SIZE:,}), where an exact update costs about what a mini-batch one "
            "does",
        )
    return FastChoice(
        FAST_BATCH_SIZE,
        FAST_FANOUT,
        f"{num_nodes:,} nodes on {where}, at least {CPU_MIN_NODES:,}, "
        "where a mini-batch update costs a fraction of an exact one (O(N²))",
    )


# --- gca train's default on a CPU: the exact schedule's time, estimated -------------------------------------------

#: One core's seconds per unit of each term of :func:`exact_update_terms` (dense multiply-adds, similarity pairs,
#: sparse multiply-adds) and per update, fitted to timed exact updates by ``benchmarks/exact_cost.py`` (measured:
#: docs/large-graphs.md, "The default on a CPU").
CPU_EXACT_COSTS = (3.16e-11, 1.94e-9, 0.0)
CPU_EXACT_FIXED = 0.0
#: How many times faster two threads on two cores run an exact update than one does; the estimate is of two cores.
CPU_TWO_CORE_SPEEDUP = 1.7
#: ``gca train`` on a CPU trains in mini-batches by default where the paper's exact schedule is estimated to take
#: longer than this many seconds — the time past which the long-run warning (:class:`LongRunHint`)
#: would tell the user to shorten the run.
EXACT_BOUND_SECONDS = 3600.0


def exact_update_terms(
    num_nodes: int, num_edges: int, num_features: int, nonzeros: int | None, config: GCAConfig
) -> tuple[float, float, float]:
    """What one exact update of ``config``'s GCN encoder and the blocked objective costs on a CPU, for N =
    ``num_nodes`` nodes, E = ``num_edges`` directed edges (both directions of an undirected edge) and F =
    ``num_features``, in three counts that each take their own time per unit (:data:`CPU_EXACT_COSTS`):

    * **dense multiply-adds**: the objective's products over the 2N×2N similarities of the stacked views,
      (2N)²·d·(2 − ½·k) with k the share of them the forward pass keeps for the backward pass
      (:data:`gca.objective.blocked.CPU_KEEP_BYTES`); the encoder's dense products (forward and backward, both
      views) and the projection head's;
    * **similarity pairs**: (2N)²·(2 − ½·k), the exponentials and sums of each pair;
    * **sparse multiply-adds**: each layer's aggregation over the N + E entries of the normalised adjacency, and
      the first layer's product with sparse features (bag of words: at most a quarter of them non-zero).

    Parameters
    ----------
    nonzeros
        The features' non-zeros (sparse features: the product reads only those); ``None`` for N·F (dense).
    config
        The run's settings (``hidden``, ``proj_hidden``, ``layers``, ``first_layer_factor``).
    """
    n, rows = num_nodes, 2 * num_nodes
    d, width = config.hidden, config.first_layer_factor * config.hidden
    widths = [width] * (config.layers - 1) + [d]  # each layer's output
    entries = n * num_features if nonzeros is None else nonzeros
    sparse_x = entries <= SPARSE_FEATURE_DENSITY * n * num_features
    kept = min(1.0, CPU_KEEP_BYTES / max(2.0 * rows * rows, 1.0))  # fp32 upper triangle: 2 bytes a pair
    units = 2.0 - 0.5 * kept
    dense = rows * rows * d * units
    # per view: the later layers' H W and the projection head (forward + two backward products)
    dense += 2 * 3 * n * (sum(a * b for a, b in zip(widths, widths[1:], strict=False)) + 2 * d * config.proj_hidden)
    sparse = 2 * 2 * (num_edges + n) * sum(widths)  # M (H W), forward and backward, both views
    if sparse_x:
        sparse += 2 * 2 * entries * widths[0]  # X W and Xᵀ G
    else:
        dense += 2 * 2 * n * num_features * widths[0]
    return float(dense), float(rows * rows * units), float(sparse)


def exact_update_seconds(
    num_nodes: int, num_edges: int, num_features: int, nonzeros: int | None, config: GCAConfig
) -> float:
    """One exact update's estimated seconds on two cores of a CPU like the one measured: the terms of
    :func:`exact_update_terms` times their costs, plus :data:`CPU_EXACT_FIXED`, over :data:`CPU_TWO_CORE_SPEEDUP`."""
    return exact_update_seconds_of(exact_update_terms(num_nodes, num_edges, num_features, nonzeros, config))


def exact_update_seconds_of(terms: tuple[float, float, float]) -> float:
    """:func:`exact_update_seconds` of the terms :func:`exact_update_terms` gave."""
    one_core = CPU_EXACT_FIXED + sum(cost * term for cost, term in zip(CPU_EXACT_COSTS, terms, strict=True))
    return one_core / CPU_TWO_CORE_SPEEDUP


def exact_schedule_seconds(
    num_nodes: int,
    num_edges: int,
    features: torch.Tensor | None,
    config: GCAConfig,
    world_size: int = 1,
    count_features: bool = True,
) -> float:
    """``config.epochs`` exact updates' estimated seconds (:func:`exact_update_seconds`) shared by ``world_size``
    processes, for ``features`` = ``Data.x``; ``count_features=False`` leaves out the features' product."""
    width = 0 if features is None or features.dim() < 2 else int(features.shape[1])
    nonzeros = feature_nonzeros(features) if count_features else 0
    return config.epochs * exact_update_seconds(num_nodes, num_edges, width, nonzeros, config) / world_size


def feature_nonzeros(x: torch.Tensor | None) -> int:
    """The non-zeros of ``Data.x`` (dense, counted in blocks of rows, or sparse COO or CSR; none: 0)."""
    if x is None:
        return 0
    if x.layout == torch.sparse_coo:
        return int(x.coalesce()._nnz())
    if x.layout != torch.strided:
        return int(x.values().numel())
    return sum(int(torch.count_nonzero(block)) for block in x.split(65_536))


def default_choice(
    num_nodes: int,
    num_edges: int,
    features: torch.Tensor | None,
    config: GCAConfig,
    device: str | torch.device = "cpu",
    world_size: int = 1,
) -> FastChoice | None:
    """A job's ``training="auto"`` (``gca train`` without ``--fast`` or ``--exact``): on a CPU, the fast path's
    mini-batches where the exact schedule — ``config.epochs`` updates of the whole graph, shared by ``world_size``
    processes — is estimated (:func:`exact_update_seconds`) to take longer than :data:`EXACT_BOUND_SECONDS`, else
    exact training; ``None`` on other devices. The estimate reads the graph's size and ``config`` only, no clock, so
    every machine chooses alike.

    Parameters
    ----------
    num_edges
        The directed edges (both directions of an undirected edge).
    features
        ``Data.x`` (its width and, where the estimate needs them, its non-zeros); ``None`` for none.
    config
        The run's settings (``epochs``, the encoder's widths).
    """
    if torch.device(device).type != "cpu":
        return None
    # without the features' product first: a lower bound, enough where it is over the bound
    seconds = exact_schedule_seconds(num_nodes, num_edges, features, config, world_size, count_features=False)
    if seconds <= EXACT_BOUND_SECONDS:
        seconds = exact_schedule_seconds(num_nodes, num_edges, features, config, world_size)
    plan = f"{config.epochs:,} update{'s' if config.epochs != 1 else ''} of all {num_nodes:,} nodes"
    over = seconds > EXACT_BOUND_SECONDS
    reason = (
        f"the paper's exact training ({plan}) is estimated at {_estimate(seconds)} on 2 CPU cores, "
        f"{'over' if over else 'within'} {_hours(EXACT_BOUND_SECONDS)}"
    )
    if over:
        return FastChoice(FAST_BATCH_SIZE, FAST_FANOUT, reason, by="default", exact_seconds=seconds)
    return FastChoice(0, (), reason, by="default", exact_seconds=seconds)


def _estimate(seconds: float) -> str:
    """``about 9.4 h`` … ``about 1 s``, ``under 1 s``: an estimate that would round to nothing is said so."""
    return f"about {_hours(seconds)}" if seconds >= 0.5 else "under 1 s"


def _hours(seconds: float) -> str:
    """``9.4 h``, ``12 min``, ``40 s``."""
    if seconds >= 3600:
        return f"{round(seconds / 3600, 1):,g} h"
    if seconds >= 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds:.0f} s"


# --- the long-run warning of gca train ------------------------------------------------------------------------------

#: Projected training time above which ``gca train`` says, once, how to make the run shorter.
LONG_RUN_SECONDS = 3600.0


class LongRunHint:
    """``on_update`` hook (:meth:`gca.GCA.fit`): once the first updates are timed — :attr:`FIRST_UPDATES`, or fewer
    where they took :attr:`FIRST_SECONDS` already — if the rest would take over ``limit`` seconds, one warning line
    saying how long and what shortens it (the fast path, or fewer updates for a mini-batch run).

    Parameters
    ----------
    config
        The run's configuration (its ``epochs``, ``batch_size`` and ``steps_per_epoch``).
    num_nodes
        The graph's nodes.
    limit
        Warn when the remaining updates would take longer than this many seconds.
    clock
        The clock the first updates are timed with (from the hook's making).
    emit
        Where the warning line goes; ``None`` for stderr, above a progress bar.
    device
        The training device: exact training is told of the fast path where :func:`fast_choice` would choose it there.
    exact_asked
        Whether ``training="exact"`` asked for exact training (the warning then says what dropping it does).
    """

    #: Updates timed before the projection, at most.
    FIRST_UPDATES = 3
    #: Seconds of updates that are enough to project from, whatever their number.
    FIRST_SECONDS = 2.0

    def __init__(
        self,
        config: Any,
        num_nodes: int,
        limit: float = LONG_RUN_SECONDS,
        clock=time.perf_counter,
        emit=None,
        device: Any = "cpu",
        exact_asked: bool = False,
    ) -> None:
        self.config, self.num_nodes, self.limit, self.clock = config, num_nodes, limit, clock
        self.emit = emit or print_above_progress
        self.device, self.exact_asked = device, exact_asked
        self.start = clock()
        self.timed = 0  # updates this process made so far
        self.done = False

    def __call__(self, update: int, updates: int | None) -> None:
        """After update ``update`` (counted from 1 over the run, on from a resumed checkpoint's) of ``updates``."""
        if self.done or not updates:
            return
        self.timed += 1
        spent = self.clock() - self.start
        if self.timed < self.FIRST_UPDATES and spent < self.FIRST_SECONDS and update < updates:
            return
        self.done = True
        left = updates - update
        remaining = spent / self.timed * left
        if remaining <= self.limit:
            return
        config, n = self.config, self.num_nodes
        what = "epoch" if not config.batch_size else "update"
        first = f"the first {what}" if self.timed == 1 else f"the first {self.timed} {what}s"
        head = f"{first} took {spent:,.1f} s, so the other {left:,} {what}s need about {duration(remaining)}"
        if not config.batch_size:
            if fast_choice(n, self.device).mini_batch:
                instead = f"instead of {option('training', 'exact')} " if self.exact_asked else ""
                advice = (
                    f"exact training compares all {2 * n:,}² pairs of the two views' nodes at every update; "
                    f"for a graph this large mini-batches are far cheaper: {option('training', 'fast')} {instead}"
                    f"trains in mini-batches of {FAST_BATCH_SIZE:,} anchors, as many updates (README: Large graphs)"
                )
            else:
                advice = f"lower {option('epochs')}, or train on a GPU ({option('device', 'cuda')})"
        else:
            steps = config.steps_per_epoch or -(-n // config.batch_size)
            advice = (
                f"each epoch makes {steps:,} updates; fewer epochs or {option('steps_per_epoch', command_line='N')} "
                "shorten it (updates, not epochs, set how far training goes: README: Large graphs)"
            )
        self.emit(spoken(f"gca: warning: {head}; {advice}"))
