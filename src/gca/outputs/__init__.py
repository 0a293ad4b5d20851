"""A run's result files: the output folder, checked, staged and committed together (:mod:`.folder`), embeddings keyed
by node id (:mod:`.export`) and figures (:mod:`.plots`).

Names are imported on first use (PEP 562).
"""

from ..lazy import lazy_exports

_EXPORTS = {
    "RunOutputs": "folder",
    "OutputError": "folder",
    "export_embeddings": "export",
    "loss_curve": "plots",
    "tsne_map": "plots",
    "check_folder": "folder",
    "hold_folder": "folder",
    "release_folder": "folder",
    "ExportError": "export",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
