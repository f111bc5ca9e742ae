"""Bioconductor's ConsensusClusterPlus on an AnnData, through rpy2.

ConsensusClusterPlus (Wilkerson & Hayes 2010, after Monti et al. 2003)
resamples items (and optionally features), clusters every subsample for
k = 2..maxK, and summarises each k by a consensus matrix, from which it
derives final labels, the consensus CDF / delta area, and (``calcICL``) item
and cluster consensus. This module runs it unchanged and stores its results
in scconsensus's shared layout, so that metrics, plots and
:func:`scconsensus.tl.compare` treat it like any of our consensus methods.
"""

from __future__ import annotations

import os
import time
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp
from anndata import AnnData
from scanpy import logging as logg

from .._progress import check_progress, show_progress
from .._validation import (
    NO_SPARSE_ADVICE,
    check_choice,
    check_correlation_rows,
    check_dense_memory,
    check_fraction,
    check_int,
    check_key,
    check_n_clusters,
)
from ..tl._anndata import get_rep, sanitize_uns, store_consensus
from ._errors import require_r_package, require_rpy2
from ._session import numpy_converter, quiet_r

CLUSTER_ALGS = ("hc", "pam", "km")
DISTANCES = (
    "pearson",
    "spearman",
    "euclidean",
    "maximum",
    "manhattan",
    "canberra",
    "binary",
    "minkowski",
)
LINKAGES = ("average", "complete", "single", "ward.D", "ward.D2", "mcquitty", "median", "centroid")

#: Seed used when ``seed=None``: R's ``seed=NULL`` seeds from the clock and is not reproducible.
DEFAULT_SEED = 0
#: PAC (Senbabaoglu et al. 2014) is CDF(upper) - CDF(lower) of the consensus CDF:
#: the fraction of pairs whose consensus lies in (lower, upper].
PAC_WINDOW = (0.1, 0.9)
#: Number of histogram bins of ConsensusClusterPlus's consensus CDF.
CDF_BINS = 100
#: ConsensusClusterPlus fails for maxK = 2 (its cluster-tracking plot indexes a k = 3
#: result, "Error in 1:nrow(m)"): it runs with at least this maxK and the extra k are
#: dropped. Each k is a cut of the same trees, so k = 2 is what maxK = 2 would give.
R_MIN_MAX_K = 3

# Runs in R. ConsensusClusterPlus draws heatmaps on the current graphics device
# even with plot=NULL (under Rscript/rpy2 that is ./Rplots.pdf in the user's
# working directory), so it draws on a null PDF device that is closed on exit.
# `title` is a temporary path that is never created (plot=NULL, writeTable=FALSE).
# It runs with maxK >= 3 (see R_MIN_MAX_K) and keeps k = 2..keepK.
# The CDF, area and delta area repeat ConsensusClusterPlus's internal CDF()
# (which only plots them): hist() on the lower triangle, 100 bins; PAC is read
# off that CDF, so it counts values on a bin edge exactly as the CDF does.
_R_RUN_CCP = """
function(d, maxK, keepK, reps, pItem, pFeature, clusterAlg, distance, innerLinkage,
         finalLinkage, seed, keepMatrices, bins, pacLower, pacUpper, verbose) {
    quiet <- function(expr) if (verbose) expr else suppressMessages(expr)
    colnames(d) <- as.character(seq_len(ncol(d)))
    grDevices::pdf(NULL)
    dev <- grDevices::dev.cur()
    on.exit(grDevices::dev.off(dev), add = TRUE)
    title <- tempfile("scconsensus_ccp")
    res <- quiet(ConsensusClusterPlus::ConsensusClusterPlus(
        d, maxK = maxK, reps = reps, pItem = pItem, pFeature = pFeature,
        clusterAlg = clusterAlg, title = title, innerLinkage = innerLinkage,
        finalLinkage = finalLinkage, distance = distance, seed = seed,
        plot = NULL, writeTable = FALSE, verbose = verbose))
    icl <- suppressMessages(ConsensusClusterPlus::calcICL(
        res, title = title, plot = NULL, writeTable = FALSE))
    ks <- 2:keepK
    breaks <- seq(0, 1, by = 1 / bins)
    cdf <- matrix(NA_real_, length(ks), bins)
    area <- pac <- numeric(length(ks))
    classes <- matrix(0L, ncol(d), length(ks))
    matrices <- list()
    for (j in seq_along(ks)) {
        m <- res[[ks[j]]]$consensusMatrix
        v <- m[lower.tri(m)]
        h <- graphics::hist(v, plot = FALSE, breaks = breaks)
        cdf[j, ] <- cumsum(h$counts) / sum(h$counts)
        area[j] <- sum(cdf[j, ] * diff(breaks))
        pac[j] <- cdf[j, round(pacUpper * bins)] - cdf[j, round(pacLower * bins)]
        classes[, j] <- as.integer(res[[ks[j]]]$consensusClass)
        if (keepMatrices) matrices[[j]] <- m
    }
    delta <- c(area[1], diff(area) / area[-length(area)])
    cc <- icl$clusterConsensus
    cc <- cc[cc[, "k"] <= keepK, , drop = FALSE]
    ic <- icl$itemConsensus
    ic <- ic[ic$k <= keepK, , drop = FALSE]
    list(classes = classes, cdf = cdf, breaks = breaks[-1], area = area, delta = delta,
         pac = pac, cc_k = as.integer(cc[, "k"]), cc_cluster = as.integer(cc[, "cluster"]),
         cc_value = as.numeric(cc[, "clusterConsensus"]),
         ic_k = as.integer(ic$k), ic_cluster = as.integer(ic$cluster),
         ic_item = match(ic$item, colnames(d)), ic_value = as.numeric(ic$itemConsensus),
         matrices = matrices,
         version = as.character(utils::packageVersion("ConsensusClusterPlus")),
         r_version = paste(R.version$major, R.version$minor, sep = "."))
}
"""


def resolve_seed(seed: int | None) -> int:
    """The integer seed handed to R: ``seed``, or :data:`DEFAULT_SEED` when ``None``."""
    if seed is None:
        return DEFAULT_SEED
    seed = check_int(seed, "seed", 0)
    if seed >= 2**31:
        raise ValueError(f"seed must be below 2**31 (R's integer range), got {seed}.")
    return seed


def _item_matrix(adata: AnnData, use_rep: str | None, layer: str | None) -> np.ndarray:
    X = get_rep(adata, use_rep, layer=layer)
    if sp.issparse(X):
        # ConsensusClusterPlus needs a base R matrix (not a dgCMatrix).
        check_dense_memory(
            X.shape[0],
            what="Densifying the input for ConsensusClusterPlus",
            advice=NO_SPARSE_ADVICE,
        )
        X = X.toarray()
    return np.asarray(X, dtype=np.float64)


def _run_r(X: np.ndarray, **kwargs: Any) -> dict[str, Any]:
    """Call ConsensusClusterPlus + calcICL on items-in-rows ``X``; plain numpy results."""
    ro = require_rpy2()
    require_r_package("ConsensusClusterPlus")
    from rpy2.rinterface_lib.embedded import RRuntimeError
    from rpy2.robjects.conversion import localconverter

    with quiet_r(show=kwargs["verbose"]), localconverter(numpy_converter()):
        fn = ro.r(_R_RUN_CCP)
        # R wants features in rows: the transpose, made contiguous so numpy2ri
        # hands R exactly these values.
        d = np.ascontiguousarray(X.T)
        try:
            out = fn(d, **kwargs)
        except RRuntimeError as err:
            raise RuntimeError(f"ConsensusClusterPlus failed in R: {str(err).strip()}") from err
        result = dict(out.items())
    # An unnamed R list arrives as an OrdDict with None keys.
    result["matrices"] = [np.asarray(m) for _, m in result["matrices"].items()]
    for name in ("version", "r_version"):
        result[name] = str(np.asarray(result[name]).ravel()[0])
    return result


def _r_progress(progress: bool | None) -> bool:
    """ConsensusClusterPlus's own progress messages (``verbose``), by the rule of bars."""
    env = os.environ.get("TQDM_DISABLE")
    return not bool(env) if env is not None else show_progress(progress)


def consensus_cluster_plus(
    adata: AnnData,
    max_k: int = 6,
    reps: int = 50,
    *,
    p_item: float = 0.8,
    p_feature: float = 1.0,
    cluster_alg: str = "hc",
    distance: str = "pearson",
    inner_linkage: str = "average",
    final_linkage: str = "average",
    seed: int | None = None,
    use_rep: str | None = None,
    layer: str | None = None,
    key_added: str = "ccp",
    store_matrices: bool = False,
    progress: bool | None = None,
    copy: bool = False,
) -> AnnData | None:
    """Run Bioconductor's ConsensusClusterPlus and ``calcICL`` on the items of ``adata``.

    The items (rows of ``adata``: cells or samples) are what is clustered; the
    matrix is handed to R transposed, features in rows, as ConsensusClusterPlus
    expects. Nothing is plotted or written to disk.

    Parameters
    ----------
    adata
        Annotated data matrix, items in rows.
    max_k
        Largest number of clusters (``maxK``); results for every k in 2..max_k.
        ConsensusClusterPlus itself fails for ``maxK = 2``, so ``max_k=2`` runs it with
        ``maxK = 3`` and keeps k = 2 (recorded as ``r_max_k`` in the params).
    reps
        Number of resamplings (``reps``).
    p_item
        Fraction of items drawn per resampling (``pItem``).
    p_feature
        Fraction of features drawn per resampling (``pFeature``).
    cluster_alg
        ``"hc"`` (hierarchical), ``"pam"`` or ``"km"`` (``clusterAlg``). ``"km"``
        works on euclidean distance only; other distances are switched to
        euclidean, as ConsensusClusterPlus does, and the params say so.
    distance
        ``"pearson"`` (1 - correlation between items), ``"spearman"``,
        ``"euclidean"``, or another :func:`stats::dist` method.
    inner_linkage, final_linkage
        :func:`stats::hclust` linkage for the subsample clusterings and for the
        final clustering of the consensus matrix.
    seed
        Seed for R's ``set.seed``. ``None`` uses ``0`` (:data:`DEFAULT_SEED`),
        because ConsensusClusterPlus's own ``seed=NULL`` seeds from the clock and
        cannot be repeated. The seed used is recorded in the params. R's
        generator is not NumPy's: the same seed gives the same result as the same
        call made in R, not as scconsensus's Python resampling.
    use_rep
        ``.obsm`` key (or ``"X"``) of the matrix to cluster; default ``X_pca`` when
        present, else ``X`` (see :func:`scconsensus.tl._anndata.get_rep`).
    layer
        Cluster ``adata.layers[layer]`` instead.
    key_added
        Prefix of every key written.
    store_matrices
        Also store the consensus matrices (dense, n x n each) in ``.obsp``.
    progress
        Show ConsensusClusterPlus's progress messages (its ``verbose``) on standard
        error. ``None`` (default): only when ``scanpy.settings.verbosity`` is
        ``'info'`` or higher; ``TQDM_DISABLE`` is respected as for the bars.
    copy
        Return a modified copy instead of writing to ``adata``.

    Returns
    -------
    ``None``, or the copy when ``copy=True``. Writes, for each k in 2..max_k,
    with ``key = f"{key_added}_k{k}"``:

    ``.obs[key]``
        ConsensusClusterPlus's ``consensusClass`` minus one, as categories
        ``"0".."k-1"`` (R's cluster c is our ``str(c - 1)``).
    ``.obsm[f"{key}_membership"]``
        ``calcICL`` item consensus of each item with each cluster, rows
        normalised to sum to one; ``.obs[f"{key}_confidence"]`` and
        ``.obs[f"{key}_entropy"]`` are derived from it.
    ``.obsm[f"{key}_item_consensus"]``
        The item consensus as ``calcICL`` reports it (not normalised).
    ``.uns[key]``
        ``params`` (with ``k``) and ``cluster_consensus`` (one value per cluster).
    ``.obsp[f"{key}_consensus"]``
        The consensus matrix, only with ``store_matrices=True``.

    and ``.uns[key_added]`` with ``params``, ``k`` (2..max_k), ``cdf`` (one row
    per k, the consensus CDF evaluated at ``cdf_x`` = 0.01, 0.02, ..., 1),
    ``area`` (area under the CDF), ``delta_area`` (ConsensusClusterPlus's
    delta area: the area for k = 2, then the relative increase from k - 1),
    ``pac`` (proportion of ambiguous clustering, Senbabaoglu et al. 2014:
    ``CDF(0.9) - CDF(0.1)``, the fraction of item pairs with consensus in
    ``pac_window`` = (0.1, 0.9]), ``best_k`` (the k of lowest PAC),
    ``cluster_consensus`` (a DataFrame with columns ``k``, ``cluster``,
    ``cluster_consensus``, ``size``) and ``keys``. This is the layout of
    :func:`scconsensus.core.consensus_k.ConsensusK.to_uns`, so plots and
    comparisons read both alike. An item alone in its cluster, for which
    ``calcICL`` reports NaN, gets item consensus 1 with its own cluster.

    Raises
    ------
    scconsensus.r.RDependencyError
        If R, rpy2 or ConsensusClusterPlus is missing (the message says how to
        install it).
    ValueError
        On unusable parameters or input.

    Examples
    --------
    >>> import scconsensus as scc
    >>> from scconsensus.r import consensus_cluster_plus
    >>> adata = scc.datasets.iris()
    >>> consensus_cluster_plus(adata, max_k=4, reps=20, seed=1)
    >>> adata.obs["ccp_k3"].value_counts().sort_index().tolist()  # doctest: +SKIP
    [50, 62, 38]
    >>> adata.uns["ccp"]["pac"].shape
    (3,)
    """
    if not isinstance(adata, AnnData):
        raise ValueError(f"Expected an AnnData object, got {type(adata).__name__}.")
    key_added = check_key(key_added)
    X = _item_matrix(adata, use_rep, layer)
    n_items = X.shape[0]
    max_k = check_n_clusters(max_k, n_items, "max_k")
    reps = check_int(reps, "reps", 1)
    p_item = check_fraction(p_item, "p_item")
    p_feature = check_fraction(p_feature, "p_feature")
    check_choice(cluster_alg, CLUSTER_ALGS, "cluster_alg")
    check_choice(distance, DISTANCES, "distance")
    check_choice(inner_linkage, LINKAGES, "inner_linkage")
    check_choice(final_linkage, LINKAGES, "final_linkage")
    r_max_k = max(max_k, R_MIN_MAX_K)
    n_drawn = int(np.floor(n_items * p_item))
    if n_drawn <= r_max_k:
        raise ValueError(
            f"p_item={p_item} draws {n_drawn} of {n_items} items per resampling, too few to "
            f"cut into {r_max_k} clusters (ConsensusClusterPlus needs maxK >= {R_MIN_MAX_K} "
            f"and more items than maxK); raise p_item or use more items."
            if max_k < R_MIN_MAX_K
            else f"p_item={p_item} draws {n_drawn} of {n_items} items per resampling, too "
            f"few to cut into max_k={max_k} clusters; raise p_item or lower max_k."
        )
    check_correlation_rows(X, distance)
    if cluster_alg == "km" and distance != "euclidean":
        logg.warning(f"cluster_alg='km' uses euclidean distance; ignoring distance={distance!r}.")
        distance = "euclidean"
    seed_used = resolve_seed(seed)
    progress = check_progress(progress)
    # ConsensusClusterPlus holds max_k count matrices, the distance and a copy.
    check_dense_memory(
        n_items, n_matrices=r_max_k + 3, what="ConsensusClusterPlus", advice=NO_SPARSE_ADVICE
    )

    adata = adata.copy() if copy else adata
    start = logg.info(f"running ConsensusClusterPlus on {n_items} items (R, {reps} resamplings)")
    t0 = time.perf_counter()
    res = _run_r(
        X,
        maxK=r_max_k,
        keepK=max_k,
        reps=reps,
        pItem=p_item,
        pFeature=p_feature,
        clusterAlg=cluster_alg,
        distance=distance,
        innerLinkage=inner_linkage,
        finalLinkage=final_linkage,
        seed=seed_used,
        keepMatrices=bool(store_matrices),
        bins=CDF_BINS,
        pacLower=PAC_WINDOW[0],
        pacUpper=PAC_WINDOW[1],
        verbose=_r_progress(progress),
    )
    seconds = time.perf_counter() - t0

    params = {
        "max_k": max_k,
        "r_max_k": r_max_k,
        "reps": reps,
        "p_item": p_item,
        "p_feature": p_feature,
        "cluster_alg": cluster_alg,
        "distance": distance,
        "inner_linkage": inner_linkage,
        "final_linkage": final_linkage,
        "seed": seed_used,
        "seed_given": seed,
        "use_rep": use_rep,
        "layer": layer,
        "store_matrices": bool(store_matrices),
        "ConsensusClusterPlus_version": res["version"],
        "R_version": res["r_version"],
    }
    ks = np.arange(2, max_k + 1)
    classes = np.asarray(res["classes"], dtype=np.int64).reshape(n_items, len(ks), order="F")
    cc = pd.DataFrame(
        {
            "k": np.asarray(res["cc_k"], dtype=np.int64),
            "cluster": np.asarray(res["cc_cluster"], dtype=np.int64) - 1,
            "cluster_consensus": np.asarray(res["cc_value"], dtype=np.float64),
        }
    )
    cc["size"] = [
        int(np.count_nonzero(classes[:, k - 2] == c + 1))
        for k, c in zip(cc["k"], cc["cluster"], strict=True)
    ]
    ic_k = np.asarray(res["ic_k"], dtype=np.int64)
    ic_cluster = np.asarray(res["ic_cluster"], dtype=np.int64) - 1
    ic_item = np.asarray(res["ic_item"], dtype=np.int64) - 1
    ic_value = np.asarray(res["ic_value"], dtype=np.float64)

    keys = []
    for j, k in enumerate(ks):
        key = f"{key_added}_k{k}"
        keys.append(key)
        item_consensus = np.zeros((n_items, k))
        sel = ic_k == k
        item_consensus[ic_item[sel], ic_cluster[sel]] = ic_value[sel]
        labels = classes[:, j] - 1
        # calcICL gives NaN (0/0) for an item alone in its cluster: it agrees with
        # itself fully, so 1 (as scconsensus.core.consensus_k does).
        own = item_consensus[np.arange(n_items), labels]
        item_consensus[np.arange(n_items), labels] = np.where(np.isnan(own), 1.0, own)
        item_consensus = np.nan_to_num(item_consensus, nan=0.0)
        this_cc = cc[cc["k"] == k].sort_values("cluster")["cluster_consensus"].to_numpy()
        store_consensus(
            adata,
            key,
            item_consensus,
            params={**params, "k": int(k)},
            labels=labels,
            uns={"cluster_consensus": this_cc},
        )
        adata.obsm[f"{key}_item_consensus"] = item_consensus
        if store_matrices:
            adata.obsp[f"{key}_consensus"] = res["matrices"][j]

    adata.uns[key_added] = sanitize_uns(
        {
            "params": params,
            "k": ks,
            "keys": keys,
            "cdf": np.asarray(res["cdf"], dtype=np.float64).reshape(len(ks), CDF_BINS),
            "cdf_x": np.asarray(res["breaks"], dtype=np.float64),
            "area": np.asarray(res["area"], dtype=np.float64),
            "delta_area": np.asarray(res["delta"], dtype=np.float64),
            "pac": np.asarray(res["pac"], dtype=np.float64),
            "pac_window": list(PAC_WINDOW),
            "best_k": int(ks[int(np.argmin(res["pac"]))]),
            "cluster_consensus": cc,
            "seconds": seconds,
        }
    )
    logg.info(
        "    finished",
        time=start,
        deep=f"added .obs[{keys[0]!r} .. {keys[-1]!r}] and .uns[{key_added!r}]",
    )
    return adata if copy else None
