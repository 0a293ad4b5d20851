"""One run of GCA on one graph: the graph a command reads and what its record says of the files (:mod:`.inputs`),
the graph loaded with its configuration, warnings and splits (:mod:`.job`), fit → evaluate → plots → record
(:mod:`.pipeline`), what else a run can measure (:mod:`.tasks`), how ``gca train`` logs repeated pretrainings and
resumed runs (:mod:`.logs`), and ``gca train``'s whole run, asked for in one request (:mod:`.train`). Results are
the caller's to print; result files are :mod:`gca.outputs`'.
"""

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

if TYPE_CHECKING:  # the names handed on, imported on first use at run time (gca.lazy)
    from .inputs import GraphRequest as GraphRequest
    from .job import Job as Job
    from .pipeline import RunResult as RunResult
    from .pipeline import run_gca as run_gca
    from .tasks import link_prediction as link_prediction
    from .train import TrainOutcome as TrainOutcome
    from .train import TrainRequest as TrainRequest

__getattr__, __dir__, __all__ = lazy_exports(__name__, __file__)
