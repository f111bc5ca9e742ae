"""The large-n route against the exact one, where both fit (see core/dpp/_sparse.py)."""

from __future__ import annotations

import numpy as np
import pytest

from scconsensus.core.coassociation import coassociation
from scconsensus.core.dpp import (
    DPPRoute,
    SpectralDPP,
    dpp_consensus,
    maximum_spanning_forest,
    nystrom_features,
    rbf_bandwidth,
    rbf_kernel,
    sparse_consensus,
    threshold_partitions,
    validity_indices,
)
from scconsensus.metrics import adjusted_rand_index


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    centres = rng.uniform(-6, 6, size=(5, 6))
    truth = rng.integers(0, 5, size=500)
    return centres[truth] + rng.normal(size=(500, 6)), truth


@pytest.fixture(scope="module")
def exact(data):
    X, _ = data
    return dpp_consensus(X, 100, route=DPPRoute(mode="dense"), random_state=1)


def test_sparse_consensus_values_are_exact_on_pairs(data, exact):
    X, _ = data
    C = sparse_consensus(exact.run_labels, X, n_neighbors=5, n_random=3)
    dense, _ = coassociation(exact.run_labels)
    rows, cols = C.nonzero()
    np.testing.assert_allclose(np.asarray(C[rows, cols]).ravel(), dense[rows, cols] / 100)
    assert C.nnz >= 500 * 5  # kNN pairs at least, stored symmetrically


def test_sparse_graph_partitions_match_dense_on_same_runs(data, exact):
    # same runs: only the consensus graph differs (sampled pairs vs all pairs)
    X, _ = data
    n = X.shape[0]
    thetas = np.array([0.95, 0.9, 0.8, 0.7, 0.6])
    dense, _ = coassociation(exact.run_labels)
    dense_parts = threshold_partitions(maximum_spanning_forest(dense / 100.0), n, thetas, n**0.5)
    C = sparse_consensus(exact.run_labels, X, random_state=0)
    sparse_parts = threshold_partitions(maximum_spanning_forest(C), n, thetas, n**0.5)
    agree = [adjusted_rand_index(d, s) for d, s in zip(dense_parts, sparse_parts, strict=True)]
    # where the consensus holds the clusters together the two graphs give the same
    # partition; at over-fragmented thresholds (11-12 components of ~sqrt(n) items)
    # the merge follows the strongest *sampled* link and drifts apart somewhat
    for d, s, ari in zip(dense_parts[2:], sparse_parts[2:], agree[2:], strict=True):
        assert ari > 0.99 and d.max() == s.max()
    assert min(agree[:2]) > 0.5  # measured 0.67-0.8 over seeds


def test_nystrom_dpp_close_to_exact(data):
    X, _ = data
    s2 = rbf_bandwidth(X)
    exact = SpectralDPP.from_kernel(rbf_kernel(X, sigma2=s2))
    low = SpectralDPP.from_features(nystrom_features(X, 150, sigma2=s2, random_state=0))
    assert low.expected_size == pytest.approx(exact.expected_size, rel=0.05)
    diff = np.abs(low.marginal_diagonal() - exact.marginal_diagonal())
    assert diff.max() < 0.05


def test_kvi_from_nystrom_features_close_to_kernel(data, exact):
    X, _ = data
    s2 = rbf_bandwidth(X)
    parts = [exact.labels, np.asarray(exact.labels > 0, dtype=int)]
    res_k = validity_indices(parts, kernel=rbf_kernel(X, sigma2=s2))
    res_f = validity_indices(parts, features=nystrom_features(X, 150, sigma2=s2))
    for key in ("within", "between", "sr"):
        np.testing.assert_allclose(res_f[key], res_k[key], rtol=0.05)


def test_sparse_route_end_to_end_agrees_with_exact(data, exact):
    X, truth = data
    sparse = dpp_consensus(X, 100, route=DPPRoute(mode="sparse", n_components=150), random_state=1)
    assert sparse.mode == "sparse" and exact.mode == "dense"
    assert sparse.info["rank"] <= 150
    assert sparse.labels.max() == exact.labels.max()
    assert adjusted_rand_index(sparse.labels, exact.labels) > 0.9
    assert adjusted_rand_index(truth, sparse.labels) > 0.9
    np.testing.assert_allclose(sparse.membership.sum(1), 1.0)
