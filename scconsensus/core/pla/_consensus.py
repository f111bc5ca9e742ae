"""PLA from an ensemble's labels: plan, route, fit (on a subset), extend, as ``tl.pla``.

:func:`~scconsensus.core.pla.pla` fits given partitions at a given ``K``;
:func:`pla_consensus` is the whole method for callers of the array core: check the
fit's options on the items it will fit, choose ``K``, the partitions and the start
(:func:`~scconsensus.core.plan_consensus`), fit on all pairs or on sampled ones, and
order the clusters as the consensus layout wants them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..._docs import doc_params
from ..._validation import (
    RandomState,
    check_choice,
    check_options,
    random_state_record,
)
from .._options import PLA_ROUTE, FitRoute, StartPlan, options_record, takes_records
from .._pair_source import auto_mode
from .._plan import ConsensusPlan, plan_consensus
from .._subset import fit_count, plan_subset
from ..membership import labelled_first, order_clusters
from ._doc import PLA_PARAMS
from ._model import PLAResult, check_pla_args, pla
from ._options import Weighting

__all__ = ["PLAConsensus", "pla_consensus"]

#: Share of PLA's spectral start spread uniformly (PCC's is 0.1). PLA's likelihood
#: depends on its factors only through ``P Wᵀ``, so EM ends on a ridge of equal
#: likelihood at a point set by its start (Lange & Buhmann 2005 start from random
#: posteriors). From the nearly hard start of 0.1 the banana toy's disagreement is
#: 0.217 over seeds 0-2; from 0.9, 0.137 (paper: 0.13-0.16), and the 8-dataset
#: panel's means are unchanged (ARI, K, AUROC; ECE 0.128 -> 0.127 at the true K).
START_SMOOTHING = 0.9


@dataclass
class PLAConsensus:
    """A PLA consensus of an ensemble (:func:`pla_consensus`).

    Attributes
    ----------
    membership
        ``(n_items, k)`` posteriors ``p(v|i)`` of the clusters kept (some mass), the
        clusters some item is labelled with first.
    fit
        The model's result (:class:`~scconsensus.core.PLAResult`), all its clusters.
    plan
        ``K``, the partitions fitted and the start.
    clusters
        The columns of ``fit``'s posteriors that ``membership`` holds, in its order.
    params
        The run's arguments as given (``mode`` as resolved, ``lam_grid`` a list,
        ``random_state`` as :func:`~scconsensus._validation.random_state_record` writes it).
    """

    membership: np.ndarray
    fit: PLAResult
    plan: ConsensusPlan
    clusters: np.ndarray
    params: dict


@takes_records(weighting=Weighting, start=StartPlan, route=FitRoute)
@doc_params(**PLA_PARAMS)
def pla_consensus(
    labels: np.ndarray,
    n_clusters: int | str = "auto",
    weighted: bool = False,
    *,
    weighting: Weighting | None = None,
    max_iter: int = 300,
    tol: float = 1e-6,
    start: StartPlan | None = None,
    route: FitRoute | None = None,
    X: np.ndarray | Callable[[], np.ndarray] | None = None,
    pairs: str = "auto",
    random_state: RandomState = 0,
    progress: bool | None = None,
) -> PLAConsensus:
    """(Weighted) Probabilistic Label Aggregation of an ensemble (Lange & Buhmann 2005).

    Parameters
    ----------
    {labels}
    {n_clusters}
    {pla_weighted}
    {pla_weighting_record}
    {pla_stop}
    start
        ``init``, ``partitions``, ``n_init`` as a :class:`~scconsensus.core.StartPlan`
        (``tl.pla`` documents each); ``None``: ``StartPlan()``.
    route
        ``mode``, ``n_neighbors``, ``n_random``, ``fit_size``, ``fit_fraction`` as a
        :class:`~scconsensus.core.FitRoute` (``tl.pla`` documents each); ``None``:
        :data:`~scconsensus.core.PLA_ROUTE` (``fit_size="auto"``).
    X
        Representation for the sparse route's kNN pairs, or a function returning it.
    {pairs}
    {random_state}
    {progress}

    Returns
    -------
    :class:`PLAConsensus`.

    Examples
    --------
    >>> import numpy as np
    >>> from scconsensus.core import StartPlan, pla_consensus
    >>> labels = np.repeat([[0, 0, 1], [1, 1, 0], [2, 2, 2]], 20, axis=0)
    >>> pla_consensus(labels, 3).membership.shape
    (60, 3)
    >>> pla_consensus(labels, 3, start=StartPlan(init="random", n_init=2)).membership.shape
    (60, 3)
    """
    start = check_options(start, StartPlan, "start")
    route = check_options(route, FitRoute, "route", PLA_ROUTE)
    weighting = check_options(weighting, Weighting, "weighting")
    size = (route.fit_size, route.fit_fraction)
    mode, X = _checked_route(
        len(labels), route, start, (weighted, weighting), (max_iter, tol), pairs, X
    )
    subset = plan_subset(len(labels), *size, random_state, method="pla")
    plan = plan_consensus(
        labels, n_clusters, partitions=start.partitions, init=start.init,
        random_state=random_state, smoothing=START_SMOOTHING, subset=subset,
    )  # fmt: skip
    res = pla(
        labels[:, plan.columns], plan.n_clusters, weighted=weighted, weighting=weighting,
        mode=mode, X=X, pairs=pairs, n_neighbors=route.n_neighbors, n_random=route.n_random,
        fit_index=plan.fit_indices, n_init=start.n_init, max_iter=max_iter, tol=tol,
        random_state=random_state, progress=progress, init=plan.start,
    )  # fmt: skip
    params = {"n_clusters": n_clusters, "weighted": weighted, **options_record(weighting)}
    params["lam_grid"] = [float(x) for x in weighting.lam_grid]
    params.update(max_iter=max_iter, tol=tol, extension="fold_in", **options_record(start, route))
    params.update(mode=res.mode, pairs=pairs, random_state=random_state_record(random_state))
    keep = order_clusters(res.posteriors, min_mass=1e-8)
    membership, _, kept, _ = labelled_first(res.posteriors[:, keep])
    return PLAConsensus(membership, res, plan, keep[kept], params)


def _checked_route(n: int, route, start, weighting, stop, pairs: str, X):
    """``(mode, X)`` as :func:`_route` gives them, once the arguments of the fit have been
    checked on the items it will fit: an oversize or ill-posed fit fails before the plan."""
    check_choice(start.init, ("spectral", "random"), "init")
    n_fit = fit_count(n, route.fit_size, route.fit_fraction, method="pla")
    (weighted, weighting), (max_iter, tol) = weighting, stop
    check_pla_args(
        n_fit, mode=route.mode, weighted=weighted, **options_record(weighting),
        n_neighbors=route.n_neighbors, n_random=route.n_random, n_init=start.n_init,
        max_iter=max_iter, tol=tol, pairs=pairs,
    )  # fmt: skip
    return _route(route.mode, n_fit, X, pairs, route.n_neighbors)


def _route(
    mode: str, n_fit: int, X, pairs: str, n_neighbors: int
) -> tuple[str, np.ndarray | Callable | None]:
    """``(mode, X)``: the sparse route's representation, read only when its kNN pairs are
    drawn (:func:`~scconsensus.core._pair_source.fitted_rows`).

    ``"auto"`` stays ``"auto"`` where :func:`~scconsensus.core._pair_source.auto_mode`
    takes all pairs (:func:`~scconsensus.core.pla.pla` resolves it to the dense route).
    """
    has_rep = X is not None
    if mode == "dense" or (
        mode == "auto" and auto_mode(n_fit, pairs, has_rep, n_neighbors) == "dense"
    ):
        return mode, None
    return "sparse", X
