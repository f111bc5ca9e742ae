"""Tools: AnnData wrappers in Scanpy's style (results in ``.obs/.obsm/.obsp/.uns``)."""

from ._coassociation import coassociation
from ._ensemble import ensemble

__all__ = ["coassociation", "ensemble"]
