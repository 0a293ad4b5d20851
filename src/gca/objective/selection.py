"""Which backend and precision ``auto`` becomes on a device: the precision by :mod:`gca.precision`, the backend
from it."""

from __future__ import annotations

import torch

from ..precision import bf16_tensor_cores, cpu_bf16_matrix_units, precision_choice

__all__ = ["bf16_tensor_cores", "cpu_bf16_matrix_units", "objective_reason", "resolve_objective", "tf32_products"]


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
