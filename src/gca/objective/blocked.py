"""The blocked backend: −J from the 2N×2N similarity matrix of the stacked views Z = [U; V], a block of rows at a time.

The denominator of row a is Σ_{b≠a} exp(S_ab) — the positive pair, the inter-view and the intra-view negatives are
exactly the off-diagonal entries of that row. Only the upper block-triangle is computed (S is symmetric), rows are
processed in blocks, and the backward pass recomputes a block unless the forward pass could keep it within a fixed
budget of memory (:data:`CPU_KEEP_BYTES`), so memory is O(N·(d + block)) plus at most that budget, and no N×N tensor
is held beyond it.
"""

from __future__ import annotations

import torch
from torch.nn import functional as F

from .share import ObjectiveShare

CPU_BLOCK_ELEMENTS = 1 << 22
CPU_MAX_BLOCK_ROWS = 256
CUDA_BLOCK_ELEMENTS = 1 << 26
# Blocks of E the forward pass keeps for the backward pass, in bytes. On CPUs the matrix products are the bound
# (they run near the cores' fp32 peak: docs/benchmarks.md, "Epoch speed and bf16 on the CPU"), and a kept block
# saves the backward pass one of its three products of that block: 2 units of (2N)²·d products per step become 1.5
# where all of E fits.
# 512 MiB holds all of E up to 2N ≈ 16,000 rows (Amazon-Photo); larger graphs keep their first blocks and
# recompute the rest. On GPUs memory is the scarcer resource and recomputing is cheap: nothing is kept.
CPU_KEEP_BYTES = 512 << 20
CUDA_KEEP_BYTES = 0


def keep_budget(device: torch.device | str) -> int:
    """Bytes of E's blocks kept between the forward and the backward pass on ``device``."""
    return CUDA_KEEP_BYTES if torch.device(device).type == "cuda" else CPU_KEEP_BYTES


def auto_block_size(num_rows: int, budget_elements: int | None = None, device: torch.device | str = "cpu") -> int:
    """Rows per block of the ``num_rows`` (2N) rows: about ``budget_elements`` similarities per block (``None``: the
    device's default, on CPUs 2^22, on CUDA 2^26), at least 64 rows, on CPUs at most 256."""
    cuda = torch.device(device).type == "cuda"
    if budget_elements is None:
        budget_elements = CUDA_BLOCK_ELEMENTS if cuda else CPU_BLOCK_ELEMENTS
    rows = max(64, budget_elements // max(num_rows, 1))
    return int(min(num_rows, rows if cuda else min(rows, CPU_MAX_BLOCK_ROWS)))


class _OffDiagonalLogSumExp(torch.autograd.Function):
    """Σ_a log Σ_{b≠a} exp(z_a·z_b / τ) for the rows of Z, in blocks of rows, with a recomputing backward.

    With E_ab = exp((z_a·z_b − 1)/τ) for b ≠ a (shifted by the largest possible value 1/τ, so E ≤ 1 for unit rows) and
    D_a = Σ_b E_ab, the gradient is ∂/∂z_a = (1/τ) Σ_b E_ab (1/D_a + 1/D_b) z_b = (1/τ) (M Z)_a with the symmetric M =
    D⁻¹E + ED⁻¹.

    Only the upper block-triangle of E and M is computed: row block r against columns r0…2N. Its row sums feed D_r and
    its column sums the D of later rows; in the backward pass the same block of M serves rows r (M_r· Z) and,
    transposed, the later rows (M_r·ᵀ Z_r). Blocks kept within ``keep_bytes`` skip the recompute; a kept block is the
    very tensor a recompute would give, so the gradient is the same to the bit.
    """

    @staticmethod
    def forward(
        ctx, z: torch.Tensor, tau: float, block: int, share: ObjectiveShare | None, keep_bytes: int
    ) -> torch.Tensor:
        n = z.shape[0]
        starts = range(0, n, block) if share is None else share.block_starts(n, block)
        denominator = torch.zeros(n, dtype=z.dtype, device=z.device)
        kept: dict[int, torch.Tensor] = {}
        room = keep_bytes
        for start in starts:
            stop = min(start + block, n)
            e = _exp_block(z, start, stop, tau)
            denominator[start:] += e.sum(0)
            denominator[start:stop] += e.sum(1)
            denominator[start:stop] -= e[:, : stop - start].sum(0)  # the diagonal block was counted twice
            if e.numel() * e.element_size() <= room:
                kept[start] = e
                room -= e.numel() * e.element_size()
        if share is not None:
            share.all_reduce(denominator)  # every process's blocks together: the full denominators
        log_denominator = denominator.log()
        ctx.save_for_backward(z, log_denominator)
        ctx.tau, ctx.block, ctx.starts, ctx.share, ctx.kept = tau, block, starts, share, kept
        return (log_denominator + 1.0 / tau).sum()

    @staticmethod
    def backward(ctx, grad_out: torch.Tensor):
        z, log_denominator = ctx.saved_tensors
        tau, block = ctx.tau, ctx.block
        n = z.shape[0]
        inv_d = torch.exp(-log_denominator)
        grad = torch.zeros_like(z)
        for start in ctx.starts:
            stop = min(start + block, n)
            # M = P + Pᵀ with P = D⁻¹E, restricted to this block: E_ab (1/D_a + 1/D_b), symmetric like E.
            # a kept block is used up here (it becomes M), so a second backward pass recomputes it
            m = ctx.kept.pop(start, None)
            if m is None:
                m = _exp_block(z, start, stop, tau)
            m.mul_(inv_d[start:stop].unsqueeze(1) + inv_d[start:].unsqueeze(0))
            # In-place accumulation: no (2N × d) temporary per block for the transposed product.
            grad[start:stop].addmm_(m, z[start:])
            if stop < n:
                grad[stop:].addmm_(m[:, stop - start :].t(), z[start:stop])
        if ctx.share is not None:
            ctx.share.all_reduce(grad)  # the full gradient on every process: what follows is identical everywhere
        return grad * (grad_out / tau), None, None, None, None


def _exp_block(z: torch.Tensor, start: int, stop: int, tau: float) -> torch.Tensor:
    """exp((Z[start:stop] Z[start:]ᵀ − 1)/τ) — one row block of E's upper triangle — with E_aa set to zero."""
    e = torch.addmm(z.new_tensor(-1.0 / tau), z[start:stop], z[start:].t(), beta=1.0, alpha=1.0 / tau)
    e.exp_()
    e.diagonal().zero_()
    return e


def contrastive_loss(
    u: torch.Tensor,
    v: torch.Tensor,
    tau: float,
    block_size: int = 0,
    share: ObjectiveShare | None = None,
    keep_bytes: int | None = None,
) -> torch.Tensor:
    """−J of Eq. 2, blocked and memory-bounded: the scalar −J, differentiable with respect to ``u`` and ``v``, with the
    same value and gradients as :func:`reference_loss`.

    Parameters
    ----------
    u, v
        ``[N, d]`` projections of the two views' anchors, row i of each node i (equal shapes, else a ``ValueError``).
    tau
        τ, the temperature (config ``tau``).
    block_size
        Rows of the 2N × 2N similarity matrix per block; ``0`` chooses by memory (:func:`auto_block_size`).
    share
        This process's share of the blocks under torch.distributed (:class:`~gca.objective.share.ObjectiveShare`); two
        all-reduces make the value and gradient the full ones on every process. ``None``: one process, all blocks.
    keep_bytes
        The memory the forward pass may spend on blocks of E it keeps for the backward pass; ``None`` for
        :func:`keep_budget` of the device.
    """
    if u.shape != v.shape:
        raise ValueError(f"views must have equal shapes, got {tuple(u.shape)} and {tuple(v.shape)}")
    n = u.shape[0]
    z = F.normalize(torch.cat([u, v], dim=0), dim=1)
    block = block_size if block_size > 0 else auto_block_size(2 * n, device=z.device)
    positive = (z[:n] * z[n:]).sum(1) / tau  # θ(u_i, v_i)/τ, appears in ℓ(u_i, v_i) and ℓ(v_i, u_i)
    keep = keep_budget(z.device) if keep_bytes is None else keep_bytes
    log_denominators = _OffDiagonalLogSumExp.apply(z, tau, block, share, keep if z.requires_grad else 0)
    return (log_denominators - 2.0 * positive.sum()) / (2 * n)
