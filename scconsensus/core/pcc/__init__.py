"""Probabilistic consensus clustering (PCC; Lourenço et al., Machine Learning 2015).

Array-level solvers: :func:`pcc` on a dense or sparse co-association, the
:class:`Bregman` divergence type, and :func:`cluster_relationships` (Sect. 7.4).
"""

from ._core import pcc
from ._divergences import Bregman
from ._extend import pcc_extend
from ._init import ensemble_init
from ._result import PCCResult, cluster_relationships

__all__ = [
    "Bregman",
    "PCCResult",
    "cluster_relationships",
    "ensemble_init",
    "pcc",
    "pcc_extend",
]
