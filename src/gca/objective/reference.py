"""−J of Eq. 2 written term by term: the plain formulation every faster backend is tested and measured against."""

from __future__ import annotations

import torch
from torch.nn import functional as F


def reference_loss(u: torch.Tensor, v: torch.Tensor, tau: float) -> torch.Tensor:
    """−J written term by term (Eq. 1–2), in O(N²) memory: the plain version every faster one is tested against.

    Parameters
    ----------
    u, v
        ``[N, d]`` projections of the two views' anchors, row i of each node i (equal shapes, else a ``ValueError``).
    tau
        τ, the temperature (config ``tau``).
    """

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
