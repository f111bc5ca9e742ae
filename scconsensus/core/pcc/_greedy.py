"""Dense PCC solver: the greedy primal line search of Sect. 5 of Lourenço et al. (2015).

``Y`` is stored items x clusters (row ``i`` is ``y_i``). Every iteration moves
mass ``eps`` of a single item ``J`` from cluster ``V`` (in its support, largest
gradient) to cluster ``U`` (smallest gradient), choosing ``J`` with the largest
KKT violation ``g_JV - g_JU`` (eqs. 5-8); ``eps`` solves the convex 1-D problem
(9) in closed form for the squared error and by bracketing otherwise (eq. 10).
The gradients ``g_i`` are updated incrementally (PEACE eqs. 9-10) from the
one row ``y_J . Y`` of ``A = Y Y^T`` that changes, so an iteration costs O(nK)
instead of O(n^2 K).
"""

from __future__ import annotations

import numba
import numpy as np

from ..._validation import check_int
from ._divergences import _deriv, _div, register_kernels
from ._linesearch import _delta_objective, _line_search, _move
from ._parallel import ordered_sum, serial_twin, variant

STATUS_MAX_ITER = 0
STATUS_CONVERGED = 1
STATUS_STALLED = 2


@numba.njit(cache=True, error_model="numpy")
def _scan_item(G, Y, i):
    """``U_i = argmin_k g_ik``, ``V_i = argmax_{k in supp(y_i)} g_ik`` and the gap (eq. 6)."""
    K = Y.shape[1]
    u = 0
    gu = G[i, 0]
    v = -1
    gv = -np.inf
    for k in range(K):
        g = G[i, k]
        if g < gu:
            gu = g
            u = k
        if Y[i, k] > 0.0 and (v < 0 or g > gv):
            gv = g
            v = k
    if v < 0 or v == u:
        return u, u, 0.0
    gap = gv - gu
    if not gap > 0.0:  # also catches NaN, which must never steer the search
        gap = 0.0
    return u, v, gap


@numba.njit(cache=True, error_model="numpy", inline="always")
def _objective_row(C, N, Y, kind, par, i):
    n, K = Y.shape
    f = 0.0
    for j in range(i + 1, n):
        nij = N[i, j]
        if nij <= 0:
            continue
        q = 0.0
        for k in range(K):
            q += Y[i, k] * Y[j, k]
        f += nij * _div(kind, par, C[i, j] / nij, q)
    return f


@serial_twin
@numba.njit(cache=True, error_model="numpy", parallel=True)
def _objective_dense(C, N, Y, kind, par):
    # rows r and n - 1 - r go together (n - 1 pairs per task, evenly shared between
    # threads); the partial sums are added in a fixed order: the same bits for any threads
    n = Y.shape[0]
    half = (n + 1) // 2
    part = np.zeros(half)
    for r in numba.prange(half):
        f = _objective_row(C, N, Y, kind, par, r)
        if n - 1 - r != r:
            f += _objective_row(C, N, Y, kind, par, n - 1 - r)
        part[r] = f
    return ordered_sum(part)


@numba.njit(cache=True, error_model="numpy")
def _grad_row_dense(C, N, Y, arow, kind, par, i, out):
    """``g_i`` (eq. 7) given ``arow[j] = y_i . y_j``."""
    n, K = Y.shape
    for k in range(K):
        out[k] = 0.0
    for j in range(n):
        if j == i:
            continue
        nij = N[i, j]
        if nij <= 0:
            continue
        w = nij * _deriv(kind, par, C[i, j] / nij, arow[j])
        if w == 0.0:
            continue
        # w is finite (derivatives are capped at +-1e250), so no guard against inf * 0
        for k in range(K):
            out[k] += w * Y[j, k]


@numba.njit(cache=True, error_model="numpy")
def _a_row(Y, J, arow):
    """``arow[i] = y_i . y_J``: the one row of ``A = Y Y^T`` an iteration needs."""
    n, K = Y.shape
    for i in range(n):
        q = 0.0
        for k in range(K):
            q += Y[i, k] * Y[J, k]
        arow[i] = q


@numba.njit(cache=True, error_model="numpy")
def _refresh_dense(C, N, Y, G, kind, par):
    """Exact gradients of every item (lines 2-5 of Algorithm 1), O(n^2 K)."""
    n, K = Y.shape
    row = np.empty(K)
    arow = np.empty(n)
    for i in range(n):
        _a_row(Y, i, arow)
        _grad_row_dense(C, N, Y, arow, kind, par, i, row)
        for k in range(K):
            G[i, k] = row[k]


@numba.njit(cache=True, error_model="numpy")
def _scan_all(G, Y, U, V, gap):
    """:func:`_scan_item` for every item."""
    for i in range(Y.shape[0]):
        U[i], V[i], gap[i] = _scan_item(G, Y, i)


@numba.njit(cache=True, error_model="numpy")
def _gather_dense(C, N, Y, arow, J, u, v, p, w, q, dlt):
    """The pairs ``(J, i)`` a move from ``v`` to ``u`` changes, into the search buffers."""
    m = 0
    for i in range(Y.shape[0]):
        if i == J or N[J, i] <= 0:
            continue
        d = Y[i, u] - Y[i, v]
        if d != 0.0:
            nij = N[J, i]
            p[m] = C[J, i] / nij
            w[m] = nij
            q[m] = arow[i]
            dlt[m] = d
            m += 1
    return m


@numba.njit(cache=True, error_model="numpy")
def _update_dense(C, N, Y, G, arow, J, u, v, eps, yold, kind, par, U, V, gap):
    """Patch the gradients (PEACE eqs. 9-10), ``arow`` and the scans of ``J``'s partners."""
    n, K = Y.shape
    du = Y[J, u] - yold[u]
    dv = Y[J, v] - yold[v]
    for i in range(n):
        if i == J:
            continue
        nij = N[J, i]
        if nij <= 0:
            continue
        d = Y[i, u] - Y[i, v]
        p = C[J, i] / nij
        aold = arow[i]
        wold = nij * _deriv(kind, par, p, aold)
        if d == 0.0:
            # y_i . y_J unchanged: only entries u, v of g_i move
            if wold != 0.0:
                G[i, u] += wold * du
                G[i, v] += wold * dv
        else:
            anew = aold + eps * d
            arow[i] = anew
            wnew = nij * _deriv(kind, par, p, anew)
            for k in range(K):
                G[i, k] += wnew * Y[J, k] - wold * yold[k]
        U[i], V[i], gap[i] = _scan_item(G, Y, i)


@numba.njit(cache=True, error_model="numpy")
def _greedy_dense(C, N, Y, G, kind, par, max_iter, tol_abs, step_rtol, trace, stride):
    """Run Algorithm 1 in place on ``Y`` (with ``G`` exact on entry).

    The paper keeps all of ``A = Y Y^T`` and patches row and column ``J``
    after each move; here the single row ``y_J . Y`` an iteration reads is
    recomputed in O(nK) instead (the order of the gradient update anyway):
    no ``n x n`` float matrix, and no strided column writes, which dominated
    the iteration time at n = 2,000.

    Returns ``(n_iter, status, final_gap)``; ``trace[t // stride]`` accumulates
    the change of the objective at iteration ``t``.
    """
    n, K = Y.shape
    U = np.empty(n, np.int64)
    V = np.empty(n, np.int64)
    gap = np.empty(n)
    _scan_all(G, Y, U, V, gap)
    p, w, q, dlt, arow = np.empty(n), np.empty(n), np.empty(n), np.empty(n), np.empty(n)
    yold = np.empty(K)
    it = 0
    status = STATUS_MAX_ITER
    refreshed_at = -(n + 1)
    while True:
        J = np.argmax(gap)
        if gap[J] <= tol_abs:
            if it - refreshed_at > n // 4:
                # incremental gradients drift: confirm convergence on exact ones
                _refresh_dense(C, N, Y, G, kind, par)
                _scan_all(G, Y, U, V, gap)
                refreshed_at = it
                continue
            status = STATUS_CONVERGED
            break
        if it >= max_iter:
            break
        u, v, emax = U[J], V[J], Y[J, V[J]]
        _a_row(Y, J, arow)
        m = _gather_dense(C, N, Y, arow, J, u, v, p, w, q, dlt)
        eps = _line_search(p, w, q, dlt, m, kind, par, G[J, u] - G[J, v], emax, step_rtol)
        if not eps > 0.0:
            status = STATUS_STALLED
            break
        trace[it // stride] += _delta_objective(p, w, q, dlt, m, kind, par, eps)
        for k in range(K):  # not yold[:] = Y[J]: 3.7 s to compile its shape check
            yold[k] = Y[J, k]
        _move(Y[J], u, v, eps, emax)
        _update_dense(C, N, Y, G, arow, J, u, v, eps, yold, kind, par, U, V, gap)
        _grad_row_dense(C, N, Y, arow, kind, par, J, G[J])
        U[J], V[J], gap[J] = _scan_item(G, Y, J)
        it += 1
    # exact gradients for the reported KKT gap
    _refresh_dense(C, N, Y, G, kind, par)
    _scan_all(G, Y, U, V, gap)
    return it, status, gap.max()


def trace_stride(max_iter: int, nK: int, trace_every: int | None = None) -> int:
    """Iterations per recorded objective value.

    Automatic: one point every ``nK // 1000`` iterations and at most ~10,000
    points, so the trace buffer stays small even when ``max_iter = 50 n K``
    reaches 10^9 (the changes of the iterations in a block are summed, so the
    recorded trace is still the exact objective at the block ends).
    """
    if trace_every is not None:
        return check_int(trace_every, "trace_every", 1)
    return max(1, nK // 1000, -(-int(max_iter) // 10_000))


def solve_dense(C, N, Y, bregman, *, max_iter, tol_abs, step_rtol=1e-10, trace_every=None):
    """Greedy PCC on dense ``C``, ``N`` from the start ``Y`` (modified in place).

    Returns ``(objective_trace, n_iter, status, final_gap)``.
    """
    G = np.empty_like(Y)
    bregman.kernel(_refresh_dense)(C, N, Y, G, bregman.kind, bregman.param)
    f0 = objective_dense(C, N, Y, bregman)
    # the objective change of every iteration, summed over blocks of `stride` iterations
    # so that the trace stays small (at most ~100k points) for long runs
    stride = trace_stride(max_iter, Y.shape[0] * Y.shape[1], trace_every)
    trace = np.zeros(-(-max_iter // stride) + 1)
    n_iter, status, final = bregman.kernel(_greedy_dense)(
        C, N, Y, G, bregman.kind, bregman.param, max_iter, tol_abs, step_rtol, trace, stride
    )
    trace = f0 + np.concatenate([[0.0], np.cumsum(trace[: -(-n_iter // stride)])])
    return trace, int(n_iter), int(status), float(final)


def objective_dense(C, N, Y, bregman) -> float:
    """Eq. (3) over all pairs ``i < j`` with ``N_ij > 0``."""
    kernel = variant(bregman.kernel(_objective_dense), Y.shape[0])
    return float(kernel(C, N, Y, bregman.kind, bregman.param))


register_kernels(_refresh_dense, _objective_dense, _greedy_dense)
