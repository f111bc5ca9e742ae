"""Out-of-sample extension of a PCC fit: memberships of items left out of the fit.

With ``Y`` fitted on ``r`` items, an item ``x`` outside the fit gets the
solution of the K-dimensional convex problem

    min_{y on the simplex}  sum_j N_xj d_phi(c_xj / N_xj, y . y_j)

over sampled partners ``j`` among the fitted items (within-cluster partners
drawn from the ensemble, favouring the partitions that put the item in a small
cluster, plus uniformly random ones). This is the PCC
objective (eq. 3 of Lourenço et al. 2015) restricted to the pairs touching
``x`` with every fitted membership held fixed, so each item is solved on its
own with the paper's pairwise line-search moves: O(l K) per move with ``l``
partners, independent of ``n``.
"""

from __future__ import annotations

import numba
import numpy as np
import scipy.sparse as sp

from ..._validation import RandomState, check_int, check_labels, check_rng
from .._ensemble_pairs import finest_partners
from ._divergences import Bregman, _deriv, check_divergence, register_kernels
from ._greedy import _scan_item
from ._linesearch import _line_search, _move
from ._parallel import ctrl_c_as_keyboard_interrupt, serial_twin, variant


# The per-partner helpers are inlined (numba's IR inlining): a call passing arrays counts
# references to each of them, and on the extension's few partners per move that was a
# third of the kernel (2.2 -> 1.3-1.7 s on 300,000 items of the 10^6 problem, same bits).
@numba.njit(cache=True, error_model="numpy", inline="always")
def _add_row(ysp, j, w, out):
    """``out += w * Yfit[j]`` over the nonzero entries of row ``j``."""
    yptr, yidx, yval = ysp
    for a in range(yptr[j], yptr[j + 1]):
        out[yidx[a]] += w * yval[a]


#: Start mass below this share of the largest is dropped (:func:`_start`).
START_FLOOR = 0.05


@numba.njit(cache=True, error_model="numpy", inline="always")
def _dot(ysp, j, y):
    """``y . Yfit[j]`` over the nonzero entries of row ``j``."""
    yptr, yidx, yval = ysp
    s = 0.0
    for a in range(yptr[j], yptr[j + 1]):
        s += y[yidx[a]] * yval[a]
    return s


@numba.njit(cache=True, error_model="numpy")
def _start(cval, partner, ysp, lo_t, hi_t, y):
    """Partners' memberships weighted by how often they co-clustered with the item,
    without the clusters below ``START_FLOOR`` of the largest.

    Not smoothed towards the centre: mass spread over all K clusters costs a move per
    cluster to take back (at 10^5 cells 21 moves per item against 8, for the same
    objective to 1e-8). For the same reason the partners' small shares are dropped: at
    10^6 cells they took 9.8 moves per item, 3.6 without them, for the same total
    objective to 7 digits (the moves put mass back where the gradient asks for it).
    A partner with ``c > 0`` whose clusters were all dropped gets its share back, so
    that every such pair keeps ``y . y_j > 0``: at ``0`` the pair's divergence (KL) or
    its derivative (power) is infinite, and the line search cannot size the first move.
    """
    K = y.shape[0]
    wsum = 0.0
    for k in range(K):
        y[k] = 0.0
    for t in range(lo_t, hi_t):
        w = cval[t]
        if w > 0.0:
            wsum += w
            _add_row(ysp, partner[t], w, y)
    if not wsum > 0.0:
        for k in range(K):
            y[k] = 1.0 / K
        return
    top = 0.0  # a loop: numba's np.max compiles for a second
    for k in range(K):
        top = max(top, y[k])
    for k in range(K):
        if y[k] < START_FLOOR * top:
            y[k] = 0.0
    for t in range(lo_t, hi_t):
        if cval[t] > 0.0 and not _dot(ysp, partner[t], y) > 0.0:
            _add_row(ysp, partner[t], cval[t], y)
    kept = 0.0
    for k in range(K):
        kept += y[k]
    for k in range(K):
        y[k] /= kept


@numba.njit(cache=True, error_model="numpy", inline="always")
def _gradient(cval, nval, partner, ysp, q, lo_t, hi_t, kind, par, g):
    """Gradient of the item's objective in ``y`` given ``q[t] = y . y_partner``."""
    for k in range(g.shape[0]):
        g[k] = 0.0
    for t in range(lo_t, hi_t):
        w = nval[t] * _deriv(kind, par, cval[t] / nval[t], q[t - lo_t])
        if w != 0.0:
            _add_row(ysp, partner[t], w, g)


@numba.njit(cache=True, error_model="numpy", inline="always")
def _gather_partners(cval, nval, partner, Yfit, q, lo_t, hi_t, u, v, dall, p, w, qa, dlt):
    """Every partner's ``delta`` into ``dall``; the pairs it changes into the search buffers."""
    m = 0
    for t in range(lo_t, hi_t):
        d = Yfit[partner[t], u] - Yfit[partner[t], v]
        dall[t - lo_t] = d
        if d != 0.0:
            p[m] = cval[t] / nval[t]
            w[m] = nval[t]
            qa[m] = q[t - lo_t]
            dlt[m] = d
            m += 1
    return m


@numba.njit(cache=True, error_model="numpy")
def _extend_one(cval, nval, partner, Yfit, ysp, lo_t, hi_t, y, kind, par, tol, max_steps, buf):
    """Greedy moves on one item's problem from the start ``y`` (in place); returns the moves.

    ``buf`` is scratch space of at least ``hi_t - lo_t`` columns and one row per buffer.
    """
    m = hi_t - lo_t
    q, dall, p, w, qa, dlt = buf[0], buf[1], buf[2], buf[3], buf[4], buf[5]
    g = buf[6, : y.shape[0]]
    weight = 0.0
    for t in range(lo_t, hi_t):
        q[t - lo_t] = _dot(ysp, partner[t], y)
        weight += nval[t]
    for step in range(max_steps):
        _gradient(cval, nval, partner, ysp, q, lo_t, hi_t, kind, par, g)
        u, v, gap = _scan_item(g.reshape(1, -1), y.reshape(1, -1), 0)
        if not gap > tol * weight:
            return step
        emax = y[v]
        na = _gather_partners(cval, nval, partner, Yfit, q, lo_t, hi_t, u, v, dall, p, w, qa, dlt)
        eps = _line_search(p, w, qa, dlt, na, kind, par, g[u] - g[v], emax, 1e-10)
        if not eps > 0.0:
            return step
        _move(y, u, v, eps, emax)
        for t in range(m):
            q[t] += eps * dall[t]
    return max_steps


#: Fewest items per block of the parallel extension (blocks are cut so that each thread
#: gets about eight: numba splits the blocks evenly and statically between its threads).
EXTEND_CHUNK = 64


def extend_block(n_items: int) -> int:
    """Items per block: about eight blocks per thread, at least :data:`EXTEND_CHUNK` (the
    bits do not depend on it, only the balance between threads)."""
    return max(EXTEND_CHUNK, -(-n_items // (8 * numba.get_num_threads())))


@serial_twin
@numba.njit(cache=True, error_model="numpy", parallel=True)
def _extend_items(
    indptr, partner, cval, nval, Yfit, ysp, Yout, rows, kind, par, tol, max_steps, chunk
):
    """Solve each item's problem in place on row ``rows[x]`` of ``Yout``, clipped at 0 and
    summing to 1; returns the number of moves.

    ``ysp`` is ``(indptr, indices, values)`` of the nonzero entries of ``Yfit``: fitted
    rows put mass on few clusters (2 of 20 at 10^6 cells), and the start, the pairs'
    ``q`` and the gradient sum over those only, which skips exact zeros and so gives the
    dense sums' bits. Blocks of ``chunk`` items run in parallel: each item's problem reads
    only the fixed fit and writes only its own row (the scratch ``buf`` is rewritten before
    it is read, so numba may share one per thread), and the bits do not depend on the
    threads or the blocks (at 10^6 cells on 16 cores the extension was one thread while the
    rest spun).
    """
    deg = max(Yout.shape[1], np.max(np.diff(indptr)))
    n_chunks = (rows.shape[0] + chunk - 1) // chunk
    total = 0
    for c in numba.prange(n_chunks):
        buf = np.empty((7, deg))
        moves = 0
        for x in range(c * chunk, min(rows.shape[0], (c + 1) * chunk)):
            lo_t = indptr[x]
            hi_t = indptr[x + 1]
            y = Yout[rows[x]]
            if hi_t == lo_t:
                y[:] = 1.0 / y.shape[0]
                continue
            _start(cval, partner, ysp, lo_t, hi_t, y)
            moves += _extend_one(
                cval, nval, partner, Yfit, ysp, lo_t, hi_t, y, kind, par, tol, max_steps, buf
            )
            _on_simplex(y)
        total += moves
    return total


@numba.njit(cache=True, error_model="numpy", inline="always")
def _on_simplex(y):
    """Clear the moves' rounding: negative entries to 0, the row rescaled to sum 1."""
    s = 0.0
    for k in range(y.shape[0]):
        y[k] = max(y[k], 0.0)
        s += y[k]
    for k in range(y.shape[0]):
        y[k] /= s


def extension_candidates(
    labels: np.ndarray,
    fitted: np.ndarray,
    items: np.ndarray,
    *,
    n_per_item: int = 20,
    n_random: int = 10,
    random_state: RandomState = 0,
    numbered: bool | None = None,
) -> np.ndarray:
    """``(n_items, n_per_item + n_random)`` candidate partners, positions in ``fitted``.

    Row ``x`` holds ``n_per_item`` partners from the cluster of ``items[x]`` in a
    partition drawn with probability inversely proportional to that cluster's number of
    fitted members (restricted to those members), then ``n_random`` uniform ones; a
    partner may appear twice. ``numbered`` as
    :func:`~scconsensus.core._labels.compact_labels` takes it (``None``: checked here).

    Partitions drawn uniformly put a rare population's cells with the large neighbour
    that most partitions merge it with, and the extension follows its partners there:
    at 100,000 cells, fitted on 10,000, the recall of a population of 0.1 % (data seeds
    1, 2) and 0.5 % (seed 0) rose from 0.46 / 0.22 / 0.52 to 0.88 / 0.50 / 0.91
    (``benchmarks/pcc_fit_size.py``, table in ``benchmarks/README.md``).
    """
    rng = check_rng(random_state)
    n_out = items.size
    second = finest_partners(labels, items, fitted, n_per_item, rng, numbered)
    cand = [second.reshape(n_out, int(n_per_item))]
    if n_random > 0:
        cand.append(rng.integers(fitted.size, size=(n_out, int(n_random))))
    return np.ascontiguousarray(np.hstack(cand), dtype=np.int64)


@numba.njit(cache=True)
def _partner_rows(cand, labels, items, fit_labels, cols, cval, nval):  # pragma: no cover
    """Each item's distinct candidates in increasing order with their pair counts (CSR).

    Fills ``cols``/``cval``/``nval`` row after row, leaving out partners never sampled
    with the item; returns ``indptr``. One pass per item: a global sort of the
    ``(item, partner)`` keys and a separate count over the whole ensemble took 11 s of
    the extension at 10^6 items, most of it in cache misses on the fitted rows, which
    ``fit_labels`` (``labels[fitted]``) keeps together.
    """
    n_out, m = cand.shape
    indptr = np.zeros(n_out + 1, dtype=np.int64)
    row = np.empty(m, dtype=np.int64)
    t = 0
    for x in range(n_out):
        for a in range(m):  # insertion sort of the item's few candidates
            v = cand[x, a]
            b = a
            while b > 0 and row[b - 1] > v:
                row[b] = row[b - 1]
                b -= 1
            row[b] = v
        for a in range(m):
            j = row[a]
            if a > 0 and j == row[a - 1]:
                continue
            c = 0
            k = 0
            for r in range(labels.shape[1]):
                u = labels[items[x], r]
                w = fit_labels[j, r]
                if u >= 0 and w >= 0:
                    k += 1
                    c += u == w
            if k > 0:
                cols[t] = j
                cval[t] = c
                nval[t] = k
                t += 1
        indptr[x + 1] = t
    return indptr


#: Line-search moves per extended item at most (:func:`pcc_extend`'s default).
MAX_STEPS = 200


def pcc_extend(
    labels: np.ndarray,
    fitted: np.ndarray,
    membership: np.ndarray,
    divergence: str | Bregman = "kl",
    *,
    n_per_item: int = 20,
    n_random: int = 10,
    tol: float = 1e-6,
    max_steps: int = MAX_STEPS,
    random_state: RandomState = 0,
) -> np.ndarray:
    """Memberships of all items from a PCC fit on the subset ``fitted``.

    Each item outside the fit solves ``min_y sum_j N_xj d(c_xj / N_xj, y . y_j)``
    over the simplex, with ``y_j`` the fitted memberships of its sampled
    partners (see :func:`extension_candidates`), by the paper's pairwise
    line-search moves until the relative KKT gap is below ``tol``.

    Parameters
    ----------
    labels
        ``(n_items, n_partitions)`` ensemble labels, ``-1`` where unsampled.
    fitted
        Indices of the ``r`` fitted items.
    membership
        ``(r, k)`` fitted memberships (rows on the simplex), in the order of ``fitted``.
    divergence
        The divergence of the fit.
    n_per_item, n_random
        Within-cluster and random fitted partners per extended item.
    tol
        Relative KKT tolerance of each item's problem.
    max_steps
        Line-search moves per item at most.
    random_state
        Seed for the partners.

    Returns
    -------
    ``(n_items, k)`` memberships; rows of ``fitted`` are ``membership``.
    Items with no co-sampled partner get uniform rows.

    Examples
    --------
    >>> import numpy as np
    >>> from scconsensus.core.pcc import pcc_extend
    >>> labels = np.repeat([[0, 0], [1, 1]], 10, axis=0).astype(np.int32)
    >>> fitted = np.arange(0, 20, 2)
    >>> Y = np.eye(2)[labels[fitted, 0]] * 0.98 + 0.01
    >>> pcc_extend(labels, fitted, Y).argmax(1)[:12:3]
    array([0, 0, 0, 0])
    """
    partners = (n_per_item, n_random, random_state)
    labels = check_labels(labels)
    return extend_checked(labels, fitted, membership, divergence, partners, tol, max_steps)


def extend_checked(
    labels, fitted, membership, divergence, partners, tol, max_steps, numbered=None
) -> np.ndarray:
    """:func:`pcc_extend` of checked ``labels`` (its other arguments are checked here;
    ``partners``: ``(n_per_item, n_random, random_state)``); ``numbered`` as
    :func:`~scconsensus.core._labels.compact_labels` takes it (``None``: checked here)."""
    bregman = check_divergence(divergence)
    fitted, Y = _check_fit(fitted, membership, labels.shape[0])
    n_per_item = check_int(partners[0], "n_per_item", 0)
    n_random = check_int(partners[1], "n_random", 0)
    if n_per_item + n_random < 1:
        raise ValueError("Give n_per_item > 0 or n_random > 0 partners per item.")
    kw = {"n_per_item": n_per_item, "n_random": n_random, "random_state": partners[2]}
    out = np.ones(labels.shape[0], dtype=bool)
    out[fitted] = False
    items = np.flatnonzero(out)
    result = np.empty((labels.shape[0], Y.shape[1]))
    result[fitted] = Y
    if items.size == 0:
        return result
    indptr, cols, cval, nval = _partner_table(labels, fitted, items, numbered=numbered, **kw)
    kernel = variant(bregman.kernel(_extend_items), items.size)
    args = (bregman.kind, bregman.param, float(tol), int(max_steps), extend_block(items.size))
    ysp = sp.csr_matrix(Y)
    ysp = (ysp.indptr.astype(np.int64), ysp.indices.astype(np.int64), ysp.data)
    # in place on the result's rows: a block of extended rows, clipped, rescaled and
    # copied over took 1.2 s at 10^6 items
    with ctrl_c_as_keyboard_interrupt():  # numba's threads may take the SIGINT
        kernel(indptr, cols, cval, nval, Y, ysp, result, items, *args)
    return result


def _check_fit(fitted, membership, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``fitted`` as distinct int64 item indices and ``membership`` as float rows on the simplex."""
    fitted = np.asarray(fitted)
    if fitted.ndim != 1 or fitted.dtype.kind not in "iu":
        raise ValueError("fitted must be a 1-D array of item indices.")
    fitted = fitted.astype(np.int64)
    if fitted.size < 1 or fitted.min() < 0 or fitted.max() >= n:
        raise ValueError(f"fitted must index items in 0..{n - 1}.")
    if np.unique(fitted).size != fitted.size:
        raise ValueError("fitted has repeated item indices.")
    Y = np.ascontiguousarray(membership, dtype=np.float64)
    if Y.ndim != 2 or Y.shape[0] != fitted.size:
        raise ValueError(
            f"membership must have one row per fitted item ({fitted.size}), got shape {Y.shape}."
        )
    if not np.all(np.isfinite(Y)) or (Y < 0).any() or not np.allclose(Y.sum(1), 1.0):
        raise ValueError("membership rows must be finite, non-negative and sum to 1.")
    return fitted, Y


def _partner_table(labels, fitted, items, **kw) -> tuple[np.ndarray, ...]:
    """``(indptr, cols, cval, nval)``: each item's co-sampled partners (CSR by item) and counts."""
    cand = extension_candidates(labels, fitted, items, **kw)
    size = cand.size
    cols, cval, nval = np.empty(size, dtype=np.int64), np.empty(size), np.empty(size)
    fit_labels = np.ascontiguousarray(labels[fitted])
    indptr = _partner_rows(cand, labels, items, fit_labels, cols, cval, nval)
    t = indptr[-1]  # views: a copy costs more than the few dropped entries it frees
    return indptr, cols[:t], cval[:t], nval[:t]


register_kernels(_extend_items)
