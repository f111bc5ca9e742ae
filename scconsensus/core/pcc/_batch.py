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

import numpy as np

from ..._threads import one_blas_thread
from . import _greedy, _sparse
from ._batch_dense import _DenseEvaluator
from ._batch_pairs import _SparseEvaluator
from ._batch_steps import _cg_direction, _eg_step, _kkt_gap, _project_step, _step_dir
from ._greedy import STATUS_CONVERGED, STATUS_MAX_ITER, STATUS_STALLED
from ._parallel import ctrl_c_as_keyboard_interrupt, variant

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
    """:func:`_batch_steps`, a Ctrl-C raised as ``KeyboardInterrupt``."""
    with ctrl_c_as_keyboard_interrupt():
        return _batch_steps(ev, Y, **kwargs)


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
    # the evaluator's set-up runs numba kernels too: a Ctrl-C there came out as a
    # SystemError (twice in the suite's Ctrl-C test under load)
    with ctrl_c_as_keyboard_interrupt():
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
