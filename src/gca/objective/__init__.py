"""The contrastive objective (Eq. 1–2 of Zhu et al., WWW 2021).

For projected embeddings u_i = g(f(G̃₁))_i and v_i = g(f(G̃₂))_i and θ(a, b) = cos(a, b):

    ℓ(u_i, v_i) = log  e^{θ(u_i,v_i)/τ} / ( e^{θ(u_i,v_i)/τ} + Σ_{k≠i} e^{θ(u_i,v_k)/τ} + Σ_{k≠i} e^{θ(u_i,u_k)/τ} )
    J           = 1/(2N) Σ_i [ ℓ(u_i, v_i) + ℓ(v_i, u_i) ].

Training *minimises* the loss −J. Three implementations compute the same number: :func:`reference_loss`
(:mod:`~gca.objective.reference`), the equations as they read, O(N²) memory, the ground truth tests compare against;
:func:`contrastive_loss` (:mod:`~gca.objective.blocked`), row blocks of the 2N×2N similarity matrix of the stacked
views, memory O(N·(d + block)); :func:`attention_loss` (:mod:`~gca.objective.attention`), PyTorch's fused attention
kernels, memory O(N·d), in fp32 or bf16.

:class:`ContrastiveObjective` is the one factory the model uses: it picks the backend and precision its settings name,
``auto`` resolved per device by :func:`~gca.precision.resolve_objective`, and splits rows over processes with a
:class:`~gca.objective.share.ObjectiveShare`.
"""

from __future__ import annotations

import torch
from torch import nn

from ..precision import (
    bf16_tensor_cores,
    cpu_bf16_matrix_units,
    full_precision,
    objective_reason,
    resolve_objective,
    tf32_products,
)
from .attention import attention_loss
from .blocked import CPU_BLOCK_ELEMENTS, CUDA_BLOCK_ELEMENTS, auto_block_size, contrastive_loss
from .collapse import uniform_loss
from .reference import reference_loss
from .share import ObjectiveShare

__all__ = [
    "CPU_BLOCK_ELEMENTS",
    "CUDA_BLOCK_ELEMENTS",
    "ContrastiveObjective",
    "ObjectiveShare",
    "attention_loss",
    "auto_block_size",
    "bf16_tensor_cores",
    "contrastive_loss",
    "cpu_bf16_matrix_units",
    "objective_reason",
    "reference_loss",
    "resolve_objective",
    "tf32_products",
]


class ContrastiveObjective(nn.Module):
    """−J of Eq. 2 as a module without parameters: ``objective(u, v)`` for the projections of the two views' anchors,
    the part of :class:`gca.nn.model.GCAModel` that scores a pair of views.

    Parameters
    ----------
    tau
        τ, the temperature.
    block_size
        Rows per block of the blocked backend; ``0`` chooses by memory (:func:`auto_block_size`).
    share
        This process's share of the rows under torch.distributed (:class:`~gca.objective.share.ObjectiveShare`);
        ``None``: one process computes all of them.
    backend
        ``"blocked"``, ``"attention"`` or ``"auto"`` (resolved per device by :func:`resolve_objective`).
    precision
        ``"fp32"``, ``"tf32"``, ``"bf16"`` (attention only; with ``blocked`` a ``ValueError``) or ``"auto"``.
    """

    def __init__(
        self,
        tau: float = 0.4,
        block_size: int = 0,
        share: ObjectiveShare | None = None,
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
        # outside an update's bf16 region: the views are normalised and the loss summed in fp32, and the backends
        # choose their products' precision themselves
        with full_precision(u.device):
            u, v = u.float(), v.float()
            if backend == "attention":
                return attention_loss(u, v, self.tau, precision, share=self.share)
            with tf32_products(precision == "tf32"):
                return contrastive_loss(u, v, self.tau, self.block_size, self.share)

    def uniform_loss(self, anchors: int) -> float:
        """The loss when every similarity is equal — log(2N − 1) for N ``anchors`` per view — which a collapsed run sits
        at (:mod:`gca.objective.collapse`)."""
        return uniform_loss(anchors)

    def extra_repr(self) -> str:
        return f"tau={self.tau}, block_size={self.block_size or 'auto'}, {self.backend}, {self.precision}"
