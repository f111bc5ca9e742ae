"""The result of consensus-k and its ``.uns`` record, shared with ConsensusClusterPlus."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..._warnings import warn

__all__ = ["ConsensusK", "lowest_pac", "warn_pac_ties"]

#: PAC values this close to the lowest are a tie (PAC is a share of pairs: exact zeros
#: are common on clear groups, at several k when they nest).
PAC_TIE = 1e-12


def lowest_pac(ks, pac) -> tuple[int, np.ndarray]:
    """``(best_k, tied)``: the smallest ``k`` of lowest PAC, and every ``k`` tied with it.

    Examples
    --------
    >>> from scconsensus.core.consensus_k import lowest_pac
    >>> best, tied = lowest_pac([2, 3, 4, 5], [0.0, 0.0, 0.2, 0.0])
    >>> best, tied.tolist()
    (2, [2, 3, 5])
    """
    ks, pac = np.asarray(ks, dtype=np.int64), np.asarray(pac, dtype=np.float64)
    tied = ks[pac <= np.nanmin(pac) + PAC_TIE]
    return int(tied[0]), tied


def warn_pac_ties(tied: np.ndarray, lowest: float, key: str) -> None:
    """Say that several ``k`` share the lowest PAC and ``best_k`` is only the smallest (a
    user trial read "lowest PAC at k = 2" where PAC was 0 at k = 2, 3, 6, 7 and 8)."""
    if len(tied) < 2:
        return
    ks = ", ".join(str(int(k)) for k in tied)
    warn(
        f"PAC ties at its lowest ({lowest:.3g}) for k = {ks}: best_k = {int(tied[0])} is only "
        f"the smallest of them (.uns[{key!r}]['best_k_ties'] lists all). Clusterings as stable "
        "at several k often nest (groups of groups); compare them, e.g. with "
        "pl.consensus_cdf, or choose k with tl.pcc's evidence (pl.k_selection).",
        UserWarning,
    )


@dataclass
class ConsensusK:
    """Consensus statistics for ``k = 2..K_max``.

    Attributes
    ----------
    ks
        The ``k`` values, ascending.
    labels
        ``{k: (n,) int labels 0..k-1}``: hierarchical clustering of ``1 - M_k``, clusters
        numbered by decreasing size.
    cdf_x
        ``(n_bins,)`` right edges of the CDF grid (``0.01 .. 1`` for 100 bins).
    cdf
        ``(len(ks), n_bins)`` consensus CDF of each ``k`` at ``cdf_x``.
    area, delta_area, pac
        ``(len(ks),)`` area under the CDF, its relative change (CCP's delta area; the
        first entry is the area itself), and the proportion of ambiguous clustering.
    item_consensus
        ``{k: (n, k)}`` mean consensus of each item with the members of each cluster.
    cluster_consensus
        Long table with columns ``k``, ``cluster``, ``cluster_consensus``, ``size``.
    consensus
        ``{k: (n, n) M_k}`` when kept, else empty.
    partitions
        ``{k: (n, reps) int32}`` the resampled partitions when kept, else empty.
    params
        Parameters of the computation.
    """

    ks: np.ndarray
    labels: dict[int, np.ndarray]
    cdf_x: np.ndarray
    cdf: np.ndarray
    area: np.ndarray
    delta_area: np.ndarray
    pac: np.ndarray
    item_consensus: dict[int, np.ndarray]
    cluster_consensus: pd.DataFrame
    consensus: dict[int, np.ndarray] = field(default_factory=dict)
    partitions: dict[int, np.ndarray] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def best_k(self) -> int:
        """The ``k`` with the lowest PAC (ties: the smallest ``k``; :attr:`pac_ties`)."""
        return lowest_pac(self.ks, self.pac)[0]

    @property
    def pac_ties(self) -> np.ndarray:
        """Every ``k`` whose PAC ties with the lowest (``best_k`` is the first)."""
        return lowest_pac(self.ks, self.pac)[1]

    def filled_item_consensus(self, k: int) -> np.ndarray:
        """``item_consensus[k]`` with an item alone in its cluster at 1 there (NaN in
        ConsensusClusterPlus's ``calcICL``: no pair to average; the only NaN entries)."""
        ic = np.array(self.item_consensus[int(k)], dtype=np.float64)
        return np.where(np.isnan(ic), 1.0, ic)

    def membership(self, k: int) -> np.ndarray:
        """``(n, k)`` item consensus rescaled to rows on the simplex.

        An item alone in its cluster has no within-cluster pair; its own-cluster
        entry is taken as 1 (ConsensusClusterPlus reports NaN there).
        """
        ic = self.filled_item_consensus(k)
        total = ic.sum(axis=1, keepdims=True)
        k_ = ic.shape[1]
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(total > 0, ic / np.where(total > 0, total, 1.0), 1.0 / k_)

    def summary(self) -> pd.DataFrame:
        """One row per ``k``: area, delta area, PAC and the smallest cluster consensus."""
        cc = self.cluster_consensus.groupby("k")["cluster_consensus"]
        return pd.DataFrame(
            {
                "area": self.area,
                "delta_area": self.delta_area,
                "pac": self.pac,
                "min_cluster_consensus": cc.min().reindex(self.ks).to_numpy(),
                "mean_cluster_consensus": cc.mean().reindex(self.ks).to_numpy(),
            },
            index=pd.Index(self.ks, name="k"),
        )

    def to_uns(self) -> dict[str, Any]:
        """The summary part of the shared ``.uns[key]`` record.

        Same keys and shapes as :func:`scconsensus.r.consensus_cluster_plus` writes:
        ``k``, ``cdf`` (``len(k) x n_bins``), ``cdf_x``, ``area``, ``delta_area``, ``pac``,
        ``pac_window`` and ``cluster_consensus`` (columns ``k``, ``cluster``,
        ``cluster_consensus``, plus ``size``); ``best_k`` (lowest PAC) and ``best_k_ties``
        (every ``k`` tied with it) are extra.
        """
        return {
            "k": np.asarray(self.ks, dtype=np.int64),
            "cdf": np.asarray(self.cdf, dtype=np.float64),
            "cdf_x": np.asarray(self.cdf_x, dtype=np.float64),
            "area": np.asarray(self.area, dtype=np.float64),
            "delta_area": np.asarray(self.delta_area, dtype=np.float64),
            "pac": np.asarray(self.pac, dtype=np.float64),
            "pac_window": [float(v) for v in self.params.get("pac_window", (0.1, 0.9))],
            "cluster_consensus": self.cluster_consensus.reset_index(drop=True),
            "best_k": self.best_k,
            "best_k_ties": self.pac_ties,
        }
