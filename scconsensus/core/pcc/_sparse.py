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

from ._divergences import _deriv, _div, register_kernels
from ._greedy import (
    STATUS_CONVERGED,
    STATUS_MAX_ITER,
    STATUS_STALLED,
    _scan_all,
    _scan_item,
    trace_stride,
)
from ._linesearch import _delta_objective, _line_search, _move


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
def _gather_sparse(indptr, indices, cval, nval, A, Y, J, u, v, p, w, q, dlt):
    """The stored pairs ``(J, i)`` a move from ``v`` to ``u`` changes, into the search buffers."""
    m = 0
    for t in range(indptr[J], indptr[J + 1]):
        i = indices[t]
        d = Y[i, u] - Y[i, v]
        if d != 0.0:
            p[m] = cval[t] / nval[t]
            w[m] = nval[t]
            q[m] = A[t]
            dlt[m] = d
            m += 1
    return m


@numba.njit(cache=True, error_model="numpy")
def _update_sparse(indptr, indices, cval, nval, mirror, Y, A, G, J, u, v, eps, yold, kind, par):
    """Patch ``A`` and the gradients of ``J``'s stored partners after ``y_J`` moved."""
    K = Y.shape[1]
    du = Y[J, u] - yold[u]
    dv = Y[J, v] - yold[v]
    for t in range(indptr[J], indptr[J + 1]):
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


@numba.njit(cache=True, error_model="numpy")
def _rescan_sparse(indptr, indices, G, Y, U, V, gap, tree, size, J):
    """New scans of ``J``'s partners and their matches in the tournament tree."""
    for t in range(indptr[J], indptr[J + 1]):
        i = indices[t]
        U[i], V[i], gap[i] = _scan_item(G, Y, i)
        _tree_update(tree, gap, i, size)


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
    """Algorithm 1 on the stored pairs, in place on ``Y``, ``A`` (exact on entry) and ``G``.

    Returns ``(n_iter, status, final_gap)`` as :func:`._greedy._greedy_dense` does.
    """
    n, K = Y.shape
    U, V, gap = np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n)
    _scan_all(G, Y, U, V, gap)
    size = 1
    while size < n:
        size *= 2
    tree = np.empty((2 * size, 2))
    _tree_build(tree, gap, n, size)
    deg = max(1, np.max(np.diff(indptr)))
    p, w, q, dlt = np.empty(deg), np.empty(deg), np.empty(deg), np.empty(deg)
    yold = np.empty(K)
    it = 0
    status = STATUS_MAX_ITER
    refreshed_at = -(n + 1)
    while True:
        J = int(tree[1, 1])
        if gap[J] <= tol_abs:
            if it - refreshed_at > n // 4:
                _refresh_sparse(indptr, indices, cval, nval, Y, A, G, kind, par)
                _scan_all(G, Y, U, V, gap)
                _tree_build(tree, gap, n, size)
                refreshed_at = it
                continue
            status = STATUS_CONVERGED
            break
        if it >= max_iter:
            break
        u, v, emax = U[J], V[J], Y[J, V[J]]
        m = _gather_sparse(indptr, indices, cval, nval, A, Y, J, u, v, p, w, q, dlt)
        eps = _line_search(p, w, q, dlt, m, kind, par, G[J, u] - G[J, v], emax, step_rtol)
        if not eps > 0.0:
            status = STATUS_STALLED
            break
        trace[it // stride] += _delta_objective(p, w, q, dlt, m, kind, par, eps)
        yold[:] = Y[J]
        _move(Y[J], u, v, eps, emax)
        _update_sparse(indptr, indices, cval, nval, mirror, Y, A, G, J, u, v, eps, yold, kind, par)
        _rescan_sparse(indptr, indices, G, Y, U, V, gap, tree, size, J)
        _grad_row_sparse(indptr, indices, cval, nval, Y, A, kind, par, J, G[J])
        U[J], V[J], gap[J] = _scan_item(G, Y, J)
        _tree_update(tree, gap, J, size)
        it += 1
    _refresh_sparse(indptr, indices, cval, nval, Y, A, G, kind, par)
    _scan_all(G, Y, U, V, gap)
    return it, status, gap.max()


__all__ = ["STATUS_CONVERGED", "STATUS_MAX_ITER", "STATUS_STALLED"]


@numba.njit(cache=True, error_model="numpy")
def canonical_mirror(indptr, indices, cindptr, cindices, cval, nval, mirror):
    """Whether ``C``, ``N`` are a canonical pair of CSR matrices; ``mirror`` filled if so.

    Canonical: one pattern for both, column indices strictly increasing in each
    row (sorted, no duplicates), no diagonal, finite ``0 <= C <= N`` with
    ``N > 0``, and symmetric values. One pass over the entries, no sorting: in
    a sorted symmetric pattern the mirror of ``(i, j)``, visited with ``i``
    ascending, is the next unmatched entry of row ``j``. Anything else returns
    False, and the caller's general path decides (and words the error).
    """
    n = indptr.shape[0] - 1
    if indices.shape[0] != cindices.shape[0] or indptr[n] != indices.shape[0]:
        return False
    for i in range(n + 1):
        if indptr[i] != cindptr[i]:
            return False
    for i in range(n):
        prev = -1
        for t in range(indptr[i], indptr[i + 1]):
            j = indices[t]
            if j != cindices[t] or j <= prev or j == i or j >= n:
                return False
            prev = j
            nv = nval[t]
            cv = cval[t]
            # written so that NaN fails every test
            if not (0.0 < nv < np.inf and 0.0 <= cv <= nv):
                return False
    # nxt[j]: the first entry of row j not yet matched; rows j < i match the entries of
    # row i below the diagonal in order, so only the entries above it are looked up
    nxt = indptr[:n].copy()
    for i in range(n):
        lo = nxt[i]
        if lo < indptr[i + 1] and indices[lo] < i:
            return False  # (i, j) stored, (j, i) not
        for t in range(lo, indptr[i + 1]):
            j = indices[t]
            s = nxt[j]
            if s >= indptr[j + 1] or indices[s] != i:
                return False
            if nval[s] != nval[t] or cval[s] != cval[t]:
                return False
            mirror[t] = s
            mirror[s] = t
            nxt[j] = s + 1
    return True


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
    kind, par = bregman.kind, bregman.param
    A, G, f0, stride, trace = start_state(
        indptr, indices, cval, nval, Y, bregman, max_iter, trace_every
    )
    args = (indptr, indices, cval, nval, mirror, Y, A, G, kind, par)
    kernel = bregman.kernel(_greedy_sparse)
    n_iter, status, final = kernel(*args, max_iter, tol_abs, step_rtol, trace, stride)
    return objective_trace(f0, trace, n_iter, stride), int(n_iter), int(status), float(final)


def start_state(indptr, indices, cval, nval, Y, bregman, max_iter, trace_every):
    """``(A, G, f0, stride, trace)``: exact ``A``, gradients, objective at ``Y``; zero trace."""
    A = np.empty(indices.shape[0])
    G = np.empty_like(Y)
    kind, par = bregman.kind, bregman.param
    bregman.kernel(_refresh_sparse)(indptr, indices, cval, nval, Y, A, G, kind, par)
    f0 = bregman.kernel(_objective_sparse)(indptr, indices, cval, nval, Y, kind, par)
    # the objective change of every iteration, summed over blocks of `stride` iterations
    # so that the trace stays small (at most ~100k points) for long runs
    stride = trace_stride(max_iter, Y.shape[0] * Y.shape[1], trace_every)
    trace = np.zeros(-(-max_iter // stride) + 1)
    return A, G, f0, stride, trace


def objective_trace(f0, trace, n_iter, stride):
    """The objective at the start and at each block end, from the blocks' changes."""
    return f0 + np.concatenate([[0.0], np.cumsum(trace[: -(-n_iter // stride)])])


def objective_sparse(indptr, indices, cval, nval, Y, bregman) -> float:
    """Eq. (3) over the stored pairs ``i < j``."""
    fn = bregman.kernel(_objective_sparse)
    return float(fn(indptr, indices, cval, nval, Y, bregman.kind, bregman.param))


_ = (STATUS_CONVERGED, STATUS_MAX_ITER, STATUS_STALLED)


register_kernels(_refresh_sparse, _objective_sparse, _greedy_sparse)
