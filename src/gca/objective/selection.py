"""Which backend and precision ``auto`` becomes on a device: the precision by :mod:`gca.precision`, the backend
from it."""

from __future__ import annotations

import torch

from ..precision import bf16_tensor_cores, cpu_bf16_matrix_units, precision_choice

__all__ = ["bf16_tensor_cores", "cpu_bf16_matrix_units", "objective_reason", "resolve_objective", "tf32_products"]


class tf32_products:  # noqa: N801 - used as a context manager, like torch.no_grad
    """TF32 tensor-core products on CUDA inside the block (``precision=tf32``); no effect on CPUs.

    Parameters
    ----------
    enabled
        Allow TF32 products inside the block; ``False`` changes nothing.
    """

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def __enter__(self) -> None:
        self.saved = torch.backends.cuda.matmul.allow_tf32
        if self.enabled:
            torch.backends.cuda.matmul.allow_tf32 = True

    def __exit__(self, *exc) -> None:
        torch.backends.cuda.matmul.allow_tf32 = self.saved


def objective_reason(backend: str, precision: str, device: torch.device | str) -> str:
    """Why :func:`resolve_objective` picks what it picks on ``device`` — for the run's header and record.

    Parameters
    ----------
    backend
        The config's ``loss_backend``.
    precision
        The config's ``precision``.
    device
        The device the objective runs on.
    """
    if precision == "auto" and backend == "blocked":
        return "the blocked objective computes in fp32"
    return precision_choice(precision, device)[1]


def resolve_objective(
    backend: str, precision: str, device: torch.device | str, tensor_cores: bool | None = None
) -> tuple[str, str]:
    """The (backend, precision) that ``auto`` settings become on ``device``; explicit settings stay as they are.
    The precision is the whole update's (:mod:`gca.precision`), the backend the objective's.

    ``precision=auto`` is :func:`gca.precision.resolve_precision`'s choice — bf16 on a CUDA GPU with bf16 tensor
    cores, and on a CPU whose bf16 units measure faster — except with ``loss_backend=blocked``, whose products
    are fp32: then fp32. ``loss_backend=auto`` is the attention backend under bf16 (its fused bf16 kernels:
    FlashAttention-2 on GPUs, PyTorch's flash kernel on CPUs), the blocked one otherwise: the bf16 attention
    objective is several times faster than blocked fp32 at the same loss and accuracy, while in fp32 on CPUs the
    attention route is slower than the blocked one (measured: docs/benchmarks.md, "The objective at scale on an
    H100" and "The attention backend on the CPU"). Both backends split their rows over processes.

    Parameters
    ----------
    backend
        ``"blocked"``, ``"attention"`` or ``"auto"``.
    precision
        ``"fp32"``, ``"tf32"``, ``"bf16"`` or ``"auto"``.
    device
        The device the objective runs on.
    tensor_cores
        Whether bf16 is the faster precision on the device; ``None`` asks :func:`gca.precision.precision_choice`.
    """
    if precision == "auto" and backend == "blocked":
        precision = "fp32"  # nothing to probe: the blocked objective's products are fp32
    if precision == "auto":
        fast_bf16 = precision_choice("auto", device)[0] == "bf16" if tensor_cores is None else tensor_cores
        precision = "bf16" if fast_bf16 else "fp32"
    if backend == "auto":
        backend = "attention" if precision == "bf16" else "blocked"
    return backend, precision
