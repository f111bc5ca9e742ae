"""Batch PCC solver: all memberships move at once, by BLAS-bound iterations.

The greedy line search of Sect. 5 moves one item per iteration and needs
``~nK`` iterations of O(nK) work each. Here every iteration moves every row
``y_i`` at once along a projected diagonal-Newton direction

    x_i = argmin_{x in simplex} |x - (y_i - eta g_i / h_i)|^2_{diag(h_i)},
    D = X - Y,

with the full gradient ``G = (N o d'(P, Y Y^T)) Y`` and the diagonal of each
item's Hessian ``h_ik = sum_j N_ij d''(p_ij, q_ij) y_jk^2`` (eq. 7 for every
item at once). Along the segment ``Y + t D`` every ``q_ij`` is a quadratic in
``t``, ``a_ij + t b_ij + t^2 e_ij`` with ``A = Y Y^T``, ``B = Y D^T + D Y^T``,
``E = D D^T``, so once these three are formed (BLAS ``syrk``/``syr2k`` for
dense input, O(nnz K) on the pair pattern for sparse input) the exact line
search over ``t`` costs only elementwise passes, like the greedy solver's
1-D search (eq. 9) but for all items together. The step is accepted only if
the objective does not increase, so the method is monotone by construction;
it stops on the greedy solver's KKT gap (eq. 6).

Memberships that the full projected step sets to zero but a shorter step
``t < 1`` leaves at a tiny value are set to zero ("snapped") when the
objective allows it, so supports shrink as in the greedy solver and the KKT
gap, which counts every positive entry, can close. Should the batch steps
stall short of the tolerance (rounding), the paper's greedy solver finishes
from the batch point (a "polish"), which can only lower the objective.
"""

from __future__ import annotations

import numba
import numpy as np
from scipy.linalg.blas import dsymm, dsyr2k, dsyrk

from . import _greedy, _sparse
from ._divergences import KIND_CUSTOM, KIND_KL, _deriv, _deriv2, _div
from ._greedy import STATUS_CONVERGED, STATUS_MAX_ITER, STATUS_STALLED, _scan_item

# snap a membership to zero when the full projected step zeroes it and what is left of
# it after the line search is below this; larger residues decay by themselves
SNAP = 1e-3
# the multiplicative phase ends once a step lowers the objective by less than this
# (relative): it is fast far from the optimum but cannot zero memberships
EG_RTOL = 1e-2
# seed mass that lets a multiplicative step move into a cluster an item has none of
EG_SEED = 1e-3
# Newton-phase step scale: x4 after a whole step, x t after a step cut to t; measured on
# dense n = 2,000, K = 30, KL from the spectral start: 54 steps (x2: 63, fixed: 175+;
# measured before the conjugate factor was capped)
ETA_GROW = 4.0
# the conjugate direction may extend the projected step up to this factor
SEG_MAX = 2.0
# a conjugate factor above 1 means the last two steps disagree: a larger one sent most of
# the direction into memberships about to hit 0 (segments of 1e-4) on the Sect. 7.3 shape;
# capped at 1, dense n = 2,000, K = 30 takes 53 steps instead of 58
BETA_MAX = 1.0


@numba.njit(cache=True, error_model="numpy")
def _safe_curv(kind, par, p, q):
    # a custom divergence has no closed-form d'': unit curvature (only the step scaling
    # and the Newton guess of the line search use it; both are safeguarded); +inf at the
    # border of the domain is capped, as the greedy kernels cap d'
    if kind == KIND_CUSTOM:
        return 1.0
    c = _deriv2(kind, par, p, q)
    if not c <= 1e250:
        return 1e250
    return max(c, 0.0)


@numba.njit(cache=True, error_model="numpy")
def _safe_deriv(kind, par, p, q):
    # d' is +-inf at q in {0, 1} for some divergences (power family); keep the gradient
    # products free of inf * 0 = NaN
    d = _deriv(kind, par, p, q)
    if d > 1e250:
        return 1e250
    if d < -1e250:
        return -1e250
    return d


@numba.njit(cache=True, error_model="numpy", inline="always")
def _d1_d2(kind, par, p, q):
    """``(d', d'')`` capped as :func:`_safe_deriv`, :func:`_safe_curv`; KL with 2 divisions."""
    if kind != KIND_KL:
        return _safe_deriv(kind, par, p, q), _safe_curv(kind, par, p, q)
    # the hot case, written out: 1/q and 1/(1-q) once each instead of four divisions
    q = min(max(q, 0.0), 1.0)
    d1 = 0.0
    d2 = 0.0
    if p > 0.0:
        r = 1.0 / max(q, 1e-250)
        d1 -= p * r
        d2 += p * r * r
    if p < 1.0:
        r = 1.0 / max(1.0 - q, 1e-250)
        d1 += (1.0 - p) * r
        d2 += (1.0 - p) * r * r
    return max(min(d1, 1e250), -1e250), min(d2, 1e250)


@numba.njit(cache=True, error_model="numpy")
def _dense_weights(P, N, A, W, W2, kind, par):
    """Objective at ``q = A``; upper triangles of ``W = N d'`` and ``W2 = N d''``.

    ``A``, ``W``, ``W2`` are Fortran-ordered (BLAS output), read and written on
    their upper triangle ``i < j`` column by column; ``P``, ``N`` are symmetric
    and C-ordered, read as ``[j, i]`` so that every inner loop is contiguous.
    """
    n = A.shape[0]
    f = 0.0
    for j in range(n):
        W[j, j] = 0.0
        W2[j, j] = 0.0
        for i in range(j):
            nij = N[j, i]
            if nij <= 0:
                W[i, j] = 0.0
                W2[i, j] = 0.0
                continue
            p = P[j, i]
            q = A[i, j]
            if kind == KIND_KL and p == 0.0 and q == 0.0:
                # most pairs near a KL optimum: never co-clustered, disjoint supports;
                # d = 0, d' = d'' = 1 exactly, without the logarithm and divisions
                W[i, j] = nij
                W2[i, j] = nij
                continue
            f += nij * _div(kind, par, p, q)
            d1, d2 = _d1_d2(kind, par, p, q)
            W[i, j] = nij * d1
            W2[i, j] = nij * d2
    return f


@numba.njit(cache=True, error_model="numpy")
def _dense_phi(P, N, A, B, E, t, kind, par):
    """``phi'(t)``, ``phi''(t)`` of ``phi(t) = f(Y + t D)``, from ``q = a + t b + t^2 e``.

    No logarithms: the step is chosen on the derivatives alone and the objective
    is checked once, exactly, at the point accepted.
    """
    n = A.shape[0]
    df = 0.0
    d2f = 0.0
    for j in range(n):
        for i in range(j):
            nij = N[j, i]
            if nij <= 0:
                continue
            e = E[i, j]
            b = B[i, j]
            if b == 0.0 and e == 0.0:
                continue  # q does not move along the segment: adds exactly 0 to both
            p = P[j, i]
            q = A[i, j] + t * (b + t * e)
            dq = b + 2.0 * t * e
            d1, d2 = _d1_d2(kind, par, p, q)
            df += nij * d1 * dq
            d2f += nij * (d2 * dq * dq + 2.0 * e * d1)
    return df, d2f


@numba.njit(cache=True, error_model="numpy")
def _sparse_weights(indptr, indices, cval, nval, mirror, Y, A, W, W2, G, H, kind, par):
    """Objective, ``A``, ``W = N d'``, ``W2 = N d''`` on the pairs; ``G``, ``H`` by item.

    Each unordered pair is evaluated once (``j > i``) and mirrored.
    """
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
            nij = nval[t]
            p = cval[t] / nij
            f += nij * _div(kind, par, p, q)
            m = mirror[t]
            A[t] = A[m] = q
            d1, d2 = _d1_d2(kind, par, p, q)
            W[t] = W[m] = nij * d1
            W2[t] = W2[m] = nij * d2
    for i in range(n):
        for k in range(K):
            G[i, k] = 0.0
            H[i, k] = 0.0
        for t in range(indptr[i], indptr[i + 1]):
            j = indices[t]
            w = W[t]
            w2 = W2[t]
            for k in range(K):
                G[i, k] += w * Y[j, k]
                H[i, k] += w2 * Y[j, k] * Y[j, k]
    return f


@numba.njit(cache=True, error_model="numpy")
def _sparse_quad(indptr, indices, Y, D, B, E):
    """``b = y_i . d_j + d_i . y_j`` and ``e = d_i . d_j`` on the pairs ``j > i``."""
    n, K = Y.shape
    for i in range(n):
        for t in range(indptr[i], indptr[i + 1]):
            j = indices[t]
            if j <= i:
                continue
            b = 0.0
            e = 0.0
            for k in range(K):
                b += Y[i, k] * D[j, k] + D[i, k] * Y[j, k]
                e += D[i, k] * D[j, k]
            B[t] = b
            E[t] = e


@numba.njit(cache=True, error_model="numpy")
def _sparse_phi(indptr, indices, cval, nval, A, B, E, s, kind, par):
    """:func:`_dense_phi` on the stored pairs ``j > i``."""
    n = indptr.shape[0] - 1
    df = 0.0
    d2f = 0.0
    for i in range(n):
        for t in range(indptr[i], indptr[i + 1]):
            if indices[t] <= i:
                continue
            nij = nval[t]
            p = cval[t] / nij
            e = E[t]
            q = A[t] + s * (B[t] + s * e)
            dq = B[t] + 2.0 * s * e
            d1, d2 = _d1_d2(kind, par, p, q)
            df += nij * d1 * dq
            d2f += nij * (d2 * dq * dq + 2.0 * e * d1)
    return df, d2f


@numba.njit(cache=True, error_model="numpy")
def _project_step(Y, G, H, eta, out):
    """``out_i = argmin_{x in simplex} |x - (y_i - eta g_i / h_i)|^2_{diag(h_i)}``.

    A projected Newton step with the diagonal of the Hessian as metric (the
    sort-based projection of Held et al. 1974, weighted). Returns
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
def _eg_step(Y, G, wrow, eta, seed, out):
    """Exponentiated-gradient target ``x_i ~ y_i exp(-eta (g_i - min g_i) / w_i)``.

    An item whose best cluster ``U`` carries no mass gets ``seed`` there first,
    so that clusters can re-enter a support (multiplicative steps alone never
    revive a zero). Returns ``<G, out - Y>`` (<= 0: mass moves to lower gradients).
    """
    n, K = Y.shape
    slope = 0.0
    for i in range(n):
        u = 0
        gmin = G[i, 0]
        for k in range(K):
            if G[i, k] < gmin:
                gmin = G[i, k]
                u = k
        tot = 0.0
        for k in range(K):
            y = Y[i, k]
            if k == u and y == 0.0:
                y = seed
            x = y * np.exp(-eta * (G[i, k] - gmin) / wrow[i])
            out[i, k] = x
            tot += x
        for k in range(K):
            out[i, k] /= tot
            slope += G[i, k] * (out[i, k] - Y[i, k])
    return slope


@numba.njit(cache=True, error_model="numpy")
def _cg_direction(Y, R, Dprev, beta, D):
    """``D = R + beta Dprev`` row by row, ``R`` alone where that would leave the simplex at once.

    Returns the largest ``s`` with ``Y + s D >= 0``.
    """
    n, K = Y.shape
    smax = np.inf
    for i in range(n):
        ok = True
        for k in range(K):
            d = R[i, k] + beta * Dprev[i, k]
            if Y[i, k] <= 0.0 and d < 0.0:
                ok = False
                break
        for k in range(K):
            d = R[i, k] + beta * Dprev[i, k] if ok else R[i, k]
            D[i, k] = d
            if d < 0.0:
                r = Y[i, k] / -d
                if r < smax:
                    smax = r
    return smax


@numba.njit(cache=True, error_model="numpy")
def _step_dir(Y, D, s, X, snap, out):
    """``out = Y + s D``, rows renormalised; returns how many entries were snapped to 0.

    Snapped: entries at the border (rounding), and those the full projected step
    ``X`` zeroes that are left below ``snap``.
    """
    n, K = Y.shape
    count = 0
    for i in range(n):
        tot = 0.0
        for k in range(K):
            y = Y[i, k] + s * D[i, k]
            if y < 1e-15 or (X[i, k] == 0.0 and y < snap):
                if y > 0.0:
                    count += 1
                y = 0.0
            out[i, k] = y
            tot += y
        for k in range(K):
            out[i, k] /= tot
    return count


@numba.njit(cache=True, error_model="numpy")
def _kkt_gap(G, Y):
    """``max_i (g_iV - g_iU)`` (eq. 6), the greedy solver's stopping quantity."""
    best = 0.0
    for i in range(Y.shape[0]):
        g = _scan_item(G, Y, i)[2]
        if g > best:
            best = g
    return best


# helpers first: a custom divergence re-specialises them before the kernels that call them
KERNELS = (
    "_safe_curv",
    "_safe_deriv",
    "_d1_d2",
    "_dense_weights",
    "_dense_phi",
    "_sparse_weights",
    "_sparse_phi",
)


class _DenseEvaluator:
    """Objective, gradient and segment search on dense ``C, N`` (all pairs).

    ``A = Y Y^T``, ``B``, ``E`` are formed by BLAS on their upper triangle
    (``syrk``, ``syr2k``) and the gradients by ``symm``: O(n^2 K) flops at
    BLAS speed, plus O(n^2) elementwise divergence terms in numba.
    """

    def __init__(self, C, N, bregman):
        n = N.shape[0]
        self.N = N
        self.wrow = N.sum(axis=1, dtype=np.float64) - np.diag(N)
        self.wrow[self.wrow <= 0] = 1.0
        with np.errstate(divide="ignore", invalid="ignore"):
            self.P = np.where(N > 0, C / np.where(N > 0, N, 1), 0.0).astype(np.float64)
        self.kind, self.par = bregman.kind, bregman.param
        self.k = bregman.kernels("_batch")
        self.A = np.zeros((n, n), order="F")
        self.B = np.zeros((n, n), order="F")
        self.E = np.zeros((n, n), order="F")

    def weights(self, Y, G, H):
        """Objective at ``Y``; ``G``, ``H`` overwritten with the gradient and curvature."""
        Yf = np.asfortranarray(Y)
        self.A = dsyrk(1.0, Yf, c=self.A, overwrite_c=1)
        # B and E are free until the next segment: they take W and W2
        f = self.k["_dense_weights"](self.P, self.N, self.A, self.B, self.E, self.kind, self.par)
        G[...] = dsymm(1.0, self.B, Yf)
        H[...] = dsymm(1.0, self.E, np.asfortranarray(Y * Y))
        return f

    def segment(self, Y, D):
        """Prepare ``phi`` along ``Y + t D`` (``A`` is that of the last :meth:`weights`)."""
        Yf, Df = np.asfortranarray(Y), np.asfortranarray(D)
        self.B = dsyr2k(1.0, Yf, Df, c=self.B, overwrite_c=1)
        self.E = dsyrk(1.0, Df, c=self.E, overwrite_c=1)

    def phi(self, t):
        return self.k["_dense_phi"](
            self.P, self.N, self.A, self.B, self.E, float(t), self.kind, self.par
        )


class _SparseEvaluator:
    """The same on the sampled pairs of a CSR pattern: O(nnz K) per pass."""

    def __init__(self, indptr, indices, cval, nval, mirror, bregman):
        self.pattern = (indptr, indices)
        self.values = (cval, nval)
        self.mirror = mirror
        self.kind, self.par = bregman.kind, bregman.param
        self.k = bregman.kernels("_batch")
        m, n = indices.shape[0], indptr.shape[0] - 1
        rows = np.repeat(np.arange(n), np.diff(indptr))
        self.wrow = np.bincount(rows, weights=nval, minlength=n)
        self.wrow[self.wrow <= 0] = 1.0
        self.A, self.B, self.E = np.zeros(m), np.zeros(m), np.zeros(m)
        self.W, self.W2 = np.zeros(m), np.zeros(m)

    def weights(self, Y, G, H):
        args = (*self.pattern, *self.values, self.mirror, Y, self.A, self.W, self.W2, G, H)
        return self.k["_sparse_weights"](*args, self.kind, self.par)

    def segment(self, Y, D):
        _sparse_quad(*self.pattern, Y, D, self.B, self.E)

    def phi(self, t):
        args = (*self.pattern, *self.values, self.A, self.B, self.E, float(t))
        return self.k["_sparse_phi"](*args, self.kind, self.par)


def _line_search(phi, slope, rtol=0.1, max_eval=6):
    """A step ``t`` in ``(0, 1]`` along the segment where ``phi'`` has (nearly) vanished.

    ``phi'(0) = slope < 0``. The whole step when ``phi'(1) <= 0``; otherwise
    safeguarded Newton on ``phi'`` inside the bracket ``[lo, hi]``, from the
    secant guess, stopped once ``|phi'(t)| <= rtol |slope|`` (an exact search is
    not worth more passes). The caller checks the objective at the point taken.
    """
    r_hi, dr = phi(1.0)
    if r_hi <= 0.0:
        return 1.0
    lo, hi, r_lo = 0.0, 1.0, slope
    x = lo - r_lo * (hi - lo) / (r_hi - r_lo)
    for _ in range(max_eval):
        if not (lo < x < hi):
            x = 0.5 * (lo + hi)
        r, dr = phi(x)
        if abs(r) <= rtol * -slope:
            return x
        if r > 0.0:
            hi, r_hi = x, r
        else:
            lo, r_lo = x, r
        x = x - r / dr if dr > 0.0 else -1.0
    return lo if lo > 0.0 else 0.5 * hi


class _State:
    """Iterate, gradient and curvature at it, and the work arrays of the batch steps."""

    def __init__(self, ev, Y):
        self.ev, self.Y = ev, Y
        self.G, self.H = np.empty_like(Y), np.empty_like(Y)
        self.Gn, self.Hn = np.empty_like(Y), np.empty_like(Y)
        self.X, self.Yn = np.empty_like(Y), np.empty_like(Y)
        self.D, self.R, self.Rprev = np.zeros_like(Y), np.empty_like(Y), None
        self.f = ev.weights(Y, self.G, self.H)
        self.eta = 1.0
        self.multiplicative = True

    def direction(self):
        """Set ``D`` (segment ``Y + t D``, ``t`` in [0, 1]); returns ``phi'(0)``."""
        Y, G, X, D, R = self.Y, self.G, self.X, self.D, self.R
        if self.multiplicative:
            slope = _eg_step(Y, G, self.ev.wrow, self.eta, EG_SEED, X)
            np.subtract(X, Y, out=D)
            return slope
        _project_step(Y, G, self.H, self.eta, X)
        np.subtract(X, Y, out=R)
        beta = 0.0
        if self.Rprev is not None:
            # Polak-Ribiere+ on the scaled steps: conjugacy across the slow modes that
            # move whole clusters together, which the per-item scaling cannot see
            beta = max(
                0.0,
                float(np.vdot(R, R - self.Rprev)) / float(np.vdot(self.Rprev, self.Rprev) or 1.0),
            )
            beta = min(beta, BETA_MAX)
        self.Rprev = R.copy()
        smax = min(_cg_direction(Y, R, D, beta, D), SEG_MAX)
        slope = float(np.vdot(G, D)) * smax
        if not slope < 0.0:
            D[...] = R
            smax = 1.0
            slope = float(np.vdot(G, D))
        D *= smax
        return slope

    def step(self, t):
        """Evaluate ``Y + t D`` (snapped, else plain, else shorter); ``(t, f)`` at the point."""
        ev, Y, D, X, Yn, Gn, Hn = self.ev, self.Y, self.D, self.X, self.Yn, self.Gn, self.Hn
        snapped = _step_dir(Y, D, t, X, SNAP, Yn)
        fn = ev.weights(Yn, Gn, Hn)
        if snapped and not fn <= self.f:
            # the snap cost more than it saved: the plain step
            _step_dir(Y, D, t, X, 0.0, Yn)
            fn = ev.weights(Yn, Gn, Hn)
        for _ in range(30):
            if fn <= self.f:
                break
            # phi is not convex along every segment: the search can overshoot
            t *= 0.5
            _step_dir(Y, D, t, X, 0.0, Yn)
            fn = ev.weights(Yn, Gn, Hn)
        return t, fn

    def accept(self, t, fn):
        """Move to the evaluated point and adapt the step scale and the phase."""
        self.Y[...] = self.Yn
        self.G, self.Gn = self.Gn, self.G
        self.H, self.Hn = self.Hn, self.H
        if self.multiplicative and fn > self.f * (1.0 - EG_RTOL):
            self.multiplicative = False
            self.eta = 1.0
        else:
            # aim the next full step at the length just found
            self.eta = self.eta * ETA_GROW if t >= 1.0 else self.eta * max(t, 0.1)
        self.D *= t
        self.f = fn


def _batch_phase(ev, Y, *, max_iter, tol_abs, stall_rtol=1e-15):
    """Batch steps with an exact segment search, in place on ``Y``.

    Multiplicative (exponentiated-gradient) steps first, which cross KL's
    barrier at ``q = 0`` in a few steps where a quadratic model only doubles
    ``q`` per step; once they gain less than ``EG_RTOL`` per step, projected
    diagonal-Newton steps made conjugate (Polak-Ribiere), which set
    memberships exactly to zero. Returns ``(trace, n_iter, converged, G)``:
    the objective after every accepted step (index 0 = start) and the
    gradient at the final ``Y``. Stops at the KKT tolerance, at ``max_iter``,
    or when a step gains less than ``stall_rtol`` relative (rounding level).
    """
    s = _State(ev, Y)
    trace = [s.f]
    it = 0
    while True:
        # Python-level loop of ~0.1 s iterations: Ctrl-C stops a fit at once
        if _kkt_gap(s.G, Y) <= tol_abs:
            return trace, it, True, s.G
        slope = s.direction() if it < max_iter else 0.0
        if not slope < 0.0:
            return trace, it, False, s.G
        ev.segment(Y, s.D)
        t, fn = s.step(_line_search(ev.phi, slope))
        if not fn <= s.f:
            ev.weights(Y, s.G, s.H)  # rounding level: restore the evaluator's state at Y
            return trace, it, False, s.G
        stalled = not fn <= s.f - stall_rtol * abs(s.f)
        s.accept(t, fn)
        trace.append(fn)
        it += 1
        if stalled:
            return trace, it, False, s.G


def solve_batch(
    data,
    Y,
    bregman,
    *,
    sparse,
    max_iter,
    tol_abs,
    polish=True,
    trace_every=None,
):
    """Batch PCC from the start ``Y`` (modified in place), then greedy polish if stalled.

    ``data`` is ``(C, N)`` for dense input, ``(indptr, indices, cval, nval,
    mirror)`` for sparse. ``max_iter`` caps batch steps plus polish
    iterations together. Returns ``(objective_trace, n_iter, status,
    final_gap, n_polish)``.
    """
    if sparse:
        indptr, indices, cval, nval, mirror = data
        ev = _SparseEvaluator(indptr, indices, cval, nval, mirror, bregman)
    else:
        C, N = data
        ev = _DenseEvaluator(C, N, bregman)
    trace, n_batch, converged, G = _batch_phase(
        ev, Y, max_iter=min(max_iter, 10_000), tol_abs=tol_abs
    )
    trace = np.asarray(trace, dtype=np.float64)
    gap = float(_kkt_gap(G, Y))
    left = max_iter - n_batch
    if converged or not polish or left <= 0:
        status = STATUS_CONVERGED if converged else STATUS_MAX_ITER
        return trace, n_batch, status, gap, 0
    del ev  # the polish needs none of the batch buffers
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


_ = STATUS_STALLED
