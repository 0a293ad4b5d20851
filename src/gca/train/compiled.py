"""``compile=true``: the encoder and the projection head run through ``torch.compile`` (Inductor, dynamic shapes for
sampled subgraphs); if compiling fails, both run eagerly for the rest of the run, said in one line.

Off by default, by measurement (docs/benchmarks.md, "The update against the machine's limit"): on gca's GCN the
sparse operators cannot be traced (a sparse CSR tensor in a custom autograd function), so the encoder falls back
to eager; the projection head compiles in about 20 s on 2 CPU cores and then runs 2 % faster — a loss on every
run shorter than hours. The memory-bound rest of an update is fused by hand where it measured faster (the
sampled subgraph's operators: one sort per view instead of two per layer, :func:`gca.graph.sparse.
layered_normalized_adjacency`). Message-passing encoders (:mod:`gca.nn.encoders`) trace as PyTorch Geometric's
layers do.

A failed compile raises during an update's forward or backward pass, before the optimiser's step:
:meth:`CompiledParts.step` then puts back the random state the update started from and runs it again eagerly, so
the run is the one an eager run would have made from that update on.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from ..loggers import LOG

log = LOG.getChild("train.compiled")


def _compile_errors() -> tuple[type[BaseException], ...]:
    """The exceptions a failed ``torch.compile`` raises (TorchDynamo's, which wrap Inductor's)."""
    from torch._dynamo.exc import TorchDynamoException

    return (TorchDynamoException,)


class CompiledParts:
    """The encoder and the projection head of ``model`` compiled in place (their ``forward``; the state dict,
    checkpoints and pickles are unchanged), until :meth:`restore` or a failure.

    Parameters
    ----------
    model
        A :class:`gca.nn.model.GCAModel` (any module with ``encoder`` and ``projector``).
    """

    def __init__(self, model: nn.Module) -> None:
        self.parts = {name: getattr(model, name) for name in ("encoder", "projector")}
        for part in self.parts.values():
            part.forward = torch.compile(part.forward, dynamic=True)
        self.failed: BaseException | None = None

    def restore(self) -> None:
        """Every part eager again (its class's ``forward``)."""
        for part in self.parts.values():
            part.__dict__.pop("forward", None)

    def step(self, update: Callable[[], float], generator: torch.Generator) -> float:
        """``update()`` (one training step) with the parts compiled; if compiling fails, the parts run eagerly
        from then on — one warning line says so — and the step runs again from the random state it started from.

        Parameters
        ----------
        update
            One training step; returns its loss.
        generator
            The generator the step draws from (its state is put back before the eager step).
        """
        if self.failed is not None:
            return update()
        states = generator.get_state(), torch.get_rng_state()
        try:
            return update()
        except _compile_errors() as error:
            self.failed = error
            self.restore()
            reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            log.warning("torch.compile failed (%s: %s); training on in eager mode", type(error).__name__,
                        reason[:200])  # fmt: skip
            generator.set_state(states[0])
            torch.set_rng_state(states[1])
            return update()
