"""A run's result files: the output folder, checked, staged and committed together (:mod:`.folder`), embeddings keyed
by node id (:mod:`.export`) and figures (:mod:`.plots`).

Names are imported on first use (PEP 562).
"""

from ..lazy import lazy_exports

_EXPORTS = {
    "folder": ("RunOutputs", "OutputError", "check_folder", "hold_folder", "release_folder"),
    "export": ("export_embeddings", "ExportError"),
    "plots": ("loss_curve", "tsne_map"),
}
__getattr__, __dir__, __all__ = lazy_exports(__name__, _EXPORTS)
