"""DPP samplers against the closed-form DPP marginals (Kulesza & Taskar 2012, Sect. 2).

For ``Y ~ DPP(L)`` with ``K = L (L + I)⁻¹``: ``P(i ∈ Y) = K_ii``,
``P(i, j ∈ Y) = K_ii K_jj − K_ij²`` and ``|Y|`` is a sum of independent
``Bernoulli(λ / (1 + λ))``. Every check allows 4.5 Monte Carlo standard errors.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.spatial.distance import pdist

from scconsensus.core.dpp import (
    SpectralDPP,
    nystrom_features,
    rbf_bandwidth,
    rbf_kernel,
    sample_projection_dpp,
    sample_uniform,
)

N_DRAWS = 6000
Z = 4.5


def _small_kernel(n=10, seed=0):
    X = np.random.default_rng(seed).normal(size=(n, 3))
    # scaled so that E|Y| is a few items and several eigenvalues matter
    return 3.0 * rbf_kernel(X, sigma2=rbf_bandwidth(X) / 4)


def _draws(dpp, n_draws, seed):
    rng = np.random.default_rng(seed)
    ind = np.zeros((n_draws, dpp.n_items), dtype=bool)
    for t in range(n_draws):
        ind[t, dpp.sample(rng)] = True
    return ind


def _poisson_binomial(p):
    pmf = np.array([1.0])
    for q in p:
        pmf = np.convolve(pmf, [1 - q, q])
    return pmf


def _assert_within_mc(emp, exact, n_draws, what):
    se = np.sqrt(np.clip(exact * (1 - exact), 1e-12, None) / n_draws)
    worst = np.max(np.abs(emp - exact) / se)
    assert worst < Z, f"{what}: deviation of {worst:.2f} standard errors"


@pytest.fixture(scope="module")
def exact_draws():
    L = _small_kernel()
    dpp = SpectralDPP.from_kernel(L)
    return L, dpp, _draws(dpp, N_DRAWS, seed=1)


def test_marginal_kernel_closed_form(exact_draws):
    L, dpp, _ = exact_draws
    K = L @ np.linalg.inv(L + np.eye(L.shape[0]))
    np.testing.assert_allclose(dpp.marginal_diagonal(), np.diag(K), atol=1e-10)
    assert 2.0 < dpp.expected_size < 6.0


def test_inclusion_probabilities_match_diag_of_marginal_kernel(exact_draws):
    L, _, ind = exact_draws
    K = L @ np.linalg.inv(L + np.eye(L.shape[0]))
    _assert_within_mc(ind.mean(axis=0), np.diag(K), N_DRAWS, "P(i in Y)")


def test_pair_inclusion_is_determinantal(exact_draws):
    # the repulsion a DPP is chosen for: P(i, j) = K_ii K_jj - K_ij^2 < K_ii K_jj
    L, _, ind = exact_draws
    K = L @ np.linalg.inv(L + np.eye(L.shape[0]))
    iu = np.triu_indices(L.shape[0], 1)
    exact = (np.outer(np.diag(K), np.diag(K)) - K**2)[iu]
    emp = (ind.T.astype(float) @ ind.astype(float) / N_DRAWS)[iu]
    _assert_within_mc(emp, exact, N_DRAWS, "P(i, j in Y)")


def test_subset_sizes_are_sum_of_bernoullis(exact_draws):
    L, _, ind = exact_draws
    lam = np.linalg.eigvalsh(L)
    p = lam / (1 + lam)
    sizes = ind.sum(axis=1)
    pmf = _poisson_binomial(p)
    emp = np.bincount(sizes, minlength=pmf.size) / N_DRAWS
    _assert_within_mc(emp, pmf, N_DRAWS, "P(|Y| = k)")
    se_mean = np.sqrt((p * (1 - p)).sum() / N_DRAWS)
    assert abs(sizes.mean() - p.sum()) < Z * se_mean


@pytest.mark.slow
def test_lowrank_sampler_equals_exact_at_full_rank(exact_draws):
    L, exact, _ = exact_draws
    # an exact factor L = F Fᵀ (full rank): the dual sampler must be the same process
    lam, V = np.linalg.eigh(L)
    F = V * np.sqrt(np.clip(lam, 0, None))
    dual = SpectralDPP.from_features(F)
    np.testing.assert_allclose(np.sort(dual.eigvals), np.sort(exact.eigvals), rtol=1e-8)
    np.testing.assert_allclose(dual.marginal_diagonal(), exact.marginal_diagonal(), atol=1e-10)
    ind = _draws(dual, N_DRAWS, seed=2)
    _assert_within_mc(ind.mean(axis=0), exact.marginal_diagonal(), N_DRAWS, "dual P(i in Y)")
    pmf = _poisson_binomial(exact.inclusion)
    emp = np.bincount(ind.sum(axis=1), minlength=pmf.size) / N_DRAWS
    _assert_within_mc(emp, pmf, N_DRAWS, "dual P(|Y| = k)")


def test_lowrank_sampler_on_rank_deficient_kernel():
    # L = F Fᵀ of rank 3 on 12 items: dual (3 x 3) and primal (12 x 12) samplers agree
    F = np.random.default_rng(3).normal(size=(12, 3))
    L = F @ F.T
    exact = SpectralDPP.from_kernel(L)
    dual = SpectralDPP.from_features(F)
    assert dual.eigvecs.shape == (12, 3)
    np.testing.assert_allclose(dual.marginal_diagonal(), exact.marginal_diagonal(), atol=1e-8)
    ind = _draws(dual, N_DRAWS, seed=4)
    assert ind.sum(axis=1).max() <= 3
    _assert_within_mc(ind.mean(axis=0), exact.marginal_diagonal(), N_DRAWS, "rank-3 P(i in Y)")


def test_nystrom_with_all_landmarks_reproduces_kernel():
    X = np.random.default_rng(5).normal(size=(40, 4))
    s2 = rbf_bandwidth(X)
    L = rbf_kernel(X, sigma2=s2, s=1.5)
    F = nystrom_features(X, 40, sigma2=s2, s=1.5)
    np.testing.assert_allclose(F @ F.T, L, atol=1e-6)
    F10 = nystrom_features(X, 10, sigma2=s2, s=1.5, random_state=0)
    assert F10.shape[1] <= 10
    # fewer landmarks: an approximation from below in the PSD order (diag <= 1)
    assert np.all(np.einsum("ij,ij->i", F10, F10) <= 1 + 1e-8)


def test_projection_dpp_draws_exactly_rank_items():
    V, _ = np.linalg.qr(np.random.default_rng(6).normal(size=(30, 5)))
    rng = np.random.default_rng(0)
    for _ in range(50):
        Y = sample_projection_dpp(V, rng)
        assert Y.size == 5 and np.unique(Y).size == 5


def test_sampler_reproducible():
    dpp = SpectralDPP.from_kernel(_small_kernel())
    a = [dpp.sample(np.random.default_rng(7)).tolist() for _ in range(3)]
    b = [dpp.sample(np.random.default_rng(7)).tolist() for _ in range(3)]
    assert a == b


def test_uniform_sampler_sizes():
    rng = np.random.default_rng(0)
    sizes = [sample_uniform(50, 6, rng).size for _ in range(3000)]
    counts = np.bincount(sizes, minlength=7)[1:]
    assert counts.sum() == 3000 and np.all(counts > 0) and len(counts) == 6
    # k uniform in 1..6: each about 500
    assert np.all(np.abs(counts - 500) < Z * np.sqrt(3000 * (1 / 6) * (5 / 6)))
    Y = sample_uniform(50, 6, rng)
    assert np.unique(Y).size == Y.size


def test_bandwidth_closed_form_matches_pairwise_mean():
    X = np.random.default_rng(8).normal(size=(60, 5)) * [1, 2, 3, 4, 5]
    brute = np.mean(pdist(X, "sqeuclidean"))
    assert rbf_bandwidth(X) == pytest.approx(brute, rel=1e-12)
    assert rbf_bandwidth(sp.csr_matrix(X)) == pytest.approx(brute, rel=1e-10)


def test_rbf_kernel_eq9():
    X = np.random.default_rng(9).normal(size=(15, 2))
    s2 = rbf_bandwidth(X)
    L = rbf_kernel(X, sigma2=s2, s=2.0)
    d2 = ((X[:, None] - X[None]) ** 2).sum(-1)
    np.testing.assert_allclose(L, np.exp(-d2 / (2 * 2.0 * s2)), atol=1e-12)


def test_bad_kernels_raise():
    with pytest.raises(ValueError, match="square"):
        SpectralDPP.from_kernel(np.ones((3, 4)))
    with pytest.raises(ValueError, match="symmetric"):
        SpectralDPP.from_kernel(np.array([[1.0, 0.5], [0.2, 1.0]]))
    with pytest.raises(ValueError, match="positive semidefinite"):
        SpectralDPP.from_kernel(np.array([[1.0, 2.0], [2.0, 1.0]]))
    with pytest.raises(ValueError, match="NaN"):
        SpectralDPP.from_kernel(np.array([[1.0, np.nan], [np.nan, 1.0]]))
    with pytest.raises(ValueError, match="identical"):
        rbf_kernel(np.ones((4, 2)), sigma2=rbf_bandwidth(np.ones((4, 2))))
    with pytest.raises(ValueError, match="s "):
        rbf_kernel(np.eye(3), sigma2=1.0, s=-1.0)


def test_sample_many_conditions_on_nonempty():
    weak = SpectralDPP.from_kernel(0.01 * np.eye(5))  # P(Y = ∅) = 1.01**-5 ≈ 0.95
    rngs = [np.random.default_rng(s) for s in range(40)]
    draws = weak.sample_many(rngs, nonempty=True)
    assert all(d.size >= 1 for d in draws)
    plain = weak.sample_many([np.random.default_rng(s) for s in range(40)])
    assert sum(d.size == 0 for d in plain) > 20
    with pytest.raises(ValueError, match="empty sets"):
        SpectralDPP.from_kernel(np.zeros((4, 4))).sample_many(
            [np.random.default_rng(0)], nonempty=True
        )


def test_with_expected_size_is_the_scaled_kernel():
    L = _small_kernel()
    base = SpectralDPP.from_kernel(L)
    scaled = base.with_expected_size(2.0)
    assert scaled.expected_size == pytest.approx(2.0, abs=1e-9)
    cL = scaled.scale * L
    K = cL @ np.linalg.inv(cL + np.eye(L.shape[0]))
    np.testing.assert_allclose(scaled.marginal_diagonal(), np.diag(K), atol=1e-9)
    ind = _draws(scaled, 3000, seed=11)
    se = np.sqrt((scaled.inclusion * (1 - scaled.inclusion)).sum() / 3000)
    assert abs(ind.sum(axis=1).mean() - 2.0) < Z * se
    with pytest.raises(ValueError, match="expected_size"):
        base.with_expected_size(10.0)
