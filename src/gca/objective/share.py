"""How several processes split the objective's rows (:mod:`gca.train.distributed` makes the shares)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import torch


class ObjectiveShare(Protocol):
    """Which rows this process computes — row blocks of the upper block-triangle (blocked objective) or a range of
    whole rows (attention objective) — and how partial sums are combined."""

    def block_starts(self, num_rows: int, block: int) -> Sequence[int]: ...

    def row_range(self, num_rows: int) -> tuple[int, int]: ...

    def all_reduce(self, tensor: torch.Tensor) -> None: ...
