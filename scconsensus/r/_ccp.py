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

from .._docs import doc_params
from .._memory_guard import NO_SPARSE_ADVICE, check_dense_memory
from .._progress import check_progress, show_progress
from .._validation import (
    check_choice,
    check_correlation_rows,
    check_correlation_subsample,
    check_fraction,
    check_int,
    check_key,
    check_n_clusters,
)
from ..core.consensus_k import lowest_pac, warn_pac_ties
from ..tl._anndata import (
    assign_all,
    check_copy,
    consensus_entries,
    get_rep,
    labels_table,
    merge_entries,
    sanitize_uns,
    warn_overwrite,
)
from ..tl._record_keys import check_record_key
from ..tl._replaced import earlier_k_entries
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


#: The parameters ConsensusClusterPlus takes (their R names in brackets), documented
#: next to :func:`_r_args`, which translates them.
_CCP_ARGS_DOC = """\
max_k
    Largest ``k`` (``maxK``). ConsensusClusterPlus fails for ``maxK = 2``, so
    ``max_k=2`` runs ``maxK = 3`` and keeps k = 2 (``r_max_k`` in the params).
reps, p_item, p_feature
    Resamplings and the fractions of items and features drawn in each.
cluster_alg
    ``"hc"``, ``"pam"`` or ``"km"`` (``clusterAlg``); ``"km"`` needs euclidean
    distance: another is switched to it, as ConsensusClusterPlus does (see params).
distance
    ``"pearson"`` (1 - correlation between items), ``"spearman"``, ``"euclidean"``,
    or another :func:`stats::dist` method.
inner_linkage, final_linkage
    :func:`stats::hclust` linkage of the subsample clusterings and of the final one.
seed
    R's ``set.seed``; ``None``: :data:`DEFAULT_SEED` (R's ``NULL`` reads the clock).
    R's generator is not NumPy's: the same seed repeats the R call, not
    :func:`scconsensus.tl.consensus_k`."""
_CCP_OUTPUT_DOC = """\
store_matrices
    Also store the consensus matrices (``keepMatrices``; dense, n x n each) in ``.obsp``.
progress
    ConsensusClusterPlus's messages (``verbose``) on standard error, by the rule of the
    progress bars (``None``: when scanpy's verbosity is ``'info'`` or higher)."""


@doc_params(ccp_args=_CCP_ARGS_DOC, ccp_output=_CCP_OUTPUT_DOC)
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

    The items (rows: cells or samples) are clustered; R gets the transpose, features in
    rows, as ConsensusClusterPlus expects. Nothing is plotted or written to disk.

    Parameters
    ----------
    {adata}
    {ccp_args}
    {use_rep}
    {layer}
    {key_added}
    {ccp_output}
    {copy}

    Returns
    -------
    {consensus_k_returns}
        Labels are ConsensusClusterPlus's ``consensusClass`` minus one.

    Raises
    ------
    scconsensus.r.RDependencyError
        If R, rpy2 or ConsensusClusterPlus is missing (the message says what to install).

    Examples
    --------
    >>> import scconsensus as scc
    >>> from scconsensus.r import consensus_cluster_plus
    >>> adata = scc.datasets.iris()
    >>> consensus_cluster_plus(adata, max_k=4, reps=20, seed=1)
    >>> adata.uns["ccp"]["pac"].shape
    (3,)
    """
    if not isinstance(adata, AnnData):
        raise ValueError(f"Expected an AnnData object, got {type(adata).__name__}.")
    key_added, copy = check_key(key_added), check_copy(adata, copy)
    X = _item_matrix(adata, use_rep, layer)
    linkages = (inner_linkage, final_linkage)
    args = _r_args(X, max_k, reps, p_item, p_feature, cluster_alg, distance, linkages, seed)
    check_record_key(adata, key_added, "consensus_k", per_k=range(2, args["keepK"] + 1))
    args.update(keepMatrices=bool(store_matrices), verbose=_r_progress(check_progress(progress)))
    adata = adata.copy() if copy else adata
    start = logg.info(f"running ConsensusClusterPlus on {X.shape[0]} items (R, {reps} resamplings)")
    t0 = time.perf_counter()
    res = _run_r(X, **args, bins=CDF_BINS, pacLower=PAC_WINDOW[0], pacUpper=PAC_WINDOW[1])
    params = _params(args, seed, use_rep, layer, res)
    keys = _store(adata, res, key_added, params, time.perf_counter() - t0)
    logg.info(
        "    finished",
        time=start,
        deep=f"added .obs[{keys[0]!r} .. {keys[-1]!r}] and .uns[{key_added!r}]",
    )
    return adata if copy else None


def _r_args(
    X: np.ndarray,
    max_k: int,
    reps: int,
    p_item: float,
    p_feature: float,
    cluster_alg: str,
    distance: str,
    linkages: tuple[str, str],
    seed: int | None,
) -> dict[str, Any]:
    """Checked arguments, named as ConsensusClusterPlus names them."""
    n_items = X.shape[0]
    max_k = check_n_clusters(max_k, n_items, "max_k")
    reps = check_int(reps, "reps", 1)
    p_item = check_fraction(p_item, "p_item")
    p_feature = check_fraction(p_feature, "p_feature")
    check_choice(cluster_alg, CLUSTER_ALGS, "cluster_alg")
    check_choice(distance, DISTANCES, "distance")
    check_choice(linkages[0], LINKAGES, "inner_linkage")
    check_choice(linkages[1], LINKAGES, "final_linkage")
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
    # ConsensusClusterPlus draws floor(pFeature * features) features
    p = X.shape[1]
    check_correlation_subsample(int(np.floor(p_feature * p)), p, distance, "p_feature")
    seed = resolve_seed(seed)
    # ConsensusClusterPlus holds max_k count matrices, the distance and a copy.
    check_dense_memory(
        n_items, n_matrices=r_max_k + 3, what="ConsensusClusterPlus", advice=NO_SPARSE_ADVICE
    )
    return {
        "maxK": r_max_k,
        "keepK": max_k,
        "reps": reps,
        "pItem": p_item,
        "pFeature": p_feature,
        "clusterAlg": cluster_alg,
        "distance": distance,
        "innerLinkage": linkages[0],
        "finalLinkage": linkages[1],
        "seed": seed,
    }


def _params(
    args: dict[str, Any], seed: int | None, use_rep: str | None, layer: str | None, res: dict
) -> dict[str, Any]:
    """The ``params`` record: the arguments as run, in Python's names, and the versions."""
    return {
        "max_k": args["keepK"],
        "r_max_k": args["maxK"],
        "reps": args["reps"],
        "p_item": args["pItem"],
        "p_feature": args["pFeature"],
        "cluster_alg": args["clusterAlg"],
        "distance": args["distance"],
        "inner_linkage": args["innerLinkage"],
        "final_linkage": args["finalLinkage"],
        "seed": args["seed"],
        "seed_given": seed,
        "use_rep": use_rep,
        "layer": layer,
        "store_matrices": args["keepMatrices"],
        "ConsensusClusterPlus_version": res["version"],
        "R_version": res["r_version"],
    }


def _cluster_consensus(res: dict, classes: np.ndarray) -> pd.DataFrame:
    """``calcICL``'s cluster consensus as the shared long table (clusters from 0, sizes)."""
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
    return cc


def _item_consensus(res: dict, k: int, labels: np.ndarray) -> np.ndarray:
    """``(n, k)`` ``calcICL`` item consensus of one ``k``."""
    n_items = labels.size
    ic_k = np.asarray(res["ic_k"], dtype=np.int64)
    sel = ic_k == k
    item_consensus = np.zeros((n_items, k))
    rows = np.asarray(res["ic_item"], dtype=np.int64)[sel] - 1
    cols = np.asarray(res["ic_cluster"], dtype=np.int64)[sel] - 1
    item_consensus[rows, cols] = np.asarray(res["ic_value"], dtype=np.float64)[sel]
    # calcICL gives NaN (0/0) for an item alone in its cluster: it agrees with
    # itself fully, so 1 (as scconsensus.core.consensus_k does).
    own = item_consensus[np.arange(n_items), labels]
    item_consensus[np.arange(n_items), labels] = np.where(np.isnan(own), 1.0, own)
    return np.nan_to_num(item_consensus, nan=0.0)


def _store(adata: AnnData, res: dict, key_added: str, params: dict, seconds: float) -> list[str]:
    """Every k's layout under ``f"{key_added}_k{k}"`` and the record; the keys written."""
    ks = np.arange(2, params["max_k"] + 1)
    n_items = adata.n_obs
    classes = np.asarray(res["classes"], dtype=np.int64).reshape(n_items, len(ks), order="F")
    cc = _cluster_consensus(res, classes)
    keys, parts = [], []
    for j, k in enumerate(ks):
        key = f"{key_added}_k{k}"
        keys.append(key)
        labels = classes[:, j] - 1
        item_consensus = _item_consensus(res, int(k), labels)
        this_cc = cc[cc["k"] == k].sort_values("cluster")["cluster_consensus"].to_numpy()
        part = consensus_entries(
            adata,
            key,
            item_consensus,
            method="consensus_cluster_plus",
            params={**params, "k": int(k)},
            labels=labels,
            uns={"cluster_consensus": this_cc},
        )
        part["obsm"][f"{key}_item_consensus"] = item_consensus
        if params["store_matrices"]:
            part["obsp"] = {f"{key}_consensus": res["matrices"][j]}
        parts.append(part)
    entries = merge_entries(earlier_k_entries(adata, key_added, keys), *parts)
    warn_overwrite(adata, obsm=[f"{key_added}_labels"], uns=[key_added])
    by_k = {int(k): classes[:, j] - 1 for j, k in enumerate(ks)}
    entries["obsm"][f"{key_added}_labels"] = labels_table(adata.obs_names, by_k)
    best_k, tied = lowest_pac(ks, res["pac"])
    entries["uns"][key_added] = sanitize_uns(
        {
            "method": "consensus_cluster_plus",
            "params": params,
            "k": ks,
            "keys": keys,
            "cdf": np.asarray(res["cdf"], dtype=np.float64).reshape(len(ks), CDF_BINS),
            "cdf_x": np.asarray(res["breaks"], dtype=np.float64),
            "area": np.asarray(res["area"], dtype=np.float64),
            "delta_area": np.asarray(res["delta"], dtype=np.float64),
            "pac": np.asarray(res["pac"], dtype=np.float64),
            "pac_window": list(PAC_WINDOW),
            "best_k": best_k,
            "best_k_ties": tied,
            "cluster_consensus": cc,
            "seconds": seconds,
        }
    )
    # every k built before the first assignment: Ctrl-C leaves adata as it was
    assign_all(adata, **entries)
    warn_pac_ties(tied, float(np.min(res["pac"])), key_added)
    return keys
