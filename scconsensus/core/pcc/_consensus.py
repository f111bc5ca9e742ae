"""PCC from an ensemble's labels: plan, route, fit on a subset, extend.

:func:`~scconsensus.core.pcc.pcc` fits a given co-association;
:func:`pcc_consensus` is the whole method as :func:`scconsensus.tl.pcc` runs
it, for callers of the array core: choose ``K``, the partitions and the start
(:func:`~scconsensus.core.plan_consensus`), count the co-association on all
pairs or on sampled ones (Sect. 5.4 of Lourenço et al. 2015), fit on all items
or a random subset of them, and extend that fit to the other items
(:func:`~scconsensus.core.pcc.pcc_extend`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..._docs import doc_params
from ..._memory_guard import check_dense_route
from ..._progress import progress_bar
from ..._validation import (
    RandomState,
    check_choice,
    check_int,
    check_labels,
    check_min_mass,
    check_options,
    random_state_record,
)
from .._labels import _numbered
from .._laps import Laps
from .._options import PCC_ROUTE, FitRoute, StartPlan, options_record, takes_records
from .._pair_source import NO_PAIRS, PAIRS, auto_mode, fitted_rows, pair_source, sampled_pairs
from .._plan import INITS, PARTITIONS, ConsensusPlan, plan_checked
from .._subset import fit_count, plan_subset
from ..coassociation import coassociation
from ..membership import hard_labels, labelled_first, warn_in_no_partition
from ._core import SOLVERS, check_run, pcc
from ._divergences import Bregman
from ._doc import PCC_PARAMS
from ._extend import MAX_STEPS, extend_checked
from ._lowrank import check_lowrank_options, pcc_lowrank
from ._result import PCCResult

__all__ = ["PCCConsensus", "pcc_consensus"]

MODES = ("auto", "dense", "sparse", "lowrank")
#: What a too large dense co-association's MemoryError suggests instead.
DENSE_ADVICE = (
    "Use mode='sparse' (sampled pairs), mode='lowrank' (divergence='l2' only: all pairs "
    "in linear memory)"
)


@dataclass
class PCCConsensus:
    """A PCC consensus of an ensemble (:func:`pcc_consensus`).

    Attributes
    ----------
    membership
        ``(n_items, k)`` memberships of all items as fitted (extended), the clusters
        some item is labelled with first.
    labels
        Hard labels (largest membership).
    fit
        The solver's result on the fitted items.
    plan
        ``K``, the partitions fitted and the start.
    route
        ``"dense"`` (all pairs), ``"sparse"`` (sampled pairs) or ``"lowrank"`` (all
        pairs of the labels' low-rank co-association, l2).
    fit_indices
        Items fitted when a subset was, else ``None``.
    n_pairs
        Sampled pairs on the sparse route, else ``None``.
    pair_source
        ``"knn"`` or ``"ensemble"`` on the sparse route, else ``None``.
    params
        The run's arguments as given (``min_mass`` checked, ``divergence`` by name,
        ``random_state`` as :func:`~scconsensus._validation.random_state_record` writes it).
    """

    membership: np.ndarray
    labels: np.ndarray
    fit: PCCResult
    plan: ConsensusPlan
    route: str
    fit_indices: np.ndarray | None
    n_pairs: int | None = None
    pair_source: str | None = None
    params: dict = field(default_factory=dict)


@takes_records(start=StartPlan, route=FitRoute)
@doc_params(**PCC_PARAMS)
def pcc_consensus(
    labels: np.ndarray,
    n_clusters: int | str = "auto",
    divergence: str | Bregman = "kl",
    *,
    solver: str = "auto",
    tol: float = 1e-4,
    max_iter: int | None = None,
    min_mass: float = 0.5,
    start: StartPlan | None = None,
    route: FitRoute | None = None,
    pairs: str = "auto",
    X: np.ndarray | Callable[[], np.ndarray] | None = None,
    random_state: RandomState = 0,
    progress: bool | None = None,
) -> PCCConsensus:
    """Probabilistic consensus clustering of an ensemble (Lourenço et al. 2015), as ``tl.pcc``.

    Parameters
    ----------
    {labels}
    {n_clusters}
    {pcc_divergence}
    {pcc_solver}
    {pcc_stop}
    start
        ``init``, ``partitions``, ``n_init`` as a :class:`~scconsensus.core.StartPlan`
        (``tl.pcc`` documents each); ``None``: ``StartPlan()``.
    route
        ``mode``, ``n_neighbors``, ``n_random``, ``fit_size``, ``fit_fraction`` as a
        :class:`~scconsensus.core.FitRoute` (``tl.pcc`` documents each); ``None``:
        :data:`~scconsensus.core.PCC_ROUTE` (``fit_size="auto"``).
    {pcc_pairs}
    X
        ``(n_items, n_features)`` representation for the kNN pairs, or a function
        returning it (called only when they are drawn); ``None``: ensemble pairs.
    {random_state}
    {progress}

    Returns
    -------
    :class:`PCCConsensus`.

    Examples
    --------
    >>> import dataclasses
    >>> import numpy as np
    >>> from scconsensus.core import PCC_ROUTE, pcc_consensus
    >>> labels = np.repeat([[0, 0, 1], [1, 1, 0], [2, 2, 2]], 20, axis=0)
    >>> res = pcc_consensus(labels, 3)
    >>> res.route, res.membership.shape
    ('dense', (60, 3))
    >>> sparse = dataclasses.replace(PCC_ROUTE, mode="sparse")  # PCC's route, one field changed
    >>> pcc_consensus(labels, 3, route=sparse).route
    'sparse'
    """
    start = check_options(start, StartPlan, "start")
    route = check_options(route, FitRoute, "route", PCC_ROUTE)
    mode, fit_size, fit_fraction = route.mode, route.fit_size, route.fit_fraction
    _check_choices(mode, solver, pairs)
    labels = check_labels(labels)
    min_mass = check_min_mass(min_mass, labels.shape[0])
    params = {"n_clusters": n_clusters, "divergence": divergence, "solver": solver, "tol": tol}
    params.update(max_iter=max_iter, min_mass=min_mass, **options_record(start, route))
    params.update(pairs=pairs, random_state=random_state_record(random_state))
    n_neighbors, n_random = _pairs_per_item(route.n_neighbors, route.n_random, mode)
    check_run(divergence, start.n_init, tol, max_iter)
    mode, fit_size = _route(mode, solver, divergence, fit_size)
    _check_dense_size(mode, labels.shape[0], fit_size, fit_fraction)
    plan, labels, fitted, fit_idx, numbered = _plan(
        labels, n_clusters, start.partitions, start.init, random_state, fit_size, fit_fraction
    )
    fit_kw = {"n_init": start.n_init, "tol": tol, "max_iter": max_iter, "min_mass": min_mass}
    sampling = (X, labels.shape[0], fit_idx, pairs, n_neighbors, n_random, random_state)
    how = (mode, divergence, solver)
    out = _run((labels, numbered), fitted, plan, how, fit_kw, sampling, progress)
    out.params = dict(params, divergence=out.fit.divergence)
    return out


def _run(ensemble, fitted, plan, how, fit_kw, sampling, progress) -> PCCConsensus:
    """Fit ``fitted`` on the route, divergence and solver ``how``, and extend to all items
    of ``ensemble`` (their labels, and whether every partition is numbered 0..k-1)."""
    mode, divergence, solver = how
    fit_idx, n_neighbors, n_random, random_state = sampling[2], *sampling[4:]
    bar = progress_bar(total=3, desc="pcc", unit="step", progress=progress)
    lap = Laps(time.process_time, plan.seconds)  # after the plan's own stages
    res, out = _fit(fitted, mode, plan, divergence, solver, fit_kw, sampling, bar)
    lap("pairs and fit")
    membership, hard = res.membership, res.labels
    if fit_idx is not None:
        membership = _extend(
            ensemble, fit_idx, res, divergence, n_neighbors, n_random, random_state, fit_kw["tol"]
        )
        hard = hard_labels(membership)
    bar.update()  # extension
    lap("extension")
    bar.close()
    # the solver's solution as it is: only its labelled clusters are put first
    membership, hard, _, _ = labelled_first(membership, hard)
    return PCCConsensus(membership, hard, res, plan, fit_indices=fit_idx, **out)


def _check_choices(mode: str, solver: str, pairs: str) -> None:
    for value, choices, name in ((mode, MODES, "mode"), (solver, SOLVERS, "solver")):
        check_choice(value, choices, name)
    check_choice(pairs, PAIRS, "pairs")


def _route(mode: str, solver: str, divergence, fit_size):
    """``(mode, fit_size)`` as the solver and divergence allow, checked before any work."""
    if solver == "sweep":
        if mode in ("dense", "lowrank"):
            raise ValueError(
                f"solver='sweep' works on sampled pairs; with mode={mode!r} use solver='batch' "
                "(or 'greedy' on the dense route), or mode='sparse' for the sweep."
            )
        mode = "sparse"  # "auto" takes the route the solver can run on
    if mode == "lowrank":
        check_lowrank_options(divergence, solver)
        # the route's cost is linear in n: "auto" fits every item
        fit_size = None if fit_size == "auto" else fit_size
    return mode, fit_size


def _check_dense_size(mode: str, n_items: int, fit_size, fit_fraction) -> None:
    """The dense route's memory, checked before the plan: an oversize call fails at once."""
    if mode == "dense":
        n_fit = fit_count(n_items, fit_size, fit_fraction, method="pcc")
        check_dense_route("pcc", n_fit, what="Dense PCC", advice=DENSE_ADVICE)


def _fit(fitted, mode, plan, divergence, solver, fit_kw, sampling, bar):
    """``(PCCResult, record)``: the fit on the route ``mode``, after counting its pairs."""
    res, out = _fit_route(
        fitted, mode, plan.n_clusters, divergence, solver, plan.start, fit_kw, sampling, bar
    )
    bar.update()  # fit
    return res, out


def _fit_route(fitted, mode, K, divergence, solver, start, fit_kw, sampling, bar):
    """:func:`_fit` on the route ``mode``."""
    if mode == "lowrank":
        bar.update()  # no co-association to count
        res = pcc_lowrank(fitted, K, divergence, init=start, random_state=sampling[-1], **fit_kw)
        return res, {"route": "lowrank"}
    C, N, out = _co_association(fitted, mode, *sampling)
    bar.update()  # co-association
    fit_kw.update(init=start, solver=solver, random_state=sampling[-1])
    return pcc(C, N, K, divergence, **fit_kw), out


def _extend(ensemble, fit_idx, res, divergence, n_neighbors, n_random, random_state, tol):
    """Memberships of all items from the fit on ``fit_idx`` (:func:`pcc_extend`), on the
    checked ``ensemble`` (labels, and whether every partition is numbered 0..k-1).

    Each extended item is solved to the fit's relative KKT tolerance: at 10^5 cells,
    :func:`pcc_extend`'s own default (1e-6) costs 1.5x the CPU of the fit's (1e-4) for
    memberships within 1e-5 on average and the same labels. Its random partners are a
    tenth of the fit's (3 of 30): within-cluster partners carry the evidence, and at
    10^6 cells 10 random partners cost 24.4 s against 17.7 s for 3, with the same ARI
    (0.9751, 0.9754), 99.87 % of labels alike and memberships 0.003 apart on average.
    """
    labels, numbered = ensemble
    divergence = res.divergence if isinstance(divergence, str) else divergence
    partners = (max(1, n_neighbors), max(1, n_random // 10), random_state)
    return extend_checked(
        labels, fit_idx, res.membership, divergence, partners, tol, MAX_STEPS, numbered
    )


def _plan(labels, n_clusters, partitions, init, random_state, fit_size, fit_fraction):
    """``(plan, labels of its partitions, those of the fitted items, fitted subset or None,
    whether every partition is numbered 0..k-1)``."""
    subset = plan_subset(labels.shape[0], fit_size, fit_fraction, random_state, method="pcc")
    check_choice(partitions, PARTITIONS, "partitions")
    check_choice(init, INITS, "init")
    # the numbering checked once for the whole call (0.2 s at 10^6 items, 100 partitions):
    # the plan's partition sizes and the extension's renumbering would each check again
    numbered = _numbered(labels)
    plan = plan_checked(
        labels, n_clusters, partitions, init, random_state, subset, numbered=numbered
    )
    fit_idx = plan.fit_indices
    # row-major: the pair counts read an item's labels as one row (fancy indexing on
    # columns returns a column-major copy; at 10^6 items the extension's pair count took
    # 5.5-10 s on it against 0.7 s on rows). take() writes the rows directly: one copy,
    # not a column-major one and its transpose (10^6 x 50: 0.5 s and 190 MiB, not 1.6 s
    # and 381 MiB)
    labels = labels.take(plan.columns, axis=1)  # numbered if the whole ensemble is
    # no evidence at all for them: uniform rows, as in PLA, but said rather than silent
    warn_in_no_partition((labels < 0).all(axis=1).sum(), "memberships")
    return plan, labels, labels if fit_idx is None else labels[fit_idx], fit_idx, numbered


def _co_association(fitted, mode, X, n_all, fit_idx, pairs, n_neighbors, n_random, random_state):
    """``(C, N, record)`` on all pairs of the fitted items, or on sampled ones (Sect. 5.4).

    ``record`` holds the ``route`` and, on the sparse one, ``n_pairs`` and ``pair_source``.
    """
    if mode == "auto":
        mode = auto_mode(fitted.shape[0], pairs, X is not None, n_neighbors)
    if mode == "dense":
        # coassociation's own check would name only the sparse route
        check_dense_route("pcc", fitted.shape[0], what="Dense PCC", advice=DENSE_ADVICE)
        C, N = coassociation(fitted, "dense")
        return C, N, {"route": "dense"}
    source = pair_source(pairs, fitted.shape[0], X is not None)
    partners = fitted_rows(X, n_all, fit_idx) if source == "knn" else fitted
    kw = {"n_neighbors": n_neighbors, "n_random": n_random, "random_state": random_state}
    P = sampled_pairs(fitted.shape[0], source, partners, **kw)
    C, N = coassociation(fitted, "sparse", pairs=P)
    return C, N, {"route": "sparse", "n_pairs": int(N.nnz // 2), "pair_source": source}


def _pairs_per_item(n_neighbors, n_random, mode) -> tuple[int, int]:
    """``(n_neighbors, n_random)`` checked: both >= 0, not both 0 when ``mode="sparse"``.

    (``"auto"`` that resolves to sparse meets the same error where the pairs are drawn.)
    """
    n_neighbors = check_int(n_neighbors, "n_neighbors", 0)
    n_random = check_int(n_random, "n_random", 0)
    if mode == "sparse" and n_neighbors == n_random == 0:
        raise ValueError(NO_PAIRS)
    return n_neighbors, n_random
