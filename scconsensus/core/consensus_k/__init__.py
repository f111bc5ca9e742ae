"""Choosing ``k`` from resampling: Monti et al.'s consensus statistics, in Python.

For every ``k = 2..K_max`` an ensemble of ``reps`` partitions of item subsamples (all with
``k`` clusters) gives a consensus matrix ``M_k = C_k / N`` (co-clustered over co-sampled
counts). From ``M_k`` follow the statistics ConsensusClusterPlus (Wilkerson & Hayes 2010)
reports, computed here exactly as it does:

- consensus CDF: the empirical CDF of the lower-triangle entries of ``M_k`` on a grid of
  ``n_bins`` bins (R's ``hist`` with right-closed bins and its ``1e-7`` bin fuzz);
- area under the CDF (right Riemann sum on that grid) and delta area (``A_2``, then the
  relative change ``(A_k - A_{k-1}) / A_{k-1}``);
- PAC, the proportion of ambiguous clustering ``F(0.9) - F(0.1)`` (Senbabaoglu et al. 2014);
- the final clustering for ``k``: average-linkage hierarchical clustering of ``1 - M_k``
  cut into ``k`` clusters;
- item consensus (mean of ``M_k`` between an item and the other members of a cluster) and
  cluster consensus (mean of ``M_k`` over pairs inside a cluster), as ``calcICL``.

For hierarchical clustering the protocol is ConsensusClusterPlus's: one tree per subsample,
cut at every ``k``; the distance matrix is computed once when all features are used. Other
methods of :func:`scconsensus.core.ensemble.generate_ensemble` run one ensemble per ``k`` on
the same item subsamples (the same seeds).

:func:`summarize_consensus` takes consensus matrices from anywhere (ConsensusClusterPlus's
included) so both sources share one definition of every statistic and one ``.uns`` layout
(:meth:`ConsensusK.to_uns`).

Modules, one job each: ``_result`` (:class:`ConsensusK` and its ``.uns`` record),
``_statistics`` (the statistics of given consensus matrices), ``_options``
(:class:`Resampling`, the resampling options as one record) and ``_engine`` (resampling
and :func:`consensus_k` end to end).
"""

from ._engine import FIXED_K_METHODS, check_consensus_k, consensus_k, resample_partitions
from ._options import Resampling
from ._result import ConsensusK, lowest_pac, warn_pac_ties
from ._statistics import (
    cdf_area,
    cluster_consensus,
    consensus_cdf,
    consensus_labels,
    delta_area,
    item_consensus,
    pac,
    summarize_consensus,
)

__all__ = [
    "FIXED_K_METHODS",
    "ConsensusK",
    "Resampling",
    "cdf_area",
    "check_consensus_k",
    "cluster_consensus",
    "consensus_cdf",
    "consensus_k",
    "consensus_labels",
    "delta_area",
    "item_consensus",
    "lowest_pac",
    "pac",
    "resample_partitions",
    "summarize_consensus",
    "warn_pac_ties",
]
