"""``tl.k_null``: are the chosen ``K`` groups more stable than in data without groups?"""

from __future__ import annotations

import warnings
from functools import partial

import numpy as np
from anndata import AnnData
from scanpy import logging as logg

from .._docs import doc_params
from .._progress import check_progress
from .._results import result_method
from .._validation import RandomState, check_int
from .._warnings import warn
from ..core import (
    NULL_RATIO,
    PartitionOptions,
    generate_ensemble,
    k_evidence,
    null_evidence,
    null_table,
)
from ._anndata import _ensemble_rep, _rep_name, check_copy, get_ensemble, get_rep, sanitize_uns
from ._runs import check_fitted_ensemble

__all__ = ["k_null"]


@doc_params()
def k_null(
    adata: AnnData,
    key: str = "pcc",
    *,
    n_null: int = 3,
    random_state: RandomState = 0,
    n_jobs: int | None = 1,
    progress: bool | None = None,
    copy: bool = False,
) -> AnnData | None:
    """Compare the stability of a result's ``K`` groups with data that hold no groups.

    An elongated cloud without groups is cut the same way by k-means in every subsample,
    so its consensus looks stable (Şenbabaoğlu et al. 2014). As M3C (John et al. 2020)
    does, this draws reference data from one Gaussian with the mean and covariance of
    the matrix the ensemble clustered (its principal axes and their variances kept, any
    groups gone), rebuilds the ensemble on each draw with the same recipe (methods,
    ``k``, subsampling; Leiden on a kNN graph of the draw) and reads the same evidence
    as ``n_clusters="auto"``: ``λ_K(E_K)``, the ``K``-th eigenvalue of the normalised
    co-association of the partitions with at least ``K`` clusters
    (:func:`scconsensus.core.select_k`). ``1 - λ_K(E_K)`` is the share of the
    co-association that ``K`` groups cut; they are more than the data's shape when every
    draw cuts at least 1.5 times as much (:mod:`scconsensus.core._null` on why a ratio,
    and how it was set); otherwise a ``UserWarning`` says so.

    Parameters
    ----------
    adata
        With a result of :func:`pcc` or :func:`pla` under ``key`` and the ensemble it was
        fitted to, as :func:`ensemble` built it.
    key
        The result's ``key_added``.
    n_null
        Reference draws, each about one :func:`ensemble` call on ``min(n_obs, 5000)``
        cells (the evidence reads at most 5,000 cells of the data too).
    {random_state}
        Here it seeds the draws, their ensembles and the evidence's item draw.
    {n_jobs}
    {progress}
    {copy}

    Returns
    -------
    ``None`` (the copy when ``copy=True``), with ``.uns[key]["k_null"]``: one row per
    ``K`` of the result's evidence (``.uns[key]["k_selection"]``, else 2 to ``K + 2``),
    columns ``n_clusters``, ``eigenvalue`` (the data's), ``null_mean`` and ``null_max``
    (over the draws) and ``ratio`` (``(1 - null_max) / (1 - eigenvalue)``, how many
    times less the data cut than the draw that cuts least);
    ``.uns[key]["k_null_ratio"]``, the ratio at the result's ``K``, and
    ``.uns[key]["k_null_params"]``. :func:`scconsensus.pl.k_selection` draws the draws'
    range.

    Examples
    --------
    >>> import scconsensus as scc
    >>> adata = scc.datasets.iris()
    >>> scc.tl.ensemble(adata, random_state=0)
    >>> scc.tl.pcc(adata, random_state=0)
    >>> scc.tl.k_null(adata, "pcc")
    >>> adata.uns["pcc"]["k_null_ratio"] > 1.5  # K=2 cuts far less than the draws
    True
    """
    copy = check_copy(adata, copy)
    n_null = check_int(n_null, "n_null", 1)
    progress = check_progress(progress)
    record, ensemble_key = _fitted(adata, key)
    labels = get_ensemble(adata, ensemble_key)
    X = _clustered(adata, ensemble_key)
    K = int(record.get("n_clusters_chosen", adata.obs[key].cat.categories.size))
    Ks, data = _data_evidence(record, labels, K, random_state)
    start = logg.info(f"comparing K={K} of {key!r} with {n_null} reference draws")
    build = partial(_rebuild, recipe=adata.uns[ensemble_key]["params"], n_jobs=n_jobs)
    null = null_evidence(X, Ks, build, n_null=n_null, random_state=random_state, progress=progress)
    table = null_table(Ks, data, null)
    ratio = float(table.loc[table["n_clusters"] == K, "ratio"].iloc[0])
    _report(key, K, table, n_null, start)
    out = adata.copy() if copy else adata
    params = sanitize_uns({"n_null": n_null, "random_state": random_state})
    out.uns[key].update(k_null=table, k_null_ratio=ratio, k_null_params=params)
    return out if copy else None


def _fitted(adata: AnnData, key: str) -> tuple[dict, str]:
    """The record of a PCC or PLA result under ``key`` and its ensemble's key, refused
    with the fix when there is none or its ensemble's recipe is not recorded."""
    if not isinstance(adata, AnnData):
        raise ValueError(f"Expected an AnnData object, got {type(adata).__name__}.")
    method = result_method(adata, key) if key in adata.obs else None
    if method not in ("pcc", "pla"):
        raise ValueError(
            f"No PCC or PLA result at {key!r} (found: {method or 'none'}). Run "
            "scc.tl.pcc(adata) or scc.tl.pla(adata) first and pass its key_added; DPP and "
            "ConsensusClusterPlus resample the data themselves and keep no ensemble to rebuild."
        )
    record = adata.uns[key]
    ensemble_key = record["params"]["ensemble_key"]
    ensemble = adata.uns.get(ensemble_key)
    if not isinstance(ensemble, dict) or "params" not in ensemble:
        raise ValueError(
            f"The ensemble at adata.obsm[{ensemble_key!r}] has no recorded recipe "
            f"(adata.uns[{ensemble_key!r}]['params']), so it cannot be rebuilt on reference "
            "data. Build it with scc.tl.ensemble and fit the result again."
        )
    check_fitted_ensemble(adata, key, ensemble_key)
    return record, ensemble_key


def _clustered(adata: AnnData, ensemble_key: str):
    """The matrix the ensemble clustered, as :func:`ensemble` recorded it."""
    built_on = _ensemble_rep(adata, ensemble_key)
    if built_on is None:
        recipe = adata.uns[ensemble_key]["params"]
        name = _rep_name(recipe.get("use_rep"), recipe.get("layer"))
        raise ValueError(
            f"The matrix the ensemble at {ensemble_key!r} clustered ({name}) is gone, and the "
            "reference data take its covariance. Restore it, or build the ensemble again."
        )
    use_rep, layer = built_on
    with warnings.catch_warnings():
        # said by tl.ensemble, which clustered the same matrix
        warnings.filterwarnings("ignore", message=r"(One feature of|.* looks like raw counts)")
        use_rep = "X" if use_rep is None and layer is None else use_rep  # not a newer X_pca
        return get_rep(adata, use_rep, layer=layer, keep_float32=True)


def _data_evidence(record: dict, labels: np.ndarray, K: int, random_state):
    """``(Ks, λ_K(E_K))`` of the data: the result's own evidence when it chose ``K``,
    else read here for ``K = 2 .. K + 2``."""
    table = record.get("k_selection")
    if table is not None and K in set(table["n_clusters"]):
        return table["n_clusters"].to_numpy(dtype=np.int64), table["eigenvalue"].to_numpy()
    Ks = np.arange(2, max(K, 2) + 3)
    return Ks, k_evidence(labels, Ks, random_state=random_state)


def _rebuild(X: np.ndarray, seed, *, recipe: dict, n_jobs) -> np.ndarray:
    """The labels of the ensemble ``recipe`` (``.uns[ensemble_key]["params"]``) on ``X``."""
    k = recipe["k"]
    if not isinstance(k, str):
        k = tuple(int(v) for v in k) if recipe.get("k_kind") == "range" else list(np.ravel(k))
    resolution = recipe.get("resolution", "auto")
    options = PartitionOptions(
        subsample=recipe["subsample"],
        feature_subsample=recipe["feature_subsample"],
        predict_unsampled=recipe["predict_unsampled"],
        linkage=recipe["linkage"],
        distance=recipe["distance"],
        resolution=None if isinstance(resolution, str) else tuple(np.ravel(resolution)),
        n_neighbors=recipe["n_neighbors"],
    )
    method = [str(m) for m in np.ravel(recipe["method"])]
    return generate_ensemble(
        X, int(recipe["n_partitions"]), method, k, options=options, random_state=seed,
        n_jobs=n_jobs, progress=False,
    ).labels  # fmt: skip


def _report(key: str, K: int, table, n_null: int, start) -> None:
    """Log the comparison; warn when the ``K`` groups are not clearly beyond the draws."""
    row = table[table["n_clusters"] == K].iloc[0]
    said = (
        f"λ_{K}(E_{K}) = {row.eigenvalue:.3f} against at most {row.null_max:.3f} in "
        f"{n_null} draw(s) of one Gaussian with the data's covariance: they cut "
        f"{1 - row.eigenvalue:.3f} of the co-association, the draws at least "
        f"{1 - row.null_max:.3f}, {row.ratio:.2f} times as much"
    )
    logg.info(f"    finished: {said}", time=start, deep=f"added\n    .uns[{key!r}]['k_null']")
    if row.ratio >= NULL_RATIO:
        return
    warn(
        f"tl.k_null: the {K} clusters of {key!r} are hardly more stable than in data without "
        f"groups: {said} (under {NULL_RATIO:g}). They may follow the data's shape (an elongated "
        "cloud is cut the same way in every subsample) rather than groups. If one feature "
        "holds most of the variance, scale the features (sc.pp.scale) or cluster a "
        f"representation (sc.pp.pca); look at scc.pl.k_selection(adata, {key!r}).",
        UserWarning,
    )
