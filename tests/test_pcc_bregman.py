"""PCC with user-supplied Bregman divergences (phi, gradient, Hessian on the 2-simplex).

Each custom divergence compiles its own numba kernels (not cached on disk), so
these tests are kept apart from the fast core tests.
"""

from __future__ import annotations

import numpy as np
import pytest
from _helpers import planted
from scipy import sparse

from scconsensus.core import Bregman, pcc
from scconsensus.core.coassociation import coassociation


@pytest.fixture(scope="module")
def bregman_planted():
    """A planted ensemble's co-association (truth, C, N), drawn without sub-sampling."""
    truth, labels = planted(missing=None)
    C, N = coassociation(labels)
    return truth, C, N


@pytest.mark.slow
def test_custom_power_phi_divergence_matches_builtin():
    a = 1.5
    custom = Bregman(
        lambda x: (x[0] ** a + x[1] ** a - 1.0) / (a * (a - 1.0)),
        lambda x: np.array([x[0] ** (a - 1.0), x[1] ** (a - 1.0)]) / (a - 1.0),
        lambda x: np.array([[x[0] ** (a - 2.0), 0.0], [0.0, x[1] ** (a - 2.0)]]),
        name="power-custom",
    )
    p = np.linspace(0, 1, 7)
    q = np.linspace(0.05, 0.95, 7)
    np.testing.assert_allclose(custom.divergence(p, q), Bregman.power(a).divergence(p, q))
    np.testing.assert_allclose(custom.derivative(p, q), Bregman.power(a).derivative(p, q))


@pytest.mark.slow
def test_custom_entropy_phi_is_kl(bregman_planted):
    _, C, N = bregman_planted
    kl = Bregman(
        lambda x: x[0] * np.log(x[0]) + x[1] * np.log(x[1]),
        lambda x: np.log(x) + 1.0,
        lambda x: np.diag(1.0 / x),
        name="neg-entropy",
    )
    np.testing.assert_allclose(
        kl.divergence([0.0, 1.0, 0.3], [0.2, 0.6, 0.3]),
        Bregman.kl().divergence([0.0, 1.0, 0.3], [0.2, 0.6, 0.3]),
        rtol=1e-12,
    )
    a = pcc(C, N, 4, kl, n_init=1, random_state=4, tol=1e-8)
    b = pcc(C, N, 4, "kl", n_init=1, random_state=4, tol=1e-8)
    assert a.objective == pytest.approx(b.objective, rel=1e-6)
    np.testing.assert_allclose(a.membership, b.membership, atol=1e-5)


@pytest.mark.slow
def test_weighted_l2_custom_matches_l2_solution(bregman_planted):
    _, C, N = bregman_planted
    A = np.array([[2.0, 0.5], [0.5, 1.0]])
    maha = Bregman(lambda x: x @ A @ x, lambda x: 2.0 * (A @ x), lambda x: 2.0 * A, name="maha")
    # (1,-1) 2A (1,-1)^T = 4: d = 2 (p-q)^2, the same minimiser as eq. (4)
    np.testing.assert_allclose(maha.divergence(0.2, 0.7), 2 * 0.25)
    a = pcc(C, N, 4, maha, n_init=1, random_state=5, tol=1e-8)
    b = pcc(C, N, 4, "l2", n_init=1, random_state=5, tol=1e-8)
    assert a.objective == pytest.approx(2 * b.objective, rel=1e-6)
    # same optimum; the paths differ (bracketing vs the closed-form l2 step)
    np.testing.assert_allclose(a.membership, b.membership, atol=1e-5)


def test_custom_divergence_recompiles_exactly_the_kernels_that_reach_it():
    from scconsensus.core.pcc import _divergences, _greedy, _linesearch, _sparse

    sq = Bregman(lambda x: x @ x, lambda x: 2.0 * x, lambda x: 2.0 * np.eye(2), check=False)
    # kernels that call the divergence, directly or through the shared line search
    for fn in (_greedy._greedy_dense, _greedy._objective_dense, _greedy._refresh_dense):
        assert sq.kernel(fn) is not fn
    assert sq._respecialized[_greedy._update_dense] is not _greedy._update_dense
    assert sq.kernel(_sparse._greedy_sparse) is not _sparse._greedy_sparse
    # ... and nothing else: the gap scan and the tournament tree stay the cached builtins
    assert _greedy._scan_item not in sq._respecialized
    assert _sparse._tree_update not in sq._respecialized
    # the line search shared by both solvers is re-jitted once per divergence
    assert sq._respecialized[_linesearch._line_search] is not _linesearch._line_search
    assert sq.kernel(_greedy._greedy_dense) is sq.kernel(_greedy._greedy_dense)
    assert sq.kernel(_divergences._elementwise) is not _divergences._elementwise


def test_every_registered_kernel_runs_with_a_custom_divergence(bregman_planted):
    """Walk the kernel registry: each kernel a solver calls with a divergence is registered,
    a custom divergence re-specialises those that reach its scalars, and every solver (dense
    and sampled pairs, the extension, the elementwise evaluation) runs with it, to the same
    optimum as the built-in it equals (twice squared l2)."""
    from scconsensus.core.pcc import _core, _divergences, _extend, pcc_extend
    from scconsensus.core.pcc._divergences import KERNELS, _reaches_scalars

    _ = (_core, _extend)  # every solver module is imported, so all have registered
    sq = Bregman(lambda x: x @ x, lambda x: 2.0 * x, lambda x: 2.0 * np.eye(2), name="sq")
    modules = set(KERNELS.values())
    for name in ("_batch_dense", "_batch_pairs", "_divergences", "_extend", "_greedy"):
        assert f"scconsensus.core.pcc.{name}" in modules
    assert {"scconsensus.core.pcc._sparse", "scconsensus.core.pcc._sweep"} <= modules
    for fn in KERNELS:
        reaches = _reaches_scalars(fn, {})
        assert reaches, f"{fn.__name__} takes no divergence: it needs no registration"
        assert (sq.kernel(fn) is not fn) == reaches
        assert Bregman.kl().kernel(fn) is fn
    with pytest.raises(ValueError, match="not a registered PCC kernel"):
        sq.kernel(_divergences._deriv)
    _, C, N = bregman_planted
    C, N = C[:120, :120], N[:120, :120]
    mask = np.random.default_rng(0).random(C.shape) < 0.3
    mask = mask | mask.T
    Cs, Ns = sparse.csr_matrix(np.where(mask, C, 0)), sparse.csr_matrix(np.where(mask, N, 0))
    for data in ((C, N), (Cs, Ns)):
        for solver in ("greedy", "batch") + (("sweep",) if data[0] is Cs else ()):
            a = pcc(*data, 4, sq, solver=solver, n_init=1, random_state=1, tol=1e-7)
            b = pcc(*data, 4, "l2", solver=solver, n_init=1, random_state=1, tol=1e-7)
            assert a.objective == pytest.approx(2 * b.objective, rel=1e-4), solver
    labels = np.random.default_rng(2).integers(0, 3, (150, 10))
    fit = pcc(*coassociation(labels[:100]), 3, sq, random_state=0)
    full = pcc_extend(labels, np.arange(100), fit.membership, sq)
    np.testing.assert_allclose(full.sum(axis=1), 1.0)
    np.testing.assert_allclose(sq.divergence(0.2, 0.5), 2 * 0.09)
