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

On dense input, once each item belongs to a few clusters, KL and l2 take the
active-pair route (:mod:`._active`): the pairs never co-clustered and with
disjoint supports add the same constants to every weight, so objective,
gradient, curvature and the segment rows come from ``N Y`` and the other
pairs alone (about 15 % of all pairs on the benchmark's default case).
"""

from __future__ import annotations

import numba
import numpy as np
from scipy.linalg.blas import dsymm, dsyr2k, dsyrk

from ..._threads import one_blas_thread
from . import _active, _greedy, _sparse, _vector
from ._divergences import KIND_CUSTOM, KIND_KL, KIND_L2, _deriv, _deriv2, _div
from ._greedy import STATUS_CONVERGED, STATUS_MAX_ITER, STATUS_STALLED, _scan_item
from ._parallel import BLOCK, ROWS, ordered_sum, serial_twin, variant
from ._vector import FASTMATH

# snap a membership to zero when the full projected step zeroes it and what is left of
# it after the line search is below this; larger residues decay by themselves
SNAP = 1e-3
# multiplicative steps before the Newton phase; measured on dense n = 2,000, K = 30, KL from
# the spectral start: 1 step + 52 Newton steps, where ending at a gain < 1 % took 12 + 41,
# and Newton steps on sparse supports (the active-pair route) cost about a third as much
EG_STEPS = 1
# seed mass that lets a multiplicative step move into a cluster an item has none of
EG_SEED = 1e-3
# Newton-phase step scale: x4 after a whole step, x t after a step cut to t; measured on
# dense n = 2,000, K = 30, KL from the spectral start: 54 steps (x2: 63, fixed: 175+;
# measured before the conjugate factor was capped)
ETA_GROW = 4.0
# the conjugate direction may extend the projected step up to this factor
SEG_MAX = 2.0
# a conjugate factor above 1 means the last two steps disagree: a larger one sends most of
# the direction into memberships about to hit 0 (segments of 1e-4). Measured with the
# preconditioned factor, uncapped: the Sect. 7.3 shape from a random start is far worse after
# 60 steps (l2 objective 188,968 against 115,444 capped); on the dense default-start cases
# 372 steps against 399 capped (10 cases), so the cap stays
BETA_MAX = 1.0
# the pair terms of the active-pair route are summed in this many fixed chunks, each into
# its own n x K buffers: up to this many threads share the work, with the same result
PAIR_CHUNKS = 4
# the active-pair route is taken while its pairs are at most this share of all pairs
ACTIVE_SHARE = 0.5


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


@numba.njit(cache=True, error_model="numpy", inline="always")
def _terms(kind, par, p, q):
    """``(d, d', d'')`` at ``(p, q)``, capped as :func:`_d1_d2`.

    KL at ``p = 0`` and small ``q`` (most pairs while memberships are spread
    out) takes ``-log(1 - q)`` from its series: to ``q^5`` the truncation is
    below ``q^5 / 6 < 2e-16`` relative for ``q < 1e-3``, so the value is the
    logarithm's to rounding, at the cost of a few multiplications.
    """
    if kind == KIND_KL and p == 0.0 and 0.0 <= q < 1e-3:
        r = 1.0 / (1.0 - q)
        d = q * (1.0 + q * (0.5 + q * (1.0 / 3.0 + q * (0.25 + q * 0.2))))
        return d, r, r * r
    d1, d2 = _d1_d2(kind, par, p, q)
    return _div(kind, par, p, q), d1, d2


@numba.njit(cache=True, error_model="numpy", inline="always")
def _phi_terms(kind, par, nij, p, a, b, e, t):
    """One pair's share of ``phi'(t)``, ``phi''(t)`` with ``q = a + t b + t^2 e``."""
    q = a + t * (b + t * e)
    dq = b + 2.0 * t * e
    d1, d2 = _d1_d2(kind, par, p, q)
    return nij * d1 * dq, nij * (d2 * dq * dq + 2.0 * e * d1)


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


@numba.njit(cache=True, error_model="numpy", inline="always")
def _vec_phi_terms(kind, nij, p, a, b, e, t):
    """:func:`_phi_terms` for KL and l2, branch-free (inside the vectorised loops)."""
    dq = b + 2.0 * t * e
    d1, d2 = _vector.derivs(kind, p, a + t * (b + t * e))
    return nij * d1 * dq, nij * (d2 * dq * dq + 2.0 * e * d1)


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


@serial_twin
@numba.njit(cache=True, error_model="numpy", parallel=True)
def _pair_weights(Y, ii, jj, cc, nn, rptr, rcol, Gt, Ht, c1, c2, kind, par, GHp, G, H):
    """Objective at ``Y`` over the pairs ``(ii, jj)``; ``G``, ``H`` = base + their terms.

    The pairs carry their counts ``cc``, ``nn``; ``rptr``/``rcol`` is the support
    of ``Y`` by row, so a pair costs its supports, not ``K``. The base
    (``Gt``, ``Ht``, transposed) holds the terms of the pairs left out, whose
    weights are the constants ``c1 = N d'``, ``c2 = N d''`` (see :mod:`._active`).
    The pairs are cut into ``len(GHp)`` fixed chunks, each adding its terms to
    its own ``GHp[c]`` (``n x K x 2``: gradient and curvature side by side, one
    cache line per update), and the chunks are added in order.
    """
    n, K = Y.shape
    m = ii.shape[0]
    chunks = GHp.shape[0]
    part = np.zeros(chunks)
    for c in numba.prange(chunks):
        part[c] = _chunk_weights(
            Y,
            ii,
            jj,
            cc,
            nn,
            rptr,
            rcol,
            c1,
            c2,
            kind,
            par,
            GHp,
            c,
            c * m // chunks,
            (c + 1) * m // chunks,
        )
    for i in numba.prange(n):
        for k in range(K):
            g = Gt[k, i]
            h = Ht[k, i]
            for c in range(chunks):
                g += GHp[c, i, k, 0]
                h += GHp[c, i, k, 1]
            G[i, k] = g
            H[i, k] = h
    return ordered_sum(part)


@numba.njit(cache=True, error_model="numpy", inline="always")
def _chunk_weights(Y, ii, jj, cc, nn, rptr, rcol, c1, c2, kind, par, GHp, c, lo, hi):
    # pairs lo:hi into GHp[c]; returns their share of the objective
    n, K = Y.shape
    for i in range(n):
        for k in range(K):
            GHp[c, i, k, 0] = 0.0
            GHp[c, i, k, 1] = 0.0
    f = 0.0
    for t in range(lo, hi):
        i = ii[t]
        j = jj[t]
        q = 0.0
        for u in range(rptr[i], rptr[i + 1]):
            k = rcol[u]
            q += Y[i, k] * Y[j, k]
        nij = nn[t]
        d, d1, d2 = _terms(kind, par, cc[t] / nij, q)
        f += nij * d
        w = nij * (d1 - c1)
        w2 = nij * (d2 - c2)
        if w == 0.0 and w2 == 0.0:
            continue  # the base weights exactly (p = q = 0 on the dense route)
        for u in range(rptr[j], rptr[j + 1]):
            k = rcol[u]
            y = Y[j, k]
            GHp[c, i, k, 0] += w * y
            GHp[c, i, k, 1] += w2 * y * y
        for u in range(rptr[i], rptr[i + 1]):
            k = rcol[u]
            y = Y[i, k]
            GHp[c, j, k, 0] += w * y
            GHp[c, j, k, 1] += w2 * y * y
    return f


@numba.njit(cache=True, error_model="numpy", fastmath=FASTMATH)
def _vec_row_terms(cval, nval, lo, buf, m, kind):
    """Weights of CSR entries ``lo:lo + m`` (``q = buf[0]`` in, ``buf[1:3]`` out), no branches."""
    f = 0.0
    for u in range(m):
        nij = nval[lo + u]
        d, d1, d2 = _vector.terms(kind, cval[lo + u] / nij, buf[0, u])
        f += nij * d
        buf[1, u] = nij * d1
        buf[2, u] = nij * d2
    return f


@numba.njit(cache=True, error_model="numpy", inline="always")
def _row_terms(cval, nval, lo, buf, m, kind, par):
    if _vector.vectorised(kind):
        return _vec_row_terms(cval, nval, lo, buf, m, kind)
    f = 0.0
    for u in range(m):
        nij = nval[lo + u]
        d, d1, d2 = _terms(kind, par, cval[lo + u] / nij, buf[0, u])
        f += nij * d
        buf[1, u] = nij * d1
        buf[2, u] = nij * d2
    return f


@numba.njit(cache=True, error_model="numpy", inline="always")
def _csr_row(indptr, indices, cval, nval, Y, G, H, kind, par, i, buf):
    # q of the row's pairs, their weights in one vectorised pass, then G[i], H[i] while the
    # partners' memberships are still in cache
    lo, hi = indptr[i], indptr[i + 1]
    K = Y.shape[1]
    for t in range(lo, hi):
        j = indices[t]
        q = 0.0
        for k in range(K):
            q += Y[i, k] * Y[j, k]
        buf[0, t - lo] = q
    f = _row_terms(cval, nval, lo, buf, hi - lo, kind, par)
    for k in range(K):
        G[i, k] = 0.0
        H[i, k] = 0.0
    for t in range(lo, hi):
        j = indices[t]
        w = buf[1, t - lo]
        w2 = buf[2, t - lo]
        for k in range(K):
            y = Y[j, k]
            G[i, k] += w * y
            H[i, k] += w2 * y * y
    return f


@serial_twin
@numba.njit(cache=True, error_model="numpy", parallel=True)
def _csr_weights(indptr, indices, cval, nval, Y, G, H, kind, par, width):
    """Objective at ``Y`` on a symmetric CSR pattern; ``G``, ``H`` row by row.

    Each row takes the terms of every pair it stores, so a pair's terms are
    computed twice (the objective is halved): every write goes to the row at
    hand and a partner's membership is fetched once. On randomly sampled pairs
    that fetch is the cost, and writing each pair's weight to its mirror slot
    cost more than the second evaluation. ``width`` is the longest row; blocks
    of ``ROWS`` rows run in parallel, their partial sums added in order.
    """
    n = Y.shape[0]
    nb = (n + ROWS - 1) // ROWS
    part = np.zeros(nb)
    for blk in numba.prange(nb):
        buf = np.empty((3, width))
        f = 0.0
        for i in range(blk * ROWS, min(n, blk * ROWS + ROWS)):
            f += _csr_row(indptr, indices, cval, nval, Y, G, H, kind, par, i, buf)
        part[blk] = f
    return 0.5 * ordered_sum(part)


@numba.njit(cache=True, error_model="numpy", inline="always")
def _segment_row(Y, D, i, j, rptr, rcol):
    # q_ij(t) = a + t b + t^2 e along Y + t D, over the support of row i
    a = 0.0
    b = 0.0
    e = 0.0
    for u in range(rptr[i], rptr[i + 1]):
        k = rcol[u]
        a += Y[i, k] * Y[j, k]
        b += Y[i, k] * D[j, k] + D[i, k] * Y[j, k]
        e += D[i, k] * D[j, k]
    return a, b, e


@numba.njit(cache=True, error_model="numpy", inline="always")
def _put_segment_row(out, r, nij, cij, a, b, e):
    """Column ``r`` of ``out`` = ``(n_ij, p_ij, a, b, e)``; the next free column."""
    if b == 0.0 and e == 0.0:
        return r  # q does not move along the segment: adds exactly 0 to phi' and phi''
    out[0, r] = nij
    out[1, r] = cij / nij
    out[2, r] = a
    out[3, r] = b
    out[4, r] = e
    return r + 1


@serial_twin
@numba.njit(cache=True, error_model="numpy", parallel=True)
def _pair_segment(Y, D, ii, jj, cc, nn, rptr, rcol, out):
    """Rows ``(n_ij, p_ij, a, b, e)`` of ``q(t) = a + t b + t^2 e`` on the pairs that move.

    ``rptr``/``rcol`` is the union support of ``Y`` and ``D``; ``out`` has shape
    ``(5, len(ii))``. Each block of ``BLOCK`` pairs writes its moving pairs to the
    start of its own columns; returns how many each block wrote.
    """
    m = ii.shape[0]
    nb = (m + BLOCK - 1) // BLOCK
    count = np.zeros(nb, np.int64)
    for blk in numba.prange(nb):
        r = blk * BLOCK
        for t in range(blk * BLOCK, min(m, blk * BLOCK + BLOCK)):
            a, b, e = _segment_row(Y, D, ii[t], jj[t], rptr, rcol)
            r = _put_segment_row(out, r, nn[t], cc[t], a, b, e)
        count[blk] = r - blk * BLOCK
    return count


@numba.njit(cache=True, error_model="numpy", inline="always")
def _segment_full(Y, D, i, j):
    # _segment_row over all K: where a partner's memberships must be fetched anyway, the
    # support indirection costs more than it saves (on the Sect. 7.3 shape, K = 10: 147 against
    # 213 ms at full supports, the same at two clusters per item)
    a = 0.0
    b = 0.0
    e = 0.0
    for k in range(Y.shape[1]):
        a += Y[i, k] * Y[j, k]
        b += Y[i, k] * D[j, k] + D[i, k] * Y[j, k]
        e += D[i, k] * D[j, k]
    return a, b, e


@serial_twin
@numba.njit(cache=True, error_model="numpy", parallel=True)
def _csr_segment(Y, D, indptr, indices, cval, nval, start, out):
    """:func:`_pair_segment` on the pairs ``j > i`` of a symmetric CSR pattern.

    Blocks of ``ROWS`` rows; block ``b`` writes its moving pairs from column
    ``start[b]`` on (its count of pairs ``j > i``) and returns how many it wrote.
    """
    n = Y.shape[0]
    nb = (n + ROWS - 1) // ROWS
    count = np.zeros(nb, np.int64)
    for blk in numba.prange(nb):
        r = start[blk]
        for i in range(blk * ROWS, min(n, blk * ROWS + ROWS)):
            for t in range(indptr[i], indptr[i + 1]):
                j = indices[t]
                if j > i:
                    a, b, e = _segment_full(Y, D, i, j)
                    r = _put_segment_row(out, r, nval[t], cval[t], a, b, e)
        count[blk] = r - start[blk]
    return count


@numba.njit(cache=True, error_model="numpy", fastmath=FASTMATH)
def _vec_segment_phi(seg, lo, hi, t, kind):
    """``phi'``, ``phi''`` of KL or l2 over the segment rows ``lo:hi``, branch-free (vectorised)."""
    df = 0.0
    d2f = 0.0
    for r in range(lo, hi):
        g1, g2 = _vec_phi_terms(kind, seg[0, r], seg[1, r], seg[2, r], seg[3, r], seg[4, r], t)
        df += g1
        d2f += g2
    return df, d2f


@numba.njit(cache=True, error_model="numpy", inline="always")
def _segment_phi(seg, lo, hi, t, kind, par):
    if _vector.vectorised(kind):
        return _vec_segment_phi(seg, lo, hi, t, kind)
    df = 0.0
    d2f = 0.0
    for r in range(lo, hi):
        g1, g2 = _phi_terms(kind, par, seg[0, r], seg[1, r], seg[2, r], seg[3, r], seg[4, r], t)
        df += g1
        d2f += g2
    return df, d2f


@serial_twin
@numba.njit(cache=True, error_model="numpy", parallel=True)
def _pair_phi(seg, start, count, t, kind, par):
    """``phi'(t)``, ``phi''(t)`` over the segment rows: ``count[b]`` of them from ``start[b]``."""
    nb = count.shape[0]
    part = np.zeros((nb, 2))
    for blk in numba.prange(nb):
        df, d2f = _segment_phi(seg, start[blk], start[blk] + count[blk], t, kind, par)
        part[blk, 0] = df
        part[blk, 1] = d2f
    return ordered_sum(part[:, 0]), ordered_sum(part[:, 1])


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
    """``order`` = indices of ``x`` by decreasing value.

    Insertion in place up to ``K = 128``: ``np.argsort`` allocates for every row,
    which took half of :func:`_project_step` (n = 100,000, K = 20: 96 -> 44 ms;
    equal at K = 200).
    """
    K = x.shape[0]
    if K > 128:
        asc = np.argsort(x)
        for k in range(K):
            order[k] = asc[K - 1 - k]
        return
    for k in range(K):
        r = k
        while r > 0 and x[order[r - 1]] < x[k]:
            order[r] = order[r - 1]
            r -= 1
        order[r] = k


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
    return part.min()


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
    return count.sum()


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


@numba.njit(cache=True, error_model="numpy")
def _kkt_gap(G, Y):
    """``max_i (g_iV - g_iU)`` (eq. 6), the greedy solver's stopping quantity."""
    best = 0.0
    for i in range(Y.shape[0]):
        g = _scan_item(G, Y, i)[2]
        if g > best:
            best = g
    return best


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
        self.k = bregman.kernels("_batch")
        # KL and l2 take the kernels compiled for them alone
        self.vec = "_vec" if self.kind in (KIND_KL, KIND_L2) else ""
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
        kernel = variant(self.k["_dense_weights" + self.vec], Y.shape[0])
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
        return variant(self.k["_dense_phi" + self.vec], self.P.shape[0])(
            self.P, self.N, self.A, self.B, self.E, float(t), self.kind, self.par
        )


def _pair_weights_at(ev, cover, Y, sup, Gt, Ht, G, H):
    """:func:`_pair_weights` on the pairs ``cover`` at ``Y`` with supports ``sup``."""
    if ev.GHp is None or ev.GHp.shape[1:3] != Y.shape:
        ev.GHp = np.empty((PAIR_CHUNKS, *Y.shape, 2))
    args = (*cover, sup[0], sup[1], Gt, Ht, *ev.base, ev.kind, ev.par, ev.GHp)
    return variant(ev.k["_pair_weights"], Y.shape[0])(Y, *args, G, H)


def _pair_segment_at(ev, Y, D, sup):
    """``ev.seg``, ``ev.m``, ``ev.start``: the segment rows of ``Y + t D`` on ``ev.cover``."""
    ev.seg = np.empty((5, ev.cover[0].shape[0]))
    ev.m = variant(_pair_segment, Y.shape[0])(Y, D, *ev.cover, sup[0], sup[1], ev.seg)
    ev.start = BLOCK * np.arange(ev.m.shape[0])


def _pair_phi_at(ev, t):
    """``phi'(t)``, ``phi''(t)`` over the segment rows of ``ev`` (``seg``, ``start``, ``m``)."""
    kernel = variant(ev.k["_pair_phi"], ev.wrow.shape[0])
    return kernel(ev.seg, ev.start, ev.m, float(t), ev.kind, ev.par)


class _SparseEvaluator:
    """The same on the sampled pairs of a symmetric CSR pattern: O(nnz K) per pass."""

    def __init__(self, indptr, indices, cval, nval, mirror, bregman):
        self.kind, self.par = bregman.kind, bregman.param
        self.k = bregman.kernels("_batch")
        n = indptr.shape[0] - 1
        self.csr = (indptr, indices, cval, nval)
        degree = np.diff(indptr)
        self.width = int(degree.max(initial=0))
        rows = np.repeat(np.arange(n), degree)
        self.wrow = np.bincount(rows, weights=nval, minlength=n)
        self.wrow[self.wrow <= 0] = 1.0
        # the segment rows: each unordered pair once (j > i), blocks of ROWS rows
        upper = np.bincount(rows[indices > rows], minlength=n)
        per_block = np.add.reduceat(upper, np.arange(0, n, ROWS)) if n else upper
        self.start = np.concatenate(([0], np.cumsum(per_block)[:-1])).astype(np.int64)
        self.seg = np.empty((5, int(upper.sum())))

    def weights(self, Y, G, H, curvature=True):
        kernel = variant(self.k["_csr_weights"], Y.shape[0])
        return kernel(*self.csr, Y, G, H, self.kind, self.par, self.width)

    def outside(self, Z):
        """False: on sampled pairs a point outside the domain is left to the weights pass."""
        return False

    def segment(self, Y, D):
        self.m = variant(_csr_segment, Y.shape[0])(Y, D, *self.csr, self.start, self.seg)

    def phi(self, t):
        return _pair_phi_at(self, t)


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
        self.D, self.R = np.zeros_like(Y), np.empty_like(Y)
        # the last scaled step R / eta and the gradient it was taken at (conjugacy)
        self.Zprev, self.Gprev = None, None
        self.multiplicative = EG_STEPS > 0
        # a multiplicative step needs no curvature (one BLAS product less on dense input)
        self.f = ev.weights(Y, self.G, self.H, curvature=not self.multiplicative)
        self.eta = 1.0
        self.n_steps = 0

    def direction(self):
        """Set ``D`` (segment ``Y + t D``, ``t`` in [0, 1]); returns ``phi'(0)``."""
        Y, G, X, D, R = self.Y, self.G, self.X, self.D, self.R
        if self.multiplicative:
            slope = variant(_eg_step, Y.shape[0])(Y, G, self.ev.wrow, self.eta, EG_SEED, X)
            np.subtract(X, Y, out=D)
            return slope
        variant(_project_step, Y.shape[0])(Y, G, self.H, self.eta, X)
        np.subtract(X, Y, out=R)
        beta = self._conjugate_factor(R)
        smax = min(variant(_cg_direction, Y.shape[0])(Y, R, D, beta, D), SEG_MAX)
        slope = float(np.vdot(G, D)) * smax
        if not slope < 0.0:
            D[...] = R
            smax = 1.0
            slope = float(np.vdot(G, D))
        D *= smax
        return slope

    def _conjugate_factor(self, R):
        """Preconditioned Polak-Ribiere+ factor of the step ``R`` against the last one.

        ``z = -R / eta`` is the gradient scaled by the projected diagonal-Newton
        metric, so ``beta = g.(z - z_prev) / (g_prev . z_prev)``: conjugacy across
        the slow modes that move whole clusters together, which the per-item
        scaling cannot see (Nocedal and Wright 2006, Sect. 5.2). Only ``beta`` is the
        textbook's: it multiplies the last step as taken (``t`` times the segment), not
        the last direction at this step's scale; measured, rescaling it was no better.
        """
        Z = R / self.eta
        beta = 0.0
        if self.Zprev is not None:
            den = -float(np.vdot(self.Gprev, self.Zprev))
            if den > 0.0:
                beta = min(max(0.0, float(np.vdot(self.G, self.Zprev - Z)) / den), BETA_MAX)
        self.Zprev, self.Gprev = Z, self.G.copy()
        return beta

    def step(self, t):
        """Evaluate ``Y + t D`` (snapped, else plain, else shorter); ``(t, f)`` at the point."""
        ev, Y, D, X, Yn, Gn, Hn = self.ev, self.Y, self.D, self.X, self.Yn, self.Gn, self.Hn
        # H is needed from the last multiplicative step on
        curv = not self.multiplicative or self.n_steps + 1 >= EG_STEPS
        snapped = variant(_step_dir, Y.shape[0])(Y, D, t, X, SNAP, Yn)
        # (at f = +inf any point is kept, the snapped one included)
        if snapped and self.f < np.inf and ev.outside(Yn):
            # the snap left the domain: the plain step, without a weights pass at the snap
            variant(_step_dir, Y.shape[0])(Y, D, t, X, 0.0, Yn)
            snapped = 0
        fn = ev.weights(Yn, Gn, Hn, curv)
        if snapped and not fn <= self.f:
            # the snap cost more than it saved: the plain step
            variant(_step_dir, Y.shape[0])(Y, D, t, X, 0.0, Yn)
            fn = ev.weights(Yn, Gn, Hn, curv)
        for _ in range(30):
            if fn <= self.f:
                break
            # phi is not convex along every segment: the search can overshoot
            t *= 0.5
            variant(_step_dir, Y.shape[0])(Y, D, t, X, 0.0, Yn)
            fn = ev.weights(Yn, Gn, Hn, curv)
        return t, fn

    def accept(self, t, fn):
        """Move to the evaluated point and adapt the step scale and the phase."""
        self.Y[...] = self.Yn
        self.G, self.Gn = self.Gn, self.G
        self.H, self.Hn = self.Hn, self.H
        self.n_steps += 1
        if self.multiplicative and self.n_steps >= EG_STEPS:
            self.multiplicative = False
            self.eta = 1.0
        else:
            # aim the next full step at the length just found
            self.eta = self.eta * ETA_GROW if t >= 1.0 else self.eta * max(t, 0.1)
        self.D *= t
        self.f = fn


def _batch_phase(ev, Y, **kwargs):
    """:func:`_batch_steps`, with a Ctrl-C always raised as ``KeyboardInterrupt``.

    Once numba's thread pool runs, a SIGINT may be taken by one of its threads and
    handled while the main thread is inside a numba call, which then reports
    "returned a result with an exception set" (``SystemError``, the interrupt as
    its cause).
    """
    try:
        return _batch_steps(ev, Y, **kwargs)
    except SystemError as err:
        if isinstance(err.__cause__ or err.__context__, KeyboardInterrupt):
            raise KeyboardInterrupt from None
        raise


def _batch_steps(ev, Y, *, max_iter, tol_abs, stall_rtol=1e-15):
    """Batch steps with an exact segment search, in place on ``Y``.

    ``EG_STEPS`` multiplicative (exponentiated-gradient) steps first, which
    cross KL's barrier at ``q = 0`` where a quadratic model only doubles ``q``
    per step and which sharpen a smoothed start; then projected
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
    ev = (_SparseEvaluator if sparse else _DenseEvaluator)(*data, bregman)
    # OpenBLAS's syrk/symm round differently with 2 or 4 threads than with 1, and the
    # steps amplify it (objective 6e-8 apart at n = 400, test_pcc_batch): one BLAS
    # thread keeps the result the same for any thread setting
    with one_blas_thread():
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
    polish_solver = _sparse.solve_sparse if sparse else _greedy.solve_dense
    ptrace, n_pol, status, gap = polish_solver(
        *data, Y, bregman, max_iter=left, tol_abs=tol_abs, trace_every=trace_every
    )
    return np.concatenate([trace, ptrace[1:]]), n_batch + n_pol, status, gap, n_pol


_ = STATUS_STALLED
