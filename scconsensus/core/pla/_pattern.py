"""The sparse route's pattern: which pairs of the fitted items PLA stores ``Z`` on."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._pair_source import fitted_rows, pair_source, sampled_pairs
from .._pairs import check_pairs
from ._members import Members, symmetric_pattern
from ._problem import Problem


def sparse_pattern(
    members: Members,
    fit_index: np.ndarray,
    n_total: int,
    X,
    pairs,
    counts: tuple[int, int],
    diagonal: bool,
    seed,
) -> tuple[sp.csr_matrix, np.ndarray, str]:
    """``(pattern, values, source)`` on the fitted items ``members`` (rows ``fit_index``).

    ``pairs``: an ``(m, 2)`` array over all ``n_total`` items (``source`` ``"given"``),
    else ``"auto"``/``"knn"``/``"ensemble"`` as :func:`~scconsensus.core._pair_source.
    pair_source` reads them, with ``counts = (n_neighbors, n_random)`` pairs per item.
    The values are ``Z`` under uniform weights; pairs of no co-association are left out.
    """
    r = fit_index.size
    if isinstance(pairs, str):
        source = pair_source(pairs, r, X is not None)
        knn = source == "knn"
        partners = fitted_rows(X, n_total, fit_index) if knn else members.argmax_labels()
        n_neighbors, n_random = counts
        local = sampled_pairs(
            r, source, partners, n_neighbors=n_neighbors, n_random=n_random, random_state=seed
        )
    else:
        source, local = "given", _local_pairs(pairs, fit_index, n_total)
    pattern = symmetric_pattern(r, local, diagonal=diagonal)
    # keep only pairs that carry co-association under uniform weights: zeros add nothing
    probe = Problem(members, pattern).z(np.full(members.n_partitions, 1.0))
    probe.eliminate_zeros()
    probe.sort_indices()
    values = probe.data.copy()
    probe.data[:] = 1.0
    return probe, values, source


def _local_pairs(pairs, fit_index: np.ndarray, n_total: int) -> np.ndarray:
    """Given pairs over all items, as pairs of positions in ``fit_index`` (others dropped)."""
    rows, cols = check_pairs(pairs, n_total)
    local = np.full(n_total, -1, dtype=np.int64)
    local[fit_index] = np.arange(fit_index.size)
    mapped = np.column_stack([local[rows], local[cols]])
    return mapped[(mapped >= 0).all(axis=1)]
