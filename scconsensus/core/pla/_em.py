"""EM for Probabilistic Label Aggregation on a co-association matrix.

Lange & Buhmann (2005), Sect. 3.1.

The model factorises the joint ``p(i, j) = z_ij / Σ z`` as
``p(i) Σ_v p(v|i) p(j|v)``. ``p(i)`` has the closed form of eq. 6; EM alternates
the E-step (eq. 8) and the M-step (eqs. 12–13). Written with ``P = [p(v|i)]`` and
``W = [p(j|v)]`` the step never forms ``p(v|i, j)``: with ``R = Z ⊘ (P Wᵀ)`` on the
support of ``Z``,

    p(v|i) ← p(v|i) (R W)_iv / Σ_j z_ij,      p(j|v) ∝ p(j|v) (Rᵀ P)_jv,

so a step costs O(nnz(Z)·K) on a sparse ``Z`` (numba kernel) and O(n²K) in row
blocks on a dense one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numba
import numpy as np
import scipy.sparse as sp

from ..._docs import doc_params
from ..._validation import (
    RandomState,
    check_int,
    check_n_clusters,
    check_number,
    check_restarts,
    renamed_args,
    seed_sequence,
)

__all__ = ["PLAFit", "pla_em"]

# Floor on p(j|i) so that a pair the model gives (numerically) zero mass cannot
# produce log(0) or a division by zero.
_TINY = 1e-300
_DENSE_BLOCK_BYTES = 64 * 1024**2


@dataclass
class PLAFit:
    """One EM fit of PLA.

    Attributes
    ----------
    posteriors
        ``(n, K)`` ``p(v|i)``, rows sum to 1.
    likelihoods
        ``(n, K)`` ``p(j|v)`` (column ``v`` is a distribution over items).
    marginals
        ``(n,)`` ``p(i)`` of eq. 6.
    log_likelihood
        Final log-likelihood ``Σ_ij z_ij log(p(i) Σ_v p(v|i) p(j|v))`` (eq. 5).
    log_likelihood_trace
        Log-likelihood before every EM step of the kept restart (never decreases).
    n_iter
        EM steps of the kept restart.
    converged
        Whether the relative change fell below ``tol`` within ``max_iter``.
    restart_log_likelihoods
        Final log-likelihood of every restart.
    """

    posteriors: np.ndarray
    likelihoods: np.ndarray
    marginals: np.ndarray
    log_likelihood: float
    log_likelihood_trace: np.ndarray
    n_iter: int
    converged: bool
    restart_log_likelihoods: np.ndarray = field(default_factory=lambda: np.empty(0))


@numba.njit(cache=True)
def _em_sparse(indptr, indices, z, P, W, A, B):  # pragma: no cover - compiled
    n, K = P.shape
    A[:] = 0.0
    B[:] = 0.0
    ll = 0.0
    for i in range(n):
        for e in range(indptr[i], indptr[i + 1]):
            zz = z[e]
            if zz <= 0.0:
                continue
            j = indices[e]
            q = 0.0
            for v in range(K):
                q += P[i, v] * W[j, v]
            if q < 1e-300:
                q = 1e-300
            ll += zz * np.log(q)
            r = zz / q
            for v in range(K):
                A[i, v] += r * W[j, v]
                B[j, v] += r * P[i, v]
    return ll


def _em_dense(Z: np.ndarray, P: np.ndarray, W: np.ndarray, A: np.ndarray, B: np.ndarray) -> float:
    n = Z.shape[0]
    block = max(1, min(n, _DENSE_BLOCK_BYTES // (8 * max(Z.shape[1], 1))))
    B[:] = 0.0
    ll = 0.0
    for s in range(0, n, block):
        e = min(s + block, n)
        Q = P[s:e] @ W.T
        np.maximum(Q, _TINY, out=Q)
        Zb = Z[s:e]
        ll += float(np.sum(Zb * np.log(Q)))
        np.divide(Zb, Q, out=Q)
        A[s:e] = Q @ W
        B += Q.T @ P[s:e]
    return ll


def check_coassociation(Z, name: str = "Z") -> np.ndarray | sp.csr_matrix:
    """A square, finite, non-negative co-association (dense float64 or sorted CSR).

    Parameters
    ----------
    Z
        The co-association, dense or sparse.
    name
        Its name in error messages.

    Returns
    -------
    numpy.ndarray or scipy.sparse.csr_matrix
        ``Z`` as float64, a sparse one with sorted indices and no duplicates.
    """
    if sp.issparse(Z):
        Z = sp.csr_matrix(Z, dtype=np.float64)
        Z.sum_duplicates()
        Z.sort_indices()
        values = Z.data
    else:
        Z = np.asarray(Z)
        if Z.dtype.kind not in "biuf":
            raise ValueError(f"{name} must be numeric, got dtype {Z.dtype}.")
        Z = np.ascontiguousarray(Z, dtype=np.float64)
        values = Z
    if Z.ndim != 2 or Z.shape[0] != Z.shape[1]:
        raise ValueError(f"{name} must be a square (n x n) co-association, got shape {Z.shape}.")
    if Z.shape[0] < 2:
        raise ValueError(f"{name} has {Z.shape[0]} item(s); PLA needs at least 2.")
    if not np.all(np.isfinite(values)):
        raise ValueError(f"{name} contains NaN or infinite values.")
    if values.size and values.min() < 0:
        raise ValueError(f"{name} has negative entries; co-associations are counts (>= 0).")
    if not np.any(values > 0):
        raise ValueError(f"{name} is all zero: the ensemble carries no co-association.")
    return Z


def _z_row(Z, s: int) -> np.ndarray:
    return Z[s].toarray().ravel() if sp.issparse(Z) else np.array(Z[s], dtype=np.float64)


def _similarity_row(row_of, s: int, d_diag: np.ndarray) -> np.ndarray:
    """Co-association of item ``s`` with every item, scaled to [0, 1] by the diagonal."""
    row = row_of(s)
    scale = np.sqrt(np.maximum(d_diag * d_diag[s], _TINY))
    return np.clip(row / scale, 0.0, 1.0)


def _seeded_start(Z, d: np.ndarray, K: int, rng: np.random.Generator, row_of=None):
    """Uniform posteriors and likelihoods built around ``K`` far-apart seed items.

    A random point of the simplex (or ``W = Z P`` from one) sits close to the symmetric
    saddle of the likelihood: EM then creeps for many steps with tiny relative gains and
    a relative-change test stops it there. Seeding each likelihood column on the
    co-association row of one item, chosen by greedy k-means++ on the dissimilarity
    ``1 - z_is / sqrt(z_ii z_ss)``, starts EM off the saddle. ``row_of(s)`` gives the
    full co-association row of ``s`` when ``Z`` only holds sampled pairs.
    """
    n = Z.shape[0]
    if row_of is None:

        def row_of(s: int) -> np.ndarray:
            return _z_row(Z, s)

    diag = Z.diagonal() if sp.issparse(Z) else np.diag(Z)
    diag = np.where(diag > 0, diag, np.maximum(d / n, _TINY))
    candidates = np.flatnonzero(d > 0)
    seeds = [int(rng.choice(candidates))]
    closest = _similarity_row(row_of, seeds[0], diag)
    n_trials = 2 + int(np.log(K))
    for _ in range(1, K):
        # greedy k-means++ (as in scikit-learn): of a few candidates drawn ∝ squared
        # dissimilarity, keep the one that lowers the total squared dissimilarity most
        weight = (1.0 - closest[candidates]) ** 2
        total = weight.sum()
        p = weight / total if total > 0 else None
        best = None
        for c in rng.choice(candidates, size=n_trials, p=p):
            merged = np.maximum(closest, _similarity_row(row_of, int(c), diag))
            potential = float(np.sum((1.0 - merged[candidates]) ** 2))
            if best is None or potential < best[0]:
                best = (potential, int(c), merged)
        seeds.append(best[1])
        closest = best[2]
    marginal = d / d.sum()
    W0 = np.empty((n, K))
    for v, s in enumerate(seeds):
        row = row_of(s)
        W0[:, v] = 0.5 * row / row.sum() + 0.5 * marginal
    P0 = np.full((n, K), 1.0 / K)
    return P0, W0


def row_sums(Z) -> np.ndarray:
    """``(n,)`` float64 row sums of a dense or sparse co-association ``Z``."""
    return np.asarray(Z.sum(axis=1), dtype=np.float64).ravel()


def _run(Z, P, W, max_iter: int, tol: float) -> tuple[np.ndarray, np.ndarray, list[float], bool]:
    K = P.shape[1]
    d = row_sums(Z)
    empty = d <= 0
    safe_d = np.where(empty, 1.0, d)
    A = np.empty_like(P)
    B = np.empty_like(W)
    if sp.issparse(Z):
        ptr, idx = Z.indptr.astype(np.int64), Z.indices.astype(np.int64)

        def step() -> float:
            return _em_sparse(ptr, idx, Z.data, P, W, A, B)
    else:

        def step() -> float:
            return _em_dense(Z, P, W, A, B)

    trace: list[float] = []
    converged = False
    for _ in range(max_iter + 1):
        ll = step()
        trace.append(ll)
        if len(trace) > 1 and abs(trace[-1] - trace[-2]) <= tol * abs(trace[-2]):
            converged = True
            break
        if len(trace) == max_iter + 1:
            break
        # M-step (eqs. 12-13); rows of items without co-association stay uniform
        np.multiply(P, A, out=P)
        P /= safe_d[:, None]
        P[empty] = 1.0 / K
        P /= P.sum(axis=1, keepdims=True)
        np.multiply(W, B, out=W)
        col = W.sum(axis=0)
        W /= np.where(col > 0, col, 1.0)[None, :]
    return P, W, trace, converged


def _starts(Z, d, K: int, init, n_init: int, random_state, coassociation_row) -> list:
    """``(posteriors, likelihoods)`` of each start: ``init``, or seeded on far-apart rows."""
    n = Z.shape[0]
    if init is not None:
        P0, W0 = (np.array(a, dtype=np.float64) for a in init)
        if P0.shape != (n, K) or W0.shape != (n, K):
            raise ValueError(f"init must be two ({n}, {K}) arrays, got {P0.shape}, {W0.shape}.")
        return [(P0, W0)]
    starts = []
    for child in seed_sequence(random_state).spawn(int(n_init)):
        rng = np.random.default_rng(child)
        starts.append(_seeded_start(Z, d, K, rng, coassociation_row))
    return starts


def _best_start(Z, starts: list, max_iter: int, tol: float, const: float):
    """EM from every start; the run with the largest final log-likelihood, and all finals."""
    best = None
    finals = []
    for P0, W0 in starts:
        P, W, trace, conv = _run(
            Z, np.ascontiguousarray(P0), np.ascontiguousarray(W0), max_iter, tol
        )
        ll = np.asarray(trace) + const
        finals.append(ll[-1])
        if best is None or ll[-1] > best[2][-1]:
            best = (P, W, ll, conv)
    return (*best, finals)


@renamed_args(n_restarts="n_init")
@doc_params()
def pla_em(
    Z: np.ndarray | sp.spmatrix,
    n_clusters: int,
    *,
    n_init: int = 3,
    max_iter: int = 300,
    tol: float = 1e-6,
    random_state: RandomState = 0,
    init: tuple[np.ndarray, np.ndarray] | None = None,
    coassociation_row=None,
) -> PLAFit:
    """Fit ``p(i, j) ≈ p(i) Σ_v p(v|i) p(j|v)`` to a co-association by EM.

    Parameters
    ----------
    Z
        ``(n, n)`` non-negative co-association, dense or sparse. Only its
        non-zero entries enter the likelihood, so a sparse ``Z`` holding every
        non-zero gives the same fit as the dense one.
    n_clusters
        ``K``.
    n_init
        Starts, each with likelihood columns seeded on the co-association rows of
        ``K`` far-apart random items (k-means++ style); the one with the largest
        final log-likelihood is kept. Ignored when ``init`` is given.
    max_iter
        Most EM steps per start.
    tol
        Stop when the relative change of the log-likelihood is at most ``tol``.
    {random_state}
        Here it seeds the starts.
    init
        ``(posteriors, likelihoods)`` to start from (warm start), ``(n, K)`` each.
    coassociation_row
        ``s -> (n,)`` full co-association row of item ``s``, used to seed the starts
        when ``Z`` holds only sampled pairs (rows of ``Z`` itself otherwise).

    Returns
    -------
    PLAFit
        The best start's fit, clusters in their fitted order.

    Examples
    --------
    >>> import numpy as np
    >>> from scconsensus.core.pla import pla_em
    >>> labels = np.repeat([0, 1], 5)
    >>> Z = 3.0 * (labels[:, None] == labels[None, :])
    >>> fit = pla_em(Z, 2, random_state=0)
    >>> bool((fit.posteriors.argmax(1)[:5] != fit.posteriors.argmax(1)[5:]).all())
    True
    """
    Z = check_coassociation(Z)
    n = Z.shape[0]
    K = check_n_clusters(n_clusters, n)
    n_init = check_restarts(n_init, "n_init")
    max_iter = check_int(max_iter, "max_iter", 1)
    tol = check_number(tol, "tol")
    if not tol > 0:
        raise ValueError(f"tol must be positive, got {tol}.")
    d = row_sums(Z)
    marginals = d / d.sum()
    with np.errstate(divide="ignore"):
        const = float(np.sum(d[d > 0] * np.log(marginals[d > 0])))

    starts = _starts(Z, d, K, init, n_init, random_state, coassociation_row)
    P, W, ll, conv, finals = _best_start(Z, starts, int(max_iter), float(tol), const)
    return PLAFit(
        posteriors=P,
        likelihoods=W,
        marginals=marginals,
        log_likelihood=float(ll[-1]),
        log_likelihood_trace=ll,
        n_iter=len(ll) - 1,
        converged=bool(conv),
        restart_log_likelihoods=np.asarray(finals),
    )
