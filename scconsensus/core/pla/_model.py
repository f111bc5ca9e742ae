"""PLA and weighted PLA on an ensemble, with cross-validated λ and fit-on-a-subset.

Weighted PLA (Lange & Buhmann 2005, Sect. 3.2) alternates EM on ``Z_α = Σ_l α_l Z_l`` with the
closed-form weights of eq. 21, ``α_l ∝ exp(-c_l / λ)``. Both half-steps decrease
``F(θ, α) = Σ_l α_l c_l − λ H(α)``, recorded in ``objective_trace``.

Unit of ``c_l`` (a choice the paper leaves open): eq. 18 sums raw counts, so ``c_l``
grows with ``n²`` and any ``λ`` on the paper's grid {0.1 … 500} would give one-hot
weights. We divide by the mean partition mass ``s = mean_l Σ_ij z^(l)_ij``, which
makes ``c_l`` a cross-entropy in nats per unit of co-association (about ``2 log n``),
the same for every partition and independent of ``n`` and ``L``; λ is then in nats and
the paper's grid spans sparse (0.1) to uniform (500) weights. A common factor leaves
eq. 21's family of solutions unchanged (it rescales λ), and uniform α reproduces
unweighted PLA exactly.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ..._docs import doc_params
from ..._memory_guard import check_dense_route
from ..._validation import (
    RandomState,
    check_choice,
    check_int,
    check_n_clusters,
    check_number,
    check_options,
    check_restarts,
    renamed_args,
    seed_sequence,
)
from ..._warnings import warn
from .._options import takes_records
from .._pair_source import PAIRS, auto_mode
from .._subset import fit_subset
from ..membership import warn_in_no_partition
from ._doc import PLA_PARAMS
from ._em import _TINY, PLAFit, pla_em
from ._extend import _extend
from ._members import Members, as_members
from ._options import LAMBDA_GRID, Weighting
from ._pattern import sparse_pattern
from ._problem import Problem
from ._weighted import (
    _full_rows,
    _unweighted,
    _weighting,
    check_weighting,
    warn_unused_lam,
)

__all__ = ["LAMBDA_GRID", "PLAResult", "pla"]

#: Components are duplicates only where the ensemble co-clusters the items labelled with
#: one and with the other nearly as often as each group among itself (:func:`_together`).
#: Measured: 0.89-1.01 for the duplicates of K = 4, 6, 9 on 3 planted groups with 5-45 %
#: label noise; 0.54-0.79 for the two clusters of the PLA banana toy from any start.
MIN_TOGETHER = 0.85

#: The routes of a PLA fit (``mode``).
MODES = ("auto", "dense", "sparse")


@dataclass
class PLAResult:
    """A (weighted) PLA consensus.

    Attributes
    ----------
    posteriors
        ``(n, K)`` ``p(v|i)`` for every item (fitted or extended), rows sum to 1;
        clusters ordered by decreasing prior ``p(v)``. Components that duplicate one
        another (the same items, which the ensemble does not separate:
        :func:`merge_duplicates`) are merged, so ``K`` can be below ``n_clusters``.
    labels
        ``(n,)`` argmax of ``posteriors``.
    likelihoods
        ``(r, K)`` ``p(j|v)`` over the ``r`` fitted items (columns sum to 1).
    marginals
        ``(r,)`` ``p(i)`` of the fitted items (eq. 6).
    cluster_priors
        ``(K,)`` ``p(v) = Σ_i p(i) p(v|i)``.
    fit_index
        ``(r,)`` indices of the items the model was fitted on (all items unless
        ``fit_size``/``fit_fraction`` was given); the others were extended.
    log_likelihood
        Final log-likelihood (eq. 5; of ``Z_α`` when weighted).
    log_likelihood_trace
        Log-likelihood before each EM step of the final EM run (non-decreasing).
    n_iter, converged
        Of the final EM run.
    restart_log_likelihoods
        Final log-likelihood of each restart of the first EM run.
    weights
        ``(L,)`` partition weights ``α`` (uniform when unweighted).
    lam
        λ used (``nan`` when unweighted).
    objective_trace
        ``F = Σ α_l c_l − λH(α)`` after every half-step of weighted PLA (non-increasing).
    cv_scores
        One row per λ of the grid: mean (and sd over folds) of the three held-out
        scores of ``cv_score``. Empty when λ was given.
    mode
        ``"dense"`` or ``"sparse"``.
    n_stored
        Stored entries of ``Z`` (``r²`` when dense; pattern entries when sparse).
    pair_source
        Where the sparse route's within-cluster partners came from: ``"knn"``,
        ``"ensemble"`` or ``"given"`` (``pairs`` as an array); ``None`` when dense.
    """

    posteriors: np.ndarray
    labels: np.ndarray
    likelihoods: np.ndarray
    marginals: np.ndarray
    cluster_priors: np.ndarray
    fit_index: np.ndarray
    log_likelihood: float
    log_likelihood_trace: np.ndarray
    n_iter: int
    converged: bool
    restart_log_likelihoods: np.ndarray
    weights: np.ndarray
    lam: float
    objective_trace: np.ndarray
    cv_scores: pd.DataFrame
    mode: str
    n_stored: int
    pair_source: str | None = None


def merge_duplicates(
    posteriors: np.ndarray,
    likelihoods: np.ndarray,
    prior: np.ndarray,
    members: Members,
    alpha: np.ndarray,
    min_similarity: float = 0.8,
    min_together: float = MIN_TOGETHER,
) -> tuple[np.ndarray, np.ndarray]:
    """Merge components that describe the same items, which the ensemble never separates.

    PLA's EM keeps every one of its ``K`` components alive: asked for more
    clusters than the ensemble holds, it splits a group into components that
    share the same items, and an item's posterior then divides between them
    (0.5/0.5) although every partition agrees on it. Two components are merged
    (posteriors added, profiles averaged by prior) when both hold:

    - they share their items: their profiles ``p(j|v)`` point the same way
      (cosine >= ``min_similarity``);
    - the ensemble does not separate them: the mean co-association between the
      items labelled (argmax) with one and those labelled with the other is at least
      ``min_together`` of the geometric mean of the two groups' own
      (:func:`_together`; a group without labelled items has nothing to separate).

    The cosine alone merged distinct clusters: PLA fits ``P Wᵀ``, which ``P T``,
    ``W T⁻ᵀ`` leave unchanged, so EM can stop where each component of two distinct
    clusters carries much of every item's posterior. On the banana toy of Lange &
    Buhmann (2005) from a soft start, one cluster's posteriors spanned only
    0.13–0.81, the profiles reached cosine 0.81–0.85 and ``n_clusters=2`` came out
    as one cluster. The ensemble's co-association of the labelled groups does not
    depend on where EM stopped on that ridge: 0.54–0.79 for the toy's two
    clusters, 0.89–1.01 for duplicates. Groups of components merge only when every
    pair across them is a duplicate.

    Parameters
    ----------
    posteriors
        ``(n, K)`` ``p(v|i)`` of all items of ``members``.
    likelihoods
        ``(r, K)`` profiles ``p(j|v)`` over the fitted items.
    prior
        ``(K,)`` ``p(v)``.
    members
        The ensemble on all ``n`` items.
    alpha
        ``(L,)`` partition weights of the fit.
    min_similarity, min_together
        The two thresholds above.

    Returns
    -------
    ``(posteriors, likelihoods)`` over the merged components.
    """
    W = np.asarray(likelihoods, dtype=np.float64)
    K = W.shape[1]
    unit = W / np.maximum(np.linalg.norm(W, axis=0, keepdims=True), _TINY)
    cosine = unit.T @ unit
    duplicate = np.triu(cosine >= min_similarity, 1)
    if not duplicate.any():
        return posteriors, likelihoods
    duplicate = (cosine >= min_similarity) & _together(posteriors, members, alpha, min_together)
    group = _complete_groups(duplicate, cosine)
    roots, group = np.unique(group, return_inverse=True)
    if roots.size == K:
        return posteriors, likelihoods
    onehot = np.eye(roots.size)[group]  # K x K', component -> merged component
    merged_post = posteriors @ onehot
    merged_W = (W * prior) @ onehot
    merged_W /= np.maximum(merged_W.sum(axis=0, keepdims=True), _TINY)
    return merged_post, merged_W


def _together(posteriors: np.ndarray, members: Members, alpha, min_together: float) -> np.ndarray:
    """``(K, K)``: whether the ensemble co-clusters the items labelled ``a`` and ``b``.

    ``c_ab / sqrt(c_aa c_bb)`` of the mean co-associations ``c`` of
    :func:`_group_coassociation` is at least ``min_together`` (1 when the ensemble
    treats both groups alike). A group of one item has no pair within: the other
    group's value stands in. No evidence (an empty group, never sampled together)
    counts as together.
    """
    mean = _group_coassociation(posteriors, members, alpha)
    within = np.diag(mean)
    within_a = np.where(np.isnan(within)[:, None], within[None, :], within[:, None])
    scale = np.sqrt(within_a * within_a.T)
    with np.errstate(invalid="ignore", divide="ignore"):
        return ~(mean / scale < min_together)  # NaN (no evidence) compares False


def _group_coassociation(posteriors: np.ndarray, members: Members, alpha) -> np.ndarray:
    """``(K, K)`` mean α-weighted co-association between the items labelled ``a`` and
    those labelled ``b`` (argmax), over the pairs a partition sampled, self pairs left
    out; NaN where there is no such pair."""
    labels = posteriors.argmax(axis=1)
    K = posteriors.shape[1]
    in_part = sp.csr_matrix(
        (np.ones(members.part.size), (np.arange(members.part.size), members.part)),
        shape=(members.part.size, members.n_partitions),
    )
    counts, self_shared, self_pairs = _group_sums(labels, K, members, alpha, in_part)
    mass = counts @ in_part  # K x L: group members each partition sampled
    shared = (counts * members.column_weights(alpha)) @ counts.T
    pairs = (mass * alpha) @ mass.T
    shared[np.diag_indices(K)] -= self_shared
    pairs[np.diag_indices(K)] -= self_pairs
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(pairs > 1e-12 * max(pairs.max(), 1.0), shared / pairs, np.nan)


def _group_sums(labels, K: int, members: Members, alpha, in_part, chunk: int = 1 << 14):
    """Per group of ``labels``: its memberships summed per column ``(K, Σ k_l)``, and its
    items' self pairs ``Σ_i Σ_c α h_ic²`` and ``Σ_i Σ_l α_l (Σ_c∈l h_ic)²`` (``(K,)``
    each), by blocks of rows so that no temporary is the size of the ensemble."""
    w = members.column_weights(alpha)
    counts = np.zeros((K, members.H.shape[1]))
    self_shared, self_pairs = np.zeros(K), np.zeros(K)
    for start in range(0, labels.size, chunk):
        H = members.H[start : start + chunk]
        lab = labels[start : start + chunk]
        onehot = sp.csr_matrix((np.ones(lab.size), (lab, np.arange(lab.size))), shape=(K, lab.size))
        counts += (onehot @ H).toarray()
        self_shared += onehot @ (H.multiply(H) @ w)
        item_mass = H @ in_part
        self_pairs += onehot @ (item_mass.multiply(item_mass) @ alpha)
    return counts, self_shared, self_pairs


def _complete_groups(duplicate: np.ndarray, cosine: np.ndarray) -> np.ndarray:
    """``(K,)`` group of each component: pairs joined by decreasing cosine, two groups
    only when every pair across them is a ``duplicate`` (complete linkage)."""
    K = duplicate.shape[0]
    group = np.arange(K)
    a, b = np.triu_indices(K, 1)
    for i in np.argsort(-cosine[a, b], kind="stable"):
        ga, gb = group == group[a[i]], group == group[b[i]]
        if group[a[i]] != group[b[i]] and duplicate[np.ix_(ga, gb)].all():
            group[gb] = group[a[i]]
    return group


def _first_fit(problem, K, init, fit_index, n_init, seed, em_kw) -> PLAFit:
    """EM from ``init`` (if given) and the random restarts; the best log-likelihood wins."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return _best_start(problem, K, init, fit_index, n_init, seed, em_kw)


def _best_start(problem, K, init, fit_index, n_init, seed, em_kw) -> PLAFit:
    L = problem.n_partitions
    Z = problem.z(np.ones(L))
    fits = []
    if init is not None:
        P0 = init if init.shape[0] == fit_index.size else init[fit_index]
        W0 = P0 / np.maximum(P0.sum(axis=0, keepdims=True), _TINY)
        fits.append(pla_em(Z, K, init=(P0, W0), **em_kw))
        n_init -= 1
    if n_init > 0:
        fits.append(
            pla_em(
                Z,
                K,
                n_init=n_init,
                random_state=seed,
                coassociation_row=_full_rows(problem),
                **em_kw,
            )
        )
    best = max(fits, key=lambda f: f.log_likelihood)
    best.restart_log_likelihoods = np.array([f.log_likelihood for f in fits])
    return best


@takes_records(weighting=Weighting)
@renamed_args(n_restarts="n_init")
@doc_params(**PLA_PARAMS)
def pla(
    ensemble,
    n_clusters: int = 10,
    *,
    weighted: bool = False,
    weighting: Weighting | None = None,
    mode: str = "auto",
    X: np.ndarray | None = None,
    pairs: np.ndarray | str = "auto",
    n_neighbors: int = 10,
    n_random: int = 30,
    diagonal: bool = True,
    fit_size: int | str | None = None,
    fit_fraction: float | None = None,
    n_init: int = 3,
    max_iter: int = 300,
    tol: float = 1e-6,
    max_outer: int = 30,
    outer_tol: float = 1e-6,
    random_state: RandomState = 0,
    progress: bool | None = None,
    init: np.ndarray | None = None,
    fit_index: np.ndarray | None = None,
) -> PLAResult:
    """Probabilistic Label Aggregation (Lange & Buhmann 2005), optionally weighted.

    {pla_solver}

    Parameters
    ----------
    {pla_ensemble}
    {pla_weighted}
    {pla_weighting_record}
    {pla_route}
    {pla_fit_subset}
    {pla_n_init}
    {pla_stop}
    {pla_core}
    {pla_fit_index}

    Returns
    -------
    :class:`PLAResult`.

    Examples
    --------
    >>> import numpy as np
    >>> from scconsensus.core.pla import pla
    >>> labels = np.repeat([[0, 0, 1], [1, 1, 0], [2, 2, 2]], 20, axis=0)
    >>> res = pla(labels, 3, random_state=0)
    >>> res.posteriors.shape, bool(np.allclose(res.posteriors.sum(1), 1))
    ((60, 3), True)
    """
    members = as_members(ensemble)
    n, K = members.n_items, check_n_clusters(n_clusters, members.n_items)
    pairs = "auto" if pairs is None else pairs
    n_init, em_kw = _check_run(mode, n_init, max_iter, tol, n_neighbors, n_random, pairs)
    s_em, s_fit, s_pairs, s_cv = seed_sequence(random_state).spawn(4)
    fit_index, init = _fit_items(n, K, fit_index, (fit_size, fit_fraction), s_fit, init)
    w = check_options(weighting, Weighting, "weighting")
    lam, cv_score = w.lam, w.cv_score
    weighting = (weighted, lam, w.lam_grid, w.cv_folds, cv_score, max_outer)
    lam_grid, cv_folds = check_weighting(*weighting, fit_index.size)
    warn_unused_lam(weighted, lam)
    fit_members = members.subset(fit_index)
    route = (mode, X, pairs, n_neighbors, n_random, diagonal, s_pairs)
    problem, mode, *stored = _problem(fit_members, fit_index, n, *route)
    _warn_uncovered(members, fit_index)
    fit = _first_fit(problem, K, init, fit_index, n_init, s_em, em_kw)
    restarts = fit.restart_log_likelihoods
    weights = _unweighted(members.n_partitions)
    if weighted:
        outer = {"max_outer": max_outer, "outer_tol": outer_tol, "em_kw": em_kw}
        cv = {"lam_grid": lam_grid, "cv_folds": int(cv_folds), "cv_score": cv_score, "seed": s_cv}
        cv.update(n_init=n_init, progress=progress)
        fit = _weighting(problem, K, fit, lam, weights, cv, outer)
    return _result(fit, restarts, (members, fit_members, fit_index), weights, mode, stored)


def _result(fit, restarts, items, weights: dict, mode: str, stored) -> PLAResult:
    """The :class:`PLAResult` of all items (``items``: members, fitted members, fit index;
    ``stored``: ``Z``'s stored entries and the pairs' source)."""
    members, fit_members, fit_index = items
    n_stored, pair_source = stored
    posteriors, likelihoods, priors = _all_items(fit, members, fit_members, fit_index, weights)
    return PLAResult(
        posteriors=posteriors,
        labels=posteriors.argmax(axis=1).astype(np.int32),
        likelihoods=likelihoods,
        marginals=fit.marginals,
        cluster_priors=priors,
        fit_index=fit_index,
        log_likelihood=fit.log_likelihood,
        log_likelihood_trace=fit.log_likelihood_trace,
        n_iter=fit.n_iter,
        converged=fit.converged,
        restart_log_likelihoods=restarts,
        mode=mode,
        n_stored=n_stored,
        pair_source=pair_source,
        **weights,
    )


def _check_run(mode, n_init, max_iter, tol, n_neighbors, n_random, pairs="auto"):
    """``(n_init, em_kw)``: the run arguments of :func:`pla` checked."""
    check_choice(mode, MODES, "mode")
    if isinstance(pairs, str):  # an array is checked where it is read
        check_choice(pairs, PAIRS, "pairs")
    check_int(n_neighbors, "n_neighbors", 0)
    check_int(n_random, "n_random", 0)
    n_init = check_restarts(n_init, "n_init")
    em_kw = {"max_iter": check_int(max_iter, "max_iter", 1), "tol": check_number(tol, "tol")}
    return n_init, em_kw


def check_pla_args(
    n_fit: int,
    *,
    mode: str,
    weighted: bool,
    lam: float | str,
    lam_grid,
    cv_folds: int,
    cv_score: str,
    n_neighbors: int,
    n_random: int,
    n_init: int,
    max_iter: int,
    tol: float,
    max_outer: int = 30,
    pairs: str = "auto",
) -> None:
    """Check the arguments of :func:`pla` before any work (the plan included).

    For callers that plan the consensus first (:func:`pla_consensus`); ``n_fit`` bounds
    the cross-validation folds. :func:`pla` checks them again, on the items it fits.
    """
    _check_run(mode, n_init, max_iter, tol, n_neighbors, n_random, pairs)
    if mode == "dense":  # before the plan: an oversize call fails at once
        check_dense_route("pla", n_fit, what="Dense PLA")
    check_weighting(weighted, lam, lam_grid, cv_folds, cv_score, max_outer, n_fit)


def _check_init(init, n: int, K: int, n_fit: int) -> np.ndarray | None:
    """``init`` as finite, non-negative ``(n, K)`` or ``(n_fit, K)`` posteriors, or ``None``."""
    if init is None:
        return None
    init = np.asarray(init, dtype=np.float64)
    rows = f"{n}" if n_fit == n else f"{n} or {n_fit} (the fitted items)"
    if (
        init.ndim != 2
        or init.shape[0] not in (n, n_fit)
        or init.shape[1] != K
        or not np.all(np.isfinite(init))
        or (init < 0).any()
    ):
        raise ValueError(
            f"init must be finite, non-negative posteriors with {rows} rows and {K} "
            f"columns, got shape {init.shape}."
        )
    return init


def _fit_items(n: int, K: int, fit_index, size: tuple, seed, init) -> tuple:
    """``(items to fit, init checked)``: ``fit_index`` checked, else drawn by ``size``
    (``fit_size``, ``fit_fraction``) from ``seed``, all of them when ``size`` says so.
    ``init`` may give the fitted rows only where the caller chose them."""
    if fit_index is not None:
        index = _check_fit_index(fit_index, n, K, size)
        return index, _check_init(init, n, K, index.size)
    drawn = fit_subset(n, *size, K, np.random.default_rng(seed), method="pla")
    return np.arange(n) if drawn is None else drawn, _check_init(init, n, K, n)


def _check_fit_index(fit_index, n: int, K: int, size: tuple) -> np.ndarray:
    """A given ``fit_index``: increasing, distinct indices, more than ``K`` of them."""
    if size != (None, None):
        raise ValueError("Pass fit_index or fit_size/fit_fraction, not both.")
    index = np.asarray(fit_index)
    if index.ndim != 1 or not np.issubdtype(index.dtype, np.integer):
        raise ValueError("fit_index must be a 1-D array of item indices.")
    if index.size and index.max() >= n:  # before the cast: a uint64 could wrap
        raise ValueError(f"fit_index holds {index.max()}; items are numbered 0..{n - 1}.")
    index = index.astype(np.int64)
    if index.size <= K:
        raise ValueError(f"fit_index holds {index.size} items; fit more than n_clusters={K}.")
    if index.min() < 0 or np.any(np.diff(index) <= 0):
        raise ValueError(
            f"fit_index must be increasing, distinct indices in 0..{n - 1}; pass "
            "np.unique(fit_index)."
        )
    return index


def _problem(fit_members, fit_index, n, mode, X, pairs, n_neighbors, n_random, diagonal, seed):
    """``(problem, mode, n_stored, pair_source)``: the EM problem on all pairs or on
    sampled ones (``pair_source`` ``None`` on all pairs)."""
    n_neighbors = check_int(n_neighbors, "n_neighbors", 0)
    n_random = check_int(n_random, "n_random", 0)
    r = fit_index.size
    if mode == "auto":
        mode = auto_mode(r, pairs, X is not None, n_neighbors)
    if mode == "dense" and not diagonal:
        raise ValueError("diagonal=False is only supported with mode='sparse'.")
    if mode == "dense":
        check_dense_route("pla", r, what="Dense PLA")
        return Problem(fit_members), mode, r * r, None
    counts = (n_neighbors, n_random)
    pattern, z_ones, source = sparse_pattern(
        fit_members, fit_index, n, X, pairs, counts, diagonal, seed
    )
    return Problem(fit_members, pattern, z_ones=z_ones), mode, int(pattern.nnz), source


def _warn_uncovered(members, fit_index) -> None:
    uncovered = members.sampled()[fit_index] == 0
    warn_in_no_partition(int(uncovered.sum()), "posteriors")


def _all_items(fit, members, fit_members, fit_index, weights):
    """``(posteriors, likelihoods, priors)`` of all items, clusters by decreasing prior.

    Items outside ``fit_index`` get the out-of-sample extension (Sect. 3.3); clusters
    that duplicate one another are merged. ``fit.posteriors`` is updated to match.
    """
    n = members.n_items
    posteriors = np.empty((n, fit.posteriors.shape[1]))
    posteriors[fit_index] = fit.posteriors
    rest = np.setdiff1d(np.arange(n), fit_index)
    if rest.size:
        ext, empty = _extend(fit.posteriors, fit_members, members.subset(rest), weights["weights"])
        posteriors[rest] = ext
        if empty.any():
            warn(
                f"{int(empty.sum())} extended item(s) share no cluster with a fitted item; "
                "they get uniform posteriors.",
                RuntimeWarning,
            )
    prior = fit.marginals @ fit.posteriors
    posteriors, likelihoods = merge_duplicates(
        posteriors, fit.likelihoods, prior, members, weights["weights"]
    )
    fit.posteriors = posteriors[fit_index]
    K = posteriors.shape[1]
    priors = fit.marginals @ fit.posteriors
    order = np.lexsort((np.arange(K), -priors))
    return posteriors[:, order], likelihoods[:, order], priors[order]
