"""How stable ``K`` groups look in data that hold none: a Gaussian reference.

Consensus clustering finds stable splits in data without groups when the data are
elongated: k-means cuts an elongated cloud along its long axis in every subsample, and
its co-association looks like two groups (Şenbabaoğlu et al. 2014). M3C (John et al.
2020) therefore compares the stability of the data with that of reference data drawn
from one Gaussian with the data's covariance (its principal components and their
variances kept, its clusters gone). Here the stability is :func:`select_k`'s evidence,
``λ_K(E_K)``, and its complement ``1 - λ_K(E_K)`` the co-association that ``K`` groups
cut (a normalised cut): the ensemble is rebuilt with the same recipe on a few such
draws, and ``K`` groups are more than the data's shape when every draw cuts clearly more.

The **ratio** of the cuts (the least a draw cuts over what the data cut) and not their
difference: an elongated draw is cut the same way at ``K = 2`` in most subsamples
(``λ_2`` 0.92-0.95), so that two groups 20 noise units apart, which keep ``λ_2 = 1.000``,
kept only 0.05 more than the draws, where their ratio is unbounded. Measured
(``benchmarks/k_null.py``, 3 seeds; ``benchmarks/README.md``, "Fourteenth session"):
1.57 or more on every dataset of the accuracy panel with groups but wine and breast
cancer in raw units (1.13-1.46, where one feature holds most of the variance, 99.8 % and
72 %, and the chosen ``K`` is far from the classes), at most 1.29 on 15 runs of data without groups
(Gaussian, also with a PCA's spectrum or pbmc68k's covariance, Student t, uniform). Held
out: two groups 5-20 noise units apart 5.0 or more, planted groups 2.3 or more, Gaussian
noise of 3,000 items in 50 dimensions 0.87-0.92; but log-normal noise 1.43-2.14 (2 of
3 runs not warned: a skewed cloud is not a Gaussian, as its reference is).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import scipy.sparse as sp

from .._progress import progress_bar
from .._validation import RandomState, check_int, check_labels, seed_sequence
from ._resolution import MAX_ITEMS, k_evidence

__all__ = [
    "NULL_RATIO",
    "REFERENCE_ITEMS",
    "check_reference_size",
    "gaussian_like",
    "null_evidence",
    "null_table",
]

#: How many times less than every draw the data must cut (module docstring).
NULL_RATIO = 1.5

#: Items per draw at most, and items the evidence reads (as :func:`select_k`).
REFERENCE_ITEMS = MAX_ITEMS

#: A cut this small is none.
CUT_ZERO = 1e-9

#: Largest ``items x features`` densified to draw the reference (200 MB of float32).
MAX_DENSE = 50_000_000


def gaussian_like(X: np.ndarray | sp.spmatrix, n_items: int, rng: np.random.Generator):
    """Draws of one Gaussian with the mean and covariance of the rows of ``X``.

    Parameters
    ----------
    X
        ``(n_items, n_features)`` data (dense or sparse); its mean and covariance are read
        on at most ``n_items`` rows drawn with ``rng``.
    n_items
        Rows to draw.
    rng
        The generator of both draws.

    Returns
    -------
    numpy.ndarray
        ``(n_items, n_features)`` float32.

    Raises
    ------
    ValueError
        When the rows read hold over 50 million entries (cluster a representation).

    Examples
    --------
    >>> import numpy as np
    >>> from scconsensus.core import gaussian_like
    >>> X = np.random.default_rng(0).normal(size=(500, 3)) * [1.0, 2.0, 5.0]
    >>> gaussian_like(X, 4000, np.random.default_rng(1)).std(axis=0).round(0)
    array([1., 2., 5.], dtype=float32)
    """
    n, p = X.shape
    rows = np.sort(rng.choice(n, n_items, replace=False)) if n > n_items else np.arange(n)
    check_reference_size(rows.size, p)
    Y = X[rows]
    Y = np.asarray(Y.toarray() if sp.issparse(Y) else Y, dtype=np.float64)
    mean = Y.mean(axis=0)
    _, s, Vt = np.linalg.svd(Y - mean, full_matrices=False)
    scale = s / np.sqrt(max(rows.size - 1, 1))
    Z = rng.standard_normal((n_items, s.size))
    return ((Z * scale) @ Vt + mean).astype(np.float32)


def check_reference_size(n_items: int, n_features: int) -> None:
    """Refuse a reference that would densify over 50 million entries, before any work.

    Parameters
    ----------
    n_items
        Items the covariance is read on (at most 5,000).
    n_features
        Features of the matrix the ensemble clustered.

    Raises
    ------
    ValueError
        Naming the fix: cluster a representation.

    Examples
    --------
    >>> from scconsensus.core import check_reference_size
    >>> check_reference_size(5_000, 50)
    """
    if n_items * n_features > MAX_DENSE:
        raise ValueError(
            f"The reference data are drawn with the covariance of the matrix the ensemble "
            f"clustered, and {n_features:,} features are too many ({n_items:,} x "
            f"{n_features:,} entries, over {MAX_DENSE:,}). Build the ensemble on a "
            "representation (sc.pp.pca, then tl.ensemble(adata, use_rep='X_pca'))."
        )


def null_evidence(
    X: np.ndarray | sp.spmatrix,
    Ks: np.ndarray,
    build: Callable[[np.ndarray, np.random.SeedSequence], np.ndarray],
    *,
    n_null: int = 3,
    max_items: int = MAX_ITEMS,
    random_state: RandomState = 0,
    progress: bool | None = None,
) -> np.ndarray:
    """``λ_K(E_K)`` of ensembles of Gaussian reference data (module docstring).

    Each draw has ``min(n_items, max_items)`` items with the mean and covariance of
    ``X`` (:func:`gaussian_like`), is clustered by ``build`` and is read as
    :func:`select_k` reads the data (at most ``max_items`` items, so a draw of that many
    is read whole).

    Parameters
    ----------
    X
        The matrix the data's ensemble clustered, items in rows.
    Ks
        The numbers of clusters to read.
    build
        ``build(X_draw, seed)``: the labels of the data's ensemble recipe on a draw,
        seeded by the :class:`numpy.random.SeedSequence` it is given.
    n_null
        Draws.
    max_items
        Items per draw, and items read.
    random_state
        Seeds the draws, their ensembles and the item draw of the evidence.
    progress
        Show a bar over the draws (``None``: scanpy's verbosity decides).

    Returns
    -------
    numpy.ndarray
        ``(n_null, len(Ks))``, one row per draw; NaN where a draw has too few partitions
        of ``K`` clusters or more to judge ``K`` (as :func:`select_k` needs).

    Examples
    --------
    >>> import numpy as np
    >>> from scconsensus.core import generate_ensemble, null_evidence
    >>> X = np.random.default_rng(0).normal(size=(200, 5))
    >>> def build(Xn, seed):
    ...     return generate_ensemble(Xn, 20, k=(2, 6), random_state=seed, progress=False).labels
    >>> null_evidence(X, [2, 3, 4], build, n_null=2).shape
    (2, 3)
    """
    n_null = check_int(n_null, "n_null", 1)
    max_items = check_int(max_items, "max_items", 3)
    Ks = np.asarray(Ks, dtype=np.int64)
    n_items = min(X.shape[0], max_items)
    out = np.empty((n_null, Ks.size))
    draws = seed_sequence(random_state).spawn(n_null)
    for i in progress_bar(range(n_null), progress=progress, desc="reference draws"):
        data_seed, build_seed, read_seed = draws[i].spawn(3)
        Xn = gaussian_like(X, n_items, np.random.default_rng(data_seed))
        labels = check_labels(build(Xn, build_seed))
        out[i] = k_evidence(labels, Ks, max_items=max_items, random_state=read_seed, judged=True)
    return out


def null_table(Ks: np.ndarray, eigenvalue: np.ndarray, null: np.ndarray) -> pd.DataFrame:
    """The data's evidence beside the reference draws', one row per ``K``.

    Parameters
    ----------
    Ks
        The numbers of clusters read.
    eigenvalue
        The data's ``λ_K(E_K)`` (:func:`k_evidence`).
    null
        ``(n_draws, len(Ks))`` from :func:`null_evidence`.

    Returns
    -------
    pandas.DataFrame
        Columns ``n_clusters``, ``eigenvalue``, ``null_mean`` and ``null_max`` (over the
        draws that have partitions of ``K`` clusters or more; NaN if none has) and
        ``ratio``, ``(1 - null_max) / (1 - eigenvalue)``: how many times less of the
        co-association the data cut than the draw that cuts least (``inf`` when the data
        cut none and every draw some; NaN without a draw to compare).

    Examples
    --------
    >>> import numpy as np
    >>> from scconsensus.core import null_table
    >>> null_table([2, 3], np.array([0.99, 0.6]), np.array([[0.8, 0.5], [0.9, 0.55]]))
       n_clusters  eigenvalue  null_mean  null_max   ratio
    0           2        0.99      0.850      0.90  10.000
    1           3        0.60      0.525      0.55   1.125
    """
    # a draw without partitions of K clusters or more says nothing about K
    null = np.asarray(null, dtype=float)
    count = (~np.isnan(null)).sum(axis=0)
    seen = count > 0
    null_max = np.where(seen, np.where(np.isnan(null), -np.inf, null).max(axis=0), np.nan)
    null_mean = np.where(seen, np.nansum(null, axis=0) / np.maximum(count, 1), np.nan)
    # below CUT_ZERO a cut is rounding of eigenvalue 1 (two groups 10 noise units apart
    # gave 1e-15 and a ratio of 5e14)
    cut, null_cut = 1.0 - np.asarray(eigenvalue, dtype=float), 1.0 - null_max
    cut, null_cut = np.where(cut < CUT_ZERO, 0.0, cut), np.where(null_cut < CUT_ZERO, 0.0, null_cut)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(null_cut > 0, null_cut / cut, 1.0)  # no draw cut: no evidence
    ratio = np.where(seen & ~np.isnan(cut), ratio, np.nan)
    return pd.DataFrame(
        {
            "n_clusters": np.asarray(Ks, dtype=np.int64),
            "eigenvalue": eigenvalue,
            "null_mean": null_mean,
            "null_max": null_max,
            "ratio": ratio,
        }
    )
