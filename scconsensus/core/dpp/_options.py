"""The option records of :func:`~scconsensus.core.dpp.dpp_consensus`.

Each groups the options of one stage of the method, so that its parameter list is written
once: here, with the defaults; ``tl.dpp`` takes the same options as flat keywords
(scanpy's style) and builds these records from them.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..._docs import doc_params
from ._doc import DPP_PARAMS

__all__ = ["REFERENCE_SIZE", "DPPCut", "DPPRoute", "DPPSampling"]

#: Default ``reference_size``: the DPP draws as many generators as the paper's kernel
#: would on this many items (see :mod:`scconsensus.core.dpp._api`).
REFERENCE_SIZE = 200


@doc_params(**DPP_PARAMS)
@dataclass(frozen=True)
class DPPSampling:
    """How each run draws its generators (checked by :func:`dpp_consensus`).

    Attributes
    ----------
    {dpp_sampling}
    """

    sampler: str = "dpp"
    k_max: int | None = None
    reference_size: int | None = REFERENCE_SIZE
    expected_size: float | None = None


@doc_params(**DPP_PARAMS)
@dataclass(frozen=True)
class DPPCut:
    """Where the runs' consensus is cut (checked by :func:`dpp_consensus`).

    Attributes
    ----------
    {dpp_cut}
    """

    a: float = 0.5
    tau: float = 0.6
    s: float = 1.0
    n_thresholds: int | None = None


@doc_params(**DPP_PARAMS)
@dataclass(frozen=True)
class DPPRoute:
    """The exact or the large-n route (checked by :func:`dpp_consensus`).

    Attributes
    ----------
    {dpp_route}
    """

    mode: str = "auto"
    n_components: int | None = None
    n_neighbors: int = 15
    n_random: int = 10
