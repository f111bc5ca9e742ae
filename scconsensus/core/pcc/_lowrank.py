"""Squared-l2 PCC on all pairs without an ``n x n`` matrix (the co-association is low rank).

With ``H_l`` the one-hot labels of partition ``l`` (rows of items it did not
sample are zero) and ``S`` the ``n x R`` sampled-indicator matrix, the counts
are ``C = sum_l H_l H_l^T`` and ``N = S S^T``. The l2 objective of Lourenço et
al. (2015), eq. (3)-(4),

    f(Y) = sum_{i<j, N_ij > 0} N_ij (c_ij / N_ij - y_i . y_j)^2
         = sum_{i<j} (N_ij q_ij^2 - 2 c_ij q_ij) + sum_{i<j} c_ij^2 / N_ij,

splits into a part that depends on ``Y`` and a constant. With
``M_r = Y_r^T Y_r`` (``K x K``, over the items partition ``r`` sampled) and
``T_l = H_l^T Y`` (cluster sums), ``sum_{ij} N_ij q_ij^2 = sum_r |M_r|_F^2``
and ``sum_{ij} c_ij q_ij = sum_l |T_l|_F^2``; the diagonal ``i = j``
(``N_ii = c_ii`` = partitions sampling ``i``) is subtracted explicitly. The
gradient the batch solver uses, ``g_i = sum_{j != i} 2 (N_ij q_ij - c_ij) y_j``,
is ``2 (sum_r s_ir M_r y_i - N_ii |y_i|^2 y_i - sum_l T_l[label_il] + N_ii y_i)``,
and the curvature ``h_ik = 2 sum_{j != i} N_ij y_jk^2`` comes from the sampled
sums of ``Y o Y``. The constant ``sum c_ij^2 / N_ij`` is not low rank when
partitions subsample (``N_ij`` varies), so the objective reported here leaves
it out; :func:`l2_constant` computes it in O(n^2 R) when wanted.

Cost per gradient. Each item's ``sum_r s_ir M_r`` would cost ``R K^2``; but
``sum_r s_ir M_r = sum_r M_r - sum_{r: i unsampled} M_r``, and a partition that
samples most items (the default ensemble subsamples 80 %) is cheaper through
its complement: ``M_r = Y^T Y - sum_{i not in r} y_i y_i^T``. So every item
lists its *exceptions*, the partitions that sampled it when they sample at most
half of the items and those that did not sample it otherwise, and only those
cost per item: O(n R min(rho, 1 - rho) s K) with ``s`` the support of a row
(``y_i`` becomes sparse as the solver goes, and the kernels skip its zeros),
plus O(n R s) for the cluster sums and O(n R K) to gather them back. Memory is
O(n (R + K)).

Along a segment ``Y + t D`` of the batch solver every term above is a
polynomial in ``t`` (degree 4 for the ``N`` part, 2 for the ``C`` part), so
the segment search gets ``phi'(t)`` and ``phi''(t)`` exactly from a few
``K x K`` inner products per partition: the line search and the KKT stopping
rule are the batch solver's (:mod:`._batch`), run on this operator.
"""

from __future__ import annotations

import numba
import numpy as np

from ..._docs import doc_params
from ..._threads import one_blas_thread
from ..._validation import check_labels, check_min_mass, check_n_clusters
from .._labels import compact_labels
from .._pairs import pair_counts
from ..membership import hard_labels
from . import _batch, _batch_steps
from ._core import _check_run, _memberships, _starts
from ._divergences import KIND_L2, Bregman, check_divergence
from ._doc import PCC_PARAMS
from ._greedy import STATUS_CONVERGED, STATUS_MAX_ITER
from ._result import PCCResult

__all__ = ["LowRankL2", "check_lowrank_options", "l2_constant", "pcc_lowrank"]


@numba.njit(cache=True)
def _exceptions(lab, direct):
    """Each partition's exception items (CSR ``pptr``, ``pidx``; ascending).

    Partition ``r`` is direct when it samples at most half of the items: its
    exceptions are the items it sampled; otherwise those it did not sample.
    """
    n, R = lab.shape
    pptr = np.zeros(R + 1, np.int64)
    for i in range(n):
        for r in range(R):
            if (lab[i, r] >= 0) == direct[r]:
                pptr[r + 1] += 1
    for r in range(R):
        pptr[r + 1] += pptr[r]
    pidx = np.empty(pptr[R], np.int64)
    fill = pptr[:R].copy()
    for i in range(n):
        for r in range(R):
            if (lab[i, r] >= 0) == direct[r]:
                pidx[fill[r]] = i
                fill[r] += 1
    return pptr, pidx


@numba.njit(cache=True)
def _sampled_counts(lab, sizes):
    """``(N_ii, sum_{j != i} N_ij)`` per item, from the partition sizes ``n_r``."""
    n, R = lab.shape
    cnt = np.zeros(n)
    weight = np.zeros(n)
    for i in range(n):
        for r in range(R):
            if lab[i, r] >= 0:
                cnt[i] += 1.0
                weight[i] += sizes[r]
        weight[i] -= cnt[i]
    return cnt, weight


@numba.njit(cache=True)
def _cluster_sums(lab, off, Y, T):
    """``T[off[l] + c] = sum of y_i over the items partition l put in cluster c``."""
    n, K = Y.shape
    T[...] = 0.0
    for i in range(n):
        for r in range(lab.shape[1]):
            c = lab[i, r]
            if c >= 0:
                row = off[r] + c
                for k in range(K):
                    T[row, k] += Y[i, k]


@numba.njit(cache=True)
def _row_terms(Y, cnt):
    """``(sum N_ii |y_i|^4, sum N_ii |y_i|^2)``: the diagonal ``i = j`` of the two sums."""
    quad = 0.0
    lin = 0.0
    for i in range(Y.shape[0]):
        a = 0.0
        for k in range(Y.shape[1]):
            a += Y[i, k] * Y[i, k]
        quad += cnt[i] * a * a
        lin += cnt[i] * a
    return quad, lin


@numba.njit(cache=True)
def _scatter(G, H, idx, P, v, sign, curvature):
    """``G[idx] += sign P`` and ``H[idx] += sign v`` (one partition's exceptions)."""
    K = G.shape[1]
    for u in range(idx.shape[0]):
        i = idx[u]
        for k in range(K):
            G[i, k] += sign * P[u, k]
        if curvature:
            for k in range(K):
                H[i, k] += sign * v[k]


@numba.njit(cache=True)
def _finish_gradient(Y, lab, off, T, cnt, Vc, G, H, curvature):
    """The gradient and curvature from their partition sums, in place on ``G``, ``H``.

    ``G = 2 (G + N_ii (1 - |y_i|^2) y_i - sum_l T_l[label_il])`` and
    ``H = 2 (H + Vc - N_ii y_i o y_i)``. On entry ``G`` holds ``sum_r s_ir M_r y_i``
    and ``H`` the exceptions' share of ``sum_r s_ir V_r`` (``Vc``: the complement
    partitions', every item's).
    """
    n, K = Y.shape
    for i in range(n):
        nrm = 0.0
        for k in range(K):
            nrm += Y[i, k] * Y[i, k]
        ci = cnt[i]
        w = ci * (1.0 - nrm)
        for k in range(K):
            G[i, k] += w * Y[i, k]
        for r in range(lab.shape[1]):
            c = lab[i, r]
            if c >= 0:
                row = off[r] + c
                for k in range(K):
                    G[i, k] -= T[row, k]
        for k in range(K):
            G[i, k] *= 2.0
        if curvature:
            for k in range(K):
                H[i, k] = 2.0 * (H[i, k] + Vc[k] - ci * Y[i, k] * Y[i, k])


@numba.njit(cache=True)
def _row_segment(Y, D, cnt):
    """Coefficients in ``t`` of ``sum N_ii |y_i + t d_i|^4`` and of ``sum N_ii |y_i + t d_i|^2``."""
    quad = np.zeros(5)
    lin = np.zeros(3)
    for i in range(Y.shape[0]):
        a = 0.0
        b = 0.0
        e = 0.0
        for k in range(Y.shape[1]):
            a += Y[i, k] * Y[i, k]
            b += 2.0 * Y[i, k] * D[i, k]
            e += D[i, k] * D[i, k]
        c = cnt[i]
        quad[0] += c * a * a
        quad[1] += c * 2.0 * a * b
        quad[2] += c * (b * b + 2.0 * a * e)
        quad[3] += c * 2.0 * b * e
        quad[4] += c * e * e
        lin[0] += c * a
        lin[1] += c * b
        lin[2] += c * e
    return quad, lin


@numba.njit(cache=True)
def _pair_constant(lab):
    """``sum_{i<j, N_ij > 0} c_ij^2 / N_ij``, pair by pair: O(n^2 R), O(1) extra memory."""
    n = lab.shape[0]
    total = 0.0
    for i in range(n):
        row = 0.0
        for j in range(i + 1, n):
            c, m = pair_counts(lab, i, j)
            if m > 0:
                row += c * c / m
        total += row
    return total


def _compact(labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(lab, off)``: labels numbered ``0..k-1`` per partition, row offsets per partition."""
    # sparse label values would make the cluster-sum table large: renumber them
    lab = compact_labels(labels)
    top = lab.max(axis=0).clip(min=-1) + 1
    off = np.zeros(labels.shape[1] + 1, np.int64)
    np.cumsum(top, out=off[1:])
    return np.ascontiguousarray(lab, dtype=np.int32), off


def _quartic_terms(c: np.ndarray, t: float) -> tuple[float, float]:
    """First and second derivative at ``t`` of ``sum_k c[k] t^k``."""
    d1 = 0.0
    d2 = 0.0
    for k in range(len(c) - 1, 0, -1):
        d1 = d1 * t + k * c[k]
    for k in range(len(c) - 1, 1, -1):
        d2 = d2 * t + k * (k - 1) * c[k]
    return d1, d2


class LowRankL2:
    """The l2 PCC objective on all pairs of an ensemble, from its labels alone.

    Implements the evaluator interface of the batch solver (:mod:`._batch`):
    :meth:`weights` (objective, gradient, curvature), :meth:`segment` and
    :meth:`phi` (the search along ``Y + t D``), and ``wrow`` (each item's
    co-sampled weight ``sum_{j != i} N_ij``, floored at 1).

    Parameters
    ----------
    labels
        ``(n, R)`` ensemble labels, ``-1`` where a partition did not sample the item.
    """

    def __init__(self, labels: np.ndarray):
        labels = check_labels(labels)
        self.lab, self.off = _compact(labels)
        n, R = labels.shape
        sizes = (labels >= 0).sum(axis=0).astype(np.float64)
        # N_ii = c_ii, and sum_{j != i} N_ij = sum_r s_ir n_r - N_ii
        self.cnt, self.row_weight = _sampled_counts(self.lab, sizes)
        self.direct = sizes <= 0.5 * n
        self.sign = np.where(self.direct, 1.0, -1.0)
        self.pptr, self.pidx = _exceptions(self.lab, self.direct)
        self.n, self.R = n, R
        self.wrow = np.where(self.row_weight > 0, self.row_weight, 1.0)
        self.weight = float(self.row_weight.sum())
        self._seg = None
        self._last = None

    def _rows(self, r: int) -> np.ndarray:
        return self.pidx[self.pptr[r] : self.pptr[r + 1]]

    def _partition_grams(self, Y, G=None, H=None, curvature=True):
        """``M_r``, ``V_r`` of each partition, and their sums over the complement ones.

        With ``G``, ``H`` given, the exceptions' shares of ``sum_r s_ir M_r y_i``
        and ``sum_r s_ir V_r`` are added to them on the way (``+`` direct, ``-``
        complement partitions), each partition's rows gathered once for both.
        """
        K = Y.shape[1]
        Mall, Vall = Y.T @ Y, np.einsum("ik,ik->k", Y, Y)
        M, V = np.empty((self.R, K, K)), np.empty((self.R, K))
        for r in range(self.R):
            Yr = Y[self._rows(r)]
            # BLAS on the gathered rows measured 3-4x faster than a numba loop over them
            M[r], V[r] = Yr.T @ Yr, np.einsum("ik,ik->k", Yr, Yr)
            if not self.direct[r]:
                M[r], V[r] = Mall - M[r], Vall - V[r]
            if G is not None:
                _scatter(G, H, self._rows(r), Yr @ M[r], V[r], self.sign[r], curvature)
        comp = ~self.direct
        return M, M[comp].sum(axis=0), V, V[comp].sum(axis=0)

    def objective(self, Y: np.ndarray) -> float:
        """The objective at ``Y`` without the constant ``sum_{i<j} c_ij^2 / N_ij``."""
        Y = np.ascontiguousarray(Y, dtype=np.float64)
        M = self._partition_grams(Y)[0]
        T = np.empty((self.off[-1], Y.shape[1]))
        _cluster_sums(self.lab, self.off, Y, T)
        return self._value(Y, M, T)

    def _value(self, Y, M, T) -> float:
        quad, lin = _row_terms(Y, self.cnt)
        return 0.5 * (float(np.vdot(M, M)) - quad) - (float(np.vdot(T, T)) - lin)

    def weights(self, Y, G, H, curvature=True) -> float:
        """Objective at ``Y`` (without the constant); ``G``, ``H`` overwritten.

        ``H`` is left as is when ``curvature`` is false.
        """
        G[...] = 0.0
        if curvature:
            H[...] = 0.0
        M, Mc, _, Vc = self._partition_grams(Y, G, H, curvature)
        G += Y @ Mc
        T = np.empty((self.off[-1], Y.shape[1]))
        _cluster_sums(self.lab, self.off, Y, T)
        # the batch solver's next segment starts at the last point evaluated: keep its sums
        self._last = (Y.copy(), M, T)
        _finish_gradient(Y, self.lab, self.off, T, self.cnt, Vc, G, H, curvature)
        return self._value(Y, M, T)

    def outside(self, Z) -> bool:
        """False: squared l2 is finite everywhere (the batch solver's domain check)."""
        return False

    def segment(self, Y, D) -> None:
        """Coefficients in ``t`` of ``f(Y + t D)`` (a quartic), for :meth:`phi`."""
        Y0, M, T = self._last if self._last is not None else (None, None, None)
        if Y0 is None or not np.array_equal(Y0, Y):
            M = self._partition_grams(Y)[0]
            T = np.empty((self.off[-1], Y.shape[1]))
            _cluster_sums(self.lab, self.off, Y, T)
        K = Y.shape[1]
        B, E = np.empty((self.R, K, K)), np.empty((self.R, K, K))
        Ball, Eall = Y.T @ D, D.T @ D
        for r in range(self.R):
            rows = self._rows(r)
            Yr, Dr = Y[rows], D[rows]
            B[r], E[r] = Yr.T @ Dr, Dr.T @ Dr
            if not self.direct[r]:
                B[r], E[r] = Ball - B[r], Eall - E[r]
        B += B.transpose(0, 2, 1)
        # sum_r |M_r + t B_r + t^2 E_r|_F^2
        pm = np.array(
            [
                np.vdot(M, M),
                2.0 * np.vdot(M, B),
                np.vdot(B, B) + 2.0 * np.vdot(M, E),
                2.0 * np.vdot(B, E),
                np.vdot(E, E),
            ]
        )
        U = np.empty_like(T)
        _cluster_sums(self.lab, self.off, D, U)
        pc = np.array([np.vdot(T, T), 2.0 * np.vdot(T, U), np.vdot(U, U)])
        quad, lin = _row_segment(Y, D, self.cnt)
        self._seg = 0.5 * (pm - quad)
        self._seg[:3] -= pc - lin

    def phi(self, t):
        """``(phi'(t), phi''(t))`` of ``phi(t) = f(Y + t D)`` on the last :meth:`segment`."""
        return _quartic_terms(self._seg, float(t))


def l2_constant(labels: np.ndarray) -> float:
    """``sum_{i<j, N_ij > 0} c_ij^2 / N_ij``: the l2 objective's part that does not depend on ``Y``.

    Adding it to the objective of :func:`pcc_lowrank` gives eq. (3) of Lourenço
    et al. (2015) as the dense route computes it. It costs O(n^2 R) time (pair
    by pair, O(1) extra memory): for checks and moderate ``n``.

    Parameters
    ----------
    labels
        ``(n, R)`` ensemble labels, ``-1`` where a partition did not sample the item.

    Returns
    -------
    The constant.
    """
    return float(_pair_constant(check_labels(labels)))


def solve_lowrank(op: LowRankL2, Y: np.ndarray, *, max_iter: int, tol_abs: float):
    """The batch solver's steps on ``op``, in place on ``Y``.

    Returns ``(objective_trace, n_iter, status, final_gap)``. There is no greedy
    polish (it would need the pairs): a run that stalls above the tolerance
    reports ``max_iter`` status with its gap.
    """
    # as in the batch solver: one BLAS thread keeps results the same for any setting
    with one_blas_thread():
        trace, n_iter, converged, G = _batch._batch_phase(
            op, Y, max_iter=min(max_iter, 10_000), tol_abs=tol_abs
        )
    status = STATUS_CONVERGED if converged else STATUS_MAX_ITER
    return np.asarray(trace, dtype=np.float64), n_iter, status, float(_batch_steps._kkt_gap(G, Y))


def check_lowrank_options(divergence, solver: str = "batch") -> Bregman:
    """The divergence of the low-rank route, checked: l2 only, with the batch steps.

    Raises
    ------
    ValueError
        For another divergence (its terms are not low rank) or ``solver="greedy"``.
    """
    bregman = check_divergence(divergence)
    if bregman.kind != KIND_L2:
        raise ValueError(
            f"mode='lowrank' fits divergence='l2' only, got {bregman.name!r}: the terms of "
            "other divergences are not low rank. Use sampled pairs (mode='sparse') or the "
            "dense co-association (mode='dense') for them."
        )
    if solver not in ("auto", "batch"):
        raise ValueError(
            f"mode='lowrank' runs the batch steps (solver='batch' or 'auto'), got "
            f"solver={solver!r}: the greedy solver needs the pairs themselves."
        )
    return bregman


def _check_lowrank(labels, divergence) -> tuple[Bregman, LowRankL2]:
    """The divergence (l2 only) and the operator of ``labels``, checked."""
    bregman = check_lowrank_options(divergence)
    op = LowRankL2(labels)
    if op.n < 3:
        raise ValueError(f"PCC needs at least 3 items, got {op.n}.")
    if op.weight <= 0:
        raise ValueError(
            "No pair of items was ever co-sampled; the ensemble carries no co-association evidence."
        )
    return bregman, op


def _fit(op: LowRankL2, Y: np.ndarray, max_iter: int, tol_abs: float) -> tuple:
    """One start, in place on ``Y``: ``(objective, trace, n_iter, status, gap, Y)``."""
    trace, n_iter, status, gap = solve_lowrank(op, Y, max_iter=max_iter, tol_abs=tol_abs)
    if not np.all(np.isfinite(Y)):  # pragma: no cover - a solver bug, never user input
        raise RuntimeError("PCC produced non-finite memberships; please report this.")
    # one BLAS thread, as in the steps: the objective picks the best start
    with one_blas_thread():
        obj = op.objective(Y)
    trace[-1] = obj
    return obj, trace, n_iter, status, gap, Y


@doc_params(**PCC_PARAMS)
def pcc_lowrank(
    labels: np.ndarray,
    n_clusters: int,
    divergence: str | Bregman = "l2",
    *,
    n_init: int | None = None,
    init: np.ndarray | None = None,
    tol: float = 1e-4,
    min_mass: float = 0.5,
    max_iter: int | None = None,
    random_state=0,
) -> PCCResult:
    """Squared-l2 PCC on all pairs of an ensemble, without forming the ``n x n`` co-association.

    Minimises the same objective as :func:`scconsensus.core.pcc.pcc` with
    ``divergence="l2"`` on the dense co-association of ``labels`` (eq. (3)-(4)
    of Lourenço et al. 2015), with the batch solver's steps and KKT stopping
    rule, from the labels alone: each step costs O(n R K s) time (``s`` the
    support of a membership row, ``K`` at most) and O(n (R + K)) memory
    instead of O(n^2 K) and O(n^2).

    Parameters
    ----------
    labels
        ``(n, R)`` ensemble labels, ``-1`` where a partition did not sample the item.
    n_clusters
        Maximum number of clusters ``K``; clusters left without mass are dropped.
    divergence
        ``"l2"`` only: the KL and other Bregman terms are not low rank (use
        sampled pairs, ``scconsensus.core.pcc.pcc`` on a sparse co-association).
    {pcc_starts}
    tol, min_mass
        As for :func:`scconsensus.core.pcc.pcc` (relative KKT tolerance; empty clusters).
        Steps stop gaining near a relative gap of ``2e-7`` (20,000 items; the rounding
        of the sums the objective is a difference of): a smaller ``tol`` ends there.
    max_iter
        Batch steps per start, at most 10,000 (``None``: ``50 n K``, capped so).
    {random_state}

    Returns
    -------
    :class:`PCCResult`. Its ``objective`` (and trace, restart objectives)
    leaves out the constant ``sum_{i<j} c_ij^2 / N_ij`` (it does not depend
    on the memberships and would need every pair; :func:`l2_constant` gives it),
    so it is the dense route's objective minus that constant, and may be negative.
    ``solver`` is ``"batch-lowrank"``; ``n_polish`` is 0.

    Examples
    --------
    >>> import numpy as np
    >>> from scconsensus.core.pcc import pcc_lowrank
    >>> labels = np.repeat([[0, 0, 1], [1, 1, 0], [2, 2, 2]], 20, axis=0)
    >>> pcc_lowrank(labels, 5, random_state=0).n_clusters
    3
    """
    bregman, op = _check_lowrank(labels, divergence)
    K, min_mass = check_n_clusters(n_clusters, op.n), check_min_mass(min_mass, op.n)
    n_init, tol, max_iter = _check_run(n_init, init, tol, max_iter, op.n * K, None)
    scale = op.weight / op.n
    runs = [
        _fit(op, Y, max_iter, tol * scale) for Y in _starts(init, op.n, K, n_init, random_state)
    ]
    best = min(range(len(runs)), key=lambda r: runs[r][0])
    obj, trace, n_iter, status, gap, Y = runs[best]
    membership, order = _memberships(Y, min_mass, op.row_weight > 0)
    return PCCResult(
        membership=membership,
        labels=hard_labels(membership),
        objective=float(obj),
        objective_trace=trace,
        n_iter=n_iter,
        converged=status == STATUS_CONVERGED,
        kkt_gap=float(gap / scale),
        divergence=bregman.name,
        solver="batch-lowrank",
        restart_objectives=np.asarray([r[0] for r in runs]),
        cluster_order=order.astype(np.int64),
        n_isolated=int((op.row_weight <= 0).sum()),
        n_polish=0,
    )
