"""The training update's precision and objective: what ``precision=auto`` and ``loss_backend=auto`` become on a device
(:func:`resolve_objective`), and the bf16 region of an update.

``precision=bf16`` is mixed precision for the whole update, as PyTorch's automatic mixed precision does it
(:func:`update_precision` is ``torch.autocast`` with bf16):

* **bf16, fp32 accumulation** — every dense product: the encoder's X·W and its weight gradient, its later layers,
  the projection head, and the objective's similarities (the attention backend's bf16 kernels). oneDNN's and
  cuBLAS's bf16 products accumulate in fp32; their outputs are bf16.
* **fp32** — the master weights, their gradients and Adam's state (parameters stay fp32; a product casts a bf16
  copy), the GCN's sparse aggregation M·H with its degree scaling (:class:`gca.graph.sparse.SparseMatrix` leaves
  the region: sparse products are memory-bound and have no bf16 kernel on CPUs), the normalisation of the
  projections, the log-sum-exp and the loss (:class:`gca.objective.ContrastiveObjective` leaves the region too).
  Sparse features stay sparse; inference (:func:`gca.train.inference.encode_graph`) is fp32. PyTorch Geometric's layers
  (``encoder=gat|sage|gin``) and a user's encoder run as autocast runs them: their products in bf16, their
  aggregations in the dtype their inputs arrive in.

``precision=fp32`` is fp32 everywhere; ``tf32`` lets CUDA's tensor cores multiply the objective's fp32 products.

**auto** (:func:`resolve_precision`) is read off the device, never timed in the run, so one command trains in one
precision on one machine whatever else that machine is doing. A CUDA GPU with bf16 tensor cores (compute capability
≥ 8.0) trains in bf16. A CPU takes its kind's entry of :data:`CPU_AUTO`, by its bf16 units (:func:`cpu_bf16_units`):
each entry rests on a measurement on a CPU of that kind (docs/benchmarks.md, "bf16 on the CPU", printed by
``benchmarks/cpu_precision.py``), or says that gca has none and trains in fp32. Every other device trains in fp32.
"""

from __future__ import annotations

import contextlib
import functools

import torch

#: ``precision=auto`` on a CPU by its bf16 units (:func:`cpu_bf16_units`): (precision, why), the reason as the run's
#: header and ``results.json`` give it.
CPU_AUTO: dict[str | None, tuple[str, str]] = {
    None: ("fp32", "no bf16 matrix units (AMX, AVX512-BF16) on this CPU"),
    "AVX512-BF16": (
        "fp32",
        "AVX512-BF16 units, where bf16 measured 0.6× as fast exactly and 1.1–1.2× in mini-batches: fp32, one "
        "precision on every CPU (docs/benchmarks.md)",
    ),
    "AMX": (
        "fp32",
        "AMX bf16 units, where bf16 measured 1.6–1.9× as fast exactly and 1.1–1.6× in mini-batches: fp32, one "
        "precision on every CPU (docs/benchmarks.md; precision=bf16 takes the gain)",
    ),
}


def bf16_tensor_cores(device: torch.device | str) -> bool:
    """Whether ``device`` is a CUDA GPU with bf16 tensor cores and FlashAttention-2 (compute capability ≥ 8.0:
    Ampere, Ada, Hopper and later). Older GPUs (V100, T4) emulate bf16 and have no flash kernel."""
    device = torch.device(device)
    return device.type == "cuda" and _capable(device)


@functools.cache
def _capable(device: torch.device) -> bool:
    """Asked once per device: the objective resolves its settings on every step."""
    try:
        return torch.cuda.get_device_capability(device) >= (8, 0)
    except (AssertionError, RuntimeError):  # no CUDA here: nothing to run on anyway
        return False


@functools.cache
def cpu_bf16_units() -> str | None:
    """The bf16 matrix units of this CPU as PyTorch reports them: ``"AMX"``, ``"AVX512-BF16"``, or ``None``
    (none, or PyTorch cannot tell)."""
    for name, probe in (("AMX", "_is_amx_tile_supported"), ("AVX512-BF16", "_is_avx512_bf16_supported")):
        try:
            if getattr(torch.cpu, probe)():
                return name
        except (AttributeError, RuntimeError):
            continue
    return None


def cpu_bf16_matrix_units() -> bool:
    """Whether this CPU has bf16 matrix units (:func:`cpu_bf16_units`)."""
    return cpu_bf16_units() is not None


#: ``auto``'s choice per device type where processes settled it together (:func:`settle`).
_SETTLED: dict[str, tuple[str, str]] = {}
PRECISIONS = ("fp32", "tf32", "bf16")


def settle(device: torch.device | str, precision: str | None, why: str = "") -> None:
    """Make ``auto`` become ``precision`` on ``device``'s type in this process, for the reason ``why`` — the choice
    every process of a torch.distributed run takes from the first (:meth:`gca.train.distributed.Placement.
    settle_precision`), so that no process trains in another precision than its peers whatever its own probe
    measured; ``precision`` ``None`` forgets it. ``why`` is the reason the run's header and record give."""
    kind = torch.device(device).type
    if precision is None:
        _SETTLED.pop(kind, None)
    else:
        _SETTLED[kind] = (precision, why)


def resolve_precision(precision: str, device: torch.device | str) -> str:
    """The precision ``precision`` (``"fp32"``, ``"tf32"``, ``"bf16"`` or ``"auto"``) becomes on ``device``: an
    explicit one stays as it is; ``auto`` is the rule of this module's docstring."""
    return precision_choice(precision, device)[0]


def precision_choice(precision: str, device: torch.device | str) -> tuple[str, str]:
    """(precision, why): what ``precision`` becomes on ``device`` (:func:`resolve_precision`) and why, in words for
    the run's header."""
    device = torch.device(device)
    if precision != "auto":
        if precision == "bf16" and device.type == "cpu" and cpu_bf16_units() is None:
            return precision, "as set; this CPU has no bf16 units (AMX, AVX512-BF16): bf16 is emulated, far slower"
        return precision, "as set"
    if device.type in _SETTLED:
        return _SETTLED[device.type]
    if device.type == "cuda":
        if bf16_tensor_cores(device):
            return "bf16", "bf16 tensor cores"
        return "fp32", "no bf16 tensor cores on this GPU"
    if device.type == "cpu":
        return CPU_AUTO[cpu_bf16_units()]
    return "fp32", f"fp32 on {device.type}"


def update_precision(precision: str, device: torch.device | str) -> contextlib.AbstractContextManager:
    """The region of an update's forward pass that computes in ``precision`` (resolved, not ``auto``): for bf16,
    ``torch.autocast`` with bf16 on ``device`` — the backward pass follows the casts the forward pass made —; for
    fp32 and tf32, nothing changes."""
    if precision != "bf16":
        return contextlib.nullcontext()
    return torch.autocast(torch.device(device).type, dtype=torch.bfloat16)


def full_precision(device: torch.device | str) -> contextlib.AbstractContextManager:
    """A region that leaves :func:`update_precision`'s: its operations compute in their inputs' precision (cast
    fp32 inputs to keep fp32)."""
    return torch.autocast(torch.device(device).type, enabled=False)


class tf32_products:  # noqa: N801 - used as a context manager, like torch.no_grad
    """TF32 tensor-core products on CUDA inside the block when ``enabled`` (``precision=tf32``); no effect on CPUs."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def __enter__(self) -> None:
        self.saved = torch.backends.cuda.matmul.allow_tf32
        if self.enabled:
            torch.backends.cuda.matmul.allow_tf32 = True

    def __exit__(self, *exc) -> None:
        torch.backends.cuda.matmul.allow_tf32 = self.saved


def objective_reason(backend: str, precision: str, device: torch.device | str) -> str:
    """Why :func:`resolve_objective` picks what it picks on ``device`` for the config's ``loss_backend`` and
    ``precision`` — for the run's header and record."""
    if precision == "auto" and backend == "blocked":
        return "the blocked objective computes in fp32"
    return precision_choice(precision, device)[1]


def resolve_objective(
    backend: str, precision: str, device: torch.device | str, tensor_cores: bool | None = None
) -> tuple[str, str]:
    """The (backend, precision) that ``auto`` settings become on ``device``; explicit settings stay as they are. The
    precision is the whole update's (:mod:`gca.precision`), the backend the objective's.

    ``precision=auto`` is :func:`gca.precision.resolve_precision`'s choice — bf16 on a CUDA GPU with bf16 tensor cores,
    and on a CPU whose bf16 units measure faster (``tensor_cores``: whether bf16 is the faster precision; ``None`` asks
    :func:`gca.precision.precision_choice`) — except with ``loss_backend=blocked``, whose products are fp32: then fp32.
    ``loss_backend=auto`` is the attention backend under bf16 (its fused bf16 kernels), the blocked one otherwise. Both
    backends split their rows over processes.
    """
    if precision == "auto" and backend == "blocked":
        precision = "fp32"  # nothing to probe: the blocked objective's products are fp32
    if precision == "auto":
        fast_bf16 = precision_choice("auto", device)[0] == "bf16" if tensor_cores is None else tensor_cores
        precision = "bf16" if fast_bf16 else "fp32"
    if backend == "auto":
        backend = "attention" if precision == "bf16" else "blocked"
    return backend, precision
