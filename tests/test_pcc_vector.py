"""The branch-free (vectorised) pair kernels against the generic scalar ones they replace."""

import numpy as np
import pytest

from scconsensus.core.pcc import _batch_dense, _batch_pairs, _batch_terms, _vector
from scconsensus.core.pcc._divergences import KIND_KL, KIND_L2

KINDS = [KIND_KL, KIND_L2]


def _ulps(x, ref):
    return np.abs(x - ref) / np.spacing(np.abs(ref))


def test_vlog_within_one_ulp_of_numpy():
    rng = np.random.default_rng(0)
    x = np.concatenate(
        [
            rng.random(200_000),
            10.0 ** rng.uniform(-323, 307, 200_000),  # subnormals to huge
            1.0 + rng.uniform(-1e-3, 1e-3, 50_000),  # log near 0
            np.sqrt(2) * (1.0 + rng.uniform(-1e-12, 1e-12, 1000)),  # the reduction's edge
            2.0 ** np.arange(-1074, 1024),
            [np.nextafter(np.sqrt(2), 0), np.sqrt(2), 1.0, np.finfo(float).max, 5e-324],
        ]
    )
    got = np.array([_vector.vlog(v) for v in x[:2000]])  # the scalar entry point too
    assert _ulps(got, np.log(x[:2000])).max() <= 1.0
    out = np.empty_like(x)
    _loop_vlog(x, out)
    assert _ulps(out, np.log(x)).max() <= 1.0
    assert (out == np.log(x)).mean() > 0.9


def _loop_vlog(x, out):
    import numba

    # as the pair loops compile it: vectorised, with fused multiply-adds
    @numba.njit(fastmath=_vector.FASTMATH)
    def run(x, out):
        for t in range(x.shape[0]):
            out[t] = _vector.vlog(x[t])

    run(x, out)


def _pq_grid():
    p = np.array([0.0, 1.0, 0.5, 1 / 3, 0.01, 0.99, 1 / 97])
    q = [-1e-17, 0.0, 1e-309, 1e-300, 1e-9, 9.99e-4, 1e-3, 0.2, 0.5, 1 / 3, 0.999, 1 - 1e-13, 1.0]
    q = np.array([*q, 1 + 2e-16])  # q a hair outside [0, 1] (rounding) is clipped
    P, Q = np.meshgrid(p, q)
    return P.ravel(), Q.ravel()


@pytest.mark.parametrize("kind", KINDS)
def test_terms_match_the_generic_kernel(kind):
    for p, q in zip(*_pq_grid(), strict=True):
        want = _batch_terms._terms(kind, 0.0, p, q)
        got = _vector.terms(kind, p, q)
        d1d2 = _vector.derivs(kind, p, q)
        assert got[1:] == pytest.approx(d1d2, rel=0, abs=0)
        for g, w in zip(got, want, strict=True):
            if np.isinf(w):
                assert g == w, (p, q)
            else:
                # 1 ulp of each logarithm and of p / q, which d's two terms can cancel
                # down to (a few ulp of d near p = q); d', d'' add their terms in another order.
                # At p = 0 nothing cancels: relative accuracy down to the smallest d
                tiny = 0.0 if p == 0.0 else 1e-15
                assert g == pytest.approx(w, rel=2e-15, abs=tiny), (p, q)


def _dense_case(n, seed):
    """Symmetric counts with every special pair: N = 0, p in {0, 1}, q = 0, q outside [0, 1]."""
    rng = np.random.default_rng(seed)
    N = rng.integers(0, 6, (n, n)).astype(np.int32)
    C = np.minimum(rng.integers(0, 6, (n, n)), N).astype(np.int32)
    C[rng.random((n, n)) < 0.5] = 0
    C, N = np.triu(C, 1) + np.triu(C, 1).T, np.triu(N, 1) + np.triu(N, 1).T
    P, wrow = np.empty((n, n)), np.empty(n)
    _batch_dense._ratios(C, N, P, wrow)
    A, B, E = (np.asfortranarray(rng.random((n, n)) * rng.random((n, n))) for _ in range(3))
    A[rng.random((n, n)) < 0.3] = 0.0
    A[rng.random((n, n)) < 0.02] = 1.0 + 1e-16
    A[rng.random((n, n)) < 0.02] = -1e-17
    B -= 0.5 * E
    return P, N, A, B, E


@pytest.mark.parametrize("kind", KINDS)
def test_dense_columns_match_the_generic_loop(kind):
    P, N, A, B, E = _dense_case(120, 1)
    n = N.shape[0]
    W, W2 = np.zeros((n, n), order="F"), np.zeros((n, n), order="F")
    V, V2 = np.zeros((n, n), order="F"), np.zeros((n, n), order="F")
    for j in range(n):
        f = _batch_dense._vec_weights_col(P, N, A, W, W2, kind, j)
        g = _batch_dense._dense_weights_col(P, N, A, V, V2, kind, 0.0, j)
        assert f == pytest.approx(g, rel=1e-13) or (np.isinf(f) and f == g)
        for t in (0.0, 0.3, 1.0):
            got = _batch_dense._vec_phi_col(P, N, A, B, E, t, kind, j)
            want = _batch_dense._dense_phi_col(P, N, A, B, E, t, kind, 0.0, j)
            np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_allclose(W, V, rtol=4e-16, atol=0)
    np.testing.assert_allclose(W2, V2, rtol=4e-16, atol=0)
    # the parallel passes route these kinds to the vectorised columns
    f = _batch_dense._dense_weights(P, N, A, W, W2, kind, 0.0)
    f0 = sum(_batch_dense._dense_weights_col(P, N, A, V, V2, kind, 0.0, j) for j in range(n))
    assert f == pytest.approx(f0, rel=1e-13)
    np.testing.assert_allclose(np.triu(W, 1), np.triu(V, 1), rtol=4e-16, atol=0)
    phi = _batch_dense._dense_phi(P, N, A, B, E, 0.3, kind, 0.0)
    phi0 = np.sum(
        [_batch_dense._dense_phi_col(P, N, A, B, E, 0.3, kind, 0.0, j) for j in range(n)], 0
    )
    np.testing.assert_allclose(phi, phi0, rtol=1e-12)
    # what the solver calls for these kinds: the passes compiled for them alone, same bits
    U, U2 = np.zeros((n, n), order="F"), np.zeros((n, n), order="F")
    assert _batch_dense._dense_weights_vec(P, N, A, U, U2, kind, 0.0) == f
    np.testing.assert_array_equal(np.triu(U, 1), np.triu(W, 1))
    np.testing.assert_array_equal(np.triu(U2, 1), np.triu(W2, 1))
    assert _batch_dense._dense_phi_vec(P, N, A, B, E, 0.3, kind, 0.0) == phi


@pytest.mark.parametrize("kind", KINDS)
def test_segment_phi_matches_the_generic_loop(kind):
    rng = np.random.default_rng(2)
    m = 5000
    seg = np.empty((5, m))
    seg[0] = rng.integers(1, 9, m)
    seg[1] = np.where(rng.random(m) < 0.5, 0.0, rng.integers(0, 9, m) / 8)
    seg[2] = np.where(rng.random(m) < 0.2, 0.0, rng.random(m))
    seg[4] = rng.normal(0, 0.01, m)
    seg[3] = rng.normal(0, 0.1, m)
    for t in (0.0, 0.5, 1.0):
        got = _batch_pairs._vec_segment_phi(seg, 0, m, t, kind)
        want = (0.0, 0.0)
        for r in range(m):
            g1, g2 = _batch_terms._phi_terms(kind, 0.0, *seg[:, r], t)
            want = (want[0] + g1, want[1] + g2)
        np.testing.assert_allclose(got, want, rtol=1e-11)
