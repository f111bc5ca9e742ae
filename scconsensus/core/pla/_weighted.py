"""Weighted PLA (Lange & Buhmann 2005, Sect. 3.2): partition weights, λ by cross-validation.

Weighted PLA alternates EM on ``Z_α = Σ_l α_l Z_l`` with the closed-form weights of
eq. 21, ``α_l ∝ exp(-c_l / λ)``; :func:`~scconsensus.core.pla.pla` calls it with
``weighted=True`` (the unit of ``c_l`` is explained in :mod:`._model`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ..._progress import progress_bar
from ..._validation import (
    check_bool,
    check_choice,
    check_int,
    check_number,
)
from ..._warnings import warn
from ._em import _TINY, PLAFit, pla_em, row_sums
from ._extend import _extend
from ._options import LAMBDA_GRID, Weighting
from ._problem import Problem, pattern_logq

_CV_COLUMNS = {
    "heldout": "heldout_nll",
    "penalized": "penalized",
    "weighted": "weighted_nll",
}

#: The λ options' defaults, which :func:`warn_unused_lam` does not name.
_DEFAULT = Weighting()


def _entropy(alpha: np.ndarray) -> float:
    a = alpha[alpha > 0]
    return float(-np.sum(a * np.log(a)))


def entropic_weights(costs: np.ndarray, lam: float) -> np.ndarray:
    """``α_l = exp(-c_l/λ) / Σ exp(-c_l'/λ)`` (eq. 21), computed without overflow."""
    costs = np.asarray(costs, dtype=np.float64)
    z = -(costs - costs.min()) / float(lam)
    w = np.exp(z)
    return w / w.sum()


def _fit_weighted(
    problem: Problem,
    n_clusters: int,
    lam: float,
    start: PLAFit,
    *,
    max_outer: int,
    outer_tol: float,
    em_kw: dict,
) -> tuple[PLAFit, np.ndarray, list[float], np.ndarray]:
    """Alternate eq. 21 and EM from an unweighted fit. Returns fit, α, F trace, row sums."""
    L = problem.n_partitions
    scale = float(problem.partition_mass().mean())
    alpha = np.full(L, 1.0 / L)
    fit = start
    d = None
    costs = -problem.partition_loglik(fit) / scale
    objective = float(alpha @ costs - lam * _entropy(alpha))
    trace = [objective]
    for _ in range(int(max_outer)):
        alpha = entropic_weights(costs, lam)
        trace.append(float(alpha @ costs - lam * _entropy(alpha)))
        Z = problem.z(alpha)
        d = row_sums(Z)
        fit = pla_em(Z, n_clusters, init=(fit.posteriors, fit.likelihoods), **em_kw)
        costs = -problem.partition_loglik(fit) / scale
        new = float(alpha @ costs - lam * _entropy(alpha))
        trace.append(new)
        if abs(new - objective) <= outer_tol * abs(objective):
            break
        objective = new
    if d is None:
        d = row_sums(problem.z(alpha))
    return fit, alpha, trace, d


def _heldout_scores(
    problem: Problem,
    train: np.ndarray,
    test: np.ndarray,
    fit: PLAFit,
    alpha: np.ndarray,
    d_train: np.ndarray,
    lam: float,
) -> tuple[float, float, float]:
    """Held-out scores per unit mass: NLL of ``Z_α``, eq. 27 (that minus λH(α)), NLL of ``Z``.

    The held-out items get posteriors from the paper's out-of-sample extension (eqs.
    22-26, as its cross-validation does); ``p(x) = Σ_i p(i) p(x|i)`` with
    ``p(x|i) = z_ix / (Σ_b z_ib + z_ix)``.
    """
    L = problem.n_partitions
    m_train = problem.members.subset(train)
    m_test = problem.members.subset(test)
    post, _ = _extend(fit.posteriors, m_train, m_test, alpha, "paper")
    Zb = problem.block(test, train, alpha)
    Zu = problem.block(test, train, np.full(L, 1.0 / L))
    p_train = d_train / d_train.sum()
    W = fit.likelihoods
    if sp.issparse(Zb):
        cols = Zb.indices
        frac = Zb.data / np.maximum(d_train[cols] + Zb.data, _TINY)
        px = np.asarray(
            sp.csr_matrix((frac * p_train[cols], Zb.indices, Zb.indptr), shape=Zb.shape).sum(1)
        ).ravel()
        logq = pattern_logq(Zb, post, W, np.log(np.maximum(px, _TINY)))
        ll = float(Zb.data @ logq)
        ll_u = float(Zu.data @ logq)
        mass = float(Zu.sum())
    else:
        px = (Zb / np.maximum(d_train[None, :] + Zb, _TINY) * p_train[None, :]).sum(axis=1)
        logq = np.log(np.maximum(post @ W.T, _TINY)) + np.log(np.maximum(px, _TINY))[:, None]
        ll = float(np.sum(Zb * logq))
        ll_u = float(np.sum(Zu * logq))
        mass = float(Zu.sum())
    nll = -ll / max(mass, _TINY)
    return nll, nll - lam * _entropy(alpha), -ll_u / max(mass, _TINY)


def _cross_validate(
    problem: Problem,
    n_clusters: int,
    lam_grid,
    cv_folds: int,
    seed: np.random.SeedSequence,
    *,
    em_kw: dict,
    n_init: int,
    max_outer: int,
    outer_tol: float,
    progress: bool | None,
) -> pd.DataFrame:
    n = problem.n_items
    rng = np.random.default_rng(seed)
    folds = np.array_split(rng.permutation(n), cv_folds)
    grid = [float(x) for x in lam_grid]
    pen = np.zeros((len(grid), cv_folds))
    nll = np.zeros((len(grid), cv_folds))
    unif = np.zeros((len(grid), cv_folds))
    bar = progress_bar(
        total=cv_folds * len(grid), desc="wPLA λ cross-validation", progress=progress
    )
    for f, test in enumerate(folds):
        test = np.sort(test)
        train = np.setdiff1d(np.arange(n), test)
        sub = problem.subset(train)
        L = sub.n_partitions
        start = pla_em(
            sub.z(np.full(L, 1.0 / L)),
            n_clusters,
            n_init=n_init,
            random_state=seed.spawn(1)[0],
            coassociation_row=_full_rows(sub),
            **em_kw,
        )
        for g, lam in enumerate(grid):
            fit, alpha, _, d = _fit_weighted(
                sub,
                n_clusters,
                lam,
                start,
                max_outer=max_outer,
                outer_tol=outer_tol,
                em_kw=em_kw,
            )
            scores = _heldout_scores(problem, train, test, fit, alpha, d, lam)
            nll[g, f], pen[g, f], unif[g, f] = scores
            bar.update()
    bar.close()
    return pd.DataFrame(
        {
            "lam": grid,
            "heldout_nll": unif.mean(axis=1),
            "heldout_nll_sd": unif.std(axis=1),
            "penalized": pen.mean(axis=1),
            "penalized_sd": pen.std(axis=1),
            "weighted_nll": nll.mean(axis=1),
            "weighted_nll_sd": nll.std(axis=1),
        }
    )


def _weighting(problem, K: int, fit, lam, weights: dict, cv: dict, outer: dict):
    """Weighted PLA from ``fit`` with λ given or cross-validated (``cv``); fills ``weights``.

    Returns the weighted fit.
    """
    if isinstance(lam, str):
        table = _cross_validate(
            problem,
            K,
            cv["lam_grid"],
            cv["cv_folds"],
            cv["seed"],
            n_init=cv["n_init"],
            progress=cv["progress"],
            **outer,
        )
        col = _CV_COLUMNS[cv["cv_score"]]
        lam = float(table["lam"].iloc[int(np.argmin(table[col].to_numpy()))])
        weights["cv_scores"] = table
    fit, alpha, trace, _ = _fit_weighted(problem, K, float(lam), fit, **outer)
    weights.update(weights=alpha, lam=float(lam), objective_trace=np.asarray(trace))
    return fit


def check_weighting(
    weighted, lam, lam_grid, cv_folds, cv_score, max_outer, n_fit: int
) -> tuple[tuple[float, ...], int]:
    """``(lam_grid, cv_folds)`` checked, refusing a bad weighting argument before any work.

    Parameters
    ----------
    weighted, lam, lam_grid, cv_folds, cv_score, max_outer
        As :func:`pla` takes them.
    n_fit
        Items the cross-validation splits into folds (the fitted subset).

    Returns
    -------
    The λ grid as a tuple of floats and the number of folds as an int.
    """
    check_choice(cv_score, tuple(_CV_COLUMNS), "cv_score")
    check_bool(weighted, "weighted")
    lam_grid = _check_lam_grid(lam_grid)
    cv_folds = check_int(cv_folds, "cv_folds", 2)
    if weighted and isinstance(lam, str):
        check_choice(lam, ("cv",), "lam")
        # every fold refits the weights for every λ: more folds than items cannot split
        if cv_folds > n_fit:
            raise ValueError(
                f"cv_folds={cv_folds} is more than the {n_fit} fitted items it splits into "
                f"folds; choose cv_folds between 2 and {n_fit} (3 to 10 is usual)."
            )
    elif weighted and not (check_number(lam, "lam") > 0):
        raise ValueError(f"lam must be a positive number or 'cv', got {lam!r}.")
    check_int(max_outer, "max_outer", 1)
    return lam_grid, cv_folds


def warn_unused_lam(
    weighted: bool,
    lam: float | str,
    *,
    flat: bool = False,
    lam_grid=LAMBDA_GRID,
    cv_folds: int = _DEFAULT.cv_folds,
    cv_score: str = _DEFAULT.cv_score,
) -> None:
    """Warn that λ, or how it is cross-validated, was set for unweighted PLA, naming the
    options as the user gave them.

    Parameters
    ----------
    weighted
        Whether PLA is weighted (then the options are used and nothing is said).
    lam
        λ as given; ``"cv"`` (the default) is not a choice and is never warned about.
    flat
        ``True``: the user passed ``lam=`` and the others as keywords (``tl.pla``);
        ``False``: inside the ``weighting`` record of :func:`~scconsensus.core.pla.pla`
        and :func:`~scconsensus.core.pla_consensus`.
    lam_grid, cv_folds, cv_score
        As given; each is named when it is not its default.

    Examples
    --------
    >>> import warnings
    >>> from scconsensus.core.pla._weighted import warn_unused_lam
    >>> with warnings.catch_warnings(record=True) as w:
    ...     warnings.simplefilter("always")
    ...     warn_unused_lam(False, 5, flat=True)
    ...     warn_unused_lam(False, "cv", flat=True, cv_folds=5)
    >>> [m.message.args[0].split(":")[0] for m in w]
    ['lam=5 has no effect with weighted=False', 'cv_folds=5 has no effect with weighted=False']
    """
    given = _set_options(lam, lam_grid, cv_folds, cv_score)
    if weighted or not given:
        return
    names = ", ".join(f"{name}={value!r}" for name, value in given.items())
    one = len(given) == 1
    where = names if flat else f"{names} in weighting=Weighting(...)"
    leave = (next(iter(given)) if one else "them") + ("" if flat else " (or weighting)")
    why = "λ only regularises the partition weights of weighted PLA"
    if list(given) != ["lam"]:
        why += "; lam_grid, cv_folds and cv_score only choose λ"
    warn(
        f"{where} {'has' if one else 'have'} no effect with weighted=False: {why}. Pass "
        f"weighted=True to use {'it' if one else 'them'}, or leave {leave} out.",
        UserWarning,
    )


def _set_options(lam, lam_grid, cv_folds, cv_score) -> dict[str, object]:
    """``{name: value}`` of the λ options that differ from their defaults, in order."""
    given = {} if isinstance(lam, str) and lam == "cv" else {"lam": lam}
    for name, value, default in (
        ("lam_grid", lam_grid, LAMBDA_GRID),
        ("cv_folds", cv_folds, _DEFAULT.cv_folds),
        ("cv_score", cv_score, _DEFAULT.cv_score),
    ):
        if _differs(value, default):
            given[name] = value
    return given


def _differs(value, default) -> bool:
    """Whether an option as given is not its default (any input, even an invalid one)."""
    try:
        return not np.array_equal(np.ravel(value), np.ravel(default))
    except (TypeError, ValueError):
        return True


def _check_lam_grid(lam_grid) -> tuple[float, ...]:
    """``lam_grid`` as a tuple of positive finite floats (a lone number is refused)."""
    if isinstance(lam_grid, str) or np.ndim(lam_grid) != 1:
        raise ValueError(
            f"lam_grid must be a non-empty sequence of positive numbers, e.g. (0.1, 1.0, 10.0), "
            f"got {lam_grid!r}; to fix λ instead of cross-validating it, pass lam=<number>."
        )
    grid = tuple(check_number(x, "each lam_grid value") for x in np.ravel(lam_grid))
    if not grid or min(grid) <= 0:
        raise ValueError(f"lam_grid must hold positive, finite λ values, got {list(lam_grid)!r}.")
    return grid


def _unweighted(n_partitions: int) -> dict:
    """The :class:`PLAResult` weight fields of plain PLA: uniform ``α``, no λ, no trace or CV."""
    return {
        "weights": np.full(n_partitions, 1.0 / n_partitions),
        "lam": np.nan,
        "objective_trace": np.empty(0),
        "cv_scores": _empty_cv(),
    }


def _empty_cv() -> pd.DataFrame:
    """The cross-validation table when λ was not cross-validated."""
    return pd.DataFrame(
        columns=[
            "lam",
            "heldout_nll",
            "heldout_nll_sd",
            "penalized",
            "penalized_sd",
            "weighted_nll",
            "weighted_nll_sd",
        ]
    )


def _full_rows(problem: Problem):
    """Exact co-association rows from the ensemble (seeds EM when ``Z`` is sampled)."""
    if not problem.sparse:
        return None
    H = problem.members.H

    def row_of(s: int) -> np.ndarray:
        return np.asarray((H @ H[s].T).toarray(), dtype=np.float64).ravel()

    return row_of
