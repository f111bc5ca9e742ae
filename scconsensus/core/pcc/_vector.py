"""The built-in divergences' pair terms without branches, so that numba vectorises pair loops.

Numba compiles ``np.log`` to a call of the C library's scalar logarithm (unless
Intel's SVML, an optional dependency of numba, is installed), and a call inside
a loop keeps the whole loop scalar. On the dense route of the batch solver,
where every one of the ``n^2 / 2`` pairs takes a logarithm while memberships are
spread out, that call was two thirds of the objective pass (30 ms of it at
n = 2,000; 13 ms vectorised). :func:`vlog` is fdlibm's logarithm (``e_log.c``,
Sun Microsystems 1993, in the form FreeBSD's msun and musl use: always the
polynomial in ``s = f / (2 + f)``) written with bit operations and selects only,
within 1 ulp of ``np.log``. :func:`terms` and
:func:`derivs` give, for KL and squared l2, the values of the generic kernels
(``_divergences._div``, ``_batch_terms._d1_d2``) with selects in place of branches;
the kind is the same for the whole loop, so LLVM takes its test out of it.

Loops that call them are compiled with :data:`FASTMATH`: reassociation lets
LLVM split a sum into vector lanes. The order of the additions is then fixed
by the compiled code, not by the number of threads, so results stay the same
for any thread count (their last bits can differ between CPUs with other vector
widths, as BLAS results already do).
"""

from __future__ import annotations

import numba
import numpy as np

from ._divergences import KIND_KL, KIND_L2

# what the vectorised pair loops may assume: sums may be reassociated into vector lanes and
# a * b + c fused; not nnan/ninf, since the KL objective is +inf outside its domain
FASTMATH = {"reassoc", "contract"}

_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_LG1 = 6.666666666666735130e-01
_LG2 = 3.999999999940941908e-01
_LG3 = 2.857142874366239149e-01
_LG4 = 2.222219843214978396e-01
_LG5 = 1.818357216161805012e-01
_LG6 = 1.531383769920937332e-01
_LG7 = 1.479819860511658591e-01
_TWO54 = 18014398509481984.0
_TINY = 2.2250738585072014e-308  # the smallest normal double
# 2^52 (2 - sqrt(2)): a mantissa that reaches sqrt(2) with it carries into the exponent
_SQRT2_CARRY = 0x95F619980C433
_MANTISSA = 0x000FFFFFFFFFFFFF
_BIG = 1e250
_DBL_MAX = 1.7976931348623157e308


@numba.njit(cache=True, error_model="numpy", inline="always")
def vlog(x):
    """``log(x)`` for finite ``x > 0`` (subnormals included), within 1 ulp of ``np.log``.

    ``x = 2^k m`` with ``m`` in ``[sqrt(2)/2, sqrt(2))``; ``log(m) = log(1 + f)``
    from ``s = f / (2 + f)`` and fdlibm's minimax polynomial in ``s^2``.
    """
    sub = x < _TINY
    x = x * _TWO54 if sub else x
    hx = np.float64(x).view(np.int64)
    m = hx & _MANTISSA
    i = (m + _SQRT2_CARRY) >> 52
    k = (hx >> 52) - 1023 + i - (54 if sub else 0)
    f = np.int64(m | ((1023 - i) << 52)).view(np.float64) - 1.0
    s = f / (2.0 + f)
    z = s * s
    w = z * z
    r = z * (_LG1 + w * (_LG3 + w * (_LG5 + w * _LG7))) + w * (_LG2 + w * (_LG4 + w * _LG6))
    hfsq = 0.5 * f * f
    dk = np.float64(k)
    return dk * _LN2_HI - ((hfsq - (s * (hfsq + r) + dk * _LN2_LO)) - f)


@numba.njit(cache=True, error_model="numpy", inline="always")
def _reciprocals(p, q):
    # 1 / q where p > 0 and 1 / (1 - q) where p < 1 (else 0); +inf at the border
    u0 = 1.0 / q if p > 0.0 else 0.0
    u1 = 1.0 / (1.0 - q) if p < 1.0 else 0.0
    return u0, u1


@numba.njit(cache=True, error_model="numpy", inline="always")
def _kl_derivs(p, u0, u1):
    # the generic kernels floor q and 1 - q at 1e-250 and cap d', d'' at 1e250
    r0 = min(u0, _BIG)
    r1 = min(u1, _BIG)
    d1 = (1.0 - p) * r1 - p * r0
    d2 = (1.0 - p) * r1 * r1 + p * r0 * r0
    return max(min(d1, _BIG), -_BIG), min(d2, _BIG)


@numba.njit(cache=True, error_model="numpy", inline="always")
def kl_derivs(p, q):
    """``(d', d'')`` of KL at ``(p, q)``, ``q`` clipped to [0, 1] and both capped at ``1e250``."""
    q = min(max(q, 0.0), 1.0)
    u0, u1 = _reciprocals(p, q)
    return _kl_derivs(p, u0, u1)


@numba.njit(cache=True, error_model="numpy", inline="always")
def kl_terms(p, q):
    """``(d, d', d'')`` of KL at ``(p, q)``: ``d`` is +inf outside the domain.

    At ``p = 0`` and ``q < 1e-3`` (most pairs near an optimum) ``d = -log(1 - q)``
    is its series to ``q^5``, below ``2e-16`` relative, as in the generic kernel.
    """
    q = min(max(q, 0.0), 1.0)
    u0, u1 = _reciprocals(p, q)
    d1, d2 = _kl_derivs(p, u0, u1)
    # p log(p / q) + (1 - p) log((1 - p) / (1 - q)): log(1) where a term is absent, and +inf
    # where a ratio is (q at 0 or 1 against p, or beyond the largest double; vlog's value
    # there is finite and discarded). p / q, not p * u0: 1 / q overflows for subnormal q
    x0 = p / q if p > 0.0 else 1.0
    x1 = (1.0 - p) * u1 if p < 1.0 else 1.0
    outside = x0 > _DBL_MAX or x1 > _DBL_MAX
    d = max(p * vlog(x0) + (1.0 - p) * vlog(x1), 0.0)
    series = q * (1.0 + q * (0.5 + q * (1.0 / 3.0 + q * (0.25 + q * 0.2))))
    d = series if p == 0.0 and q < 1e-3 else d
    d = np.inf if outside else d
    return d, d1, d2


@numba.njit(cache=True, error_model="numpy", inline="always")
def vectorised(kind):
    """Whether :func:`terms` and :func:`derivs` cover the divergence ``kind``."""
    return kind == KIND_KL or kind == KIND_L2


@numba.njit(cache=True, error_model="numpy", inline="always")
def derivs(kind, p, q):
    """``(d', d'')`` at ``(p, q)`` for KL or squared l2 (:func:`vectorised` kinds)."""
    if kind == KIND_KL:
        return kl_derivs(p, q)
    return 2.0 * (min(max(q, 0.0), 1.0) - p), 2.0


@numba.njit(cache=True, error_model="numpy", inline="always")
def terms(kind, p, q):
    """``(d, d', d'')`` at ``(p, q)`` for KL or squared l2 (:func:`vectorised` kinds)."""
    if kind == KIND_KL:
        return kl_terms(p, q)
    r = min(max(q, 0.0), 1.0) - p
    return r * r, 2.0 * r, 2.0
