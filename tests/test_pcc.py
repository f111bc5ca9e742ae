"""PCC array core: the invariants of Sect. 5 of the paper, divergences, and input checks."""

from __future__ import annotations

import re

import numpy as np
import pytest
import scipy.sparse as sp
from _helpers import np_kkt_gap, planted
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scconsensus.core import Bregman, PCCResult, cluster_relationships, pcc
from scconsensus.core.coassociation import coassociation
from scconsensus.metrics import adjusted_rand_index

# -- independent numpy reference of eq. (3) and its gradient (eq. 7) --------------------------


def np_div(name, p, q):
    q = np.clip(q, 0.0, 1.0)
    if name == "l2":
        return (p - q) ** 2
    if name == "kl":
        with np.errstate(divide="ignore", invalid="ignore"):
            a = np.where(p > 0, p * np.log(p / q), 0.0)
            b = np.where(p < 1, (1 - p) * np.log((1 - p) / (1 - q)), 0.0)
        return a + b
    raise AssertionError(name)


def np_objective(C, N, Y, name):
    C = np.asarray(C, float)
    N = np.asarray(N, float)
    iu = np.triu_indices(N.shape[0], 1)
    n_ij = N[iu]
    keep = n_ij > 0
    q = (Y @ Y.T)[iu][keep]
    return float((n_ij[keep] * np_div(name, C[iu][keep] / n_ij[keep], q)).sum())


# -- the optimisation invariants ----------------------------------------------------------


@pytest.mark.slow
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10_000),
    n=st.integers(6, 24),
    R=st.integers(2, 12),
    K=st.integers(2, 5),
    divergence=st.sampled_from(["kl", "l2", "power"]),
    missing=st.sampled_from([0.0, 0.3]),
    sparse=st.booleans(),
)
def test_objective_never_increases(seed, n, R, K, divergence, missing, sparse):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 3, size=(n, R)).astype(np.int32)
    labels[rng.random((n, R)) < missing] = -1
    C, N = coassociation(labels)
    np.fill_diagonal(N, 0)
    np.fill_diagonal(C, 0)
    if N.sum() == 0 or K >= n:
        return
    if sparse:
        # a random half of the pairs, as in Sect. 5.4
        pairs = np.column_stack(np.triu_indices(n, 1))
        pairs = pairs[rng.random(len(pairs)) < 0.5]
        if len(pairs) == 0:
            return
        C, N = coassociation(labels, "sparse", pairs=pairs)
        if N.nnz == 0:
            return
    div = Bregman.power(1.5) if divergence == "power" else divergence
    Y0 = rng.dirichlet(np.ones(K), size=n)
    objectives = []
    for m in range(0, 30, 3):
        res = pcc(C, N, K, div, init=Y0, max_iter=m, tol=1e-12, min_mass=0.0)
        objectives.append(res.objective)
        trace = res.objective_trace
        assert np.all(np.diff(trace) <= 1e-9 * (1 + abs(trace[0])))
        assert np.all(np.isfinite(res.membership))
    objectives = np.array(objectives)
    assert np.all(np.isfinite(objectives))
    assert np.all(np.diff(objectives) <= 1e-9 * (1 + objectives[0]))


@pytest.mark.parametrize("divergence", ["kl", "l2", Bregman.power(1.5)])
@pytest.mark.parametrize("missing", [0.0, 0.4])
def test_memberships_on_simplex(divergence, missing):
    _, labels = planted(n_per=12, missing=missing, seed=3)
    C, N = coassociation(labels)
    res = pcc(C, N, 5, divergence, n_init=2, random_state=1, min_mass=0.0)
    Y = res.membership
    assert np.all(np.isfinite(Y))
    assert Y.min() >= 0.0
    np.testing.assert_allclose(Y.sum(axis=1), 1.0, atol=1e-12)
    assert res.labels.dtype == np.int32
    np.testing.assert_array_equal(res.labels, Y.argmax(axis=1))
    masses = Y.sum(axis=0)
    assert np.all(np.diff(masses) <= 1e-12)  # ordered by mass


@pytest.mark.parametrize("divergence", ["kl", "l2"])
def test_kkt_gap_below_tolerance_at_convergence(planted_dense, divergence):
    _, C, N = planted_dense
    tol = 1e-6
    res = pcc(C, N, 4, divergence, n_init=1, tol=tol, random_state=0, min_mass=0.0)
    assert res.converged
    assert res.kkt_gap <= tol
    # independent check of the KKT conditions (eq. 4 of PEACE) on the returned memberships,
    # padding clusters dropped for having exactly no mass with zero columns
    Y = np.zeros((C.shape[0], 4))
    Y[:, : res.membership.shape[1]] = res.membership
    gap, scale = np_kkt_gap(C, N, Y, divergence)
    assert gap / scale <= 2 * tol
    assert res.objective == pytest.approx(np_objective(C, N, Y, divergence), rel=1e-9)


def test_uniform_start_is_stationary(planted_dense):
    _, C, N = planted_dense
    n = C.shape[0]
    res = pcc(C, N, 3, "kl", init=np.full((n, 3), 1 / 3), min_mass=0.0)
    assert res.converged and res.n_iter == 0
    # ... which is why PCC starts from random points of the simplex
    res = pcc(C, N, 3, "kl", random_state=0)
    assert res.n_iter > 0 and res.objective < np_objective(C, N, np.full((n, 3), 1 / 3), "kl")


@pytest.mark.parametrize("divergence", ["kl", "l2"])
def test_k_is_a_maximum_and_planted_partition_recovered(planted_dense, divergence):
    truth, C, N = planted_dense
    res = pcc(C, N, 8, divergence, random_state=0)
    assert res.n_clusters == 3
    assert adjusted_rand_index(truth, res.labels) == pytest.approx(1.0)
    assert res.cluster_order.size == 3
    assert isinstance(res, PCCResult) and "converged" in repr(res)


def test_iterations_name_their_unit(planted_dense):
    """The sampled-pairs route counted item moves (24,089) where all pairs counted batch
    steps (32), both logged as "iterations" (a user trial): the unit is now said."""
    _, C, N = planted_dense
    greedy = pcc(C, N, 3, "kl", solver="greedy", random_state=0)
    batch = pcc(C, N, 3, "kl", solver="batch", random_state=0)
    assert greedy.iterations == f"{greedy.n_iter} item moves" and greedy.n_iter > 0
    steps = batch.n_iter - batch.n_polish
    assert batch.iterations.startswith(f"{steps} batch steps") and steps > 0
    assert ("item moves" in batch.iterations) == (batch.n_polish > 0)
    assert batch.iterations in repr(batch)


def test_restarts_keep_best_and_are_reproducible(planted_dense):
    _, C, N = planted_dense
    # min_mass=0 keeps every cluster, so the returned point is the best restart's
    a = pcc(C, N, 5, "kl", n_init=3, random_state=7, min_mass=0.0)
    b = pcc(C, N, 5, "kl", n_init=3, random_state=7, min_mass=0.0)
    np.testing.assert_array_equal(a.membership, b.membership)
    assert a.objective == min(a.restart_objectives)
    assert a.restart_objectives.shape == (3,)


# -- dense and sparse (Sect. 5.4) solvers ---------------------------------------------------


@pytest.mark.parametrize("divergence", ["kl", "l2", Bregman.power(1.7)])
@pytest.mark.parametrize("missing", [0.0, 0.3])
def test_dense_and_sparse_agree_on_all_pairs(divergence, missing):
    _, labels = planted(n_per=12, missing=missing, seed=5)
    n = labels.shape[0]
    C, N = coassociation(labels)
    iu = np.triu_indices(n, 1)
    Cs, Ns = coassociation(labels, "sparse", pairs=np.column_stack(iu))
    # same starts, same algorithm; the dense solver recomputes y_J . Y where the sparse
    # one patches A on the pattern, so paths differ by rounding only: run both to a
    # tight tolerance and compare the KKT points they reach
    kw = dict(solver="greedy", n_init=2, random_state=3, min_mass=0.0, tol=1e-9)
    dense = pcc(C, N, 4, divergence, **kw)
    sparse = pcc(Cs, Ns, 4, divergence, **kw)
    assert sparse.solver == "greedy-sparse" and dense.solver == "greedy"
    assert dense.converged and sparse.converged
    assert abs(sparse.n_iter - dense.n_iter) <= 0.2 * dense.n_iter
    np.testing.assert_allclose(sparse.membership, dense.membership, atol=1e-5)
    assert sparse.objective == pytest.approx(dense.objective, rel=1e-9)
    np.testing.assert_allclose(sparse.restart_objectives, dense.restart_objectives, rtol=1e-9)


def test_sparse_sampled_pairs_incomplete_partitions():
    truth, labels = planted(n_per=40, k=3, R=40, noise=0.1, missing=0.5, seed=11)
    n = labels.shape[0]
    rng = np.random.default_rng(0)
    first = np.repeat(np.arange(n), 8)
    second = rng.integers(0, n, first.size)
    pairs = np.column_stack([first, second])
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    C, N = coassociation(labels, "sparse", pairs=pairs)
    res = pcc(C, N, 6, "kl", random_state=0)
    assert res.converged
    # the three planted clusters carry the mass; with few sampled pairs the model may
    # also fit small clusters (about one item's worth each) to the noise
    mass = res.membership.sum(axis=0)
    assert mass[:3].sum() > 0.97 * n
    assert adjusted_rand_index(truth, res.labels) > 0.95


def test_sparse_isolated_items_get_uniform_membership():
    _, labels = planted(n_per=10, seed=2)
    n = labels.shape[0]
    pairs = np.column_stack(np.triu_indices(n - 1, 1))  # item n-1 in no pair
    C, N = coassociation(labels, "sparse", pairs=pairs)
    res = pcc(C, N, 4, "l2", random_state=0)
    assert res.n_isolated == 1
    np.testing.assert_allclose(res.membership[-1], 1.0 / res.n_clusters)


# -- divergences ---------------------------------------------------------------------------


def test_builtin_divergences_match_formulas():
    p = np.array([0.0, 0.0, 0.3, 1.0, 1.0, 0.5])
    q = np.array([0.0, 0.4, 0.6, 1.0, 0.2, 0.5])
    np.testing.assert_allclose(Bregman.l2().divergence(p, q), (p - q) ** 2)
    np.testing.assert_allclose(Bregman.kl().divergence(p, q), np_div("kl", p, q), atol=1e-15)
    # the KL terms stay defined at the border of the domain, never NaN
    assert Bregman.kl().divergence(0.3, 0.0) == np.inf
    assert Bregman.kl().divergence(0.3, 1.0) == np.inf
    assert np.isfinite(Bregman.kl().derivative(np.array([0.0, 1.0]), np.array([0.0, 1.0]))).all()
    assert not np.isnan(Bregman.kl().derivative(0.5, np.array([0.0, 1.0]))).any()


@pytest.mark.parametrize("bregman", [Bregman.kl(), Bregman.l2(), Bregman.power(1.3)])
def test_derivative_is_derivative_of_divergence(bregman):
    p = np.array([0.0, 0.2, 0.5, 0.9, 1.0])
    q = np.array([0.3, 0.7, 0.1, 0.5, 0.6])
    h = 1e-6
    num = (bregman.divergence(p, q + h) - bregman.divergence(p, q - h)) / (2 * h)
    np.testing.assert_allclose(bregman.derivative(p, q), num, rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_not_double_convex_is_refused():
    # Itakura-Saito (phi = -sum log x) is not convex in its second argument on the simplex
    with pytest.raises(ValueError, match="not double-convex"):
        Bregman(
            lambda x: -np.log(x[0]) - np.log(x[1]),
            lambda x: -1.0 / x,
            lambda x: np.diag(1.0 / x**2),
            name="itakura-saito",
        )
    with pytest.raises(ValueError, match="1 < a <= 2"):
        Bregman.power(3.0)


@pytest.mark.parametrize(
    ("grad", "hess", "rates"),
    [
        (lambda x: x, lambda x: 2.0 * np.eye(2), "rate 1, its derivative (from hess) says 0.2"),
        (lambda x: 2.0 * x, lambda x: np.eye(2), "rate 0.2, its derivative (from hess) says 0.1"),
    ],
    ids=["half the gradient", "half the Hessian"],
)
def test_grad_or_hess_not_of_phi_is_refused(grad, hess, rates):
    # phi = |x|^2: gradient 2x, Hessian 2I; either one wrong made the divergence (phi, grad)
    # and its derivative (hess) disagree, and the solvers ran on the mismatch
    with pytest.raises(ValueError, match="grad and hess do not match phi.*" + re.escape(rates)):
        Bregman(lambda x: x @ x, grad, hess, name="sq")
    Bregman(lambda x: x @ x, grad, hess, name="sq", check=False)  # the user's call


def test_non_numba_phi_is_refused():
    class Opaque:
        pass

    obj = Opaque()
    with pytest.raises(ValueError, match="numba-compilable"):
        Bregman(lambda x: obj, lambda x: x, lambda x: np.eye(2))
    with pytest.raises(ValueError, match="callable"):
        Bregman(1.0, lambda x: x, lambda x: np.eye(2))


# -- bad input -------------------------------------------------------------------------------


def test_bad_input_errors(planted_dense):
    _, C, N = planted_dense
    n = C.shape[0]
    with pytest.raises(ValueError, match="shape"):
        pcc(C, N[:-1, :-1], 3)
    with pytest.raises(ValueError, match="square"):
        pcc(C[:, :-1], N[:, :-1], 3)
    Cf = C.astype(float)
    Cf[0, 1] = Cf[1, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        pcc(Cf, N, 3)
    with pytest.raises(ValueError, match="too large"):
        pcc(C, N, n)
    with pytest.raises(ValueError, match="at least 2"):
        pcc(C, N, 1)
    with pytest.raises(ValueError, match="exceeds N"):
        pcc(N + 1, N, 3)
    asym = C.copy()
    asym[0, 1] -= 1
    with pytest.raises(ValueError, match="symmetric"):
        pcc(asym, N, 3)
    with pytest.raises(ValueError, match="non-negative"):
        pcc(-C, N, 3)
    with pytest.raises(ValueError, match="co-sampled"):
        pcc(np.zeros_like(C), np.eye(n, dtype=np.int32), 3)
    with pytest.raises(ValueError, match="both dense"):
        pcc(sp.csr_matrix(C), N, 3)
    with pytest.raises(ValueError, match="divergence"):
        pcc(C, N, 3, "hellinger")
    with pytest.raises(ValueError, match="solver"):
        pcc(C, N, 3, solver="newton")
    with pytest.raises(ValueError, match="n_init"):
        pcc(C, N, 3, n_init=0)
    with pytest.raises(ValueError, match="tol"):
        pcc(C, N, 3, tol=0)
    with pytest.raises(ValueError, match="init"):
        pcc(C, N, 3, init=np.ones((n, 3)))


_FAULTS = {
    "nan": "C contains NaN",
    "inf_n": "N contains NaN",
    "negative": "non-negative",
    "c_above_n": "exceeds N",
    "asymmetric_c": "symmetric",
    "asymmetric_n": "symmetric",
}
# int32, int64 and float64 take the one-pass numba check from NUMPY_CHECKS_BELOW items on
# (the tests below run both checks on 150 items), the others NumPy's; the faults each
# dtype can hold
_DENSE_CASES = [
    (dtype, fault)
    for dtype in (np.int32, np.int64, np.float64, np.float32, np.int16, np.uint16)
    for fault in _FAULTS
    if not (fault in ("nan", "inf_n") and np.dtype(dtype).kind != "f")
    and not (fault == "negative" and np.dtype(dtype).kind == "u")
]


def _counts_with_fault(dtype, fault, i=140, j=3):
    """Valid counts on 150 items (3 x 3 tiles of 64) with one fault at ``(i, j)``."""
    rng = np.random.default_rng(0)
    N = rng.integers(1, 9, size=(150, 150))
    N = N + N.T
    C = np.minimum(np.minimum(rng.integers(0, 9, size=N.shape), N), N.T)
    C = np.minimum(C, C.T)
    C, N = C.astype(dtype), N.astype(dtype)
    if fault == "nan":
        C[i, j] = np.nan
    elif fault == "inf_n":
        N[i, j] = N[j, i] = np.inf
    elif fault == "negative":
        C[i, j] = C[j, i] = -1
    elif fault == "c_above_n":
        C[i, j] = C[j, i] = N[i, j] + 1
    elif fault == "asymmetric_c":
        C[i, j] = C[j, i] - 1 if C[j, i] > 0 else 1
    elif fault == "asymmetric_n":
        N[i, j] += 1
    return C, N


@pytest.fixture(params=["numba", "numpy"])
def dense_check(request, monkeypatch):
    """Which check of the counts pcc takes for the fast dtypes (the size decides it)."""
    from scconsensus.core.pcc import _core

    monkeypatch.setattr(_core, "NUMPY_CHECKS_BELOW", 0 if request.param == "numba" else 10**9)
    return request.param


@pytest.mark.parametrize("dtype, fault", _DENSE_CASES)
def test_dense_checks_find_one_bad_entry_anywhere(dtype, fault, dense_check):
    """One bad entry, below the diagonal in a tile far from the first, is found and named."""
    C, N = _counts_with_fault(dtype, fault)
    with pytest.raises(ValueError, match=_FAULTS[fault]):
        pcc(C, N, 3)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_dense_checks_report_faults_in_order(dtype, dense_check):
    """With several faults, the first in the order non-finite, negative, C > N, asymmetric."""
    order = ["nan", "negative", "c_above_n", "asymmetric_n"]
    C0, N0 = _counts_with_fault(dtype, None)
    for first in range(len(order)):
        C, N = C0.copy(), N0.copy()
        for k, fault in enumerate(order[first:]):
            Cf, Nf = _counts_with_fault(dtype, fault, i=10 + 40 * k, j=100 - 30 * k)
            C[Cf != C0], N[Nf != N0] = Cf[Cf != C0], Nf[Nf != N0]
        # Fortran order: the one-pass check copies to C order first
        with pytest.raises(ValueError, match=_FAULTS[order[first]]):
            pcc(np.asfortranarray(C), np.asfortranarray(N), 3)


@pytest.mark.parametrize("dtype", [np.int32, np.float64, np.float32])
def test_dense_checks_pass_valid_counts(dtype, dense_check):
    C, N = _counts_with_fault(dtype, None)
    assert pcc(C, N, 3, n_init=1, max_iter=5).n_iter <= 5


def test_bad_sparse_input_errors():
    _, labels = planted(n_per=6, seed=1)
    n = labels.shape[0]
    Cs, Ns = coassociation(labels, "sparse", pairs=np.column_stack(np.triu_indices(n, 1)))
    bad = Cs.tolil()
    bad[0, 1] = Ns[0, 1] + 1
    bad[1, 0] = Ns[0, 1] + 1
    with pytest.raises(ValueError, match="exceeds N"):
        pcc(bad.tocsr(), Ns, 3)
    asym = Ns.tolil()
    asym[0, 1] = 0
    asym = asym.tocsr()
    asym.eliminate_zeros()
    with pytest.raises(ValueError, match=r"C has entries where N is zero|symmetric"):
        pcc(Cs, asym, 3)
    with pytest.raises(ValueError, match="same n x n"):
        pcc(Cs[:-1, :-1], Ns, 3)


def _canonical_pair():
    _, labels = planted(n_per=8, missing=0.2, seed=3)
    n = labels.shape[0]
    rng = np.random.default_rng(0)
    pairs = rng.integers(0, n, size=(120, 2))
    return coassociation(labels, "sparse", pairs=pairs)


def _csr_parts(M):
    return M.data.copy(), M.indices.copy(), M.indptr.copy()


def test_canonical_sparse_check_matches_general_path():
    from scconsensus.core.pcc._core import _canonical_sparse, _check_sparse

    Cs, Ns = _canonical_pair()
    fast = _canonical_sparse(Cs, Ns)
    assert fast is not None
    # COO input takes the general path (sum of duplicates, sorted keys, mirror search)
    slow = _check_sparse(Cs.tocoo(), Ns.tocoo())
    for a, b in zip(fast, slow, strict=True):
        np.testing.assert_array_equal(a, b)
        assert np.asarray(a).dtype == np.asarray(b).dtype
    res_fast = pcc(Cs, Ns, 3, n_init=1)
    res_slow = pcc(Cs.tocoo(), Ns.tocoo(), 3, n_init=1)
    np.testing.assert_array_equal(res_fast.membership, res_slow.membership)


def _mutations(Cs, Ns):
    """``(name, C, N)``: one departure from the canonical layout each."""
    row0 = slice(Ns.indptr[0], Ns.indptr[1])
    t0 = Ns.indptr[0]
    j0 = Ns.indices[t0]
    # the mirror (j0, 0) of the first stored entry (0, j0)
    s0 = Ns.indptr[j0] + int(np.searchsorted(Ns.indices[Ns.indptr[j0] : Ns.indptr[j0 + 1]], 0))

    def csr(data, indices, indptr):
        return sp.csr_matrix((data, indices, indptr), shape=Ns.shape)

    out = []
    cd, ci, cp = _csr_parts(Cs)
    nd, ni, nptr = _csr_parts(Ns)
    # unsorted columns in row 0 (valid input: the general path sorts)
    ni2, nd2, cd2 = ni.copy(), nd.copy(), cd.copy()
    for arr in (ni2, nd2, cd2):
        arr[row0] = arr[row0][::-1]
    out.append(("unsorted", csr(cd2, ni2.copy(), cp), csr(nd2, ni2, nptr)))
    # N zero at a stored pair (valid: the general path drops it), on both sides
    nd2 = nd.copy()
    nd2[[t0, s0]] = 0
    cd2 = cd.copy()
    cd2[[t0, s0]] = 0
    out.append(("N zero", csr(cd2, ci, cp), csr(nd2, ni, nptr)))
    for name, arr, val in (
        ("NaN in N", "n", np.nan),
        ("inf in C", "c", np.inf),
        ("negative C", "c", -1.0),
        ("C > N", "c", nd[t0] + 1),
        ("N asymmetric", "n", nd[t0] + 1),
    ):
        d = (cd if arr == "c" else nd).copy()
        d[t0] = val
        C, N = (csr(d, ci, cp), Ns) if arr == "c" else (Cs, csr(d, ni, nptr))
        out.append((name, C, N))
    # C on a pattern other than N's
    out.append(("C pattern", sp.csr_matrix(Cs.toarray()), Ns))
    # a stored pair whose mirror is missing: (0, j0) kept, (j0, 0) dropped in both
    keep = np.ones(nd.size, bool)
    keep[s0] = False
    ptr = nptr.copy()
    ptr[j0 + 1 :] -= 1
    out.append(("no mirror", csr(cd[keep], ci[keep], ptr), csr(nd[keep], ni[keep], ptr)))
    return out


@pytest.mark.parametrize("case", range(9))
def test_canonical_sparse_check_rejects_each_departure(case):
    from scconsensus.core.pcc._core import _canonical_sparse

    Cs, Ns = _canonical_pair()
    name, C, N = _mutations(Cs, Ns)[case]
    assert _canonical_sparse(C, N) is None, name
    # the general path decides and words the error, the same for CSR and COO input
    try:
        expected = pcc(C.tocoo(), N.tocoo(), 3, n_init=1)
    except ValueError as err:
        with pytest.raises(ValueError, match=re.escape(str(err))):
            pcc(C, N, 3, n_init=1)
    else:
        assert name in ("unsorted", "N zero", "C pattern")
        got = pcc(C, N, 3, n_init=1)
        np.testing.assert_array_equal(got.membership, expected.membership)


def test_cluster_relationships_rows_sum_to_one():
    rng = np.random.default_rng(0)
    Y = rng.dirichlet(np.ones(4) * 0.3, size=50)
    M = cluster_relationships(Y, threshold=0.05)
    np.testing.assert_allclose(M.sum(axis=1), 1.0)
    assert np.all(M >= 0)
    hard = np.eye(3)[rng.integers(0, 3, 30)]
    np.testing.assert_allclose(cluster_relationships(hard), np.eye(3))


@pytest.mark.parametrize("sparse", [False, True])
def test_start_outside_kl_domain_is_refused(sparse):
    """A one-hot start puts q = 0 on co-clustered pairs (KL = +inf): a clear error, not NaN."""
    labels = np.repeat(np.repeat(np.arange(3), 20)[:, None], 8, axis=1)
    labels[:6, :4] = (labels[:6, :4] + 1) % 3  # some items co-clustered across groups
    C, N = coassociation(labels)
    if sparse:
        C, N = sp.csr_matrix(C - np.diag(np.diag(C))), sp.csr_matrix(N - np.diag(np.diag(N)))
    one_hot = np.eye(3)[np.repeat(np.arange(3), 20)]
    with pytest.raises(ValueError, match=r"init gives an infinite objective .'kl'.*0\.9 \* init"):
        pcc(C, N, 3, "kl", init=one_hot)
    res = pcc(C, N, 3, "kl", init=0.9 * one_hot + 0.1 / 3)  # the fix the message names
    assert np.isfinite(res.objective_trace).all()
    assert np.isfinite(pcc(C, N, 3, "l2", init=one_hot).objective)  # l2 is finite everywhere
