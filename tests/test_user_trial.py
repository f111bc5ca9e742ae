"""Defects of the new-user trial: arguments accepted and silently misread, or refused late.

Each failing call must name the problem and the fix and leave the AnnData as it was.
"""

from __future__ import annotations

import anndata as ad
import numpy as np
import pandas as pd
import pytest

import scconsensus as scc
from scconsensus.core.pla import pla as core_pla


@pytest.fixture(scope="module")
def small():
    """60 items in 3 groups with a stored ensemble."""
    rng = np.random.default_rng(0)
    truth = np.repeat([0, 1, 2], 20)
    X = rng.normal(scale=5.0, size=(3, 4))[truth] + rng.standard_normal((60, 4))
    a = ad.AnnData(X, obs=pd.DataFrame({"truth": pd.Categorical(truth.astype(str))}))
    a.obs_names = [f"c{i}" for i in range(60)]
    scc.tl.ensemble(a, 6, k=(2, 4), random_state=0)
    return a


@pytest.fixture
def adata(small):
    return small.copy()


def _refused(fn, adata, match, *args, **kwargs):
    """``fn(adata, ...)`` raises ValueError matching ``match`` and writes nothing."""
    keys = (set(adata.obs), set(adata.obsm), set(adata.uns))
    with pytest.raises(ValueError, match=match):
        fn(adata, *args, **kwargs)
    assert (set(adata.obs), set(adata.obsm), set(adata.uns)) == keys


# ------------------------------------------------------------------ 1, 2: tl.pla arguments


@pytest.mark.parametrize("mode", ["Dense", "full", "lowrank", 42])
def test_pla_unknown_mode_is_refused(adata, mode):
    _refused(scc.tl.pla, adata, r"mode=.*choose one of \['auto', 'dense', 'sparse'\]", mode=mode)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"weighted": True, "cv_folds": 1000}, r"cv_folds=1000 is more than the 60 fitted"),
        ({"weighted": True, "cv_folds": 1}, "cv_folds must be at least 2"),
        ({"weighted": True, "lam_grid": 5}, r"lam_grid must be a non-empty sequence.*lam="),
        ({"weighted": True, "lam_grid": []}, "lam_grid must hold positive"),
        ({"weighted": True, "lam_grid": [1.0, float("nan")]}, "must be finite"),
        ({"n_neighbors": -1}, "n_neighbors must be a non-negative integer"),
        ({"n_random": -2}, "n_random must be a non-negative integer"),
    ],
)
def test_pla_bad_weighting_and_pair_counts_refused_up_front(adata, kwargs, match):
    _refused(scc.tl.pla, adata, match, n_clusters=3, **kwargs)


def test_pla_lam_without_weighting_warns(adata):
    with pytest.warns(UserWarning, match=r"lam=5 has no effect with weighted=False"):
        scc.tl.pla(adata, n_clusters=3, lam=5)
    assert adata.uns["pla"]["params"]["weighted"] is False


def test_core_pla_cv_folds_counts_the_fitted_items(small):
    labels = small.obsm["scc_ensemble"]
    with pytest.raises(ValueError, match="more than the 30 fitted items"):
        core_pla(labels, 3, weighted=True, cv_folds=40, fit_size=30)
