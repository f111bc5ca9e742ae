"""``tl.consensus_k``: choose ``k`` by Monti consensus statistics, without R."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp
from anndata import AnnData
from scanpy import logging as logg

from .._docs import doc_params
from .._progress import check_progress
from .._validation import RandomState, check_choice, check_int, check_key, is_k_list
from ..core.consensus_k import Resampling, check_consensus_k, warn_pac_ties
from ..core.consensus_k import consensus_k as _consensus_k
from ._anndata import (
    assign_all,
    check_copy,
    consensus_entries,
    get_rep,
    labels_table,
    merge_entries,
    sanitize_uns,
    warn_overwrite,
)
from ._record_keys import check_record_key
from ._replaced import earlier_k_entries

#: The statistics and output parameters of :func:`consensus_k` (docstring text).
_OUTPUT_DOC = """\
final_linkage, pac_window
    Linkage of the clustering of ``1 - M_k``; ``(lo, hi)`` of PAC.
keep_k
    The ``k`` to write in full (below): ``"best"`` (lowest PAC), ``"all"`` or values.
store_matrices
    Also store ``M_k`` (dense ``n x n`` float32) of the kept ``k`` in ``.obsp``."""


@doc_params(output=_OUTPUT_DOC)
def consensus_k(
    adata: AnnData,
    max_k: int = 6,
    reps: int = 50,
    *,
    p_item: float = 0.8,
    p_feature: float = 1.0,
    method: str = "hc",
    distance: str = "pearson",
    linkage: str = "average",
    use_rep: str | None = None,
    layer: str | None = None,
    random_state: RandomState = 0,
    n_jobs: int | None = 1,
    final_linkage: str = "average",
    pac_window: Sequence[float] = (0.1, 0.9),
    keep_k: str | int | Sequence[int] = "best",
    store_matrices: bool = False,
    progress: bool | None = None,
    key_added: str = "consensus_k",
    copy: bool = False,
    **ensemble_kwargs: Any,
) -> AnnData | None:
    """Consensus clustering for ``k = 2..max_k`` with Monti et al.'s statistics, in Python.

    ConsensusClusterPlus's protocol, stored as :func:`scconsensus.r.consensus_cluster_plus`.

    Parameters
    ----------
    {adata}
    {consensus_k_resampling}
    {use_rep_layer}
    {random_state}
    {n_jobs}
    {output}
    {progress}
    {key_added}
    {copy}
    {consensus_k_ensemble_kwargs}

    Returns
    -------
    {consensus_k_returns}

    Examples
    --------
    >>> import scconsensus as scc
    >>> adata = scc.datasets.iris()
    >>> scc.tl.consensus_k(adata, max_k=4, reps=20, distance="euclidean", keep_k=3)
    >>> adata.uns["consensus_k"]["pac"].shape, adata.obsm["consensus_k_labels"].shape
    ((3,), (150, 3))
    """
    key_added, copy = check_key(key_added), check_copy(adata, copy)
    X = get_rep(adata, use_rep, layer=layer)
    resampling = Resampling(
        p_item=p_item, p_feature=p_feature, method=method, distance=distance, linkage=linkage
    )
    run = (resampling, final_linkage, pac_window, n_jobs, bool(store_matrices), ensemble_kwargs)
    max_k, reps, kept = _checked(X.shape, max_k, reps, keep_k, run)
    check_record_key(adata, key_added, "consensus_k", per_k=_may_write(kept, max_k))
    adata = adata.copy() if copy else adata
    start = logg.info(f"consensus_k: {reps} subsamples of {X.shape[0]} items, k = 2..{max_k}")
    t0 = time.perf_counter()
    res = _consensus_k(
        X.toarray() if sp.issparse(X) else X,
        max_k,
        reps,
        resampling=resampling,
        final_linkage=final_linkage,
        pac_window=pac_window,
        random_state=random_state,
        n_jobs=n_jobs,
        keep_matrices=bool(store_matrices),
        progress=check_progress(progress),
        **ensemble_kwargs,
    )
    extra = {"use_rep": use_rep, "layer": layer, "store_matrices": bool(store_matrices)}
    _write(adata, res, key_added, kept, extra, (start, time.perf_counter() - t0))
    return adata if copy else None


def _write(
    adata: AnnData, res, key_added: str, kept: str | list[int], extra: dict, timing: tuple
) -> None:
    """Every ``k``'s labels, the full layout of the kept ``k`` and the record.

    ``timing`` is the start logged by scanpy and the seconds the computation took.
    """
    start, seconds = timing
    params = {**res.params, **extra, "source": "scconsensus"}
    kept = [int(res.best_k)] if kept == "best" else list(res.ks) if kept == "all" else kept
    matrices = params["store_matrices"]
    keys = [f"{key_added}_k{k}" for k in kept]
    parts = [_entries_k(adata, res, f"{key_added}_k{k}", int(k), params, matrices) for k in kept]
    entries = merge_entries(earlier_k_entries(adata, key_added, keys), *parts)
    warn_overwrite(adata, obsm=[f"{key_added}_labels"], uns=[key_added])
    entries["obsm"][f"{key_added}_labels"] = labels_table(
        adata.obs_names, {int(k): res.labels[int(k)] for k in res.ks}
    )
    entries["uns"][key_added] = sanitize_uns(
        {
            "method": "consensus_k",
            "params": params,
            **res.to_uns(),
            "keys": keys,
            "seconds": seconds,
        }
    )
    # every k built before the first assignment: Ctrl-C leaves adata as it was
    assign_all(adata, **entries)
    warn_pac_ties(res.pac_ties, float(np.min(res.pac)), key_added)
    logg.info(
        f"    finished: lowest PAC at k = {res.best_k}",
        time=start,
        deep=f"added .obsm['{key_added}_labels'], {keys} and .uns[{key_added!r}]",
    )


def _may_write(kept: str | list[int], max_k: int) -> Sequence[int]:
    """The ``k`` whose layout a run may write: "best" is known only after it, so any."""
    return range(2, max_k + 1) if isinstance(kept, str) else kept


def _checked(shape, max_k, reps, keep_k, run: tuple) -> tuple[int, int, str | list[int]]:
    """``(max_k, reps, kept k)``, all of the run checked before the start is logged
    (``run``: the resampling record, ``final_linkage``, ``pac_window``, ``n_jobs``,
    ``store_matrices``, the ensemble's keywords)."""
    max_k = check_int(max_k, "max_k", 2, hint="max_k is the largest k tried: k = 2..max_k.")
    reps = check_int(reps, "reps", 1)
    kept = _kept_k(keep_k, max_k)
    resampling, final_linkage, pac_window, n_jobs, keep_matrices, ensemble_kwargs = run
    check_consensus_k(
        shape, max_k, reps, resampling=resampling, final_linkage=final_linkage,
        pac_window=pac_window, n_jobs=n_jobs, keep_matrices=keep_matrices, **ensemble_kwargs,
    )  # fmt: skip
    return max_k, reps, kept


def _kept_k(keep_k: str | int | Sequence[int], max_k: int) -> str | list[int]:
    """``"best"``, ``"all"`` or the checked list of ``k`` to keep in full."""
    if isinstance(keep_k, str):
        check_choice(keep_k, ("best", "all"), "keep_k")
        return keep_k
    # the rule n_clusters follows: a mapping is no list of k (its keys would be taken)
    values = list(keep_k) if is_k_list(keep_k) else [keep_k]
    hint = f"Give 'best', 'all', or k in 2..max_k={max_k} (an integer or a list of them)."
    ks = [check_int(k, "keep_k", hint=hint) for k in values]
    if not ks or any(not 2 <= k <= int(max_k) for k in ks):
        raise ValueError(
            f"keep_k must be 'best', 'all' or values in 2..max_k={max_k}, got {keep_k!r}."
        )
    return sorted(set(ks))


def _entries_k(adata: AnnData, res, key: str, k: int, params: dict, matrices: bool) -> dict:
    """The shared consensus layout of one ``k`` under ``key``, as :func:`assign_all`'s
    arguments (not yet assigned)."""
    cc = res.cluster_consensus
    entries = consensus_entries(
        adata,
        key,
        res.membership(k),
        method="consensus_k",
        params={**params, "k": k},
        labels=res.labels[k],
        uns={"cluster_consensus": cc.loc[cc["k"] == k, "cluster_consensus"].to_numpy()},
    )
    # 1 where an item is alone in its cluster, as the membership and
    # r.consensus_cluster_plus count it (an R user met NA in the SingleCellExperiment)
    entries["obsm"][f"{key}_item_consensus"] = res.filled_item_consensus(k)
    if matrices:
        entries["obsp"] = {f"{key}_consensus": res.consensus[k].astype(np.float32)}
    return entries
