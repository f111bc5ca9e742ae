"""The batch solver (:mod:`._batch`) on a dense co-association: every pair, BLAS-bound.

:class:`_DenseEvaluator` gives the objective, gradient, curvature and the exact segment
search over all pairs; the numba passes here are the elementwise divergence terms
(KL and l2 have their own, ``_vec``, compiled for them alone). Once supports are sparse
enough the same quantities come from the active pairs (:mod:`._batch_pairs`).
"""

from __future__ import annotations

import numba
import numpy as np
from scipy.linalg.blas import dsymm, dsyr2k, dsyrk

from . import _active, _vector
from ._batch_pairs import _pair_phi_at, _pair_segment_at, _pair_weights_at, pair_kernels
from ._batch_terms import _phi_terms, _terms, _vec_phi_terms
from ._divergences import KIND_KL, KIND_L2, register_kernels
from ._parallel import ordered_sum, serial_twin, variant
from ._vector import FASTMATH

# the active-pair route is taken while its pairs are at most this share of all pairs
ACTIVE_SHARE = 0.5


@numba.njit(cache=True, error_model="numpy", inline="always")
def _dense_weights_col(P, N, A, W, W2, kind, par, j):
    f = 0.0
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
        d, d1, d2 = _terms(kind, par, p, q)
        f += nij * d
        W[i, j] = nij * d1
        W2[i, j] = nij * d2
    return f


@numba.njit(cache=True, error_model="numpy", fastmath=FASTMATH)
def _vec_weights_col(P, N, A, W, W2, kind, j):
    """:func:`_dense_weights_col` for KL and l2, branch-free: LLVM vectorises the loop."""
    W[j, j] = 0.0
    W2[j, j] = 0.0
    f = 0.0
    for i in range(j):
        nij = np.float64(N[j, i])
        d, d1, d2 = _vector.terms(kind, P[j, i], A[i, j])
        f += nij * d if nij > 0.0 else 0.0  # d may be +inf where N = 0: not 0 * inf
        W[i, j] = nij * d1
        W2[i, j] = nij * d2
    return f


@numba.njit(cache=True, error_model="numpy", inline="always")
def _weights_col(P, N, A, W, W2, kind, par, j):
    if _vector.vectorised(kind):
        return _vec_weights_col(P, N, A, W, W2, kind, j)
    return _dense_weights_col(P, N, A, W, W2, kind, par, j)


@serial_twin
@numba.njit(cache=True, error_model="numpy", parallel=True)
def _dense_weights(P, N, A, W, W2, kind, par):
    """Objective at ``q = A``; upper triangles of ``W = N d'`` and ``W2 = N d''``.

    ``A``, ``W``, ``W2`` are Fortran-ordered (BLAS output), read and written on
    their upper triangle ``i < j`` column by column; ``P``, ``N`` are symmetric
    and C-ordered, read as ``[j, i]`` so that every inner loop is contiguous.
    Columns ``c`` and ``n - 1 - c`` go together (``n - 1`` pairs per task, evenly
    shared between threads); the partial sums are added in a fixed order.
    """
    n = A.shape[0]
    half = (n + 1) // 2
    part = np.zeros(half)
    for c in numba.prange(half):
        f = _weights_col(P, N, A, W, W2, kind, par, c)
        if n - 1 - c != c:
            f += _weights_col(P, N, A, W, W2, kind, par, n - 1 - c)
        part[c] = f
    return ordered_sum(part)


@numba.njit(cache=True, error_model="numpy", inline="always")
def _dense_phi_col(P, N, A, B, E, t, kind, par, j):
    df = 0.0
    d2f = 0.0
    for i in range(j):
        nij = N[j, i]
        if nij <= 0:
            continue
        e = E[i, j]
        b = B[i, j]
        if b == 0.0 and e == 0.0:
            continue  # q does not move along the segment: adds exactly 0 to both
        g1, g2 = _phi_terms(kind, par, nij, P[j, i], A[i, j], b, e, t)
        df += g1
        d2f += g2
    return df, d2f


@numba.njit(cache=True, error_model="numpy", fastmath=FASTMATH)
def _vec_phi_col(P, N, A, B, E, t, kind, j):
    """:func:`_dense_phi_col` for KL and l2, branch-free: LLVM vectorises the loop.

    Pairs with ``N = 0`` or a still ``q`` (``b = e = 0``) add exact zeros, as
    the generic loop's skips do.
    """
    df = 0.0
    d2f = 0.0
    for i in range(j):
        g1, g2 = _vec_phi_terms(kind, np.float64(N[j, i]), P[j, i], A[i, j], B[i, j], E[i, j], t)
        df += g1
        d2f += g2
    return df, d2f


@numba.njit(cache=True, error_model="numpy", inline="always")
def _phi_col(P, N, A, B, E, t, kind, par, j):
    if _vector.vectorised(kind):
        return _vec_phi_col(P, N, A, B, E, t, kind, j)
    return _dense_phi_col(P, N, A, B, E, t, kind, par, j)


@serial_twin
@numba.njit(cache=True, error_model="numpy", parallel=True)
def _dense_weights_vec(P, N, A, W, W2, kind, par):
    """:func:`_dense_weights` for KL and l2 alone: compiled without the generic terms of
    every divergence (half the compilation of a first KL fit's weights pass)."""
    n = A.shape[0]
    half = (n + 1) // 2
    part = np.zeros(half)
    for c in numba.prange(half):
        f = _vec_weights_col(P, N, A, W, W2, kind, c)
        if n - 1 - c != c:
            f += _vec_weights_col(P, N, A, W, W2, kind, n - 1 - c)
        part[c] = f
    return ordered_sum(part)


@serial_twin
@numba.njit(cache=True, error_model="numpy", parallel=True)
def _dense_phi(P, N, A, B, E, t, kind, par):
    """``phi'(t)``, ``phi''(t)`` of ``phi(t) = f(Y + t D)``, from ``q = a + t b + t^2 e``.

    No logarithms: the step is chosen on the derivatives alone and the objective
    is checked once, exactly, at the point accepted. Columns are paired as in
    :func:`_dense_weights`.
    """
    n = A.shape[0]
    half = (n + 1) // 2
    part = np.zeros((half, 2))
    for c in numba.prange(half):
        df, d2f = _phi_col(P, N, A, B, E, t, kind, par, c)
        if n - 1 - c != c:
            g1, g2 = _phi_col(P, N, A, B, E, t, kind, par, n - 1 - c)
            df += g1
            d2f += g2
        part[c, 0] = df
        part[c, 1] = d2f
    return ordered_sum(part[:, 0]), ordered_sum(part[:, 1])


@serial_twin
@numba.njit(cache=True, error_model="numpy", parallel=True)
def _dense_phi_vec(P, N, A, B, E, t, kind, par):
    """:func:`_dense_phi` for KL and l2 alone (see :func:`_dense_weights_vec`)."""
    n = A.shape[0]
    half = (n + 1) // 2
    part = np.zeros((half, 2))
    for c in numba.prange(half):
        df, d2f = _vec_phi_col(P, N, A, B, E, t, kind, c)
        if n - 1 - c != c:
            g1, g2 = _vec_phi_col(P, N, A, B, E, t, kind, n - 1 - c)
            df += g1
            d2f += g2
        part[c, 0] = df
        part[c, 1] = d2f
    return ordered_sum(part[:, 0]), ordered_sum(part[:, 1])


def _shared_vertex(Z, P, N):
    """Whether two rows of ``Z`` are the same vertex ``e_k`` with ``N > 0``, ``P < 1`` between them.

    Then ``q = 1`` on that pair: outside KL's domain (``d = +inf`` for ``p < 1``). The
    rows are grouped by vertex in NumPy (numba's stable argsort took 2.7 s of a first
    fit's compilation); the pairs inside each group are scanned in numba.
    """
    hit = Z == 1.0
    at = np.where(hit.any(axis=1), hit.argmax(axis=1), -1)
    order = np.argsort(at, kind="stable")
    start = int(np.searchsorted(at[order], 0))
    return _shared_vertex_pairs(at, order, start, P, N)


@numba.njit(cache=True)
def _shared_vertex_pairs(at, order, start, P, N):
    n = order.shape[0]
    for a in range(start, n):
        i = order[a]
        for b in range(a + 1, n):
            j = order[b]
            if at[j] != at[i]:
                break
            if N[i, j] > 0 and P[i, j] < 1.0:
                return True
    return False


@serial_twin
@numba.njit(cache=True, error_model="numpy", parallel=True)
def _ratios(C, N, P, wrow):
    """``P = C / N`` (0 where ``N = 0``) and ``wrow`` = off-diagonal row sums of ``N`` (0 -> 1)."""
    n = N.shape[0]
    for i in numba.prange(n):
        s = 0.0
        for j in range(n):
            v = N[i, j]
            P[i, j] = C[i, j] / v if v > 0 else 0.0
            if j != i:
                s += v
        wrow[i] = s if s > 0 else 1.0


def _compact_counts(C, N):
    """``C``, ``N`` in the narrowest unsigned type holding them (integer counts only)."""
    if N.dtype.kind in "iu" and C.dtype.kind in "iu":
        top = int(N.max(initial=0))
        for dtype in (np.uint8, np.uint16):
            if top <= np.iinfo(dtype).max:
                return C.astype(dtype), N.astype(dtype)
    return C, N


class _DenseEvaluator:
    """Objective, gradient and segment search on dense ``C, N`` (all pairs).

    While memberships are spread out, ``A = Y Y^T``, ``B``, ``E`` are formed by
    BLAS on their upper triangle (``syrk``, ``syr2k``) and the gradients by
    ``symm``: O(n^2 K) flops at BLAS speed, plus O(n^2) elementwise divergence
    terms in numba. Once supports are sparse enough (for KL and l2), the same
    quantities come from the active pairs alone (:mod:`._active`).
    """

    def __init__(self, C, N, bregman):
        n = N.shape[0]
        self.N = N
        self.P, self.wrow = np.empty((n, n)), np.empty(n)
        variant(_ratios, n)(C, N, self.P, self.wrow)
        self.kind, self.par = bregman.kind, bregman.param
        # KL and l2 take the kernels compiled for them alone (never a custom divergence's)
        vec = self.kind in (KIND_KL, KIND_L2)
        self.weights_kernel = _dense_weights_vec if vec else bregman.kernel(_dense_weights)
        self.phi_kernel = _dense_phi_vec if vec else bregman.kernel(_dense_phi)
        self.pair_weights, self.pair_phi = pair_kernels(bregman)
        self.A = np.zeros((n, n), order="F")
        self.B = np.zeros((n, n), order="F")
        self.E = np.zeros((n, n), order="F")
        # d(0, 0) = 0 and constant d'(0, 0), d''(0, 0): what the active-pair route needs
        self.base = {KIND_KL: (1.0, 1.0), KIND_L2: (0.0, 2.0)}.get(self.kind)
        self.share = ACTIVE_SHARE
        if self.base is not None:
            self.pos = variant(_active.positive_pairs, n)(self.P)
            self.Cc, self.Nc = _compact_counts(C, N)
        self.active = False
        self.a_stale = True
        # the active pairs of the last segment: they cover every point on it
        self.cover = None
        self.GHp = None

    def _use_active(self, Z):
        """Supports of ``Z`` when the active-pair route is cheaper than BLAS, else None."""
        if self.base is None:
            return None
        sup = _active.supports(Z)
        n = Z.shape[0]
        work = _active.overlap_work(sup[2]) + self.pos[0][n]
        return sup if work <= self.share * 0.5 * n * n else None

    def weights(self, Y, G, H, curvature=True):
        """Objective at ``Y``; ``G``, ``H`` overwritten with the gradient and curvature.

        ``H`` is left as is when ``curvature`` is false.
        """
        sup = self._use_active(Y)
        if sup is not None:
            # an active segment's pairs cover every point on it; otherwise (all-pairs segment,
            # or no segment yet) this point's own: a list found at one point of an all-pairs
            # segment misses pairs at another (the plain step after a snap, a halving)
            cover = self.cover if self.active else self._active_pairs(sup)
            Gt, Ht = np.empty((2, *Y.shape[::-1]))
            variant(_active.base_terms, Y.shape[0])(self.Nc, Y, sup[2], sup[3], *self.base, Gt, Ht)
            self.a_stale = True
            return _pair_weights_at(self, cover, Y, sup, Gt, Ht, G, H)
        Yf = np.asfortranarray(Y)
        self.A = dsyrk(1.0, Yf, c=self.A, overwrite_c=1)
        self.a_stale = False
        # B and E are free until the next segment: they take W and W2
        kernel = variant(self.weights_kernel, Y.shape[0])
        f = kernel(self.P, self.N, self.A, self.B, self.E, self.kind, self.par)
        G[...] = dsymm(1.0, self.B, Yf)
        if curvature:
            H[...] = dsymm(1.0, self.E, np.asfortranarray(Y * Y))
        return f

    def _active_pairs(self, sup):
        kernel = variant(_active.active_pairs, self.Nc.shape[0])
        return kernel(self.Cc, self.Nc, *self.pos, *sup)

    def outside(self, Z):
        """Whether ``Z`` is certainly outside the divergence's domain (objective +inf).

        A snap can leave two co-sampled items on one vertex ``e_k`` (``q = 1``) that
        were not always co-clustered: for KL that is found here, without a weights pass.
        """
        return self.kind == KIND_KL and _shared_vertex(Z, self.P, self.N)

    def segment(self, Y, D):
        """Prepare ``phi`` along ``Y + t D`` (``A`` is that of the last :meth:`weights`).

        Every later :meth:`weights` is at a point of this segment, until the next.
        """
        sup = self._use_active(np.abs(Y) + np.abs(D))
        self.active = sup is not None
        self.cover = None
        if self.active:
            self.cover = self._active_pairs(sup)
            _pair_segment_at(self, Y, D, sup)
            return
        Yf, Df = np.asfortranarray(Y), np.asfortranarray(D)
        if self.a_stale:  # the last weights went the active route
            self.A = dsyrk(1.0, Yf, c=self.A, overwrite_c=1)
        self.B = dsyr2k(1.0, Yf, Df, c=self.B, overwrite_c=1)
        self.E = dsyrk(1.0, Df, c=self.E, overwrite_c=1)

    def phi(self, t):
        if self.active:
            return _pair_phi_at(self, t)
        return variant(self.phi_kernel, self.P.shape[0])(
            self.P, self.N, self.A, self.B, self.E, float(t), self.kind, self.par
        )


register_kernels(_dense_weights, _dense_phi)
