"""Tools: AnnData wrappers in Scanpy's style (results in ``.obs/.obsm/.obsp/.uns``)."""

from ._coassociation import coassociation
from ._compare import compare
from ._consensus_k import consensus_k
from ._dpp import dpp
from ._ensemble import ensemble
from ._null import k_null
from ._pcc import pcc
from ._pla import pla
from ._transfer import pla_transfer

__all__ = [
    "coassociation",
    "compare",
    "consensus_k",
    "dpp",
    "ensemble",
    "k_null",
    "pcc",
    "pla",
    "pla_transfer",
]
