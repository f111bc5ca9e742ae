"""Determinantal consensus clustering (Vicente & Murua 2021), exact and scalable.

- :mod:`._kernel`: RBF kernel with the mean-squared-distance bandwidth (eqs. 8–9),
  Nyström features for large n.
- :mod:`._samplers`: exact spectral DPP sampler, low-rank dual sampler, uniform baseline.
- :mod:`._consensus`: Voronoi runs, thresholds, components, merging, KVI/SR, memberships.
- :mod:`._sparse`: the large-n route (consensus on sampled pairs).
- :func:`dpp_consensus`: everything end to end, its options grouped in
  :class:`DPPSampling`, :class:`DPPCut` and :class:`DPPRoute` (:mod:`._options`).
"""

from ._api import DPPConsensus, dpp_consensus
from ._consensus import (
    candidate_thresholds,
    consensus_membership,
    maximum_spanning_forest,
    merge_small_components,
    threshold_partitions,
    validity_indices,
    voronoi_labels,
)
from ._doc import DPP_PARAMS
from ._kernel import nystrom_features, rbf_bandwidth, rbf_kernel
from ._options import REFERENCE_SIZE, DPPCut, DPPRoute, DPPSampling
from ._samplers import SpectralDPP, sample_projection_dpp, sample_uniform
from ._sparse import sparse_consensus

__all__ = [
    "DPP_PARAMS",
    "REFERENCE_SIZE",
    "DPPConsensus",
    "DPPCut",
    "DPPRoute",
    "DPPSampling",
    "SpectralDPP",
    "candidate_thresholds",
    "consensus_membership",
    "dpp_consensus",
    "maximum_spanning_forest",
    "merge_small_components",
    "nystrom_features",
    "rbf_bandwidth",
    "rbf_kernel",
    "sample_projection_dpp",
    "sample_uniform",
    "sparse_consensus",
    "threshold_partitions",
    "validity_indices",
    "voronoi_labels",
]
