"""One run of GCA on one graph: the graph loaded with its configuration, warnings and splits (:mod:`.job`), fit →
evaluate → plots → record (:mod:`.pipeline`), and what else a run can measure (:mod:`.tasks`). Nothing here prints;
result files are :mod:`gca.outputs`'.

Names are imported on first use (PEP 562).
"""

from ..lazy import lazy_exports

_EXPORTS = {
    "Job": "job",
    "RunResult": "pipeline",
    "run_gca": "pipeline",
    "link_prediction": "tasks",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
