"""The fast path: whether to train on the whole graph or in mini-batches, chosen from the graph's size and the
device — ``gca train --fast``, ``gca reproduce --fast`` and :func:`fast_choice` in Python.

Exact GCA (the paper's Algorithm 1) computes the objective over all N nodes at every update: O(N²·d) time. Mini-batch
GCA (:class:`gca.train.batches.NeighborBatches`) makes the same number of updates, each over B anchor nodes and their
sampled neighbourhood: O(B²·d), whatever N is. Which one is faster depends on N and on the device, and both reach
the same accuracy on the paper's graphs (docs/benchmarks.md, "Mini-batch on 2 CPU cores"):

* **CPU.** On 2 cores of an AMD EPYC (PyTorch 2.13.0, 2026-11-27) an exact update takes 0.098 s on Cora
  (2,708 nodes), 1.26 s on Amazon-Photo (7,650), 2.60 s on Amazon-Computers (13,752) and 8.46 s on Coauthor-CS
  (18,333); an update of B = 1,024 anchors with fan-out 10 at each hop takes 0.19, 0.16 and 0.28 s on the last
  three. With ``batch_size`` 1,024 the fast path trains in mini-batches from :data:`CPU_MIN_NODES` nodes
  (4·B) up: below that an anchor set is a third of the graph or more, the exact update costs about what a mini-batch
  one does (Cora: :data:`CPU_MIN_NODES`'s comment) and the paper's training is kept.
* **CUDA.** On one H100 an exact update takes 9.0 ms (Photo) and 10.7 ms (Computers), a mini-batch one 21.8 and
  25.1 ms — its subgraph is sampled on the CPU — and 38 ms at ogbn-products' size; the exact objective alone takes
  12.79 s at N = 10⁶ and grows as N². The two meet near N ≈ 44,000 (12.79 s·(N/10⁶)² = 25 ms): the fast path
  keeps exact training up to :data:`CUDA_MAX_EXACT_NODES` nodes.

The rule reads the node count and the device only — never a test set: B, the fan-out and the thresholds are
fixed by the measurements above. A mini-batch run keeps the full-graph setting's number of updates
(:func:`gca.config.mini_batch_epochs`). Keys the user sets (``--set batch_size=…``, ``fanout``, their own config
file) are theirs: the fast path fills in only what they left unset, and says which it kept.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import torch

from ..config import GCAConfig, mini_batch_epochs

#: Anchors per mini-batch update: the batch measured on the paper's graphs (the measurements above).
FAST_BATCH_SIZE = 1024
#: Neighbours sampled per node at every hop (one value serves every layer count).
FAST_FANOUT: tuple[int, ...] = (10,)
#: On a CPU, graphs of at least this many nodes train in mini-batches: 4 anchor sets. Cora (2,708 nodes) stays
#: exact — 0.098 s per exact update on 2 cores, against 0.070 s per mini-batch one (``python
#: benchmarks/update_profile.py --dataset Cora --threads 2``, 2026-11-27): at most 1.4× faster, while each
#: update's anchors would be a third of the graph.
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
    fanout
        The fan-out per hop chosen.
    reason
        Why, in words.
    kept
        The keys the user set, which the choice leaves as they are.
    """

    batch_size: int  # 0: the whole graph at every update
    fanout: tuple[int, ...]
    reason: str
    kept: tuple[str, ...] = ()  # keys the user set, which the choice leaves as they are

    @property
    def mini_batch(self) -> bool:
        return self.batch_size > 0

    def layer(self) -> dict:
        """The configuration keys it sets: ``batch_size`` (and ``fanout`` with mini-batches), less those kept."""
        values = {"batch_size": self.batch_size, **({"fanout": self.fanout} if self.mini_batch else {})}
        return {key: value for key, value in values.items() if key not in self.kept}

    def keeping(self, given: Iterable[str]) -> FastChoice:
        """The same choice, leaving the keys among ``given`` that it would set to the user.

        Parameters
        ----------
        given
            The config keys the user set (their file's and ``--set``'s).
        """
        kept = tuple(key for key in KEYS if key in set(given))
        return FastChoice(self.batch_size, self.fanout, self.reason, kept)

    def apply(self, config: GCAConfig, num_nodes: int, world_size: int = 1) -> GCAConfig:
        """``config`` with the choice, and — when it trains in mini-batches — the epochs that keep ``config``'s
        number of updates (:func:`gca.config.mini_batch_epochs`). For a script::

            choice = fast_choice(data.num_nodes, "cpu")
            model = GCA(choice.apply(build_config("Amazon-Photo"), data.num_nodes)).fit(data)

        Parameters
        ----------
        config
            The configuration to change.
        num_nodes
            The graph's nodes.
        world_size
            The processes training together.
        """
        config = config.replace(**self.layer())
        if config.batch_size and config.epochs:
            epochs, _ = mini_batch_epochs(config.epochs, num_nodes, config.batch_size, config.steps_per_epoch,
                                          world_size)  # fmt: skip
            config = config.replace(epochs=epochs)
        return config

    def describe(self) -> str:
        """``--fast chose …`` — what was chosen (the header names the batch size and fan-out), why, and which of
        the user's own settings it kept."""
        what = "mini-batches" if self.mini_batch else "exact training (the whole graph at every update)"
        if "batch_size" in self.kept:  # the user's batch size decides between exact and mini-batch training
            return f"--fast kept your batch_size (it would have chosen {what}: {self.reason})"
        kept = f"; your {' and '.join(self.kept)} kept" if self.kept else ""
        return f"--fast chose {what}: {self.reason}{kept}"

    def record(self, config: GCAConfig | None = None) -> dict:
        """For ``results.json`` (``fast_path``): what trained — ``config``'s batch size and fan-out, which may be
        the user's where they were kept — and, under ``chosen``, what the fast path chose and why, its fan-out one
        value per layer of ``config``'s encoder.

        Parameters
        ----------
        config
            The configuration that trained.
        """
        fanout = list(self.fanout)
        if config is not None and self.mini_batch and len(fanout) == 1:  # one value serves every layer: say each
            fanout = fanout * config.layers
        chosen = {"training": "mini-batch" if self.mini_batch else "exact", "batch_size": self.batch_size,
                  "fanout": fanout}  # fmt: skip
        ran = chosen if config is None else {
            "training": "mini-batch" if config.batch_size else "exact", "batch_size": config.batch_size,
            "fanout": list(config.fanouts) if config.batch_size else []}  # fmt: skip
        return {**ran, "chosen": chosen, "reason": self.reason, "kept_user_keys": list(self.kept)}


def fast_choice(num_nodes: int, device: str | torch.device = "cpu") -> FastChoice:
    """The fast path's training for a graph of ``num_nodes`` nodes on ``device`` (module docstring: the rule and
    the measurements behind it).

    Parameters
    ----------
    num_nodes
        The graph's nodes.
    device
        The device training runs on.
    """
    if num_nodes < 0:
        raise ValueError(f"num_nodes must be non-negative, got {num_nodes}")
    kind = torch.device(device).type
    where = "the CPU" if kind == "cpu" else kind  # other accelerators (mps) follow the CPU's rule
    if kind == "cuda":
        if num_nodes <= CUDA_MAX_EXACT_NODES:
            return FastChoice(0, (), f"{num_nodes:,} nodes on CUDA, up to {CUDA_MAX_EXACT_NODES:,}, where an exact "
                                     "update costs less than a mini-batch one")  # fmt: skip
        return FastChoice(FAST_BATCH_SIZE, FAST_FANOUT, f"{num_nodes:,} nodes on CUDA, over {CUDA_MAX_EXACT_NODES:,}, "
                          "where an exact update (O(N²)) costs more than a mini-batch one")  # fmt: skip
    if num_nodes < CPU_MIN_NODES:
        return FastChoice(0, (), f"{num_nodes:,} nodes on {where}, below {CPU_MIN_NODES:,} (4 batches of "
                                 f"{FAST_BATCH_SIZE:,}), where an exact update costs about what a mini-batch one "
                                 "does")  # fmt: skip
    return FastChoice(FAST_BATCH_SIZE, FAST_FANOUT, f"{num_nodes:,} nodes on {where}, at least {CPU_MIN_NODES:,}, "
                      "where a mini-batch update costs a fraction of an exact one (O(N²))")  # fmt: skip
