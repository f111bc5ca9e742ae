"""PLA / weighted PLA array core (Lange & Buhmann 2005): invariants, extension, errors."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from _helpers import digests_for_numba_threads

from scconsensus.core.pla import (
    Weighting,
    as_members,
    entropic_weights,
    pla,
    pla_em,
    pla_extend,
    predict_ensemble_labels,
)
from scconsensus.core.pla._members import z_dense
from scconsensus.core.pla._model import merge_duplicates
from scconsensus.metrics import h_criterion


def noisy_ensemble(truth, n_partitions, flip, rng, subsample=1.0):
    """Partitions of ``truth`` with a fraction ``flip`` of labels redrawn and items left out."""
    k = truth.max() + 1
    cols = []
    for _ in range(n_partitions):
        lab = np.where(rng.random(truth.size) < flip, rng.integers(0, k, truth.size), truth)
        lab = rng.permutation(k)[lab]
        lab[rng.random(truth.size) > subsample] = -1
        cols.append(lab)
    return np.column_stack(cols).astype(np.int32)


def all_pairs(n):
    return np.array(list(itertools.combinations(range(n), 2)), dtype=np.int64)


@pytest.fixture(scope="module")
def planted_ensemble():
    """Noisy, subsampled copies of a planted partition of 60 items: (truth, labels)."""
    rng = np.random.default_rng(0)
    truth = np.repeat([0, 1, 2], [30, 20, 10])
    return truth, noisy_ensemble(truth, 20, 0.25, rng, subsample=0.8)


# ----------------------------------------------------------------------------- EM invariants


@pytest.mark.parametrize("mode", ["dense", "sparse"])
def test_loglik_never_decreases(planted_ensemble, mode):
    _, labels = planted_ensemble
    kw = {"pairs": all_pairs(labels.shape[0])} if mode == "sparse" else {}
    for seed in range(3):
        res = pla(labels, 4, mode=mode, random_state=seed, n_init=1, tol=1e-12, **kw)
        trace = res.log_likelihood_trace
        assert trace.size > 5
        assert np.all(np.diff(trace) >= -1e-10 * abs(trace[-1]))
        assert res.log_likelihood == pytest.approx(trace[-1])


def test_loglik_never_decreases_on_random_soft_z():
    rng = np.random.default_rng(1)
    Y = [rng.dirichlet(np.ones(3), size=40) for _ in range(6)]
    Z = sum(y @ y.T for y in Y)
    fit = pla_em(Z, 5, n_init=2, tol=1e-12, max_iter=200, random_state=3)
    assert np.all(np.diff(fit.log_likelihood_trace) >= -1e-10 * abs(fit.log_likelihood))
    # eq. 5 evaluated directly at the returned parameters
    q = fit.marginals[:, None] * (fit.posteriors @ fit.likelihoods.T)
    assert fit.log_likelihood == pytest.approx(float(np.sum(Z * np.log(q))), rel=1e-10)


def test_posteriors_and_likelihoods_are_distributions(planted_ensemble):
    _, labels = planted_ensemble
    for mode in ("dense", "sparse"):
        res = pla(labels, 3, mode=mode, random_state=0, pairs=all_pairs(labels.shape[0]))
        assert np.all(res.posteriors >= 0) and np.all(res.likelihoods >= 0)
        np.testing.assert_allclose(res.posteriors.sum(axis=1), 1.0, atol=1e-12)
        np.testing.assert_allclose(res.likelihoods.sum(axis=0), 1.0, atol=1e-12)
        assert res.marginals.sum() == pytest.approx(1.0)
        assert res.cluster_priors.sum() == pytest.approx(1.0)
        assert np.all(np.diff(res.cluster_priors) <= 1e-12)  # ordered by prior
        assert np.isfinite(res.log_likelihood)


def test_marginals_are_eq6(planted_ensemble):
    _, labels = planted_ensemble
    res = pla(labels, 3, random_state=0)
    Z = z_dense(as_members(labels), as_members(labels), np.ones(labels.shape[1]))
    np.testing.assert_allclose(res.marginals, Z.sum(1) / Z.sum())


def test_dense_and_sparse_agree(planted_ensemble):
    _, labels = planted_ensemble
    n = labels.shape[0]
    dense = pla(labels, 3, mode="dense", random_state=5)
    sparse = pla(labels, 3, mode="sparse", pairs=all_pairs(n), random_state=5)
    np.testing.assert_allclose(sparse.posteriors, dense.posteriors, atol=1e-9)
    np.testing.assert_allclose(sparse.likelihoods, dense.likelihoods, atol=1e-9)
    assert sparse.log_likelihood == pytest.approx(dense.log_likelihood, rel=1e-12)
    assert sparse.n_stored < n * n  # zero pairs are not stored
    # the low-level EM on a CSR copy of Z
    Z = z_dense(as_members(labels), as_members(labels), np.ones(labels.shape[1]))
    a = pla_em(Z, 3, random_state=2)
    b = pla_em(sp.csr_matrix(Z), 3, random_state=2)
    np.testing.assert_allclose(a.posteriors, b.posteriors, atol=1e-10)


def test_weighted_dense_and_sparse_agree(planted_ensemble):
    _, labels = planted_ensemble
    kw = {"weighted": True, "weighting": Weighting(lam=0.5), "random_state": 1}
    dense = pla(labels, 3, mode="dense", **kw)
    sparse = pla(labels, 3, mode="sparse", pairs=all_pairs(labels.shape[0]), **kw)
    np.testing.assert_allclose(sparse.weights, dense.weights, atol=1e-8)
    np.testing.assert_allclose(sparse.posteriors, dense.posteriors, atol=1e-7)


def test_soft_ensemble_equals_one_hot_and_builds_yyt():
    rng = np.random.default_rng(2)
    truth = np.repeat([0, 1], 15)
    labels = noisy_ensemble(truth, 8, 0.2, rng, subsample=0.9)
    soft = [np.where(labels[:, [l]] >= 0, np.eye(2)[labels[:, l].clip(0)], 0.0) for l in range(8)]
    a = pla(labels, 2, random_state=0)
    b = pla(soft, 2, random_state=0)
    np.testing.assert_allclose(a.posteriors, b.posteriors, atol=1e-10)
    Ys = [rng.dirichlet(np.ones(3), size=30) for _ in range(4)]
    m = as_members(Ys)
    np.testing.assert_allclose(z_dense(m, m, np.ones(4)), sum(y @ y.T for y in Ys))
    res = pla(Ys, 2, mode="sparse", pairs=all_pairs(30), random_state=0)
    np.testing.assert_allclose(res.posteriors, pla(Ys, 2, random_state=0).posteriors, atol=1e-8)


def test_partition_sums_dense_and_pattern_agree(planted_ensemble):
    from scconsensus.core.pla._members import partition_sums_dense, symmetric_pattern
    from scconsensus.core.pla._problem import Problem

    _, labels = planted_ensemble
    n = labels.shape[0]
    m = as_members(labels)
    dense = Problem(m)
    sparse = Problem(m, symmetric_pattern(n, all_pairs(n), diagonal=True))
    np.testing.assert_allclose(dense.partition_mass(), partition_sums_dense(m, m, np.ones((n, n))))
    np.testing.assert_allclose(sparse.partition_mass(), dense.partition_mass())
    fit = pla_em(dense.z(np.ones(labels.shape[1])), 3, random_state=0)
    np.testing.assert_allclose(sparse.partition_loglik(fit), dense.partition_loglik(fit))
    # Σ_l of the per-partition log-likelihoods is the log-likelihood of Z
    assert dense.partition_loglik(fit).sum() == pytest.approx(fit.log_likelihood)


def test_same_seed_same_result(planted_ensemble):
    _, labels = planted_ensemble
    a = pla(labels, 3, weighted=True, random_state=11)
    b = pla(labels, 3, weighted=True, random_state=11)
    np.testing.assert_array_equal(a.posteriors, b.posteriors)
    assert a.lam == b.lam


def test_recovers_well_separated_clusters(planted_ensemble):
    truth, labels = planted_ensemble
    for mode in ("dense", "sparse"):
        res = pla(labels, 3, mode=mode, n_random=20, random_state=0)
        assert h_criterion(truth, res.labels) == 1.0


# ----------------------------------------------------------------------------- weighted PLA


def test_entropic_weights_closed_form():
    rng = np.random.default_rng(3)
    c = rng.normal(size=6)
    for lam in (0.1, 1.0, 10.0):
        a = entropic_weights(c, lam)
        assert a.sum() == pytest.approx(1.0) and np.all(a > 0)

        def f(x, lam=lam):
            return x @ c + lam * np.sum(x * np.log(x))

        for x in rng.dirichlet(np.ones(6), size=200):
            assert f(a) <= f(x) + 1e-12
    np.testing.assert_allclose(entropic_weights(c, 1e9), 1 / 6, atol=1e-8)
    assert entropic_weights(c, 1e-4).max() == pytest.approx(1.0)


def test_weights_sum_to_one_uniform_for_large_lambda(planted_ensemble):
    _, labels = planted_ensemble
    L = labels.shape[1]
    plain = pla(labels, 3, random_state=0)
    big = pla(labels, 3, weighted=True, weighting=Weighting(lam=1e9), random_state=0)
    assert big.weights.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(big.weights, 1.0 / L, atol=1e-8)
    # the same fixed point; weighted PLA only runs EM further from it
    np.testing.assert_allclose(big.posteriors, plain.posteriors, atol=1e-3)
    np.testing.assert_array_equal(big.labels, plain.labels)
    small = pla(labels, 3, weighted=True, weighting=Weighting(lam=0.05), random_state=0)
    assert small.weights.sum() == pytest.approx(1.0)
    assert small.weights.max() > 5.0 / L


def test_weighted_objective_never_increases(planted_ensemble):
    _, labels = planted_ensemble
    for lam in (0.1, 1.0, 10.0):
        res = pla(labels, 3, weighted=True, weighting=Weighting(lam=lam), random_state=0, tol=1e-10)
        F = res.objective_trace
        assert F.size >= 3
        assert np.all(np.diff(F) <= 1e-9 * np.abs(F[:-1]).max())


def test_weights_favour_consistent_partitions():
    rng = np.random.default_rng(4)
    truth = np.repeat([0, 1, 2], 20)
    good = noisy_ensemble(truth, 10, 0.05, rng)
    junk = rng.integers(0, 3, size=(60, 10)).astype(np.int32)
    res = pla(
        np.hstack([good, junk]), 3, weighted=True, weighting=Weighting(lam=1.0), random_state=0
    )
    assert res.weights[:10].mean() > 2 * res.weights[10:].mean()
    assert h_criterion(truth, res.labels) == 1.0


def test_lambda_by_cross_validation(planted_ensemble):
    _, labels = planted_ensemble
    grid = Weighting(lam_grid=(0.1, 1.0, 100.0), cv_folds=2)
    res = pla(labels, 3, weighted=True, weighting=grid, random_state=0)
    assert res.lam in (0.1, 1.0, 100.0)
    assert list(res.cv_scores["lam"]) == [0.1, 1.0, 100.0]
    assert np.isfinite(res.cv_scores[["heldout_nll", "penalized", "weighted_nll"]]).all().all()
    best = res.cv_scores.loc[res.cv_scores["heldout_nll"].idxmin(), "lam"]
    assert res.lam == best
    # eq. 27 as printed picks the largest λ (see the cv_score docs)
    pen = pla(
        labels,
        3,
        weighted=True,
        weighting=Weighting(lam_grid=(0.1, 1.0, 100.0), cv_folds=2, cv_score="penalized"),
        random_state=0,
    )
    assert pen.lam == 100.0


def test_cross_validation_dense_and_sparse_agree(planted_ensemble):
    _, labels = planted_ensemble
    grid = Weighting(lam_grid=(0.1, 1.0, 100.0), cv_folds=2)
    kw = {"weighted": True, "weighting": grid, "random_state": 0}
    dense = pla(labels, 3, **kw)
    sparse = pla(labels, 3, mode="sparse", pairs=all_pairs(labels.shape[0]), **kw)
    # same algorithm; only the summation order of the seeded starts differs
    np.testing.assert_allclose(sparse.cv_scores.to_numpy(), dense.cv_scores.to_numpy(), rtol=1e-2)
    assert sparse.lam == dense.lam


# ----------------------------------------------------------------------------- extension


def test_out_of_sample_agrees_with_in_sample():
    rng = np.random.default_rng(5)
    truth = np.repeat([0, 1, 2], [60, 40, 20])
    labels = noisy_ensemble(truth, 30, 0.05, rng, subsample=0.9)
    full = pla(labels, 3, random_state=0)
    part = pla(labels, 3, fit_size=50, random_state=0)
    held = np.setdiff1d(np.arange(120), part.fit_index)
    assert held.size == 70
    # same clusters up to a permutation on the held-out items ...
    assert h_criterion(full.labels[held], part.labels[held]) == 1.0
    to_full = [np.bincount(full.labels[part.labels == v], minlength=3).argmax() for v in range(3)]
    assert sorted(to_full) == [0, 1, 2]
    # ... and close posteriors: the fold-in is closer to the in-sample fit on average
    # than eq. 26, which averages the co-clustered items' posteriors (mean difference
    # 0.020 against 0.035; the largest 0.23 against 0.11, on an item between clusters)
    diff = np.abs(part.posteriors[held][:, np.argsort(to_full)] - full.posteriors[held])
    assert diff.mean() < 0.025 and diff.max() < 0.25
    fit = part.fit_index
    paper = pla_extend(part.posteriors[fit], labels[fit], labels[held], method="paper")
    diff_paper = np.abs(paper[:, np.argsort(to_full)] - full.posteriors[held])
    assert diff.mean() < diff_paper.mean() < 0.05 and diff_paper.max() < 0.15
    # the public extension gives the same rows
    ext = pla_extend(part.posteriors[fit], labels[fit], labels[held], part.weights)
    np.testing.assert_allclose(ext, part.posteriors[held], atol=1e-12)


def test_extension_from_predicted_labels():
    rng = np.random.default_rng(6)
    centers = np.array([[0.0, 0.0], [8.0, 0.0], [0.0, 8.0]])
    truth = np.repeat([0, 1, 2], 30)
    X = centers[truth] + rng.normal(size=(90, 2))
    ref = np.arange(90) % 3 != 0
    labels = noisy_ensemble(truth[ref], 15, 0.1, rng, subsample=0.7)
    fit = pla(labels, 3, random_state=0)
    pred = predict_ensemble_labels(X[ref], labels, X[~ref], n_neighbors=3)
    post = pla_extend(fit.posteriors, labels, pred)
    np.testing.assert_allclose(post.sum(1), 1.0)
    assert h_criterion(truth[~ref], post.argmax(1)) == 1.0


def test_predict_labels_is_nearest_sampled_neighbour():
    rng = np.random.default_rng(7)
    X = rng.normal(size=(200, 3))
    labels = rng.integers(0, 4, size=(200, 5)).astype(np.int32)
    labels[rng.random((200, 5)) < 0.95] = -1  # few sampled items: exercises the fallback
    Xn = rng.normal(size=(30, 3))
    pred = predict_ensemble_labels(X, labels, Xn, n_neighbors=1)
    for l in range(5):
        keep = np.flatnonzero(labels[:, l] >= 0)
        d = ((Xn[:, None, :] - X[keep][None]) ** 2).sum(-1)
        np.testing.assert_array_equal(pred[:, l], labels[keep[d.argmin(1)], l])


def test_extension_of_unsampled_item_is_uniform_with_warning():
    labels = np.array([[0, 0], [0, 0], [1, 1], [1, 1]])
    post = np.array([[1.0, 0], [1, 0], [0, 1], [0, 1]])
    with pytest.warns(RuntimeWarning, match="uniform"):
        out = pla_extend(post, labels, np.array([[-1, -1], [0, 0]]))
    np.testing.assert_allclose(out, [[0.5, 0.5], [1.0, 0.0]], atol=1e-5)


def _soft(labels: np.ndarray, rng, share: float = 0.7) -> list[np.ndarray]:
    """Each partition as soft ``(n, k)`` rows: ``share`` on the label, the rest spread."""
    out = []
    for col in labels.T:
        Y = (1 - share) * rng.dirichlet(np.ones(col.max() + 1), size=col.size)
        Y[np.arange(col.size), col] += share
        out.append(np.where((col >= 0)[:, None], Y, 0.0))
    return out


def _fold_in_objective(post_new, post_fit, ens_fit, ens_new, alpha) -> np.ndarray:
    """Each new item's ``Σ_l α_l Σ_j φ_lj log Σ_v p(v|x) p_l(j|v)``, with ``p_l(j|v)`` the
    fitted clusters' label distributions plus one item of the partition's own."""
    out = np.zeros(len(post_new))
    for a, Y_fit, Y_new in zip(alpha, ens_fit, ens_new, strict=True):
        counts, mass = Y_fit.T @ post_fit, Y_fit.sum(axis=0)
        like = (counts + (mass / mass.sum())[:, None]) / (counts.sum(axis=0) + 1.0)
        mix = post_new @ like.T
        out += a * (Y_new * np.log(np.where(Y_new > 0, mix, 1.0))).sum(axis=1)
    return out


def _fold_in_reference(post_fit, ens_fit, ens_new, alpha, n_iter=3000) -> np.ndarray:
    """The same optimum by plain EM on the mixture weights, from uniform rows."""
    likes = []
    for Y_fit in ens_fit:
        counts, mass = Y_fit.T @ post_fit, Y_fit.sum(axis=0)
        likes.append((counts + (mass / mass.sum())[:, None]) / (counts.sum(axis=0) + 1.0))
    p = np.full((len(ens_new[0]), post_fit.shape[1]), 1.0 / post_fit.shape[1])
    total = sum(a * Y.sum(axis=1) for a, Y in zip(alpha, ens_new, strict=True))
    for _ in range(n_iter):
        g = sum(
            a * (Y / np.where(Y > 0, p @ like.T, 1.0)) @ like
            for a, Y, like in zip(alpha, ens_new, likes, strict=True)
        )
        p = p * g / total[:, None]
    return p


def test_fold_in_maximises_each_items_weighted_likelihood_of_its_labels():
    rng = np.random.default_rng(11)
    truth = np.repeat([0, 1, 2], [70, 40, 10])
    ens = _soft(noisy_ensemble(truth, 25, 0.15, rng, subsample=0.85), rng)
    alpha = rng.uniform(0.2, 2.0, size=25)
    alpha[3] = 0.0
    part = pla(ens, 3, fit_size=60, random_state=0)
    fit, held = part.fit_index, np.setdiff1d(np.arange(truth.size), part.fit_index)
    post_fit = part.posteriors[fit]
    args = ([Y[fit] for Y in ens], [Y[held] for Y in ens])
    fold = pla_extend(post_fit, *args, weights=alpha)
    paper = pla_extend(post_fit, *args, weights=alpha, method="paper")
    np.testing.assert_allclose(fold.sum(1), 1.0)
    assert not np.allclose(fold, paper, atol=1e-3)  # the fold-in moved
    np.testing.assert_allclose(fold, _fold_in_reference(post_fit, *args, alpha), atol=2e-3)
    best = _fold_in_objective(fold, post_fit, *args, alpha)
    # EM stops within 1e-6 per unit weight of the optimum: ~2.5e-5 here (Σ α ≈ 25)
    tol = 1e-6 * alpha.sum() * 2
    assert np.all(best >= _fold_in_objective(paper, post_fit, *args, alpha))
    # concave in p(v|x): no point of the simplex does better, nor uniform weights' optimum
    others = [rng.dirichlet(np.ones(3), size=held.size) for _ in range(20)]
    others.append(pla_extend(post_fit, *args))
    for other in others:
        assert np.all(best >= _fold_in_objective(other, post_fit, *args, alpha) - tol)


def test_fold_in_gives_a_near_empty_cluster_no_items():
    # a cluster the fit gives almost no mass must not claim items by a peaked label
    # distribution: a copy of a fitted item goes where the fitted item went
    labels = np.zeros((201, 5), dtype=np.int32)
    labels[200] = 1
    post = np.tile([1.0, 0.0], (201, 1))
    post[200] = [1 - 1e-6, 1e-6]
    out = pla_extend(post, labels, labels[[200, 0]])
    assert out.argmax(1).tolist() == [0, 0]


def test_fold_in_in_chunks_gives_the_same_bits(monkeypatch):
    # the kernel runs on chunks of rows so that Ctrl-C is heard between them
    from scconsensus.core.pla import _extend

    rng = np.random.default_rng(3)
    lab = rng.integers(0, 6, size=(600, 12)).astype(np.int32)
    lab[rng.random(lab.shape) < 0.2] = -1
    post = rng.dirichlet(np.ones(4), size=200)
    whole = pla_extend(post, lab[:200], lab[200:])
    monkeypatch.setattr(_extend, "_FOLD_IN_CHUNK", 7)
    np.testing.assert_array_equal(pla_extend(post, lab[:200], lab[200:]), whole)


def test_fold_in_same_bits_for_any_numba_thread_count():
    setup = (
        "from scconsensus.core.pla import pla_extend\n"
        "rng = np.random.default_rng(0)\n"
        "lab = rng.integers(0, 6, size=(3000, 20)).astype(np.int32)\n"
        "post = rng.dirichlet(np.ones(4), size=1000)"
    )
    digests = digests_for_numba_threads(setup, "pla_extend(post, lab[:1000], lab[1000:])")
    assert len(set(digests)) == 1


def test_fold_in_keeps_a_small_cluster_that_partitions_merge():
    # 10 items of B share their label with 200 of A in 15 of 20 partitions: eq. 26
    # counts the 200, the fold-in sees that B's label is B's alone in the other five
    truth = np.repeat([0, 1], [200, 10])
    labels = np.zeros((210, 20), dtype=np.int32)
    labels[truth == 1, 15:] = 1
    post = np.eye(2)[truth]
    new = np.array([[0] * 15 + [1] * 5, [0] * 20])
    np.testing.assert_array_equal(pla_extend(post, labels, new).argmax(1), [1, 0])
    assert pla_extend(post, labels, new, method="paper").argmax(1).tolist() == [0, 0]


def test_extension_method_is_checked():
    with pytest.raises(ValueError, match="method"):
        pla_extend(np.eye(2), np.array([[0], [1]]), np.array([[0]]), method="kNN")


def test_given_fit_index_is_the_fit_and_init_may_give_its_rows_only(planted_ensemble):
    _, labels = planted_ensemble
    drawn = pla(labels, 3, fit_size=40, random_state=0)
    given = pla(labels, 3, fit_index=drawn.fit_index, random_state=0)
    np.testing.assert_array_equal(given.fit_index, drawn.fit_index)
    np.testing.assert_array_equal(given.posteriors, drawn.posteriors)
    start = np.full((labels.shape[0], 3), 0.1)
    start[np.arange(labels.shape[0]), labels[:, 0] % 3] = 0.8
    full = pla(labels, 3, fit_index=drawn.fit_index, init=start, n_init=1)
    rows = pla(labels, 3, fit_index=drawn.fit_index, init=start[drawn.fit_index], n_init=1)
    np.testing.assert_array_equal(full.posteriors, rows.posteriors)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"fit_index": np.arange(40), "fit_size": 40}, "not both"),
        ({"fit_index": np.array([3, 2, 5, 7, 9])}, "increasing, distinct"),
        ({"fit_index": np.arange(3)}, "more than n_clusters=3"),
        ({"fit_index": np.arange(0.0, 40.0)}, "1-D array of item indices"),
        ({"fit_index": np.arange(40), "init": np.full((39, 3), 1 / 3)}, "40 \\(the fitted"),
    ],
)
def test_fit_index_refused(planted_ensemble, kwargs, match):
    _, labels = planted_ensemble
    with pytest.raises(ValueError, match=match):
        pla(labels, 3, **kwargs)


def test_pla_consensus_starts_on_the_items_it_fits(planted_ensemble):
    # the spectral start is computed on the fitted subset only, which pla then fits
    from scconsensus.core import FitRoute, pla_consensus, plan_consensus
    from scconsensus.core._subset import fit_subset

    _, labels = planted_ensemble
    res = pla_consensus(labels, 3, route=FitRoute(fit_size=40), random_state=5)
    expected = fit_subset(labels.shape[0], 40, None, 3, np.random.default_rng(5), method="pla")
    np.testing.assert_array_equal(res.fit.fit_index, expected)
    np.testing.assert_array_equal(res.plan.fit_indices, expected)
    assert res.plan.start.shape == (40, 3)
    # and that start is the spectral start of those items alone
    alone = plan_consensus(labels[expected], 3, random_state=5, smoothing=0.9)
    np.testing.assert_array_equal(res.plan.start, alone.start)


def test_extension_aligns_label_layouts():
    fit_labels = np.array([[0, 0], [0, 1], [1, 2], [1, 2]])
    post = np.array([[1.0, 0], [1, 0], [0, 1], [0, 1]])
    # new items only see label 0 of partition 1: narrower layout, same meaning
    out = pla_extend(post, fit_labels, np.array([[0, 0], [1, 0]]))
    np.testing.assert_allclose(out[0], [1.0, 0.0], atol=1e-5)


def test_fit_fraction_and_sparse_fit_subset():
    rng = np.random.default_rng(8)
    truth = np.repeat([0, 1, 2], [60, 40, 20])
    labels = noisy_ensemble(truth, 20, 0.1, rng, subsample=0.8)
    res = pla(labels, 3, fit_fraction=0.5, mode="sparse", n_random=15, random_state=0)
    assert res.fit_index.size == 60 and res.posteriors.shape == (120, 3)
    assert res.mode == "sparse" and res.n_stored < 60 * 60
    assert h_criterion(truth, res.labels) == 1.0


# ----------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n_clusters": 1}, "at least 2"),
        ({"n_clusters": 60}, "too large"),
        ({"mode": "fast"}, "mode='fast'"),
        ({"weighted": True, "weighting": Weighting(lam=-1.0)}, "lam must be a positive"),
        ({"weighted": True, "weighting": Weighting(lam="auto")}, "lam='auto'"),
        ({"weighted": True, "weighting": Weighting(cv_folds=1)}, "cv_folds"),
        ({"weighted": True, "weighting": Weighting(lam_grid=(0.0, 1.0))}, "lam_grid"),
        ({"fit_size": 10, "fit_fraction": 0.5}, "either fit_size or fit_fraction"),
        ({"fit_size": 2}, "more than"),
        ({"fit_fraction": 1.5}, "fit_fraction"),
        ({"weighting": Weighting(cv_score="aic")}, "cv_score"),
        ({"mode": "dense", "diagonal": False}, "diagonal"),
        ({"mode": "sparse", "pairs": np.array([[0, 99]])}, "outside"),
        ({"n_init": 0}, "n_init"),
    ],
)
def test_bad_arguments(planted_ensemble, kwargs, match):
    _, labels = planted_ensemble
    kwargs = {"n_clusters": 3, **kwargs}
    k = kwargs.pop("n_clusters")
    with pytest.raises(ValueError, match=match):
        pla(labels, k, **kwargs)


def test_bad_inputs():
    with pytest.raises(ValueError, match="below -1"):
        pla(np.array([[0, -2], [1, 0], [0, 1]]), 2)
    with pytest.raises(ValueError, match="integer"):
        pla(np.array([[0.5, 1], [1, 0], [0, 1]]), 2)
    with pytest.raises(ValueError, match="sum to neither 1 nor 0"):
        pla([np.full((5, 2), 0.3)], 2)
    with pytest.raises(ValueError, match="negative"):
        pla([np.array([[1.5, -0.5]] * 5)], 2)
    with pytest.raises(ValueError, match="rows"):
        pla([np.eye(2)[[0, 1, 0]], np.eye(2)[[0, 1]]], 2)
    with pytest.raises(ValueError, match="square"):
        pla_em(np.ones((3, 4)), 2)
    with pytest.raises(ValueError, match="negative"):
        pla_em(-np.ones((3, 3)), 2)
    with pytest.raises(ValueError, match="NaN"):
        pla_em(np.full((3, 3), np.nan), 2)
    with pytest.raises(ValueError, match="all zero"):
        pla_em(np.zeros((3, 3)), 2)
    with pytest.raises(ValueError, match="partitions"):
        pla_extend(np.eye(2)[[0, 1]], np.array([[0, 1], [1, 0]]), np.array([[0], [1]]))
    with pytest.raises(ValueError, match="rows"):
        pla_extend(np.eye(2)[[0, 1, 1]], np.array([[0], [1]]), np.array([[0]]))
    with pytest.raises(ValueError, match="features"):
        predict_ensemble_labels(np.zeros((4, 2)), np.zeros((4, 1)), np.zeros((1, 3)))


def test_never_sampled_item_warns(planted_ensemble):
    _, labels = planted_ensemble
    labels = labels.copy()
    labels[0] = -1
    with pytest.warns(RuntimeWarning, match="no partition"):
        res = pla(labels, 3, random_state=0)
    np.testing.assert_allclose(res.posteriors[0], 1 / 3)


# ----------------------------------------------------------------------------- paper result


def bananas(seed, sizes=(100, 200), radius=5.0):
    """The toy data of Lange & Buhmann (2005), Sect. 4 (same geometry as vignettes/pla_toy.py)."""
    rng = np.random.default_rng(seed)
    a = 0.125 * np.pi + rng.random(sizes[0]) * 1.25 * np.pi
    b = 0.375 * np.pi - rng.random(sizes[1]) * 1.25 * np.pi
    X = np.vstack(
        [
            radius * np.column_stack([np.sin(a), np.cos(a)]),
            radius * np.column_stack([np.sin(b), np.cos(b)]) - 0.75 * radius,
        ]
    )
    return X + rng.normal(size=X.shape), np.repeat([0, 1], sizes)


@pytest.mark.slow
def test_toy_pla_beats_the_median_partition():
    """Sect. 4: PLA of single-linkage subsample partitions beats a typical partition."""
    from scconsensus.core.ensemble import PartitionOptions, generate_ensemble

    pla_err, med_err = [], []
    for seed in range(3):
        X, y = bananas(seed)
        ens = generate_ensemble(
            X,
            50,
            method=("hc_single",),
            k=2,
            random_state=seed,
            progress=False,
            options=PartitionOptions(subsample=0.1, predict_unsampled=True),
        )
        med_err.append(np.median([1 - h_criterion(y, ens.labels[:, l]) for l in range(50)]))
        pla_err.append(1 - h_criterion(y, pla(ens.labels, 2, random_state=seed).labels))
    # paper, Table 1 at L = 50: PLA 0.13, median partition 0.26
    assert np.mean(med_err) > 0.2
    assert np.mean(pla_err) < np.mean(med_err) - 0.04


def test_toy_with_the_defaults_lands_where_the_paper_does():
    """Lange & Buhmann (2005), Sect. 4, through ``tl.pla``'s defaults: disagreement with
    the two bananas 0.13-0.16 in the paper; from PCC's nearly hard start (smoothing 0.1)
    EM ended elsewhere on PLA's ridge of equal likelihood (0.217 over seeds 0-2)."""
    import anndata as ad

    import scconsensus as scc
    from scconsensus.core.ensemble import PartitionOptions, generate_ensemble

    errors = []
    for seed in range(3):
        X, y = bananas(seed)
        toy = ad.AnnData(X)
        toy.obsm["scc_ensemble"] = generate_ensemble(
            X, 50, "hc_single", k=2, random_state=seed, progress=False,
            options=PartitionOptions(subsample=0.1, predict_unsampled=True),
        ).labels  # fmt: skip
        scc.tl.pla(toy, n_clusters=2, random_state=seed, progress=False)
        assert toy.obs["pla"].nunique() == 2
        errors.append(1 - h_criterion(y, toy.obs["pla"].astype(str).to_numpy()))
    assert np.mean(errors) <= 0.19


def test_soft_start_on_the_toy_keeps_both_clusters():
    """Issue 24: from a soft start EM stops where both components of the toy's two
    clusters carry much of every item (profile cosine 0.81); they were merged into one."""
    from scconsensus.core._plan import smoothed_one_hot
    from scconsensus.core._spectral import spectral_consensus
    from scconsensus.core.ensemble import PartitionOptions, generate_ensemble

    X, y = bananas(3)
    ens = generate_ensemble(
        X, 50, method=("hc_single",), k=2, random_state=3, progress=False,
        options=PartitionOptions(subsample=0.1, predict_unsampled=True),
    ).labels  # fmt: skip
    start = smoothed_one_hot(spectral_consensus(ens, 2, random_state=3), 2, 0.5)
    res = pla(ens, 2, init=start, n_init=1, random_state=3)
    assert res.posteriors.shape[1] == 2
    assert np.bincount(res.labels).min() > 20
    assert 1 - h_criterion(y, res.labels) < 0.25  # one cluster scores 1/3


# ----------------------------------------------------------------------------- duplicates


def _profiles(posteriors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(p(j|v), p(v))`` of posteriors over items of equal mass (PLA's fixed point)."""
    return posteriors / posteriors.sum(axis=0), posteriors.mean(axis=0)


def test_merge_keeps_distinct_clusters_with_overlapping_profiles():
    # a point of PLA's ridge P T: both components hold much of every item (cosine 0.88),
    # but every partition separates the items labelled with one from the other's
    labels = np.repeat([[0] * 10, [1] * 10], [60, 40], axis=0)
    P = np.repeat([[0.7, 0.3], [0.45, 0.55]], [60, 40], axis=0)
    W, prior = _profiles(P)
    unit = W / np.linalg.norm(W, axis=0)
    assert unit[:, 0] @ unit[:, 1] > 0.8
    merged, _ = merge_duplicates(P, W, prior, as_members(labels), np.full(10, 0.1))
    np.testing.assert_array_equal(merged, P)


def test_merge_joins_components_sharing_the_items_of_one_group():
    # asked for 3 clusters of a 2-group ensemble: two components split group B 0.5/0.5
    labels = np.repeat([[0] * 10, [1] * 10], [60, 40], axis=0)
    P = np.zeros((100, 3))
    P[:60, 0] = 1.0
    P[60:, 1:] = np.tile([[0.55, 0.45], [0.45, 0.55]], (20, 1))
    W, prior = _profiles(P)
    merged, merged_W = merge_duplicates(P, W, prior, as_members(labels), np.full(10, 0.1))
    np.testing.assert_allclose(merged, np.repeat(np.eye(2), [60, 40], axis=0))
    np.testing.assert_allclose(merged_W.sum(axis=0), 1.0)


def test_duplicates_of_noisy_groups_are_merged():
    # K = 6 on 3 planted groups, 5 % label noise: one item labelled with a duplicate
    # component is atypical of its group; the duplicates still merge (no 0.5/0.5 cells)
    rng = np.random.default_rng(0)
    labels = np.tile(np.repeat([0, 1, 2], [80, 60, 40])[:, None], (1, 30))
    flip = rng.random(labels.shape) < 0.05
    labels[flip] = rng.integers(0, 3, flip.sum())
    res = pla(labels, 6, random_state=0)
    assert res.posteriors.shape[1] == 3
    assert res.posteriors.max(axis=1).min() > 0.6


def _large_ids(labels: np.ndarray) -> np.ndarray:
    """The same partitions with label ids ~1e8 (e.g. a hand-made or merged ensemble)."""
    return np.where(labels >= 0, labels.astype(np.int64) * 30_000_000 + 7, -1).astype(np.int32)


@pytest.mark.parametrize("mode", ["dense", "sparse"])
def test_large_label_ids_same_as_compact(planted_ensemble, mode):
    # the columns were sized by the largest id: ~1e8 asked for terabytes
    _, labels = planted_ensemble
    big = _large_ids(labels)
    a = pla(labels, 3, mode=mode, fit_size=40, random_state=0)
    b = pla(big, 3, mode=mode, fit_size=40, random_state=0)
    np.testing.assert_array_equal(a.posteriors, b.posteriors)
    fit = a.fit_index
    held = np.setdiff1d(np.arange(labels.shape[0]), fit)
    ext = pla_extend(a.posteriors[fit], labels[fit], labels[held], a.weights)
    ext_big = pla_extend(a.posteriors[fit], big[fit], big[held], a.weights)
    np.testing.assert_array_equal(ext, ext_big)


def test_predict_labels_large_ids_keep_their_ids():
    rng = np.random.default_rng(8)
    X = rng.normal(size=(80, 2))
    labels = rng.integers(0, 3, size=(80, 4)).astype(np.int32)
    labels[rng.random((80, 4)) < 0.3] = -1
    Xn = rng.normal(size=(10, 2))
    pred = predict_ensemble_labels(X, labels, Xn, n_neighbors=3)
    np.testing.assert_array_equal(
        predict_ensemble_labels(X, _large_ids(labels), Xn, n_neighbors=3), _large_ids(pred)
    )


def test_argmax_labels_of_hard_and_soft_members():
    """The partners of the sparse route are drawn from each item's largest membership per
    partition: the labels themselves for a hard ensemble, -1 where a partition has none."""
    labels = np.array([[0, 1, -1], [1, 1, 0], [2, 0, 1], [-1, 0, 0]], dtype=np.int32)
    assert np.array_equal(as_members(labels, compact=False).argmax_labels(), labels)
    soft = [
        np.array([[0.7, 0.3], [0.2, 0.8], [0.5, 0.5], [0.0, 0.0]]),
        np.array([[0.1, 0.2, 0.7], [0.6, 0.3, 0.1], [0.0, 1.0, 0.0], [0.3, 0.3, 0.4]]),
    ]
    got = as_members(soft).argmax_labels()
    assert np.array_equal(got[:, 1], [2, 0, 1, 2])
    assert np.array_equal(got[[0, 1, 3], 0], [0, 1, -1]) and got[2, 0] in (0, 1)


@pytest.mark.parametrize("soft", [False, True])
def test_sparse_pairs_sources(planted_ensemble, soft):
    """``pairs``: ``"auto"`` draws partners from the ensemble without ``X`` and kNN with it;
    an array is used as given; the dense route has none. Each recovers the planted groups."""
    truth, labels = planted_ensemble
    ensemble = [np.eye(labels.max() + 1)[lab] * (lab >= 0)[:, None] for lab in labels.T]
    ensemble = ensemble if soft else labels
    X = np.eye(3)[truth] * 10 + np.random.default_rng(1).normal(size=(truth.size, 3))
    runs = {
        "ensemble": {},
        "knn": {"X": X},
        "given": {"pairs": all_pairs(truth.size)},
    }
    for source, kw in runs.items():
        res = pla(ensemble, 3, mode="sparse", random_state=0, **kw)
        assert res.pair_source == source
        assert h_criterion(truth, res.labels) == 1.0
    assert pla(ensemble, 3, mode="dense", random_state=0).pair_source is None
    with pytest.raises(ValueError, match="pairs='nn' is not supported"):
        pla(ensemble, 3, mode="sparse", pairs="nn")
