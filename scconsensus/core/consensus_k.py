"""Choosing ``k`` from resampling: Monti et al.'s consensus statistics, in Python.

For every ``k = 2..K_max`` an ensemble of ``reps`` partitions of item subsamples (all with
``k`` clusters) gives a consensus matrix ``M_k = C_k / N`` (co-clustered over co-sampled
counts). From ``M_k`` follow the statistics ConsensusClusterPlus (Wilkerson & Hayes 2010)
reports, computed here exactly as it does:

- consensus CDF: the empirical CDF of the lower-triangle entries of ``M_k`` on a grid of
  ``n_bins`` bins (R's ``hist`` with right-closed bins and its ``1e-7`` bin fuzz);
- area under the CDF (right Riemann sum on that grid) and delta area (``A_2``, then the
  relative change ``(A_k - A_{k-1}) / A_{k-1}``);
- PAC, the proportion of ambiguous clustering ``F(0.9) - F(0.1)`` (Senbabaoglu et al. 2014);
- the final clustering for ``k``: average-linkage hierarchical clustering of ``1 - M_k``
  cut into ``k`` clusters;
- item consensus (mean of ``M_k`` between an item and the other members of a cluster) and
  cluster consensus (mean of ``M_k`` over pairs inside a cluster), as ``calcICL``.

For hierarchical clustering the protocol is ConsensusClusterPlus's: one tree per subsample,
cut at every ``k``; the distance matrix is computed once when all features are used. Other
methods of :func:`scconsensus.core.ensemble.generate_ensemble` run one ensemble per ``k`` on
the same item subsamples (the same seeds).

:func:`summarize_consensus` takes consensus matrices from anywhere (ConsensusClusterPlus's
included) so both sources share one definition of every statistic and one ``.uns`` layout
(:meth:`ConsensusK.to_uns`).
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from joblib import Parallel, delayed

from .._progress import progress_bar
from .._validation import (
    NO_SPARSE_ADVICE,
    RandomState,
    check_choice,
    check_correlation_rows,
    check_dense_memory,
    check_fraction,
    check_int,
    check_kwargs,
    check_labels,
    check_matrix,
    check_n_jobs,
    seed_sequence,
    too_many_clusters,
)
from .coassociation import coassociation
from .ensemble import DISTANCES, LINKAGES, METHODS, generate_ensemble

__all__ = [
    "ConsensusK",
    "cdf_area",
    "cluster_consensus",
    "consensus_cdf",
    "consensus_k",
    "consensus_labels",
    "delta_area",
    "item_consensus",
    "pac",
    "resample_partitions",
    "summarize_consensus",
]

#: R's ``hist`` moves every break up by ``1e-7`` times the bin width (its ``fuzz``).
_HIST_FUZZ = 1e-7
#: Rows of a consensus matrix processed at a time in the histogram (bounds temporaries).
_BLOCK = 1024
#: Methods with a fixed number of clusters (Leiden and kmeans_split choose their own).
FIXED_K_METHODS = tuple(m for m in METHODS if m not in ("leiden", "kmeans_split"))


@dataclass
class ConsensusK:
    """Consensus statistics for ``k = 2..K_max``.

    Attributes
    ----------
    ks
        The ``k`` values, ascending.
    labels
        ``{k: (n,) int labels 0..k-1}``: hierarchical clustering of ``1 - M_k``, clusters
        numbered by decreasing size.
    cdf_x
        ``(n_bins,)`` right edges of the CDF grid (``0.01 .. 1`` for 100 bins).
    cdf
        ``(len(ks), n_bins)`` consensus CDF of each ``k`` at ``cdf_x``.
    area, delta_area, pac
        ``(len(ks),)`` area under the CDF, its relative change (CCP's delta area; the
        first entry is the area itself), and the proportion of ambiguous clustering.
    item_consensus
        ``{k: (n, k)}`` mean consensus of each item with the members of each cluster.
    cluster_consensus
        Long table with columns ``k``, ``cluster``, ``cluster_consensus``, ``size``.
    consensus
        ``{k: (n, n) M_k}`` when kept, else empty.
    partitions
        ``{k: (n, reps) int32}`` the resampled partitions when kept, else empty.
    params
        Parameters of the computation.
    """

    ks: np.ndarray
    labels: dict[int, np.ndarray]
    cdf_x: np.ndarray
    cdf: np.ndarray
    area: np.ndarray
    delta_area: np.ndarray
    pac: np.ndarray
    item_consensus: dict[int, np.ndarray]
    cluster_consensus: pd.DataFrame
    consensus: dict[int, np.ndarray] = field(default_factory=dict)
    partitions: dict[int, np.ndarray] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def best_k(self) -> int:
        """The ``k`` with the lowest PAC (ties: the smallest ``k``)."""
        return int(self.ks[int(np.argmin(self.pac))])

    def membership(self, k: int) -> np.ndarray:
        """``(n, k)`` item consensus rescaled to rows on the simplex.

        An item alone in its cluster has no within-cluster pair; its own-cluster
        entry is taken as 1 (ConsensusClusterPlus reports NaN there).
        """
        ic = np.array(self.item_consensus[int(k)], dtype=np.float64)
        ic = np.where(np.isnan(ic), 1.0, ic)
        total = ic.sum(axis=1, keepdims=True)
        k_ = ic.shape[1]
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(total > 0, ic / np.where(total > 0, total, 1.0), 1.0 / k_)

    def summary(self) -> pd.DataFrame:
        """One row per ``k``: area, delta area, PAC and the smallest cluster consensus."""
        cc = self.cluster_consensus.groupby("k")["cluster_consensus"]
        return pd.DataFrame(
            {
                "area": self.area,
                "delta_area": self.delta_area,
                "pac": self.pac,
                "min_cluster_consensus": cc.min().reindex(self.ks).to_numpy(),
                "mean_cluster_consensus": cc.mean().reindex(self.ks).to_numpy(),
            },
            index=pd.Index(self.ks, name="k"),
        )

    def to_uns(self) -> dict[str, Any]:
        """The summary part of the shared ``.uns[key]`` record.

        Same keys and shapes as :func:`scconsensus.r.consensus_cluster_plus` writes:
        ``k``, ``cdf`` (``len(k) x n_bins``), ``cdf_x``, ``area``, ``delta_area``, ``pac``,
        ``pac_window`` and ``cluster_consensus`` (columns ``k``, ``cluster``,
        ``cluster_consensus``, plus ``size``); ``best_k`` (lowest PAC) is extra.
        """
        return {
            "k": np.asarray(self.ks, dtype=np.int64),
            "cdf": np.asarray(self.cdf, dtype=np.float64),
            "cdf_x": np.asarray(self.cdf_x, dtype=np.float64),
            "area": np.asarray(self.area, dtype=np.float64),
            "delta_area": np.asarray(self.delta_area, dtype=np.float64),
            "pac": np.asarray(self.pac, dtype=np.float64),
            "pac_window": [float(v) for v in self.params.get("pac_window", (0.1, 0.9))],
            "cluster_consensus": self.cluster_consensus.reset_index(drop=True),
            "best_k": self.best_k,
        }


# --------------------------------------------------------------------------- statistics


def _check_consensus_matrix(M: Any, name: str = "consensus matrix") -> np.ndarray:
    M = np.asarray(M)
    if M.ndim != 2 or M.shape[0] != M.shape[1]:
        raise ValueError(f"{name} must be a square (n x n) matrix, got shape {M.shape}.")
    if M.shape[0] < 2:
        raise ValueError(f"{name} has {M.shape[0]} item(s); at least 2 are needed.")
    if M.dtype.kind not in "biuf":
        raise ValueError(f"{name} must be numeric, got dtype {M.dtype}.")
    M = M.astype(np.float64, copy=False)
    if not np.all(np.isfinite(M)):
        raise ValueError(f"{name} contains NaN or infinite values; entries must lie in [0, 1].")
    if M.min() < -1e-12 or M.max() > 1 + 1e-12:
        raise ValueError(
            f"{name} has entries outside [0, 1] (min {M.min():.3g}, max {M.max():.3g}); "
            "pass the consensus C/N, not the counts C."
        )
    return M


def _lower_counts(M: np.ndarray, n_bins: int) -> np.ndarray:
    """Counts of the lower-triangle entries in R's right-closed bins ``1..n_bins``.

    The full matrix is binned in row blocks (no ``n²/2`` index arrays), the diagonal is
    removed and the symmetric double count halved.
    """
    n = M.shape[0]
    counts = np.zeros(n_bins + 1, dtype=np.int64)
    for start in range(0, n, _BLOCK):
        block = M[start : start + _BLOCK]
        idx = np.ceil(block * n_bins - _HIST_FUZZ).astype(np.int64)
        np.clip(idx, 1, n_bins, out=idx)
        counts += np.bincount(idx.ravel(), minlength=n_bins + 1)
    diag = np.clip(np.ceil(np.diagonal(M) * n_bins - _HIST_FUZZ).astype(np.int64), 1, n_bins)
    counts -= np.bincount(diag, minlength=n_bins + 1)
    return counts // 2


def consensus_cdf(M: np.ndarray, n_bins: int = 100) -> tuple[np.ndarray, np.ndarray]:
    """Empirical CDF of the off-diagonal consensus values, as ConsensusClusterPlus's ``CDF``.

    Parameters
    ----------
    M
        ``(n, n)`` symmetric consensus matrix with entries in ``[0, 1]``.
    n_bins
        Number of equal bins on ``[0, 1]`` (CCP's ``breaks``, default 100).

    Returns
    -------
    ``(x, F)``: the right bin edges ``1/n_bins .. 1`` and the fraction of pairs ``i < j``
    with ``M_ij <= x`` at each.

    Examples
    --------
    >>> import numpy as np
    >>> from scconsensus.core.consensus_k import consensus_cdf
    >>> M = np.array([[1, 1, 0], [1, 1, 0], [0, 0, 1]], dtype=float)
    >>> x, F = consensus_cdf(M, n_bins=4)
    >>> x.tolist(), F.round(3).tolist()
    ([0.25, 0.5, 0.75, 1.0], [0.667, 0.667, 0.667, 1.0])
    """
    M = _check_consensus_matrix(M)
    n_bins = int(n_bins)
    if n_bins < 2:
        raise ValueError(f"n_bins must be at least 2, got {n_bins}.")
    counts = _lower_counts(M, n_bins)[1:]
    F = np.cumsum(counts) / counts.sum()
    x = np.arange(1, n_bins + 1) / n_bins
    return x, F


def cdf_area(cdf: np.ndarray) -> np.ndarray:
    """Area under consensus CDFs on an equal grid (CCP's right Riemann sum).

    ``cdf`` is ``(n_bins,)`` or ``(n_k, n_bins)`` values at the right bin edges.
    """
    cdf = np.asarray(cdf, dtype=np.float64)
    return cdf.sum(axis=-1) / cdf.shape[-1]


def delta_area(area: Sequence[float]) -> np.ndarray:
    """ConsensusClusterPlus's delta area: ``A_first``, then ``(A_k - A_{k-1}) / A_{k-1}``."""
    area = np.asarray(area, dtype=np.float64)
    out = np.empty_like(area)
    if area.size:
        out[0] = area[0]
        with np.errstate(divide="ignore", invalid="ignore"):
            out[1:] = (area[1:] - area[:-1]) / area[:-1]
    return out


def _check_window(window: Sequence[float]) -> tuple[float, float]:
    try:
        lo, hi = (float(w) for w in window)
    except (TypeError, ValueError) as err:
        raise ValueError(f"pac_window must be a (lo, hi) pair, got {window!r}.") from err
    if not (0.0 <= lo < hi <= 1.0):
        raise ValueError(f"pac_window must satisfy 0 <= lo < hi <= 1, got {window!r}.")
    return lo, hi


def pac(M: np.ndarray, window: Sequence[float] = (0.1, 0.9)) -> float:
    """Proportion of ambiguous clustering: the fraction of pairs with ``lo < M_ij <= hi``.

    That is ``F(hi) - F(lo)`` of the consensus CDF (Senbabaoglu et al., Sci. Rep. 2014);
    ``0`` for a consensus of only zeros and ones. Bin edges get R's ``hist`` fuzz so values
    on an edge count as in :func:`consensus_cdf`.

    Examples
    --------
    >>> import numpy as np
    >>> from scconsensus.core.consensus_k import pac
    >>> M = np.full((4, 4), 0.5) + 0.5 * np.eye(4)
    >>> pac(M)
    1.0
    """
    M = _check_consensus_matrix(M)
    lo, hi = _check_window(window)
    n = M.shape[0]
    eps = _HIST_FUZZ * 0.01
    count = 0
    for start in range(0, n, _BLOCK):
        block = M[start : start + _BLOCK]
        count += int(np.count_nonzero((block > lo + eps) & (block <= hi + eps)))
    d = np.diagonal(M)
    count -= int(np.count_nonzero((d > lo + eps) & (d <= hi + eps)))
    return count / 2 / (n * (n - 1) / 2)


def _check_hard_labels(labels: Any, n: int) -> tuple[np.ndarray, int]:
    labels = np.asarray(labels)
    if labels.shape != (n,):
        raise ValueError(f"labels must have shape ({n},), got {labels.shape}.")
    _, codes = np.unique(labels, return_inverse=True)
    return codes.astype(np.int64), int(codes.max()) + 1


def item_consensus(M: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Mean consensus of each item with each cluster (CCP's ``calcICL`` item consensus).

    ``IC[i, c]`` averages ``M[i, j]`` over the members ``j != i`` of cluster ``c``; NaN for
    an item alone in its cluster (no pair to average).

    Examples
    --------
    >>> import numpy as np
    >>> from scconsensus.core.consensus_k import item_consensus
    >>> M = np.array([[1, .8, .1], [.8, 1, .3], [.1, .3, 1]])
    >>> item_consensus(M, [0, 0, 1]).round(2).tolist()
    [[0.8, 0.1], [0.8, 0.3], [0.2, nan]]
    """
    M = _check_consensus_matrix(M)
    codes, k = _check_hard_labels(labels, M.shape[0])
    H = np.zeros((codes.size, k))
    H[np.arange(codes.size), codes] = 1.0
    sums = M @ H
    sizes = H.sum(axis=0)
    own = np.arange(codes.size), codes
    sums[own] -= np.diagonal(M)
    denom = np.broadcast_to(sizes, sums.shape).copy()
    denom[own] -= 1.0
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denom > 0, sums / np.where(denom > 0, denom, 1.0), np.nan)


def cluster_consensus(M: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Mean consensus over pairs inside each cluster (NaN for singletons), as ``calcICL``."""
    M = _check_consensus_matrix(M)
    codes, k = _check_hard_labels(labels, M.shape[0])
    ic = item_consensus(M, codes)
    out = np.full(k, np.nan)
    for c in range(k):
        members = codes == c
        if members.sum() > 1:
            out[c] = ic[members, c].mean()
    return out


def _size_order(labels: np.ndarray) -> np.ndarray:
    """Labels renumbered by decreasing cluster size (ties: first appearance)."""
    uniq, first, codes, sizes = np.unique(
        labels, return_index=True, return_inverse=True, return_counts=True
    )
    order = np.lexsort((first, -sizes))
    rank = np.empty(uniq.size, dtype=np.int64)
    rank[order] = np.arange(uniq.size)
    return rank[codes].astype(np.int32)


def consensus_labels(M: np.ndarray, k: int, linkage: str = "average") -> np.ndarray:
    """Cut the hierarchical clustering of ``1 - M`` into ``k`` clusters (CCP's final step).

    Always ``k`` clusters, also where merge heights tie (as R's ``cutree``); numbered by
    decreasing size.

    Examples
    --------
    >>> import numpy as np
    >>> from scconsensus.core.consensus_k import consensus_labels
    >>> M = np.kron(np.eye(2), np.ones((3, 3)))  # two perfect blocks
    >>> np.bincount(consensus_labels(M, 3)).tolist()
    [3, 2, 1]
    """
    from scipy.cluster.hierarchy import linkage as scipy_linkage
    from scipy.spatial.distance import squareform

    M = _check_consensus_matrix(M)
    check_choice(linkage, ("single", "average", "complete", "ward", "weighted"), "final_linkage")
    n = M.shape[0]
    if not 2 <= int(k) <= n:
        raise ValueError(f"k={k} must lie between 2 and the number of items ({n}).")
    # squareform reads the upper triangle only; M is symmetric by construction
    tree = scipy_linkage(squareform(1.0 - M, checks=False), method=linkage)
    return _size_order(_cut_k(tree, int(k)))


def _cut_k(tree: np.ndarray, k: int) -> np.ndarray:
    """Leaf labels after the first ``n - k`` merges of a linkage: exactly ``k`` clusters.

    R's ``cutree(k)`` semantics, also where merge heights tie (``fcluster``'s maxclust
    then returns fewer); ``scipy.cluster.hierarchy.cut_tree`` does the same in O(n²)
    Python, this in O(n log n) with pointer jumping.
    """
    n = tree.shape[0] + 1
    parent = np.arange(2 * n - 1)
    merges = tree[: n - k, :2].astype(np.int64)
    new = n + np.arange(n - k)
    parent[merges[:, 0]] = new
    parent[merges[:, 1]] = new
    root = parent[:n]
    while True:
        nxt = parent[root]
        if np.array_equal(nxt, root):
            break
        root = nxt
        parent = parent[parent]
    return np.unique(root, return_inverse=True)[1]


def summarize_consensus(
    matrices: Mapping[int, np.ndarray],
    labels: Mapping[int, np.ndarray] | None = None,
    *,
    n_bins: int = 100,
    pac_window: Sequence[float] = (0.1, 0.9),
    final_linkage: str = "average",
    keep_matrices: bool = False,
) -> ConsensusK:
    """All consensus statistics from consensus matrices ``{k: M_k}``.

    Parameters
    ----------
    matrices
        ``{k: (n, n) consensus matrix}`` (e.g. ConsensusClusterPlus's
        ``consensusMatrix`` per ``k``).
    labels
        ``{k: (n,) labels}``; when omitted, :func:`consensus_labels` of each ``M_k``.
        Labels given here are renumbered by decreasing cluster size.
    n_bins
        CDF grid size.
    pac_window
        ``(lo, hi)`` of PAC.
    final_linkage
        Linkage of the final clustering of ``1 - M_k`` when ``labels`` is omitted.
    keep_matrices
        Keep the matrices in :attr:`ConsensusK.consensus`.

    Returns
    -------
    :class:`ConsensusK`; ``.to_uns()`` is the shared ``.uns`` record.

    Examples
    --------
    >>> import numpy as np
    >>> from scconsensus.core.consensus_k import summarize_consensus
    >>> block = np.kron(np.eye(2), np.ones((5, 5)))
    >>> res = summarize_consensus({2: block, 3: 0.5 * block + 0.5 * np.eye(10)})
    >>> res.pac.tolist(), res.best_k
    ([0.0, 0.4444444444444444], 2)
    """
    if not matrices:
        raise ValueError("matrices is empty; give at least one {k: consensus matrix}.")
    ks = np.array(sorted(int(k) for k in matrices), dtype=np.int64)
    lo_hi = _check_window(pac_window)
    cdfs, pacs, out_labels, ics, rows, kept = [], [], {}, {}, [], {}
    n = None
    for k in ks:
        M = _check_consensus_matrix(matrices[k], f"consensus matrix for k={k}")
        if n is None:
            n = M.shape[0]
        elif M.shape[0] != n:
            raise ValueError(f"consensus matrix for k={k} has {M.shape[0]} items, not {n}.")
        x, F = consensus_cdf(M, n_bins)
        cdfs.append(F)
        pacs.append(pac(M, lo_hi))
        if labels is not None and k in labels:
            lab = _size_order(_check_hard_labels(labels[k], n)[0])
        else:
            lab = consensus_labels(M, int(k), final_linkage)
        out_labels[int(k)] = lab
        ic = item_consensus(M, lab)
        ics[int(k)] = ic
        sizes = np.bincount(lab, minlength=ic.shape[1])
        cc = cluster_consensus(M, lab)
        rows.extend(
            {"k": int(k), "cluster": c, "cluster_consensus": float(cc[c]), "size": int(sizes[c])}
            for c in range(ic.shape[1])
        )
        if keep_matrices:
            kept[int(k)] = M
    cdf = np.vstack(cdfs)
    area = cdf_area(cdf)
    params = {
        "n_bins": int(n_bins),
        "pac_window": [float(v) for v in lo_hi],
        "final_linkage": final_linkage,
    }
    return ConsensusK(
        ks=ks,
        labels=out_labels,
        cdf_x=x,
        cdf=cdf,
        area=area,
        delta_area=delta_area(area),
        pac=np.asarray(pacs),
        item_consensus=ics,
        cluster_consensus=pd.DataFrame(rows, columns=["k", "cluster", "cluster_consensus", "size"]),
        consensus=kept,
        params=params,
    )


# --------------------------------------------------------------------------- resampling


def _condensed_distance(X: np.ndarray, distance: str) -> np.ndarray:
    """Condensed item distances, exactly as :func:`generate_ensemble`'s ``hc`` computes them."""
    from scipy.spatial.distance import pdist

    from .ensemble import _distance_input

    Xd, metric = _distance_input(X, distance)
    d = pdist(Xd, metric=metric)
    # constant rows give NaN correlation distances: treat them as maximally distant
    np.nan_to_num(d, copy=False, nan=2.0 if metric == "correlation" else np.nanmax(d))
    return d


def _square_distance(X: np.ndarray, distance: str) -> np.ndarray | None:
    """Correlation / cosine distances of all items with one BLAS product (``None``: other).

    ``pdist``'s correlation loops over pairs in C without BLAS (1.5 s for 1,000 x 2,000);
    this is the same ``1 - r`` up to rounding. Constant items get distance 2 to all others,
    as in :func:`_condensed_distance`.
    """
    if distance not in ("pearson", "spearman", "cosine"):
        return None
    if distance == "spearman":
        from scipy.stats import rankdata

        X = rankdata(X, axis=1)
    Z = np.array(X, dtype=np.float64)
    if distance != "cosine":
        Z -= Z.mean(axis=1, keepdims=True)
    norm = np.linalg.norm(Z, axis=1)
    flat = norm == 0
    if distance == "cosine" and flat.any():
        return None  # pdist's NaN convention for all-zero items differs: use it
    Z /= np.where(flat, 1.0, norm)[:, None]
    D = Z @ Z.T
    np.subtract(1.0, D, out=D)
    np.clip(D, 0.0, 2.0, out=D)
    D[flat, :] = 2.0
    D[:, flat] = 2.0
    np.fill_diagonal(D, 0.0)
    return D


def _hc_rep(
    X: np.ndarray,
    D: np.ndarray | None,
    seed: np.random.SeedSequence,
    ks: np.ndarray,
    n_sub: int,
    n_feat: int,
    linkage: str,
    distance: str,
) -> np.ndarray:
    """One subsample, one tree, cut at every ``k``: ``(n, len(ks))`` labels (-1 unsampled).

    The subsample draws replay :func:`generate_ensemble`'s, so the cut at ``k`` is the
    partition its ``"hc"`` method gives for the same seed and ``k`` (distances equal up to
    rounding when ``D`` comes from :func:`_square_distance`).
    """
    from scipy.cluster.hierarchy import fcluster
    from scipy.cluster.hierarchy import linkage as scipy_linkage
    from scipy.spatial.distance import squareform

    rng = np.random.default_rng(seed)
    n, p = X.shape
    items = np.sort(rng.choice(n, size=n_sub, replace=False)) if n_sub < n else np.arange(n)
    feats = np.sort(rng.choice(p, size=n_feat, replace=False)) if n_feat < p else None
    if linkage in ("ward", "centroid") and distance == "euclidean":
        X_sub = X[items] if feats is None else X[items][:, feats]
        tree = scipy_linkage(X_sub, method=linkage, metric="euclidean")
    else:
        if D is not None:
            d = squareform(D[np.ix_(items, items)], checks=False)
        else:
            d = _condensed_distance(X[items][:, feats], distance)
        tree = scipy_linkage(d, method=linkage)
    out = np.full((n, ks.size), -1, dtype=np.int32)
    for j, k in enumerate(ks):
        out[items, j] = fcluster(tree, t=int(k), criterion="maxclust") - 1
    return out


#: Arguments of :func:`generate_ensemble` that consensus-k does not set itself.
ENSEMBLE_EXTRAS = ("predict_unsampled", "resolution", "n_neighbors", "client")


def _check_ensemble_kwargs(kwargs: Mapping[str, Any], method: str) -> None:
    """Refuse ``**ensemble_kwargs`` that would be ignored, so typos cannot pass silently."""
    if not kwargs:
        return
    own = [name for name in inspect.signature(consensus_k).parameters if name != "X"]
    check_kwargs(kwargs, ENSEMBLE_EXTRAS, "consensus_k", suggest=own)
    if method.startswith("hc"):
        raise ValueError(
            f"{sorted(kwargs)} go to generate_ensemble, which method={method!r} does not use "
            "(trees are built directly); drop them or choose another method, e.g. 'kmeans'."
        )


def resample_partitions(
    X: np.ndarray,
    max_k: int = 6,
    reps: int = 50,
    *,
    p_item: float = 0.8,
    p_feature: float = 1.0,
    method: str = "hc",
    distance: str = "pearson",
    linkage: str = "average",
    random_state: RandomState = 0,
    n_jobs: int | None = 1,
    progress: bool | None = None,
    **ensemble_kwargs: Any,
) -> dict[int, np.ndarray]:
    """The resampling protocol of ConsensusClusterPlus: ``{k: (n, reps) int32 labels}``.

    Every ``k`` sees the same ``reps`` item subsamples. Hierarchical methods build one tree
    per subsample and cut it at every ``k`` (as CCP does); other methods run
    :func:`generate_ensemble` once per ``k`` with the same seed.
    """
    X = check_matrix(X)
    if not isinstance(X, np.ndarray):
        X = X.toarray()
    n, p = X.shape
    check_choice(method, FIXED_K_METHODS, "method")
    check_choice(distance, DISTANCES, "distance")
    check_choice(linkage, LINKAGES, "linkage")
    p_item = check_fraction(p_item, "p_item")
    p_feature = check_fraction(p_feature, "p_feature")
    reps = check_int(reps, "reps", 1)
    n_sub = max(2, round(p_item * n))
    n_feat = max(1, round(p_feature * p))
    max_k = check_int(max_k, "max_k", 2)
    if max_k >= n_sub:
        raise ValueError(
            too_many_clusters(
                "max_k", max_k, n_sub, f"items per subsample (p_item={p_item} of {n})"
            )
        )
    n_jobs = check_n_jobs(n_jobs)
    _check_ensemble_kwargs(ensemble_kwargs, method)
    ks = np.arange(2, max_k + 1)
    if method.startswith("hc"):
        link = method[3:] or linkage
        check_correlation_rows(X, distance)
        check_dense_memory(
            n, itemsize=8, what="Consensus-k distance matrix", advice=NO_SPARSE_ADVICE
        )
        D = None
        if n_feat == p and not (link in ("ward", "centroid") and distance == "euclidean"):
            from scipy.spatial.distance import squareform

            # one distance matrix for all subsamples, as CCP does with pFeature = 1
            D = _square_distance(X, distance)
            if D is None:
                D = squareform(_condensed_distance(X, distance))
        seeds = seed_sequence(random_state).spawn(reps)
        run = delayed(_hc_rep)
        tasks = (run(X, D, s, ks, n_sub, n_feat, link, distance) for s in seeds)
        results = Parallel(n_jobs=n_jobs, return_as="generator")(tasks)
        stacked = np.empty((ks.size, n, reps), dtype=np.int32)
        for r, cuts in enumerate(
            progress_bar(results, progress=progress, total=reps, desc="consensus_k", unit="rep")
        ):
            stacked[:, :, r] = cuts.T
        return {int(k): np.ascontiguousarray(stacked[j]) for j, k in enumerate(ks)}
    out = {}
    for k in progress_bar(ks, progress=progress, desc="consensus_k", unit="k"):
        ens = generate_ensemble(
            X,
            reps,
            method=method,
            k=int(k),
            subsample=p_item,
            feature_subsample=p_feature,
            linkage=linkage,
            distance=distance,
            random_state=random_state,
            n_jobs=n_jobs,
            progress=False,
            **ensemble_kwargs,
        )
        out[int(k)] = ens.labels
    return out


class _LazyConsensus(Mapping):
    """``{k: M_k}`` computed on access, so only one dense ``M_k`` lives at a time."""

    def __init__(self, parts: Mapping[int, np.ndarray], N: np.ndarray):
        self._parts = parts
        self._N = N

    def __getitem__(self, k: int) -> np.ndarray:
        C, _ = coassociation(check_labels(self._parts[int(k)]), mode="dense")
        # N (co-sampling) is the same for every k: the subsamples are shared
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self._N > 0, C / np.where(self._N > 0, self._N, 1), 0.0)

    def __iter__(self):
        return iter(self._parts)

    def __len__(self) -> int:
        return len(self._parts)


def consensus_k(
    X: np.ndarray,
    max_k: int = 6,
    reps: int = 50,
    *,
    p_item: float = 0.8,
    p_feature: float = 1.0,
    method: str = "hc",
    distance: str = "pearson",
    linkage: str = "average",
    final_linkage: str = "average",
    n_bins: int = 100,
    pac_window: Sequence[float] = (0.1, 0.9),
    random_state: RandomState = 0,
    n_jobs: int | None = 1,
    keep_matrices: bool = False,
    keep_partitions: bool = False,
    progress: bool | None = None,
    **ensemble_kwargs: Any,
) -> ConsensusK:
    """Monti consensus clustering for ``k = 2..max_k``: CDF, delta area, PAC, consensus.

    Parameters
    ----------
    X
        ``(n_items, n_features)`` data; items in rows (transpose of R's layout).
    max_k
        Largest ``k`` (CCP's ``maxK``).
    reps
        Subsamples (CCP's ``reps``).
    p_item, p_feature
        Fractions of items and features per subsample (``pItem``, ``pFeature``).
    method
        ``"hc"`` (CCP's default, with ``linkage``/``distance``) or any fixed-``k`` method
        of :func:`~scconsensus.core.ensemble.generate_ensemble` (``"kmeans"``, ``"pam"``,
        ``"spectral"``, ``"hc_<linkage>"``).
    distance, linkage
        Item distance and inner linkage for hierarchical clustering (CCP's ``distance``
        and ``innerLinkage``; ``"pearson"`` is ``1 - r`` between items).
    final_linkage
        Linkage of the clustering of ``1 - M_k`` (CCP's ``finalLinkage``).
    n_bins, pac_window
        CDF grid and PAC window.
    random_state
        Seed; results do not depend on ``n_jobs``.
    n_jobs
        Parallel workers over subsamples.
    keep_matrices, keep_partitions
        Keep the consensus matrices / resampled partitions in the result.
    progress
        Show progress bars (``None``: when scanpy's verbosity is ``'info'`` or higher).
    **ensemble_kwargs
        Passed to :func:`generate_ensemble` for non-hierarchical methods.

    Returns
    -------
    :class:`ConsensusK`.

    Examples
    --------
    >>> import numpy as np
    >>> from scconsensus.core.consensus_k import consensus_k
    >>> rng = np.random.default_rng(0)
    >>> X = np.vstack([rng.normal(m, 1, size=(20, 30)) for m in (-3, 0, 3)])
    >>> X += rng.normal(0, 3, size=(1, 30))  # a shared profile, so Pearson sees the groups
    >>> res = consensus_k(X, max_k=4, reps=20, progress=False)
    >>> int(res.ks[0]), len(res.pac)
    (2, 3)
    """
    X = check_matrix(X)
    n = X.shape[0]
    # C, N (int32), M and the condensed 1 - M (float64) of one k at a time
    max_k = check_int(max_k, "max_k", 2)
    check_dense_memory(
        n, n_matrices=4, itemsize=8, what="Consensus-k matrices", advice=NO_SPARSE_ADVICE
    )
    if keep_matrices:
        check_dense_memory(
            n,
            n_matrices=max_k + 2,
            itemsize=8,
            what="Kept consensus-k matrices",
            advice=NO_SPARSE_ADVICE,
        )
    parts = resample_partitions(
        X,
        max_k,
        reps,
        p_item=p_item,
        p_feature=p_feature,
        method=method,
        distance=distance,
        linkage=linkage,
        random_state=random_state,
        n_jobs=n_jobs,
        progress=progress,
        **ensemble_kwargs,
    )
    _, N = coassociation(parts[int(min(parts))], mode="dense")
    matrices = _LazyConsensus(parts, N)
    result = summarize_consensus(
        matrices,
        n_bins=n_bins,
        pac_window=pac_window,
        final_linkage=final_linkage,
        keep_matrices=keep_matrices,
    )
    never = int(np.count_nonzero(np.diagonal(N) == 0))
    result.params.update(
        {
            "max_k": int(max_k),
            "reps": int(reps),
            "p_item": float(p_item),
            "p_feature": float(p_feature),
            "method": method,
            "distance": distance,
            "linkage": linkage,
            "random_state": random_state if isinstance(random_state, int) else str(random_state),
            "n_never_sampled": never,
        }
    )
    if keep_partitions:
        result.partitions = parts
    return result
