"""The greedy solver is the paper's reference (Lourenço et al. 2015, Sect. 5): pin its path.

The objectives and iteration counts below were recorded before the dense solver, the
sparse solver and the extension were moved onto one shared line search; a refactor of
the kernels must reproduce them (the same moves in the same order), not merely reach
a similar optimum.
"""

from __future__ import annotations

import numpy as np
import pytest

from scconsensus.core import coassociation, sample_pairs
from scconsensus.core.pcc import pcc

RECORDED = [
    (0, "kl", "dense", 1481.2378690234566, 2954),
    (0, "kl", "sparse", 208.8286438786455, 4577),
    (0, "l2", "dense", 261.6894007016339, 1783),
    (0, "l2", "sparse", 35.797513159211704, 2154),
    (1, "kl", "dense", 1442.744766493732, 3574),
    (1, "kl", "sparse", 209.91687264689332, 3719),
    (1, "l2", "dense", 242.09889196186768, 2278),
    (1, "l2", "sparse", 33.196235327652865, 2315),
    (2, "kl", "dense", 1509.563667141869, 2693),
    (2, "kl", "sparse", 211.46965809087072, 3798),
    (2, "l2", "dense", 291.04298477571456, 2289),
    (2, "l2", "sparse", 40.480026618263196, 2748),
]


def _noisy_ensemble(seed: int) -> np.ndarray:
    """120 items in 4 groups, 20 partitions relabelled at random for 25 % of the items."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 4, 120)
    cols = [np.where(rng.random(120) < 0.25, rng.integers(0, 5, 120), truth) for _ in range(20)]
    labels = np.stack(cols, 1).astype(np.int32)
    labels[rng.random(labels.shape) < 0.1] = -1
    return labels


@pytest.mark.parametrize(("seed", "divergence", "route", "objective", "n_iter"), RECORDED)
def test_greedy_path_is_the_recorded_one(seed, divergence, route, objective, n_iter):
    labels = _noisy_ensemble(seed)
    if route == "dense":
        C, N = coassociation(labels)
    else:
        C, N = coassociation(
            labels, "sparse", pairs=sample_pairs(120, n_random=12, random_state=seed)
        )
    res = pcc(C, N, 6, divergence, solver="greedy", n_init=1, random_state=seed)
    assert res.n_iter == n_iter
    assert res.objective == pytest.approx(objective, rel=1e-12)
