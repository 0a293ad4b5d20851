"""``compile=on``: the encoder and the projection head run through ``torch.compile`` (Inductor, dynamic shapes for
sampled subgraphs); if compiling fails, both run eagerly for the rest of the run, said in one line. Off by default
(design notes and measurements: docs/design/training.md).

The parts are compiled with :meth:`torch.nn.Module.compile`, so their state dict, ``copy.deepcopy`` and pickles
see the eager modules. A failed compile raises before the optimiser's step: :meth:`CompiledParts.step` then puts
back the random state the update started from (the training generator's, the CPU's and every CUDA device's) and
runs it again eagerly, as an eager run would have. Inference inside training (:meth:`CompiledParts.paused`) is eager.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

import torch
from torch import nn

from ..logger_protocol import LOG

log = LOG.getChild("train.compiled")


def _compile_errors() -> tuple[type[BaseException], ...]:
    """The exceptions a failed ``torch.compile`` raises (TorchDynamo's, which wrap Inductor's)."""
    from torch._dynamo.exc import TorchDynamoException

    return (TorchDynamoException,)


def _random_states(generator: torch.Generator) -> tuple:
    """Every random state an update may draw from: the training generator, the CPU's and CUDA's defaults."""
    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_available() and torch.cuda.is_initialized() else None
    return generator.get_state(), torch.get_rng_state(), cuda


def _set_random_states(generator: torch.Generator, states: tuple) -> None:
    generator.set_state(states[0])
    torch.set_rng_state(states[1])
    if states[2] is not None:
        torch.cuda.set_rng_state_all(states[2])


class CompiledParts:
    """The encoder and the projection head of ``model`` (a :class:`gca.nn.model.GCAModel`, or any module with
    ``encoder`` and ``projector``) compiled in place, until :meth:`restore` or a failure."""

    def __init__(self, model: nn.Module) -> None:
        self.parts = [model.encoder, model.projector]
        for part in self.parts:
            part.compile(dynamic=True)
        self.failed: BaseException | None = None

    def restore(self) -> None:
        """Every part eager again."""
        for part in self.parts:
            part.__dict__.pop("_compiled_call_impl", None)  # what Module.compile set; the class's default is None

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """The parts eager inside the block (inference during training), compiled again after it."""
        kept = [part.__dict__.get("_compiled_call_impl") for part in self.parts]
        self.restore()
        try:
            yield
        finally:
            for part, compiled in zip(self.parts, kept, strict=True):
                if compiled is not None and self.failed is None:
                    part._compiled_call_impl = compiled

    def step(self, update: Callable[[], float], generator: torch.Generator) -> float:
        """``update()`` (one training step, returning its loss) with the parts compiled, or, after a failed
        compile, eagerly from the random state it started from (module docstring)."""
        if self.failed is not None:
            return update()
        states = _random_states(generator)
        try:
            return update()
        except _compile_errors() as error:
            self.failed = error
            self.restore()
            reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            log.warning("torch.compile failed (%s: %s); training on in eager mode", type(error).__name__, reason[:200])
            _set_random_states(generator, states)
            return update()
