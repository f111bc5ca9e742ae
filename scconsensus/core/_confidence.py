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
(``benchmarks/README.md``).
"""

from __future__ import annotations

import numpy as np

from .._validation import check_labels
from ._labels import columns, compact_labels

__all__ = ["ensemble_confidence", "ensemble_support"]


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
    >>> ens = np.array([[0, 0], [0, 0], [0, 1], [1, 1], [1, 1]])
    >>> ensemble_support(ens, np.array([0, 0, 0, 1, 1])).round(2).tolist()
    [[1.0, 0.0], [1.0, 0.0], [0.67, 0.33], [0.17, 0.83], [0.17, 0.83]]
    """
    support, _ = _shares(check_labels(ensemble), np.asarray(labels, dtype=np.int64), own=False)
    return support


def ensemble_confidence(ensemble: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """How well the item's clusters in the ensemble coincide with its consensus cluster.

    The mean of two shares, each averaged over the partitions that sampled the item:
    the share of its co-members that carry its label (:func:`ensemble_support`,
    partitions of at least ``k`` clusters) and the share of its consensus cluster that
    it is co-clustered with (all partitions, as the co-association of the item with its
    cluster). The first is low where finer partitions mix the item with another
    cluster, the second where the partitions often split it off its own; on the
    accuracy panel their mean ranks misassigned items better than either alone, and
    better than the largest membership.

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
    >>> ens = np.array([[0, 0], [0, 0], [0, 1], [1, 1], [1, 1]])
    >>> ensemble_confidence(ens, np.array([0, 0, 0, 1, 1])).round(2).tolist()
    [0.92, 0.92, 0.67, 0.92, 0.92]
    """
    labels = np.asarray(labels, dtype=np.int64)
    support, recall = _shares(check_labels(ensemble), labels)
    precision = support[:, 0]
    return np.where(labels >= 0, 0.5 * (precision + recall), np.nan)


def _shares(
    ensemble: np.ndarray, labels: np.ndarray, *, own: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """``(support, recall)`` in one pass over the partitions.

    ``support``: :func:`ensemble_support`, or with ``own`` only its column of each item's
    own label, ``(n_items, 1)`` (the confidence needs no more; the whole matrix costs
    ``k`` times as much: 7 s of 10 at 10^6 cells and 20 clusters). ``recall``: per item,
    the mean share of its consensus cluster (as the partition sampled it) in its cluster
    of the partition, over every partition.
    """
    n = labels.size
    k = int(labels.max()) + 1 if (labels >= 0).any() else 1
    ensemble = compact_labels(ensemble)
    sizes = ensemble.max(axis=0).astype(np.int64) + 1  # ids are 0..k_l-1 now
    fine = sizes >= k if (sizes >= k).any() else np.ones(sizes.size, dtype=bool)
    support, seen = np.zeros((n, 1 if own else k)), np.zeros(n)
    recall, counted = np.zeros(n), np.zeros(n)
    mine = np.maximum(labels, 0)
    for ids, m, use in zip(columns(ensemble), sizes, fine, strict=True):
        inside = (ids >= 0) & (labels >= 0)
        counts = np.bincount(ids[inside] * k + labels[inside], minlength=m * k).reshape(m, k)
        if use:
            total = counts.sum(axis=1, keepdims=True)
            share = np.divide(counts, total, out=np.zeros(counts.shape), where=total > 0)
            sampled = ids >= 0
            if own:
                support[sampled, 0] += share[ids[sampled], mine[sampled]]
            else:
                support[sampled] += share[ids[sampled]]
            seen[sampled] += total[ids[sampled], 0] > 0
        sampled_size = counts.sum(axis=0)
        take = inside & (sampled_size[mine] > 0)
        recall[take] += counts[ids[take], mine[take]] / sampled_size[mine[take]]
        counted[take] += 1
    support = np.divide(support, seen[:, None], out=support, where=seen[:, None] > 0)
    return support, np.divide(recall, counted, out=np.zeros(n), where=counted > 0)
