"""GCA's networks (Section 3.1 of Zhu et al., WWW 2021): the GCN encoder f and the projection head g (:mod:`.gcn`),
encoders from PyTorch Geometric's convolutions and users' own (:mod:`.encoders`), and the trainable model that joins
them with the objective (:mod:`.model`).
"""

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

if TYPE_CHECKING:  # the names handed on, imported on first use at run time (gca.lazy)
    from .encoders import EncoderError as EncoderError
    from .encoders import MessagePassingEncoder as MessagePassingEncoder
    from .gcn import GCNEncoder as GCNEncoder
    from .gcn import ProjectionHead as ProjectionHead
    from .model import GCAModel as GCAModel

__getattr__, __dir__, __all__ = lazy_exports(__name__, __file__)
