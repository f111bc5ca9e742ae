"""Dense PCC terms over the active pairs only, once memberships are sparse.

Near a PCC optimum each item belongs to one or two clusters, so most pairs
have disjoint supports (``q_ij = 0``) and were never co-clustered
(``p_ij = 0``). For KL and squared l2 such a pair adds ``d(0, 0) = 0`` to the
objective and the constants ``c1 = d'(0, 0)``, ``c2 = d''(0, 0)`` to the
weights of the gradient and curvature, so

    G = c1 N Y + sum_{active (i, j)} N_ij (d'_ij - c1) y_j,
    H = c2 N Y^2 + sum_{active (i, j)} N_ij (d''_ij - c2) y_j^2,

where the active pairs are those with ``p_ij > 0`` (fixed, ~5 % of all pairs
on a typical ensemble) or with overlapping supports (found through the lists
of items of each cluster). ``N Y`` costs ``n nnz(Y)`` with sparse ``Y``, and
everything else is proportional to the number of active pairs, instead of
the ``n^2 K`` BLAS products and ``n^2`` elementwise passes of the all-pairs
evaluator.
"""

from __future__ import annotations

import numba
import numpy as np

from ._parallel import ROWS, interleaved, serial_twin


@numba.njit(cache=True)
def supports(Z):
    """Nonzero pattern of ``Z`` by row (``rptr``, ``rcol``) and by column (``cptr``, ``crow``).

    Rows within a column list are ascending.
    """
    n, K = Z.shape
    rptr = np.zeros(n + 1, np.int64)
    cptr = np.zeros(K + 1, np.int64)
    for i in range(n):
        for k in range(K):
            if Z[i, k] != 0.0:
                rptr[i + 1] += 1
                cptr[k + 1] += 1
    for i in range(n):
        rptr[i + 1] += rptr[i]
    for k in range(K):
        cptr[k + 1] += cptr[k]
    rcol = np.empty(rptr[n], np.int64)
    crow = np.empty(rptr[n], np.int64)
    fill = cptr[:K].copy()
    for i in range(n):
        r = rptr[i]
        for k in range(K):
            if Z[i, k] != 0.0:
                rcol[r] = k
                r += 1
                crow[fill[k]] = i
                fill[k] += 1
    return rptr, rcol, cptr, crow


@numba.njit(cache=True)
def overlap_work(cptr):
    """Pairs within the cluster lists, ``sum_k |L_k|^2 / 2``: the cost of the active search."""
    w = 0.0
    for k in range(cptr.shape[0] - 1):
        m = float(cptr[k + 1] - cptr[k])
        w += 0.5 * m * m
    return w


@serial_twin
@numba.njit(cache=True, parallel=True)
def positive_pairs(P):
    """CSR of the pairs ``j > i`` with ``P_ij > 0`` (never move: ``P`` is fixed)."""
    n = P.shape[0]
    ptr = np.zeros(n + 1, np.int64)
    for t in numba.prange(n):
        i = interleaved(t, n)
        c = 0
        for j in range(i + 1, n):
            if P[i, j] > 0.0:
                c += 1
        ptr[i + 1] = c
    for i in range(n):
        ptr[i + 1] += ptr[i]
    idx = np.empty(ptr[n], np.int64)
    for t in numba.prange(n):
        i = interleaved(t, n)
        r = ptr[i]
        for j in range(i + 1, n):
            if P[i, j] > 0.0:
                idx[r] = j
                r += 1
    return ptr, idx


@numba.njit(cache=True, inline="always")
def _first_above(crow, lo, hi, i):
    # first position in the ascending crow[lo:hi] holding an item > i
    while lo < hi:
        mid = (lo + hi) // 2
        if crow[mid] <= i:
            lo = mid + 1
        else:
            hi = mid
    return lo


@serial_twin
@numba.njit(cache=True, parallel=True)
def active_pairs(C, N, sptr, sidx, rptr, rcol, cptr, crow):
    """The active pairs ``j > i``: positive ``p`` first, then overlapping supports.

    Returns ``(ii, jj, cc, nn)``: the pairs, ordered by ``i``, and their counts
    ``C_ij``, ``N_ij``. Blocks of items search in parallel, each into its own
    slots (bounded by the lengths of the lists it visits), then the slots are packed.
    """
    n = N.shape[0]
    cap = np.zeros(n + 1, np.int64)
    for t in numba.prange(n):
        i = interleaved(t, n)
        c = sptr[i + 1] - sptr[i]
        for u in range(rptr[i], rptr[i + 1]):
            k = rcol[u]
            c += cptr[k + 1] - _first_above(crow, cptr[k], cptr[k + 1], i)
        cap[i + 1] = c
    for i in range(n):
        cap[i + 1] += cap[i]
    slots = np.empty(cap[n], np.int64)
    count = np.zeros(n + 1, np.int64)
    nb = (n + ROWS - 1) // ROWS
    for b in numba.prange(nb):
        blk = interleaved(b, nb)
        mark = np.full(n, -1, np.int64)
        for i in range(blk * ROWS, min(n, blk * ROWS + ROWS)):
            count[i + 1] = _row_pairs(N, sptr, sidx, rptr, rcol, cptr, crow, i, mark, slots, cap[i])
    for i in range(n):
        count[i + 1] += count[i]
    m = count[n]
    ii = np.empty(m, np.int64)
    jj = np.empty(m, np.int64)
    cc = np.empty(m)
    nn = np.empty(m)
    for t in numba.prange(n):
        i = interleaved(t, n)
        for s in range(count[i + 1] - count[i]):
            p = count[i] + s
            j = slots[cap[i] + s]
            ii[p] = i
            jj[p] = j
            cc[p] = C[i, j]
            nn[p] = N[i, j]
    return ii, jj, cc, nn


@numba.njit(cache=True, inline="always")
def _row_pairs(N, sptr, sidx, rptr, rcol, cptr, crow, i, mark, slots, start):
    # item i's partners j > i, each once (mark[j] == i once seen), into slots[start:]
    m = start
    for t in range(sptr[i], sptr[i + 1]):
        j = sidx[t]
        mark[j] = i
        slots[m] = j
        m += 1
    for u in range(rptr[i], rptr[i + 1]):
        k = rcol[u]
        for v in range(_first_above(crow, cptr[k], cptr[k + 1], i), cptr[k + 1]):
            j = crow[v]
            if mark[j] == i or N[i, j] <= 0:
                continue
            mark[j] = i
            slots[m] = j
            m += 1
    return m - start


@serial_twin
@numba.njit(cache=True, error_model="numpy", parallel=True)
def base_terms(N, Y, cptr, crow, c1, c2, Gt, Ht):
    """``Gt = c1 (N Y)^T``, ``Ht = c2 (N Y^2)^T`` over ``j != i``, by the column lists of ``Y``.

    Cluster ``k`` writes row ``k`` of ``Gt``, ``Ht`` alone, so clusters run in parallel.
    """
    n, K = Y.shape
    for k in numba.prange(K):
        for i in range(n):
            Gt[k, i] = 0.0
            Ht[k, i] = 0.0
        for t in range(cptr[k], cptr[k + 1]):
            j = crow[t]
            y = Y[j, k]
            g = c1 * y
            h = c2 * y * y
            # N[j, i], not a row view: views in a parallel loop cost atomic refcounts
            for i in range(n):
                v = N[j, i]
                Gt[k, i] += g * v
                Ht[k, i] += h * v
            Gt[k, j] -= g * N[j, j]
            Ht[k, j] -= h * N[j, j]
