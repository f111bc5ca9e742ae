"""``tl.pcc``: probabilistic consensus clustering (PCC) on an AnnData."""

from __future__ import annotations

from collections.abc import Sequence

from anndata import AnnData
from scanpy import logging as logg
from sklearn.exceptions import ConvergenceWarning

from .._docs import doc_params
from .._progress import check_progress
from .._validation import RandomState, check_min_mass, check_number
from .._warnings import warn
from ..core import FitRoute, PCCConsensus, StartPlan, pcc_consensus
from ..core.pcc import PCC_PARAMS, Bregman, cluster_relationships, kernels_cached
from ._anndata import check_copy, get_ensemble, lazy_rep, log_rep_read, store_consensus
from ._candidates import fits_each_k
from ._record_keys import check_record_key
from ._runs import fitted_run
from ._selection import clusters_written, log_plan, selection_uns

__all__ = ["pcc"]


@fits_each_k
@doc_params(**PCC_PARAMS)
def pcc(
    adata: AnnData,
    n_clusters: int | str | Sequence[int] = "auto",
    divergence: str | Bregman = "kl",
    *,
    ensemble_key: str = "scc_ensemble",
    solver: str = "auto",
    tol: float = 1e-4,
    max_iter: int | None = None,
    min_mass: float = 0.5,
    init: str = "spectral",
    partitions: str = "matched",
    n_init: int = 1,
    mode: str = "auto",
    n_neighbors: int = 10,
    n_random: int = 30,
    pairs: str = "auto",
    fit_size: int | str | None = "auto",
    fit_fraction: float | None = None,
    use_rep: str | None = None,
    relationship_threshold: float = 0.01,
    random_state: RandomState = 0,
    progress: bool | None = None,
    key_added: str = "pcc",
    copy: bool = False,
) -> AnnData | None:
    """Probabilistic consensus clustering (Lourenço et al., Machine Learning 2015).

    Soft memberships ``y_i`` whose products ``y_i . y_j`` match the ensemble's co-clustering
    frequencies ``c_ij / N_ij`` under a Bregman divergence (:func:`scconsensus.core.pcc_consensus`).

    Parameters
    ----------
    {adata_ensemble}
    {pcc_n_clusters}
    {pcc_divergence}
    {ensemble_key}
    {pcc_solver}
    {pcc_stop}
    {pcc_plan}
    {pcc_n_init}
    {pcc_route}
    {pcc_fit_subset}
    {pcc_tl}
    {random_state}
    {progress}
    {key_added}
    {copy}

    Returns
    -------
    {returns_consensus}
        {pcc_uns}

    Examples
    --------
    >>> import scconsensus as scc
    >>> adata = scc.datasets.iris()
    >>> scc.tl.ensemble(adata, n_partitions=30, k=(3, 10), random_state=0)
    >>> scc.tl.pcc(adata, n_clusters=6)
    >>> adata.obsm["pcc_membership"].shape[0]
    150
    """
    key_added, progress = check_record_key(adata, key_added, "consensus"), check_progress(progress)
    labels, copy = get_ensemble(adata, ensemble_key), check_copy(adata, copy)
    min_mass = check_min_mass(min_mass, labels.shape[0])
    check_number(relationship_threshold, "relationship_threshold", within=(0.0, 1.0))
    X, start = lazy_rep(adata, use_rep, ensemble_key), _log_start(divergence)
    route = FitRoute(mode=mode, n_neighbors=n_neighbors, n_random=n_random, fit_size=fit_size,
                     fit_fraction=fit_fraction)  # fmt: skip
    out = pcc_consensus(
        labels, n_clusters, divergence, solver=solver, tol=tol, max_iter=max_iter,
        min_mass=min_mass, start=StartPlan(init=init, partitions=partitions, n_init=n_init),
        route=route, pairs=pairs, X=X, random_state=random_state, progress=progress,
    )  # fmt: skip
    _log_run(out, (mode, pairs, fit_size, X), labels.shape[0])
    adata = adata.copy() if copy else adata
    _store(adata, key_added, out, (ensemble_key, use_rep, relationship_threshold), labels)
    _log_finish(out, tol, adata, key_added, start)
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


def _log_run(out: PCCConsensus, call: tuple, n_all: int) -> None:
    """What :func:`pcc_consensus` decided: K and partitions, the subset, the route, and
    the CPU time of each stage. ``call``: :func:`pcc`'s ``mode``, ``pairs``, ``fit_size``
    and the representation it gave the core."""
    mode, pairs, fit_size, X = call
    log_plan(out.plan)
    n = n_all if out.fit_indices is None else out.fit_indices.size
    if out.fit_indices is not None:
        why = "fit_size='auto': " if fit_size == "auto" else ""
        logg.info(f"    {why}fitting {n} of {n_all} items and extending to the rest")
    if out.route == "dense":
        logg.info(f"    dense co-association of {n} items (mode={mode!r})")
    elif out.route == "lowrank":
        logg.info(f"    all pairs of {n} items from the low-rank co-association (mode={mode!r})")
    else:
        logg.info(
            f"    sparse co-association on {out.n_pairs} sampled pairs "
            f"({2 * out.n_pairs / n:.1f} per item; {out.pair_source} + random, pairs={pairs!r}) "
            f"of {n} items (mode={mode!r})"
        )
        log_rep_read(X)
    stages = ", ".join(f"{name} {sec:.2f} s" for name, sec in out.plan.seconds.items())
    logg.info(f"    CPU time per stage: {stages}")


def _log_start(divergence):
    """Say that PCC starts, and first that numba compiles it if this is its first use."""
    if not kernels_cached():
        logg.warning(
            "first use of PCC: numba compiles its kernels now (about 12 s, once; they are cached "
            "on disk for every later run; `scconsensus warmup` after installing does it ahead)."
        )
    return logg.info(f"running PCC ({getattr(divergence, 'name', divergence)})")


def _log_finish(out: PCCConsensus, tol: float, adata: AnnData, key_added: str, start) -> None:
    """Warn when the solver stopped at ``max_iter``; say what was written to ``adata``."""
    res = out.fit
    if not res.converged:
        warn(  # a Python warning, as scikit-learn's, which R and catch_warnings catch
            f"PCC stopped at max_iter ({res.iterations}) before the KKT tolerance "
            f"(relative gap {res.kkt_gap:.2g} > tol={tol}); raise max_iter for a finer optimum.",
            ConvergenceWarning,
        )
    logg.info(
        f"    finished: {clusters_written(adata, key_added, out.membership.shape[1])}, "
        f"objective {res.objective:.6g}, "
        f"{res.iterations}",
        time=start,
        deep=(
            f"added\n    {key_added!r}, {key_added + '_confidence'!r}, "
            f"{key_added + '_entropy'!r} (adata.obs)\n"
            f"    {key_added + '_membership'!r} (adata.obsm)\n    {key_added!r} (adata.uns)"
        ),
    )


def _store(adata, key_added: str, out: PCCConsensus, tl_args: tuple, ensemble) -> None:
    """Write the consensus layout, with ``.uns[key_added]`` as documented in :func:`pcc`.

    ``tl_args``: :func:`pcc`'s ``ensemble_key``, ``use_rep``, ``relationship_threshold``,
    recorded with the core run's ``params`` in :data:`PARAMS`' order.
    """
    ensemble_key, use_rep, threshold = tl_args
    params = {**out.params, "ensemble_key": ensemble_key, "use_rep": use_rep}
    params["relationship_threshold"] = threshold
    params = {name: params[name] for name in PARAMS}
    uns = {**_uns(out, threshold), **fitted_run(adata, ensemble_key)}
    store_consensus(
        adata,
        key_added,
        out.membership,
        method="pcc",
        params=params,
        labels=out.labels,
        uns=uns,
        ensemble=ensemble,
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
        uns["fit_index"] = out.fit_indices  # PLA's name for the same record
    return uns
