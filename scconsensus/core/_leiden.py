"""Leiden partitions of an ensemble (Traag et al. 2019, igraph's C implementation): the
shared graph, each partition's subgraph, and resolutions calibrated to a number of clusters.
"""

from __future__ import annotations

import random
import threading
from typing import Any

import numpy as np
import scipy.sparse as sp

from .._validation import RandomState, seed_sequence

# igraph draws from one process-wide generator; Leiden partitions running in threads
# take turns to seed it, so a partition's labels depend only on its own seed
_IGRAPH_RNG = threading.Lock()
# Leiden sweeps per partition, as scanpy's flavor="igraph": two sweeps find the same number
# of clusters as sweeping to convergence in 40% of the time (3,000 cells)
LEIDEN_ITERATIONS = 2


def _igraph(graph: sp.spmatrix):
    """The undirected weighted igraph ``Graph`` of ``graph`` (``w_ij + w_ji``, no loops).

    Built once per ensemble: igraph takes its edges from a Python list, which costs 20x
    the Leiden run on a 2,400-item subgraph; :meth:`igraph.Graph.induced_subgraph` then
    gives each partition its items' subgraph in C.
    """
    import igraph as ig

    sym = sp.triu(graph + graph.T, k=1).tocoo()
    g = ig.Graph(n=graph.shape[0], edges=np.column_stack([sym.row, sym.col]).tolist())
    g.es["weight"] = sym.data.astype(float).tolist()
    return g


def _knn_csr(X: np.ndarray, n_neighbors: int, seed: int) -> sp.csr_matrix:
    """The ``n_neighbors``-NN graph of the rows of ``X``, unit weights."""
    from .coassociation import knn_indices

    n = X.shape[0]
    k = min(n_neighbors, n - 1)
    nn = knn_indices(X, k, random_state=seed)
    rows = np.repeat(np.arange(n), k)
    return sp.csr_matrix((np.ones(rows.size), (rows, nn.ravel())), shape=(n, n))


def _leiden(g, resolution: float, seed: int) -> np.ndarray:
    """Leiden (Traag et al. 2019) on ``g``: modularity with ``resolution`` (the
    configuration model, as :func:`scanpy.tl.leiden`), igraph's C implementation."""
    import igraph as ig

    with _IGRAPH_RNG:
        ig.set_random_number_generator(random.Random(seed))
        try:
            part = g.community_leiden(
                objective_function="modularity",
                weights="weight",
                resolution=resolution,
                n_iterations=LEIDEN_ITERATIONS,
            )
        finally:
            ig.set_random_number_generator(random)  # igraph's default, as scanpy leaves it
    return np.asarray(part.membership, dtype=np.int64)


def _partition_graph(g, items: np.ndarray, n: int, X_sub, n_neighbors: int, seed: int):
    """The graph a Leiden partition clusters: the subgraph of its items in ``g``, or,
    without ``g`` (features subsampled), the kNN graph of its own items and features."""
    if g is None:
        return _igraph(_knn_csr(X_sub, n_neighbors, seed))
    return g if items.size == n else g.induced_subgraph(items.tolist())


def _n_clusters(g, log_resolution: float, seed: int) -> int:
    return int(_leiden(g, float(np.exp(log_resolution)), seed).max()) + 1


def _resolution_for(g, k: int, seed: int, log_start: float = 0.0) -> float:
    """Log of a resolution at which Leiden finds about ``k`` clusters on ``g``.

    The number of clusters grows about as a power of the resolution, so the search steps
    on log-log scale from ``log_start``, then interpolates inside the bracket it found;
    it stops within 10% of ``k`` (exactly ``k`` below 10) or after 12 Leiden runs, at the
    closest resolution tried.
    """
    below = above = None  # (log resolution, clusters found) on each side of k
    log_r, best = log_start, (np.inf, log_start)
    for _ in range(12):
        found = _n_clusters(g, log_r, seed)
        best = min(best, (abs(np.log(found / k)), log_r))
        if abs(found - k) <= k // 10:
            break
        if found < k:
            below = (log_r, found)
        else:
            above = (log_r, found)
        if below is None or above is None:
            log_r += float(np.clip(np.log(k / found), -np.log(8), np.log(8)))
        else:
            t = np.log(k / below[1]) / np.log(above[1] / below[1])
            log_r = below[0] + float(np.clip(t, 0.2, 0.8)) * (above[0] - below[0])
    return best[1]


def _calibrated_resolution(g, k_range: tuple[int, int], n_sub: int, random_state):
    """``(lo, hi)`` resolutions at which Leiden finds ``k_range`` clusters on a subsample.

    Calibrated on the subgraph of one random subsample of ``n_sub`` items, the size
    every partition clusters.
    """
    rng = np.random.default_rng(seed_sequence(random_state).spawn(3)[2])
    n = g.vcount()
    items = np.sort(rng.choice(n, size=n_sub, replace=False))
    sub = g if n_sub == n else g.induced_subgraph(items.tolist())
    seed = int(rng.integers(2**31 - 1))
    lo = _resolution_for(sub, k_range[0], seed)
    hi = lo if k_range[1] == k_range[0] else _resolution_for(sub, k_range[1], seed, lo)
    return float(np.exp(lo)), float(np.exp(max(lo, hi)))


def _resolution_range(resolution: Any) -> tuple[float, float]:
    """``(lo, hi)`` from one resolution or a range; ``0 < lo <= hi`` or ``ValueError``."""
    try:
        if isinstance(resolution, int | float | np.number) and not isinstance(resolution, bool):
            lo = hi = float(resolution)
        else:
            lo, hi = (float(r) for r in resolution)
    except (TypeError, ValueError):
        lo = hi = float("nan")  # refused just below, with the message
    if not (0 < lo <= hi):
        raise ValueError(
            "resolution must be a positive number or a (lo, hi) range with 0 < lo <= hi, "
            f"got {resolution!r}."
        )
    return lo, hi


def _check_graph(graph: Any, n: int) -> sp.csr_matrix | None:
    """``graph`` as CSR, checked to be ``n x n`` with finite non-negative weights."""
    if graph is None:
        return None
    if not (sp.issparse(graph) or isinstance(graph, np.ndarray)) or graph.shape != (n, n):
        shape = getattr(graph, "shape", type(graph).__name__)
        raise ValueError(f"graph must be an ({n}, {n}) matrix of edge weights, got {shape}.")
    graph = sp.csr_matrix(graph, dtype=np.float64)
    if not np.all(np.isfinite(graph.data)) or (graph.data < 0).any():
        raise ValueError("graph has negative or non-finite edge weights.")
    return graph


def _knn_graph(X: np.ndarray | sp.csr_matrix, n_neighbors: int, random_state: RandomState):
    """One kNN graph of all items, shared by every Leiden partition (restricted per subsample)."""
    from .coassociation import knn_indices

    dense = X.toarray() if sp.issparse(X) else X
    n = dense.shape[0]
    k = min(n_neighbors, n - 1)
    seed = int(np.random.default_rng(seed_sequence(random_state).spawn(2)[1]).integers(2**31))
    nn = knn_indices(dense, k, random_state=seed)
    rows = np.repeat(np.arange(n), k)
    return sp.csr_matrix((np.ones(rows.size), (rows, nn.ravel())), shape=(n, n))
