"""Exact GCA over several processes with torch.distributed (gloo on CPUs, NCCL on GPUs) — no transport of our own.

Under ``torchrun`` every process (rank) holds the whole graph, samples the same two views from the same seed,
runs the encoder and the projection head on them — identical values everywhere — and computes only its share of
the objective's 2N×2N similarity matrix (:class:`BlockShare`): with the blocked objective, row blocks of the upper
block-triangle split into contiguous runs of equal work (row block r costs (2N − r₀)·block products); with the
attention objective, a range of whole rows. Two all-reduces per step join the shares: the 2N row denominators (or
log-denominators) in the forward pass and the 2N×d gradient with respect to the projections in the backward pass.
Every rank then holds the same full gradient and takes the same step, with no all-reduce of the weights' gradients.
The result equals one process's up to the order of floating-point sums.

Mini-batch training (``batch_size > 0``, :class:`gca.train.batches.NeighborBatches`) is data-parallel instead: each
rank trains on its own anchors and sampled subgraphs, and the weights' gradients are averaged over the ranks before
every optimiser step (:func:`average_gradients`).

At start the processes compare digests of their settings, graph and starting state
(:meth:`Placement.check_same_start`); a difference stops all of them before the first step. Inference over blocks of
rows is shared too (:class:`RowRanges`). Rank 0 alone evaluates and writes results, checkpoints and exports. One
process alone is a :class:`Placement` of rank 0 of 1. Design notes: docs/design/training.md.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import timedelta

import torch
import torch.distributed as dist

from .. import environment
from ..errors import option
from ..precision import PRECISIONS, precision_choice, settle
from .loop import TrainingError

#: The epoch :meth:`Placement.check_same_start` gathers for a process that starts afresh (−1: a checkpoint whose
#: epoch cannot be read).
_AFRESH = -2


def _epoch(gathered: torch.Tensor) -> int:
    """The epoch a rank's gathered digest ends with (:meth:`Placement.check_same_start`)."""
    return int.from_bytes(bytes(gathered[48:56].cpu().tolist()), "little", signed=True)


def _first_difference(every: list[torch.Tensor]) -> str | None:
    """The line for the first rank whose start digest (:meth:`Placement.check_same_start`) differs from rank 0's:
    settings first, then the graph, then the starting point; ``None`` when all agree."""
    zero = every[0]
    for rank, theirs in enumerate(every[1:], start=1):
        if not torch.equal(theirs[:16], zero[:16]):
            return (
                f"the processes were started with different settings: rank {rank}'s (its configuration, resolved) "
                "differ from rank 0's; start every process with the same settings"
            )
        if not torch.equal(theirs[16:32], zero[16:32]):
            return (
                f"the processes read different graphs: rank {rank}'s edges or features differ from rank 0's "
                "(another file, or another copy of it); give every process the same input files"
            )
        if not torch.equal(theirs[32:], zero[32:]):
            return _different_starts(rank, _epoch(theirs), _epoch(zero))
    return None


def _different_starts(rank: int, theirs: int, zero: int) -> str:
    """The line refusing processes that would start from different training states: rank ``rank`` from epoch
    ``theirs``, rank 0 from epoch ``zero`` (:data:`_AFRESH`: afresh; −1: a checkpoint whose epoch is unreadable)."""

    def said(epoch: int) -> str:
        if epoch == _AFRESH:
            return f"starts afresh (no {option('resume', True)}, or no checkpoint in its {option('out')})"
        return "resumes from a checkpoint whose epoch cannot be read" if epoch < 0 else f"resumes from epoch {epoch}"

    if theirs == zero and theirs != _AFRESH:
        both = f"both at epoch {zero}, " if zero >= 0 else ""
        what = f"rank {rank} resumes from another checkpoint than rank 0's ({both}their contents differ)"
    else:
        what = f"rank {rank} {said(theirs)} while rank 0 {said(zero)}"
    return (
        f"the processes would not start from the same training state: {what}; give every process "
        f"{option('resume', True)} and the same checkpoint (copy rank 0's into the {option('out')} folder of each "
        f"machine), or start them all without {option('resume', True)}"
    )


def resolve_device(device: str | torch.device = "auto") -> torch.device:
    """``auto`` → CUDA when available, else CPU. ``cpu``, ``cuda``, ``cuda:N`` and ``mps`` are accepted where this
    machine has them; any other name — even one PyTorch knows, such as ``meta`` — is an error naming the choices.

    Parameters
    ----------
    device
        ``"auto"``, ``"cpu"``, ``"cuda"``, ``"cuda:N"``, ``"mps"`` or a ``torch.device``; another, or one this
        machine lacks, is a :class:`~gca.train.loop.TrainingError`.
    """
    if str(device) == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(device)
    except (RuntimeError, TypeError, ValueError):
        raise TrainingError(f"unknown device {device!r}; use auto, cpu, cuda or cuda:N") from None
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise TrainingError(
                f"device {str(device)!r} was requested but no CUDA device is available; use 'cpu' (or 'auto')"
            )
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise TrainingError(
                f"device {str(device)!r}: this machine has {torch.cuda.device_count()} CUDA device(s), numbered from 0"
            )
    elif device.type == "mps":
        if not (getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()):
            raise TrainingError("device 'mps' was requested but Apple's MPS backend is not available; use 'cpu'")
    elif device.type != "cpu" or device.index not in (None, 0):
        raise TrainingError(f"device {str(device)!r} cannot train gca; use auto, cpu, cuda or cuda:N")
    return device


#: How long a collective waits for the other ranks before this one gives up (a rank that died without torchrun
#: noticing, e.g. across machines). ``GCA_DIST_TIMEOUT`` (seconds) overrides it.
DEFAULT_TIMEOUT_S = 300


def row_range(num_rows: int, rank: int, world_size: int) -> tuple[int, int]:
    """Rank ``rank``'s contiguous share of ``num_rows`` rows among ``world_size``: near-equal counts, in rank order."""
    return num_rows * rank // world_size, num_rows * (rank + 1) // world_size


@dataclass(frozen=True)
class BlockShare:
    """Rank ``rank`` of ``world_size``: its blocks of the upper block-triangle, balanced by work."""

    rank: int
    world_size: int

    def block_starts(self, num_rows: int, block: int) -> list[int]:
        starts = list(range(0, num_rows, block))
        work = torch.tensor([(num_rows - s) * (min(s + block, num_rows) - s) for s in starts], dtype=torch.float64)
        before = torch.cumsum(work, 0) - work / 2  # each block's midpoint on the cumulative work axis
        owner = torch.clamp((before / work.sum() * self.world_size).long(), max=self.world_size - 1)
        return [s for s, o in zip(starts, owner.tolist(), strict=True) if o == self.rank]

    def row_range(self, num_rows: int) -> tuple[int, int]:
        """Contiguous whole rows for the attention objective (every row costs the same): near-equal counts."""
        return row_range(num_rows, self.rank, self.world_size)

    def all_reduce(self, tensor: torch.Tensor) -> None:
        dist.all_reduce(tensor, op=dist.ReduceOp.SUM)


@dataclass(frozen=True)
class RowRanges:
    """Inference shared by the processes (:class:`gca.nn.gcn.InferenceShare`): rank ``rank`` of ``world_size`` computes
    the rows ``n·rank/world_size`` … ``n·(rank + 1)/world_size`` − 1 of every matrix, in blocks, each block then
    broadcast by its rank in one fixed order, so every rank holds every row of an inner matrix; the final matrix's
    blocks go to rank 0 alone, which :attr:`holds_result`."""

    rank: int
    world_size: int

    @property
    def holds_result(self) -> bool:
        return self.rank == 0

    def row_range(self, n: int, rank: int | None = None) -> tuple[int, int]:
        return row_range(n, self.rank if rank is None else rank, self.world_size)

    def blocks(self, n: int, rows: int, rank: int | None = None) -> list[tuple[int, int]]:
        low, high = self.row_range(n, rank)
        return [(start, min(start + rows, high)) for start in range(low, high, rows)]

    def complete(self, matrix: torch.Tensor, rows: int, final: bool, written) -> None:
        n = matrix.shape[0]
        for owner in range(self.world_size):
            if final and owner == 0:
                continue  # rank 0's own rows are in place
            for start, stop in self.blocks(n, rows, owner):
                block = matrix[start:stop]  # rows of a row-major matrix: contiguous, received in place
                if not final:
                    dist.broadcast(block, src=owner)
                elif self.rank == owner:
                    dist.send(block, dst=0)
                elif self.rank == 0:
                    dist.recv(block, src=owner)
                else:
                    continue
                if self.rank != owner:
                    written(matrix, start, stop)


def place() -> tuple[int, int]:
    """(rank, world size) of this process in the process group it joined; (0, 1) outside one."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def average_gradients(optimizer: torch.optim.Optimizer, world_size: int) -> None:
    """Before every step of ``optimizer``, replace each gradient by its mean over the ``world_size`` processes
    (one all-reduce of all gradients flattened together): data parallelism for mini-batch training."""

    def hook(opt: torch.optim.Optimizer, args: object, kwargs: object) -> None:
        params = [p for group in opt.param_groups for p in group["params"]]
        for p in params:
            if p.grad is None:  # every process must contribute the same shapes
                p.grad = torch.zeros_like(p)
        flat = torch.cat([p.grad.reshape(-1) for p in params])
        dist.all_reduce(flat, op=dist.ReduceOp.SUM)
        flat /= world_size
        offset = 0
        for p in params:
            p.grad.copy_(flat[offset : offset + p.numel()].view_as(p.grad))
            offset += p.numel()

    optimizer.register_step_pre_hook(hook)


def launched() -> bool:
    """Started by torchrun (or anything that sets WORLD_SIZE > 1)?"""
    return environment.world_size() > 1


@dataclass(frozen=True)
class Placement:
    """Where this process trains: its device and, under torchrun, its rank among ``world_size`` processes.

    Made once per process (:meth:`from_environment` in the command line, :meth:`joined` by the estimator) and consulted
    for everything distribution changes: the objective's share, the sampler's rank, the gradient hook and which
    process writes.

    Parameters
    ----------
    device
        The device this process trains on.
    rank, world_size
        Its rank among the processes training together (0 of 1 for a single process).
    """

    device: torch.device
    rank: int = 0
    world_size: int = 1

    @classmethod
    def from_environment(cls, device: str | torch.device = "auto") -> Placement:
        """This process's placement as torchrun describes it: outside torchrun, ``device`` alone (checked by
        :func:`resolve_device`); under it, the process group joined (NCCL for CUDA, gloo otherwise, waiting
        :data:`DEFAULT_TIMEOUT_S` or ``GCA_DIST_TIMEOUT`` seconds) and a bare ``cuda`` made ``cuda:LOCAL_RANK``."""
        device = resolve_device(device)
        if not launched():
            return cls(device)
        local_rank = environment.local_rank()  # checked before anything joins
        if device.type == "cuda":  # NCCL takes a GPU per process: each says so, before any joins
            per_machine = max(local_rank + 1, environment.env_int("LOCAL_WORLD_SIZE", 1, 1))
            if per_machine > (gpus := torch.cuda.device_count()) or (per_machine > 1 and device.index is not None):
                raise TrainingError(
                    f"torchrun started {per_machine} processes on this machine, which has {gpus} CUDA device(s): each "
                    f"needs a GPU of its own (--device cuda, --nproc-per-node at most {gpus}) or the CPU (--device cpu)"
                )
            device = device if device.index is not None else torch.device("cuda", local_rank)
        backend = "nccl" if device.type == "cuda" else "gloo"
        if not dist.is_initialized():
            timeout = timedelta(seconds=environment.env_seconds("GCA_DIST_TIMEOUT", DEFAULT_TIMEOUT_S))
            dist.init_process_group(backend, timeout=timeout)
        return cls(device, dist.get_rank(), dist.get_world_size())

    @classmethod
    def joined(cls, device: torch.device) -> Placement:
        """``device`` in the process group this process already joined (a single process outside one)."""
        return cls(device, *place())

    @property
    def distributed(self) -> bool:
        return self.world_size > 1

    @property
    def writes(self) -> bool:
        """Only rank 0 evaluates and writes files."""
        return self.rank == 0

    @property
    def backend(self) -> str:
        return "nccl" if self.device.type == "cuda" else "gloo"

    def settle_precision(self) -> None:
        """Make ``precision=auto`` the same in every process: each asks :func:`gca.precision.precision_choice`
        (processes on machines of different kinds may answer differently), and all take the first process's choice
        (:func:`gca.precision.settle`). Nothing to do in a single process."""
        if not self.distributed:
            return
        chosen, why = precision_choice("auto", self.device)
        code = torch.tensor([PRECISIONS.index(chosen)], device=self.device if self.backend == "nccl" else "cpu")
        dist.broadcast(code, src=0)
        first = PRECISIONS[int(code)]
        settle(self.device, first, why if self.rank == 0 else f"the first process's choice (here: {chosen}, {why})")

    def objective_share(self, batch_size: int) -> BlockShare | None:
        """This process's share of the exact full-graph objective; ``None`` for one process or mini-batches
        (``batch_size`` > 0: each process then computes its own batches' objective whole)."""
        return BlockShare(self.rank, self.world_size) if self.distributed and not batch_size else None

    def row_share(self) -> RowRanges | None:
        """This process's share of inference over blocks of rows (``None`` for one process)."""
        return RowRanges(self.rank, self.world_size) if self.distributed else None

    def attach(self, optimizer: torch.optim.Optimizer, batch_size: int) -> None:
        """Data-parallel mini-batch training (``batch_size`` > 0) averages the gradients over the processes before
        every step of ``optimizer``; the exact objective needs no hook (its backward pass all-reduces already)."""
        if self.distributed and batch_size:
            average_gradients(optimizer, self.world_size)

    def check_same_start(
        self, config: dict[str, object], graph_fingerprint: str, resume: tuple[int, str] | None = None
    ) -> None:
        """Refuse, on every process alike, processes that would not train one model: one all-gather of each rank's
        digest (56 bytes) of its settings, its graph (:meth:`gca.graph.graph.Graph.fingerprint`, every byte) and its
        starting state, then the same :class:`TrainingError` on every rank naming the first rank that differs from
        rank 0 (settings first, then the graph, then the starting point). Nothing for one process.

        Parameters
        ----------
        config
            This process's resolved configuration (``GCAConfig.to_dict()``).
        resume
            ``(epoch, digest)`` of the checkpoint this process resumes from (:func:`gca.train.checkpoint.resume_point`);
            ``None`` when it starts afresh.
        """
        if not self.distributed:
            return
        settings = hashlib.blake2b(json.dumps(config, sort_keys=True, default=str).encode(), digest_size=16)
        graph = hashlib.blake2b(graph_fingerprint.encode(), digest_size=16)
        start = hashlib.blake2b(json.dumps(resume).encode(), digest_size=16)
        epoch = (_AFRESH if resume is None else resume[0]).to_bytes(8, "little", signed=True)
        mine = torch.frombuffer(
            bytearray(settings.digest() + graph.digest() + start.digest() + epoch), dtype=torch.uint8
        )
        mine = mine.to(self.device if self.backend == "nccl" else "cpu")
        every = [torch.empty_like(mine) for _ in range(self.world_size)]
        dist.all_gather(every, mine)
        difference = _first_difference(every)
        if difference is None:
            return
        # Every rank found the same difference in the same gathered bytes. None leaves before all have (a launcher
        # stops the other processes the moment one exits, so a slower rank could be stopped before saying it):
        # one more collective, and the error is raised even if a stop signal lands as it returns.
        error = TrainingError(difference)
        try:
            dist.all_reduce(torch.zeros(1, device=mine.device))
        finally:
            raise error

    def record(self) -> dict[str, object]:
        """What ``results.json`` says of the run's processes (nothing for one)."""
        return {"distributed": {"world_size": self.world_size, "backend": self.backend}} if self.distributed else {}
