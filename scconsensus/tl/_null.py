"""``tl.k_null``: are the chosen ``K`` groups more stable than in data without groups?"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from functools import partial

import numpy as np
from anndata import AnnData
from scanpy import logging as logg

from .._docs import doc_params
from .._progress import check_progress
from .._results import result_method
from .._validation import RandomState, check_int, check_n_jobs, random_state_record
from ..core import (
    REFERENCE_ITEMS,
    PartitionOptions,
    check_reference_size,
    generate_ensemble,
    k_evidence,
    null_evidence,
    null_table,
)
from ._anndata import _ensemble_rep, _rep_name, assign_all, check_copy, get_ensemble, get_rep
from ._null_words import feature_share, report_null
from ._runs import check_fitted_ensemble, legacy_digest, matrix_digest

__all__ = ["check_null_input", "k_null"]


@doc_params()
def k_null(
    adata: AnnData,
    key: str | Sequence[str] = "pcc",
    *,
    n_null: int = 3,
    random_state: RandomState = 0,
    n_jobs: int | None = 1,
    progress: bool | None = None,
    copy: bool = False,
) -> AnnData | None:
    """Compare the stability of a result's ``K`` groups with data that hold no groups.

    An elongated cloud without groups is cut the same way by k-means in every subsample,
    so its consensus looks stable (Şenbabaoğlu et al. 2014). As M3C (John et al. 2020),
    this draws reference data from one Gaussian with the mean and covariance of the
    matrix the ensemble clustered, rebuilds the ensemble on each draw with its recipe
    (Leiden on a kNN graph of the draw, calibrated to ``k`` anew unless resolutions were
    given) and reads ``n_clusters="auto"``'s evidence, ``λ_K(E_K)``
    (:func:`scconsensus.core.select_k`; read here at a ``K`` given). ``1 - λ_K(E_K)`` is
    the share of the co-association ``K`` groups cut: they are more than the data's shape
    when every draw cuts at least 1.5 times as much (:mod:`scconsensus.core._null`: why a
    ratio, how it was set); otherwise a ``UserWarning`` says so.

    Parameters
    ----------
    adata
        With a result of :func:`pcc` or :func:`pla` under ``key`` and the ensemble it was
        fitted to, as :func:`ensemble` built it.
    key
        The result's ``key_added``, or several fitted to one ensemble (``["pcc", "pla"]``,
        the keys of ``n_clusters=[4, 8]``), which share the draws.
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
    ``None`` (the copy when ``copy=True``), with, for each key, ``.uns[key]["k_null"]``:
    one row per ``K`` of the result's evidence (its ``k_selection``, else 2 to ``K + 2``),
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
    n_jobs, progress = check_n_jobs(n_jobs), check_progress(progress)
    keys = _keys(key)
    ensemble_key = _one_ensemble(adata, keys)
    X = check_null_input(adata, ensemble_key)
    labels = get_ensemble(adata, ensemble_key)
    read = {k: _data_evidence(adata, k, labels, random_state) for k in keys}
    Ks = np.unique(np.concatenate([Ks for _, Ks, _ in read.values()]))
    start = logg.info(f"comparing {', '.join(map(repr, keys))} with {n_null} reference draws")
    build = partial(_rebuild, recipe=adata.uns[ensemble_key]["params"], n_jobs=n_jobs)
    null = null_evidence(X, Ks, build, n_null=n_null, random_state=random_state, progress=progress)
    params = {"n_null": n_null, "random_state": random_state_record(random_state)}
    out = adata.copy() if copy else adata
    assign_all(out, uns=_records(out, read, (Ks, null), params, feature_share(X)))
    logg.info("    finished", time=start, deep=f"added .uns[key]['k_null'] for {keys}")
    return out if copy else None


def _records(adata: AnnData, read: dict, drawn: tuple, params: dict, share: float) -> dict:
    """Each result's record with its comparison added (said as it is made): a new record,
    since a view's is its parent's."""
    (Ks, null), out = drawn, {}
    for key, (K, ks, data) in read.items():
        table = null_table(ks, data, null[:, np.searchsorted(Ks, ks)])
        ratio = float(table.loc[table["n_clusters"] == K, "ratio"].iloc[0])
        report_null(adata, key, K, table, params["n_null"], share)
        new = {"k_null": table, "k_null_ratio": ratio, "k_null_params": dict(params)}
        out[key] = {**adata.uns[key], **new}
    return out


def _keys(key) -> list[str]:
    """``key`` as a list of distinct keys, at least one."""
    keys = [key] if isinstance(key, str) else list(key) if isinstance(key, Sequence) else [key]
    if not keys or not all(isinstance(k, str) for k in keys) or len(set(keys)) < len(keys):
        raise ValueError(
            f"key must name a result, or several distinct results, as strings; got {key!r}."
        )
    return keys


def _one_ensemble(adata: AnnData, keys: list[str]) -> str:
    """The ensemble every result of ``keys`` was fitted to, refused when they differ."""
    found = {k: _fitted(adata, k) for k in keys}
    ensembles = sorted(set(found.values()))
    if len(ensembles) > 1:
        raise ValueError(
            f"The results {keys} were fitted to different ensembles ({ensembles}); the draws "
            "rebuild one. Call tl.k_null once per ensemble."
        )
    return ensembles[0]


def check_null_input(adata: AnnData, ensemble_key: str):
    """The matrix the ensemble clustered; refused, before any work, when :func:`k_null`
    cannot rebuild the ensemble: no recorded recipe, its matrix gone, changed since or too
    wide to draw from (the command line and R call this before fitting, so that a fit is
    not lost to a late error)."""
    record = adata.uns.get(ensemble_key)
    if not isinstance(record, Mapping) or "params" not in record:
        raise ValueError(
            f"The ensemble at adata.obsm[{ensemble_key!r}] has no recorded recipe "
            f"(adata.uns[{ensemble_key!r}]['params']), so it cannot be rebuilt on reference "
            "data. Build it with scc.tl.ensemble and fit the result again."
        )
    built_on = _ensemble_rep(adata, ensemble_key)
    if built_on is None:
        name = _rep_name(record["params"].get("use_rep"), record["params"].get("layer"))
        raise ValueError(
            f"The matrix the ensemble at {ensemble_key!r} clustered ({name}) is gone, and the "
            "reference data take its covariance. Restore it, or build the ensemble again."
        )
    use_rep, layer = built_on
    width = (
        adata.layers[layer].shape[1]
        if layer is not None
        else adata.n_vars
        if use_rep in (None, "X")
        else np.shape(adata.obsm[use_rep])[1]
    )
    check_reference_size(min(adata.n_obs, REFERENCE_ITEMS), width)
    X = _clustered(adata, use_rep, layer)
    recorded = record["params"].get("matrix_digest")
    if recorded is not None and recorded not in (matrix_digest(X), legacy_digest(X)):
        name = _rep_name(use_rep, layer)
        raise ValueError(
            f"{name} is not the matrix the ensemble at {ensemble_key!r} clustered (it changed "
            "since, or this is a subset): the reference would take another matrix's "
            "covariance than the partitions saw. Build the ensemble again on this matrix "
            "(tl.ensemble) and fit the result again, or restore the matrix."
        )
    return X


def _fitted(adata: AnnData, key: str) -> str:
    """The ensemble key of a PCC or PLA result under ``key``, refused with the fix when
    there is none or its ensemble was rebuilt since (what the ensemble needs to be
    rebuilt is :func:`check_null_input`'s)."""
    if not isinstance(adata, AnnData):
        raise ValueError(f"Expected an AnnData object, got {type(adata).__name__}.")
    method = result_method(adata, key) if key in adata.obs else None
    if method not in ("pcc", "pla"):
        raise ValueError(
            f"No PCC or PLA result at {key!r} (found: {method or 'none'}). Run "
            "scc.tl.pcc(adata) or scc.tl.pla(adata) first and pass its key_added; DPP and "
            "ConsensusClusterPlus resample the data themselves and keep no ensemble to rebuild."
        )
    ensemble_key = adata.uns[key]["params"]["ensemble_key"]
    check_fitted_ensemble(adata, key, ensemble_key)
    return ensemble_key


def _clustered(adata: AnnData, use_rep: str | None, layer: str | None):
    """The matrix the ensemble clustered, as :func:`ensemble` recorded it."""
    with warnings.catch_warnings():
        # said by tl.ensemble, which clustered the same matrix
        warnings.filterwarnings("ignore", message=r"(One feature of|.* looks like raw counts)")
        return get_rep(adata, use_rep, layer=layer, keep_float32=True)


def _data_evidence(adata: AnnData, key: str, labels: np.ndarray, random_state):
    """``(K, Ks, λ_K(E_K))`` of the result ``key``: its own evidence when it chose ``K``,
    else read for ``K = 2 .. K + 2`` with the result's seed (so that a ``K`` given and
    the same ``K`` chosen read the same items), or ``random_state`` when it has none."""
    record = adata.uns[key]
    K = int(record.get("n_clusters_chosen", adata.obs[key].cat.categories.size))
    table = record.get("k_selection")
    if table is not None and K in set(table["n_clusters"]):
        return K, table["n_clusters"].to_numpy(dtype=np.int64), table["eigenvalue"].to_numpy()
    Ks = np.arange(2, max(K, 2) + 3)
    seed = record.get("params", {}).get("random_state", random_state)
    seed = random_state if isinstance(seed, str) else seed  # "custom": not replayable
    return K, Ks, k_evidence(labels, Ks, random_state=seed, judged=True)


def _rebuild(X: np.ndarray, seed, *, recipe: Mapping, n_jobs) -> np.ndarray:
    """The labels of the ensemble ``recipe`` (``.uns[ensemble_key]["params"]``) on ``X``.

    Leiden's resolutions are calibrated to ``k`` on each draw unless the user gave them:
    the data's calibrated range gave a draw one cluster per partition. Records written
    before ``resolution_calibrated`` existed are calibrated anew (the default's reading).
    """
    k = recipe["k"]
    if not isinstance(k, str):
        k = tuple(int(v) for v in k) if recipe.get("k_kind") == "range" else list(np.ravel(k))
    resolution = recipe.get("resolution", "auto")
    given = recipe.get("resolution_calibrated") is False and not isinstance(resolution, str)
    options = PartitionOptions(
        subsample=recipe["subsample"],
        feature_subsample=recipe["feature_subsample"],
        predict_unsampled=recipe["predict_unsampled"],
        linkage=recipe["linkage"],
        distance=recipe["distance"],
        resolution=tuple(np.ravel(resolution)) if given else None,
        n_neighbors=recipe["n_neighbors"],
    )
    method = [str(m) for m in np.ravel(recipe["method"])]
    return generate_ensemble(
        X, int(recipe["n_partitions"]), method, k, options=options, random_state=seed,
        n_jobs=n_jobs, progress=False,
    ).labels  # fmt: skip
