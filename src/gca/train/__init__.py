"""Training: Algorithm 1's step and loop (:mod:`.loop`), the sources of batches it trains on (:mod:`.batches`),
checkpoints (:mod:`.checkpoint`), where a process trains among several (:mod:`.distributed`), and the
:class:`~gca.train.estimator.GCA` estimator that wires them (:mod:`.estimator`).

Names are imported on first use (PEP 562).
"""

from ..lazy import lazy_exports

_EXPORTS = {
    "estimator": ("GCA", "clone"),
    "loop": (
        "train", "train_step", "encode_graph", "TrainingError", "CollapseError", "warmup_schedule",
        "updates_taken",
    ),
    "batches": ("Batch", "BatchSource", "batch_source"),
    "checkpoint": ("TrainingCheckpoints", "load_checkpoint", "save_checkpoint"),
    "distributed": ("Placement", "resolve_device"),
    "..augment.prepared": ("prepare", "PreparedGraph"),
}
__getattr__, __dir__, __all__ = lazy_exports(__name__, _EXPORTS)
