"""``tl.pla`` and the reference-first transfer behind ``tl.pla_transfer``."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from anndata import AnnData
from scanpy import logging as logg
from sklearn.exceptions import ConvergenceWarning

from .._docs import doc_params
from .._progress import check_progress
from .._results import result_method
from .._validation import RandomState, check_labels, renamed_args
from .._warnings import warn
from ..core import FitRoute, StartPlan
from ..core.pla import (
    LAMBDA_GRID,
    PLA_PARAMS,
    PLAConsensus,
    Weighting,
    pla_consensus,
    pla_extend,
    predict_ensemble_labels,
    warn_unused_lam,
)
from ._anndata import (
    _ensemble_rep,
    check_copy,
    default_rep,
    get_ensemble,
    get_rep,
    lazy_rep,
    log_rep_read,
    store_consensus,
)
from ._candidates import fits_each_k
from ._input_checks import representations
from ._record_keys import check_record_key
from ._runs import check_fitted_ensemble, fitted_run
from ._selection import clusters_written, log_plan, selection_uns

__all__ = ["pla", "transfer"]


@renamed_args(n_restarts="n_init")
@fits_each_k
@doc_params(**PLA_PARAMS)
def pla(
    adata: AnnData,
    n_clusters: int | str | Sequence[int] = "auto",
    weighted: bool = False,
    *,
    lam: float | str = "cv",
    lam_grid=LAMBDA_GRID,
    cv_folds: int = 3,
    cv_score: str = "heldout",
    ensemble_key: str = "scc_ensemble",
    max_iter: int = 300,
    tol: float = 1e-6,
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
    random_state: RandomState = 0,
    key_added: str = "pla",
    progress: bool | None = None,
    copy: bool = False,
) -> AnnData | None:
    """Consensus by (weighted) Probabilistic Label Aggregation (Lange & Buhmann 2005).

    Factorises the co-association ``Z = Σ_l α_l Y_l Y_lᵀ`` as ``p(i) Σ_v p(v|i) p(j|v)`` by EM;
    the posteriors ``p(v|i)`` are the soft consensus. See :func:`scconsensus.core.pla_consensus`
    (the same on arrays) and :func:`scconsensus.core.pla.pla` for the model.

    Parameters
    ----------
    {adata_ensemble}
    {pla_n_clusters}
    {pla_weighting}
    {ensemble_key}
    {pla_stop}
    {pla_plan}
    {pla_mode}
    {pla_pairs}
    {pla_fit_subset}
    {pla_use_rep}
    {random_state}
    {key_added}
    {progress}
    {copy}

    Returns
    -------
    {returns_consensus}
        {pla_uns}

    Examples
    --------
    >>> import scconsensus as scc
    >>> adata = scc.datasets.iris()
    >>> scc.tl.ensemble(adata, n_partitions=20, k=(2, 4), random_state=0)
    >>> scc.tl.pla(adata, n_clusters=3)
    >>> adata.obsm["pla_membership"].shape
    (150, 3)
    """
    key_added, copy = check_record_key(adata, key_added, "consensus"), check_copy(adata, copy)
    labels, X = get_ensemble(adata, ensemble_key), lazy_rep(adata, use_rep, ensemble_key)
    progress, start = check_progress(progress), logg.info(f"running {_name(weighted)}")
    start_plan = StartPlan(init=init, partitions=partitions, n_init=n_init)
    route = FitRoute(mode=mode, n_neighbors=n_neighbors, n_random=n_random, fit_size=fit_size,
                     fit_fraction=fit_fraction)  # fmt: skip
    out = pla_consensus(
        labels, n_clusters, weighted,
        weighting=_weighting(weighted, lam, lam_grid, cv_folds, cv_score),
        max_iter=max_iter, tol=tol, start=start_plan, route=route, X=X, pairs=pairs,
        random_state=random_state, progress=progress,
    )  # fmt: skip
    adata = adata.copy() if copy else adata
    params = {**out.params, "lam": lam, "ensemble_key": ensemble_key, "use_rep": use_rep}
    _store(adata, key_added, out, {name: params[name] for name in PARAMS}, start, (labels, X))
    return adata if copy else None


def _warn_unconverged(res, params: dict) -> None:
    """PLA's EM stopped at ``max_iter`` before ``tol``: a ConvergenceWarning, as PCC's
    (the record said ``converged=False`` without a word)."""
    if not res.converged:
        warn(
            f"PLA stopped at max_iter={params['max_iter']} EM iterations before the "
            f"tolerance (tol={params['tol']}); raise max_iter for a finer optimum.",
            ConvergenceWarning,
        )


def _route_text(res) -> str:
    """The route of the fit, for the log."""
    if res.pair_source is None:
        return "all pairs"
    return f"{res.n_stored} sampled entries of Z ({res.pair_source} + random partners)"


def _name(weighted: bool) -> str:
    return "weighted PLA" if weighted else "PLA"


def _weighting(weighted, lam, lam_grid, cv_folds, cv_score) -> Weighting:
    """The λ record of :func:`pla`'s flat keywords; λ options that unweighted PLA would
    not use are warned about here, under their keywords (the core would name its record's
    fields), and checked by the core all the same."""
    warn_unused_lam(
        weighted, lam, flat=True, lam_grid=lam_grid, cv_folds=cv_folds, cv_score=cv_score
    )
    lam = lam if weighted else "cv"
    return Weighting(lam=lam, lam_grid=lam_grid, cv_folds=cv_folds, cv_score=cv_score)


#: The arguments of :func:`pla` recorded in ``.uns[key_added]["params"]``, in this order.
PARAMS = (
    "n_clusters",
    "weighted",
    "ensemble_key",
    "lam",
    "lam_grid",
    "cv_folds",
    "cv_score",
    "mode",
    "use_rep",
    "n_neighbors",
    "n_random",
    "pairs",
    "fit_size",
    "fit_fraction",
    "n_init",
    "init",
    "partitions",
    "max_iter",
    "tol",
    "random_state",
    "extension",
)


def _store(adata: AnnData, key_added: str, out: PLAConsensus, params: dict, start, inputs):
    """Write the consensus layout, ``.uns[key_added]`` as :func:`pla` says, and log it.
    ``inputs``: the ensemble and the representation given to the core."""
    ensemble, X = inputs
    log_plan(out.plan)
    res, plan, keep, membership = out.fit, out.plan, out.clusters, out.membership
    _warn_unconverged(res, params)
    if res.fit_index.size < adata.n_obs:
        logg.info(
            f"    fitted {res.fit_index.size} of {adata.n_obs} cells (fit_size="
            f"{params['fit_size']!r}); the other {adata.n_obs - res.fit_index.size} folded in"
        )
    uns = {
        "log_likelihood": res.log_likelihood,
        "log_likelihood_trace": res.log_likelihood_trace,
        "n_iter": res.n_iter,
        "converged": res.converged,
        "cluster_priors": res.cluster_priors[keep],
        "weights": res.weights,
        "lam": res.lam,
        "fit_index": res.fit_index,
        "fitted_n_obs": adata.n_obs,
        "n_stored": res.n_stored,
        "route": res.mode,
        "partitions_used": plan.columns,
        **selection_uns(plan),
        **fitted_run(adata, params["ensemble_key"]),
    }
    if res.pair_source is not None:
        uns["pair_source"] = res.pair_source
    logg.info(f"    {_route_text(res)} of {res.fit_index.size} cells")
    log_rep_read(X)
    if params["weighted"]:
        uns["objective_trace"] = res.objective_trace
        if not res.cv_scores.empty:
            uns["cv_scores"] = res.cv_scores
    store_consensus(
        adata, key_added, membership, method="pla", params=params, uns=uns, ensemble=ensemble
    )
    logg.info(
        f"    finished: {clusters_written(adata, key_added, membership.shape[1])}",
        time=start,
        deep=(
            f"added\n    .obs[{key_added!r}], consensus labels\n"
            f"    .obsm['{key_added}_membership'], posteriors p(v|i)\n"
            f"    .uns[{key_added!r}], log-likelihood and weights"
        ),
    )


def transfer(
    adata_ref: AnnData,
    adata_new: AnnData,
    key: str = "pla",
    *,
    use_rep: str | None = None,
    n_neighbors: int = 15,
    new_ensemble_key: str | None = None,
    key_added: str | None = None,
    copy: bool = False,
) -> AnnData | None:
    """:func:`scconsensus.tl.pla_transfer` with the reference first (its arguments).

    Lange & Buhmann (2005), Sect. 3.3: every partition of the reference ensemble
    labels each new cell, and :func:`~scconsensus.core.pla.pla_extend` folds it into
    the fitted model from eq. 26's posterior ``p(v|x) = Σ_i p(i|x) p(v|i)``. The public
    function (``tl/_transfer.py``) documents the parameters and takes Scanpy's order.
    """
    if not isinstance(adata_ref, AnnData) or not isinstance(adata_new, AnnData):
        raise ValueError("adata and adata_ref must both be AnnData objects.")
    key_added = check_record_key(adata_new, key if key_added is None else key_added, "consensus")
    copy = check_copy(adata_new, copy)
    labels_ref, used, posteriors, weights, fit_index = _reference(adata_ref, key)
    # the new cells' labels in every partition of the reference (where known): the fit
    # reads the partitions it used, the confidence all of them, as the reference's
    if new_ensemble_key is not None:
        labels_new = _shared_labels(adata_new, new_ensemble_key, used, labels_ref.shape[1])
        how = f"shared ensemble .obsm[{new_ensemble_key!r}]"
    else:
        space = _vote_space(adata_ref, key, use_rep)
        labels_new = _predicted_labels(adata_ref, adata_new, labels_ref, space, n_neighbors)
        how = f"{n_neighbors}-nearest-neighbour predictor on {_space_name(space)}"
    start = logg.info(f"transferring PLA clusters to {adata_new.n_obs} cells ({how})")
    known = slice(None) if labels_new.shape[1] == labels_ref.shape[1] else used
    membership = pla_extend(
        posteriors[fit_index],
        labels_ref[fit_index][:, used],
        labels_new if known is used else labels_new[:, used],
        weights=weights,
    )
    adata_new = adata_new.copy() if copy else adata_new
    params = {"reference_key": key, "use_rep": use_rep, "n_neighbors": n_neighbors}
    params.update(new_ensemble_key=new_ensemble_key, extension="fold_in")
    uns = {"transferred_from": key, "weights": weights}
    if new_ensemble_key is None:
        uns["predictor_rep"] = _space_name(space)
    uns["confidence"] = _confidence_note(labels_new.shape[1], labels_ref.shape[1])
    reference = (labels_ref[:, known], adata_ref.obs[key].cat.codes.to_numpy())
    store_consensus(
        adata_new, key_added, membership, method="pla_transfer", params=params, uns=uns,
        drop_empty=False,
        ensemble=labels_new, reference=reference,
    )  # fmt: skip
    logg.info("    finished", time=start)
    return adata_new if copy else None


def _confidence_note(n_known: int, n_full: int) -> str:
    """What ``.obs[f"{key}_confidence"]`` of transferred cells is, for ``.uns[key]``."""
    which = "all" if n_known == n_full else f"the {n_known} the fit used, of {n_full}"
    return (
        "ensemble confidence against the reference: the shares of the reference cells in "
        "each new cell's clusters of the reference's partitions "
        f"(core.transferred_confidence; {which} partitions)"
    )


def _ensemble_key(adata_ref: AnnData, key: str) -> str:
    """The ensemble the reference's PLA result ``key`` was fitted to."""
    return str(adata_ref.uns[key].get("params", {}).get("ensemble_key", "scc_ensemble"))


def _reference(adata_ref: AnnData, key: str) -> tuple:
    """``(labels, used, posteriors, weights, fit_index)`` of a :func:`pla` fit.

    ``labels``: every partition of the reference's ensemble; ``used``: the columns the
    fit used.
    """
    if (
        key not in adata_ref.uns
        or f"{key}_membership" not in adata_ref.obsm
        or key not in adata_ref.obs
    ):
        raise ValueError(
            f"adata_ref has no PLA result under key={key!r}: run scconsensus.tl.pla(adata_ref, "
            "key_added=key) first."
        )
    if result_method(adata_ref, key) not in (None, "pla"):  # None: a record of old
        raise ValueError(
            f"adata_ref.uns[{key!r}] is a {result_method(adata_ref, key)} result; "
            "pla_transfer folds new cells into a PLA fit. Run scconsensus.tl.pla(adata_ref) "
            "and transfer that (key='pla')."
        )
    record = adata_ref.uns[key]
    ensemble_key = _ensemble_key(adata_ref, key)
    if ensemble_key not in adata_ref.obsm:
        raise ValueError(
            f"adata_ref has no ensemble at adata_ref.obsm[{ensemble_key!r}], the one its PLA "
            f"result {key!r} was fitted to: the transfer reads it. Keep it in the reference "
            "(or rebuild it and run tl.pla again)."
        )
    labels = get_ensemble(adata_ref, ensemble_key)
    check_fitted_ensemble(adata_ref, key, ensemble_key)
    # the fit used the partitions matched to its K: transfer through the same ones
    used = np.asarray(record.get("partitions_used", np.arange(labels.shape[1])), dtype=int)
    posteriors = np.asarray(adata_ref.obsm[f"{key}_membership"], dtype=np.float64)
    weights = np.asarray(record.get("weights", np.full(used.size, 1.0)), dtype=float)
    fit_index = np.asarray(record.get("fit_index", np.arange(adata_ref.n_obs)), dtype=np.int64)
    _check_not_cut(adata_ref, key, record, fit_index)
    return labels, used, posteriors, weights, fit_index


def _check_not_cut(adata_ref: AnnData, key: str, record, fit_index: np.ndarray) -> None:
    """Refuse a reference subset after :func:`pla`: its ``fit_index`` names the cells of
    the object that was fitted, not of this one (an ``IndexError`` or, worse, other cells)."""
    fitted = int(record.get("fitted_n_obs", adata_ref.n_obs))  # absent before it was stored
    if fitted != adata_ref.n_obs or (fit_index.size and fit_index.max() >= adata_ref.n_obs):
        raise ValueError(
            f"adata_ref has {adata_ref.n_obs} cells, but its PLA result under key={key!r} was "
            f"fitted on {fitted if fitted != adata_ref.n_obs else 'more'}: it was subset after "
            "tl.pla, so .uns[key]['fit_index'] no longer names its cells. Run "
            "scconsensus.tl.pla on the subset (or transfer from the whole object)."
        )


def _shared_labels(adata_new: AnnData, new_ensemble_key: str, used, n_full: int) -> np.ndarray:
    """The new cells' labels from ``.obsm``: in all ``n_full`` partitions of the
    reference, or in those ``used`` by its fit."""
    if new_ensemble_key not in adata_new.obsm:
        raise ValueError(
            f"new_ensemble_key={new_ensemble_key!r} is not in adata.obsm "
            f"(available: {list(adata_new.obsm)})."
        )
    labels_new = check_labels(adata_new.obsm[new_ensemble_key], "new ensemble labels")
    if labels_new.shape[1] not in (n_full, used.size):
        raise ValueError(
            f"adata.obsm[{new_ensemble_key!r}] has {labels_new.shape[1]} partitions "
            f"but the reference ensemble has {n_full} (its PLA fit used {used.size})."
        )
    return labels_new


def _vote_space(adata_ref: AnnData, key: str, use_rep: str | None) -> tuple[str | None, str | None]:
    """``(use_rep, layer)`` in which the new cells meet the reference's: ``use_rep`` when
    given, else the matrix the reference's ensemble clustered (its partitions were drawn
    there), else ``X_pca``, else ``X``. The reference names it for both objects: each
    one's own default would pair the reference's ``X_pca`` with the new cells' genes."""
    if use_rep is not None:
        return use_rep, None
    built = _ensemble_rep(adata_ref, _ensemble_key(adata_ref, key))
    return built if built is not None else (default_rep(adata_ref, None) or "X", None)


def _space_name(space: tuple[str | None, str | None]) -> str:
    rep, layer = space
    return f"layers[{layer!r}]" if layer is not None else str(rep)


def _check_space(adata_ref: AnnData, adata_new: AnnData, space: tuple) -> None:
    """Both objects hold the matrix, or an error that names the one that lacks it."""
    rep, layer = space
    if layer is None and rep == "X":
        return
    held = [
        (layer in a.layers) if layer is not None else (rep in a.obsm)
        for a in (adata_ref, adata_new)
    ]
    what = _space_name(space)
    if not held[0]:  # only a use_rep given can miss in the reference
        raise ValueError(
            f"use_rep={rep!r} is not in adata_ref.obsm ({representations(adata_ref)}): "
            "the new cells are placed among the reference's cells, in a matrix both have."
        )
    if not held[1]:
        raise ValueError(
            f"{what} is in adata_ref but not in adata: project the new cells into the "
            "reference's space first (sc.tl.ingest(adata, adata_ref) writes X_pca), or pass "
            "use_rep naming a representation both have."
        )


def _predicted_labels(adata_ref, adata_new, labels_ref, space, n_neighbors) -> np.ndarray:
    """The new cells' labels in the reference's partitions by a nearest-neighbour vote."""
    _check_space(adata_ref, adata_new, space)
    rep, layer = space
    X_ref = get_rep(adata_ref, rep, layer=layer)
    X_new = get_rep(adata_new, rep, layer=layer, min_items=1)  # assigned, not clustered
    if X_ref.shape[1] != X_new.shape[1]:
        raise ValueError(
            f"{_space_name(space)} has {X_ref.shape[1]} columns in adata_ref and "
            f"{X_new.shape[1]} in adata; project the new cells into the reference "
            "space first (same genes, or sc.tl.ingest for X_pca)."
        )
    if hasattr(X_ref, "toarray"):
        X_ref = X_ref.toarray()
    if hasattr(X_new, "toarray"):
        X_new = X_new.toarray()
    return predict_ensemble_labels(X_ref, labels_ref, X_new, n_neighbors=n_neighbors)
