"""``tl.pcc``: probabilistic consensus clustering (PCC) on an AnnData."""

from __future__ import annotations

from anndata import AnnData
from scanpy import logging as logg

from .._progress import check_progress
from .._validation import RandomState, check_key, check_min_mass
from ..core.pcc import Bregman, PCCConsensus, cluster_relationships, pcc_consensus
from ._anndata import get_ensemble, get_rep, store_consensus
from ._selection import log_plan, selection_uns

__all__ = ["pcc"]


def pcc(
    adata: AnnData,
    n_clusters: int | str = "auto",
    divergence: str | Bregman = "kl",
    *,
    ensemble_key: str = "scc_ensemble",
    mode: str = "auto",
    solver: str = "auto",
    n_init: int = 1,
    tol: float = 1e-4,
    max_iter: int | None = None,
    min_mass: float = 0.5,
    use_rep: str | None = None,
    n_neighbors: int = 10,
    n_random: int = 30,
    pairs: str = "auto",
    init: str = "spectral",
    partitions: str = "matched",
    fit_size: int | str | None = "auto",
    fit_fraction: float | None = None,
    relationship_threshold: float = 0.01,
    random_state: RandomState = 0,
    progress: bool | None = None,
    key_added: str = "pcc",
    copy: bool = False,
) -> AnnData | None:
    """Probabilistic consensus clustering (Lourenço et al., Machine Learning 2015).

    Fits soft memberships ``y_i`` so that ``y_i . y_j`` matches the observed
    co-clustering frequency ``c_ij / N_ij`` of the ensemble under a Bregman
    divergence (KL = the binomial likelihood of the co-association, or squared
    error), with the paper's greedy primal line search.
    See :func:`scconsensus.core.pcc` for the solver.

    Parameters
    ----------
    adata
        With an ensemble at ``.obsm[ensemble_key]`` (:func:`scconsensus.tl.ensemble`).
    n_clusters
        Number of clusters ``K`` (a maximum: clusters left without mass are
        dropped), or ``"auto"`` (default): chosen from the ensemble by
        :func:`scconsensus.core.select_k` (the smallest ``K`` after which the
        normalised co-association of the partitions with at least ``K``
        clusters drops), with the evidence in ``.uns[key_added]["k_selection"]``
        (plot it with :func:`scconsensus.pl.k_selection`).
    divergence
        ``"kl"``, ``"l2"`` or a :class:`scconsensus.core.Bregman`.
    ensemble_key
        Where the ensemble labels are.
    mode
        ``"dense"``: all ``n^2`` pairs; ``"sparse"``: sampled pairs (Sect. 5.4:
        kNN pairs of ``use_rep`` when available plus ``n_random`` random
        partners per item); ``"auto"``: dense up to
        ``scconsensus.settings.dense_auto_max_items`` items.
    solver
        ``"auto"`` (default: ``"batch"`` on the dense route, ``"greedy"`` on
        the sparse one), ``"batch"`` (all memberships per iteration,
        BLAS-bound) or ``"greedy"`` (the paper's line search, the reference);
        see :func:`scconsensus.core.pcc`.
    n_init
        Starts: the ``init`` start and ``n_init - 1`` random points of the
        simplex; the lowest objective wins.
    tol
        Relative KKT tolerance of the solver.
    max_iter
        Iterations per restart (default ``50 n K``).
    min_mass
        Clusters whose expected size (total membership) is below this many
        items are treated as empty and dropped.
    use_rep
        Representation for the kNN pairs of the sparse route (default
        ``X_pca`` when present, else random pairs only).
    n_neighbors, n_random
        Pairs per item in the sparse route: ``n_neighbors`` within-cluster
        partners (kNN or ensemble draws, see ``pairs``) and ``n_random``
        uniformly random partners.
    pairs
        Within-cluster partners of the sparse route: ``"knn"`` (kNN of
        ``use_rep``; pynndescent above 50,000 items), ``"ensemble"`` (partners
        drawn from the item's cluster in random ensemble partitions, no kNN:
        :func:`scconsensus.core.ensemble_pairs`) or ``"auto"`` (``"ensemble"``
        above 100,000 items or when no representation is available, else
        ``"knn"``).
    init
        ``"spectral"`` (default): the smoothed one-hot of the spectral consensus
        of the whole ensemble at ``K`` (:func:`scconsensus.core.spectral_consensus`;
        deterministic for a seed, and at the measured optimum's doorstep on the
        accuracy panel). ``"ensemble"``: of the matched partition closest to ``K``
        (:func:`scconsensus.core.pcc.ensemble_init`). ``"random"``: ``n_init``
        random points of the simplex.
    partitions
        ``"matched"`` (default): fit the partitions whose number of clusters is
        near ``K`` (``K / 1.25`` to ``1.25 K``; :func:`scconsensus.core.matched_partitions`).
        PCC models every partition as a draw of the same ``K`` soft clusters;
        partitions much coarser (merges) or finer (splits) than ``K`` contradict
        that model and make PCC spread each group over several clusters.
        ``"all"``: every partition, as in the paper.
    fit_size, fit_fraction
        Fit PCC on this many (or this share of) items drawn at random, then
        give every other item the membership that best explains its
        co-association with sampled fitted partners
        (:func:`scconsensus.core.pcc.pcc_extend`). ``None``: fit all items.
        ``"auto"`` (default): fit all items up to
        ``scconsensus.settings.auto_fit_above`` (100,000) items, above that fit
        ``settings.auto_fit_size`` (50,000) and extend, which keeps a million
        cells to minutes.
    relationship_threshold
        Memberships below this are ignored in the cluster-relationship matrix.
    random_state
        Seed for the starting points (and sampled pairs).
    progress
        Show progress bars on standard error. ``None`` (default): only when
        ``scanpy.settings.verbosity`` is ``'info'`` or higher. tqdm's ``TQDM_DISABLE``
        environment variable is always respected.
    key_added
        Prefix of every key written.
    copy
        Return a modified copy instead of writing in place.

    Returns
    -------
    ``None`` or a copy, with ``.obs[key_added]`` (categorical ``"0".."k-1"``, by
    decreasing expected size), ``.obsm[f"{key_added}_membership"]`` (``n_obs x k``,
    rows sum to 1), ``.obs[f"{key_added}_confidence"]`` (largest membership),
    ``.obs[f"{key_added}_entropy"]`` and ``.uns[key_added]`` with ``params``,
    ``objective``, ``objective_trace``, ``n_iter``, ``converged``, ``kkt_gap``,
    ``route`` (``"dense"``/``"sparse"``), ``cluster_mass`` and
    ``cluster_relationships`` (the matrix ``m_ij`` of Sect. 7.4), ``fit_size``
    (items fitted), ``fit_indices`` (with ``fit_size``/``fit_fraction``) and, on
    the sparse route, ``n_pairs`` and ``pair_source`` (``"knn"``/``"ensemble"``).

    Examples
    --------
    >>> import scconsensus as scc
    >>> adata = scc.datasets.iris()
    >>> scc.tl.ensemble(adata, n_partitions=30, k=(3, 10), random_state=0)
    >>> scc.tl.pcc(adata, n_clusters=6)
    >>> adata.obsm["pcc_membership"].shape[0]
    150
    """
    key_added = check_key(key_added)
    progress = check_progress(progress)
    labels = get_ensemble(adata, ensemble_key)
    min_mass = check_min_mass(min_mass, labels.shape[0])
    has_rep = use_rep is not None or "X_pca" in adata.obsm
    start = logg.info(
        f"running PCC ({divergence if isinstance(divergence, str) else divergence.name})"
    )
    out = pcc_consensus(
        labels,
        n_clusters,
        divergence,
        mode=mode,
        solver=solver,
        n_init=n_init,
        tol=tol,
        max_iter=max_iter,
        min_mass=min_mass,
        X=(lambda: get_rep(adata, use_rep)) if has_rep else None,
        n_neighbors=n_neighbors,
        n_random=n_random,
        pairs=pairs,
        init=init,
        partitions=partitions,
        fit_size=fit_size,
        fit_fraction=fit_fraction,
        random_state=random_state,
        progress=progress,
    )
    _log_run(out, mode, pairs, fit_size, labels.shape[0])
    adata = adata.copy() if copy else adata
    params = {name: value for name, value in locals().items() if name in PARAMS}
    params["divergence"] = out.fit.divergence
    if not isinstance(random_state, int | None):
        params["random_state"] = "custom"
    uns = _uns(out, relationship_threshold)
    store_consensus(adata, key_added, out.membership, params=params, labels=out.labels, uns=uns)
    res = out.fit
    if not res.converged:
        logg.warning(
            f"PCC stopped at max_iter={res.n_iter} before the KKT tolerance "
            f"(relative gap {res.kkt_gap:.2g} > tol={tol}); raise max_iter for a finer optimum."
        )
    logg.info(
        f"    finished: {out.membership.shape[1]} clusters, objective {res.objective:.6g}, "
        f"{res.n_iter} iterations",
        time=start,
        deep=(
            f"added\n    {key_added!r}, {key_added + '_confidence'!r}, "
            f"{key_added + '_entropy'!r} (adata.obs)\n"
            f"    {key_added + '_membership'!r} (adata.obsm)\n    {key_added!r} (adata.uns)"
        ),
    )
    return adata if copy else None


#: The arguments of :func:`pcc` recorded in ``.uns[key_added]["params"]``, in this order.
PARAMS = (
    "n_clusters",
    "divergence",
    "ensemble_key",
    "mode",
    "solver",
    "n_init",
    "tol",
    "max_iter",
    "min_mass",
    "use_rep",
    "n_neighbors",
    "n_random",
    "pairs",
    "init",
    "partitions",
    "fit_size",
    "fit_fraction",
    "relationship_threshold",
    "random_state",
)


def _log_run(out: PCCConsensus, mode: str, pairs: str, fit_size, n_all: int) -> None:
    """What :func:`pcc_consensus` decided: K and partitions, the subset, the route."""
    log_plan(out.plan)
    n = n_all if out.fit_indices is None else out.fit_indices.size
    if out.fit_indices is not None:
        if fit_size == "auto":
            logg.info(
                f"    fit_size='auto': fitting {n} of {n_all} items and extending to the rest"
            )
        logg.info(f"    fitting on {n} of {n_all} items, extending to the rest")
    if out.route == "dense":
        logg.info(f"    dense co-association of {n} items (mode={mode!r})")
    else:
        logg.info(
            f"    sparse co-association on {out.n_pairs} sampled pairs "
            f"({2 * out.n_pairs / n:.1f} per item; {out.pair_source} + random, pairs={pairs!r}) "
            f"of {n} items (mode={mode!r})"
        )


def _uns(out: PCCConsensus, relationship_threshold: float) -> dict:
    """``.uns[key_added]`` apart from ``params``."""
    res = out.fit
    uns = {
        "route": out.route,
        "solver": res.solver,
        "objective": res.objective,
        "objective_trace": res.objective_trace,
        "restart_objectives": res.restart_objectives,
        "n_iter": res.n_iter,
        "converged": bool(res.converged),
        "kkt_gap": res.kkt_gap,
        "n_isolated": res.n_isolated,
        "cluster_mass": out.membership.sum(axis=0),
        "cluster_relationships": cluster_relationships(out.membership, relationship_threshold),
        "fit_size": res.membership.shape[0],
        "partitions_used": out.plan.columns,
        **selection_uns(out.plan),
    }
    if out.n_pairs is not None:
        uns["n_pairs"] = out.n_pairs
        uns["pair_source"] = out.pair_source
    if out.fit_indices is not None:
        uns["fit_indices"] = out.fit_indices
    return uns
