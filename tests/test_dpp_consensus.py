"""Consensus stage of determinantal consensus clustering (Vicente & Murua 2021, Sect. 4, 4.1)."""

from __future__ import annotations

import numpy as np
import pytest
from _helpers import block_matrix
from scipy.sparse.csgraph import minimum_spanning_tree

from scconsensus.core.dpp import (
    DPPCut,
    DPPRoute,
    DPPSampling,
    candidate_thresholds,
    consensus_membership,
    dpp_consensus,
    maximum_spanning_forest,
    merge_small_components,
    rbf_bandwidth,
    rbf_kernel,
    threshold_partitions,
    validity_indices,
    voronoi_labels,
)
from scconsensus.metrics import adjusted_rand_index


def _merge_brute(C, labels, min_size):
    """Vicente & Murua (2021), Sect. 4 merging written directly on the dense consensus matrix."""
    lab = np.unique(labels, return_inverse=True)[1]
    while True:
        ids, sizes = np.unique(lab, return_counts=True)
        small = sizes < min_size
        if not small.any() or ids.size == 1:
            return lab
        pick = ids[small][np.lexsort((ids[small], sizes[small]))[0]]
        inside = lab == pick
        sub = C[np.ix_(inside, ~inside)]
        j = np.flatnonzero(~inside)[np.unravel_index(np.argmax(sub), sub.shape)[1]]
        lab[inside] = lab[j]


def _same_partition(a, b):
    return adjusted_rand_index(a, b) == pytest.approx(1.0)


def test_voronoi_is_nearest_generator_and_max_kernel():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 3))
    gens = [np.sort(rng.choice(80, size=k, replace=False)) for k in (1, 3, 7, 2)]
    lab = voronoi_labels(X, gens)
    L = rbf_kernel(X, sigma2=rbf_bandwidth(X))
    for r, g in enumerate(gens):
        d2 = ((X[:, None] - X[g][None]) ** 2).sum(-1)
        np.testing.assert_array_equal(lab[:, r], d2.argmin(1))
        np.testing.assert_array_equal(lab[:, r], L[:, g].argmax(1))
        # each generator sits in its own cell
        np.testing.assert_array_equal(lab[g, r], np.arange(g.size))
    with pytest.raises(ValueError, match="at least one generator"):
        voronoi_labels(X, [np.array([], dtype=int)])


@pytest.mark.parametrize("sparse_input", [False, True])
def test_maximum_spanning_forest_weight(sparse_input):
    import scipy.sparse as sp

    rng = np.random.default_rng(1)
    C = rng.random((30, 30))
    C = np.triu(C, 1)
    C = C + C.T
    np.fill_diagonal(C, 1.0)
    u, v, w = maximum_spanning_forest(sp.csr_matrix(C) if sparse_input else C)
    assert u.size == 29
    np.testing.assert_allclose(w, C[u, v])
    ref = minimum_spanning_tree(np.where(C > 0, 2.0 - C, 0.0) * (1 - np.eye(30)))
    assert w.sum() == pytest.approx((2.0 * 29) - ref.sum())


def test_candidate_thresholds():
    vals = np.array([0.1, 0.6, 0.6, 0.75, 1.0, 0.59999999999999])
    np.testing.assert_allclose(candidate_thresholds(vals, 0.6), [1.0, 0.75, 0.6, 0.6])
    assert candidate_thresholds(vals, 0.99).tolist() == [1.0]
    assert candidate_thresholds(np.linspace(0.6, 1, 41), 0.6, n_thresholds=5).size == 5


def test_thresholds_and_merge_on_constructed_matrix():
    # A (10 items, 0.9), B (10 items, 0.8), tiny C (3 items, 0.95); links A-C 0.5, B-C 0.3
    between = [[0, 0.1, 0.5], [0.1, 0, 0.3], [0.5, 0.3, 0]]
    C, truth = block_matrix([10, 10, 3], [0.9, 0.8, 0.95], between)
    forest = maximum_spanning_forest(C)
    parts = threshold_partitions(forest, 23, np.array([0.95, 0.9, 0.8, 0.5]), min_size=5)
    # θ = 0.95: only C holds together; everything small merges along the strongest links
    # θ = 0.9: A whole, B in singletons that re-join along their 0.8 links, C joins A (0.5)
    expected = np.where(truth == 2, 0, truth)
    for p in parts[:3]:
        assert _same_partition(p, expected)
    # θ = 0.5 joins A and C by a consensus link, B stays apart
    assert _same_partition(parts[3], expected)
    # without merging the tiny block survives at θ = 0.9
    (raw,) = threshold_partitions(forest, 23, np.array([0.9]), min_size=1)
    assert np.unique(raw).size == 1 + 10 + 1
    # components are sorted by size: label 0 is the largest
    assert np.bincount(parts[1])[0] == 13


def test_merge_takes_smallest_component_first():
    # X(2) links Y(3) at 0.5 and Big1 at 0.4; Y links Big2 at 0.45. Smallest first:
    # X joins Y (size 5 >= 4) and Y never moves. Taking Y first would give {Big1, Big2+X+Y}.
    sizes = [2, 3, 10, 10]
    between = np.zeros((4, 4))
    between[0, 1] = between[1, 0] = 0.5
    between[0, 2] = between[2, 0] = 0.4
    between[1, 3] = between[3, 1] = 0.45
    C, truth = block_matrix(sizes, [1.0] * 4, between)
    merged = merge_small_components(truth, maximum_spanning_forest(C), 4)
    assert _same_partition(merged, np.where(truth == 0, 1, truth))


@pytest.mark.parametrize("seed", range(5))
def test_merge_matches_brute_force(seed):
    rng = np.random.default_rng(seed)
    n = 40
    C = rng.random((n, n))
    C = np.triu(C, 1)
    C = C + C.T
    np.fill_diagonal(C, 1.0)
    labels = rng.integers(0, 15, size=n)
    fast = merge_small_components(labels, maximum_spanning_forest(C), 6)
    brute = _merge_brute(C, labels, 6)
    assert _same_partition(fast, brute)
    assert np.bincount(fast).min() >= 6


def test_validity_indices_against_paper_formulas():
    rng = np.random.default_rng(2)
    X = np.r_[rng.normal(0, 1, (12, 2)), rng.normal(5, 1, (9, 2)), rng.normal([0, 6], 1, (7, 2))]
    L = rbf_kernel(X, sigma2=rbf_bandwidth(X))
    truth = np.repeat([0, 1, 2], [12, 9, 7])
    cands = [truth, (truth > 0).astype(int), np.zeros(28, dtype=int)]
    res = validity_indices(cands, kernel=L)

    # direct transcription of Vicente & Murua (2021), Sect. 4.1 on the kernel (cross term weight 2)
    n = 28
    V_S = np.mean(np.sqrt(np.diag(L) - 2 * L.mean(1) + L.mean()))

    def direct(lab):
        K = lab.max() + 1
        J = [np.flatnonzero(lab == k) for k in range(K)]
        W = sum(
            np.mean(np.sqrt(1 - 2 * L[np.ix_(j, j)].mean(1) + L[np.ix_(j, j)].mean())) for j in J
        ) / (K * V_S)
        B2 = np.array(
            [
                [
                    L[np.ix_(a, a)].mean() - 2 * L[np.ix_(a, b)].mean() + L[np.ix_(b, b)].mean()
                    for b in J
                ]
                for a in J
            ]
        )
        off = ~np.eye(K, dtype=bool)
        nn = np.array([[a.size * b.size for b in J] for a in J])
        iu = np.triu_indices(K, 1)
        Bv = (nn[iu] * np.sqrt(B2[iu])).sum() / nn[iu].sum()
        bt = B2[off].max() / B2[off].min() * (1 / B2[off]).sum()
        return W, Bv, bt, 1 - n / (n - 1) * W / (W + Bv)

    for p in range(2):
        W, Bv, bt, sr = direct(cands[p])
        assert res["within"][p] == pytest.approx(W)
        assert res["between"][p] == pytest.approx(Bv)
        assert res["btilde"][p] == pytest.approx(bt)
        assert res["sr"][p] == pytest.approx(sr)
    # α is B̃ of the candidate with most clusters; single-cluster candidates have no index
    assert res["alpha"] == pytest.approx(res["btilde"][0])
    assert res["kvi"][1] == pytest.approx(res["alpha"] * res["within"][1] + res["btilde"][1])
    assert np.isnan(res["kvi"][2])
    # SR prefers the true 3-cluster partition to the 2-cluster one
    assert np.nanargmax(res["sr"]) == 0
    # features with F Fᵀ = L give the same numbers
    lam, V = np.linalg.eigh(L)
    F = V * np.sqrt(np.clip(lam, 0, None))
    res_f = validity_indices(cands, features=F)
    for key in ("within", "between", "btilde", "sr", "kvi"):
        np.testing.assert_allclose(res_f[key], res[key], rtol=1e-6)
    with pytest.raises(ValueError, match="exactly one"):
        validity_indices(cands)


def test_consensus_membership_matches_dense():
    rng = np.random.default_rng(3)
    run_labels = rng.integers(0, 4, size=(25, 30)).astype(np.int32)
    final = np.repeat([0, 1, 2], [10, 9, 6])
    C = (run_labels[:, None, :] == run_labels[None, :, :]).mean(-1)
    M = consensus_membership(run_labels, final)
    for i in range(25):
        for k in range(3):
            j = np.flatnonzero((final == k) & (np.arange(25) != i))
            assert M[i, k] == pytest.approx(C[i, j].mean())


@pytest.fixture(scope="module")
def blobs_4d():
    """Three well-separated 4-d Gaussian groups of 60, 50 and 40 items: (X, truth)."""
    rng = np.random.default_rng(4)
    centres = np.array([[0, 0, 0, 0], [6, 0, 0, 0], [0, 6, 0, 0]])
    truth = np.repeat([0, 1, 2], [60, 50, 40])
    return centres[truth] + rng.normal(size=(150, 4)), truth


@pytest.mark.parametrize("sampler", ["dpp", "uniform", "kmeans++"])
def test_recovers_separated_blobs(blobs_4d, sampler):
    X, truth = blobs_4d
    res = dpp_consensus(X, 60, sampling=DPPSampling(sampler=sampler), random_state=0)
    assert adjusted_rand_index(truth, res.labels) > 0.95
    # paper invariants: every threshold ≥ τ, every final cluster ≥ n^a, rows on the simplex
    assert res.candidates["threshold"].min() >= 0.6
    assert np.bincount(res.labels).min() >= np.sqrt(150)
    np.testing.assert_allclose(res.membership.sum(1), 1.0)
    assert res.candidates["chosen"].sum() == 1
    chosen = res.candidates[res.candidates["chosen"]]
    assert chosen["kvi"].iloc[0] == res.candidates["kvi"].min()
    assert res.run_labels.shape == (150, 60)


def test_reproducible_and_seed_dependent(blobs_4d):
    X, _ = blobs_4d
    a = dpp_consensus(X, 30, random_state=5)
    b = dpp_consensus(X, 30, random_state=5)
    c = dpp_consensus(X, 30, random_state=6)
    np.testing.assert_array_equal(a.run_labels, b.run_labels)
    np.testing.assert_array_equal(a.labels, b.labels)
    assert not np.array_equal(a.run_labels, c.run_labels)
    # a run's draw depends on its own stream only: fewer runs give the same first runs
    d = dpp_consensus(X, 10, random_state=5)
    np.testing.assert_array_equal(d.run_labels, a.run_labels[:, :10])


def test_bad_input_raises(blobs_4d):
    X, _ = blobs_4d
    with pytest.raises(ValueError, match="NaN"):
        dpp_consensus(np.where(np.eye(150, 4) > 0, np.nan, X), 5)
    with pytest.raises(ValueError, match="n_runs"):
        dpp_consensus(X, 0)
    with pytest.raises(ValueError, match="a must be"):
        dpp_consensus(X, 5, cut=DPPCut(a=1.5))
    with pytest.raises(ValueError, match="tau"):
        dpp_consensus(X, 5, cut=DPPCut(tau=2.0))
    with pytest.raises(ValueError, match="sampler"):
        dpp_consensus(X, 5, sampling=DPPSampling(sampler="random"))
    with pytest.raises(ValueError, match="mode"):
        dpp_consensus(X, 5, route=DPPRoute(mode="huge"))
    with pytest.raises(ValueError, match="k_max"):
        dpp_consensus(X, 5, sampling=DPPSampling(sampler="uniform", k_max=1000))
    with pytest.raises(ValueError, match="identical"):
        dpp_consensus(np.ones((20, 3)), 5)
    with pytest.raises(ValueError, match="at least 3"):
        dpp_consensus(X[:2], 5)
    with pytest.raises(ValueError, match="2-D"):
        dpp_consensus(X[:, 0], 5)


def test_expected_size_controls_generators(blobs_4d):
    X, truth = blobs_4d
    res = dpp_consensus(X, 60, sampling=DPPSampling(expected_size=4.0), random_state=0)
    assert res.info["expected_size"] == pytest.approx(4.0)
    # conditioned on a non-empty draw; P(empty) is negligible at this size
    assert abs(res.run_sizes.mean() - 4.0) < 4.5 * np.sqrt(4.0 / 60)
    assert adjusted_rand_index(truth, res.labels) > 0.95
    with pytest.raises(ValueError, match="sampler='dpp' only"):
        dpp_consensus(X, 5, sampling=DPPSampling(sampler="uniform", expected_size=4.0))
    with pytest.raises(ValueError, match="expected_size"):
        dpp_consensus(X, 5, sampling=DPPSampling(expected_size=0.0))


def _planted(n: int, seed: int = 0, n_groups: int = 5, dim: int = 30, spread: float = 3.0):
    """Well-separated Gaussian groups in ``dim`` dimensions, the same centres for every n."""
    centres = np.random.default_rng(99).normal(scale=spread, size=(n_groups, dim))
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, n_groups, n)
    return centres[truth] + rng.normal(size=(n, dim)), truth


@pytest.mark.parametrize(("mode", "sizes"), [("sparse", (500, 4000)), ("dense", (400, 1600))])
def test_default_run_size_does_not_grow_with_n(mode, sizes):
    # the same distribution at two sizes: the default DPP draws about as many generators
    # per run at both, the paper's kernel (reference_size=None) draws many more at the larger
    small, large = (_planted(n)[0] for n in sizes)
    kw = {"route": DPPRoute(mode=mode, n_components=200), "random_state": 0}
    ours, paper = (
        [
            dpp_consensus(X, 2, sampling=DPPSampling(reference_size=m), **kw).info["expected_size"]
            for X in (small, large)
        ]
        for m in (200, None)
    )
    assert 1 / 1.3 < ours[1] / ours[0] < 1.3
    assert paper[1] / paper[0] > 2.0
    assert ours[1] < paper[1] / 3


def test_default_finds_the_planted_groups_where_the_paper_kernel_over_splits():
    X, truth = _planted(1000)
    res = dpp_consensus(X, 50, random_state=0)
    assert int(res.labels.max()) + 1 == 5
    assert adjusted_rand_index(truth, res.labels) > 0.99
    assert res.info["kernel_scale"] == pytest.approx(200 / 1000)
    assert "kernel validity index" in res.info["reason"]
    # the paper's kernel on 1,000 items in 30 dimensions: ~40 generators per run
    paper = dpp_consensus(X, 50, sampling=DPPSampling(reference_size=None), random_state=0)
    assert int(paper.labels.max()) + 1 > 8
    assert "kernel_scale" not in paper.info


def test_small_data_keep_the_paper_kernel(blobs_4d):
    X, _ = blobs_4d
    a = dpp_consensus(X, 20, random_state=1)
    b = dpp_consensus(X, 20, sampling=DPPSampling(reference_size=None), random_state=1)
    np.testing.assert_array_equal(a.run_labels, b.run_labels)
    assert "kernel_scale" not in a.info
    with pytest.raises(ValueError, match="reference_size"):
        dpp_consensus(X, 5, sampling=DPPSampling(reference_size=0))


@pytest.mark.parametrize("k", [2, 3, 4])
def test_n_clusters_returns_that_many_clusters(blobs_4d, k):
    X, truth = blobs_4d
    res = dpp_consensus(X, 40, n_clusters=k, random_state=0)
    assert int(res.labels.max()) + 1 == k
    assert np.bincount(res.labels).min() >= np.sqrt(150)  # no empty (or tiny) cluster
    assert res.candidates["chosen"].sum() == 1
    chosen = res.candidates[res.candidates["chosen"]].iloc[0]
    assert chosen["n_clusters"] == k
    assert f"n_clusters={k} asked" in res.info["reason"]
    if k == 3:
        assert adjusted_rand_index(truth, res.labels) > 0.95
    # deterministic per random_state
    again = dpp_consensus(X, 40, n_clusters=k, random_state=0)
    np.testing.assert_array_equal(res.labels, again.labels)


def test_n_clusters_below_tau_and_out_of_reach(blobs_4d):
    X, _ = blobs_4d
    one = dpp_consensus(X, 40, n_clusters=1, random_state=0)
    assert int(one.labels.max()) == 0
    # cuts below tau were considered for it; the validity indices exist for the cuts at
    # θ ≥ tau and the nearest ones only
    assert one.candidates["threshold"].min() < 0.6
    # components smaller than sqrt(150) are merged: 100 clusters cannot be reached
    far = dpp_consensus(X, 40, n_clusters=100, random_state=0)
    found = int(far.labels.max()) + 1
    assert found == far.candidates["n_clusters"].max() < 100
    assert "nearest" in far.info["reason"]


@pytest.mark.parametrize("bad", [0, -1, 2.5, "3", True, 151])
def test_n_clusters_is_checked(blobs_4d, bad):
    X, _ = blobs_4d
    with pytest.raises(ValueError, match="n_clusters"):
        dpp_consensus(X, 5, n_clusters=bad)
