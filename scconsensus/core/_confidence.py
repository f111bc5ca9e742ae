"""Per-item confidence from the ensemble's own evidence.

A consensus model's memberships answer "how much does item ``i`` belong to each
cluster under the model"; fitted to many partitions they often come out nearly
hard (PCC and PLA put each item at a vertex of the simplex wherever one cluster
explains its co-clustering best), so their largest entry says little about which
items are uncertain. The ensemble itself does: an item whose co-members in the
partitions are spread over several consensus clusters is one the partitions do
not agree on.

:func:`ensemble_support` is that evidence as a soft membership: ``S[i, c]`` is the
probability that a co-member of ``i`` (an item in ``i``'s cluster of a random
partition that sampled ``i``) carries the consensus label ``c``. Only partitions
with at least as many clusters as the consensus are used: a coarser partition
merges consensus clusters by construction and would lower every item's support
alike. :func:`ensemble_confidence` combines ``S[i, label_i]`` with the share of
``i``'s consensus cluster that the partitions put with ``i``; on the accuracy panel
it ranks the misassigned items far better than the model's largest membership
(``benchmarks/README.md``). It is a score for ranking the items of one result, not a
probability: partitions finer than the consensus lower it for every item alike, so its
level depends on the ensemble's range of ``k``. :func:`transferred_confidence` is the
same for items outside the ensemble, counted against its items.
"""

from __future__ import annotations

import numba
import numpy as np

from .._validation import check_labels
from ._labels import compact_labels

__all__ = ["ensemble_confidence", "ensemble_support", "transferred_confidence"]

#: Entries of the per-block count table: the partitions of a block are counted in one
#: pass over the items, as many as fit in 64 MiB (all of them for most ensembles).
_TABLE_ENTRIES = 2**23


def ensemble_support(ensemble: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Share of each item's co-members in the partitions that carry each consensus label.

    Parameters
    ----------
    ensemble
        ``(n_items, n_partitions)`` ensemble labels, ``-1`` where a partition did not
        sample the item.
    labels
        ``(n_items,)`` consensus labels ``0..k-1``, ``-1`` for none (such items are
        counted as co-members of nobody).

    Returns
    -------
    numpy.ndarray
        ``(n_items, k)``: rows sum to one for items some used partition sampled with a
        labelled co-member; zero rows otherwise. Uses the partitions with at least
        ``k`` clusters (all of them when none has that many).

    Examples
    --------
    >>> import numpy as np
    >>> from scconsensus.core import ensemble_support
    >>> ens = np.array([[0, 0], [0, 0], [0, 1], [1, 1], [1, 1]])
    >>> ensemble_support(ens, np.array([0, 0, 0, 1, 1])).round(2).tolist()
    [[1.0, 0.0], [1.0, 0.0], [0.67, 0.33], [0.17, 0.83], [0.17, 0.83]]
    """
    ensemble = check_labels(ensemble)
    support, _ = _shares(ensemble, _consensus_labels(labels, ensemble.shape[0]), own=False)
    return support


def ensemble_confidence(ensemble: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """How well the item's clusters in the ensemble coincide with its consensus cluster.

    The mean of two shares, each averaged over the partitions that sampled the item:
    the share of its co-members that carry its label (:func:`ensemble_support`,
    partitions of at least ``k`` clusters) and the share of its consensus cluster that
    it is co-clustered with (all partitions, as the co-association of the item with its
    cluster); the item itself counts in both, as a co-member and in its cluster. The
    first is low where finer partitions mix the item with another cluster, the second
    where the partitions often split it off its own; on the
    accuracy panel their mean ranks misassigned items better than either alone, and
    better than the largest membership.

    It is a score that ranks the items of one result, not a probability: 1 only where
    every partition puts the item with all of its consensus cluster (and those of at
    least ``k`` clusters with no other item). Its level
    depends on the ensemble's range of ``k``: partitions finer than the consensus split
    its clusters and lower the second share of every item alike (three separated blobs
    of 300 items get 0.73-0.79 everywhere from the default ensemble, ``k`` from 2 to
    ``sqrt(n)``, and 1.0 from partitions of ``k = 3`` only).

    Parameters
    ----------
    ensemble
        ``(n_items, n_partitions)`` ensemble labels, ``-1`` = not sampled.
    labels
        ``(n_items,)`` consensus labels ``0..k-1``, ``-1`` for none.

    Returns
    -------
    numpy.ndarray
        ``(n_items,)`` in ``[0, 1]``; NaN for unlabelled items.

    Examples
    --------
    >>> import numpy as np
    >>> from scconsensus.core import ensemble_confidence
    >>> ens = np.array([[0, 0], [0, 0], [0, 1], [1, 1], [1, 1]])
    >>> ensemble_confidence(ens, np.array([0, 0, 0, 1, 1])).round(2).tolist()
    [0.92, 0.92, 0.67, 0.92, 0.92]
    """
    ensemble = check_labels(ensemble)
    labels = _consensus_labels(labels, ensemble.shape[0])
    support, recall = _shares(ensemble, labels)
    precision = support[:, 0]
    return np.where(labels >= 0, 0.5 * (precision + recall), np.nan)


def transferred_confidence(
    ensemble: np.ndarray, labels: np.ndarray, new_ensemble: np.ndarray, new_labels: np.ndarray
) -> np.ndarray:
    """:func:`ensemble_confidence` of items outside the ensemble, against its items.

    For items assigned to a consensus after it was fitted (e.g. cells transferred onto a
    reference): their labels in the ensemble's partitions (``new_ensemble``, e.g.
    predicted by :func:`~scconsensus.core.pla.predict_ensemble_labels`) place them in
    the partitions' clusters; the two shares are those of the ensemble's items in those
    clusters (the new items are co-members of none, so each item's value does not depend
    on the others transferred with it). ``k`` is that of ``labels``; a partition that
    sampled none of a new item's cluster is left out of its second share (it holds no
    evidence), and a new item labelled with a cluster no item of the ensemble carries
    gets 0.

    Parameters
    ----------
    ensemble
        ``(n_items, n_partitions)`` labels of the ensemble's items, ``-1`` = not sampled.
    labels
        ``(n_items,)`` their consensus labels ``0..k-1``, ``-1`` for none.
    new_ensemble
        ``(n_new, n_partitions)`` labels of the new items in the same partitions.
    new_labels
        ``(n_new,)`` their consensus labels, ``-1`` for none.

    Returns
    -------
    numpy.ndarray
        ``(n_new,)`` in ``[0, 1]``; NaN for unlabelled items.

    Examples
    --------
    >>> import numpy as np
    >>> from scconsensus.core import transferred_confidence
    >>> ens = np.array([[0, 0], [0, 0], [0, 1], [1, 1], [1, 1]])
    >>> new = np.array([[0, 0], [1, 1]])
    >>> transferred_confidence(ens, [0, 0, 0, 1, 1], new, [0, 1]).round(2).tolist()
    [0.92, 0.92]
    """
    ensemble = check_labels(ensemble)
    new_ensemble = np.asarray(new_ensemble)
    if new_ensemble.ndim != 2 or new_ensemble.shape[1] != ensemble.shape[1]:
        raise ValueError(
            f"new_ensemble must be (n_new, {ensemble.shape[1]}), the new items' labels in "
            f"the ensemble's partitions; got shape {new_ensemble.shape}."
        )
    # checked below the ensemble's rows: one new item is as valid as many
    new_ensemble = check_labels(np.vstack([ensemble, new_ensemble]), "new_ensemble")
    new_ensemble = new_ensemble[ensemble.shape[0] :]
    labels = _consensus_labels(labels, ensemble.shape[0])
    new_labels = _consensus_labels(new_labels, new_ensemble.shape[0])
    support, recall = _shares(ensemble, labels, query=(new_ensemble, new_labels))
    return np.where(new_labels >= 0, 0.5 * (support[:, 0] + recall), np.nan)


def _consensus_labels(labels: np.ndarray, n_items: int) -> np.ndarray:
    """``labels`` as int64, one per item of the ensemble.

    The kernels below index the per-item sums by the ensemble's rows: labels of another
    length would read and write past the arrays' ends instead of failing.
    """
    labels = np.asarray(labels)
    if labels.ndim != 1 or labels.shape[0] != n_items:
        raise ValueError(
            f"labels must hold one consensus label per item of the ensemble ({n_items}), "
            f"got shape {labels.shape}. Pass the labels of the same items, in the same "
            "order, as a 1-D array (e.g. adata.obs[key].cat.codes.to_numpy())."
        )
    return labels.astype(np.int64)


def _shares(
    ensemble: np.ndarray, labels: np.ndarray, *, own: bool = True, query=None
) -> tuple[np.ndarray, np.ndarray]:
    """``(support, recall)`` in one pass over the partitions.

    ``support``: :func:`ensemble_support`, or with ``own`` only its column of each item's
    own label, ``(n_items, 1)`` (the confidence needs no more; the whole matrix costs
    ``k`` times as much). ``recall``: per item, the mean share of its consensus cluster
    (as the partition sampled it) in its cluster of the partition, over every partition.
    ``query``: ``(ensemble, labels)`` of other items, whose shares are returned instead,
    counted among the items of ``ensemble`` (:func:`transferred_confidence`).
    """
    k = int(labels.max()) + 1 if (labels >= 0).any() else 1
    n_ref = labels.size
    if query is None:
        ensemble = items = compact_labels(ensemble)
        item_labels, sizes = labels, ensemble.max(axis=0).astype(np.int64) + 1
    else:
        # one numbering for both, so that an id means the same cluster in each
        both = compact_labels(np.vstack([ensemble, query[0]]))
        ensemble, items, item_labels = both[:n_ref], both[n_ref:], query[1]
        sizes = np.array([np.unique(col[col >= 0]).size for col in ensemble.T], dtype=np.int64)
    fine = sizes >= k if (sizes >= k).any() else np.ones(sizes.size, dtype=bool)
    # the count tables hold every id and every label (a query label no item carries
    # counts nobody): they index by both
    m = sizes if query is None else np.vstack([ensemble, items]).max(axis=0) + 1
    m = np.maximum(m.astype(np.int64), 1)
    width_k = max(k, int(item_labels.max(initial=-1)) + 1)
    n = item_labels.size
    support, seen = np.zeros((n, 1 if own else width_k)), np.zeros(n)
    recall, counted = np.zeros(n), np.zeros(n)
    # blocks of partitions bound the (partitions, clusters, k) tables; the sums run over
    # the partitions in order, so every item's total is the same whatever the block
    step = max(1, min(sizes.size, _TABLE_ENTRIES // (int(m.max()) * width_k)))
    for lo in range(0, sizes.size, step):
        block = slice(lo, lo + step)
        counts = _block_counts(ensemble, labels, lo, int(m[block].max()), width_k, m[block].size)
        _accumulate(items, item_labels, lo, counts, fine[block], support, seen, recall, counted)
    support = np.divide(support, seen[:, None], out=support, where=seen[:, None] > 0)
    return support, np.divide(recall, counted, out=np.zeros(n), where=counted > 0)


@numba.njit(cache=True)
def _block_counts(ensemble, labels, lo, m, k, width):  # pragma: no cover - compiled
    """``counts[p, a, c]``: items of consensus label ``c`` in cluster ``a`` of partition ``lo + p``.

    One pass over the row-major ensemble (a column at a time strides over every row).
    """
    counts = np.zeros((width, m, k), dtype=np.int64)
    for i in range(ensemble.shape[0]):
        c = labels[i]
        if c < 0:
            continue
        for p in range(width):
            a = ensemble[i, lo + p]
            if a >= 0:
                counts[p, a, c] += 1
    return counts


@numba.njit(cache=True)
def _accumulate(
    ensemble, labels, lo, counts, fine, support, seen, recall, counted
):  # pragma: no cover - compiled
    """Add the block's shares to every item's sums (see :func:`_shares`)."""
    width, m, k = counts.shape
    total = np.zeros((width, m), dtype=np.int64)
    size = np.zeros((width, k), dtype=np.int64)
    for p in range(width):
        for a in range(m):
            for c in range(k):
                total[p, a] += counts[p, a, c]
                size[p, c] += counts[p, a, c]
    whole = support.shape[1] > 1
    for i in range(ensemble.shape[0]):
        c = labels[i]
        mine = max(c, 0)
        for p in range(width):
            a = ensemble[i, lo + p]
            if a < 0:
                continue
            if fine[p] and total[p, a] > 0:
                if whole:
                    for d in range(k):
                        support[i, d] += counts[p, a, d] / total[p, a]
                else:
                    support[i, 0] += counts[p, a, mine] / total[p, a]
                seen[i] += 1.0
            # an item of the ensemble is in its own cluster (size > 0); for a query item a
            # partition that sampled none of its cluster holds no evidence either way and
            # is not counted (a label no item carries anywhere ends with a share of 0)
            if c >= 0 and size[p, c] > 0:
                recall[i] += counts[p, a, c] / size[p, c]
                counted[i] += 1.0
