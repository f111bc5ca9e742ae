"""PCC reproduces Sect. 7.1 of Lourenço et al. (2015) at reduced size (2 of the 10 datasets).

Four planar Gaussians (200 points each) give a soft ground truth; N = 1000 hard
partitions are sampled from it; PCC with K = 8 must put the mass on 4 clusters
and recover the soft truth with a mean JS criterion of at most 0.0012 (the
paper's figure, for both KL and squared l2). The full 10-dataset run is
``vignettes/pcc_paper.py``.
"""

from __future__ import annotations

import numpy as np
import pytest

import scconsensus as scc
from scconsensus.core import coassociation, pcc
from scconsensus.metrics import js_criterion

PAPER_JS = 0.0012  # Sect. 7.1: mean J over 10 datasets, PCC-KL and PCC-l2


@pytest.fixture(scope="module")
def datasets():
    out = []
    for seed in (0, 1):
        adata = scc.datasets.soft_gaussian_mixture(
            n_per_component=200, n_partitions=1000, random_state=seed
        )
        C, N = coassociation(adata.obsm["scc_ensemble"])
        out.append((adata.obsm["soft_truth"], C, N))
    return out


@pytest.mark.slow
@pytest.mark.parametrize("divergence", ["kl", "l2"])
def test_soft_ground_truth_recovered(datasets, divergence):
    scores = []
    for truth, C, N in datasets:
        res = pcc(C, N, 8, divergence, n_init=1, random_state=0)
        assert res.converged
        assert res.n_clusters == 4  # K = 8 is a maximum: 4 clusters carry the mass
        assert res.membership.sum(axis=0).min() > 150
        scores.append(js_criterion(res.membership, truth))
    assert np.mean(scores) <= PAPER_JS
