"""``tl.pcc``: probabilistic consensus clustering (PCC) on an AnnData."""

from __future__ import annotations

import numpy as np
from anndata import AnnData
from scanpy import logging as logg

from .._progress import check_progress, progress_bar
from .._settings import settings
from .._validation import RandomState, check_choice, check_key, check_min_mass, check_rng
from ..core._ensemble_pairs import ensemble_pairs
from ..core._membership import drop_empty_clusters, hard_labels
from ..core._plan import ConsensusPlan, plan_consensus
from ..core.coassociation import _check_pairs, coassociation, sample_pairs
from ..core.pcc import Bregman, cluster_relationships, pcc_extend
from ..core.pcc import pcc as _pcc
from ._anndata import get_ensemble, get_rep, store_consensus

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
    check_choice(mode, ("auto", "dense", "sparse"), "mode")
    check_choice(solver, ("auto", "batch", "greedy"), "solver")
    check_choice(pairs, ("auto", "knn", "ensemble"), "pairs")
    key_added = check_key(key_added)
    progress = check_progress(progress)
    all_labels = get_ensemble(adata, ensemble_key)
    n_all = all_labels.shape[0]
    min_mass = check_min_mass(min_mass, n_all)
    plan = plan_consensus(
        all_labels, n_clusters, partitions=partitions, init=init, random_state=random_state
    )
    log_plan(plan)
    all_labels = all_labels[:, plan.columns]
    fit_idx = _fit_subset(n_all, fit_size, fit_fraction, random_state)
    labels = all_labels if fit_idx is None else all_labels[fit_idx]
    n = labels.shape[0]
    route = mode
    if mode == "auto":
        route = "dense" if n <= settings.dense_auto_max_items else "sparse"
    start = logg.info(
        f"running PCC ({divergence if isinstance(divergence, str) else divergence.name})"
    )
    n_pairs = None
    pair_source = None
    if fit_idx is not None:
        logg.info(f"    fitting on {n} of {n_all} items, extending to the rest")
    if route == "dense":
        logg.info(f"    {route} co-association of {n} items (mode={mode!r})")
        C, N = coassociation(labels, "dense")
    else:
        has_rep = use_rep is not None or "X_pca" in adata.obsm
        pair_source = pairs
        if pairs == "auto":
            pair_source = "ensemble" if n > 100_000 or not has_rep else "knn"
        if pair_source == "knn":
            if not has_rep:
                raise ValueError(
                    "pairs='knn' needs a representation: compute adata.obsm['X_pca'] "
                    "(sc.pp.pca) or pass use_rep=, or use pairs='ensemble'."
                )
            X = get_rep(adata, use_rep)
            if fit_idx is not None:
                X = X[fit_idx]
            P = sample_pairs(
                n, X, n_neighbors=n_neighbors, n_random=n_random, random_state=random_state
            )
        else:
            P = _ensemble_and_random_pairs(labels, n_neighbors, n_random, random_state)
        C, N = coassociation(labels, "sparse", pairs=P)
        del P
        n_pairs = int(N.nnz // 2)
        logg.info(
            f"    sparse co-association on {n_pairs} sampled pairs "
            f"({2 * n_pairs / n:.1f} per item; {pair_source} + random, pairs={pairs!r}) "
            f"of {n} items (mode={mode!r})"
        )
    bar = progress_bar(total=3, desc="pcc", unit="step", progress=progress)
    bar.update()  # co-association
    Y0 = plan.start
    if Y0 is not None and fit_idx is not None:
        Y0 = Y0[fit_idx]
    res = _pcc(
        C,
        N,
        plan.n_clusters,
        divergence,
        solver=solver,
        n_init=n_init,
        tol=tol,
        max_iter=max_iter,
        random_state=random_state,
        min_mass=min_mass,
        init=Y0,
    )
    del C, N
    bar.update()  # fit
    membership, hard = res.membership, res.labels
    if fit_idx is not None:
        membership = pcc_extend(
            all_labels,
            fit_idx,
            res.membership,
            res.divergence if isinstance(divergence, str) else divergence,
            n_per_item=max(1, n_neighbors),
            n_random=max(1, n_random // 3),
            random_state=random_state,
        )
        hard = hard_labels(membership)
    bar.update()  # extension
    bar.close()
    membership, hard, _ = drop_empty_clusters(membership, hard)
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
        "pairs": pairs,
        "init": init,
        "partitions": partitions,
        "fit_size": fit_size,
        "fit_fraction": fit_fraction,
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
        "cluster_mass": membership.sum(axis=0),
        "cluster_relationships": cluster_relationships(membership, relationship_threshold),
        "fit_size": n,
        "partitions_used": plan.columns,
        **selection_uns(plan),
    }
    if n_pairs is not None:
        uns["n_pairs"] = n_pairs
        uns["pair_source"] = pair_source
    if fit_idx is not None:
        uns["fit_indices"] = fit_idx
    store_consensus(adata, key_added, membership, params=params, labels=hard, uns=uns)
    if not res.converged:
        logg.warning(
            f"PCC stopped at max_iter={res.n_iter} before the KKT tolerance "
            f"(relative gap {res.kkt_gap:.2g} > tol={tol}); raise max_iter for a finer optimum."
        )
    logg.info(
        f"    finished: {membership.shape[1]} clusters, objective {res.objective:.6g}, "
        f"{res.n_iter} iterations",
        time=start,
        deep=(
            f"added\n    {key_added!r}, {key_added + '_confidence'!r}, "
            f"{key_added + '_entropy'!r} (adata.obs)\n"
            f"    {key_added + '_membership'!r} (adata.obsm)\n    {key_added!r} (adata.uns)"
        ),
    )
    return adata if copy else None


def log_plan(plan: ConsensusPlan) -> None:
    """Say which K was chosen and why, and which partitions are fitted."""
    if plan.selection is not None:
        logg.info(f"    n_clusters='auto': {plan.selection.reason}")
    logg.info(f"    fitting {plan.columns.size} partitions ({plan.n_clusters} clusters)")
    if plan.note:
        logg.warning(plan.note)


def selection_uns(plan: ConsensusPlan) -> dict:
    """``.uns`` entries for the choice of K: ``n_clusters_chosen`` and the evidence table."""
    out = {"n_clusters_chosen": plan.n_clusters}
    if plan.selection is not None:
        out["k_selection"] = plan.selection.table
        out["k_selection_reason"] = plan.selection.reason
        out["k_selection_threshold"] = plan.selection.threshold
    return out


def _fit_subset(
    n: int, fit_size: int | str | None, fit_fraction: float | None, random_state: RandomState
) -> np.ndarray | None:
    """Sorted indices of the items to fit on, or ``None`` to fit all."""
    if isinstance(fit_size, str):
        check_choice(fit_size, ("auto",), "fit_size")
        if fit_fraction is not None or n <= settings.auto_fit_above:
            fit_size = None
        else:
            fit_size = settings.auto_fit_size
            logg.info(
                f"    fit_size='auto': fitting {fit_size} of {n} items and extending to the rest"
            )
    if fit_size is not None and fit_fraction is not None:
        raise ValueError("Give fit_size or fit_fraction, not both.")
    if fit_size is None and fit_fraction is None:
        return None
    if fit_size is not None:
        if isinstance(fit_size, bool) or int(fit_size) != fit_size or fit_size < 3:
            raise ValueError(f"fit_size must be an integer >= 3, got {fit_size!r}.")
        r = int(fit_size)
    else:
        if not (0 < float(fit_fraction) <= 1):
            raise ValueError(f"fit_fraction must be in (0, 1], got {fit_fraction!r}.")
        r = max(3, round(float(fit_fraction) * n))
    if r >= n:
        return None
    # a generator of its own, so the subset does not shift the solver's random stream
    rng = check_rng(random_state if isinstance(random_state, int | None) else 0)
    return np.sort(rng.choice(n, size=r, replace=False)).astype(np.int64)


def _ensemble_and_random_pairs(labels, n_per_item, n_random, random_state) -> np.ndarray:
    """Within-cluster pairs drawn from the ensemble plus uniformly random pairs."""
    n = labels.shape[0]
    parts = []
    if n_per_item > 0:
        parts.append(ensemble_pairs(labels, n_per_item, random_state=random_state))
    if n_random > 0:
        parts.append(sample_pairs(n, None, n_random=n_random, random_state=random_state))
    if not parts:
        raise ValueError("Give n_neighbors > 0 or n_random > 0 pairs per item.")
    rows, cols = _check_pairs(np.concatenate(parts), n)
    return np.column_stack([rows, cols])
