"""The sparse route of PCC and PLA, and the pairs it counts: within-cluster partners plus
uniformly random ones.

PCC and PLA fit the co-association on sampled pairs above
``settings.dense_auto_max_items`` items (Lourenço et al. 2015, Sect. 5.4), or above
``settings.dense_auto_max_items_knn`` where kNN pairs can be drawn (:func:`auto_mode`).
Random pairs carry the between-cluster evidence; the within-cluster evidence needs
partners that share the item's cluster, from the kNN graph of a representation or drawn
from the ensemble itself (:func:`~scconsensus.core.ensemble_pairs`). Random pairs alone
leave each item a handful of pairs inside its own group: PLA on 20 clear groups of 3,000
items without a representation reached ARI 0.91 on them, against 1.00 with partners.
"""

from __future__ import annotations

import numpy as np

from .._settings import settings
from .._validation import RandomState, check_choice, check_matrix
from ._ensemble_pairs import ensemble_pairs
from ._pairs import check_pairs
from .coassociation import sample_pairs

__all__ = ["PAIRS", "auto_mode", "fitted_rows", "pair_source", "sampled_pairs"]

PAIRS = ("auto", "knn", "ensemble")
#: Above this many fitted items, ``pairs="auto"`` draws within-cluster partners from
#: the ensemble instead of a kNN graph (whose approximate search at 10^6 items was the
#: sparse route's slowest step).
ENSEMBLE_PAIRS_ABOVE = 100_000

NO_PAIRS = "Give n_neighbors > 0 or n_random > 0 pairs per item (sparse mode samples them)."


def pair_source(pairs: str, n: int, has_rep: bool) -> str:
    """``"knn"`` or ``"ensemble"`` within-cluster partners for ``n`` fitted items."""
    check_choice(pairs, PAIRS, "pairs")
    if pairs == "knn" and not has_rep:
        raise ValueError(
            "pairs='knn' needs a representation: compute adata.obsm['X_pca'] "
            "(sc.pp.pca), pass use_rep= (X= in the core functions) or build the ensemble "
            "with tl.ensemble (its matrix is used), or use pairs='ensemble'."
        )
    return "knn" if _draws_knn(pairs, n, has_rep) else "ensemble"


def _draws_knn(pairs: str, n: int, has_rep: bool) -> bool:
    """Whether the choice ``pairs`` takes kNN partners for ``n`` fitted items."""
    return has_rep and (pairs == "knn" or (pairs == "auto" and n <= ENSEMBLE_PAIRS_ABOVE))


def auto_mode(n: int, pairs, has_rep: bool, n_neighbors: int) -> str:
    """PCC's and PLA's ``mode="auto"`` for ``n`` fitted items: ``"dense"`` or ``"sparse"``.

    All pairs up to ``settings.dense_auto_max_items``; where the sparse route would draw
    kNN pairs (``n_neighbors > 0``, ``pairs`` ``"auto"`` or ``"knn"`` with a
    representation), only up to ``settings.dense_auto_max_items_knn``. Pairs drawn from
    the ensemble or at random did not match all pairs at these sizes; kNN pairs did
    better on clear groups of unequal sizes, where all pairs merge the smaller groups.
    """
    limit = settings.dense_auto_max_items
    if isinstance(pairs, str) and n_neighbors > 0 and _draws_knn(pairs, n, has_rep):
        limit = min(limit, settings.dense_auto_max_items_knn)
    return "dense" if n <= limit else "sparse"


def fitted_rows(X, n_total: int, fit_index: np.ndarray | None):
    """The representation ``X`` (or the function returning it) checked, at ``fit_index``.

    float32 stays float32, as the kNN search takes it: the same pairs for the same
    data, and no float64 copy of all of ``X`` (400 MB at 10^6 x 50).
    """
    X = check_matrix(X() if callable(X) else X, "X", keep_float32=True)
    if X.shape[0] != n_total:
        raise ValueError(f"X has {X.shape[0]} rows but the ensemble has {n_total} items.")
    return X if fit_index is None else X[fit_index]


def sampled_pairs(
    n: int,
    source: str,
    partners: np.ndarray,
    *,
    n_neighbors: int,
    n_random: int,
    random_state: RandomState,
) -> np.ndarray:
    """``(m, 2)`` unique pairs ``i < j`` of ``n`` items.

    ``n_neighbors`` within-cluster partners per item, from ``partners``: the checked
    ``(n, p)`` representation whose kNN they are (``source="knn"``) or the ``(n, L)``
    ensemble labels they are drawn from (``"ensemble"``); and ``n_random`` uniformly
    random partners.
    """
    if source == "knn":
        kw = {"n_neighbors": n_neighbors, "n_random": n_random, "random_state": random_state}
        return sample_pairs(n, partners, **kw)
    parts = []
    if n_neighbors > 0:
        parts.append(ensemble_pairs(partners, n_neighbors, random_state=random_state))
    if n_random > 0:
        parts.append(sample_pairs(n, None, n_random=n_random, random_state=random_state))
    if not parts:
        raise ValueError(NO_PAIRS)
    rows, cols = check_pairs(np.concatenate(parts), n)
    return np.column_stack([rows, cols])
