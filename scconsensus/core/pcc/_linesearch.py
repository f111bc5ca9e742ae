"""PCC's exact line search along one move (Sect. 5.2 of Lourenço et al. 2015).

A move of item ``J`` shifts mass ``eps`` from cluster ``v`` to cluster ``u``;
every pair ``(J, i)`` then has ``q_i = y_J . y_i`` change by ``eps * delta_i``
with ``delta_i = y_iu - y_iv``. The dense solver, the sparse solver and the
out-of-sample extension store their pairs differently (a dense row, a CSR row,
an item's sampled partners), so each gathers the pairs a move touches
(``delta_i != 0``) into short contiguous buffers

    p[t] = c / N,   w[t] = N,   q[t] = y_J . y_i,   dlt[t] = delta_i,

and the one line search here works on those buffers only. The objective along
the move, ``f(eps) = sum_t w_t d(p_t, q_t + eps dlt_t)``, is convex (double
convexity of the divergence), so its minimiser on ``[0, emax]`` is the root of
``rho(eps) = f'(eps)`` or an end of the segment.
"""

from __future__ import annotations

import numba
import numpy as np

from ._divergences import KIND_CUSTOM, KIND_L2, _deriv, _deriv2, _div


@numba.njit(cache=True, error_model="numpy")
def _rho(p, w, q, dlt, m, kind, par, eps):
    """Directional derivative ``rho(eps)`` of the objective along the move."""
    r = 0.0
    for t in range(m):
        r += w[t] * dlt[t] * _deriv(kind, par, p[t], q[t] + eps * dlt[t])
    return r


@numba.njit(cache=True, error_model="numpy")
def _rho2(p, w, q, dlt, m, kind, par, eps):
    """``rho(eps)`` and its derivative, for the safeguarded Newton step."""
    r = 0.0
    dr = 0.0
    for t in range(m):
        qt = q[t] + eps * dlt[t]
        r += w[t] * dlt[t] * _deriv(kind, par, p[t], qt)
        dr += w[t] * dlt[t] * dlt[t] * _deriv2(kind, par, p[t], qt)
    return r, dr


@numba.njit(cache=True, error_model="numpy")
def _delta_objective(p, w, q, dlt, m, kind, par, eps):
    """``f(eps) - f(0)``: the change of the objective made by the move."""
    df = 0.0
    for t in range(m):
        df += w[t] * (_div(kind, par, p[t], q[t] + eps * dlt[t]) - _div(kind, par, p[t], q[t]))
    return df


@numba.njit(cache=True, error_model="numpy")
def _newton(p, w, q, dlt, m, kind, par, rho0, emax, step_rtol):
    """Safeguarded Newton on ``rho`` inside the bracket ``rho(lo) < 0 < rho(hi)``.

    A few passes instead of the ~35 halvings of the paper's bisection (eq. 10);
    it needs ``d''`` and so serves the built-in divergences.
    """
    lo = 0.0
    hi = emax
    x = 0.0
    r = rho0
    dr = _rho2(p, w, q, dlt, m, kind, par, 0.0)[1]
    for _ in range(100):
        xn = x - r / dr if dr > 0.0 else -1.0
        if not (lo < xn < hi):
            xn = 0.5 * (lo + hi)
        x = xn
        r, dr = _rho2(p, w, q, dlt, m, kind, par, x)
        if np.isnan(r) or r > 0.0:
            hi = x
        elif r < 0.0:
            lo = x
        else:
            return x
        if abs(r) <= 1e-12 * -rho0:
            # at the root up to rounding: f(Z_x) <= f(Y) even when rho(x) is a hair > 0
            return x
        if hi - lo <= step_rtol * emax:
            break
    return lo


@numba.njit(cache=True, error_model="numpy")
def _illinois(p, w, q, dlt, m, kind, par, rho0, r_hi, emax, step_rtol):
    """Illinois false position on the bracket ``[0, emax]`` (NaN = beyond the domain, > 0).

    Much faster than the paper's bisection (eq. 10) while keeping the bracket;
    the left end is returned so the objective never rises. Needs ``rho`` only,
    so it serves custom divergences.
    """
    lo = 0.0
    hi = emax
    r_lo = rho0
    if np.isnan(r_hi) or np.isinf(r_hi):
        r_hi = np.inf
    side = 0
    for _ in range(200):
        if hi - lo <= step_rtol * emax:
            break
        if np.isinf(r_hi) or r_hi > 100.0 * -r_lo or -r_lo > 100.0 * r_hi:
            # very lopsided bracket (e.g. a domain border at hi): false position would
            # crawl, so bisect as in eq. (10)
            x = 0.5 * (lo + hi)
        else:
            x = (lo * r_hi - hi * r_lo) / (r_hi - r_lo)
            if not (lo < x < hi):
                x = 0.5 * (lo + hi)
        r = _rho(p, w, q, dlt, m, kind, par, x)
        if np.isnan(r) or r > 0.0:
            hi = x
            r_hi = np.inf if np.isnan(r) else r
            if side == 1 and not np.isinf(r_lo):
                r_lo *= 0.5
            side = 1
        elif r < 0.0:
            lo = x
            r_lo = r
            if side == -1 and not np.isinf(r_hi):
                r_hi *= 0.5
            side = -1
        else:
            return x
        if -r_lo <= 1e-12 * -rho0:
            break
    return lo


@numba.njit(cache=True, error_model="numpy")
def _line_search(p, w, q, dlt, m, kind, par, rho0, emax, step_rtol):
    """Optimal step in ``[0, emax]`` given ``rho(0) = rho0 < 0``.

    Returns a point where the objective has not increased: the closed form for
    the squared error (eq. 9), else a root of ``rho`` bracketed to
    ``step_rtol * emax`` (eq. 10), or ``emax`` when ``rho`` stays negative.
    """
    if kind == KIND_L2:
        # f(Z_eps) is quadratic: rho(eps) = rho0 + 2 eps sum w delta^2
        s = 0.0
        for t in range(m):
            s += w[t] * dlt[t] * dlt[t]
        if s <= 0.0:
            return emax
        eps = -rho0 / (2.0 * s)
        return min(eps, emax)
    r_hi = _rho(p, w, q, dlt, m, kind, par, emax)
    if r_hi <= 0.0:
        return emax
    if kind != KIND_CUSTOM:
        return _newton(p, w, q, dlt, m, kind, par, rho0, emax, step_rtol)
    return _illinois(p, w, q, dlt, m, kind, par, rho0, r_hi, emax, step_rtol)


@numba.njit(cache=True, error_model="numpy")
def _move(y, u, v, eps, emax):
    """Shift mass ``eps`` of the row ``y`` from ``v`` to ``u`` (``y_v`` exactly 0 at ``emax``)."""
    y[u] += eps
    if eps >= emax:
        y[v] = 0.0
    else:
        y[v] -= eps
