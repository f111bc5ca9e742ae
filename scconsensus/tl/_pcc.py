"""``tl.pcc``: probabilistic consensus clustering (PCC) on an AnnData."""

from __future__ import annotations

from anndata import AnnData
from scanpy import logging as logg

from .._settings import settings
from .._validation import RandomState, check_choice
from ..core.coassociation import coassociation, sample_pairs
from ..core.pcc import Bregman, cluster_relationships
from ..core.pcc import pcc as _pcc
from ._anndata import get_ensemble, get_rep, store_consensus

__all__ = ["pcc"]


def pcc(
    adata: AnnData,
    n_clusters: int = 10,
    divergence: str | Bregman = "kl",
    *,
    ensemble_key: str = "scc_ensemble",
    mode: str = "auto",
    solver: str = "greedy",
    n_init: int = 3,
    tol: float = 1e-4,
    max_iter: int | None = None,
    min_mass: float = 0.5,
    use_rep: str | None = None,
    n_neighbors: int = 10,
    n_random: int = 30,
    relationship_threshold: float = 0.01,
    random_state: RandomState = 0,
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
        Maximum number of clusters ``K``; clusters left without mass are dropped.
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
        ``"greedy"`` (the paper's line search, the reference) or ``"batch"``
        (all memberships per iteration; see :func:`scconsensus.core.pcc`).
    n_init
        Random restarts; the lowest objective wins.
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
        Pairs per item in the sparse route.
    relationship_threshold
        Memberships below this are ignored in the cluster-relationship matrix.
    random_state
        Seed for the starting points (and sampled pairs).
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
    ``cluster_relationships`` (the matrix ``m_ij`` of Sect. 7.4).

    Examples
    --------
    >>> import scconsensus as scc
    >>> adata = scc.datasets.iris()
    >>> scc.tl.ensemble(adata, n_partitions=30, k=(3, 10), random_state=0)
    >>> scc.tl.pcc(adata, n_clusters=6)
    >>> adata.obsm["pcc_membership"].shape[0]
    150
    """
    check_choice(mode, ("auto", "dense", "sparse"), "mode")
    check_choice(solver, ("greedy", "batch"), "solver")
    labels = get_ensemble(adata, ensemble_key)
    n = labels.shape[0]
    route = mode
    if mode == "auto":
        route = "dense" if n <= settings.dense_auto_max_items else "sparse"
    start = logg.info(
        f"running PCC ({divergence if isinstance(divergence, str) else divergence.name})"
    )
    n_pairs = None
    if route == "dense":
        logg.info(f"    {route} co-association of {n} items (mode={mode!r})")
        C, N = coassociation(labels, "dense")
    else:
        X = None
        if use_rep is not None or "X_pca" in adata.obsm:
            X = get_rep(adata, use_rep)
        pairs = sample_pairs(
            n, X, n_neighbors=n_neighbors, n_random=n_random, random_state=random_state
        )
        C, N = coassociation(labels, "sparse", pairs=pairs)
        n_pairs = int(N.nnz // 2)
        logg.info(
            f"    sparse co-association on {n_pairs} sampled pairs "
            f"({2 * n_pairs / n:.1f} per item; {'kNN + ' if X is not None else ''}random) "
            f"of {n} items (mode={mode!r})"
        )
    res = _pcc(
        C,
        N,
        n_clusters,
        divergence,
        solver=solver,
        n_init=n_init,
        tol=tol,
        max_iter=max_iter,
        random_state=random_state,
        min_mass=min_mass,
    )
    del C, N
    adata = adata.copy() if copy else adata
    params = {
        "n_clusters": n_clusters,
        "divergence": res.divergence,
        "ensemble_key": ensemble_key,
        "mode": mode,
        "solver": solver,
        "n_init": n_init,
        "tol": tol,
        "max_iter": max_iter,
        "min_mass": min_mass,
        "use_rep": use_rep,
        "n_neighbors": n_neighbors,
        "n_random": n_random,
        "relationship_threshold": relationship_threshold,
        "random_state": random_state if isinstance(random_state, int | None) else "custom",
    }
    uns = {
        "route": route,
        "solver": res.solver,
        "objective": res.objective,
        "objective_trace": res.objective_trace,
        "restart_objectives": res.restart_objectives,
        "n_iter": res.n_iter,
        "converged": bool(res.converged),
        "kkt_gap": res.kkt_gap,
        "n_isolated": res.n_isolated,
        "cluster_mass": res.membership.sum(axis=0),
        "cluster_relationships": cluster_relationships(res.membership, relationship_threshold),
    }
    if n_pairs is not None:
        uns["n_pairs"] = n_pairs
    store_consensus(adata, key_added, res.membership, params=params, labels=res.labels, uns=uns)
    if not res.converged:
        logg.warning(
            f"PCC stopped at max_iter={res.n_iter} before the KKT tolerance "
            f"(relative gap {res.kkt_gap:.2g} > tol={tol}); raise max_iter for a finer optimum."
        )
    logg.info(
        f"    finished: {res.n_clusters} clusters, objective {res.objective:.6g}, "
        f"{res.n_iter} iterations",
        time=start,
        deep=(
            f"added\n    {key_added!r}, {key_added + '_confidence'!r}, "
            f"{key_added + '_entropy'!r} (adata.obs)\n"
            f"    {key_added + '_membership'!r} (adata.obsm)\n    {key_added!r} (adata.uns)"
        ),
    )
    return adata if copy else None
