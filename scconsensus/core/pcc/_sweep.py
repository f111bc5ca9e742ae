"""Sparse PCC by item visits: block-coordinate descent over a falling threshold.

The greedy solver of Lourenço et al. (2015, Sect. 5.4) moves the item with the
largest KKT gap (eq. 6) by one pairwise move, then patches the gradients of its
partners and a priority queue over all items: per move, a few scattered reads
and writes for each partner. Here an item is *visited* instead: its partners'
memberships are copied into contiguous buffers and its own subproblem (convex
in ``y_i`` by the double convexity of the divergence) is solved by the paper's
pairwise moves and exact line search (eqs. 9-10) on those buffers, until its
gap is below half the current threshold; the partners' gradients are patched
once per visit, not once per move. Every move lowers the objective.

Which items to visit follows the greedy order in coarse steps: a first-in
first-out list of the items whose gap is above a threshold, refilled by the
partners of every item that moved; once it is empty every gap is below the
threshold, which is halved, down to the tolerance. There the gaps are checked
once more on exact gradients (as the greedy solver does), so the solver stops
on the same KKT rule. On the kNN pairs ``tl.pcc`` fits (10,000 and 20,000
items, K = 20, KL) this took a third of the greedy solver's CPU time for the
same objective to 2e-5 (``benchmarks/pcc.py``).
"""

from __future__ import annotations

import functools

import numba
import numpy as np

from ..._threads import interruptible
from ._divergences import _deriv, _div, register_kernels
from ._greedy import (
    STATUS_CONVERGED,
    STATUS_MAX_ITER,
    STATUS_STALLED,
    _scan_all,
    _scan_item,
)
from ._linesearch import _line_search, _move
from ._sparse import _refresh_sparse, objective_trace, start_state

# a visit solves the item's subproblem to this share of the threshold (so that its
# partners' later moves rarely push it back above), in at most MAX_MOVES moves; the
# threshold falls by SHRINK. Measured on the Sect. 7.3 shape, l2: (SHRINK, INNER) =
# (0.5, 0.5) 10.0M moves, 4.1M visits; (0.5, 0.9) 8.2M, 5.0M at an objective 6e-4
# higher; (0.3, 0.5) 11.1M, 4.2M; 3 moves at most per visit: 10.1M, 5.1M
SHRINK = 0.5
INNER = 0.5
MAX_MOVES = 64


@numba.njit(cache=True, error_model="numpy")
def _item_gradient(p, w, q, Z, m, kind, par, g):
    """``g = sum_t w_t d'(p_t, q_t) z_t`` (eq. 7 for one item)."""
    K = g.shape[0]
    for k in range(K):
        g[k] = 0.0
    for t in range(m):
        c = w[t] * _deriv(kind, par, p[t], q[t])
        if c == 0.0:
            continue
        for k in range(K):
            g[k] += c * Z[t, k]


@numba.njit(cache=True, error_model="numpy")
def _item_objective(p, w, q, m, kind, par):
    f = 0.0
    for t in range(m):
        f += w[t] * _div(kind, par, p[t], q[t])
    return f


@numba.njit(cache=True, error_model="numpy")
def _visit(
    indptr, indices, cval, nval, Y, G, i, kind, par, target, max_moves, step_rtol, buf, Z
):  # fmt: skip
    """Solve item ``i``'s subproblem to a gap of ``target``; patch the partners' gradients.

    Returns ``(moves, objective change, stalled)``; ``G[i]`` is recomputed
    from the buffers, so it does not carry the drift of the patches.
    """
    K = Y.shape[1]
    p, w, q, dlt, q0 = buf[0], buf[1], buf[2], buf[3], buf[4]
    yold = buf[5, :K]
    # the partners into contiguous buffers: p = c / N, w = N, q = y_i . y_j, Z = y_j; q from
    # the memberships, not from the greedy solver's stored A, whose mirror slots cost a cache
    # miss per partner to keep (Sect. 7.3 shape, l2: 36-42 -> 30-41 s, KL 102-103 -> 96-100 s)
    m = 0
    lo = indptr[i]
    for t in range(lo, indptr[i + 1]):
        j = indices[t]
        nij = nval[t]
        p[m] = cval[t] / nij
        w[m] = nij
        a = 0.0
        for k in range(K):
            z = Y[j, k]
            Z[m, k] = z
            a += Y[i, k] * z
        q[m] = a
        q0[m] = a
        m += 1
    g = G[i]
    _item_gradient(p, w, q, Z, m, kind, par, g)
    u, v, gap = _scan_item(G, Y, i)
    for k in range(K):
        yold[k] = Y[i, k]
    f0 = _item_objective(p, w, q, m, kind, par)
    moves = 0
    stalled = False
    while gap > target and moves < max_moves:
        emax = Y[i, v]
        for t in range(m):
            dlt[t] = Z[t, u] - Z[t, v]
        eps = _line_search(p, w, q, dlt, m, kind, par, g[u] - g[v], emax, step_rtol)
        if not eps > 0.0:
            stalled = True
            break
        _move(Y[i], u, v, eps, emax)
        for t in range(m):
            q[t] += eps * dlt[t]
        _item_gradient(p, w, q, Z, m, kind, par, g)
        u, v, gap = _scan_item(G, Y, i)
        moves += 1
    if moves == 0:
        return 0, 0.0, stalled
    df = _item_objective(p, w, q, m, kind, par) - f0
    for t in range(m):
        s = lo + t
        j = indices[s]
        wold = w[t] * _deriv(kind, par, p[t], q0[t])
        wnew = w[t] * _deriv(kind, par, p[t], q[t])
        for k in range(K):
            G[j, k] += wnew * Y[i, k] - wold * yold[k]
    return moves, df, stalled


@numba.njit(cache=True, error_model="numpy", inline="always")
def _push(queue, queued, head, count, i):
    """Append ``i`` to the circular list ``queue[head : head + count]``; the new count."""
    n = queue.shape[0]
    queued[i] = True
    tail = head + count
    queue[tail if tail < n else tail - n] = i
    return count + 1


# nogil: seconds in one call (2.9 s at 10,000 items), so it runs in a worker thread that
# Ctrl-C can leave (solve_sweep)
@numba.njit(cache=True, error_model="numpy", nogil=True)
def _sweep_sparse(
    indptr, indices, cval, nval, Y, G, A, kind, par, max_iter, tol_abs, step_rtol, trace, stride,
    stop,
):  # fmt: skip
    """Visit items above a falling threshold until none is left; ``(n_moves, n_visits)``.

    ``G`` is exact on entry; ``A`` (a slot per stored pair) is the scratch of the
    exact refresh at the tolerance. ``trace[t // stride]`` accumulates the
    objective change of the visit that made move ``t``. Returns at the next visit once
    ``stop[0]`` is set (the caller was interrupted).
    """
    n, K = Y.shape
    deg = max(1, np.max(np.diff(indptr)))
    buf = np.empty((6, max(deg, K)))
    Z = np.empty((deg, K))
    queue = np.empty(n, np.int64)
    queued = np.zeros(n, np.bool_)
    gap = np.empty(n)
    top = 0.0
    for i in range(n):
        gap[i] = _scan_item(G, Y, i)[2]
        top = max(top, gap[i])
    it = 0
    visits = 0
    thr = top
    refreshed_at = -1
    while it < max_iter:
        thr = max(thr * SHRINK, tol_abs)
        target = INNER * thr
        head = 0
        count = 0
        for i in range(n):
            queued[i] = False
            if gap[i] > thr:
                count = _push(queue, queued, head, count, i)
        while count > 0 and it < max_iter:
            if stop[0]:
                return it, visits
            i = queue[head]
            head = head + 1 if head + 1 < n else 0
            count -= 1
            queued[i] = False
            moves, df, stalled = _visit(
                indptr, indices, cval, nval, Y, G, i, kind, par, target,
                min(MAX_MOVES, max_iter - it), step_rtol, buf, Z,
            )  # fmt: skip
            visits += 1
            gap[i] = _scan_item(G, Y, i)[2]
            if moves == 0:
                continue
            trace[it // stride] += df
            it += moves
            for t in range(indptr[i], indptr[i + 1]):
                j = indices[t]
                gap[j] = _scan_item(G, Y, j)[2]
                if gap[j] > thr and not queued[j]:
                    count = _push(queue, queued, head, count, j)
            if gap[i] > thr and not stalled and not queued[i]:
                count = _push(queue, queued, head, count, i)
        if thr <= tol_abs:
            if it == refreshed_at:
                break  # nothing moved since the exact gradients: every gap <= tol
            # incremental gradients drift: confirm on exact ones
            _refresh_sparse(indptr, indices, cval, nval, Y, A, G, kind, par)
            for i in range(n):
                gap[i] = _scan_item(G, Y, i)[2]
            refreshed_at = it
    return it, visits


def solve_sweep(
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
    """Sparse PCC by item visits from the start ``Y`` (modified in place).

    ``trace_every`` moves share one trace point (``None``: automatic). ``mirror``
    is taken for the solvers' common signature; the visits need none.

    Returns ``(objective_trace, n_iter, status, final_gap)`` as the greedy
    solvers do; ``n_iter`` counts moves (line searches), as theirs.
    """
    kind, par = bregman.kind, bregman.param
    A, G, f0, stride, trace = start_state(
        indptr, indices, cval, nval, Y, bregman, max_iter, trace_every
    )
    stop = np.zeros(1, dtype=np.bool_)
    n_iter, _ = interruptible(
        bregman.kernel(_sweep_sparse),
        indptr, indices, cval, nval, Y, G, A, kind, par, max_iter, tol_abs, step_rtol, trace,
        stride, stop,
        on_interrupt=functools.partial(stop.fill, True),
    )  # fmt: skip
    # the reported gap on exact gradients
    bregman.kernel(_refresh_sparse)(indptr, indices, cval, nval, Y, A, G, kind, par)
    n = Y.shape[0]
    U, V, gap = np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n)
    _scan_all(G, Y, U, V, gap)
    final = float(gap.max())
    if final <= tol_abs:
        status = STATUS_CONVERGED
    elif n_iter >= max_iter:
        status = STATUS_MAX_ITER
    else:
        status = STATUS_STALLED
    return objective_trace(f0, trace, n_iter, stride), int(n_iter), int(status), final


register_kernels(_sweep_sparse)
