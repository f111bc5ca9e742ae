"""The sweep solver on sampled pairs: same KKT rule and objective as the greedy reference."""

from __future__ import annotations

import numpy as np
import pytest
from _helpers import planted

from scconsensus.core import Bregman, FitRoute, pcc
from scconsensus.core.coassociation import coassociation


def _sparse_problem(seed, missing=0.2, share=0.4):
    _, labels = planted(n_per=20, k=4, R=25, noise=0.2, missing=missing, seed=seed)
    n = labels.shape[0]
    pairs = np.column_stack(np.triu_indices(n, 1))
    pairs = pairs[np.random.default_rng(seed).random(len(pairs)) < share]
    return coassociation(labels, "sparse", pairs=pairs)


@pytest.mark.parametrize("divergence", ["kl", "l2", Bregman.power(1.7)])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sweep_reaches_the_greedy_objective_and_the_tolerance(divergence, seed):
    C, N = _sparse_problem(seed)
    # K = the 4 planted groups: with more clusters than groups the optimum is flat along
    # splits of a group, and both solvers stop at one of several stationary points (their
    # objectives 3e-4 apart either way on these problems)
    start = np.random.default_rng(seed).dirichlet(np.ones(4), size=N.shape[0])
    kw = dict(n_init=1, init=start, tol=1e-4, min_mass=0.0)
    greedy = pcc(C, N, 4, divergence, solver="greedy", **kw)
    sweep = pcc(C, N, 4, divergence, solver="sweep", **kw)
    assert greedy.converged and sweep.converged
    assert sweep.kkt_gap <= 1e-4
    assert sweep.objective <= greedy.objective * (1 + 1e-4)
    assert sweep.solver == "sweep-sparse"


def test_sweep_is_deterministic():
    C, N = _sparse_problem(3)
    a = pcc(C, N, 5, "kl", solver="sweep", random_state=7)
    b = pcc(C, N, 5, "kl", solver="sweep", random_state=7)
    np.testing.assert_array_equal(a.membership, b.membership)
    np.testing.assert_array_equal(a.objective_trace, b.objective_trace)
    assert a.n_iter == b.n_iter and a.objective == b.objective


@pytest.mark.parametrize("divergence", ["kl", "l2"])
def test_sweep_trace_never_increases(divergence):
    C, N = _sparse_problem(4)
    # min_mass=0: every cluster kept, so the returned point is the last iterate
    res = pcc(C, N, 6, divergence, solver="sweep", n_init=1, trace_every=1, tol=1e-6, min_mass=0.0)
    trace = res.objective_trace
    assert trace.size == res.n_iter + 1 and res.n_iter > 10
    assert np.all(np.diff(trace) <= 1e-9 * abs(trace[0]))
    assert trace[-1] == pytest.approx(res.objective, rel=1e-9)


def test_sweep_is_the_default_on_sparse_input_and_refuses_dense():
    C, N = _sparse_problem(5)
    assert pcc(C, N, 4, n_init=1).solver == "sweep-sparse"
    with pytest.raises(ValueError, match="sampled pairs"):
        pcc(C.toarray(), N.toarray(), 4, solver="sweep")


def test_sweep_stops_at_max_iter():
    C, N = _sparse_problem(6)
    res = pcc(C, N, 6, "kl", solver="sweep", n_init=1, max_iter=5)
    assert res.n_iter <= 5 and not res.converged


def test_sweep_takes_the_sampled_pairs_route_or_refuses_first(monkeypatch):
    """``solver="sweep"`` in ``pcc_consensus``: ``mode="auto"`` samples pairs; dense or
    low-rank routes are refused before the plan or any co-association is built."""
    from scconsensus.core import pcc_consensus
    from scconsensus.core.pcc import _consensus as _pcc_consensus

    labels = np.repeat([[0, 0, 1], [1, 1, 0], [2, 2, 2]], 20, axis=0)
    assert pcc_consensus(labels, 3, solver="sweep").route == "sparse"

    def no_plan(*args, **kwargs):
        raise AssertionError("planned before the solver was checked")

    monkeypatch.setattr(_pcc_consensus, "_plan", no_plan)
    for mode in ("dense", "lowrank"):
        with pytest.raises(ValueError, match="solver='sweep' works on sampled pairs"):
            pcc_consensus(labels, 3, route=FitRoute(mode=mode), solver="sweep")
