"""Sparse PCC solver on sampled pairs (Sect. 5.4 of Lourenço et al. 2015).

Only the pairs ``P`` stored in a symmetric CSR pattern carry ``c_ij`` and
``N_ij``; ``A = Y Y^T`` is kept on that pattern only, and the item with the
largest KKT violation is found with a tournament tree (a heap-ordered priority
queue over the items' gaps). An iteration then costs O(l K + l log n) with
``l`` the mean number of pairs per item, instead of O(nK). Items absent from
some partitions are handled naturally: ``N_ij`` counts the co-sampled ones.

The arithmetic mirrors :mod:`._greedy` term by term (same order of sums, same
tie-breaking), so on the all-pairs pattern both solvers take the same path.
"""

from __future__ import annotations

import numba
import numpy as np

from ._divergences import KIND_CUSTOM, KIND_L2, _deriv, _deriv2, _div
from ._greedy import (
    STATUS_CONVERGED,
    STATUS_MAX_ITER,
    STATUS_STALLED,
    _scan_item,
    trace_stride,
)


@numba.njit(cache=True, error_model="numpy")
def _objective_sparse(indptr, indices, cval, nval, Y, kind, par):
    n, K = Y.shape
    f = 0.0
    for i in range(n):
        for t in range(indptr[i], indptr[i + 1]):
            j = indices[t]
            if j <= i:
                continue
            q = 0.0
            for k in range(K):
                q += Y[i, k] * Y[j, k]
            f += nval[t] * _div(kind, par, cval[t] / nval[t], q)
    return f


@numba.njit(cache=True, error_model="numpy")
def _grad_row_sparse(indptr, indices, cval, nval, Y, A, kind, par, i, out):
    K = Y.shape[1]
    for k in range(K):
        out[k] = 0.0
    for t in range(indptr[i], indptr[i + 1]):
        j = indices[t]
        nij = nval[t]
        w = nij * _deriv(kind, par, cval[t] / nij, A[t])
        if w == 0.0:
            continue
        # w is finite (derivatives are capped at +-1e250), so no guard against inf * 0
        for k in range(K):
            out[k] += w * Y[j, k]


@numba.njit(cache=True, error_model="numpy")
def _refresh_sparse(indptr, indices, cval, nval, Y, A, G, kind, par):
    n, K = Y.shape
    for i in range(n):
        for t in range(indptr[i], indptr[i + 1]):
            j = indices[t]
            q = 0.0
            for k in range(K):
                q += Y[i, k] * Y[j, k]
            A[t] = q
    row = np.empty(K)
    for i in range(n):
        _grad_row_sparse(indptr, indices, cval, nval, Y, A, kind, par, i, row)
        for k in range(K):
            G[i, k] = row[k]


@numba.njit(cache=True, error_model="numpy", inline="always")
def _tree_better(va, a, vb, b):
    if a < 0:
        return False
    if b < 0:
        return True
    return va > vb or (va == vb and a < b)


@numba.njit(cache=True, error_model="numpy")
def _tree_build(tree, gap, n, size):
    """Tournament tree over the items' gaps; ``tree[node] = (winner's gap, winner)``.

    Keeping the winner's value in the node (siblings side by side) makes a
    match one cache line instead of three scattered reads.
    """
    for i in range(size):
        tree[size + i, 0] = gap[i] if i < n else -np.inf
        tree[size + i, 1] = i if i < n else -1
    for node in range(size - 1, 0, -1):
        _tree_match(tree, node)


@numba.njit(cache=True, error_model="numpy", inline="always")
def _tree_match(tree, node):
    va = tree[2 * node, 0]
    a = int(tree[2 * node, 1])
    vb = tree[2 * node + 1, 0]
    b = int(tree[2 * node + 1, 1])
    if _tree_better(va, a, vb, b):
        tree[node, 0] = va
        tree[node, 1] = a
        return a
    tree[node, 0] = vb
    tree[node, 1] = b
    return b


@numba.njit(cache=True, error_model="numpy")
def _tree_update(tree, gap, i, size):
    """Replay the matches on the path of leaf ``i`` after its gap changed.

    Once a match is won by the same item as before and that item is not
    ``i`` (whose gap moved), every match above is unchanged: stop there. Most
    updated items are far from the lead, so this usually ends after a few
    levels instead of log2(n).
    """
    tree[size + i, 0] = gap[i]
    node = (size + i) // 2
    while node >= 1:
        old = int(tree[node, 1])
        new = _tree_match(tree, node)
        if new == old and old != i:
            return
        node //= 2


@numba.njit(cache=True, error_model="numpy")
def _rho_sparse(cval, nval, A, lo_t, act, dlt, m, kind, par, eps):
    r = 0.0
    for s in range(m):
        t = lo_t + act[s]
        nij = nval[t]
        r += nij * dlt[s] * _deriv(kind, par, cval[t] / nij, A[t] + eps * dlt[s])
    return r


@numba.njit(cache=True, error_model="numpy")
def _rho2_sparse(cval, nval, A, lo_t, act, dlt, m, kind, par, eps):
    r = 0.0
    dr = 0.0
    for s in range(m):
        t = lo_t + act[s]
        nij = nval[t]
        p = cval[t] / nij
        q = A[t] + eps * dlt[s]
        r += nij * dlt[s] * _deriv(kind, par, p, q)
        dr += nij * dlt[s] * dlt[s] * _deriv2(kind, par, p, q)
    return r, dr


@numba.njit(cache=True, error_model="numpy")
def _step_sparse(cval, nval, A, lo_t, act, dlt, m, kind, par, rho0, emax, step_rtol):
    if kind == KIND_L2:
        s = 0.0
        for r in range(m):
            s += nval[lo_t + act[r]] * dlt[r] * dlt[r]
        if s <= 0.0:
            return emax
        eps = -rho0 / (2.0 * s)
        return min(eps, emax)
    r_hi = _rho_sparse(cval, nval, A, lo_t, act, dlt, m, kind, par, emax)
    if r_hi <= 0.0:
        return emax
    if kind != KIND_CUSTOM:
        # safeguarded Newton on rho inside the bracket [lo, hi] (rho(lo) < 0 < rho(hi)):
        # a few passes instead of the ~35 halvings of the paper's bisection (eq. 10)
        lo = 0.0
        hi = emax
        x = 0.0
        r = rho0
        dr = _rho2_sparse(cval, nval, A, lo_t, act, dlt, m, kind, par, 0.0)[1]
        for _ in range(100):
            xn = x - r / dr if dr > 0.0 else -1.0
            if not (lo < xn < hi):
                xn = 0.5 * (lo + hi)
            x = xn
            r, dr = _rho2_sparse(cval, nval, A, lo_t, act, dlt, m, kind, par, x)
            if np.isnan(r) or r > 0.0:
                hi = x
            elif r < 0.0:
                lo = x
            else:
                return x
            if abs(r) <= 1e-12 * -rho0:
                # at the root up to rounding: f(Z_x) <= f(Y) even when rho(x) is a hair > 0
                return x
            if hi - lo <= step_rtol * emax:
                break
        return lo
    lo = 0.0
    hi = emax
    r_lo = rho0
    if np.isnan(r_hi) or np.isinf(r_hi):
        r_hi = np.inf
    side = 0
    for _ in range(200):
        if hi - lo <= step_rtol * emax:
            break
        if np.isinf(r_hi) or r_hi > 100.0 * -r_lo or -r_lo > 100.0 * r_hi:
            # very lopsided bracket (e.g. a domain border at hi): false position would
            # crawl, so bisect as in eq. (10)
            x = 0.5 * (lo + hi)
        else:
            x = (lo * r_hi - hi * r_lo) / (r_hi - r_lo)
            if not (lo < x < hi):
                x = 0.5 * (lo + hi)
        r = _rho_sparse(cval, nval, A, lo_t, act, dlt, m, kind, par, x)
        if np.isnan(r) or r > 0.0:
            hi = x
            r_hi = np.inf if np.isnan(r) else r
            if side == 1 and not np.isinf(r_lo):
                r_lo *= 0.5
            side = 1
        elif r < 0.0:
            lo = x
            r_lo = r
            if side == -1 and not np.isinf(r_hi):
                r_hi *= 0.5
            side = -1
        else:
            return x
        if -r_lo <= 1e-12 * -rho0:
            break
    return lo


@numba.njit(cache=True, error_model="numpy")
def _greedy_sparse(
    indptr,
    indices,
    cval,
    nval,
    mirror,
    Y,
    A,
    G,
    kind,
    par,
    max_iter,
    tol_abs,
    step_rtol,
    trace,
    stride,
):
    n, K = Y.shape
    U = np.empty(n, np.int64)
    V = np.empty(n, np.int64)
    gap = np.empty(n)
    for i in range(n):
        U[i], V[i], gap[i] = _scan_item(G, Y, i)
    size = 1
    while size < n:
        size *= 2
    tree = np.empty((2 * size, 2))
    _tree_build(tree, gap, n, size)
    max_deg = 0
    for i in range(n):
        max_deg = max(max_deg, indptr[i + 1] - indptr[i])
    act = np.empty(max_deg, np.int64)
    dlt = np.empty(max_deg)
    yold = np.empty(K)
    row = np.empty(K)
    it = 0
    status = STATUS_MAX_ITER
    refreshed_at = -(n + 1)
    while True:
        J = int(tree[1, 1])
        best = gap[J]
        if best <= tol_abs:
            if it - refreshed_at > n // 4:
                _refresh_sparse(indptr, indices, cval, nval, Y, A, G, kind, par)
                for i in range(n):
                    U[i], V[i], gap[i] = _scan_item(G, Y, i)
                _tree_build(tree, gap, n, size)
                refreshed_at = it
                continue
            status = STATUS_CONVERGED
            break
        if it >= max_iter:
            break
        u = U[J]
        v = V[J]
        emax = Y[J, v]
        lo_t = indptr[J]
        hi_t = indptr[J + 1]
        m = 0
        for t in range(lo_t, hi_t):
            i = indices[t]
            d = Y[i, u] - Y[i, v]
            if d != 0.0:
                act[m] = t - lo_t
                dlt[m] = d
                m += 1
        rho0 = G[J, u] - G[J, v]
        eps = _step_sparse(cval, nval, A, lo_t, act, dlt, m, kind, par, rho0, emax, step_rtol)
        if not eps > 0.0:
            status = STATUS_STALLED
            break
        df = 0.0
        for s in range(m):
            t = lo_t + act[s]
            p = cval[t] / nval[t]
            a = A[t]
            df += nval[t] * (_div(kind, par, p, a + eps * dlt[s]) - _div(kind, par, p, a))
        trace[it // stride] += df
        for k in range(K):
            yold[k] = Y[J, k]
        Y[J, u] += eps
        if eps >= emax:
            Y[J, v] = 0.0
        else:
            Y[J, v] -= eps
        du = Y[J, u] - yold[u]
        dv = Y[J, v] - yold[v]
        for t in range(lo_t, hi_t):
            i = indices[t]
            nij = nval[t]
            d = Y[i, u] - Y[i, v]
            p = cval[t] / nij
            aold = A[t]
            wold = nij * _deriv(kind, par, p, aold)
            if d == 0.0:
                if wold != 0.0:
                    G[i, u] += wold * du
                    G[i, v] += wold * dv
            else:
                anew = aold + eps * d
                A[t] = anew
                A[mirror[t]] = anew
                wnew = nij * _deriv(kind, par, p, anew)
                for k in range(K):
                    G[i, k] += wnew * Y[J, k] - wold * yold[k]
            U[i], V[i], gap[i] = _scan_item(G, Y, i)
            _tree_update(tree, gap, i, size)
        _grad_row_sparse(indptr, indices, cval, nval, Y, A, kind, par, J, row)
        for k in range(K):
            G[J, k] = row[k]
        U[J], V[J], gap[J] = _scan_item(G, Y, J)
        _tree_update(tree, gap, J, size)
        it += 1
    _refresh_sparse(indptr, indices, cval, nval, Y, A, G, kind, par)
    final = 0.0
    for i in range(n):
        _, _, g = _scan_item(G, Y, i)
        if g > final:
            final = g
    return it, status, final


KERNELS = (
    "_objective_sparse",
    "_grad_row_sparse",
    "_refresh_sparse",
    "_rho_sparse",
    "_rho2_sparse",
    "_step_sparse",
    "_greedy_sparse",
)

__all__ = ["STATUS_CONVERGED", "STATUS_MAX_ITER", "STATUS_STALLED"]


def mirror_index(indptr: np.ndarray, indices: np.ndarray, n: int) -> np.ndarray:
    """Position of entry ``(j, i)`` for every stored ``(i, j)`` of a symmetric sorted CSR pattern.

    Raises
    ------
    ValueError
        If the pattern is not symmetric.
    """
    rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
    cols = indices.astype(np.int64)
    key = rows * n + cols  # sorted: CSR rows in order, sorted indices within rows
    tkey = cols * n + rows
    pos = np.searchsorted(key, tkey)
    pos = np.minimum(pos, key.size - 1)
    if key.size and not np.array_equal(key[pos], tkey):
        raise ValueError(
            "The sparse co-association pattern is not symmetric: every stored pair (i, j) "
            "needs (j, i). Build C and N with scconsensus.core.coassociation(mode='sparse')."
        )
    return pos


def solve_sparse(
    indptr,
    indices,
    cval,
    nval,
    mirror,
    Y,
    bregman,
    *,
    max_iter,
    tol_abs,
    step_rtol=1e-10,
    trace_every=None,
):
    """Greedy PCC on sampled pairs from the start ``Y`` (modified in place).

    ``trace_every`` iterations share one trace point (``None``: automatic).
    """
    k = bregman.kernels("_sparse")
    A = np.empty(indices.shape[0])
    G = np.empty_like(Y)
    kind, par = bregman.kind, bregman.param
    k["_refresh_sparse"](indptr, indices, cval, nval, Y, A, G, kind, par)
    f0 = k["_objective_sparse"](indptr, indices, cval, nval, Y, kind, par)
    # the objective change of every iteration, summed over blocks of `stride` iterations
    # so that the trace stays small (at most ~100k points) for long runs
    stride = trace_stride(max_iter, Y.shape[0] * Y.shape[1], trace_every)
    trace = np.zeros(-(-max_iter // stride) + 1)
    args = (indptr, indices, cval, nval, mirror, Y, A, G, kind, par)
    n_iter, status, final = k["_greedy_sparse"](*args, max_iter, tol_abs, step_rtol, trace, stride)
    trace = f0 + np.concatenate([[0.0], np.cumsum(trace[: -(-n_iter // stride)])])
    return trace, int(n_iter), int(status), float(final)


def objective_sparse(indptr, indices, cval, nval, Y, bregman) -> float:
    """Eq. (3) over the stored pairs ``i < j``."""
    fn = bregman.kernels("_sparse")["_objective_sparse"]
    return float(fn(indptr, indices, cval, nval, Y, bregman.kind, bregman.param))


_ = (STATUS_CONVERGED, STATUS_MAX_ITER, STATUS_STALLED)
