"""``tl.consensus_k``: choose ``k`` by Monti consensus statistics, without R."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp
from anndata import AnnData
from scanpy import logging as logg

from .._progress import check_progress
from .._validation import RandomState, check_key
from ..core.consensus_k import consensus_k as _consensus_k
from ._anndata import get_rep, sanitize_uns, store_consensus, warn_overwrite

#: ``store_matrices=None`` keeps the ``n x n`` consensus matrices up to this many items.
STORE_MATRICES_MAX_ITEMS = 2_000


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
    store_matrices: bool | None = None,
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
    store_matrices
        Store each ``M_k`` (float32) in ``.obsp``; default: when ``n_obs <= 2000``.
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
    ``None`` or a copy, with, for each ``k`` and ``key = f"{key_added}_k{k}"``:

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
        ``M_k`` when matrices are stored.

    and ``.uns[key_added]``: ``params``, ``k``, ``keys``, ``cdf`` (``len(k) x 100``, at
    ``cdf_x`` = 0.01 .. 1), ``area``, ``delta_area``, ``pac``, ``pac_window``,
    ``cluster_consensus`` (columns ``k``, ``cluster``, ``cluster_consensus``, ``size``),
    ``best_k`` (lowest PAC) and ``seconds``.

    Examples
    --------
    >>> import scconsensus as scc
    >>> adata = scc.datasets.iris()
    >>> scc.tl.consensus_k(adata, max_k=4, reps=20, distance="euclidean")
    >>> adata.uns["consensus_k"]["pac"].shape
    (3,)
    >>> adata.obs["consensus_k_k3"].cat.categories.tolist()
    ['0', '1', '2']
    """
    key_added = check_key(key_added)
    X = get_rep(adata, use_rep, layer=layer)
    if sp.issparse(X):
        X = X.toarray()
    n = X.shape[0]
    adata = adata.copy() if copy else adata
    if store_matrices is None:
        store_matrices = n <= STORE_MATRICES_MAX_ITEMS
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
    keys = []
    for k in res.ks:
        k = int(k)
        key = f"{key_added}_k{k}"
        keys.append(key)
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
        if store_matrices:
            adata.obsp[f"{key}_consensus"] = res.consensus[k].astype(np.float32)
    warn_overwrite(adata, uns=[key_added])
    adata.uns[key_added] = sanitize_uns(
        {"params": params, **res.to_uns(), "keys": keys, "seconds": seconds}
    )
    logg.info(
        f"    finished: lowest PAC at k = {res.best_k}",
        time=start,
        deep=f"added .obs[{keys[0]!r} .. {keys[-1]!r}] and .uns[{key_added!r}]",
    )
    return adata if copy else None
