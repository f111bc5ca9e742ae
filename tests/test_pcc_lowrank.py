"""Low-rank l2 PCC: objective, gradient and segment equal the dense co-association's."""

from __future__ import annotations

import numpy as np
import pytest
from _helpers import planted

from scconsensus.core import FitRoute, pcc
from scconsensus.core.coassociation import coassociation
from scconsensus.core.pcc import l2_constant, pcc_lowrank
from scconsensus.core.pcc._lowrank import LowRankL2
from scconsensus.metrics import adjusted_rand_index


def brute_force(labels, Y):
    """Objective, gradient and curvature of the l2 PCC objective from all pairs, in numpy."""
    C, N = (np.asarray(M, float) for M in coassociation(labels))
    np.fill_diagonal(C, 0)
    np.fill_diagonal(N, 0)
    P = np.divide(C, N, out=np.zeros_like(C), where=N > 0)
    Q = Y @ Y.T
    f = 0.5 * float((N * (P - Q) ** 2).sum())
    return f, 2.0 * (N * (Q - P)) @ Y, 2.0 * N @ (Y * Y)


def ensemble(n, R, missing, seed, k=5):
    """Random labels; ``missing`` may differ per partition so that some sample under half."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, k, size=(n, R)).astype(np.int32)
    drop = rng.random((n, R)) < np.asarray(missing)
    labels[drop] = -1
    return labels


def sparse_rows(n, K, seed):
    """Memberships on the simplex with some exact zeros, as the solver produces."""
    rng = np.random.default_rng(seed)
    Y = rng.dirichlet(np.ones(K), size=n)
    Y[rng.random((n, K)) < 0.4] = 0.0
    Y[Y.sum(axis=1) == 0, 0] = 1.0
    return np.ascontiguousarray(Y / Y.sum(axis=1, keepdims=True))


MISSING = {
    "complete": 0.0,
    "subsampled": 0.2,
    # partitions sampling under half of the items take the direct (not complement) route
    "mixed": [0.1, 0.7, 0.0, 0.9, 0.3, 0.6, 0.2, 0.8, 0.5, 0.05],
}


@pytest.mark.parametrize("missing", list(MISSING))
@pytest.mark.parametrize("seed", [0, 1])
def test_objective_gradient_curvature_equal_all_pairs(missing, seed):
    labels = ensemble(50, 10, MISSING[missing], seed)
    Y = sparse_rows(50, 4, seed)
    f, G, H = brute_force(labels, Y)
    op = LowRankL2(labels)
    G2, H2 = np.empty_like(Y), np.empty_like(Y)
    f2 = op.weights(Y, G2, H2) + l2_constant(labels)
    assert f2 == pytest.approx(f, rel=1e-10)
    assert op.objective(Y) + l2_constant(labels) == pytest.approx(f, rel=1e-10)
    np.testing.assert_allclose(G2, G, rtol=0, atol=1e-10 * np.abs(G).max())
    np.testing.assert_allclose(H2, H, rtol=0, atol=1e-10 * np.abs(H).max())
    N = np.asarray(coassociation(labels)[1], float)
    weight = N.sum(axis=1) - np.diag(N)
    np.testing.assert_array_equal(op.row_weight, weight)


def test_dense_rows_and_large_label_values():
    labels = ensemble(40, 6, 0.3, 3)
    Y = np.random.default_rng(3).dirichlet(np.ones(3), size=40)
    # cluster ids far above n are renumbered, which leaves C unchanged
    big = np.where(labels >= 0, labels * 1_000_003, -1).astype(np.int32)
    f, G, _ = brute_force(labels, Y)
    op = LowRankL2(big)
    G2, H2 = np.empty_like(Y), np.empty_like(Y)
    assert op.weights(Y, G2, H2) + l2_constant(big) == pytest.approx(f, rel=1e-10)
    np.testing.assert_allclose(G2, G, rtol=0, atol=1e-10 * np.abs(G).max())


def test_constant_equals_all_pairs():
    labels = ensemble(30, 7, 0.4, 5)
    C, N = (np.asarray(M, float) for M in coassociation(labels))
    iu = np.triu_indices(30, 1)
    c, m = C[iu], N[iu]
    expected = float((c[m > 0] ** 2 / m[m > 0]).sum())
    assert l2_constant(labels) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("missing", ["subsampled", "mixed"])
def test_segment_derivatives_are_the_objective_s(missing):
    """``phi(t) = f(Y + t D)`` is a quartic: its derivatives from the coefficients are exact."""
    labels = ensemble(40, 10, MISSING[missing], 7)
    rng = np.random.default_rng(7)
    Y = sparse_rows(40, 4, 8)
    D = rng.dirichlet(np.ones(4), size=40) - Y
    op = LowRankL2(labels)
    op.segment(Y, D)
    ts = np.arange(5.0)
    vals = [op.objective(Y + t * D) for t in ts]
    poly = np.polynomial.Polynomial.fit(ts, vals, 4).convert()
    for t in (0.0, 0.37, 1.0):
        d1, d2 = op.phi(t)
        scale = np.abs(vals).max()
        assert d1 == pytest.approx(poly.deriv(1)(t), abs=1e-8 * scale)
        assert d2 == pytest.approx(poly.deriv(2)(t), abs=1e-8 * scale)


@pytest.mark.parametrize("missing", [None, 0.2])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_solver_matches_dense_batch(missing, seed):
    truth, labels = planted(n_per=25, k=4, R=20, noise=0.3, missing=missing, seed=seed)
    C, N = coassociation(labels)
    kw = {"n_init": 2, "tol": 1e-7, "random_state": seed}
    dense = pcc(C, N, 5, "l2", solver="batch", **kw)
    low = pcc_lowrank(labels, 5, **kw)
    assert dense.converged and low.converged
    assert low.objective + l2_constant(labels) == pytest.approx(dense.objective, rel=1e-6)
    assert adjusted_rand_index(low.labels, dense.labels) == 1.0
    assert adjusted_rand_index(low.labels, truth) == 1.0
    assert low.solver == "batch-lowrank"
    assert low.kkt_gap <= 1e-7
    # the batch steps never raise the objective
    assert np.all(np.diff(low.objective_trace) <= 1e-9 * np.abs(low.objective_trace).max())


def test_from_init_and_isolated_items():
    _, labels = planted(n_per=20, k=3, R=10, noise=0.2, missing=0.1, seed=4)
    labels[0] = -1  # never sampled: no co-sampled partner
    labels[1, 1:] = -1  # sampled once, alone in its partition
    labels[1:, 0] = np.where(np.arange(1, 60) == 1, 0, -1)
    init = np.full((60, 3), 1 / 3)
    init[np.arange(60), np.arange(60) // 20] += 0.3
    init /= init.sum(axis=1, keepdims=True)
    res = pcc_lowrank(labels, 3, init=init)
    assert res.n_isolated == 2
    np.testing.assert_allclose(res.membership[:2], 1 / 3)
    np.testing.assert_allclose(res.membership.sum(axis=1), 1.0)
    assert res.restart_objectives.shape == (1,)


@pytest.mark.parametrize("divergence", ["kl", "power"])
def test_other_divergences_refused(divergence):
    from scconsensus.core import Bregman

    _, labels = planted(n_per=10, k=3, R=5)
    div = Bregman.power(1.5) if divergence == "power" else divergence
    with pytest.raises(ValueError, match="l2"):
        pcc_lowrank(labels, 3, div)


def test_consensus_route_matches_dense_route(monkeypatch):
    import scconsensus as scc
    from scconsensus.core import pcc_consensus

    truth, labels = planted(n_per=30, k=4, R=24, noise=0.25, missing=0.2, seed=3)
    # "auto" fits a subset above auto_fit_size items on the other routes, every item here
    monkeypatch.setattr(scc.settings, "auto_fit_size", 50)
    kw = {"divergence": "l2", "tol": 1e-7}
    low = pcc_consensus(labels, 4, route=FitRoute(mode="lowrank", fit_size="auto"), **kw)
    dense = pcc_consensus(labels, 4, route=FitRoute(mode="dense"), solver="batch", **kw)
    assert low.route == "lowrank" and low.fit_indices is None
    assert low.fit.solver == "batch-lowrank"
    assert low.plan.n_clusters == dense.plan.n_clusters
    const = l2_constant(labels[:, low.plan.columns])
    assert low.fit.objective + const == pytest.approx(dense.fit.objective, rel=1e-6)
    assert adjusted_rand_index(low.labels, dense.labels) == 1.0
    assert adjusted_rand_index(low.labels, truth) == 1.0
    # an explicit subset is fitted and extended as on the other routes
    sub = pcc_consensus(labels, 4, route=FitRoute(mode="lowrank", fit_size=60), **kw)
    assert sub.fit_indices.size == 60 and sub.membership.shape[0] == labels.shape[0]
    assert adjusted_rand_index(sub.labels, truth) == 1.0


def test_consensus_route_refuses_kl_and_greedy():
    from scconsensus.core import pcc_consensus

    _, labels = planted(n_per=10, k=3, R=6)
    with pytest.raises(ValueError, match="divergence='l2' only"):
        pcc_consensus(labels, 3, route=FitRoute(mode="lowrank"))  # the default divergence is KL
    with pytest.raises(ValueError, match="solver"):
        pcc_consensus(labels, 3, "l2", route=FitRoute(mode="lowrank"), solver="greedy")


def test_tl_pcc_lowrank_route():
    import io

    import anndata as ad
    import scanpy as sc

    import scconsensus as scc

    truth, labels = planted(n_per=20, k=3, R=15, noise=0.2, missing=0.1, seed=6)
    adata = ad.AnnData(X=np.zeros((labels.shape[0], 2)))
    adata.obsm["scc_ensemble"] = labels
    old_verbosity, old_file = sc.settings.verbosity, sc.settings.logfile
    buffer = io.StringIO()
    sc.settings.verbosity, sc.settings.logfile = 3, buffer
    try:
        scc.tl.pcc(adata, 3, "l2", mode="lowrank")
    finally:
        sc.settings.verbosity, sc.settings.logfile = old_verbosity, old_file
    uns = adata.uns["pcc"]
    assert uns["route"] == "lowrank" and uns["solver"] == "batch-lowrank"
    assert uns["params"]["mode"] == "lowrank"
    assert adjusted_rand_index(adata.obs["pcc"], truth) == 1.0
    assert "all pairs of 60 items from the low-rank co-association" in buffer.getvalue()


def test_dense_route_refused_names_lowrank(monkeypatch):
    import scconsensus as scc
    from scconsensus.core import pcc_consensus

    truth, labels = planted(n_per=40, k=3, R=12, noise=0.2, missing=0.2, seed=8)
    monkeypatch.setattr(scc.settings, "max_dense_bytes", 10_000)
    with pytest.raises(MemoryError, match=r"120 x 120.*mode='sparse'.*mode='lowrank'"):
        pcc_consensus(labels, 3, "l2", route=FitRoute(mode="dense", fit_size="auto"))
    res = pcc_consensus(labels, 3, "l2", route=FitRoute(mode="lowrank", fit_size="auto"))
    assert adjusted_rand_index(res.labels, truth) == 1.0
