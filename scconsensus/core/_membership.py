"""Helpers on soft memberships (items x clusters, rows on the simplex)."""

from __future__ import annotations

import numpy as np

from .._warnings import warn


def order_clusters(membership: np.ndarray, *, min_mass: float = 0.0) -> np.ndarray:
    """Drop clusters without mass and order the rest by decreasing total mass.

    Parameters
    ----------
    membership
        ``(n_items, K)`` non-negative memberships.
    min_mass
        Clusters whose total membership (expected size) is at most this are
        dropped. ``0`` keeps every cluster with any mass. The largest cluster is
        always kept.

    Returns
    -------
    Column indices into ``membership``: kept clusters, largest first, ties
    broken by original index so the order is stable.
    """
    mass = np.asarray(membership, dtype=np.float64).sum(axis=0)
    keep = np.flatnonzero(mass > min_mass)
    if keep.size == 0 and mass.size:
        # a consensus needs one cluster: a min_mass above every cluster keeps the largest
        keep = np.array([int(np.argmax(mass))])
    return keep[np.lexsort((keep, -mass[keep]))]


def normalize_rows(membership: np.ndarray) -> np.ndarray:
    """Rows rescaled to sum to one; all-zero rows become uniform."""
    membership = np.clip(np.asarray(membership, dtype=np.float64), 0.0, None)
    total = membership.sum(axis=1, keepdims=True)
    k = membership.shape[1]
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(total > 0, membership / np.where(total > 0, total, 1.0), 1.0 / k)
    return out


def hard_labels(membership: np.ndarray) -> np.ndarray:
    """Most probable cluster of each item (first one on ties)."""
    return np.asarray(membership).argmax(axis=1).astype(np.int32)


def confidence(membership: np.ndarray, labels: np.ndarray | None = None) -> np.ndarray:
    """Membership of each item in its own cluster: ``labels`` (``-1``: none), else the largest.

    The two agree where the labels are the argmax (PCC, PLA). DPP's labels are the
    paper's threshold cut and ConsensusClusterPlus's its hierarchical cut, which can
    put a boundary item in a cluster other than its largest membership: its confidence
    is then its membership in that cluster, not in another.
    """
    m = np.asarray(membership)
    top = m.max(axis=1)
    if labels is None:
        return top
    labels = np.asarray(labels)
    own = m[np.arange(m.shape[0]), np.maximum(labels, 0)]
    return np.where(labels >= 0, own, top)


def entropy(membership: np.ndarray) -> np.ndarray:
    """Shannon entropy (nats) of each item's membership; 0 for a hard assignment."""
    p = np.asarray(membership, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, p * np.log(p), 0.0)
    return -terms.sum(axis=1)


def drop_empty_clusters(
    membership: np.ndarray, labels: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Remove clusters that no item's hard label takes, so no category is empty.

    Parameters
    ----------
    membership
        ``(n_items, K)`` memberships, rows on the simplex.
    labels
        Hard labels (``-1`` = none); the argmax of ``membership`` when omitted.

    Returns
    -------
    ``(membership, labels, kept)``: memberships over the kept clusters, rows
    renormalised (a soft share on a dropped cluster goes to the others in
    proportion); labels renumbered ``0..k-1`` in the kept order; kept column
    indices. Repeats until every kept cluster is some item's label, since
    renormalising can move an argmax.

    Examples
    --------
    >>> import numpy as np
    >>> M = np.array([[0.6, 0.4, 0.0], [0.7, 0.3, 0.0], [0.2, 0.3, 0.5]])
    >>> drop_empty_clusters(M)[2].tolist()
    [0, 2]
    """
    membership = np.asarray(membership, dtype=np.float64)
    given = labels is not None
    labels = hard_labels(membership) if labels is None else np.asarray(labels, dtype=np.int64)
    kept = np.arange(membership.shape[1])
    while True:
        used = np.zeros(kept.size, dtype=bool)
        used[labels[labels >= 0]] = True
        if used.all() or not used.any():
            break
        remap = np.cumsum(used) - 1
        kept = kept[used]
        membership = normalize_rows(membership[:, used])
        if given:
            labels = np.where(labels >= 0, remap[np.maximum(labels, 0)], -1)
        else:
            labels = np.where(labels >= 0, hard_labels(membership), -1)
    return membership, labels.astype(np.int32), kept


def warn_in_no_partition(n_items: int, what: str) -> None:
    """Warn that ``n_items`` items are in no partition of the ensemble (nothing if 0).

    Such items carry no co-clustering evidence, so every consensus gives them the
    uniform ``what`` (and no hard label); one wording for every method.

    Parameters
    ----------
    n_items
        Items that no partition sampled.
    what
        What they get uniform, e.g. ``"memberships"`` or ``"posteriors"``.
    """
    if n_items:
        warn(
            f"{int(n_items)} item(s) are in no partition; they get uniform {what} and no "
            "label (NaN; NA in R). "
            "Generate the ensemble with predict_unsampled=True or more partitions.",
            RuntimeWarning,
        )
