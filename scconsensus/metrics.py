"""Agreement between partitions, hard and soft.

- :func:`h_criterion`: accuracy after the best one-to-one matching of clusters
  (eq. 11 of Lourenço et al. 2015; Meila 2003).
- :func:`adjusted_rand_index`, :func:`nmi`: pair-counting and information scores
  (scikit-learn's).
- :func:`js_criterion`: mean Jensen–Shannon divergence between two soft
  partitions after the best matching of clusters (Lourenço et al. 2015, Sect. 7).
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linear_sum_assignment
from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score

from ._docs import doc_params

__all__ = ["adjusted_rand_index", "h_criterion", "js_criterion", "nmi"]


def _pair(a, b) -> tuple[np.ndarray, np.ndarray]:
    a = np.asarray(a).ravel()
    b = np.asarray(b).ravel()
    if a.shape != b.shape:
        raise ValueError(f"The two labelings have different lengths: {a.size} and {b.size}.")
    if a.size == 0:
        raise ValueError("The labelings are empty.")
    return a, b


_LABEL_PAIR = """\
labels_true, labels_pred
    Labels of the same items (any hashable values); the names follow scikit-learn, the
    score is symmetric in the two."""


@doc_params(labels_pair=_LABEL_PAIR)
def h_criterion(labels_true, labels_pred) -> float:
    """Fraction of items on which two hard partitions agree after the best cluster matching.

    Clusters are matched one to one (Hungarian algorithm); unmatched clusters count as
    errors.

    Parameters
    ----------
    {labels_pair}

    Returns
    -------
    float
        The share of items in matched clusters, in ``[0, 1]``.

    Examples
    --------
    >>> from scconsensus.metrics import h_criterion
    >>> h_criterion([0, 0, 1, 1], [1, 1, 0, 0])
    1.0
    """
    a, b = _pair(labels_true, labels_pred)
    _, ai = np.unique(a, return_inverse=True)
    _, bi = np.unique(b, return_inverse=True)
    table = np.zeros((ai.max() + 1, bi.max() + 1), dtype=np.int64)
    np.add.at(table, (ai, bi), 1)
    rows, cols = linear_sum_assignment(table, maximize=True)
    return float(table[rows, cols].sum() / a.size)


@doc_params(labels_pair=_LABEL_PAIR)
def adjusted_rand_index(labels_true, labels_pred) -> float:
    """Adjusted Rand index (Hubert & Arabie 1985) between two hard partitions.

    Parameters
    ----------
    {labels_pair}

    Returns
    -------
    float
        ``1`` for identical partitions, about ``0`` for independent ones (it can be
        negative).

    Examples
    --------
    >>> from scconsensus.metrics import adjusted_rand_index
    >>> adjusted_rand_index([0, 0, 1, 1], [1, 1, 0, 0])
    1.0
    """
    a, b = _pair(labels_true, labels_pred)
    return float(adjusted_rand_score(a, b))


@doc_params(labels_pair=_LABEL_PAIR)
def nmi(labels_true, labels_pred) -> float:
    """Normalised mutual information (arithmetic normalisation) between two hard partitions.

    Parameters
    ----------
    {labels_pair}

    Returns
    -------
    float
        In ``[0, 1]``; ``1`` for identical partitions.

    Examples
    --------
    >>> from scconsensus.metrics import nmi
    >>> nmi([0, 0, 1, 1], [1, 1, 0, 0])
    1.0
    """
    a, b = _pair(labels_true, labels_pred)
    return float(normalized_mutual_info_score(a, b))


def _check_soft(Y: np.ndarray, name: str) -> np.ndarray:
    Y = np.asarray(Y, dtype=np.float64)
    if Y.ndim != 2:
        raise ValueError(f"{name} must be an (n_items, n_clusters) membership matrix.")
    if not np.all(np.isfinite(Y)) or Y.min() < -1e-12:
        raise ValueError(f"{name} must hold finite non-negative memberships.")
    if not np.allclose(Y.sum(axis=1), 1.0, atol=1e-6):
        raise ValueError(f"The rows of {name} must sum to 1 (memberships on the simplex).")
    return np.clip(Y, 0.0, None)


def js_criterion(Y: np.ndarray, Z: np.ndarray) -> float:
    """Mean Jensen–Shannon divergence (base 2, in [0, 1]) between soft partitions.

    Clusters are matched by the permutation minimising the mean divergence;
    the smaller partition is padded with empty clusters. The JS divergence is a
    sum over clusters of terms in ``(z_ik, y_iπ(k))``, so the best permutation is
    an assignment problem and is found exactly.

    Parameters
    ----------
    Y, Z
        ``(n_items, k)`` memberships whose rows sum to one (``k`` may differ).

    Returns
    -------
    float
        In ``[0, 1]``; ``0`` when the partitions agree up to a relabelling.

    Examples
    --------
    >>> import numpy as np
    >>> from scconsensus.metrics import js_criterion
    >>> Z = np.array([[0.9, 0.1], [0.2, 0.8]])
    >>> js_criterion(Z[:, ::-1], Z)
    0.0
    """
    Y = _check_soft(Y, "Y")
    Z = _check_soft(Z, "Z")
    if Y.shape[0] != Z.shape[0]:
        raise ValueError(
            f"Y and Z describe different numbers of items: {Y.shape[0]}, {Z.shape[0]}."
        )
    k = max(Y.shape[1], Z.shape[1])
    Y = np.pad(Y, ((0, 0), (0, k - Y.shape[1])))
    Z = np.pad(Z, ((0, 0), (0, k - Z.shape[1])))
    z = Z[:, :, None]
    y = Y[:, None, :]
    m = 0.5 * (z + y)
    with np.errstate(divide="ignore", invalid="ignore"):
        tz = np.where(z > 0, z * np.log2(z / m), 0.0)
        ty = np.where(y > 0, y * np.log2(y / m), 0.0)
    cost = 0.5 * (tz + ty).sum(axis=0)  # cost[a, b]: Z's cluster a matched to Y's cluster b
    rows, cols = linear_sum_assignment(cost)
    return float(max(cost[rows, cols].sum() / Y.shape[0], 0.0))
