import itertools

import numpy as np
import pytest

from scconsensus.metrics import adjusted_rand_index, h_criterion, js_criterion, nmi


def js_brute(Y, Z):
    k = max(Y.shape[1], Z.shape[1])
    Y = np.pad(Y, ((0, 0), (0, k - Y.shape[1])))
    Z = np.pad(Z, ((0, 0), (0, k - Z.shape[1])))

    def js(p, q):
        m = (p + q) / 2
        kl = lambda a, b: np.sum(np.where(a > 0, a * np.log2(np.where(a > 0, a, 1) / b), 0))  # noqa: E731
        return 0.5 * kl(p, m) + 0.5 * kl(q, m)

    return min(
        np.mean([js(z, y[list(perm)]) for z, y in zip(Z, Y, strict=True)])
        for perm in itertools.permutations(range(k))
    )


def test_h_criterion():
    assert h_criterion([0, 0, 1, 1], [1, 1, 0, 0]) == 1.0
    assert h_criterion([0, 0, 0, 1], [0, 1, 2, 3]) == 0.5
    assert h_criterion(["a", "b", "b"], [5, 5, 5]) == pytest.approx(2 / 3)


def test_h_criterion_brute_force(rng):
    a = rng.integers(0, 3, 30)
    b = rng.integers(0, 4, 30)
    best = max(
        np.mean([perm[x] == y for x, y in zip(a, b, strict=True)])
        for perm in itertools.permutations(range(4), 3)
    )
    assert h_criterion(a, b) == pytest.approx(best)


def test_ari_nmi():
    assert adjusted_rand_index([0, 0, 1, 1], [1, 1, 0, 0]) == 1.0
    assert nmi([0, 0, 1, 1], [1, 1, 0, 0]) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="different lengths"):
        adjusted_rand_index([0, 1], [0, 1, 1])


def test_js_criterion_matches_brute_force(rng):
    for k_y, k_z in [(3, 3), (2, 3), (4, 3)]:
        Y = rng.dirichlet(np.ones(k_y), size=20)
        Z = rng.dirichlet(np.ones(k_z), size=20)
        assert js_criterion(Y, Z) == pytest.approx(js_brute(Y, Z), abs=1e-12)


def test_js_criterion_bounds(rng):
    Z = rng.dirichlet(np.ones(3), size=10)
    assert js_criterion(Z[:, [2, 0, 1]], Z) == pytest.approx(0.0, abs=1e-12)
    hard_a = np.eye(2)[[0, 0, 1]]
    hard_b = np.eye(2)[[0, 1, 1]]
    assert 0 < js_criterion(hard_a, hard_b) <= 1
    with pytest.raises(ValueError, match="sum to 1"):
        js_criterion(np.ones((3, 2)), Z[:3])


def test_membership_entropy_in_nats_with_zero_for_empty_clusters():
    from scconsensus.core.membership import entropy

    m = np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [1 / 3, 1 / 3, 1 / 3], [0.9, 0.1, 0.0]])
    want = [0.0, np.log(2), np.log(3), -(0.9 * np.log(0.9) + 0.1 * np.log(0.1))]
    np.testing.assert_allclose(entropy(m), want, rtol=1e-15, atol=0)
    assert entropy(m)[0] == 0.0  # 0 log 0 is 0, not NaN
