"""Per-pair divergence terms of the batch PCC solver (:mod:`._batch`): ``d``, ``d'``, ``d''``.

Capped so that the gradient and curvature sums stay finite at the border of the domain;
KL, the hot case, is written out.
"""

from __future__ import annotations

import numba

from . import _vector
from ._divergences import KIND_CUSTOM, KIND_KL, _deriv, _deriv2, _div


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
def _vec_phi_terms(kind, nij, p, a, b, e, t):
    """:func:`_phi_terms` for KL and l2, branch-free (inside the vectorised loops)."""
    dq = b + 2.0 * t * e
    d1, d2 = _vector.derivs(kind, p, a + t * (b + t * e))
    return nij * d1 * dq, nij * (d2 * dq * dq + 2.0 * e * d1)
