"""Starting memberships for PCC drawn from the ensemble itself."""

from __future__ import annotations

import numpy as np

from ..._validation import check_labels
from .._spectral import partition_sizes


def ensemble_init(labels: np.ndarray, n_clusters: int, smoothing: float = 0.1) -> np.ndarray:
    """Smoothed one-hot memberships of the ensemble partition closest to ``n_clusters``.

    The partition whose number of clusters is closest to ``K = n_clusters``
    (the first on ties) gives each sampled item the vertex of its cluster
    (clusters ranked by size; those beyond ``K`` fall back to uniform rows);
    unsampled items start uniform. Rows are then mixed
    ``(1 - smoothing) * one_hot + smoothing / K``: exact vertices put
    ``y_i . y_j = 0`` on co-clustered pairs of other clusters (an infinite KL
    gradient), and exactly uniform rows are a stationary point of the
    objective.

    Parameters
    ----------
    labels
        ``(n_items, n_partitions)`` ensemble labels, ``-1`` where unsampled.
    n_clusters
        Number of columns ``K``.
    smoothing
        Weight of the uniform distribution, in ``(0, 1]``.

    Returns
    -------
    ``(n_items, K)`` rows on the simplex.

    Examples
    --------
    >>> import numpy as np
    >>> from scconsensus.core.pcc import ensemble_init
    >>> labels = np.array([[0, 0], [0, 1], [1, 2], [1, -1]])
    >>> ensemble_init(labels, 2).round(2)[0]
    array([0.95, 0.05])
    """
    labels = check_labels(labels)
    K = int(n_clusters)
    if K < 1:
        raise ValueError(f"n_clusters must be a positive integer, got {n_clusters!r}.")
    if not (0 < smoothing <= 1):
        raise ValueError(f"smoothing must be in (0, 1], got {smoothing}.")
    n = labels.shape[0]
    n_found = partition_sizes(labels)
    r = int(np.argmin(np.abs(n_found - K)))
    lab = labels[:, r]
    Y = np.full((n, K), 1.0 / K)
    sampled = lab >= 0
    if sampled.any():
        sizes = np.bincount(lab[sampled])
        rank = np.empty(sizes.size, dtype=np.int64)
        rank[np.argsort(-sizes, kind="stable")] = np.arange(sizes.size)
        col = np.full(n, -1, dtype=np.int64)
        col[sampled] = rank[lab[sampled]]
        hit = np.flatnonzero((col >= 0) & (col < K))
        Y[hit] = smoothing / K
        Y[hit, col[hit]] += 1.0 - smoothing
    return Y
