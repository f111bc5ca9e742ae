"""PCC's and PLA's ``mode="auto"``: all pairs, or sampled kNN pairs where a representation
is at hand (``settings.dense_auto_max_items_knn``), and the representation it reads."""

from __future__ import annotations

import anndata as ad
import numpy as np
import pandas as pd
import pytest
from _helpers import scanpy_log

import scconsensus as scc
from scconsensus.core._pair_source import auto_mode
from scconsensus.metrics import adjusted_rand_index


def test_auto_mode_takes_sampled_pairs_earlier_where_knn_pairs_can_be_drawn(monkeypatch):
    monkeypatch.setattr(scc.settings, "dense_auto_max_items", 5_000)
    monkeypatch.setattr(scc.settings, "dense_auto_max_items_knn", 1_000)
    assert auto_mode(1_000, "auto", True, 10) == "dense"
    assert auto_mode(1_001, "auto", True, 10) == "sparse"
    assert auto_mode(1_001, "knn", True, 10) == "sparse"
    # ensemble partners, no representation, no kNN partners or given pairs: the
    # all-pairs limit
    assert auto_mode(1_001, "ensemble", True, 10) == "dense"
    assert auto_mode(1_001, "auto", False, 10) == "dense"
    assert auto_mode(1_001, "auto", True, 0) == "dense"
    assert auto_mode(1_001, np.array([[0, 1]]), True, 10) == "dense"
    assert auto_mode(5_001, "ensemble", False, 10) == "sparse"
    # the lower of the two limits holds
    monkeypatch.setattr(scc.settings, "dense_auto_max_items_knn", 9_000)
    assert auto_mode(5_001, "auto", True, 10) == "sparse"


def test_the_knn_limit_is_a_checked_setting():
    with pytest.raises(ValueError, match="dense_auto_max_items_knn must be a whole number"):
        scc.settings.dense_auto_max_items_knn = "many"


def _groups(n_per=60, seed=0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=3.0, size=(3, 10))
    truth = np.repeat(np.arange(3), n_per)
    a = ad.AnnData((centres[truth] + rng.standard_normal((truth.size, 10))).astype(np.float32))
    a.obs["truth"] = pd.Categorical(truth.astype(str))
    scc.tl.ensemble(a, n_partitions=20, random_state=seed, progress=False)
    return a


@pytest.mark.parametrize("method", ["pcc", "pla"])
def test_auto_route_draws_knn_pairs_of_the_ensembles_representation(method, monkeypatch):
    """Without ``X_pca`` the kNN pairs come from the matrix the ensemble clustered
    (here ``X``); an ensemble without that record has no representation, and stays on
    all pairs up to ``dense_auto_max_items``."""
    monkeypatch.setattr(scc.settings, "dense_auto_max_items_knn", 100)
    a = _groups()
    fit = getattr(scc.tl, method)
    fit(a, n_clusters=3, random_state=0, progress=False)
    assert (a.uns[method]["route"], a.uns[method]["pair_source"]) == ("sparse", "knn")
    assert adjusted_rand_index(a.obs["truth"], a.obs[method]) == 1.0
    fit(a, n_clusters=3, pairs="ensemble", random_state=0, progress=False)
    assert a.uns[method]["route"] == "dense" and "pair_source" not in a.uns[method]
    del a.uns["scc_ensemble"]
    fit(a, n_clusters=3, random_state=0, progress=False)
    assert "pair_source" not in a.uns[method]


@pytest.mark.parametrize("method", ["pcc", "pla"])
def test_the_limit_counts_fitted_items_and_knn_partners(method, monkeypatch):
    monkeypatch.setattr(scc.settings, "dense_auto_max_items_knn", 100)
    a, fit = _groups(), getattr(scc.tl, method)
    fit(a, n_clusters=3, fit_size=90, random_state=0, progress=False)
    assert "pair_source" not in a.uns[method]
    fit(a, n_clusters=3, fit_size=150, random_state=0, progress=False)
    assert a.uns[method]["pair_source"] == "knn"
    fit(a, n_clusters=3, n_neighbors=0, random_state=0, progress=False)
    assert "pair_source" not in a.uns[method]  # random pairs alone: all pairs instead


@pytest.mark.parametrize("method", ["pcc", "pla"])
def test_an_ensemble_record_without_its_matrix_is_no_representation(method, monkeypatch):
    """A record :func:`scconsensus.tl.ensemble` did not write, or whose matrix is gone,
    leaves the call as it was without one: all pairs, and ``pairs="knn"`` refused."""
    monkeypatch.setattr(scc.settings, "dense_auto_max_items_knn", 100)
    a, fit = _groups(), getattr(scc.tl, method)
    records = [{"params": {}}, {**a.uns["scc_ensemble"], "params": {"layer": "gone"}}]
    for record in records:
        a.uns["scc_ensemble"] = record
        fit(a, n_clusters=3, random_state=0, progress=False)
        assert "pair_source" not in a.uns[method]
        with pytest.raises(ValueError, match="pairs='knn' needs a representation"):
            fit(a, n_clusters=3, mode="sparse", pairs="knn", random_state=0, progress=False)


def test_the_ensembles_matrix_is_named_in_the_log_and_x_pca_comes_first(monkeypatch):
    monkeypatch.setattr(scc.settings, "dense_auto_max_items_knn", 100)
    a = _groups()
    kw = {"n_clusters": 3, "random_state": 0, "progress": False}
    for method in ("pcc", "pla"):
        with scanpy_log("info") as log:
            getattr(scc.tl, method)(a, mode="sparse", pairs="knn", **kw)
        text = log.getvalue()
        assert "kNN pairs of adata.X, the matrix the ensemble clustered" in text
        # said once the fit is done, not while its progress bar is drawn (a user trial
        # found the line inside the bar's)
        assert text.index("the matrix the ensemble clustered") > text.index("fitting")
    a.obsm["X_pca"] = a.X[:, :2].copy()
    with scanpy_log("info") as log:
        scc.tl.pcc(a, **kw)
    assert a.uns["pcc"]["pair_source"] == "knn"
    assert "the matrix the ensemble clustered" not in log.getvalue()


@pytest.mark.parametrize("method", ["pcc", "pla"])
def test_defaults_find_every_clear_group_of_unequal_sizes(method):
    """Issue 28's planted check at 2,000 cells: 20 clear groups of Dirichlet(2) sizes (the
    smallest of 20 cells). On all pairs PCC labelled 18 of them and PLA 19 on this seed
    (two or one of the smallest merged into a neighbour); on kNN pairs, 20."""
    rng = np.random.default_rng(1)
    centres = rng.normal(scale=3.0, size=(20, 50))
    truth = rng.choice(20, size=2_000, p=rng.dirichlet(np.full(20, 2.0)))
    a = ad.AnnData((centres[truth] + rng.standard_normal((2_000, 50))).astype(np.float32))
    scc.tl.ensemble(a, random_state=1, progress=False)
    getattr(scc.tl, method)(a, random_state=1, progress=False)
    labels = a.obs[method].cat.codes.to_numpy()
    assert np.unique(labels).size == 20
    assert adjusted_rand_index(truth, labels) > 0.98


def test_the_ensemble_records_x_pca_taken_by_default_so_x_is_not_read_for_it():
    """``tl.ensemble`` without ``use_rep`` clusters ``X_pca``: its record names it, so
    with ``X_pca`` removed later the consensus does not read kNN pairs of ``X`` as the
    ensemble's matrix (another view of the items)."""
    from scconsensus.tl._anndata import lazy_rep

    a = _groups()
    a.obsm["X_pca"] = a.X[:, :3].copy()
    scc.tl.ensemble(a, n_partitions=10, random_state=0, progress=False)
    assert a.uns["scc_ensemble"]["params"]["use_rep"] == "X_pca"
    del a.obsm["X_pca"]
    assert lazy_rep(a, None, "scc_ensemble") is None
