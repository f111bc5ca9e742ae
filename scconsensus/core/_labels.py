"""Hard labels in one canonical numbering, shared by consensus-k and DPP consensus."""

from __future__ import annotations

import numpy as np

__all__ = ["relabel_by_size"]


def relabel_by_size(labels: np.ndarray) -> np.ndarray:
    """Labels renumbered ``0..K-1`` by decreasing cluster size (ties: first appearance).

    Parameters
    ----------
    labels
        ``(n,)`` labels of any sortable type.

    Returns
    -------
    ``(n,)`` int32 labels; 0 is the largest cluster.

    Examples
    --------
    >>> from scconsensus.core._labels import relabel_by_size
    >>> relabel_by_size(["b", "a", "a", "c"]).tolist()
    [1, 0, 0, 2]
    """
    uniq, first, codes, sizes = np.unique(
        labels, return_index=True, return_inverse=True, return_counts=True
    )
    order = np.lexsort((first, -sizes))
    rank = np.empty(uniq.size, dtype=np.int64)
    rank[order] = np.arange(uniq.size)
    return rank[codes.ravel()].astype(np.int32)
