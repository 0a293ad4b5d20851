"""One run of GCA on one graph: the graph loaded with its configuration, warnings and splits (:mod:`.job`), fit →
evaluate → plots → record (:mod:`.pipeline`), what else a run can measure (:mod:`.tasks`), and how ``gca train``
logs repeated pretrainings and resumed runs (:mod:`.logs`). Nothing here prints; result files are
:mod:`gca.outputs`'.

Names are imported on first use (PEP 562).
"""

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

_EXPORTS = {"job": ("Job",), "pipeline": ("RunResult", "run_gca"), "tasks": ("link_prediction",)}

if TYPE_CHECKING:  # the same names, imported for type checkers and IDEs (checked by tests/test_layout.py)
    from .job import Job as Job
    from .pipeline import RunResult as RunResult
    from .pipeline import run_gca as run_gca
    from .tasks import link_prediction as link_prediction

__getattr__, __dir__, __all__ = lazy_exports(__name__, _EXPORTS)
