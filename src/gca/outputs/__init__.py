"""A run's result files: the output folder, checked, staged and committed together (:mod:`.folder`), embeddings keyed
by node id (:mod:`.export`) and figures (:mod:`.plots`).
"""

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

if TYPE_CHECKING:  # the names handed on, imported on first use at run time (gca.lazy)
    from ..io import OutputError as OutputError
    from .export import ExportError as ExportError
    from .export import export_embeddings as export_embeddings
    from .folder import RunOutputs as RunOutputs
    from .folder import check_folder as check_folder
    from .plots import loss_curve as loss_curve
    from .plots import tsne_map as tsne_map

__getattr__, __dir__, __all__ = lazy_exports(__name__, __file__)
