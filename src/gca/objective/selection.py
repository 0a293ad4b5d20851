"""Which backend and precision ``auto`` becomes on a device, from the device's capabilities."""

from __future__ import annotations

import functools

import torch


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


def bf16_tensor_cores(device: torch.device | str) -> bool:
    """Whether ``device`` is a CUDA GPU with bf16 tensor cores and FlashAttention-2 (compute capability ≥ 8.0:
    Ampere, Ada, Hopper and later). Older GPUs (V100, T4) emulate bf16 and have no flash kernel.

    Parameters
    ----------
    device
        The device the objective runs on.
    """
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
def cpu_bf16_matrix_units() -> bool:
    """Whether this CPU multiplies bf16 matrices on AMX tile units (Intel Sapphire Rapids and later), as PyTorch
    reports it; ``False`` where PyTorch cannot tell."""
    try:
        return bool(torch.cpu._is_amx_tile_supported())
    except (AttributeError, RuntimeError):
        return False


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
    if backend != "auto" and precision != "auto":
        return "as set"
    device = torch.device(device)
    if device.type == "cuda":
        return "bf16 tensor cores" if bf16_tensor_cores(device) else "no bf16 tensor cores on this GPU"
    if cpu_bf16_matrix_units():
        return ("this CPU has AMX bf16 units; fp32 stays the default on CPUs until bf16 is measured faster at equal "
                "accuracy on one (--set loss_backend=attention --set precision=bf16 uses them)")  # fmt: skip
    return "no bf16 matrix units (AMX) on this CPU"


def resolve_objective(
    backend: str, precision: str, device: torch.device | str, tensor_cores: bool | None = None
) -> tuple[str, str]:
    """The (backend, precision) that ``auto`` settings become on ``device``; explicit settings stay as they are.

    On a CUDA GPU with bf16 tensor cores (``tensor_cores``; default: :func:`bf16_tensor_cores` of ``device``):
    attention + bf16 (FlashAttention-2). Measured on an H100 (benchmarks/gpu_scale.py, docs/benchmarks.md):
    7.6× faster than blocked fp32 at N = 34,493 and 10× at 169,343, the same loss to seven digits at N = 34,493 …
    10^6, and Cora GCA-DE 83.47 ± 0.87 % against fp32's 83.37 ± 1.02 %. On CPUs and older GPUs: blocked + fp32 —
    on CPUs bf16 brought no speed and the attention route was 1.3–1.5× slower. Both backends split their rows
    over processes.

    Parameters
    ----------
    backend
        ``"blocked"``, ``"attention"`` or ``"auto"``.
    precision
        ``"fp32"``, ``"tf32"``, ``"bf16"`` or ``"auto"``.
    device
        The device the objective runs on.
    tensor_cores
        Whether the device has bf16 tensor cores; ``None`` asks :func:`bf16_tensor_cores`.
    """
    if precision == "auto":
        fast_bf16 = bf16_tensor_cores(device) if tensor_cores is None else tensor_cores
        precision = "bf16" if fast_bf16 and backend in ("auto", "attention") else "fp32"
    if backend == "auto":
        backend = "attention" if precision == "bf16" else "blocked"
    return backend, precision
