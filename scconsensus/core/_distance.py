"""Item distances for hierarchical clustering, shared by the ensemble and consensus-k.

One definition, so consensus-k's tree per subsample (Monti et al. 2003's protocol as in
ConsensusClusterPlus) cuts the same partitions that :func:`~scconsensus.core.ensemble.
generate_ensemble`'s ``"hc"`` method gives for the same seed and ``k``.
"""

from __future__ import annotations

import numpy as np

__all__ = ["condensed_distance", "distance_input"]


def distance_input(X: np.ndarray, distance: str) -> tuple[np.ndarray, str]:
    """Rows transformed so that a scipy metric gives the requested distance.

    Parameters
    ----------
    X
        ``(n_items, n_features)`` dense data.
    distance
        ``"pearson"`` and ``"spearman"`` (``1 - r`` between items, on ranks for
        Spearman) or any :func:`scipy.spatial.distance.pdist` metric name.

    Returns
    -------
    ``(rows, metric)`` for :func:`~scipy.spatial.distance.pdist`.
    """
    if distance == "pearson":
        return X, "correlation"
    if distance == "spearman":
        from scipy.stats import rankdata

        return rankdata(X, axis=1), "correlation"
    return X, distance


def condensed_distance(X: np.ndarray, distance: str) -> np.ndarray:
    """Condensed item distances (:func:`~scipy.spatial.distance.pdist`'s layout).

    Constant rows have no correlation: they are taken as maximally distant (2 for
    correlation distances, the largest distance otherwise) instead of NaN.

    Parameters
    ----------
    X
        ``(n_items, n_features)`` dense data.
    distance
        As in :func:`distance_input`.

    Returns
    -------
    ``(n_items * (n_items - 1) / 2,)`` float64 distances.
    """
    from scipy.spatial.distance import pdist

    Xd, metric = distance_input(X, distance)
    d = pdist(Xd, metric=metric)
    np.nan_to_num(d, copy=False, nan=2.0 if metric == "correlation" else np.nanmax(d))
    return d
