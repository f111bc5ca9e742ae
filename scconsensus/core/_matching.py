"""Matching partitions to K.

PCC and PLA model every partition as a draw of the same ``K`` soft clusters, so
partitions much coarser than ``K`` (merges) or much finer (splits) contradict the model
and pull the fit towards spreading each group over several clusters.
:func:`matched_partitions` keeps those whose number of clusters lies near ``K``.
"""

from __future__ import annotations

import numpy as np

__all__ = ["matched_partitions"]


def matched_partitions(
    sizes: np.ndarray, n_clusters: int, *, min_partitions: int = 5
) -> np.ndarray:
    """Indices of the partitions whose number of clusters is near ``n_clusters``.

    Keeps ``K / 1.25 <= k_l <= 1.25 K``. When that leaves fewer than
    ``min_partitions``, no resolution of the ensemble is near ``K`` (e.g. ``K`` given
    as a maximum above every partition's ``k``, the use of Lourenço et al. 2015,
    Sect. 7.1): the same window is then taken around the resolution nearest to ``K``
    (on a log scale), widened to the next-nearest partitions until it holds at least
    ``min_partitions`` and a tenth of the ensemble, so that a handful of partitions
    never stands for the whole.

    Parameters
    ----------
    sizes
        Clusters found per partition (:func:`partition_sizes`).
    n_clusters
        The consensus ``K``.
    min_partitions
        Fewest partitions to keep.

    Returns
    -------
    numpy.ndarray
        Sorted partition (column) indices.

    Examples
    --------
    >>> import numpy as np
    >>> from scconsensus.core import matched_partitions
    >>> matched_partitions(np.array([2, 3, 4, 8, 9, 10, 12]), 9, min_partitions=2).tolist()
    [3, 4, 5]
    >>> matched_partitions(np.array([4, 4, 4, 4, 4, 4, 3]), 8).tolist()
    [0, 1, 2, 3, 4, 5]
    """
    sizes = np.asarray(sizes)
    K = int(n_clusters)
    keep = _window(sizes, K)
    if keep.size >= min(min_partitions, sizes.size):
        return keep
    # resolution is a scale: 3 vs 4 clusters differ as 15 vs 20 do
    distance = np.abs(np.log(np.maximum(sizes, 1) / K))
    nearest = int(sizes[np.argmin(distance)])
    keep = _window(sizes, nearest)
    need = min(sizes.size, max(min_partitions, int(np.ceil(0.1 * sizes.size))))
    if keep.size < need:
        order = np.argsort(distance, kind="stable")
        keep = np.union1d(keep, order[:need])
    return np.sort(keep)


def _window(sizes: np.ndarray, K: int) -> np.ndarray:
    """Partitions with ``K / 1.25 <= k <= 1.25 K``."""
    return np.flatnonzero((sizes * 1.25 >= K) & (sizes <= K * 1.25))
