"""R interoperability (optional extra ``scconsensus[r]``: rpy2 and anndata2ri).

- :func:`consensus_cluster_plus`: Bioconductor's ConsensusClusterPlus on an
  AnnData, results in scconsensus's shared layout.
- :func:`to_sce` / :func:`from_sce`: AnnData <-> SingleCellExperiment.

Importing this module does not start R; R is loaded on the first call, and a
missing R, rpy2 or R package raises :class:`RDependencyError` naming what to
install. The R package in ``r_bridge/`` is the other direction, R users
calling scconsensus; its Python side is :mod:`scconsensus.r_bridge`.
"""

from ._ccp import consensus_cluster_plus
from ._errors import RDependencyError, require_r_package, require_rpy2
from ._sce import from_sce, to_sce

__all__ = [
    "RDependencyError",
    "consensus_cluster_plus",
    "from_sce",
    "require_r_package",
    "require_rpy2",
    "to_sce",
]
