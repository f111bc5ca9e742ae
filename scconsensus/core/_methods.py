"""The clustering methods of one partition that work on its dense subsample.

Hierarchical clustering, PAM and spectral clustering need the subsample's rows in
memory (all of them need every pairwise distance or a kNN graph of it); k-means, which
reads ``X`` in blocks, and Leiden, which works on a graph, live with the ensemble.
"""

from __future__ import annotations

import warnings
from contextlib import contextmanager

import numpy as np

from .._memory_guard import check_dense_memory
from ._distance import condensed_distance

# hierarchical clustering and PAM need all pairwise distances; k-means and Leiden do not
DENSE_METHOD_ADVICE = "Use method='kmeans' or 'leiden' for this many items, or a smaller subsample,"


def hierarchical(X: np.ndarray, k: int, linkage: str, distance: str) -> np.ndarray:
    """``k`` clusters cut from scipy's ``linkage`` tree of the rows of ``X``."""
    from scipy.cluster.hierarchy import fcluster
    from scipy.cluster.hierarchy import linkage as scipy_linkage

    if linkage in ("ward", "centroid") and distance == "euclidean":
        # ward/centroid are defined on euclidean observations (scipy still forms pdist)
        tree = scipy_linkage(X, method=linkage, metric="euclidean")
    else:
        tree = scipy_linkage(condensed_distance(X, distance), method=linkage)
    return fcluster(tree, t=k, criterion="maxclust") - 1


def pam(X: np.ndarray, k: int, seed: int) -> np.ndarray:
    """k-medoids (FasterPAM, Schubert & Rousseeuw 2021) on the euclidean distances."""
    import kmedoids
    from sklearn.metrics import pairwise_distances

    check_dense_memory(
        X.shape[0], itemsize=8, what="PAM (k-medoids) distance matrix", advice=DENSE_METHOD_ADVICE
    )
    result = kmedoids.fasterpam(pairwise_distances(X), k, random_state=seed, n_cpu=1)
    return np.asarray(result.labels, dtype=np.int64)


def spectral(X: np.ndarray, k: int, seed: int, n_neighbors: int) -> tuple[np.ndarray, bool]:
    """scikit-learn's spectral clustering on the kNN graph of the rows of ``X``, and
    whether that graph is connected: the ensemble says once how many were not
    (:func:`quiet_disconnected`), where scikit-learn warned once per partition."""
    from scipy.sparse.csgraph import connected_components
    from sklearn.cluster import SpectralClustering

    model = SpectralClustering(
        n_clusters=k,
        affinity="nearest_neighbors",
        n_neighbors=min(n_neighbors, X.shape[0] - 1),
        random_state=seed,
        assign_labels="cluster_qr",
    )
    labels = model.fit_predict(X)
    return labels, connected_components(model.affinity_matrix_, directed=False)[0] == 1


@contextmanager
def quiet_disconnected():
    """scikit-learn's "Graph is not fully connected" warnings silenced while the partitions
    run, and its "spectral clustering API has changed" (given whenever a subsample has as
    many items as features, as if the data were an affinity matrix: here they never are).
    Entered once, in the caller's thread: ``warnings.catch_warnings`` is not thread-safe,
    and partitions run on a thread pool."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Graph is not fully connected")
        warnings.filterwarnings("ignore", message="The spectral clustering API has changed")
        yield


def relabel(labels: np.ndarray) -> np.ndarray:
    """Labels renumbered 0..k-1 in the order of their ids (empty clusters removed)."""
    labels = np.asarray(labels)
    # bincount's table is as long as the largest id: ids of up to one per item (every
    # method's 0..k-1) go through it, others (negative, or 10**12) through np.unique
    if labels.size == 0 or labels.min() < 0 or labels.max() >= labels.size:
        return np.unique(labels, return_inverse=True)[1].astype(np.int32)
    # np.unique sorts every label: 35 ms a partition at 800,000 sampled items
    present = np.bincount(labels) > 0
    return (np.cumsum(present) - 1).astype(np.int32)[labels]


def predict_unsampled(
    X_rest: np.ndarray, X_fit: np.ndarray, fit_labels: np.ndarray, how: str
) -> np.ndarray:
    """Labels of the unsampled rows ``X_rest``: nearest centroid of the fitted clusters
    (``how="centroid"``), or of the nearest fitted item (``X_fit``, ``fit_labels``)."""
    if how == "centroid":
        k = int(fit_labels.max()) + 1
        centroids = np.vstack([X_fit[fit_labels == c].mean(axis=0) for c in range(k)])
        from sklearn.metrics import pairwise_distances_argmin

        return pairwise_distances_argmin(X_rest, centroids)
    from sklearn.neighbors import KNeighborsClassifier

    model = KNeighborsClassifier(n_neighbors=1).fit(X_fit, fit_labels)
    return model.predict(X_rest)
