"""The attention backend: −J through PyTorch's fused attention kernels (FlashAttention-2 on GPUs with bf16 tensor
cores, the memory-efficient kernel otherwise, the flash kernel on CPUs); memory O(N·d)."""

from __future__ import annotations

import torch
from torch.nn import functional as F

from ..errors import UserError
from ..precision import bf16_tensor_cores, tf32_products
from .share import ObjectiveShare

MIN_KEPT = {torch.bfloat16: 1e-2, torch.float32: 1e-4}  # the least harmonic mean of the rows' off-diagonal shares


class _AttentionOffDiagonalLogSumExp(torch.autograd.Function):
    """Σ_a lse′_a, lse′_a = log Σ_{b≠a} exp(z_a·z_b/τ), from PyTorch's fused attention kernels, memory O(N·d).

    One attention call with Q = K = V = Z and scale 1/τ returns O = P Z (P the full row-softmax of S = ZZᵀ/τ) and the
    full row log-sum-exp lse. The diagonal term e^{s_aa} is removed, s_aa = ẑ_a·ẑ_a/τ ≈ 1/τ with ẑ the rows rounded to
    the kernels' dtype: lse′ = lse + log(1 − e^{s_aa − lse}). The kernels' error in lse is divided by that off-diagonal
    share of the mass, so rows whose shares have a harmonic mean below :data:`MIN_KEPT` (small graphs, small τ) are
    refused. The gradient is (1/τ)(P′Z + P′ᵀZ) with P′ the off-diagonal row-softmax:

        (P′Z)_a  = O_a e^{lse_a − lse′_a} − e^{s_aa − lse′_a} ẑ_a,
        (P′ᵀZ)_b = e^{lse_b − c} · Attn(Z, Z, Z ⊙ e^{c − lse′})_b − e^{s_bb − lse′_b} ẑ_b,

    the second from one more attention call (S is symmetric); c = min lse′ keeps the scaled values ≤ 1. With ``share`` a
    process computes the whole rows ``share.row_range`` gives it against all of Z, and two all-reduces (the 2N values
    lse′, the 2N×d gradient) give every process the full value and gradient. ``dtype`` is what the kernels compute in
    (float32, or bfloat16 for ``precision=bf16``), the corrections are applied in float32; ``kernel`` picks PyTorch's
    kernel (:func:`_fused_attention`).
    """

    @staticmethod
    def forward(
        ctx, z: torch.Tensor, tau: float, dtype: torch.dtype, kernel: str = "auto", share: ObjectiveShare | None = None
    ) -> torch.Tensor:
        n = z.shape[0]
        start, stop = (0, n) if share is None else share.row_range(n)
        rows = z[start:stop]  # this process's anchors (all of them for one process); keys and values: all of Z
        out, lse = _fused_attention(rows, z, z, 1.0 / tau, dtype, kernel)
        kept = -torch.expm1((rows.to(dtype).float() ** 2).sum(1) / tau - lse)  # each row's off-diagonal share
        lse_off, inverse = lse + torch.log(kept), torch.where(kept.isnan() | (kept > 0), 1 / kept, torch.inf).sum()
        if share is not None:  # every process needs every lse′ for the backward pass (the Pᵀ term)
            every = torch.zeros(n + 1, dtype=lse_off.dtype, device=lse_off.device)
            every[start:stop], every[n] = lse_off, inverse
            share.all_reduce(every)
            every, inverse = every[:n], every[n]
        else:
            every = lse_off
        if bool(inverse > n / MIN_KEPT[dtype]):  # the same in every process; NaN rows (a diverged run) go on
            raise UserError(
                f"the attention objective cannot resolve this graph's similarities in {dtype} (a graph this small, or "
                "tau this small); use loss_backend=blocked"
            )
        ctx.save_for_backward(z, out, lse, every)
        ctx.tau, ctx.dtype, ctx.kernel, ctx.share, ctx.rows = tau, dtype, kernel, share, (start, stop)
        return every.sum()

    @staticmethod
    def backward(ctx, grad_out: torch.Tensor):
        z, out, lse, every = ctx.saved_tensors
        tau, (start, stop) = ctx.tau, ctx.rows
        rows, lse_off = z[start:stop], every[start:stop]
        rounded = rows.to(ctx.dtype).float()  # ẑ
        diagonal = torch.exp((rounded**2).sum(1) / tau - lse_off).unsqueeze(1) * rounded
        forward_part = out * torch.exp(lse - lse_off).unsqueeze(1) - diagonal
        c = every.min()
        scaled, _ = _fused_attention(rows, z, z * torch.exp(c - every).unsqueeze(1), 1.0 / tau, ctx.dtype, ctx.kernel)
        transposed_part = scaled * torch.exp(lse - c).unsqueeze(1) - diagonal
        grad = (forward_part + transposed_part) * (grad_out / tau)
        if ctx.share is not None:  # each process has its rows of the gradient; all of it is needed everywhere
            full = torch.zeros_like(z)
            full[start:stop] = grad
            ctx.share.all_reduce(full)
            grad = full
        return grad, None, None, None, None


def _fused_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float, dtype: torch.dtype, kernel: str = "auto"
) -> tuple[torch.Tensor, torch.Tensor]:
    """(softmax(q kᵀ · scale) v, row log-sum-exp) for 2-D inputs, from PyTorch's fused kernels, as float32. On CUDA,
    ``kernel="flash"`` is FlashAttention-2 (bf16/fp16 only, the faster on tensor cores) and ``"efficient"`` the
    memory-efficient kernel (fp32 too); ``"auto"`` takes flash for bf16 where PyTorch has it. On CPUs: one flash kernel.
    """
    q, k, v = (t.to(dtype)[None, None] for t in (q, k, v))
    n, d = q.shape[2], q.shape[3]
    if q.device.type == "cuda" and d % 8:  # the CUDA kernels take widths in multiples of 8; zero columns change nothing
        q, k, v = (F.pad(t, (0, 8 - d % 8)) for t in (q, k, v))
    if kernel == "auto":
        flash = dtype == torch.bfloat16 and torch.backends.cuda.flash_sdp_enabled() and bf16_tensor_cores(q.device)
        kernel = "flash" if flash else "efficient"
    try:
        if q.device.type == "cpu":
            out, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, False, scale=scale)
        elif kernel == "flash":
            out, lse = torch.ops.aten._scaled_dot_product_flash_attention(q, k, v, 0.0, False, False, scale=scale)[:2]
        else:
            out, lse = torch.ops.aten._scaled_dot_product_efficient_attention(
                q, k, v, None, True, 0.0, False, scale=scale
            )[:2]
    except (AttributeError, RuntimeError, NotImplementedError) as exc:
        raise UserError(
            f"loss_backend=attention needs PyTorch's fused attention kernels with log-sum-exp for {q.device.type} / "
            f"{dtype} ({type(exc).__name__}); use loss_backend=blocked"
        ) from None
    return out[0, 0, :, :d].float(), lse[0, 0, :n].float()


def attention_loss(
    u: torch.Tensor,
    v: torch.Tensor,
    tau: float,
    precision: str = "fp32",
    kernel: str = "auto",
    share: ObjectiveShare | None = None,
) -> torch.Tensor:
    """−J of Eq. 2 through fused attention kernels (:class:`_AttentionOffDiagonalLogSumExp`): the scalar −J,
    differentiable with respect to ``u`` and ``v``, with the same value and gradients as :func:`contrastive_loss` in
    fp32, within bf16's precision with ``precision="bf16"``.

    Parameters
    ----------
    u, v
        ``[N, d]`` projections of the two views' anchors, row i of each node i (equal shapes, else a ``ValueError``).
    tau
        τ, the temperature (config ``tau``).
    precision
        ``"fp32"``, ``"tf32"`` or ``"bf16"``: what the kernels compute in (corrections in float32).
    kernel
        PyTorch's kernel on CUDA: ``"flash"`` (bf16), ``"efficient"`` or ``"auto"``.
    share
        This process's share of the rows under torch.distributed (:class:`~gca.objective.share.ObjectiveShare`): it
        computes its rows only, the value and gradient are the full ones everywhere; ``None``: one process, all rows.
    """
    if u.shape != v.shape:
        raise ValueError(f"views must have equal shapes, got {tuple(u.shape)} and {tuple(v.shape)}")
    n = u.shape[0]
    z = F.normalize(torch.cat([u, v], dim=0).float(), dim=1)
    positive = (z[:n] * z[n:]).sum(1) / tau
    dtype = torch.bfloat16 if precision == "bf16" else torch.float32
    with tf32_products(precision == "tf32"):
        log_denominators = _AttentionOffDiagonalLogSumExp.apply(z, tau, dtype, kernel, share)
    return (log_denominators - 2.0 * positive.sum()) / (2 * n)
