"""The contrastive objective (Eq. 1–2 of Zhu et al., WWW 2021).

For projected embeddings u_i = g(f(G̃₁))_i and v_i = g(f(G̃₂))_i and θ(a, b) = cos(a, b):

    ℓ(u_i, v_i) = log  e^{θ(u_i,v_i)/τ} / ( e^{θ(u_i,v_i)/τ} + Σ_{k≠i} e^{θ(u_i,v_k)/τ} + Σ_{k≠i} e^{θ(u_i,u_k)/τ} )
    J           = 1/(2N) Σ_i [ ℓ(u_i, v_i) + ℓ(v_i, u_i) ].

Training *minimises* the loss −J. Two implementations compute the same number:

* :func:`reference_loss` — written as the equations read: four N×N similarity matrices under autograd.
  O(N²) memory; kept as the ground truth that tests compare against.
* :func:`contrastive_loss` — the same value from the 2N×2N similarity matrix of the stacked views Z = [U; V]:
  the denominator of row a is Σ_{b≠a} exp(S_ab) (the positive pair, the inter-view and the intra-view negatives
  are exactly the off-diagonal entries of that row). Rows are processed in blocks and the backward pass
  recomputes each block, so memory is O(N·(d + block)) and no N×N tensor is kept.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Protocol

import torch
from torch import nn
from torch.nn import functional as F

from .collapse import uniform_loss


class RowShare(Protocol):
    """Which rows this process computes — row blocks of the upper block-triangle (blocked objective) or a range of
    whole rows (attention objective) — and how partial sums are combined."""

    def block_starts(self, num_rows: int, block: int) -> Sequence[int]: ...

    def row_range(self, num_rows: int) -> tuple[int, int]: ...

    def all_reduce(self, tensor: torch.Tensor) -> None: ...


def reference_loss(u: torch.Tensor, v: torch.Tensor, tau: float) -> torch.Tensor:
    """−J written term by term (Eq. 1–2); the plain version every faster one is tested against."""

    def pairwise(anchor: torch.Tensor, other: torch.Tensor) -> torch.Tensor:
        anchor, other = F.normalize(anchor, dim=1), F.normalize(other, dim=1)
        intra = torch.exp(anchor @ anchor.t() / tau)  # e^{θ(u_i, u_k)/τ}
        inter = torch.exp(anchor @ other.t() / tau)  # e^{θ(u_i, v_k)/τ}
        k_not_i = ~torch.eye(anchor.shape[0], dtype=torch.bool, device=anchor.device)
        positive = inter.diagonal()
        denominator = positive + (inter * k_not_i).sum(1) + (intra * k_not_i).sum(1)
        return torch.log(positive / denominator)

    objective = 0.5 * (pairwise(u, v) + pairwise(v, u)).mean()
    return -objective


CPU_BLOCK_ELEMENTS = 1 << 19
CUDA_BLOCK_ELEMENTS = 1 << 26


def auto_block_size(num_rows: int, budget_elements: int | None = None, device: torch.device | str = "cpu") -> int:
    """Rows per block: about ``budget_elements`` similarities per block, at least 64 rows.

    The default budget depends on the device. CPU: 2^19 (2 MiB in fp32) — measured on a 2-core Xeon
    (benchmarks/objective.py), 64–128 rows are fastest for 2N = 5,416 and 15,300; 16–32 rows starve the matrix
    multiply, and blocks far beyond the L2 cache slow the exponentials. CUDA: 2^26 (256 MiB) — a GPU needs
    large products to fill its cores, and each block costs a few kernel launches (benchmarks/gpu.py).
    """
    if budget_elements is None:
        budget_elements = CUDA_BLOCK_ELEMENTS if torch.device(device).type == "cuda" else CPU_BLOCK_ELEMENTS
    return int(min(num_rows, max(64, budget_elements // max(num_rows, 1))))


class _OffDiagonalLogSumExp(torch.autograd.Function):
    """Σ_a log Σ_{b≠a} exp(z_a·z_b / τ) for the rows of Z, in blocks of rows, with a recomputing backward.

    With E_ab = exp((z_a·z_b − 1)/τ) for b ≠ a (shifted by the largest possible value 1/τ, so E ≤ 1 for unit
    rows) and D_a = Σ_b E_ab, the gradient is ∂/∂z_a = (1/τ) Σ_b E_ab (1/D_a + 1/D_b) z_b = (1/τ) (M Z)_a with
    the symmetric M = D⁻¹E + ED⁻¹.

    E and M are symmetric, so only their upper block-triangle is ever computed: row block r against columns
    r0…2N. Its row sums feed D_r and its column sums the D of later rows; in the backward pass the same block of M
    serves rows r (M_r· Z) and, transposed, the later rows (M_r·ᵀ Z_r). In units of one full (2N)²·d product:
    forward ½, backward ½ (recompute) + ½ + ½ (the two gradient products) — 2 in all, against 4 for a full
    sweep that recomputes (and 3 for four N×N matrices kept under autograd).
    """

    @staticmethod
    def forward(ctx, z: torch.Tensor, tau: float, block: int, share: RowShare | None) -> torch.Tensor:
        n = z.shape[0]
        starts = range(0, n, block) if share is None else share.block_starts(n, block)
        denominator = torch.zeros(n, dtype=z.dtype, device=z.device)
        for start in starts:
            stop = min(start + block, n)
            e = _exp_block(z, start, stop, tau)
            denominator[start:] += e.sum(0)
            denominator[start:stop] += e.sum(1)
            denominator[start:stop] -= e[:, : stop - start].sum(0)  # the diagonal block was counted twice
        if share is not None:
            share.all_reduce(denominator)  # every process's blocks together: the full denominators
        log_denominator = denominator.log()
        ctx.save_for_backward(z, log_denominator)
        ctx.tau, ctx.block, ctx.starts, ctx.share = tau, block, starts, share
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
            m = _exp_block(z, start, stop, tau)
            m.mul_(inv_d[start:stop].unsqueeze(1) + inv_d[start:].unsqueeze(0))
            # In-place accumulation: no (2N × d) temporary per block for the transposed product.
            grad[start:stop].addmm_(m, z[start:])
            if stop < n:
                grad[stop:].addmm_(m[:, stop - start :].t(), z[start:stop])
        if ctx.share is not None:
            ctx.share.all_reduce(grad)  # the full gradient on every process: what follows is identical everywhere
        return grad * (grad_out / tau), None, None, None


def _exp_block(z: torch.Tensor, start: int, stop: int, tau: float) -> torch.Tensor:
    """exp((Z[start:stop] Z[start:]ᵀ − 1)/τ) — one row block of E's upper triangle — with E_aa set to zero."""
    e = torch.addmm(z.new_tensor(-1.0 / tau), z[start:stop], z[start:].t(), beta=1.0, alpha=1.0 / tau)
    e.exp_()
    e.diagonal().zero_()
    return e


def contrastive_loss(
    u: torch.Tensor, v: torch.Tensor, tau: float, block_size: int = 0, share: RowShare | None = None
) -> torch.Tensor:
    """−J of Eq. 2, blocked and memory-bounded; same value and gradients as :func:`reference_loss`.

    With ``share`` (several processes, :mod:`gca.distributed`), this process computes only its share of the
    blocks; two all-reduces (the 2N denominators, the 2N×d gradient) make the value and the gradient with respect
    to u and v the full ones on every process.
    """
    if u.shape != v.shape:
        raise ValueError(f"views must have equal shapes, got {tuple(u.shape)} and {tuple(v.shape)}")
    n = u.shape[0]
    z = F.normalize(torch.cat([u, v], dim=0), dim=1)
    block = block_size if block_size > 0 else auto_block_size(2 * n, device=z.device)
    positive = (z[:n] * z[n:]).sum(1) / tau  # θ(u_i, v_i)/τ, appears in ℓ(u_i, v_i) and ℓ(v_i, u_i)
    log_denominators = _OffDiagonalLogSumExp.apply(z, tau, block, share)
    return (log_denominators - 2.0 * positive.sum()) / (2 * n)


class _AttentionOffDiagonalLogSumExp(torch.autograd.Function):
    """Σ_a lse′_a, lse′_a = log Σ_{b≠a} exp(z_a·z_b/τ), from PyTorch's fused attention kernels, memory O(N·d).

    One attention call with Q = K = V = Z and scale 1/τ returns O = P Z (P the full row-softmax of S = ZZᵀ/τ) and
    the full row log-sum-exp lse. Rows are unit vectors, so the diagonal term is e^{1/τ} and is removed exactly:
    lse′ = lse + log(1 − e^{1/τ − lse}). The gradient is (1/τ)(P′Z + P′ᵀZ) with P′ the off-diagonal row-softmax:

        (P′Z)_a  = O_a e^{lse_a − lse′_a} − e^{1/τ − lse′_a} z_a,
        (P′ᵀZ)_b = e^{lse_b − c} · Attn(Z, Z, Z ⊙ e^{c − lse′})_b − e^{1/τ − lse′_b} z_b,

    the second from one more attention call (S is symmetric); c = min lse′ keeps the scaled values ≤ 1.
    With ``share`` (several processes) a process computes the rows ``share.row_range`` gives it — whole rows, so
    equal row counts are equal work — against all of Z; two all-reduces (the 2N values lse′, the 2N×d gradient)
    give every process the full value and gradient, as for the blocked objective.
    ``dtype`` is what the kernels compute in (float32, or bfloat16 for ``precision=bf16``); the corrections are
    applied in float32. ``kernel`` picks PyTorch's kernel (:func:`_fused_attention`).
    """

    @staticmethod
    def forward(
        ctx, z: torch.Tensor, tau: float, dtype: torch.dtype, kernel: str = "auto", share: RowShare | None = None
    ) -> torch.Tensor:
        n = z.shape[0]
        start, stop = (0, n) if share is None else share.row_range(n)
        rows = z[start:stop]  # this process's anchors (all of them for one process); keys and values: all of Z
        out, lse = _fused_attention(rows, z, z, 1.0 / tau, dtype, kernel)
        lse_off = lse + torch.log1p(-torch.exp(1.0 / tau - lse))
        if share is not None:  # every process needs every lse′ for the backward pass (the Pᵀ term)
            every = torch.zeros(n, dtype=lse_off.dtype, device=lse_off.device)
            every[start:stop] = lse_off
            share.all_reduce(every)
        else:
            every = lse_off
        ctx.save_for_backward(z, out, lse, every)
        ctx.tau, ctx.dtype, ctx.kernel, ctx.share, ctx.rows = tau, dtype, kernel, share, (start, stop)
        return every.sum()

    @staticmethod
    def backward(ctx, grad_out: torch.Tensor):
        z, out, lse, every = ctx.saved_tensors
        tau, (start, stop) = ctx.tau, ctx.rows
        rows, lse_off = z[start:stop], every[start:stop]
        diagonal = torch.exp(1.0 / tau - lse_off).unsqueeze(1) * rows
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


def _fused_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float, dtype: torch.dtype,
                     kernel: str = "auto") -> tuple[torch.Tensor, torch.Tensor]:  # fmt: skip
    """(softmax(q kᵀ · scale) v, row log-sum-exp) for 2-D inputs, from PyTorch's fused kernels, as float32.

    On CUDA, ``kernel="flash"`` is FlashAttention-2 (bf16/fp16 only, the faster on tensor cores) and
    ``"efficient"`` the memory-efficient kernel (fp32 too); ``"auto"`` takes flash for bf16 where PyTorch has it.
    Both return the natural-log row log-sum-exp this objective needs. On CPUs there is one flash kernel.
    """
    q, k, v = (t.to(dtype)[None, None] for t in (q, k, v))
    n = q.shape[2]
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
        raise RuntimeError(
            f"loss_backend=attention needs PyTorch's fused attention kernels with log-sum-exp for {q.device.type} / "
            f"{dtype} ({type(exc).__name__}); use loss_backend=blocked"
        ) from None
    return out[0, 0].float(), lse[0, 0, :n].float()


def attention_loss(
    u: torch.Tensor,
    v: torch.Tensor,
    tau: float,
    precision: str = "fp32",
    kernel: str = "auto",
    share: RowShare | None = None,
) -> torch.Tensor:
    """−J of Eq. 2 through fused attention kernels (:class:`_AttentionOffDiagonalLogSumExp`); the same value and
    gradients as :func:`contrastive_loss` in fp32, within bf16's precision with ``precision="bf16"``. With
    ``share``, this process computes its rows only and the value and gradient are the full ones everywhere."""
    if u.shape != v.shape:
        raise ValueError(f"views must have equal shapes, got {tuple(u.shape)} and {tuple(v.shape)}")
    n = u.shape[0]
    z = F.normalize(torch.cat([u, v], dim=0).float(), dim=1)
    positive = (z[:n] * z[n:]).sum(1) / tau
    dtype = torch.bfloat16 if precision == "bf16" else torch.float32
    with _tf32(precision == "tf32"):
        log_denominators = _AttentionOffDiagonalLogSumExp.apply(z, tau, dtype, kernel, share)
    return (log_denominators - 2.0 * positive.sum()) / (2 * n)


class _tf32:
    """TF32 tensor-core products on CUDA inside the block (``precision=tf32``); no effect on CPUs."""

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
    """
    if precision == "auto":
        fast_bf16 = bf16_tensor_cores(device) if tensor_cores is None else tensor_cores
        precision = "bf16" if fast_bf16 and backend in ("auto", "attention") else "fp32"
    if backend == "auto":
        backend = "attention" if precision == "bf16" else "blocked"
    return backend, precision


class ContrastiveObjective(nn.Module):
    """−J of Eq. 2 as a module: ``objective(u, v)`` for the projections of the two views' anchors.

    The part of :class:`gca.model.GCAModel` that scores a pair of views; other objectives with the same call (e.g.
    one process's share of the rows) can take its place. No parameters.
    """

    def __init__(
        self,
        tau: float = 0.4,
        block_size: int = 0,
        share: RowShare | None = None,
        backend: str = "auto",
        precision: str = "auto",
    ) -> None:
        super().__init__()
        if precision == "bf16" and backend == "blocked":
            raise ValueError("precision=bf16 needs loss_backend=attention")
        self.tau = tau
        self.block_size = block_size
        self.share = share  # None: this process computes every block
        self.backend = backend  # auto and auto: resolve_objective on the views' device
        self.precision = precision

    def resolved(self, device: torch.device | str) -> tuple[str, str]:
        """(backend, precision) this objective computes with on ``device``."""
        return resolve_objective(self.backend, self.precision, device)

    def forward(self, u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        backend, precision = self.resolved(u.device)
        if backend == "attention":
            return attention_loss(u, v, self.tau, precision, share=self.share)
        with _tf32(precision == "tf32"):
            return contrastive_loss(u, v, self.tau, self.block_size, self.share)

    def uniform_loss(self, anchors: int) -> float:
        """The loss when every similarity is equal — log(2N − 1) for N anchors — which a collapsed run sits at
        (:mod:`gca.collapse`)."""
        return uniform_loss(anchors)

    def extra_repr(self) -> str:
        return f"tau={self.tau}, block_size={self.block_size or 'auto'}, {self.backend}, {self.precision}"
