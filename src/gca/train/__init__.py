"""Training: Algorithm 1's step and loop (:mod:`.loop`), the sources of batches it trains on (:mod:`.batches`),
checkpoints (:mod:`.checkpoint`), where a process trains among several (:mod:`.distributed`), and the
:class:`~gca.train.estimator.GCA` estimator that wires them (:mod:`.estimator`).

Names are imported on first use (PEP 562).
"""

from ..lazy import lazy_exports

_EXPORTS = {
    "GCA": "estimator",
    "train": "loop",
    "train_step": "loop",
    "encode_graph": "loop",
    "TrainingError": "loop",
    "CollapseError": "loop",
    "Batch": "batches",
    "BatchSource": "batches",
    "batch_source": "batches",
    "TrainingCheckpoints": "checkpoint",
    "load_checkpoint": "checkpoint",
    "save_checkpoint": "checkpoint",
    "Placement": "distributed",
    "resolve_device": "distributed",
    "prepare": "..augment.prepared",
    "PreparedGraph": "..augment.prepared",
    "warmup_schedule": "loop",
    "updates_taken": "loop",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
