"""From generator sets to a consensus partition (Vicente & Murua 2021, Sect. 4 and 4.1).

- :func:`voronoi_labels`: each run's Voronoi partition around its generators. The RBF
  kernel decreases with the Euclidean distance, so "nearest generator in kernel
  similarity" is the nearest generator in Euclidean distance, found by blocked GEMMs.
- :func:`maximum_spanning_forest`: every question the thresholding and merging steps
  ask of the consensus graph is answered by one maximum spanning forest of it:
  the components of ``{C_ij ≥ θ}`` are those of the forest edges with weight ``≥ θ``, and
  for any set of items the strongest consensus link leaving it is carried by a forest
  edge (cut property), so the single-linkage merge of Sect. 4 only scans forest edges.
- :func:`threshold_partitions`: one candidate per threshold ``θ ≥ τ``: connected
  components, then components smaller than ``n^a`` merged, smallest first, into the
  component holding their strongest link.
- :func:`validity_indices`: the kernel validity index KVI (eq. 11) and the similarity
  ratio SR (eq. 10) of each candidate, from a kernel matrix or from kernel features.
- :func:`consensus_membership`: per item, mean consensus with each final cluster,
  computed from the run labels in O(nRK) (``C = (1/R) Σ_r H_r H_rᵀ``), no n × n matrix.
"""

from __future__ import annotations

import numba
import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components, minimum_spanning_tree

from .._labels import relabel_by_size

__all__ = [
    "candidate_thresholds",
    "consensus_membership",
    "maximum_spanning_forest",
    "merge_small_components",
    "threshold_partitions",
    "validity_indices",
    "voronoi_labels",
]

# Entries of the n x (generators) distance block computed at once in voronoi_labels.
_VORONOI_BLOCK = 2**23


def voronoi_labels(X: np.ndarray, generators: list[np.ndarray]) -> np.ndarray:
    """``(n, R)`` int32 labels: item ``i`` in run ``r`` goes to its nearest generator.

    Label ``c`` in run ``r`` is the position of the generator in ``generators[r]``; ties go
    to the first generator. Every generator set must be non-empty.

    Parameters
    ----------
    X
        ``(n, p)`` data.
    generators
        One array of generator item indices per run.

    Returns
    -------
    numpy.ndarray
        ``(n, R)`` int32 labels.
    """
    X = np.asarray(X, dtype=np.float64)
    n = X.shape[0]
    sq = np.einsum("ij,ij->i", X, X)
    out = np.empty((n, len(generators)), dtype=np.int32)
    sizes = np.array([g.size for g in generators], dtype=np.int64)
    if np.any(sizes == 0):
        raise ValueError("Every run needs at least one generator.")
    r = 0
    while r < len(generators):
        # group runs so the distance block stays below _VORONOI_BLOCK entries
        stop = r + 1
        width = sizes[r]
        while stop < len(generators) and (width + sizes[stop]) * n <= _VORONOI_BLOCK:
            width += sizes[stop]
            stop += 1
        idx = np.concatenate(generators[r:stop])
        # ‖x‖² is common to a row, so argmin of ‖g‖² - 2 x·g is the nearest generator
        d = X @ X[idx].T
        d *= -2.0
        d += sq[idx]
        offset = 0
        for q in range(r, stop):
            out[:, q] = d[:, offset : offset + sizes[q]].argmin(axis=1)
            offset += sizes[q]
        r = stop
    return out


@numba.njit(cache=True)
def _prim_max_dense(W):  # pragma: no cover - compiled
    # Prim's algorithm on a dense similarity matrix, maximising; O(n^2), no extra n x n
    n = W.shape[0]
    in_tree = np.zeros(n, dtype=np.bool_)
    best = np.full(n, -1.0)
    parent = np.full(n, -1, dtype=np.int64)
    eu = np.empty(n - 1, dtype=np.int64)
    ev = np.empty(n - 1, dtype=np.int64)
    ew = np.empty(n - 1, dtype=np.float64)
    cur = 0
    in_tree[0] = True
    for t in range(n - 1):
        for j in range(n):
            if not in_tree[j] and W[cur, j] > best[j]:
                best[j] = W[cur, j]
                parent[j] = cur
        nxt = -1
        bw = -2.0
        for j in range(n):
            if not in_tree[j] and best[j] > bw:
                bw = best[j]
                nxt = j
        in_tree[nxt] = True
        eu[t] = parent[nxt]
        ev[t] = nxt
        ew[t] = bw
        cur = nxt
    return eu, ev, ew


def maximum_spanning_forest(
    consensus: np.ndarray | sp.spmatrix,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Edges ``(u, v, w)`` of a maximum spanning forest of a consensus graph.

    Parameters
    ----------
    consensus
        Dense ``(n, n)`` consensus values in ``[0, 1]`` (every pair is an edge), or a
        symmetric sparse matrix whose stored entries are the edges (the sparse route).
        Dense zero-consensus edges are kept out of the forest.
    """
    if sp.issparse(consensus):
        coo = sp.triu(sp.coo_matrix(consensus), k=1).tocoo()
        if coo.nnz == 0:
            empty = np.empty(0, dtype=np.int64)
            return empty, empty, np.empty(0)
        # positive weights 2 - C (zero would mean "no edge" to scipy): min tree = max consensus
        g = sp.csr_matrix((2.0 - coo.data, (coo.row, coo.col)), shape=consensus.shape)
        tree = minimum_spanning_tree(g).tocoo()
        return tree.row.astype(np.int64), tree.col.astype(np.int64), 2.0 - tree.data
    W = np.asarray(consensus, dtype=np.float64)
    if W.shape[0] < 2:
        empty = np.empty(0, dtype=np.int64)
        return empty, empty, np.empty(0)
    eu, ev, ew = _prim_max_dense(W)
    keep = ew > 0
    return eu[keep], ev[keep], ew[keep]


def candidate_thresholds(
    values: np.ndarray, tau: float = 0.6, n_thresholds: int | None = None
) -> np.ndarray:
    """Distinct observed consensus values ``≥ τ``, decreasing (Vicente & Murua 2021, Sect. 4).

    With ``n_thresholds`` a spread subset of that many values is kept (the "small subset
    of diverse thresholds" of Sect. 7), always including the largest and smallest.

    Parameters
    ----------
    values
        Observed consensus values (any order, repeats allowed).
    tau
        Smallest threshold kept.
    n_thresholds
        Keep at most this many (default: all).

    Returns
    -------
    numpy.ndarray
        The thresholds, decreasing.
    """
    values = np.unique(np.asarray(values, dtype=np.float64))
    # consensus values are ratios c/R: tolerate their floating-point representation
    theta = values[values >= tau - 1e-12][::-1]
    if n_thresholds is not None and theta.size > n_thresholds:
        pick = np.unique(np.round(np.linspace(0, theta.size - 1, int(n_thresholds))).astype(int))
        theta = theta[pick]
    return theta


@numba.njit(cache=True, inline="always")
def _find(parent, x):  # pragma: no cover - compiled
    while parent[x] != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x


@numba.njit(cache=True, inline="always")
def _half_edges(cu, cv, n_comp):  # pragma: no cover - compiled
    """Per component, a linked list of its half-edges: ``(head, tail, nxt)``.

    Half-edge ``h`` is edge ``h >> 1`` seen from ``cu`` (even ``h``) or ``cv`` (odd).
    """
    m = cu.shape[0]
    head = np.full(n_comp, -1, dtype=np.int64)
    tail = np.full(n_comp, -1, dtype=np.int64)
    nxt = np.full(2 * m, -1, dtype=np.int64)
    for h in range(2 * m):
        c = cu[h >> 1] if (h & 1) == 0 else cv[h >> 1]
        if head[c] == -1:
            head[c] = h
        else:
            nxt[tail[c]] = h
        tail[c] = h
    return head, tail, nxt


@numba.njit(cache=True, inline="always")
def _strongest_link(c, head, tail, nxt, cu, cv, cw, parent):  # pragma: no cover - compiled
    """Root of the component at the other end of ``c``'s strongest edge (-1: none).

    Edges that became internal to ``c`` are unlinked from its list on the way.
    """
    best = -1
    best_w = -np.inf
    prev = -1
    h = head[c]
    while h != -1:
        e = h >> 1
        ro = _find(parent, cv[e] if (h & 1) == 0 else cu[e])
        nh = nxt[h]
        if ro == c:
            if prev == -1:
                head[c] = nh
            else:
                nxt[prev] = nh
            if tail[c] == h:
                tail[c] = prev
        else:
            if cw[e] > best_w:
                best_w = cw[e]
                best = ro
            prev = h
        h = nh
    return best


@numba.njit(cache=True, inline="always")
def _largest_other(c, parent, size):  # pragma: no cover - compiled
    big = -1
    for q in range(parent.shape[0]):
        if parent[q] == q and q != c and (big == -1 or size[q] > size[big]):
            big = q
    return big


@numba.njit(cache=True, inline="always")
def _heap_push(heap, n, key):  # pragma: no cover - compiled
    """Push ``key`` onto the binary min-heap ``heap[:n]``; returns its new size ``n + 1``.

    A heap on an array rather than :mod:`heapq` on a list: numba took 1.5 s to compile
    ``heapq`` and its reflected list at the first DPP call; these two take half of that
    on their own, less once inlined. The keys are distinct, so any min-heap pops them in
    the same order.
    """
    i = n
    while i > 0:
        up = (i - 1) // 2
        if heap[up] <= key:
            break
        heap[i] = heap[up]
        i = up
    heap[i] = key
    return n + 1


@numba.njit(cache=True, inline="always")
def _heap_pop(heap, n):  # pragma: no cover - compiled
    """The smallest key of the min-heap ``heap[:n]`` (``n > 0``), which becomes ``heap[:n - 1]``."""
    top = heap[0]
    n -= 1
    last = heap[n]
    i = 0
    while 2 * i + 1 < n:
        c = 2 * i + 1
        if c + 1 < n and heap[c + 1] < heap[c]:
            c += 1
        if last <= heap[c]:
            break
        heap[i] = heap[c]
        i = c
    heap[i] = last
    return top


@numba.njit(cache=True)
def _merge_small(comp, n_comp, cu, cv, cw, min_size):  # pragma: no cover - compiled
    # Its helpers are inlined into it: each numba function compiled on its own costs
    # 0.15-0.4 s at the first call (2.5 s for the six), inlined a fraction of that.
    # Components are nodes, forest edges between them are cu-cv with weight cw. Each
    # component keeps a linked list of its half-edges; merging concatenates lists and
    # edges that became internal are unlinked when met.
    size = np.zeros(n_comp, dtype=np.int64)
    for i in range(comp.shape[0]):
        size[comp[i]] += 1
    parent = np.empty(n_comp, dtype=np.int64)
    for c in range(n_comp):  # np.arange: 0.3 s more to compile
        parent[c] = c
    head, tail, nxt = _half_edges(cu, cv, n_comp)
    # min-heap of size * n_comp + id: smallest component first, ties by id; each pop
    # pushes at most once, so it never holds more than the n_comp keys it starts with
    heap = np.empty(n_comp, dtype=np.int64)
    n_heap = 0
    for c in range(n_comp):
        if size[c] < min_size:
            n_heap = _heap_push(heap, n_heap, size[c] * n_comp + c)
    n_alive = n_comp
    while n_heap > 0 and n_alive > 1:
        key = _heap_pop(heap, n_heap)
        n_heap -= 1
        c = key % n_comp
        if parent[c] != c or size[c] != key // n_comp:
            continue
        best = _strongest_link(c, head, tail, nxt, cu, cv, cw, parent)
        if best == -1:
            # no consensus link at all: join the largest other component
            best = _largest_other(c, parent, size)
        parent[c] = best
        size[best] += size[c]
        if head[c] != -1:
            if head[best] == -1:
                head[best] = head[c]
            else:
                nxt[tail[best]] = head[c]
            tail[best] = tail[c]
        n_alive -= 1
        if size[best] < min_size:
            n_heap = _heap_push(heap, n_heap, size[best] * n_comp + best)
    out = np.empty(comp.shape[0], dtype=np.int64)
    for i in range(comp.shape[0]):
        out[i] = _find(parent, comp[i])
    return out


def merge_small_components(
    labels: np.ndarray,
    forest: tuple[np.ndarray, np.ndarray, np.ndarray],
    min_size: float,
) -> np.ndarray:
    """Merge every component smaller than ``min_size`` as in Vicente & Murua 2021, Sect. 4.

    Repeatedly take the smallest component below ``min_size`` and join it to the
    component holding the other end of its strongest consensus link (the largest forest
    edge leaving it, which is the strongest link in the whole graph by the cut
    property); a component with no link at all joins the largest one.

    Parameters
    ----------
    labels
        ``(n,)`` component labels.
    forest
        ``(u, v, w)`` edges of :func:`maximum_spanning_forest` of the
        consensus matrix.
    min_size
        Components smaller than this are merged (``n**a``).

    Returns
    -------
    numpy.ndarray
        Labels ``0..K-1`` ordered by decreasing cluster size.
    """
    labels = np.asarray(labels)
    _, comp = np.unique(labels, return_inverse=True)
    comp = comp.astype(np.int64)
    n_comp = int(comp.max()) + 1 if comp.size else 0
    u, v, w = forest
    cu, cv = comp[u], comp[v]
    crossing = cu != cv
    merged = _merge_small(
        comp,
        n_comp,
        cu[crossing],
        cv[crossing],
        np.asarray(w, dtype=np.float64)[crossing],
        float(min_size),
    )
    return relabel_by_size(merged)


def threshold_partitions(
    forest: tuple[np.ndarray, np.ndarray, np.ndarray],
    n_items: int,
    thresholds: np.ndarray,
    min_size: float,
) -> list[np.ndarray]:
    """One merged partition per threshold: components of ``{C_ij ≥ θ}``, small ones merged.

    Parameters
    ----------
    forest
        ``(u, v, w)`` edges of :func:`maximum_spanning_forest` of the
        consensus matrix.
    n_items
        ``n``.
    thresholds
        The thresholds ``θ``, decreasing.
    min_size
        Components smaller than this are merged (:func:`merge_small_components`).

    Returns
    -------
    list of numpy.ndarray
        One ``(n,)`` labelling per threshold.
    """
    u, v, w = forest
    out = []
    for theta in thresholds:
        keep = w >= theta - 1e-12
        g = sp.csr_matrix((np.ones(int(keep.sum())), (u[keep], v[keep])), shape=(n_items, n_items))
        _, comp = connected_components(g, directed=False)
        out.append(merge_small_components(comp, forest, min_size))
    return out


def _one_hot(labels: np.ndarray, k: int) -> sp.csr_matrix:
    n = labels.size
    return sp.csr_matrix((np.ones(n), (np.arange(n), labels)), shape=(n, k))


def _scatter_from_kernel(L: np.ndarray, labels: np.ndarray, k: int):
    H = _one_hot(labels, k)
    LH = np.asarray((H.T @ L).T)  # (n, K): Σ_{j in cluster} κ(x_i, x_j)
    S = np.asarray(H.T @ LH)  # (K, K) cluster-pair kernel sums
    sizes = np.bincount(labels, minlength=k).astype(np.float64)
    own = LH[np.arange(labels.size), labels]
    dist2 = np.diag(L) - 2.0 * own / sizes[labels] + np.diag(S)[labels] / sizes[labels] ** 2
    within = np.bincount(labels, np.sqrt(np.clip(dist2, 0.0, None)), minlength=k) / sizes
    self_term = np.diag(S) / sizes**2
    B2 = self_term[:, None] + self_term[None, :] - 2.0 * S / np.outer(sizes, sizes)
    return within, np.clip(B2, 0.0, None), sizes


def _scatter_from_features(F: np.ndarray, labels: np.ndarray, k: int):
    H = _one_hot(labels, k)
    sizes = np.bincount(labels, minlength=k).astype(np.float64)
    centres = np.asarray(H.T @ F) / sizes[:, None]
    diff = F - centres[labels]
    within = np.bincount(labels, np.sqrt(np.einsum("ij,ij->i", diff, diff)), minlength=k) / sizes
    sq = np.einsum("ij,ij->i", centres, centres)
    B2 = sq[:, None] + sq[None, :] - 2.0 * centres @ centres.T
    return within, np.clip(B2, 0.0, None), sizes


def _total_scatter(L: np.ndarray | None, F: np.ndarray | None) -> float:
    if L is not None:
        row = L.mean(axis=1)
        d2 = np.diag(L) - 2.0 * row + row.mean()
    else:
        diff = F - F.mean(axis=0)
        d2 = np.einsum("ij,ij->i", diff, diff)
    return float(np.sqrt(np.clip(d2, 0.0, None)).mean())


def validity_indices(
    partitions: list[np.ndarray],
    *,
    kernel: np.ndarray | None = None,
    features: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """KVI (eq. 11) and SR (eq. 10) of candidate partitions, from a kernel or its features.

    Give either the kernel matrix ``kernel`` (n × n) or features ``features`` (n × d) with
    ``F Fᵀ`` the kernel; both give the same numbers when ``F Fᵀ = L``.

    Notation of Vicente & Murua 2021, Sect. 4.1: ``V_S`` mean distance to the feature-space mean,
    ``W_V = Σ_k W_k / (K V_S)`` with ``W_k`` the mean distance to the cluster mean,
    ``B_V`` the size-weighted mean distance between cluster means,
    ``B̃ = (B²_max / B²_min) Σ_{k≠l} 1 / B²(k, l)`` over ordered pairs,
    ``SR = 1 − n/(n−1) · W_V / (W_V + B_V)`` and ``KVI = α W_V + B̃`` with ``α`` the
    ``B̃`` of the candidate with the most clusters. Lower KVI is better, higher SR is
    better. The paper prints ``B²`` with a cross term of weight 1; the squared distance
    between feature-space means has weight 2, which is what is computed.
    Single-cluster candidates have no between-cluster term: their indices are NaN.

    Parameters
    ----------
    partitions
        Candidate ``(n,)`` labellings.
    kernel, features
        The ``(n, n)`` kernel ``L``, or ``(n, d)`` features with ``F Fᵀ = L``; one of them.

    Returns
    -------
    dict
        Arrays with one entry per partition: ``n_clusters``, ``within`` (W_V),
        ``between`` (B_V), ``btilde``, ``sr``, ``kvi``; and the scalar ``alpha``.
    """
    if (kernel is None) == (features is None):
        raise ValueError("Give exactly one of kernel= or features=.")
    total = _total_scatter(kernel, features)
    n_part = len(partitions)
    res = {key: np.full(n_part, np.nan) for key in ("within", "between", "btilde", "sr")}
    res["n_clusters"] = np.zeros(n_part, dtype=np.int64)
    for p, labels in enumerate(partitions):
        labels = np.asarray(labels, dtype=np.int64)
        k = int(labels.max()) + 1
        res["n_clusters"][p] = k
        if k < 2:
            continue
        if kernel is not None:
            within_k, B2, sizes = _scatter_from_kernel(kernel, labels, k)
        else:
            within_k, B2, sizes = _scatter_from_features(features, labels, k)
        n = labels.size
        W = within_k.sum() / (k * total) if total > 0 else np.inf
        iu = np.triu_indices(k, 1)
        pair_w = np.outer(sizes, sizes)[iu]
        b2 = B2[iu]
        Bv = float((pair_w * np.sqrt(b2)).sum() / pair_w.sum())
        with np.errstate(divide="ignore"):
            btilde = (b2.max() / b2.min()) * 2.0 * (1.0 / b2).sum()
        res["within"][p] = W
        res["between"][p] = Bv
        res["btilde"][p] = btilde
        res["sr"][p] = 1.0 - n / (n - 1.0) * W / (W + Bv) if W + Bv > 0 else np.nan
    ks = np.where(np.isfinite(res["btilde"]), res["n_clusters"], -1)
    alpha = float(res["btilde"][int(np.argmax(ks))]) if ks.max() >= 2 else np.nan
    res["kvi"] = alpha * res["within"] + res["btilde"]
    res["alpha"] = alpha
    return res


@numba.njit(cache=True)
def _membership_sums(g, final, n_groups, k):  # pragma: no cover - compiled
    n, R = g.shape
    table = np.zeros((n_groups, k))
    for i in range(n):
        for r in range(R):
            table[g[i, r], final[i]] += 1.0
    out = np.zeros((n, k))
    for i in range(n):
        for r in range(R):
            row = g[i, r]
            for c in range(k):
                out[i, c] += table[row, c]
    return out


def consensus_membership(run_labels: np.ndarray, final: np.ndarray) -> np.ndarray:
    """``M[i, k]``: mean consensus ``C_ij`` of item ``i`` with the items ``j ≠ i`` of cluster ``k``.

    Exact, from the ``(n, R)`` run labels (no -1) without forming ``C``:
    ``C H = (1/R) Σ_r H_r (H_rᵀ H)`` with ``H`` the one-hot final labels. Rows are not
    normalised here.

    Parameters
    ----------
    run_labels
        ``(n, R)`` labels of the runs, every item labelled.
    final
        ``(n,)`` final labels ``0..K-1``.

    Returns
    -------
    numpy.ndarray
        ``(n, K)`` mean consensus values.
    """
    run_labels = np.asarray(run_labels, dtype=np.int64)
    final = np.asarray(final, dtype=np.int64)
    n, R = run_labels.shape
    k = int(final.max()) + 1
    offsets = np.concatenate([[0], np.cumsum(run_labels.max(axis=0) + 1)])
    g = run_labels + offsets[:-1]
    sums = _membership_sums(g, final, int(offsets[-1]), k)
    # an item co-clusters with itself in every run: drop that self term
    sums[np.arange(n), final] -= R
    sizes = np.bincount(final, minlength=k).astype(np.float64)
    denom = np.broadcast_to(sizes, (n, k)).copy()
    denom[np.arange(n), final] -= 1.0
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(denom > 0, sums / (R * np.where(denom > 0, denom, 1.0)), 0.0)
    return out
