"""Monti et al.'s consensus statistics of consensus matrices, as ConsensusClusterPlus.

CDF on R's ``hist`` grid, area and delta area, PAC, the final clustering of ``1 - M_k``,
item and cluster consensus (``calcICL``), and :func:`summarize_consensus`, which gathers
them for every ``k`` into a :class:`~scconsensus.core.consensus_k.ConsensusK`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..._validation import check_choice
from .._labels import relabel_by_size
from ._result import ConsensusK

#: R's ``hist`` moves every break up by ``1e-7`` times the bin width (its ``fuzz``).
_HIST_FUZZ = 1e-7
#: Rows of a consensus matrix processed at a time in the histogram (bounds temporaries).
_BLOCK = 1024


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


#: Linkages of the final clustering of ``1 - M_k`` (CCP's ``finalLinkage``).
FINAL_LINKAGES = ("single", "average", "complete", "ward", "weighted")


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
    check_choice(linkage, FINAL_LINKAGES, "final_linkage")
    n = M.shape[0]
    if not 2 <= int(k) <= n:
        raise ValueError(f"k={k} must lie between 2 and the number of items ({n}).")
    # squareform reads the upper triangle only; M is symmetric by construction
    tree = scipy_linkage(squareform(1.0 - M, checks=False), method=linkage)
    return relabel_by_size(_cut_k(tree, int(k)))


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


def _clusters_of_k(
    M: np.ndarray, k: int, labels: Any | None, final_linkage: str
) -> tuple[np.ndarray, np.ndarray, list[dict[str, Any]]]:
    """Final labels, item consensus and cluster-consensus rows of one ``M_k``.

    ``labels`` given are renumbered by decreasing size; ``None`` cuts ``1 - M_k``.
    """
    if labels is not None:
        lab = relabel_by_size(_check_hard_labels(labels, M.shape[0])[0])
    else:
        lab = consensus_labels(M, k, final_linkage)
    ic = item_consensus(M, lab)
    sizes = np.bincount(lab, minlength=ic.shape[1])
    cc = cluster_consensus(M, lab)
    rows = [
        {"k": k, "cluster": c, "cluster_consensus": float(cc[c]), "size": int(sizes[c])}
        for c in range(ic.shape[1])
    ]
    return lab, ic, rows


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
        n = M.shape[0] if n is None else n
        if M.shape[0] != n:
            raise ValueError(f"consensus matrix for k={k} has {M.shape[0]} items, not {n}.")
        x, F = consensus_cdf(M, n_bins)
        cdfs.append(F)
        pacs.append(pac(M, lo_hi))
        given = labels[k] if labels is not None and k in labels else None
        out_labels[int(k)], ics[int(k)], k_rows = _clusters_of_k(M, int(k), given, final_linkage)
        rows.extend(k_rows)
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
