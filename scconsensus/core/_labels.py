"""Label renumberings: one canonical numbering of hard labels (consensus-k, DPP consensus)
and compact per-partition numbering of ensembles (co-association, spectral consensus)."""

from __future__ import annotations

import numpy as np

__all__ = ["compact_labels", "relabel_by_size"]


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


def compact_labels(labels: np.ndarray) -> np.ndarray:
    """Each partition's labels renumbered ``0..k-1`` in increasing order, ``-1`` kept.

    Tables indexed by label value (one-hot columns, cluster sums) then grow with the
    number of clusters, not with the largest label: labels such as ``10**9`` (e.g. ids
    from another tool) would otherwise ask for a billion columns.

    Parameters
    ----------
    labels
        ``(n_items, n_partitions)`` checked int32 labels, ``-1`` for unsampled items.

    Returns
    -------
    ``labels`` itself when every partition is already numbered ``0..k-1``, else a copy.

    Examples
    --------
    >>> import numpy as np
    >>> from scconsensus.core._labels import compact_labels
    >>> compact_labels(np.array([[70, 0], [-1, 2], [5, 2]], dtype=np.int32)).tolist()
    [[1, 0], [-1, 1], [0, 1]]
    """
    n, n_partitions = labels.shape
    top = labels.max(axis=0).astype(np.int64).clip(min=-1) + 1  # 2**31 - 1 + 1 wraps in int32
    out = labels
    for r in range(n_partitions):
        col = labels[:, r]
        seen = col >= 0
        if top[r] <= n:
            # O(n) without a sort: the ids in use, renumbered by their rank
            present = np.zeros(top[r], dtype=bool)
            present[col[seen]] = True
            if present.all():
                continue
            codes = (np.cumsum(present) - 1)[col[seen]]
        else:
            codes = np.unique(col[seen], return_inverse=True)[1]
        if out is labels:
            out = labels.copy()
        out[seen, r] = codes
    return out
