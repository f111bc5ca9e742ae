"""The resampling options of :func:`~scconsensus.core.consensus_k.consensus_k`, as one record.

Written once here with their defaults; ``tl.consensus_k`` takes the same options as flat
keywords (scanpy's style) and builds the record from them.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..._docs import doc_params

__all__ = ["Resampling"]


@doc_params()
@dataclass(frozen=True)
class Resampling:
    """How every subsample is drawn and clustered (ConsensusClusterPlus's protocol).

    Checked by :func:`~scconsensus.core.consensus_k.resample_partitions`.

    Attributes
    ----------
    {consensus_k_sampling}
    """

    p_item: float = 0.8
    p_feature: float = 1.0
    method: str = "hc"
    distance: str = "pearson"
    linkage: str = "average"
