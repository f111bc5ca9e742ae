"""Array-level entry point of probabilistic consensus clustering (PCC)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..._docs import doc_params
from ..._validation import (
    check_int,
    check_min_mass,
    check_n_clusters,
    check_number,
    check_restarts,
    seed_sequence,
)
from ..membership import hard_labels, order_clusters
from . import _batch, _greedy, _sparse, _sweep
from ._checks import ASYMMETRIC, C_ABOVE_N, NEGATIVE, NONFINITE, dense_flags
from ._divergences import Bregman, check_divergence
from ._doc import PCC_PARAMS
from ._parallel import variant
from ._result import PCCResult, thin_trace

SOLVERS = ("auto", "batch", "greedy", "sweep")
_STATUS = {0: "max_iter", 1: "converged", 2: "stalled"}
# below this many items NumPy checks the counts (2 ms at 700 items, 36 ms at 2,000 against
# 18 ms for the kernel): the kernel's compilation, 1.5-1.8 s, was the first thing a first
# call on small data paid
NUMPY_CHECKS_BELOW = 1_000
# count types checked in one numba pass (coassociation returns int32); others by NumPy
_FAST_DTYPES = (np.dtype(np.int32), np.dtype(np.int64), np.dtype(np.float64))


def _check_dense(C, N):
    C = np.asarray(C)
    N = np.asarray(N)
    for name, M in (("C", C), ("N", N)):
        if M.dtype.kind not in "biuf":
            raise ValueError(f"{name} must be numeric, got dtype {M.dtype}.")
        if M.ndim != 2 or M.shape[0] != M.shape[1]:
            raise ValueError(f"{name} must be a square (n x n) matrix, got shape {M.shape}.")
    if C.shape != N.shape:
        raise ValueError(
            f"C has shape {C.shape} but N has shape {N.shape}; both must be the n x n "
            "co-clustering and co-sampling counts of the same items "
            "(scconsensus.core.coassociation returns them together)."
        )
    C, N = _check_dense_values(C, N)
    if C.dtype.kind != "f" and C.dtype != N.dtype:
        C = C.astype(np.float64)
        N = N.astype(np.float64)
    if C.dtype.kind not in "if" or N.dtype.kind not in "if" or C.dtype != N.dtype:
        C = C.astype(np.float64)
        N = N.astype(np.float64)
    C = np.ascontiguousarray(C)
    N = np.ascontiguousarray(N)
    n = N.shape[0]
    weight = float(N.sum(dtype=np.float64) - np.trace(N, dtype=np.float64))
    return C, N, n, weight


def _check_dense_values(C, N):
    """``C``, ``N`` (C-ordered where the one-pass check applies) after the value checks."""
    if C.dtype == N.dtype and C.dtype in _FAST_DTYPES and N.shape[0] >= NUMPY_CHECKS_BELOW:
        C = np.ascontiguousarray(C)
        N = np.ascontiguousarray(N)
        flags = variant(dense_flags, N.shape[0])(C, N)
        fault = next((f for f in range(len(flags)) if flags[f]), None)
    else:
        fault = _first_fault_numpy(C, N)
    if fault == NONFINITE:
        name = "C" if C.dtype.kind == "f" and not np.all(np.isfinite(C)) else "N"
        raise ValueError(
            f"{name} contains NaN or infinite values; co-association counts must be finite."
        )
    if fault == NEGATIVE:
        raise ValueError("C and N must be non-negative counts.")
    if fault == C_ABOVE_N:
        raise ValueError(
            "C exceeds N for some pairs: items cannot be co-clustered more often than they "
            "were co-sampled. Pass (C, N) in that order."
        )
    if fault == ASYMMETRIC:
        raise ValueError("C and N must be symmetric (c_ij = c_ji, N_ij = N_ji).")
    return C, N


def _first_fault_numpy(C, N):
    """The first check of :func:`dense_flags`'s order that fails, by NumPy; None if none."""
    if any(M.dtype.kind == "f" and not np.all(np.isfinite(M)) for M in (C, N)):
        return NONFINITE
    if (N < 0).any() or (C < 0).any():
        return NEGATIVE
    if (C > N).any():
        return C_ABOVE_N
    if not (np.array_equal(C, C.T) and np.array_equal(N, N.T)):
        return ASYMMETRIC
    return None


def _check_sparse(C, N):
    if not (sp.issparse(C) and sp.issparse(N)):
        raise ValueError(
            "Pass C and N both dense (numpy) or both sparse (scipy CSR from "
            "scconsensus.core.coassociation(mode='sparse'))."
        )
    if C.shape != N.shape or C.ndim != 2 or C.shape[0] != C.shape[1]:
        raise ValueError(
            f"C has shape {C.shape} and N has shape {N.shape}; both must be the same n x n."
        )
    n = N.shape[0]
    fast = _canonical_sparse(C, N)
    if fast is not None:
        return fast
    Nc = sp.coo_matrix(N, dtype=np.float64)
    Nc.sum_duplicates()
    Cc = sp.coo_matrix(C, dtype=np.float64)
    Cc.sum_duplicates()
    if not (np.all(np.isfinite(Nc.data)) and np.all(np.isfinite(Cc.data))):
        raise ValueError("C or N contains NaN or infinite values; counts must be finite.")
    if (Nc.data < 0).any() or (Cc.data < 0).any():
        raise ValueError("C and N must be non-negative counts.")
    # the model has no self pairs, and pairs never co-sampled carry no evidence
    keep = (Nc.row != Nc.col) & (Nc.data > 0)
    rows = Nc.row[keep].astype(np.int64)
    cols = Nc.col[keep].astype(np.int64)
    nval = Nc.data[keep]
    key = rows * n + cols
    order = np.argsort(key, kind="stable")
    rows, cols, nval, key = rows[order], cols[order], nval[order], key[order]
    cmask = (Cc.row != Cc.col) & (Cc.data != 0)
    ckey = Cc.row[cmask].astype(np.int64) * n + Cc.col[cmask]
    pos = np.searchsorted(key, ckey)
    found = pos < key.size
    found[found] = key[pos[found]] == ckey[found]
    if not found.all():
        raise ValueError(
            "C has entries where N is zero: a pair cannot be co-clustered without being "
            "co-sampled. Build C and N together with scconsensus.core.coassociation."
        )
    cval = np.zeros(key.size)
    cval[pos] = Cc.data[cmask]
    if (cval > nval).any():
        raise ValueError(
            "C exceeds N for some pairs: items cannot be co-clustered more often than they "
            "were co-sampled. Pass (C, N) in that order."
        )
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
    indices = np.ascontiguousarray(cols)
    mirror = _sparse.mirror_index(indptr, indices, n)
    if not (np.array_equal(nval[mirror], nval) and np.array_equal(cval[mirror], cval)):
        raise ValueError("C and N must be symmetric (c_ij = c_ji, N_ij = N_ji).")
    return indptr, indices, np.ascontiguousarray(cval), np.ascontiguousarray(nval), mirror, n


def _canonical_sparse(C, N):
    """``_check_sparse``'s output in O(nnz) when ``C``, ``N`` are canonical CSR, else None.

    ``coassociation(mode='sparse')`` returns exactly this layout; the general
    path (duplicate summing, a sort of the pair keys, a binary search for the
    mirror of every pair) took 5 s CPU on the 3.8 million stored pairs of the
    Sect. 7.3 shape of Lourenço et al. (2015).
    """
    if C.format != "csr" or N.format != "csr":
        return None
    n = N.shape[0]
    indptr = np.asarray(N.indptr, dtype=np.int64)
    indices = np.asarray(N.indices, dtype=np.int64)
    cval = np.ascontiguousarray(C.data, dtype=np.float64)
    nval = np.ascontiguousarray(N.data, dtype=np.float64)
    if indptr.shape[0] != n + 1 or cval.shape != indices.shape or nval.shape != indices.shape:
        return None
    cindptr = np.asarray(C.indptr, dtype=np.int64)
    cindices = np.asarray(C.indices, dtype=np.int64)
    if cindptr.shape != indptr.shape:
        return None
    mirror = np.empty(indices.shape[0], dtype=np.int64)
    if not _sparse.canonical_mirror(indptr, indices, cindptr, cindices, cval, nval, mirror):
        return None
    return indptr, np.ascontiguousarray(indices), cval, nval, mirror, n


def _random_start(n: int, K: int, seq: np.random.SeedSequence) -> np.ndarray:
    # exactly uniform memberships are a stationary point (all gradient entries equal):
    # start from uniformly random points of the simplex instead
    rng = np.random.default_rng(seq)
    return np.ascontiguousarray(rng.dirichlet(np.ones(K), size=n))


@doc_params(**PCC_PARAMS)
def pcc(
    C,
    N,
    n_clusters: int,
    divergence: str | Bregman = "kl",
    *,
    solver: str = "auto",
    n_init: int | None = None,
    init: np.ndarray | None = None,
    tol: float = 1e-4,
    max_iter: int | None = None,
    min_mass: float = 0.5,
    random_state=0,
    trace_every: int | None = None,
) -> PCCResult:
    """Probabilistic consensus clustering of a co-association matrix.

    Minimises eq. (2)-(3) of Lourenço et al. (2015),
    ``f(Y) = sum_{i<j} N_ij d_phi(c_ij / N_ij, y_i . y_j)``, over memberships
    ``y_i`` on the simplex, down to their KKT rule (eq. 6): by batch steps that move
    every item at once on dense input, by item visits on sampled pairs, or by the
    paper's greedy primal line search (Sect. 5) when asked (``solver``).

    Parameters
    ----------
    {pcc_counts}
    {pcc_divergence}
    {pcc_solver}
    {pcc_starts}
    {pcc_stop}
    {random_state}
    {pcc_trace_every}

    Returns
    -------
    :class:`PCCResult` with ``membership``, ``labels``, ``objective``,
    ``objective_trace``, ``n_iter``, ``converged`` and ``kkt_gap``.

    Examples
    --------
    >>> import numpy as np
    >>> from scconsensus.core import coassociation, pcc
    >>> labels = np.repeat([[0, 0, 1], [1, 1, 0], [2, 2, 2]], 20, axis=0)
    >>> res = pcc(*coassociation(labels), n_clusters=5, random_state=0)
    >>> res.n_clusters
    3
    """
    bregman = check_divergence(divergence)
    if solver not in SOLVERS:
        raise ValueError(f"solver={solver!r} is not supported; choose one of {list(SOLVERS)}.")
    data, sparse_input, weight, has_pair = _check_input(C, N)
    n = has_pair.size
    solver = _resolve_solver(solver, sparse_input)
    K, min_mass = check_n_clusters(n_clusters, n), check_min_mass(min_mass, n)
    n_init, tol, max_iter = _check_run(n_init, init, tol, max_iter, n * K, trace_every)
    scale = weight / n
    run = {"max_iter": max_iter, "tol_abs": tol * scale, "trace_every": trace_every}
    starts = _starts(init, n, K, n_init, random_state)
    _check_start_in_domain(init, starts[0], data, sparse_input, bregman)
    runs = []
    for Y in starts:
        runs.append((*_solve(data, sparse_input, Y, bregman, solver, run), Y))
    best = min(range(len(runs)), key=lambda r: runs[r][0])  # the first of equal objectives
    obj, trace, n_iter, status, gap, n_polish, Y = runs[best]
    membership, order, obj = _returned(data, sparse_input, Y, obj, bregman, min_mass, has_pair)
    return PCCResult(
        membership=membership,
        labels=hard_labels(membership),
        objective=float(obj),
        objective_trace=trace if trace_every is not None else thin_trace(trace),
        n_iter=n_iter,
        converged=status == 1,
        kkt_gap=float(gap / scale),
        divergence=bregman.name,
        solver=solver + ("-sparse" if sparse_input else ""),
        restart_objectives=np.asarray([r[0] for r in runs]),
        cluster_order=order.astype(np.int64),
        n_isolated=int((~has_pair).sum()),
        n_polish=int(n_polish),
    )


def _resolve_solver(solver: str, sparse_input: bool) -> str:
    """The solver ``"auto"`` stands for on this input; ``"sweep"`` refused on dense input."""
    if solver == "auto":
        return "sweep" if sparse_input else "batch"
    if solver == "sweep" and not sparse_input:
        raise ValueError(
            "solver='sweep' works on sampled pairs (sparse C and N); use 'batch' or 'greedy' "
            "on a dense co-association."
        )
    return solver


def _check_input(C, N) -> tuple[tuple, bool, float, np.ndarray]:
    """``(data, sparse, weight, has_pair)``: the checked counts in a solver's layout.

    ``data`` is ``(C, N)`` dense, or ``(indptr, indices, cval, nval, mirror)`` on
    sampled pairs; ``weight`` the total co-sampling count and ``has_pair`` whether
    each item has a co-sampled partner.
    """
    for name, M in (("C", C), ("N", N)):
        if M is None:
            raise ValueError(
                f"{name} is required: pcc takes the co-clustering counts C and the "
                "co-sampling counts N of the same items, e.g. "
                "C, N = scconsensus.core.coassociation(labels); pcc(C, N, n_clusters)."
            )
    if sp.issparse(C) or sp.issparse(N):
        indptr, indices, cval, nval, mirror, n = _check_sparse(C, N)
        data, sparse_input = (indptr, indices, cval, nval, mirror), True
        weight = float(nval.sum())
        has_pair = np.diff(indptr) > 0
    else:
        C, N, n, weight = _check_dense(C, N)
        data, sparse_input = (C, N), False
        # N >= 0, so an item has a co-sampled partner iff its off-diagonal row sum is > 0
        has_pair = (N.sum(axis=1, dtype=np.float64) - np.diag(N)) > 0
    if n < 3:
        raise ValueError(f"PCC needs at least 3 items, got {n}.")
    if weight <= 0:
        raise ValueError(
            "No pair of items was ever co-sampled (all N_ij = 0 off the diagonal); "
            "the ensemble carries no co-association evidence."
        )
    return data, sparse_input, weight, has_pair


def check_run(divergence, n_init, tol, max_iter) -> None:
    """Check the run arguments as :func:`pcc` will, for callers that do other work first.

    ``None`` for ``n_init`` or ``max_iter`` is :func:`pcc`'s default, left to it.
    """
    check_divergence(divergence)
    if n_init is not None:
        check_restarts(n_init, "n_init")
    _check_tol(tol)
    if max_iter is not None:
        check_int(max_iter, "max_iter", 0)


def _check_tol(tol) -> float:
    tol = check_number(tol, "tol")
    if not tol > 0:
        raise ValueError(f"tol must be a positive number, got {tol}.")
    return tol


def _check_run(n_init, init, tol, max_iter, nK: int, trace_every) -> tuple[int, float, int]:
    """``(n_init, tol, max_iter)`` checked, with their defaults."""
    if n_init is None:
        n_init = 1 if init is not None else 3
    n_init = check_restarts(n_init, "n_init")
    tol = _check_tol(tol)
    max_iter = check_int(50 * nK if max_iter is None else max_iter, "max_iter", 0)
    _greedy.trace_stride(max_iter, nK, trace_every)  # checks trace_every for every solver
    return n_init, tol, max_iter


def _starts(init, n: int, K: int, n_init: int, random_state) -> list[np.ndarray]:
    """``init`` (checked) when given, then random points of the simplex: ``n_init`` in all."""
    starts = []
    if isinstance(init, str):
        # the named starts belong to the ensemble-level functions, which compute them
        raise ValueError(
            f"init={init!r} is not a start of this array-level function: pass an "
            "(n_items, n_clusters) membership array, or init=None for n_init random "
            "points of the simplex. Named starts ('spectral', 'ensemble', 'random') are "
            "options of scconsensus.core.pcc_consensus and scconsensus.tl.pcc."
        )
    if init is not None:
        Y0 = np.array(init, dtype=np.float64)
        if Y0.shape != (n, K):
            raise ValueError(
                f"init must have shape (n_items, n_clusters) = {(n, K)}, got {Y0.shape}."
            )
        if not np.all(np.isfinite(Y0)) or (Y0 < 0).any() or not np.allclose(Y0.sum(1), 1.0):
            raise ValueError("init rows must be finite, non-negative and sum to 1.")
        starts.append(np.ascontiguousarray(Y0))
    # random restarts compete with the given start on the objective
    seqs = seed_sequence(random_state).spawn(n_init - len(starts))
    return starts + [_random_start(n, K, s) for s in seqs]


def _objective(data, sparse_input: bool, Y, bregman) -> float:
    """Eq. (3) at ``Y`` over the co-sampled pairs."""
    if sparse_input:
        return _sparse.objective_sparse(*data[:4], Y, bregman)
    return _greedy.objective_dense(*data, Y, bregman)


def _check_start_in_domain(init, Y, data, sparse_input: bool, bregman) -> None:
    """A given start ``Y`` with zeros must give a finite objective (it can leave KL's domain).

    A start without zeros has every ``q`` inside (0, 1): nothing to check, no extra pass.
    """
    if init is None or not (Y == 0).any():
        return
    if not np.isfinite(_objective(data, sparse_input, Y, bregman)):
        raise ValueError(
            f"init gives an infinite objective ({bregman.name!r}): some items co-clustered in the "
            "ensemble share no cluster in init (q = 0 where p > 0), or two items not always "
            "co-clustered sit wholly in the same cluster (q = 1 where p < 1). Start inside the "
            "simplex, e.g. init = 0.9 * init + 0.1 / n_clusters (as the default starts do)."
        )


def _solve(data, sparse_input: bool, Y, bregman, solver: str, run: dict) -> tuple:
    """One start, in place on ``Y``: ``(objective, trace, n_iter, status, gap, n_polish)``."""
    n_polish = 0
    if solver == "batch":
        out = _batch.solve_batch(data, Y, bregman, sparse=sparse_input, **run)
        trace, n_iter, status, gap, n_polish = out
    elif solver == "sweep":
        trace, n_iter, status, gap = _sweep.solve_sweep(*data, Y, bregman, **run)
    elif sparse_input:
        trace, n_iter, status, gap = _sparse.solve_sparse(*data, Y, bregman, **run)
    else:
        trace, n_iter, status, gap = _greedy.solve_dense(*data, Y, bregman, **run)
    obj = _objective(data, sparse_input, Y, bregman)
    if not np.all(np.isfinite(Y)):  # pragma: no cover - a solver bug, never user input
        raise RuntimeError("PCC produced non-finite memberships; please report this.")
    trace[-1] = obj
    return obj, trace, n_iter, status, gap, n_polish


def _returned(data, sparse_input, Y, obj, bregman, min_mass, has_pair):
    """``(membership, order, objective)`` of the point returned: clusters below
    ``min_mass`` dropped, and then the objective of what is returned, not of the
    solver's last iterate (the two differ by the dropped mass).

    A drop that leaves KL's objective infinite keeps the fewest of the dropped clusters,
    largest first, that make it finite again: renormalised without them, two items kept
    apart by some partition came out wholly in one cluster (``q = 1``), which the model
    then says never happens (a user fitting ``K`` far above the data's, e.g. 16 on iris,
    read "objective inf"). They are found by bisection over how many are restored, which
    ends on a finite objective (restoring all gives the solver's point); restoring more
    mostly only adds to the rows' supports, so it is the fewest but where a row that had
    no mass left (uniform) becomes one-hot in a restored cluster.
    """
    membership, order = _memberships(Y, min_mass, has_pair)
    if order.size == Y.shape[1]:
        return membership, order, obj
    obj = _objective(data, sparse_input, membership, bregman)
    if np.isfinite(obj):
        return membership, order, obj
    dropped = np.setdiff1d(np.arange(Y.shape[1]), order)
    dropped = dropped[np.argsort(-Y[:, dropped].sum(axis=0), kind="stable")]
    lo, hi, found = 1, dropped.size, None  # restoring all gives the solver's finite point
    while lo < hi:
        mid = (lo + hi) // 2
        kept = _memberships(Y, min_mass, has_pair, restore=dropped[:mid])
        obj = _objective(data, sparse_input, kept[0], bregman)
        lo, hi = (lo, mid) if np.isfinite(obj) else (mid + 1, hi)
        found = (*kept, obj) if np.isfinite(obj) else found  # the point at hi
    if found is None:  # only restoring all is finite, which the loop never evaluates
        membership, order = _memberships(Y, min_mass, has_pair, restore=dropped[:lo])
        found = (membership, order, _objective(data, sparse_input, membership, bregman))
    return found


def _memberships(
    Y, min_mass: float, has_pair, restore: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Clusters above ``min_mass`` (and those in ``restore``) by decreasing mass, rows
    renormalised; ``(membership, order)``.

    Items without a co-sampled partner, and items whose whole mass sat in dropped
    clusters, get uniform rows.
    """
    Y = np.clip(Y, 0.0, None)
    order = order_clusters(Y, min_mass=min_mass)
    if restore is not None and restore.size:
        order = np.union1d(order, restore)
        order = order[np.lexsort((order, -Y[:, order].sum(axis=0)))]
    membership = Y[:, order]
    rowsum = membership.sum(axis=1, keepdims=True)
    membership = np.divide(membership, rowsum, out=np.zeros_like(membership), where=rowsum > 0)
    uniform = ~has_pair | (rowsum[:, 0] <= 0)
    if uniform.any():
        membership[uniform] = 1.0 / membership.shape[1]
    return membership, order
