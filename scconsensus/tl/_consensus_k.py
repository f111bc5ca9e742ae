"""``tl.consensus_k``: choose ``k`` by Monti consensus statistics, without R."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp
from anndata import AnnData
from scanpy import logging as logg

from .._progress import check_progress
from .._validation import RandomState, check_choice, check_int, check_key
from ..core.consensus_k import consensus_k as _consensus_k
from ._anndata import get_rep, sanitize_uns, store_consensus, warn_overwrite


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
    final_linkage: str = "average",
    pac_window: Sequence[float] = (0.1, 0.9),
    use_rep: str | None = None,
    layer: str | None = None,
    random_state: RandomState = 0,
    n_jobs: int | None = 1,
    keep_k: str | int | Sequence[int] = "best",
    store_matrices: bool = False,
    progress: bool | None = None,
    key_added: str = "consensus_k",
    copy: bool = False,
    **ensemble_kwargs: Any,
) -> AnnData | None:
    """Consensus clustering for ``k = 2..max_k`` with Monti et al.'s statistics, in Python.

    The resampling protocol of ConsensusClusterPlus (``reps`` subsamples of a fraction
    ``p_item`` of the items, each clustered for every ``k``), then per ``k`` the consensus
    matrix ``M_k``, its CDF, the area under it and the delta area, PAC (the proportion of
    ambiguous clustering, low is better), the final clustering (average linkage on
    ``1 - M_k``), and item and cluster consensus. The results use the layout of
    :func:`scconsensus.r.consensus_cluster_plus`, so plots and comparisons treat both alike.

    Parameters
    ----------
    adata
        Items (samples or cells) in rows.
    max_k
        Largest ``k`` (CCP's ``maxK``).
    reps
        Number of subsamples (``reps``).
    p_item, p_feature
        Fractions of items and features per subsample (``pItem``, ``pFeature``).
    method
        ``"hc"`` (CCP's default) or any fixed-``k`` method of
        :func:`scconsensus.core.ensemble.generate_ensemble` (``"kmeans"``, ``"pam"``,
        ``"spectral"``, ``"hc_<linkage>"``).
    distance, linkage
        For hierarchical clustering: item distance (``"pearson"`` = 1 - r, as CCP) and
        inner linkage.
    final_linkage
        Linkage of the clustering of ``1 - M_k``.
    pac_window
        ``(lo, hi)``: PAC counts pairs with ``lo < M_ij <= hi``.
    use_rep
        ``.obsm`` key or ``"X"``; default ``X_pca`` when present, else ``X``.
    layer
        Cluster ``adata.layers[layer]`` instead.
    random_state
        Seed (NumPy's generator; the same seed gives the same result for any ``n_jobs``,
        but not the same subsamples as R's ``set.seed``).
    n_jobs
        Parallel workers over subsamples.
    keep_k
        For which ``k`` to write the full consensus layout (labels, memberships,
        confidence, entropy, item consensus) under ``f"{key_added}_k{k}"``:
        ``"best"`` (default, the lowest PAC), ``"all"``, or the ``k`` values. The
        labels of every ``k`` are always in ``.obsm[f"{key_added}_labels"]``.
    store_matrices
        Also store ``M_k`` (dense ``n x n`` float32) of the kept ``k`` in ``.obsp``.
    progress
        Show progress bars on standard error. ``None`` (default): only when
        ``scanpy.settings.verbosity`` is ``'info'`` or higher. tqdm's ``TQDM_DISABLE``
        environment variable is always respected.
    key_added
        Prefix of every key written.
    copy
        Return a modified copy instead of writing in place.
    **ensemble_kwargs
        Passed to :func:`~scconsensus.core.ensemble.generate_ensemble` (non-``hc`` methods
        only): ``predict_unsampled``, ``resolution``, ``n_neighbors``, ``client``. Any
        other name raises, suggesting the closest parameter.

    Returns
    -------
    ``None`` or a copy, with

    ``.obsm[f"{key_added}_labels"]``
        One table of every ``k``'s final labels: categorical columns ``"k2"`` ..
        ``f"k{max_k}"``.

    and, for each kept ``k`` (``keep_k``) and ``key = f"{key_added}_k{k}"``:

    ``.obs[key]``
        Final labels ``"0".."k-1"``, numbered by decreasing size.
    ``.obsm[f"{key}_membership"]``
        Item consensus with each cluster, rows normalised to sum to one (with
        ``.obs[f"{key}_confidence"]`` and ``.obs[f"{key}_entropy"]``).
    ``.obsm[f"{key}_item_consensus"]``
        The item consensus itself (NaN for an item alone in its cluster, as CCP).
    ``.uns[key]``
        ``params`` (with ``k``) and ``cluster_consensus`` (one value per cluster).
    ``.obsp[f"{key}_consensus"]``
        ``M_k`` when ``store_matrices=True``.

    and ``.uns[key_added]``: ``params``, ``k``, ``keys``, ``cdf`` (``len(k) x 100``, at
    ``cdf_x`` = 0.01 .. 1), ``area``, ``delta_area``, ``pac``, ``pac_window``,
    ``cluster_consensus`` (columns ``k``, ``cluster``, ``cluster_consensus``, ``size``),
    ``best_k`` (lowest PAC), ``keys`` (those of the kept ``k``) and ``seconds``.

    Examples
    --------
    >>> import scconsensus as scc
    >>> adata = scc.datasets.iris()
    >>> scc.tl.consensus_k(adata, max_k=4, reps=20, distance="euclidean", keep_k=3)
    >>> adata.uns["consensus_k"]["pac"].shape
    (3,)
    >>> adata.obs["consensus_k_k3"].cat.categories.tolist()
    ['0', '1', '2']
    >>> adata.obsm["consensus_k_labels"].columns.tolist()
    ['k2', 'k3', 'k4']
    """
    key_added = check_key(key_added)
    X = get_rep(adata, use_rep, layer=layer)
    if sp.issparse(X):
        X = X.toarray()
    n = X.shape[0]
    kept = _kept_k(keep_k, max_k)
    adata = adata.copy() if copy else adata
    start = logg.info(f"consensus_k: {reps} subsamples of {n} items, k = 2..{max_k}")
    t0 = time.perf_counter()
    res = _consensus_k(
        X,
        max_k,
        reps,
        p_item=p_item,
        p_feature=p_feature,
        method=method,
        distance=distance,
        linkage=linkage,
        final_linkage=final_linkage,
        pac_window=pac_window,
        random_state=random_state,
        n_jobs=n_jobs,
        keep_matrices=bool(store_matrices),
        progress=check_progress(progress),
        **ensemble_kwargs,
    )
    seconds = time.perf_counter() - t0
    params = {
        **res.params,
        "use_rep": use_rep,
        "layer": layer,
        "store_matrices": bool(store_matrices),
        "source": "scconsensus",
    }
    kept = [int(res.best_k)] if kept == "best" else list(res.ks) if kept == "all" else kept
    keys = [_store_k(adata, res, key_added, int(k), params, store_matrices) for k in kept]
    warn_overwrite(adata, obsm=[f"{key_added}_labels"])
    adata.obsm[f"{key_added}_labels"] = _labels_table(adata, res)
    warn_overwrite(adata, uns=[key_added])
    adata.uns[key_added] = sanitize_uns(
        {"params": params, **res.to_uns(), "keys": keys, "seconds": seconds}
    )
    logg.info(
        f"    finished: lowest PAC at k = {res.best_k}",
        time=start,
        deep=f"added .obsm['{key_added}_labels'], {keys} and .uns[{key_added!r}]",
    )
    return adata if copy else None


def _kept_k(keep_k: str | int | Sequence[int], max_k: int) -> str | list[int]:
    """``"best"``, ``"all"`` or the checked list of ``k`` to keep in full."""
    if isinstance(keep_k, str):
        check_choice(keep_k, ("best", "all"), "keep_k")
        return keep_k
    values = [keep_k] if isinstance(keep_k, int | np.integer) else list(keep_k)
    ks = [check_int(k, "keep_k") for k in values]
    if not ks or any(not 2 <= k <= int(max_k) for k in ks):
        raise ValueError(
            f"keep_k must be 'best', 'all' or values in 2..max_k={max_k}, got {keep_k!r}."
        )
    return sorted(set(ks))


def _store_k(adata: AnnData, res, key_added: str, k: int, params: dict, matrices: bool) -> str:
    """The shared consensus layout of one ``k`` under ``f"{key_added}_k{k}"``; its key."""
    key = f"{key_added}_k{k}"
    cc = res.cluster_consensus
    store_consensus(
        adata,
        key,
        res.membership(k),
        params={**params, "k": k},
        labels=res.labels[k],
        uns={"cluster_consensus": cc.loc[cc["k"] == k, "cluster_consensus"].to_numpy()},
    )
    adata.obsm[f"{key}_item_consensus"] = res.item_consensus[k]
    if matrices:
        adata.obsp[f"{key}_consensus"] = res.consensus[k].astype(np.float32)
    return key


def _labels_table(adata: AnnData, res) -> pd.DataFrame:
    """Every ``k``'s final labels as categorical columns ``"k2"``, ``"k3"``, ..."""
    columns = {}
    for k in res.ks:
        k = int(k)
        codes = np.asarray(res.labels[k], dtype=np.int64)
        columns[f"k{k}"] = pd.Categorical.from_codes(codes, categories=[str(c) for c in range(k)])
    return pd.DataFrame(columns, index=adata.obs_names)
