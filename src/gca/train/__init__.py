"""Training: Algorithm 1's step and loop (:mod:`.loop`), the sources of batches it trains on (:mod:`.batches`),
checkpoints (:mod:`.checkpoint`), where a process trains among several (:mod:`.distributed`), and the
:class:`~gca.train.estimator.GCA` estimator that wires them (:mod:`.estimator`).
"""

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

if TYPE_CHECKING:  # the names handed on, imported on first use at run time (gca.lazy)
    from .batches import Batch as Batch
    from .batches import BatchSource as BatchSource
    from .batches import batch_source as batch_source
    from .checkpoint import TrainingCheckpoints as TrainingCheckpoints
    from .checkpoint import load_checkpoint as load_checkpoint
    from .checkpoint import save_checkpoint as save_checkpoint
    from .distributed import Placement as Placement
    from .distributed import resolve_device as resolve_device
    from .estimator import GCA as GCA
    from .estimator import clone as clone
    from .inference import encode_graph as encode_graph
    from .loop import CollapseError as CollapseError
    from .loop import TrainingError as TrainingError
    from .loop import train as train
    from .loop import train_step as train_step
    from .loop import updates_taken as updates_taken
    from .loop import warmup_schedule as warmup_schedule
    from .nodes import GraphNodes as GraphNodes

__getattr__, __dir__, __all__ = lazy_exports(__name__, __file__)
