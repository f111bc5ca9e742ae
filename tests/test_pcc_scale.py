"""PCC at scale: small traces, ensemble pairs, ensemble init, fit on a subset + extension."""

from __future__ import annotations

import anndata as ad
import numpy as np
import pytest
import scipy.sparse as sp
from _helpers import digests_for_numba_threads

import scconsensus as scc
from scconsensus.core import Bregman
from scconsensus.core.coassociation import coassociation
from scconsensus.core.pcc import ensemble_init, pcc, pcc_extend
from scconsensus.metrics import adjusted_rand_index


def _noisy_labels(n_per=40, k=4, R=25, noise=0.15, seed=0):
    rng = np.random.default_rng(seed)
    truth = np.repeat(np.arange(k), n_per)
    n = truth.size
    labels = np.stack(
        [np.where(rng.random(n) < noise, rng.integers(0, k, n), truth) for _ in range(R)], axis=1
    ).astype(np.int32)
    # incomplete partitions: 10 % unsampled
    labels[rng.random(labels.shape) < 0.1] = -1
    return truth, labels


@pytest.mark.parametrize("solver", ["greedy", "batch"])
@pytest.mark.parametrize("sparse", [False, True])
def test_trace_every_iteration_never_increases(solver, sparse):
    truth, labels = _noisy_labels()
    n = truth.size
    if sparse:
        pairs = np.column_stack(np.triu_indices(n, 1))
        pairs = pairs[np.random.default_rng(1).random(len(pairs)) < 0.3]
        C, N = coassociation(labels, "sparse", pairs=pairs)
    else:
        C, N = coassociation(labels)
    res = pcc(C, N, 6, "kl", solver=solver, n_init=1, trace_every=1, tol=1e-6)
    trace = res.objective_trace
    if solver == "greedy":
        # one point per iteration, plus the start
        assert trace.size == res.n_iter + 1
    assert trace.size > 10
    assert np.all(np.diff(trace) <= 1e-9 * abs(trace[0]))
    if res.n_clusters == 6:
        assert trace[-1] == pytest.approx(res.objective)
    else:  # dropping clusters below min_mass moves the point: its objective is reported
        assert res.objective >= trace[-1] - 1e-9 * abs(trace[-1])


def test_automatic_trace_is_small_and_consistent():
    truth, labels = _noisy_labels()
    C, N = coassociation(labels)
    kw = dict(solver="greedy", n_init=1, tol=1e-6)
    full = pcc(C, N, 6, "kl", trace_every=1, **kw)
    auto = pcc(C, N, 6, "kl", **kw)
    assert auto.n_iter == full.n_iter
    assert auto.objective == pytest.approx(full.objective)
    # the default records a point every max(1, nK // 1000) iterations at most 10,000 points
    assert auto.objective_trace.size <= 10_001
    assert np.all(np.diff(auto.objective_trace) <= 1e-9 * abs(auto.objective_trace[0]))
    # the recorded points are the exact objective at the block ends
    from scconsensus.core.pcc._greedy import trace_stride

    stride = trace_stride(50 * truth.size * 6, truth.size * 6)
    assert stride > 1
    np.testing.assert_allclose(
        auto.objective_trace[:-1], full.objective_trace[::stride][: auto.objective_trace.size - 1]
    )


def test_trace_buffer_does_not_scale_with_max_iter():
    from scconsensus.core.pcc._greedy import trace_stride

    # 10^6 items, K = 20: max_iter = 50 n K = 10^9 must not allocate 10^9 floats
    n, K = 1_000_000, 20
    stride = trace_stride(50 * n * K, n * K)
    assert -(-50 * n * K // stride) <= 10_001
    with pytest.raises(ValueError, match="trace_every"):
        pcc(np.ones((5, 5)), np.ones((5, 5)), 2, trace_every=0)


# --- ensemble pairs, ensemble init and the subset fit + extension, on AnnData ---


@pytest.fixture(scope="module")
def blobs_with_ensemble():
    """1,500 items in five 6-d blobs with a 20-partition k-means ensemble: (adata, truth)."""
    from sklearn.datasets import make_blobs

    X, y = make_blobs(1500, n_features=6, centers=5, cluster_std=1.0, random_state=0)
    adata = ad.AnnData(X.astype(np.float32))
    adata.obsm["X_pca"] = X
    scc.tl.ensemble(adata, 20, "kmeans", k=(3, 10), subsample=0.8, random_state=0)
    return adata, y


@pytest.mark.parametrize("pairs", ["knn", "ensemble", "auto"])
def test_pairs_sources(blobs_with_ensemble, pairs):
    adata, y = blobs_with_ensemble
    out = scc.tl.pcc(adata, 5, mode="sparse", pairs=pairs, n_init=1, copy=True)
    uns = out.uns["pcc"]
    # auto picks kNN below 100,000 items when a representation exists
    assert uns["pair_source"] == ("ensemble" if pairs == "ensemble" else "knn")
    assert uns["params"]["pairs"] == pairs
    assert adjusted_rand_index(y, out.obs["pcc"].cat.codes.values) > 0.95


def test_pairs_auto_without_representation_uses_ensemble(blobs_with_ensemble):
    adata, _ = blobs_with_ensemble
    bare = ad.AnnData(adata.X.copy())
    bare.obsm["scc_ensemble"] = adata.obsm["scc_ensemble"]
    out = scc.tl.pcc(bare, 5, mode="sparse", n_init=1, copy=True)
    assert out.uns["pcc"]["pair_source"] == "ensemble"
    with pytest.raises(ValueError, match="needs a representation"):
        scc.tl.pcc(bare, 5, mode="sparse", pairs="knn", n_init=1, copy=True)
    with pytest.raises(ValueError, match="pairs"):
        scc.tl.pcc(bare, 5, mode="sparse", pairs="bogus", copy=True)


def test_ensemble_init_rows_and_choice():
    labels = np.array([[0, 0], [0, 1], [1, 2], [1, -1], [2, 2]], dtype=np.int32)
    Y = ensemble_init(labels, 3, smoothing=0.1)
    np.testing.assert_allclose(Y.sum(1), 1.0)
    # both partitions have 3 clusters: the first is taken; its largest clusters come first
    assert (Y.argmax(1)[:4] == [0, 0, 1, 1]).all()
    assert Y.min() == pytest.approx(0.1 / 3)
    # an unsampled item starts uniform
    labels[3, 0] = -1
    np.testing.assert_allclose(ensemble_init(labels, 3)[3], 1 / 3)


@pytest.mark.slow
def test_ensemble_init_not_stationary_and_fits(blobs_with_ensemble):
    adata, y = blobs_with_ensemble
    out = scc.tl.pcc(adata, 5, init="ensemble", copy=True)
    uns = out.uns["pcc"]
    assert uns["n_iter"] > 0  # the smoothed start is not a stationary point
    assert uns["params"]["init"] == "ensemble"
    assert adjusted_rand_index(y, out.obs["pcc"].cat.codes.values) > 0.95


@pytest.mark.slow
def test_extend_matches_full_fit(blobs_with_ensemble):
    adata, y = blobs_with_ensemble
    labels = adata.obsm["scc_ensemble"]
    from scconsensus.core._ensemble_pairs import ensemble_pairs
    from scconsensus.core.coassociation import sample_pairs

    n = labels.shape[0]
    P = np.concatenate([ensemble_pairs(labels, 10), sample_pairs(n, None, n_random=20)])
    C, N = coassociation(labels, "sparse", pairs=P)
    full = pcc(C, N, 5, n_init=1)
    fitted = np.sort(np.random.default_rng(0).choice(n, 300, replace=False))
    lab_fit = labels[fitted]
    Pf = np.concatenate([ensemble_pairs(lab_fit, 10), sample_pairs(300, None, n_random=20)])
    Cf, Nf = coassociation(lab_fit, "sparse", pairs=Pf)
    sub = pcc(Cf, Nf, 5, n_init=1)
    Y = pcc_extend(labels, fitted, sub.membership, "kl", random_state=0)
    assert Y.shape == (n, sub.membership.shape[1])
    assert np.all(np.isfinite(Y)) and (Y >= 0).all()
    np.testing.assert_allclose(Y.sum(1), 1.0)
    np.testing.assert_array_equal(Y[fitted], sub.membership)
    rest = np.setdiff1d(np.arange(n), fitted)
    assert adjusted_rand_index(full.labels[rest], Y[rest].argmax(1)) > 0.95
    assert adjusted_rand_index(y, Y.argmax(1)) > 0.95
    # the extended memberships are confident on well-separated blobs
    assert np.median(Y[rest].max(1)) > 0.9


def test_extend_each_item_problem_is_solved():
    # one extended item, two fitted clusters: its optimum follows the co-clustering rate
    R = 20
    labels = np.zeros((41, R), dtype=np.int32)
    labels[20:40] = 1
    # the last item joins cluster 0 in 15 partitions of 20
    labels[40] = np.where(np.arange(R) < 15, 0, 1)
    fitted = np.arange(40)
    Yfit = np.eye(2)[np.repeat([0, 1], 20)]
    Y = pcc_extend(labels, fitted, Yfit, "kl", n_per_item=40, n_random=40, tol=1e-10)
    # KL objective: y0 = mean co-clustering rate with cluster 0 = 0.75
    np.testing.assert_allclose(Y[40], [0.75, 0.25], atol=1e-4)
    Yl2 = pcc_extend(labels, fitted, Yfit, "l2", n_per_item=40, n_random=40, tol=1e-10)
    np.testing.assert_allclose(Yl2[40], [0.75, 0.25], atol=1e-4)


def _extension_case(share, soft):
    """Ensemble, fitted memberships and partner table of one item extended from 40 fitted
    items in two clusters; it joins cluster 0 in ``share`` of 100 partitions."""
    from scconsensus.core.pcc._extend import _partner_table

    R = 100
    labels = np.zeros((41, R), dtype=np.int32)
    labels[20:40] = 1
    labels[40] = np.where(np.arange(R) < round(share * R), 0, 1)
    Yfit = np.eye(2)[np.repeat([0, 1], 20)]
    if soft:  # cluster 1's items keep 0.02 in cluster 0
        Yfit[20:] = [0.02, 0.98]
    table = _partner_table(labels, np.arange(40), np.array([40]), n_per_item=40, n_random=40)
    return labels, Yfit, table


def _start_of(Yfit, table) -> np.ndarray:
    from scconsensus.core.pcc._extend import _start

    indptr, cols, cval, _ = table
    ysp = sp.csr_matrix(Yfit)
    ysp = (ysp.indptr.astype(np.int64), ysp.indices.astype(np.int64), ysp.data)
    y = np.empty(2)
    _start(cval, cols, ysp, 0, int(indptr[1]), y)
    return y


@pytest.mark.parametrize("divergence", ["kl", "l2", "power"])
def test_extend_restores_the_small_share_its_start_drops(divergence):
    """The start leaves out shares below ``START_FLOOR`` of the largest: here cluster 1
    (0.03 of the item's partitions); the moves put it back, and the item ends at the
    optimum of its own problem (found here by SciPy on the segment)."""
    from scipy.optimize import minimize_scalar

    from scconsensus.core.pcc._divergences import _elementwise, check_divergence

    labels, Yfit, table = _extension_case(0.97, soft=True)
    assert _start_of(Yfit, table)[1] == 0.0  # dropped, yet every pair keeps y . y_j > 0
    div = Bregman.power(1.5) if divergence == "power" else divergence
    Y = pcc_extend(labels, np.arange(40), Yfit, div, n_per_item=40, n_random=40, tol=1e-12)
    _, cols, cval, nval = table
    b = check_divergence(div)

    def objective(y1):
        q = Yfit[cols] @ np.array([1.0 - y1, y1])
        return float(nval @ _elementwise(b.kind, b.param, cval / nval, q, False))

    best = minimize_scalar(objective, bounds=(0.0, 1.0), method="bounded", options={"xatol": 1e-12})
    assert 0.01 < best.x < 0.03
    np.testing.assert_allclose(Y[40], [1.0 - best.x, best.x], atol=1e-6)


@pytest.mark.parametrize("share", [0.99, 0.97])
@pytest.mark.parametrize("divergence", ["kl", "l2", "power"])
def test_extend_start_keeps_every_co_clustered_partner(share, divergence):
    """Where the dropped cluster is all that some partner with ``c > 0`` holds (one-hot
    fitted rows), the start keeps that partner's share: at ``y . y_j = 0`` KL is infinite
    and the power divergence's slope too, and the first move could not be sized."""
    labels, Yfit, table = _extension_case(share, soft=False)
    y = _start_of(Yfit, table)
    assert y[1] > 0.0 and y[1] / y[0] < (1 - share) / share + 1e-12
    div = Bregman.power(1.5) if divergence == "power" else divergence
    Y = pcc_extend(labels, np.arange(40), Yfit, div, n_per_item=40, n_random=40, tol=1e-10)
    np.testing.assert_allclose(Y[40], [share, 1 - share], atol=1e-6)


def test_extension_partner_table_is_each_items_distinct_co_sampled_candidates():
    """The one-pass table equals its definition: per item, the distinct candidates in
    increasing order, each with the partitions clustering / sampling both, never-co-sampled
    ones left out (the global sort + count it replaced)."""
    from scconsensus.core.pcc._extend import _partner_table, extension_candidates

    _, labels = _noisy_labels(n_per=30, k=3, R=12)
    rng = np.random.default_rng(1)
    labels[rng.random(labels.shape) < 0.4] = -1  # unsampled entries, some pairs never co-sampled
    fitted = np.sort(rng.choice(labels.shape[0], 40, replace=False))
    items = np.setdiff1d(np.arange(labels.shape[0]), fitted)
    kw = {"n_per_item": 4, "n_random": 3, "random_state": 5}
    cand = extension_candidates(labels, fitted, items, **kw)
    indptr, cols, cval, nval = _partner_table(labels, fitted, items, **kw)
    assert cand.shape == (items.size, 7) and indptr[-1] == cols.size < cand.size
    for x, item in enumerate(items):
        want = []
        for j in np.unique(cand[x]):
            a, b = labels[item], labels[fitted[j]]
            both = (a >= 0) & (b >= 0)
            if both.any():
                want.append((j, np.sum(both & (a == b)), both.sum()))
        got = list(zip(cols[indptr[x] : indptr[x + 1]], cval[indptr[x] : indptr[x + 1]],
                       nval[indptr[x] : indptr[x + 1]], strict=True))  # fmt: skip
        assert got == want


def test_extend_same_bits_for_any_block_and_numba_thread_count(monkeypatch):
    """The extension runs blocks of items in parallel (16 cores spun on one thread at 10^6
    cells): each item's problem reads the fixed fit only, so neither the block size, the
    threads nor the serial twin (small data, one thread) change a bit."""

    from scconsensus.core.pcc import _extend

    rng = np.random.default_rng(0)
    lab = rng.integers(0, 5, size=(600, 12)).astype(np.int32)
    lab[rng.random(lab.shape) < 0.2] = -1
    fitted = np.arange(0, 600, 4)
    Y = rng.dirichlet(np.ones(5), size=fitted.size)
    whole = pcc_extend(lab, fitted, Y)
    monkeypatch.setattr(_extend, "extend_block", lambda n: 7)
    np.testing.assert_array_equal(pcc_extend(lab, fitted, Y), whole)
    setup = (
        "from scconsensus.core.pcc import pcc_extend\n"
        "rng = np.random.default_rng(0)\n"
        "lab = rng.integers(0, 6, size=(20000, 20)).astype(np.int32)\n"
        "fitted = np.arange(0, 20000, 10)\n"
        "Y = rng.dirichlet(np.ones(6), size=fitted.size)"
    )
    # 1 thread: the serial twin; 2 and 4: the parallel kernel
    digests = digests_for_numba_threads(setup, "pcc_extend(lab, fitted, Y)")
    assert len(set(digests)) == 1


def test_extend_raises_a_ctrl_c_taken_by_numbas_threads_as_keyboard_interrupt(monkeypatch):
    """A SIGINT handled by one of numba's threads surfaces as a SystemError caused by the
    KeyboardInterrupt; the parallel extension says it as Ctrl-C, as the batch solver does."""
    from scconsensus.core.pcc import _extend

    def interrupted(*args):
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as err:
            raise SystemError("returned a result with an exception set") from err

    monkeypatch.setattr(_extend, "variant", lambda kernel, n: interrupted)
    labels = np.repeat([[0, 0], [1, 1]], 10, axis=0).astype(np.int32)
    fitted = np.arange(0, 20, 2)
    with pytest.raises(KeyboardInterrupt):
        pcc_extend(labels, fitted, np.eye(2)[labels[fitted, 0]] * 0.98 + 0.01)


def test_extend_rejects_bad_input():
    labels = np.zeros((10, 3), dtype=np.int32)
    with pytest.raises(ValueError, match="one row per fitted"):
        pcc_extend(labels, np.arange(5), np.full((4, 2), 0.5))
    with pytest.raises(ValueError, match="repeated"):
        pcc_extend(labels, np.array([1, 1]), np.full((2, 2), 0.5))
    with pytest.raises(ValueError, match="sum to 1"):
        pcc_extend(labels, np.arange(2), np.ones((2, 2)))


def test_tl_fit_size_records_subset_and_roundtrips(blobs_with_ensemble, tmp_path):
    adata, y = blobs_with_ensemble
    out = scc.tl.pcc(adata, 5, fit_size=400, pairs="ensemble", init="ensemble", n_init=1, copy=True)
    uns = out.uns["pcc"]
    assert uns["fit_size"] == 400
    assert uns["fit_index"].shape == (400,)
    assert np.all(np.diff(uns["fit_index"]) > 0)
    M = out.obsm["pcc_membership"]
    assert np.all(np.isfinite(M))
    np.testing.assert_allclose(M.sum(1), 1.0)
    assert adjusted_rand_index(y, out.obs["pcc"].cat.codes.values) > 0.95
    out.write_h5ad(tmp_path / "a.h5ad")
    back = ad.read_h5ad(tmp_path / "a.h5ad")
    np.testing.assert_array_equal(back.uns["pcc"]["fit_index"], uns["fit_index"])
    with pytest.raises(ValueError, match="not both"):
        scc.tl.pcc(adata, 5, fit_size=10, fit_fraction=0.1, copy=True)
    with pytest.raises(ValueError, match="fit_fraction"):
        scc.tl.pcc(adata, 5, fit_fraction=1.5, copy=True)


@pytest.mark.slow
def test_tl_fit_size_auto_fits_at_most_the_setting(blobs_with_ensemble, monkeypatch):
    adata, y = blobs_with_ensemble
    small = scc.tl.pcc(adata, 5, n_init=1, copy=True)
    assert "fit_index" not in small.uns["pcc"]
    assert small.uns["pcc"]["params"]["fit_size"] == "auto"
    monkeypatch.setattr(scc.settings, "auto_fit_size", 300)
    big = scc.tl.pcc(adata, 5, n_init=1, copy=True)
    assert big.uns["pcc"]["fit_size"] == 300
    assert big.uns["pcc"]["fit_index"].shape == (300,)
    assert adjusted_rand_index(y, big.obs["pcc"].cat.codes.values) > 0.95
    with pytest.raises(ValueError, match="fit_size"):
        scc.tl.pcc(adata, 5, fit_size="all", copy=True)


def test_extension_keeps_a_rare_population_most_partitions_merge():
    """Twenty fitted rare items have a cluster of their own (2) in the fit; the ensemble
    separates them in 2 of 10 partitions and merges them with the 400 items of cluster 0
    in the rest. Partners drawn in partitions chosen uniformly are 0.24 rare (0.2 + 0.8 x
    20/420) and pull the extended rare items to cluster 0; drawn in inverse proportion
    to the cluster size they are 0.85 rare (0.84 + 0.16 x 20/420)."""
    R = 10
    group = np.repeat([0, 1, 2, 2], [400, 100, 20, 20])
    labels = np.tile(group[:, None], (1, R)).astype(np.int32)
    labels[group == 2, 2:] = 0  # merged with cluster 0 in partitions 2-9
    fitted = np.arange(520)
    Yfit = np.eye(3)[group[fitted]] * 0.97 + 0.01
    for seed in range(3):  # uniform partitions: 1-2 of the 20 (0.05, 0.05, 0.10)
        Y = pcc_extend(labels, fitted, Yfit, "kl", n_per_item=10, n_random=3, random_state=seed)
        assert (Y[520:].argmax(axis=1) == 2).mean() >= 0.9
        assert (Y[:520] == Yfit).all()
