"""Array-level core: ensembles, co-association and consensus solvers, no AnnData.

This layer takes and returns numpy/scipy objects; it is what the R bridge and
power users call directly. Each method runs whole from an ensemble's labels or the
data (:func:`pcc_consensus`, :func:`pla_consensus`, :func:`dpp_consensus`); its pieces
sit in its subpackage (``core.pcc``, ``core.pla``, ``core.dpp``, ``core.consensus_k``),
which no function of the same name shadows. ``core.pcc(...)``, ``core.pla(...)`` and
``core.coassociation(...)`` still call the solvers they named before: those modules are
callable.
"""

from . import coassociation
from ._callable import callable_module
from ._confidence import ensemble_confidence, ensemble_support, transferred_confidence
from ._ensemble_pairs import ensemble_pairs
from ._matching import matched_partitions
from ._null import (
    NULL_RATIO,
    REFERENCE_ITEMS,
    check_reference_size,
    gaussian_like,
    null_evidence,
    null_table,
)
from ._options import PCC_ROUTE, PLA_ROUTE, FitRoute, PartitionOptions, StartPlan
from ._plan import ConsensusPlan, plan_consensus
from ._resolution import KSelection, k_evidence, select_k
from ._spectral import incidence_spectrum, partition_sizes, spectral_consensus
from .coassociation import pairs_from_sparse, sample_pairs
from .consensus_k import ConsensusK, resample_partitions, summarize_consensus
from .dpp import DPPConsensus, SpectralDPP, dpp_consensus
from .ensemble import DisconnectedGraphWarning, Ensemble, generate_ensemble
from .pcc import Bregman, PCCConsensus, PCCResult, cluster_relationships, pcc_consensus
from .pla import (
    PLAConsensus,
    PLAResult,
    pla_consensus,
    pla_em,
    pla_extend,
    predict_ensemble_labels,
)

callable_module(coassociation.__name__, coassociation.coassociation)

__all__ = [
    "NULL_RATIO",
    "PCC_ROUTE",
    "PLA_ROUTE",
    "REFERENCE_ITEMS",
    "Bregman",
    "ConsensusK",
    "ConsensusPlan",
    "DPPConsensus",
    "DisconnectedGraphWarning",
    "Ensemble",
    "FitRoute",
    "KSelection",
    "PCCConsensus",
    "PCCResult",
    "PLAConsensus",
    "PLAResult",
    "PartitionOptions",
    "SpectralDPP",
    "StartPlan",
    "check_reference_size",
    "cluster_relationships",
    "coassociation",
    "dpp_consensus",
    "ensemble_confidence",
    "ensemble_pairs",
    "ensemble_support",
    "gaussian_like",
    "generate_ensemble",
    "incidence_spectrum",
    "k_evidence",
    "matched_partitions",
    "null_evidence",
    "null_table",
    "pairs_from_sparse",
    "partition_sizes",
    "pcc",
    "pcc_consensus",
    "pla",
    "pla_consensus",
    "pla_em",
    "pla_extend",
    "plan_consensus",
    "predict_ensemble_labels",
    "resample_partitions",
    "sample_pairs",
    "select_k",
    "spectral_consensus",
    "summarize_consensus",
    "transferred_confidence",
]
