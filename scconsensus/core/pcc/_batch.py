"""Batch PCC solver: all memberships move at once, then a greedy polish.

The greedy line search of Sect. 5 moves one item per iteration and needs
``~10-20 nK`` iterations. Here every iteration takes one scaled projected
gradient step on all rows ``y_i`` together,

    y_i <- Proj_simplex(y_i - eta * g_i / w_i),    w_i = sum_j N_ij,

with the full gradient ``G = (N o d'(P, Y Y^T)) Y`` (eq. 7 for every item;
BLAS on row blocks for dense input, O(nnz K) on the pair pattern for sparse
input) and a backtracking (Armijo) choice of ``eta`` on the objective, so
the objective never increases by construction. The Euclidean projection
sets memberships exactly to zero, so supports shrink as in the greedy
solver and the same KKT gap (eq. 6) measures convergence. Projected
gradient converges linearly and stalls near ill-conditioned optima; when it
does, the paper's greedy solver finishes from the batch point to the same
tolerance (a "polish"), which can only lower the objective further.
"""

from __future__ import annotations

import numba
import numpy as np

from . import _greedy, _sparse
from ._divergences import KIND_CUSTOM, _deriv, _deriv2, _div
from ._greedy import STATUS_CONVERGED, STATUS_MAX_ITER, _scan_item


@numba.njit(cache=True, error_model="numpy", inline="always")
def _curv(kind, par, p, q):
    # the built-in second derivatives; a custom divergence falls back to unit curvature
    # (only the step scaling uses it, the backtracking keeps the method monotone)
    if kind == KIND_CUSTOM:
        return 1.0
    return _deriv2(kind, par, p, q)


@numba.njit(cache=True, error_model="numpy", inline="always")
def _safe_curv(kind, par, p, q):
    # +inf (or inf * 0 = NaN) at the border of the domain: cap, as the greedy kernels cap d'
    c = _curv(kind, par, p, q)
    if not c <= 1e250:
        return 1e250
    return max(c, 0.0)


@numba.njit(cache=True, error_model="numpy", inline="always")
def _safe_deriv(kind, par, p, q):
    # d' is +-inf at q in {0, 1} for some divergences (power family); keep the gradient
    # products free of inf * 0 = NaN
    d = _deriv(kind, par, p, q)
    if d > 1e250:
        return 1e250
    if d < -1e250:
        return -1e250
    return d


@numba.njit(cache=True, error_model="numpy")
def _dense_block(C, N, Q, Q2, b0, kind, par):
    """Overwrite ``Q[r, j] = y_i . y_j`` (``i = b0 + r``) by ``N_ij d'(p_ij, q_ij)``.

    ``Q2`` receives ``N_ij d''(p_ij, q_ij)``; both are zero on the diagonal and
    where ``N_ij = 0``. Returns the block's share of the objective (pairs ``j > i``).
    """
    B, n = Q.shape
    f = 0.0
    for r in range(B):
        i = b0 + r
        for j in range(n):
            nij = N[i, j]
            if j == i or nij <= 0:
                Q[r, j] = 0.0
                Q2[r, j] = 0.0
                continue
            p = C[i, j] / nij
            q = Q[r, j]
            if j > i:
                f += nij * _div(kind, par, p, q)
            Q2[r, j] = nij * _safe_curv(kind, par, p, q)
            Q[r, j] = nij * _safe_deriv(kind, par, p, q)
    return f


@numba.njit(cache=True, error_model="numpy")
def _pass_sparse(indptr, indices, cval, nval, Y, G, H, kind, par):
    """Objective, full gradient and diagonal curvature on the stored pairs, O(nnz K)."""
    n, K = Y.shape
    f = 0.0
    for i in range(n):
        for k in range(K):
            G[i, k] = 0.0
            H[i, k] = 0.0
        for t in range(indptr[i], indptr[i + 1]):
            j = indices[t]
            q = 0.0
            for k in range(K):
                q += Y[i, k] * Y[j, k]
            nij = nval[t]
            p = cval[t] / nij
            if j > i:
                f += nij * _div(kind, par, p, q)
            w2 = nij * _safe_curv(kind, par, p, q)
            w = nij * _safe_deriv(kind, par, p, q)
            for k in range(K):
                G[i, k] += w * Y[j, k]
                H[i, k] += w2 * Y[j, k] * Y[j, k]
    return f


@numba.njit(cache=True, error_model="numpy")
def _project_step(Y, G, H, eta, out):
    """``out_i = argmin_{x in simplex} |x - (y_i - eta g_i / h_i)|^2_{diag(h_i)}``.

    A projected Newton step with the diagonal of the Hessian as metric (the
    Euclidean sort-based projection of Held et al. 1974, weighted). Returns
    ``<G, out - Y>``, which is <= 0.
    """
    n, K = Y.shape
    v = np.empty(K)
    d = np.empty(K)
    bp = np.empty(K)
    order = np.empty(K, np.int64)
    slope = 0.0
    for i in range(n):
        hmax = 0.0
        for k in range(K):
            if H[i, k] > hmax:
                hmax = H[i, k]
        floor = 1e-12 * hmax if hmax > 0.0 else 1.0
        for k in range(K):
            d[k] = max(H[i, k], floor)
            v[k] = Y[i, k] - eta * G[i, k] / d[k]
            bp[k] = v[k] * d[k]  # x_k > 0 iff theta < bp_k
        order[:] = np.argsort(bp)
        sv = 0.0
        sw = 0.0
        theta = 0.0
        for r in range(K):
            k = order[K - 1 - r]
            sv += v[k]
            sw += 1.0 / d[k]
            t = (sv - 1.0) / sw
            if bp[k] > t:
                theta = t
        tot = 0.0
        for k in range(K):
            x = v[k] - theta / d[k]
            if x < 0.0:
                x = 0.0
            out[i, k] = x
            tot += x
        # renormalise away rounding so rows stay exactly on the simplex
        for k in range(K):
            out[i, k] /= tot
            slope += G[i, k] * (out[i, k] - Y[i, k])
    return slope


@numba.njit(cache=True, error_model="numpy")
def _kkt_gap(G, Y):
    """``max_i (g_iV - g_iU)`` (eq. 6), the greedy solver's stopping quantity."""
    best = 0.0
    for i in range(Y.shape[0]):
        g = _scan_item(G, Y, i)[2]
        if g > best:
            best = g
    return best


KERNELS = ("_dense_block", "_pass_sparse")


class _DenseEvaluator:
    """Objective and gradient of dense input, in row blocks of at most ``block_bytes``."""

    def __init__(self, C, N, bregman, block_bytes=32 << 20):
        self.C, self.N = C, N
        self.kind, self.par = bregman.kind, bregman.param
        self.k = bregman.kernels("_batch")["_dense_block"]
        n = N.shape[0]
        self.rows = int(max(1, min(n, block_bytes // (16 * n))))

    def __call__(self, Y, G, H):
        n = Y.shape[0]
        Ysq = Y * Y
        Q2 = np.empty((self.rows, n))
        f = 0.0
        for b0 in range(0, n, self.rows):
            b1 = min(n, b0 + self.rows)
            Q = Y[b0:b1] @ Y.T  # reused in place for the first-derivative weights
            f += self.k(self.C, self.N, Q, Q2[: b1 - b0], b0, self.kind, self.par)
            np.dot(Q, Y, out=G[b0:b1])
            np.dot(Q2[: b1 - b0], Ysq, out=H[b0:b1])
        return f


class _SparseEvaluator:
    def __init__(self, indptr, indices, cval, nval, bregman):
        self.args = (indptr, indices, cval, nval)
        self.kind, self.par = bregman.kind, bregman.param
        self.k = bregman.kernels("_batch")["_pass_sparse"]

    def __call__(self, Y, G, H):
        return self.k(*self.args, Y, G, H, self.kind, self.par)


def _batch_phase(evaluate, Y, *, max_iter, tol_abs, stall_rtol, sigma=1e-4):
    """Accelerated projected Newton-diagonal steps with Armijo backtracking, in place on ``Y``.

    Each step is ``x = Proj_h(z - eta g(z) / h(z))`` (see :func:`_project_step`)
    from ``z = y`` or, with Nesterov momentum, from the extrapolated point
    ``z = y + beta (y - y_prev)`` (clipped back onto the simplex). ``eta`` is
    backtracked until the Armijo condition holds at ``z``, and a step is
    accepted only if it does not raise the objective above the current one;
    otherwise momentum restarts (O'Donoghue & Candès 2015) and a plain step
    from ``y`` follows, so the objective never increases by construction.

    Returns ``(trace, n_iter, n_eval, converged)``; ``trace`` holds the
    objective after every accepted step. Stops at the KKT tolerance, at
    ``max_iter``, or once 10 steps together lower the objective by less than
    ``stall_rtol`` relative.
    """
    G, H = np.empty_like(Y), np.empty_like(Y)
    Gz, Hz = np.empty_like(Y), np.empty_like(Y)
    Gt, Ht = np.empty_like(Y), np.empty_like(Y)
    Yt = np.empty_like(Y)
    Yprev = Y.copy()
    f = evaluate(Y, G, H)
    n_eval = 1
    trace = [f]
    eta = 1.0
    t = 1.0
    window = 10
    it = 0
    while True:
        if _kkt_gap(G, Y) <= tol_abs:
            return trace, it, n_eval, True
        if it >= max_iter:
            break
        if len(trace) > window and trace[-1 - window] - f <= stall_rtol * abs(f):
            break
        t_next = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
        beta = (t - 1.0) / t_next
        if beta > 0.0:
            Z = Y + beta * (Y - Yprev)
            np.clip(Z, 0.0, None, out=Z)
            Z /= Z.sum(axis=1, keepdims=True)
            fz = evaluate(Z, Gz, Hz)
            n_eval += 1
            if not np.isfinite(fz):
                t = 1.0
                continue
            base = (Z, fz, Gz, Hz)
        else:
            base = (Y, f, G, H)
        Zb, fb, Gb, Hb = base
        accepted = False
        for _ in range(60):
            slope = _project_step(Zb, Gb, Hb, eta, Yt)
            if not slope < 0.0:
                break  # projected gradient is zero: nothing to gain at any step
            ft = evaluate(Yt, Gt, Ht)
            n_eval += 1
            if ft <= fb + sigma * slope:
                accepted = True
                break
            eta *= 0.5
        if not (accepted and ft <= f):
            if beta > 0.0:
                t = 1.0  # restart momentum; a plain step from y follows
                continue
            break
        Yprev[...] = Y
        Y[...] = Yt
        G, Gt = Gt, G
        H, Ht = Ht, H
        f = ft
        trace.append(f)
        t = t_next
        eta *= 1.5  # try a longer step next time; backtracking brings it down again
        it += 1
    return trace, it, n_eval, False


def solve_batch(
    data,
    Y,
    bregman,
    *,
    sparse,
    max_iter,
    tol_abs,
    polish=True,
    stall_rtol=1e-12,
    trace_every=None,
):
    """Batch PCC from the start ``Y`` (modified in place), then greedy polish.

    ``data`` is ``(C, N)`` for dense input, ``(indptr, indices, cval, nval,
    mirror)`` for sparse. ``max_iter`` caps batch steps plus polish
    iterations together. Returns ``(objective_trace, n_iter, status,
    final_gap, n_polish)``.
    """
    if sparse:
        indptr, indices, cval, nval, mirror = data
        evaluate = _SparseEvaluator(indptr, indices, cval, nval, bregman)
    else:
        C, N = data
        evaluate = _DenseEvaluator(C, N, bregman)
    trace, n_batch, _, converged = _batch_phase(
        evaluate, Y, max_iter=min(max_iter, 10_000), tol_abs=tol_abs, stall_rtol=stall_rtol
    )
    trace = np.asarray(trace, dtype=np.float64)
    left = max_iter - n_batch
    if converged or not polish or left <= 0:
        G = np.empty_like(Y)
        evaluate(Y, G, np.empty_like(Y))
        gap = float(_kkt_gap(G, Y))
        status = STATUS_CONVERGED if converged else STATUS_MAX_ITER
        return trace, n_batch, status, gap, 0
    # the batch steps stalled short of the tolerance: the paper's solver finishes
    if sparse:
        ptrace, n_pol, status, gap = _sparse.solve_sparse(
            indptr,
            indices,
            cval,
            nval,
            mirror,
            Y,
            bregman,
            max_iter=left,
            tol_abs=tol_abs,
            trace_every=trace_every,
        )
    else:
        ptrace, n_pol, status, gap = _greedy.solve_dense(
            C, N, Y, bregman, max_iter=left, tol_abs=tol_abs, trace_every=trace_every
        )
    return np.concatenate([trace, ptrace[1:]]), n_batch + n_pol, status, gap, n_pol
