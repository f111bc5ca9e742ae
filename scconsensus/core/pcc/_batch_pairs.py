"""The batch solver (:mod:`._batch`) on a pair list: sampled pairs (CSR) or active pairs.

Gradient and curvature passes over the pairs, the segment rows ``(a, b, e)`` of each
pair along ``Y + t D`` and ``phi'(t)``, ``phi''(t)`` over them (the segment search), and
:class:`_SparseEvaluator`, the evaluator on a sampled pattern.
"""

from __future__ import annotations

import numba
import numpy as np

from . import _vector
from ._batch_terms import _phi_terms, _terms, _vec_phi_terms
from ._divergences import register_kernels
from ._parallel import BLOCK, ROWS, ordered_sum, serial_twin, variant
from ._vector import FASTMATH

# the pair terms of the active-pair route are summed in this many fixed chunks, each into
# its own n x K buffers: up to this many threads share the work, with the same result
PAIR_CHUNKS = 4


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


def pair_kernels(bregman) -> tuple:
    """``(pair_weights, pair_phi)``: the pair passes for ``bregman`` (:meth:`Bregman.kernel`)."""
    return bregman.kernel(_pair_weights), bregman.kernel(_pair_phi)


def _pair_weights_at(ev, cover, Y, sup, Gt, Ht, G, H):
    """:func:`_pair_weights` on the pairs ``cover`` at ``Y`` with supports ``sup``."""
    if ev.GHp is None or ev.GHp.shape[1:3] != Y.shape:
        ev.GHp = np.empty((PAIR_CHUNKS, *Y.shape, 2))
    args = (*cover, sup[0], sup[1], Gt, Ht, *ev.base, ev.kind, ev.par, ev.GHp)
    return variant(ev.pair_weights, Y.shape[0])(Y, *args, G, H)


def _pair_segment_at(ev, Y, D, sup):
    """``ev.seg``, ``ev.m``, ``ev.start``: the segment rows of ``Y + t D`` on ``ev.cover``."""
    ev.seg = np.empty((5, ev.cover[0].shape[0]))
    ev.m = variant(_pair_segment, Y.shape[0])(Y, D, *ev.cover, sup[0], sup[1], ev.seg)
    ev.start = BLOCK * np.arange(ev.m.shape[0])


def _pair_phi_at(ev, t):
    """``phi'(t)``, ``phi''(t)`` over the segment rows of ``ev`` (``seg``, ``start``, ``m``)."""
    kernel = variant(ev.pair_phi, ev.wrow.shape[0])
    return kernel(ev.seg, ev.start, ev.m, float(t), ev.kind, ev.par)


class _SparseEvaluator:
    """The same on the sampled pairs of a symmetric CSR pattern: O(nnz K) per pass."""

    def __init__(self, indptr, indices, cval, nval, mirror, bregman):
        self.kind, self.par = bregman.kind, bregman.param
        self.pair_weights, self.pair_phi = pair_kernels(bregman)
        self.csr_weights = bregman.kernel(_csr_weights)
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
        kernel = variant(self.csr_weights, Y.shape[0])
        return kernel(*self.csr, Y, G, H, self.kind, self.par, self.width)

    def outside(self, Z):
        """False: on sampled pairs a point outside the domain is left to the weights pass."""
        return False

    def segment(self, Y, D):
        self.m = variant(_csr_segment, Y.shape[0])(Y, D, *self.csr, self.start, self.seg)

    def phi(self, t):
        return _pair_phi_at(self, t)


register_kernels(_pair_weights, _pair_phi, _csr_weights)
