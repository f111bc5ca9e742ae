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

__all__ = [
    "adjusted_rand_index",
    "calibration",
    "confidence_auroc",
    "expected_calibration_error",
    "h_criterion",
    "js_criterion",
    "majority_correct",
    "nmi",
]


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


def majority_correct(labels_true, labels_pred) -> np.ndarray:
    """Whether each item's class is the majority class of its cluster.

    Parameters
    ----------
    labels_true
        Reference classes.
    labels_pred
        Cluster labels.

    Returns
    -------
    numpy.ndarray
        Boolean, one per item: the notion of "right" that a per-cell confidence is
        judged against (each cluster stands for its majority class).

    Examples
    --------
    >>> from scconsensus.metrics import majority_correct
    >>> majority_correct([0, 0, 1, 1], [5, 5, 5, 6]).tolist()
    [True, True, False, True]
    """
    truth, pred = _pair(labels_true, labels_pred)
    _, t = np.unique(truth, return_inverse=True)
    _, p = np.unique(pred, return_inverse=True)
    table = np.zeros((p.max() + 1, t.max() + 1), dtype=np.int64)
    np.add.at(table, (p, t), 1)
    return t == table.argmax(axis=1)[p]


def _judged(confidence, correct) -> tuple[np.ndarray, np.ndarray]:
    """Confidence and correctness of the items that have a confidence (NaN ones dropped)."""
    conf = np.asarray(confidence, dtype=np.float64).ravel()
    ok = np.asarray(correct, dtype=bool).ravel()
    if conf.shape != ok.shape:
        raise ValueError(f"confidence has {conf.size} items but correct has {ok.size}.")
    # an item without a confidence cannot be ranked or binned: every figure leaves it out,
    # so that AUROC and ECE describe the same items
    keep = ~np.isnan(conf)
    return conf[keep], ok[keep]


def confidence_auroc(confidence, correct) -> float:
    """Area under the ROC curve of ``confidence`` for telling right items from wrong ones.

    Parameters
    ----------
    confidence
        Per-item confidence (any scale: only the order counts). Items whose confidence
        is NaN are left out, as in :func:`expected_calibration_error`.
    correct
        Whether each item is right (e.g. :func:`majority_correct`).

    Returns
    -------
    float
        ``0.5`` is chance, ``1`` ranks every wrong item below every right one; NaN when
        all items left are right or all wrong. Ties count one half (Mann–Whitney).

    Examples
    --------
    >>> from scconsensus.metrics import confidence_auroc
    >>> confidence_auroc([0.9, 0.8, 0.3, 0.6], [True, True, False, False])
    1.0
    >>> confidence_auroc([0.9, float("nan"), 0.3, 0.6], [True, True, False, False])
    1.0
    """
    from scipy.stats import rankdata

    conf, ok = _judged(confidence, correct)
    n_ok, n_bad = int(ok.sum()), int((~ok).sum())
    if n_ok == 0 or n_bad == 0:
        return float("nan")
    ranks = rankdata(conf)
    return float((ranks[ok].sum() - n_ok * (n_ok + 1) / 2) / (n_ok * n_bad))


def expected_calibration_error(confidence, correct, n_bins: int = 10) -> float:
    """ECE: ``Σ_b (n_b / n) |mean confidence_b - accuracy_b|`` over equal-width bins of [0, 1].

    Parameters
    ----------
    confidence
        Per-item confidence in ``[0, 1]``. Items whose confidence is NaN are left out,
        as in :func:`confidence_auroc`.
    correct
        Whether each item is right.
    n_bins
        Equal-width bins of ``[0, 1]``.

    Returns
    -------
    float
        0 for a calibrated confidence; at most 1. NaN when no item has a confidence.

    Examples
    --------
    >>> from scconsensus.metrics import expected_calibration_error
    >>> expected_calibration_error([0.9, 0.9, 0.5, 0.5], [True, True, True, False])
    0.05
    """
    table = calibration(confidence, correct, n_bins=n_bins)
    if table.empty:
        return float("nan")
    weights = table["n_items"] / table["n_items"].sum()
    return float(round((weights * (table["confidence"] - table["accuracy"]).abs()).sum(), 12))


def calibration(confidence, correct, n_bins: int = 10):
    """Reliability table: per confidence bin, the items, their mean confidence and accuracy.

    Parameters
    ----------
    confidence
        Per-item confidence in ``[0, 1]`` (NaN items are left out).
    correct
        Whether each item is right (e.g. :func:`majority_correct`).
    n_bins
        Equal-width bins of ``[0, 1]``.

    Returns
    -------
    pandas.DataFrame
        Non-empty bins with ``low``, ``high``, ``n_items``, ``confidence`` (mean) and
        ``accuracy`` (share of right items).
    """
    import pandas as pd

    if not isinstance(n_bins, int | np.integer) or isinstance(n_bins, bool) or n_bins < 1:
        raise ValueError(f"n_bins must be a positive integer, got {n_bins!r}.")
    conf, ok = _judged(confidence, correct)
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    idx = np.clip(np.searchsorted(edges, conf, side="right") - 1, 0, n_bins - 1)
    rows = []
    for b in np.unique(idx):
        m = idx == b
        rows.append((edges[b], edges[b + 1], int(m.sum()), conf[m].mean(), ok[m].mean()))
    return pd.DataFrame(rows, columns=["low", "high", "n_items", "confidence", "accuracy"])
