"""One run of GCA on one graph: the graph loaded with its configuration, warnings and splits (:mod:`.job`), fit →
evaluate → plots → record (:mod:`.pipeline`), and what else a run can measure (:mod:`.tasks`). Nothing here prints;
result files are :mod:`gca.outputs`'.

Names are imported on first use (PEP 562).
"""

from ..lazy import lazy_exports

_EXPORTS = {
    "job": ("Job",),
    "pipeline": ("RunResult", "run_gca"),
    "tasks": ("link_prediction",),
}
__getattr__, __dir__, __all__ = lazy_exports(__name__, _EXPORTS)
