"""Out-of-sample extension of a PCC fit: memberships of items left out of the fit.

With ``Y`` fitted on ``r`` items, an item ``x`` outside the fit gets the
solution of the K-dimensional convex problem

    min_{y on the simplex}  sum_j N_xj d_phi(c_xj / N_xj, y . y_j)

over sampled partners ``j`` among the fitted items (within-cluster partners
drawn from the ensemble plus uniformly random ones). This is the PCC
objective (eq. 3 of Lourenço et al. 2015) restricted to the pairs touching
``x`` with every fitted membership held fixed, so each item is solved on its
own with the paper's pairwise line-search moves: O(l K) per move with ``l``
partners, independent of ``n``.
"""

from __future__ import annotations

import numba
import numpy as np

from ..._validation import RandomState, check_labels, check_rng
from .._ensemble_pairs import cluster_partners
from ..coassociation import _count_pairs
from ._divergences import Bregman, _deriv, check_divergence


@numba.njit(cache=True, error_model="numpy")
def _rho(cval, nval, q, dlt, lo_t, hi_t, kind, par, eps):
    r = 0.0
    for t in range(lo_t, hi_t):
        d = dlt[t - lo_t]
        if d != 0.0:
            r += nval[t] * d * _deriv(kind, par, cval[t] / nval[t], q[t - lo_t] + eps * d)
    return r


@numba.njit(cache=True, error_model="numpy")
def _extend_items(indptr, partner, cval, nval, Yfit, Yout, kind, par, tol, max_steps, smooth):
    """Solve each item's problem in place on ``Yout``; returns the number of moves."""
    n_out = Yout.shape[0]
    K = Yfit.shape[1]
    g = np.empty(K)
    total = 0
    for x in range(n_out):
        lo_t = indptr[x]
        hi_t = indptr[x + 1]
        m = hi_t - lo_t
        y = Yout[x]
        if m == 0:
            for k in range(K):
                y[k] = 1.0 / K
            continue
        # start: partners' memberships weighted by how often they co-clustered with x
        wsum = 0.0
        for k in range(K):
            y[k] = 0.0
        for t in range(lo_t, hi_t):
            w = cval[t]
            if w > 0.0:
                wsum += w
                for k in range(K):
                    y[k] += w * Yfit[partner[t], k]
        for k in range(K):
            y[k] = (1.0 - smooth) * (y[k] / wsum if wsum > 0.0 else 1.0 / K) + smooth / K
        q = np.empty(m)
        dlt = np.empty(m)
        weight = 0.0
        for t in range(lo_t, hi_t):
            s = 0.0
            for k in range(K):
                s += y[k] * Yfit[partner[t], k]
            q[t - lo_t] = s
            weight += nval[t]
        for _ in range(max_steps):
            for k in range(K):
                g[k] = 0.0
            for t in range(lo_t, hi_t):
                w = nval[t] * _deriv(kind, par, cval[t] / nval[t], q[t - lo_t])
                if w != 0.0:
                    for k in range(K):
                        g[k] += w * Yfit[partner[t], k]
            u = 0
            v = -1
            for k in range(K):
                if g[k] < g[u]:
                    u = k
                if y[k] > 0.0 and (v < 0 or g[k] > g[v]):
                    v = k
            if v < 0 or v == u or not (g[v] - g[u] > tol * weight):
                break
            emax = y[v]
            for t in range(lo_t, hi_t):
                dlt[t - lo_t] = Yfit[partner[t], u] - Yfit[partner[t], v]
            rho0 = g[u] - g[v]
            r_hi = _rho(cval, nval, q, dlt, lo_t, hi_t, kind, par, emax)
            if r_hi <= 0.0:
                eps = emax
            else:
                # Illinois false position on the convex 1-D problem, keeping the left end
                # of the bracket so the objective never rises
                lo = 0.0
                hi = emax
                r_lo = rho0
                if np.isnan(r_hi) or np.isinf(r_hi):
                    r_hi = np.inf
                side = 0
                for _ in range(100):
                    if hi - lo <= 1e-10 * emax or -r_lo <= 1e-10 * -rho0:
                        break
                    if np.isinf(r_hi) or r_hi > 100.0 * -r_lo or -r_lo > 100.0 * r_hi:
                        e = 0.5 * (lo + hi)
                    else:
                        e = (lo * r_hi - hi * r_lo) / (r_hi - r_lo)
                        if not (lo < e < hi):
                            e = 0.5 * (lo + hi)
                    r = _rho(cval, nval, q, dlt, lo_t, hi_t, kind, par, e)
                    if np.isnan(r) or r > 0.0:
                        hi = e
                        r_hi = np.inf if np.isnan(r) else r
                        if side == 1 and not np.isinf(r_lo):
                            r_lo *= 0.5
                        side = 1
                    elif r < 0.0:
                        lo = e
                        r_lo = r
                        if side == -1 and not np.isinf(r_hi):
                            r_hi *= 0.5
                        side = -1
                    else:
                        lo = e
                        break
                eps = lo
            if not eps > 0.0:
                break
            y[u] += eps
            if eps >= emax:
                y[v] = 0.0
            else:
                y[v] -= eps
            for t in range(m):
                q[t] += eps * dlt[t]
            total += 1
    return total


KERNELS = ("_rho", "_extend_items")


def extension_pairs(
    labels: np.ndarray,
    fitted: np.ndarray,
    items: np.ndarray,
    *,
    n_per_item: int = 20,
    n_random: int = 10,
    random_state: RandomState = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Partners among ``fitted`` for every item of ``items``.

    ``n_per_item`` partners come from the item's cluster in a random partition
    that sampled it (restricted to fitted members of that cluster), and
    ``n_random`` uniformly from the fitted items. Returns ``(rows, cols)``
    sorted by ``rows`` (positions in ``items``) with duplicates removed;
    ``cols`` are positions in ``fitted``.
    """
    rng = check_rng(random_state)
    n_out = items.size
    r = fitted.size
    first, second = cluster_partners(labels, items, fitted, int(n_per_item), rng)
    if n_random > 0:
        first = np.concatenate([first, np.repeat(np.arange(n_out, dtype=np.int64), n_random)])
        second = np.concatenate([second, rng.integers(r, size=n_out * int(n_random))])
    key = first * r + second
    key.sort()
    if key.size:
        key = key[np.concatenate([[True], key[1:] != key[:-1]])]
    return key // r, key % r


def pcc_extend(
    labels: np.ndarray,
    fitted: np.ndarray,
    membership: np.ndarray,
    divergence: str | Bregman = "kl",
    *,
    n_per_item: int = 20,
    n_random: int = 10,
    tol: float = 1e-6,
    max_steps: int = 200,
    random_state: RandomState = 0,
) -> np.ndarray:
    """Memberships of all items from a PCC fit on the subset ``fitted``.

    Each item outside the fit solves ``min_y sum_j N_xj d(c_xj / N_xj, y . y_j)``
    over the simplex, with ``y_j`` the fitted memberships of its sampled
    partners (see :func:`extension_pairs`), by the paper's pairwise
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
    labels = check_labels(labels)
    bregman = check_divergence(divergence)
    n = labels.shape[0]
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
    for name, val in (("n_per_item", n_per_item), ("n_random", n_random)):
        if isinstance(val, bool) or int(val) != val or val < 0:
            raise ValueError(f"{name} must be a non-negative integer, got {val!r}.")
    if n_per_item + n_random < 1:
        raise ValueError("Give n_per_item > 0 or n_random > 0 partners per item.")
    out = np.ones(n, dtype=bool)
    out[fitted] = False
    items = np.flatnonzero(out)
    result = np.empty((n, Y.shape[1]))
    result[fitted] = Y
    if items.size == 0:
        return result
    rows, cols = extension_pairs(
        labels,
        fitted,
        items,
        n_per_item=n_per_item,
        n_random=n_random,
        random_state=random_state,
    )
    cval = np.empty(rows.size)
    nval = np.empty(rows.size)
    _count_pairs(labels, items[rows], fitted[cols], cval, nval)
    keep = nval > 0
    rows, cols, cval, nval = rows[keep], cols[keep], cval[keep], nval[keep]
    indptr = np.zeros(items.size + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=items.size), out=indptr[1:])
    Yout = np.empty((items.size, Y.shape[1]))
    kernel = bregman.kernels("_extend")["_extend_items"]
    kernel(
        indptr,
        np.ascontiguousarray(cols),
        cval,
        nval,
        Y,
        Yout,
        bregman.kind,
        bregman.param,
        float(tol),
        int(max_steps),
        1e-3,
    )
    np.clip(Yout, 0.0, None, out=Yout)
    Yout /= Yout.sum(axis=1, keepdims=True)
    result[items] = Yout
    return result
