"""PCC at scale: small traces, ensemble pairs, ensemble init, fit on a subset + extension."""

from __future__ import annotations

import numpy as np
import pytest

from scconsensus.core.coassociation import coassociation
from scconsensus.core.pcc import pcc


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
    assert trace[-1] == pytest.approx(res.objective)


def test_automatic_trace_is_small_and_consistent():
    truth, labels = _noisy_labels()
    C, N = coassociation(labels)
    full = pcc(C, N, 6, "kl", n_init=1, trace_every=1, tol=1e-6)
    auto = pcc(C, N, 6, "kl", n_init=1, tol=1e-6)
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
