"""Within-cluster pairs drawn from the ensemble itself: a kNN-free pair source for large n.

The sparse co-association needs pairs that carry within-cluster evidence (high
``c_ij / N_ij``) next to random pairs that carry the between-cluster evidence. The
kNN graph of the representation gives the former, but at 10^6 cells its
approximate search (pynndescent) is the slowest and most memory-hungry step of the
sparse route (328 s and a 14 GiB peak here). The ensemble already holds the same
information: a partner drawn from the item's own cluster in a random partition is
a pair that the ensemble co-clustered at least once. Drawing ``m`` of them per item
costs O(n m + R n log n) time and O(n m) memory, and needs no representation.
"""

from __future__ import annotations

import numba
import numpy as np

from .._validation import RandomState, check_int, check_labels, check_rng
from ._labels import compact_labels
from ._pairs import check_pairs

__all__ = ["ensemble_pairs"]

# Redraws of a partition that did not sample the item before falling back to a
# uniformly random partner (with 80 % subsamples, 0.2^4 = 0.16 % of draws fall back).
_REDRAWS = 3


def cluster_partners(
    labels: np.ndarray,
    items: np.ndarray,
    pool: np.ndarray,
    n_per_item: int,
    rng: np.random.Generator,
    numbered: bool | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """``n_per_item`` partners from ``pool`` for every item of ``items``, drawn within clusters.

    Each draw picks a partition that sampled the item (up to ``_REDRAWS`` tries) and a
    uniformly random member of ``pool`` in the item's cluster there; where that fails
    (never sampled, or no pool member in the cluster) the partner is uniform over
    ``pool``. Returns ``(first, second)``: positions in ``items`` and in ``pool``.
    ``numbered`` as :func:`~scconsensus.core._labels.compact_labels` takes it.
    """
    # cluster sizes are counted per label id
    labels = compact_labels(labels, numbered=numbered)
    n_partitions = labels.shape[1]
    r = pool.size
    first = np.repeat(np.arange(items.size, dtype=np.int64), n_per_item)
    part = rng.integers(n_partitions, size=first.size)
    for _ in range(_REDRAWS):
        miss = np.flatnonzero(labels[items[first], part] < 0)
        if miss.size == 0:
            break
        part[miss] = rng.integers(n_partitions, size=miss.size)
    second = rng.integers(r, size=first.size)
    u = rng.random(first.size)
    # a 16-bit key sorts by radix in O(n): 10^7 int64 keys took 2 s at 10^6 items
    key = part.astype(np.uint16) if n_partitions <= np.iinfo(np.uint16).max else part
    by_part = np.argsort(key, kind="stable")
    bounds = np.searchsorted(key[by_part], np.arange(n_partitions + 1))
    for p in range(n_partitions):
        sel = by_part[bounds[p] : bounds[p + 1]]
        if sel.size:
            order, start, size = _pool_clusters(labels[pool, p])
            _draw_in_cluster(labels, p, items, int(n_per_item), sel, u, order, start, size, second)
    return first, second


def finest_partners(
    labels: np.ndarray,
    items: np.ndarray,
    pool: np.ndarray,
    n_per_item: int,
    rng: np.random.Generator,
    numbered: bool | None = None,
) -> np.ndarray:
    """``n_per_item`` partners from ``pool`` for every item of ``items`` (positions in
    ``pool``, item after item), each drawn in a partition chosen in proportion to
    ``1 / |cluster of the item in it|``, then uniformly in that cluster. ``numbered``
    as :func:`~scconsensus.core._labels.compact_labels` takes it.

    Sizes are counted in ``pool``; a partition that did not sample the item, or whose
    cluster has no pool member, has weight 0, and the partners of an item without any
    weight stay uniform over ``pool``. A rare population merged with a large neighbour
    in most partitions has its own small cluster in the few that separate it; uniform
    partitions draw most of its partners from the neighbour, and the extension then
    puts it there.
    """
    labels = compact_labels(labels, numbered=numbered)  # cluster sizes counted per id
    n_per_item = int(n_per_item)
    pick = rng.random(items.size * n_per_item)
    second = rng.integers(pool.size, size=pick.size)
    u = rng.random(pick.size)
    if labels.shape[1] == 0:
        return second
    # one partition's pool order at a time into the table: R x |pool| int64 once
    orders = np.empty((labels.shape[1], pool.size), dtype=np.int64)
    starts, sizes = [], []
    for p, col in enumerate(np.ascontiguousarray(labels[pool].T)):
        orders[p], start, size = _pool_clusters(col)
        starts.append(start)
        sizes.append(size)
    offsets = np.cumsum([0] + [size.size for size in sizes]).astype(np.int64)
    starts, sizes = (np.concatenate(t).astype(np.int64, copy=False) for t in (starts, sizes))
    _draw_finest(labels, items, n_per_item, (offsets, starts, sizes, orders), pick, u, second)
    return second


@numba.njit(cache=True)
def _draw_finest(labels, items, n_per_item, clusters, pick, u, second):
    """For each draw ``t`` of item ``x = t // n_per_item``: the partition where the
    cumulative weight ``sum 1 / size`` first exceeds ``pick[t]`` times the item's total,
    and the pool member of its cluster there at the uniform ``u[t]`` (``second[t]`` kept
    for an item without weight). ``clusters``: per partition, the pool's clusters as
    :func:`_pool_clusters` gives them, concatenated (``offsets`` into ``starts`` and
    ``sizes``; ``orders`` one row per partition)."""
    offsets, starts, sizes, orders = clusters
    n_partitions = offsets.size - 1
    cum = np.empty(n_partitions)
    for x in range(items.size):  # pragma: no cover - compiled
        total = 0.0
        for p in range(n_partitions):
            size = _pool_size(offsets, sizes, p, labels[items[x], p])
            if size > 0:
                total += 1.0 / size
            cum[p] = total
        if not total > 0.0:
            continue
        for t in range(x * n_per_item, (x + 1) * n_per_item):
            # rounding can put pick * total at the total: the last partition then (a
            # weight of 0 there leaves the uniform partner)
            p = min(np.searchsorted(cum, pick[t] * total, side="right"), n_partitions - 1)
            own = labels[items[x], p]
            size = _pool_size(offsets, sizes, p, own)
            if size > 0:
                second[t] = orders[p, starts[offsets[p] + own] + np.int64(u[t] * size)]


@numba.njit(cache=True, inline="always")
def _pool_size(offsets, sizes, p, own):
    """Pool members of cluster ``own`` of partition ``p`` (0 if unsampled or beyond the
    pool's ids)."""
    if 0 <= own < offsets[p + 1] - offsets[p]:
        return sizes[offsets[p] + own]
    return 0


def _pool_clusters(lab_pool: np.ndarray) -> tuple[np.ndarray, ...]:
    """One partition's pool positions ordered by cluster (unsampled first), where each
    cluster's run starts in that order, and the clusters' sizes."""
    order = np.argsort(lab_pool, kind="stable")
    size = np.bincount(lab_pool[lab_pool >= 0], minlength=1)
    start = (lab_pool.size - size.sum()) + np.concatenate([[0], np.cumsum(size)[:-1]])
    return order, start, size


@numba.njit(cache=True)
def _draw_in_cluster(labels, p, items, n_per_item, sel, u, order, start, size, second):
    """For each draw ``t`` of ``sel`` (item ``t // n_per_item``): the pool member of the
    item's cluster in partition ``p`` at the uniform ``u[t]``. ``second[t]`` is kept where
    ``p`` did not sample the item or its cluster has no pool member. In NumPy, the gathers
    of this step took 2.6 s at 10^6 items."""
    for s in range(sel.size):  # pragma: no cover - compiled
        t = sel[s]
        own = labels[items[t // n_per_item], p]
        if 0 <= own < size.size and size[own] > 0:
            second[t] = order[start[own] + np.int64(u[t] * size[own])]


def ensemble_pairs(
    labels: np.ndarray,
    n_per_item: int = 10,
    *,
    random_state: RandomState = 0,
) -> np.ndarray:
    """Pairs ``(i, j)`` with ``j`` drawn from ``i``'s cluster in a random partition.

    Parameters
    ----------
    labels
        ``(n_items, n_partitions)`` ensemble labels, ``-1`` where unsampled.
    n_per_item
        Partners drawn per item (before removing duplicates and self-pairs).
    random_state
        Seed.

    Returns
    -------
    ``(m, 2)`` int64 unique pairs with ``i < j``, ready for
    ``coassociation(labels, "sparse", pairs=...)``; add random pairs
    (:func:`scconsensus.core.sample_pairs` without ``X``) for the between-cluster
    evidence.

    Examples
    --------
    >>> import numpy as np
    >>> from scconsensus.core import ensemble_pairs
    >>> labels = np.array([[0, 0], [0, 1], [1, 1], [1, -1]])
    >>> ensemble_pairs(labels, 2, random_state=0).shape[1]
    2
    """
    labels = check_labels(labels)
    n = labels.shape[0]
    n_per_item = check_int(n_per_item, "n_per_item", 1)
    items = np.arange(n, dtype=np.int64)
    first, second = cluster_partners(labels, items, items, n_per_item, check_rng(random_state))
    rows, cols = check_pairs(np.column_stack([first, second]), n)
    return np.column_stack([rows, cols])
