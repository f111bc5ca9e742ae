"""Array-level core: ensembles, co-association and consensus solvers, no AnnData.

This layer takes and returns numpy/scipy objects; it is what the R bridge and
power users call directly.
"""

from ._confidence import ensemble_confidence, ensemble_support
from ._ensemble_pairs import ensemble_pairs
from ._pcc_consensus import PCCConsensus, pcc_consensus
from ._plan import ConsensusPlan, plan_consensus
from ._resolution import KSelection, matched_partitions, select_k
from ._spectral import incidence_spectrum, partition_sizes, spectral_consensus
from .coassociation import coassociation, pairs_from_sparse, sample_pairs
from .consensus_k import ConsensusK, resample_partitions, summarize_consensus
from .dpp import DPPConsensus, SpectralDPP, dpp_consensus
from .ensemble import Ensemble, generate_ensemble
from .pcc import Bregman, PCCResult, cluster_relationships, pcc
from .pla import PLAResult, pla, pla_em, pla_extend, predict_ensemble_labels

__all__ = [
    "Bregman",
    "ConsensusK",
    "ConsensusPlan",
    "DPPConsensus",
    "Ensemble",
    "KSelection",
    "PCCConsensus",
    "PCCResult",
    "PLAResult",
    "SpectralDPP",
    "cluster_relationships",
    "coassociation",
    "dpp_consensus",
    "ensemble_confidence",
    "ensemble_pairs",
    "ensemble_support",
    "generate_ensemble",
    "incidence_spectrum",
    "matched_partitions",
    "pairs_from_sparse",
    "partition_sizes",
    "pcc",
    "pcc_consensus",
    "pla",
    "pla_em",
    "pla_extend",
    "plan_consensus",
    "predict_ensemble_labels",
    "resample_partitions",
    "sample_pairs",
    "select_k",
    "spectral_consensus",
    "summarize_consensus",
]
