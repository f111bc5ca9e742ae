"""Probabilistic consensus clustering (PCC; Lourenço et al., Machine Learning 2015).

Array-level solvers: :func:`pcc` on a dense or sparse co-association (also called as
``scconsensus.core.pcc(...)``, the module, for code written when a function had its name), the
:class:`Bregman` divergence type, :func:`pcc_lowrank` (squared l2 on all pairs of an
ensemble without the n x n matrix) and :func:`cluster_relationships` (Sect. 7.4);
:func:`pcc_consensus` (also ``scconsensus.core.pcc_consensus``) runs the whole method
on an ensemble's labels (plan, route, fit on a subset, :func:`pcc_extend` to the other
items), as ``tl.pcc`` does, as :func:`scconsensus.core.pla.pla_consensus` does for PLA.
"""

from .._callable import callable_module
from ._cache import kernels_cached
from ._consensus import PCCConsensus, pcc_consensus
from ._core import pcc
from ._divergences import Bregman
from ._doc import PCC_PARAMS
from ._extend import pcc_extend
from ._init import ensemble_init
from ._lowrank import l2_constant, pcc_lowrank
from ._result import PCCResult, cluster_relationships, thresholded_membership

callable_module(__name__, pcc)

__all__ = [
    "PCC_PARAMS",
    "Bregman",
    "PCCConsensus",
    "PCCResult",
    "cluster_relationships",
    "ensemble_init",
    "kernels_cached",
    "l2_constant",
    "pcc",
    "pcc_consensus",
    "pcc_extend",
    "pcc_lowrank",
    "thresholded_membership",
]
