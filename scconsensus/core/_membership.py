"""Helpers on soft memberships (items x clusters, rows on the simplex)."""

from __future__ import annotations

import numpy as np


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


def confidence(membership: np.ndarray) -> np.ndarray:
    """Largest membership of each item."""
    return np.asarray(membership).max(axis=1)


def entropy(membership: np.ndarray) -> np.ndarray:
    """Shannon entropy (nats) of each item's membership; 0 for a hard assignment."""
    p = np.asarray(membership, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, p * np.log(p), 0.0)
    return -terms.sum(axis=1)
