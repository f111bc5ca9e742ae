"""Which items a model-based consensus (PCC, PLA) is fitted on before it is extended.

Fitting on a random subset and extending the fit to the other items keeps a
million cells to minutes; both methods choose the subset by the one rule here.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .._settings import settings
from .._validation import RandomState, check_fraction, check_int, check_rng

__all__ = ["auto_fit_size", "fit_count", "fit_subset", "plan_subset"]

#: The most items ``fit_size="auto"`` fits, per method, where ``settings.auto_fit_size``
#: is ``None``. PCC's extension draws an item's partners mostly where its cluster is
#: smallest: fitted on 10,000 of 100,000 cells it keeps a rare population about as a fit
#: on 20,000 does (recall at data seeds 0-2: 0.00/0.88/0.50 against 0.00/0.97/0.49 for a
#: population of 0.1 %, 0.91/1.00/1.00 against 0.92/1.00/1.00 for 0.5 %; the uniform
#: partners before it: 0.00/0.54/0.30 and 0.58/1.00/1.00 on 20,000), at half the CPU
#: (``benchmarks/pcc_fit_size.py``). PLA's eq. 26 extension lost half of such a
#: population's cells fitted on 10,000 (recall 0.76 -> 0.45 at 0.5 %, seed 1); its
#: fold-in keeps 0.97 and 1.00 at seeds 0-1 on 20,000 (``--method pla``; 10,000 not
#: measured with it).
AUTO_FIT_SIZE = {"pcc": 10_000, "pla": 20_000}


def auto_fit_size(method: str) -> int:
    """The most items ``fit_size="auto"`` fits for ``method`` (``"pcc"`` or ``"pla"``)."""
    chosen = settings.auto_fit_size
    return AUTO_FIT_SIZE[method] if chosen is None else chosen


def fit_count(
    n_items: int, fit_size: int | str | None, fit_fraction: float | None, *, method: str
) -> int:
    """How many items are fitted: ``fit_size``, ``ceil(fit_fraction * n_items)`` or all.

    Parameters
    ----------
    n_items
        Items in the ensemble.
    fit_size
        Items to fit; ``"auto"``: at most :func:`auto_fit_size`; ``None``:
        all (or ``fit_fraction``).
    fit_fraction
        Share of the items to fit, in ``(0, 1]``.
    method
        ``"pcc"`` or ``"pla"``, whose ``"auto"`` size applies.

    Returns
    -------
    The number of items to fit, at most ``n_items``.

    Raises
    ------
    ValueError
        If both are given, or either is not a count / fraction.
    """
    if isinstance(fit_size, str) and fit_size != "auto":
        raise ValueError(
            f"fit_size={fit_size!r} is not supported; give 'auto' (at most "
            "settings.auto_fit_size items), a number of items, or None to fit every item."
        )
    if isinstance(fit_size, str):
        fit_size = None if fit_fraction is not None else auto_fit_size(method)
    if fit_size is not None and fit_fraction is not None:
        raise ValueError("Pass either fit_size or fit_fraction, not both.")
    if fit_size is not None:
        r = check_int(fit_size, "fit_size", 1)
    elif fit_fraction is not None:
        r = int(np.ceil(check_fraction(fit_fraction, "fit_fraction") * n_items))
    else:
        r = n_items
    return min(r, n_items)


def fit_subset(
    n_items: int,
    fit_size: int | str | None,
    fit_fraction: float | None,
    n_clusters: int,
    rng: np.random.Generator,
    *,
    method: str,
) -> np.ndarray | None:
    """Sorted indices of the items to fit on (drawn by ``rng``), or ``None`` to fit all.

    Parameters
    ----------
    n_items, fit_size, fit_fraction, method
        As for :func:`fit_count`.
    n_clusters
        ``K``: a fit needs more than ``K`` items.
    rng
        Draws the subset.

    Raises
    ------
    ValueError
        If a strict subset would hold ``n_clusters`` items or fewer.
    """
    r = fit_count(n_items, fit_size, fit_fraction, method=method)
    if r == n_items:
        return None
    if r <= n_clusters:
        raise ValueError(
            f"fit_size/fit_fraction gives {r} fitted items; it must be more than "
            f"n_clusters={n_clusters}."
        )
    return np.sort(rng.choice(n_items, size=r, replace=False)).astype(np.int64)


def plan_subset(
    n_items: int,
    fit_size: int | str | None,
    fit_fraction: float | None,
    random_state: RandomState,
    *,
    method: str,
) -> Callable[[int], np.ndarray | None]:
    """:func:`fit_subset` given ``K``, as :func:`~scconsensus.core.plan_consensus`'s
    ``subset`` takes it, so that the start is computed on the items the model fits
    (PLA's on every item took 21 of its 34 s at 3·10⁵ items).

    A seed gives the draw a generator of its own (the fit's streams do not shift); a
    Generator is drawn from, so that every random choice goes through it.
    """

    def subset(K: int) -> np.ndarray | None:
        rng = check_rng(random_state)
        return fit_subset(n_items, fit_size, fit_fraction, K, rng, method=method)

    return subset
