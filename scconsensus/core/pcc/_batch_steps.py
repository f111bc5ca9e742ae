"""The batch solver's steps (:mod:`._batch`): projected diagonal-Newton, exponentiated
gradient, the conjugate direction, the snapped step along a segment, and the KKT gap.
"""

from __future__ import annotations

import numba
import numpy as np

from ._greedy import _scan_item
from ._parallel import ROWS, ordered_min, ordered_sum, serial_twin


@numba.njit(cache=True, error_model="numpy", inline="always")
def _normalise_row(out, i, G, Y):
    """Scale ``out[i]`` onto the simplex; returns row ``i``'s share of ``<G, out - Y>``."""
    tot = 0.0
    for k in range(out.shape[1]):
        tot += out[i, k]
    slope = 0.0
    for k in range(out.shape[1]):
        out[i, k] /= tot
        slope += G[i, k] * (out[i, k] - Y[i, k])
    return slope


@numba.njit(cache=True, error_model="numpy", inline="always")
def _order_decreasing(x, order):
    """``order`` = indices of ``x`` by decreasing value, ties in index order.

    Insertion in place up to ``K = 128``: ``np.argsort`` allocates for every row,
    which took half of :func:`_project_step` (n = 100,000, K = 20: 96 -> 44 ms;
    equal at K = 200). Above, a merge sort: numba's ``np.argsort`` cost 2.5 s of
    compilation at the first call, for a branch that rarely runs.
    """
    K = x.shape[0]
    if K > 128:
        _merge_order(x, order)
        return
    for k in range(K):
        r = k
        while r > 0 and x[order[r - 1]] < x[k]:
            order[r] = order[r - 1]
            r -= 1
        order[r] = k


@numba.njit(cache=True, error_model="numpy")
def _merge_order(x, order):
    """:func:`_order_decreasing` by bottom-up merge sort (stable, O(K log K))."""
    K = x.shape[0]
    for k in range(K):
        order[k] = k
    buf = np.empty(K, np.int64)
    width = 1
    while width < K:
        for lo in range(0, K, 2 * width):
            mid, hi = min(lo + width, K), min(lo + 2 * width, K)
            a, b = lo, mid
            for t in range(lo, hi):
                # the left run wins ties: equal values keep their index order
                if a < mid and (b >= hi or x[order[a]] >= x[order[b]]):
                    buf[t] = order[a]
                    a += 1
                else:
                    buf[t] = order[b]
                    b += 1
        # element by element: a slice assignment compiles numba's shape-mismatch error
        # message (3.7 s of the first call's compilation, for a check that cannot fail)
        for t in range(K):
            order[t] = buf[t]
        width *= 2


@numba.njit(cache=True, error_model="numpy", inline="always")
def _project_row(Y, G, H, eta, out, i, v, d, bp, order):
    K = Y.shape[1]
    hmax = 0.0
    for k in range(K):
        if H[i, k] > hmax:
            hmax = H[i, k]
    floor = 1e-12 * hmax if hmax > 0.0 else 1.0
    for k in range(K):
        d[k] = max(H[i, k], floor)
        v[k] = Y[i, k] - eta * G[i, k] / d[k]
        bp[k] = v[k] * d[k]  # x_k > 0 iff theta < bp_k
    _order_decreasing(bp, order)
    sv = 0.0
    sw = 0.0
    theta = 0.0
    for r in range(K):
        k = order[r]
        sv += v[k]
        sw += 1.0 / d[k]
        t = (sv - 1.0) / sw
        if bp[k] > t:
            theta = t
    for k in range(K):
        out[i, k] = max(v[k] - theta / d[k], 0.0)
    # renormalise away rounding so rows stay exactly on the simplex
    return _normalise_row(out, i, G, Y)


@serial_twin
@numba.njit(cache=True, error_model="numpy", parallel=True)
def _project_step(Y, G, H, eta, out):
    """``out_i = argmin_{x in simplex} |x - (y_i - eta g_i / h_i)|^2_{diag(h_i)}``.

    A projected Newton step with the diagonal of the Hessian as metric (the
    sort-based projection of Held et al. 1974, weighted). Returns
    ``<G, out - Y>``, which is <= 0.
    """
    n, K = Y.shape
    nb = (n + ROWS - 1) // ROWS
    part = np.zeros(nb)
    for blk in numba.prange(nb):
        v = np.empty(K)
        d = np.empty(K)
        bp = np.empty(K)
        order = np.empty(K, np.int64)
        slope = 0.0
        for i in range(blk * ROWS, min(n, blk * ROWS + ROWS)):
            slope += _project_row(Y, G, H, eta, out, i, v, d, bp, order)
        part[blk] = slope
    return ordered_sum(part)


@serial_twin
@numba.njit(cache=True, error_model="numpy", parallel=True)
def _eg_step(Y, G, wrow, eta, seed, out):
    """Exponentiated-gradient target ``x_i ~ y_i exp(-eta (g_i - min g_i) / w_i)``.

    An item whose best cluster ``U`` carries no mass gets ``seed`` there first,
    so that clusters can re-enter a support (multiplicative steps alone never
    revive a zero). Returns ``<G, out - Y>`` (<= 0: mass moves to lower gradients).
    """
    n, K = Y.shape
    nb = (n + ROWS - 1) // ROWS
    part = np.zeros(nb)
    for blk in numba.prange(nb):
        slope = 0.0
        for i in range(blk * ROWS, min(n, blk * ROWS + ROWS)):
            u = 0
            gmin = G[i, 0]
            for k in range(K):
                if G[i, k] < gmin:
                    gmin = G[i, k]
                    u = k
            for k in range(K):
                y = seed if k == u and Y[i, k] == 0.0 else Y[i, k]
                out[i, k] = y * np.exp(-eta * (G[i, k] - gmin) / wrow[i])
            slope += _normalise_row(out, i, G, Y)
        part[blk] = slope
    return ordered_sum(part)


@numba.njit(cache=True, error_model="numpy", inline="always")
def _cg_row(Y, R, Dprev, beta, D, i):
    # row i of D (Dprev may be D: the row is read before it is written); its largest s
    K = Y.shape[1]
    ok = True
    for k in range(K):
        d = R[i, k] + beta * Dprev[i, k]
        if Y[i, k] <= 0.0 and d < 0.0:
            ok = False
            break
    smax = np.inf
    for k in range(K):
        d = R[i, k] + beta * Dprev[i, k] if ok else R[i, k]
        D[i, k] = d
        if d < 0.0:
            smax = min(smax, Y[i, k] / -d)
    return smax


@serial_twin
@numba.njit(cache=True, error_model="numpy", parallel=True)
def _cg_direction(Y, R, Dprev, beta, D):
    """``D = R + beta Dprev`` row by row, ``R`` alone where that would leave the simplex at once.

    Returns the largest ``s`` with ``Y + s D >= 0``.
    """
    n = Y.shape[0]
    nb = (n + ROWS - 1) // ROWS
    part = np.full(nb, np.inf)
    for blk in numba.prange(nb):
        for i in range(blk * ROWS, min(n, blk * ROWS + ROWS)):
            part[blk] = min(part[blk], _cg_row(Y, R, Dprev, beta, D, i))
    return ordered_min(part)


@serial_twin
@numba.njit(cache=True, error_model="numpy", parallel=True)
def _step_dir(Y, D, s, X, snap, out):
    """``out = Y + s D``, rows renormalised; returns how many entries were snapped to 0.

    Snapped: entries at the border (rounding), and those the full projected step
    ``X`` zeroes that are left below ``snap``.
    """
    n, K = Y.shape
    nb = (n + ROWS - 1) // ROWS
    count = np.zeros(nb, np.int64)
    for blk in numba.prange(nb):
        for i in range(blk * ROWS, min(n, blk * ROWS + ROWS)):
            tot = 0.0
            for k in range(K):
                y = Y[i, k] + s * D[i, k]
                if y < 1e-15 or (X[i, k] == 0.0 and y < snap):
                    if y > 0.0:
                        count[blk] += 1
                    y = 0.0
                out[i, k] = y
                tot += y
            for k in range(K):
                out[i, k] /= tot
    # a loop, not count.sum(): numba's array sum costs 0.3 s more to compile
    total = 0
    for blk in range(nb):
        total += count[blk]
    return total


@numba.njit(cache=True, error_model="numpy")
def _kkt_gap(G, Y):
    """``max_i (g_iV - g_iU)`` (eq. 6), the greedy solver's stopping quantity."""
    best = 0.0
    for i in range(Y.shape[0]):
        g = _scan_item(G, Y, i)[2]
        if g > best:
            best = g
    return best
