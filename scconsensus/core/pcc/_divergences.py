"""Bregman divergences on the 2-simplex, as used by PCC (Sect. 4 of Lourenço et al. 2015).

PCC compares the observed co-clustering frequency ``p = c_ij / N_ij`` with the
model's co-clustering probability ``q = y_i . y_j`` through
``d_phi(p, q) = B_phi(psi(p) || psi(q))`` with ``psi(x) = (x, 1 - x)``.
Writing ``h(x) = phi(psi(x))``, this is

    d(p, q) = h(p) - h(q) - (p - q) h'(q),     d/dq d(p, q) = (q - p) h''(q),

so the line search only ever needs ``h''`` (the curvature of ``phi`` along
``(1, -1)``). The solver needs ``d(p, .)`` convex on ``[0, 1]`` for every
``p`` in ``[0, 1]`` ("double convexity"): ``h''(q) + (q - p) h'''(q) >= 0``,
which being linear in ``p`` is checked at ``p = 0`` and ``p = 1``.

The numba kernels dispatch on an integer ``kind`` so that built-in divergences
are compiled once and cached on disk; a user-supplied :class:`Bregman`
re-specialises the same kernel source around its own functions.
"""

from __future__ import annotations

import types
from collections.abc import Callable

import numba
import numpy as np
from numba.core.dispatcher import Dispatcher

KIND_L2 = 0
KIND_KL = 1
KIND_POWER = 2
KIND_CUSTOM = 3

#: The numba kernels the solvers call with a divergence ``kind``, by the module that
#: defines them: what :meth:`Bregman.kernel` serves, re-specialised for a custom divergence.
#: Each solver module registers its own (:func:`register_kernels`) when it is imported.
KERNELS: dict[Dispatcher, str] = {}


def register_kernels(*kernels: Dispatcher) -> None:
    """Declare ``kernels`` as callable through :meth:`Bregman.kernel` (any divergence)."""
    for fn in kernels:
        if not isinstance(fn, Dispatcher):
            raise TypeError(f"register_kernels takes numba kernels, got {fn!r}.")
        KERNELS[fn] = fn.py_func.__module__


@numba.njit(cache=True, error_model="numpy", inline="always")
def _clip01(q):
    if q < 0.0:
        return 0.0
    if q > 1.0:
        return 1.0
    return q


@numba.njit(cache=True, error_model="numpy")
def _deriv(kind, par, p, q):
    """``d/dq d(p, q)``; may be +-inf at the border of the domain, never NaN."""
    q = _clip01(q)
    if kind == KIND_L2:
        return 2.0 * (q - p)
    if kind == KIND_KL:
        out = 0.0
        # floor the denominators: at q = 0 < p (or q = 1 > p) the derivative is -inf (+inf),
        # a huge finite value keeps inf * 0 = NaN out of the gradient sums
        if p > 0.0:
            out -= p / max(q, 1e-250)
        if p < 1.0:
            out += (1.0 - p) / max(1.0 - q, 1e-250)
        return out
    # power family h(x) = (x^a + (1-x)^a - 1) / (a (a-1)), 1 < a < 2
    if q == p:
        return 0.0
    return (q - p) * (q ** (par - 2.0) + (1.0 - q) ** (par - 2.0))


@numba.njit(cache=True, error_model="numpy")
def _deriv2(kind, par, p, q):
    """Second derivative in ``q``: ``h2(q) + (q - p) h3(q) >= 0`` (built-in kinds; Newton step)."""
    q = _clip01(q)
    if kind == KIND_L2:
        return 2.0
    if kind == KIND_KL:
        out = 0.0
        if p > 0.0:
            out += p / max(q * q, 1e-250)
        if p < 1.0:
            out += (1.0 - p) / max((1.0 - q) * (1.0 - q), 1e-250)
        return out
    a = par
    h2 = q ** (a - 2.0) + (1.0 - q) ** (a - 2.0)
    h3 = (a - 2.0) * (q ** (a - 3.0) - (1.0 - q) ** (a - 3.0))
    return h2 + (q - p) * h3


@numba.njit(cache=True, error_model="numpy")
def _div(kind, par, p, q):
    """``d(p, q) >= 0``; +inf outside the domain (KL with ``q`` in {0, 1} against ``p``)."""
    q = _clip01(q)
    if kind == KIND_L2:
        return (p - q) * (p - q)
    if kind == KIND_KL:
        out = 0.0
        if p > 0.0:
            if q <= 0.0:
                return np.inf
            out += p * np.log(p / q)
        if p < 1.0:
            if q >= 1.0:
                return np.inf
            out += (1.0 - p) * np.log((1.0 - p) / (1.0 - q))
        return max(out, 0.0)
    if q == p:
        return 0.0
    a = par
    hp = (p**a + (1.0 - p) ** a - 1.0) / (a * (a - 1.0))
    hq = (q**a + (1.0 - q) ** a - 1.0) / (a * (a - 1.0))
    dhq = (q ** (a - 1.0) - (1.0 - q) ** (a - 1.0)) / (a - 1.0)
    return max(hp - hq - (p - q) * dhq, 0.0)


@numba.njit(cache=True, error_model="numpy")
def _elementwise(kind, par, p, q, derivative):
    """``d(p_t, q_t)``, or ``d/dq d(p_t, q_t)`` with ``derivative``, for each ``t``."""
    out = np.empty(p.shape[0])
    for t in range(p.shape[0]):
        if derivative:
            out[t] = _deriv(kind, par, p[t], q[t])
        else:
            out[t] = _div(kind, par, p[t], q[t])
    return out


@numba.njit(cache=True, error_model="numpy")
def _simplex_point(x):
    """``psi(x) = (x, 1 - x)``, the point of the 2-simplex a frequency stands for."""
    out = np.empty(2)
    out[0] = x
    out[1] = 1.0 - x
    return out


def _custom_scalars(phi, grad, hess):
    """Numba scalar ``_div`` / ``_deriv`` built from a user's phi, gradient and Hessian on R^2."""

    @numba.njit(error_model="numpy")
    def deriv(kind, par, p, q):
        q = min(max(q, 0.0), 1.0)
        if q == p:
            return 0.0
        H = hess(_simplex_point(q))
        curv = H[0, 0] - H[0, 1] - H[1, 0] + H[1, 1]
        out = (q - p) * curv
        # the kernels need finite derivatives (they multiply them by memberships that
        # may be 0): cap at +-1e250 as the built-in KL does at the border of its domain
        if np.isnan(out) or out > 1e250:
            return 1e250 if q > p else -1e250
        if out < -1e250:
            return -1e250
        return out

    @numba.njit(error_model="numpy")
    def div(kind, par, p, q):
        q = min(max(q, 0.0), 1.0)
        if q == p:
            return 0.0
        xp = _simplex_point(p)
        xq = _simplex_point(q)
        g = grad(xq)
        fp = phi(xp)
        if np.isnan(fp):
            # observed frequencies sit on the border (p = 0 or 1) where e.g. 0 log 0 is
            # NaN in floating point: take phi's limit from inside the simplex
            for t in range(2):
                if xp[t] == 0.0:
                    xp[t] = 1e-300
            fp = phi(xp)
        out = fp - phi(xq) - (p - q) * (g[0] - g[1])
        if np.isnan(out):
            return np.inf
        return max(out, 0.0)

    return div, deriv


register_kernels(_elementwise)


def _reaches_scalars(fn, memo: dict) -> bool:
    """Whether the numba kernel ``fn`` calls ``_div`` or ``_deriv``, directly or through others."""
    if fn in memo:
        return memo[fn]
    memo[fn] = False  # a kernel on the current path (recursion) adds nothing new
    py = fn.py_func
    for name in py.__code__.co_names:
        val = py.__globals__.get(name)
        if val is _div or val is _deriv:
            memo[fn] = True
        elif isinstance(val, Dispatcher) and _reaches_scalars(val, memo):
            memo[fn] = True
    return memo[fn]


def respecialize(kernels, div, deriv, done: dict) -> None:
    """Re-jit every kernel of ``kernels`` that reaches ``_div``/``_deriv``, with those replaced.

    The kernels are compiled from the very same source as the cached built-in
    ones, so a custom divergence runs exactly the paper's algorithm. Which
    kernels need it is read from their code (every kernel that calls the
    scalar divergence, directly or through another kernel), so no list is kept
    by hand. ``done`` maps each original kernel to its re-jitted copy; kernels
    shared between modules (the line search) are compiled once per divergence.
    """
    memo: dict = {}
    todo = [fn for fn in kernels if _reaches_scalars(fn, memo)]
    todo += [fn for fn, hit in memo.items() if hit and fn not in todo]
    scopes = []
    for fn in todo:
        if fn in done:
            continue
        py = fn.py_func
        scope = dict(py.__globals__)
        copy = types.FunctionType(py.__code__, scope, py.__name__, py.__defaults__, py.__closure__)
        options = {k: v for k, v in fn.targetoptions.items() if k != "cache"}
        done[fn] = numba.jit(copy, **options)
        scopes.append(scope)
    # numba resolves globals at the first call, so the scopes can be patched after creation
    swap = {_div: div, _deriv: deriv, **done}
    for scope in scopes:
        for name, val in scope.items():
            if isinstance(val, Dispatcher) and val in swap:
                scope[name] = swap[val]


class Bregman:
    """A double-convex Bregman divergence on the 2-simplex for :func:`~scconsensus.core.pcc.pcc`.

    Parameters
    ----------
    phi
        Strictly convex function of a point ``x = (x1, x2)`` of the 2-simplex
        (a length-2 float array) returning a float. Must be numba-compilable
        (plain numpy arithmetic).
    grad
        Its gradient, a length-2 array.
    hess
        Its Hessian, a ``2 x 2`` array.
    name
        Label recorded in results.
    check
        Verify numerically that ``grad`` and ``hess`` are ``phi``'s
        (:meth:`check_derivatives`) and that the divergence is convex in its
        second argument (double convexity, Sect. 2 and 5.2 of the paper); the
        exact line search relies on both.

    Examples
    --------
    Squared Euclidean distance in ``R^2`` (twice the built-in ``"l2"``):

    >>> import numpy as np
    >>> from scconsensus.core import Bregman
    >>> sq = Bregman(
    ...     lambda x: x[0] ** 2 + x[1] ** 2,
    ...     lambda x: 2.0 * x,
    ...     lambda x: 2.0 * np.eye(2),
    ...     name="squared-euclidean",
    ... )
    >>> round(float(sq.divergence(0.2, 0.5)), 6)
    0.18
    """

    def __init__(
        self,
        phi: Callable,
        grad: Callable,
        hess: Callable,
        *,
        name: str = "custom",
        check: bool = True,
    ) -> None:
        for fname, f in (("phi", phi), ("grad", grad), ("hess", hess)):
            if not callable(f):
                raise ValueError(f"Bregman: {fname} must be callable, got {type(f).__name__}.")
        self.name = str(name)
        self.kind = KIND_CUSTOM
        self.param = 0.0
        try:
            jphi, jgrad, jhess = (numba.njit(f, error_model="numpy") for f in (phi, grad, hess))
            div, deriv = _custom_scalars(jphi, jgrad, jhess)
            # compile now so that a function numba cannot handle fails here, clearly
            div(KIND_CUSTOM, 0.0, 0.3, 0.6)
            deriv(KIND_CUSTOM, 0.0, 0.3, 0.6)
        except Exception as err:  # numba raises many error types
            raise ValueError(
                "Bregman: phi, grad and hess must be numba-compilable functions of a length-2 "
                "numpy array (use plain numpy arithmetic, no Python objects). Numba said: "
                f"{str(err).splitlines()[0] if str(err) else type(err).__name__}"
            ) from err
        self._scalar_div = div
        self._scalar_deriv = deriv
        self._respecialized: dict = {}
        if check:
            self.check_derivatives()
            self.check_double_convex()

    @classmethod
    def _builtin(cls, kind: int, param: float, name: str) -> Bregman:
        self = object.__new__(cls)
        self.name = name
        self.kind = kind
        self.param = float(param)
        self._scalar_div = None
        self._scalar_deriv = None
        self._respecialized = {}
        return self

    @classmethod
    def kl(cls) -> Bregman:
        """Kullback–Leibler, ``phi = -H``: the binomial likelihood of the co-association (PEACE)."""
        return cls._builtin(KIND_KL, 0.0, "kl")

    @classmethod
    def l2(cls) -> Bregman:
        """Squared error ``(p - q)^2`` of eq. (4)."""
        return cls._builtin(KIND_L2, 0.0, "l2")

    @classmethod
    def power(cls, a: float = 1.5) -> Bregman:
        """Power (beta-type) family ``h(x) = (x^a + (1-x)^a - 1) / (a (a-1))``.

        Double-convex on the 2-simplex for ``1 < a <= 2``: it interpolates
        between KL (``a -> 1``) and twice the squared error (``a = 2``).
        """
        a = float(a)
        if not (1.0 < a <= 2.0):
            raise ValueError(
                f"Bregman.power(a) is double-convex on the 2-simplex only for 1 < a <= 2, got {a}."
            )
        return cls._builtin(KIND_POWER, a, f"power{a:g}")

    def __repr__(self) -> str:
        return f"Bregman({self.name!r})"

    # -- numpy evaluation -------------------------------------------------------------
    def divergence(self, p, q) -> np.ndarray:
        """``d(p, q)`` elementwise (``p`` observed frequency, ``q`` model probability).

        Parameters
        ----------
        p
            Observed co-clustering frequencies ``c_ij / N_ij`` in ``[0, 1]``.
        q
            Model probabilities ``y_i . y_j`` in ``[0, 1]``, broadcast against ``p``.

        Returns
        -------
        Array of the broadcast shape.
        """
        return self._elementwise(p, q, derivative=False)

    def derivative(self, p, q) -> np.ndarray:
        """``d/dq d(p, q)`` elementwise.

        Parameters
        ----------
        p
            Observed co-clustering frequencies in ``[0, 1]``.
        q
            Model probabilities in ``[0, 1]``, broadcast against ``p``.

        Returns
        -------
        Array of the broadcast shape.
        """
        return self._elementwise(p, q, derivative=True)

    def _elementwise(self, p, q, *, derivative: bool) -> np.ndarray:
        p, q = np.broadcast_arrays(np.asarray(p, float), np.asarray(q, float))
        fn = self.kernel(_elementwise)
        flat = (np.ascontiguousarray(p.ravel()), np.ascontiguousarray(q.ravel()))
        return fn(self.kind, self.param, *flat, derivative).reshape(p.shape)

    def check_derivatives(self, n_grid: int = 49, rtol: float = 1e-4) -> None:
        """Raise ``ValueError`` unless :meth:`derivative` is the derivative of :meth:`divergence`.

        The divergence comes from ``phi`` and ``grad``, its derivative from ``hess``
        (Sect. 5.2): a ``grad`` or ``hess`` that is not ``phi``'s would make the
        solvers' line search and objective disagree. Checked by central differences
        on an interior grid of ``q`` for ``p`` in {0, 0.3, 1}, wherever the divergence
        is finite.

        Parameters
        ----------
        n_grid
            Points of ``[0.05, 0.95]`` checked.
        rtol
            Tolerance relative to the derivative's magnitude (plus ``1e-6`` absolute).

        Raises
        ------
        ValueError
            Naming the first ``p`` and ``q`` where the two disagree.
        """
        q = np.linspace(0.05, 0.95, n_grid)
        h = 1e-6
        for p in (0.0, 0.3, 1.0):
            P = np.full_like(q, p)
            fd = (self.divergence(P, q + h) - self.divergence(P, q - h)) / (2.0 * h)
            d = self.derivative(P, q)
            close = np.abs(fd - d) <= rtol * (np.abs(d) + np.abs(fd)) + 1e-6
            # where phi is infinite at p (on the border) the divergence is too: nothing to compare
            bad = np.flatnonzero(~close & np.isfinite(fd))
            if bad.size:
                i = bad[0]
                raise ValueError(
                    f"Bregman {self.name!r}: grad and hess do not match phi. At p={p:g}, "
                    f"q={q[i]:.3g} the divergence (from phi and grad) changes at rate "
                    f"{fd[i]:.6g}, its derivative (from hess) says {d[i]:.6g}. Check that grad "
                    "is the gradient of phi and hess its Hessian, on R^2."
                )

    def check_double_convex(self, n_grid: int = 199, rtol: float = 1e-6) -> None:
        """Raise ``ValueError`` unless ``d(p, .)`` is convex on (0, 1) for ``p`` in {0, 1}.

        Convexity in ``q`` is linear in ``p``, so the two ends of ``[0, 1]``
        suffice; the second derivative is taken by central differences of
        :meth:`derivative` on an interior grid.

        Parameters
        ----------
        n_grid
            Interior points of ``(0, 1)`` checked.
        rtol
            Tolerance on a negative second derivative, relative to the derivative's
            magnitude (finite-difference noise).

        Raises
        ------
        ValueError
            Naming the first ``p`` and ``q`` where the divergence is not convex.
        """
        q = np.linspace(0.0, 1.0, n_grid + 2)[1:-1]
        h = 1e-5
        for p in (0.0, 1.0):
            hi = self.derivative(np.full_like(q, p), q + h)
            lo = self.derivative(np.full_like(q, p), q - h)
            second = (hi - lo) / (2.0 * h)
            scale = np.abs(hi) + np.abs(lo) + 1.0
            bad = np.flatnonzero(~(second >= -rtol * scale / h))
            if bad.size:
                raise ValueError(
                    f"Bregman divergence {self.name!r} is not double-convex on the 2-simplex: "
                    f"d(p={p:g}, q) is concave near q={q[bad[0]]:.3g}. PCC's exact line search "
                    "(Sect. 5.2) needs convexity in the second argument; choose another phi "
                    "(e.g. Bregman.kl(), Bregman.l2() or Bregman.power(a) with 1 < a <= 2)."
                )

    # -- kernels ------------------------------------------------------------------------
    def kernel(self, fn: Dispatcher) -> Callable:
        """The registered numba kernel ``fn`` (:func:`register_kernels`) for this divergence.

        Built-in divergences run ``fn`` itself (compiled once, cached on disk, dispatching
        on ``kind``); a custom one runs a copy re-jitted around its own scalars, made once
        per kernel and divergence.
        """
        if fn not in KERNELS:
            raise ValueError(
                f"{getattr(fn, '__name__', fn)!r} is not a registered PCC kernel: add it to its "
                "module's register_kernels(...) call, or a custom divergence cannot run it."
            )
        if self.kind != KIND_CUSTOM:
            return fn
        if fn not in self._respecialized:
            respecialize((fn,), self._scalar_div, self._scalar_deriv, self._respecialized)
            # a kernel that never reaches the scalars runs as it is
            self._respecialized.setdefault(fn, fn)
        return self._respecialized[fn]


DIVERGENCES = ("kl", "l2")


def check_divergence(divergence: str | Bregman) -> Bregman:
    """``"kl"``, ``"l2"`` or a :class:`Bregman` instance."""
    if isinstance(divergence, Bregman):
        return divergence
    if isinstance(divergence, str):
        key = divergence.lower()
        if key in ("kl", "kullback-leibler"):
            return Bregman.kl()
        if key in ("l2", "squared", "sq_l2"):
            return Bregman.l2()
    raise ValueError(
        f"divergence={divergence!r} is not supported; use 'kl', 'l2' or a "
        "scconsensus.core.Bregman instance (e.g. Bregman.power(1.5))."
    )
