"""``tl.pcc`` on AnnData: layout, routes, h5ad round trip, plotting, CLI."""

from __future__ import annotations

import anndata as ad
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
import scanpy as sc
from _helpers import knn_dtypes, scanpy_log

import scconsensus as scc
from scconsensus.core.pcc import cluster_relationships
from scconsensus.metrics import adjusted_rand_index


@pytest.fixture(scope="module")
def ens_adata():
    rng = np.random.default_rng(0)
    truth = np.repeat(np.arange(3), 20)
    n = truth.size
    labels = np.stack(
        [np.where(rng.random(n) < 0.15, rng.integers(0, 3, n), truth) for _ in range(25)], axis=1
    ).astype(np.int32)
    adata = ad.AnnData(
        X=rng.normal(size=(n, 5)),
        obs=pd.DataFrame({"truth": pd.Categorical(truth.astype(str))}),
    )
    adata.obs_names = [f"cell{i}" for i in range(n)]
    adata.obsm["scc_ensemble"] = labels
    adata.obsm["X_umap"] = rng.normal(size=(n, 2))
    return adata


def test_pcc_writes_layout(ens_adata):
    adata = ens_adata.copy()
    before = set(adata.obsm)
    out = scc.tl.pcc(adata, n_clusters=6, random_state=0)
    assert out is None
    assert set(adata.obsm) == before | {"pcc_membership"}
    labels = adata.obs["pcc"]
    assert isinstance(labels.dtype, pd.CategoricalDtype)
    k = adata.obsm["pcc_membership"].shape[1]
    assert k == 3
    assert list(labels.cat.categories) == [str(i) for i in range(k)]
    M = adata.obsm["pcc_membership"]
    np.testing.assert_allclose(M.sum(axis=1), 1.0)
    # the ensemble's support of each cell's label, not the (nearly hard) largest membership
    support = scc.core.ensemble_confidence(adata.obsm["scc_ensemble"], labels.cat.codes)
    np.testing.assert_allclose(adata.obs["pcc_confidence"], support)
    assert np.all(adata.obs["pcc_entropy"] >= 0)
    assert adjusted_rand_index(adata.obs["truth"], labels) == pytest.approx(1.0)
    uns = adata.uns["pcc"]
    assert uns["params"]["divergence"] == "kl"
    assert uns["params"]["n_clusters"] == 6
    assert uns["route"] == "dense"
    assert uns["converged"] is True
    assert uns["n_iter"] > 0 and np.isfinite(uns["objective"])
    assert uns["kkt_gap"] <= uns["params"]["tol"]
    np.testing.assert_allclose(uns["cluster_relationships"], cluster_relationships(M, 0.01))
    assert uns["cluster_relationships"].shape == (k, k)
    assert np.all(np.diff(uns["objective_trace"]) <= 1e-9 * uns["objective_trace"][0])


def test_pcc_copy_leaves_input_untouched(ens_adata):
    adata = ens_adata.copy()
    out = scc.tl.pcc(adata, 4, "l2", copy=True, key_added="p2")
    assert isinstance(out, ad.AnnData)
    assert "p2" not in adata.obs and "p2" not in adata.uns
    assert out.uns["p2"]["params"]["divergence"] == "l2"
    assert "p2_membership" in out.obsm


def test_pcc_h5ad_round_trip(ens_adata, tmp_path):
    adata = ens_adata.copy()
    scc.tl.pcc(adata, n_clusters=5, divergence=scc.core.Bregman.power(1.5), random_state=1)
    path = tmp_path / "pcc.h5ad"
    adata.write_h5ad(path)
    back = ad.read_h5ad(path)
    np.testing.assert_allclose(back.obsm["pcc_membership"], adata.obsm["pcc_membership"])
    assert (back.obs["pcc"] == adata.obs["pcc"]).all()
    np.testing.assert_allclose(
        back.uns["pcc"]["cluster_relationships"], adata.uns["pcc"]["cluster_relationships"]
    )
    assert back.uns["pcc"]["params"]["divergence"] == "power1.5"
    assert back.uns["pcc"]["params"]["max_iter"] is None


def test_pcc_umap_plot(ens_adata):
    adata = ens_adata.copy()
    scc.tl.pcc(adata, n_clusters=4)
    axes = sc.pl.umap(adata, color=["pcc", "pcc_confidence"], show=False)
    # one panel per key, each drawing every cell
    assert [ax.get_title() for ax in axes] == ["pcc", "pcc_confidence"]
    assert [len(ax.collections[0].get_offsets()) for ax in axes] == [adata.n_obs] * 2
    plt.close("all")


def test_pcc_sparse_route_and_auto(ens_adata, monkeypatch, caplog):
    adata = ens_adata.copy()
    scc.tl.pcc(adata, n_clusters=5, mode="sparse", n_random=15, key_added="sp")
    uns = adata.uns["sp"]
    assert uns["route"] == "sparse" and uns["solver"] == "sweep-sparse"
    assert uns["n_pairs"] > 0
    assert adjusted_rand_index(adata.obs["truth"], adata.obs["sp"]) > 0.9
    monkeypatch.setattr(scc.settings, "dense_auto_max_items", 10)
    scc.tl.pcc(adata, n_clusters=5, mode="auto", n_random=15, key_added="au")
    assert adata.uns["au"]["route"] == "sparse"
    monkeypatch.setattr(scc.settings, "dense_auto_max_items", 10_000)
    scc.tl.pcc(adata, n_clusters=5, mode="auto", key_added="au2")
    assert adata.uns["au2"]["route"] == "dense"


def test_pcc_route_is_logged(ens_adata):
    import io

    adata = ens_adata.copy()
    old_verbosity, old_file = sc.settings.verbosity, sc.settings.logfile
    buffer = io.StringIO()
    sc.settings.verbosity = 3
    sc.settings.logfile = buffer
    try:
        scc.tl.pcc(adata, n_clusters=4, mode="sparse", n_random=10)
        scc.tl.pcc(adata, n_clusters=4, mode="auto")
    finally:
        sc.settings.verbosity = old_verbosity
        sc.settings.logfile = old_file
    text = buffer.getvalue()
    assert "sparse co-association" in text
    assert "dense co-association of 60 items (mode='auto')" in text


@pytest.mark.parametrize("cached", [False, True])
def test_first_use_of_pcc_says_it_compiles(ens_adata, monkeypatch, cached):
    """The first fit after an install compiles for 12-40 s: a word before that pause, then never."""
    import io

    monkeypatch.setattr("scconsensus.tl._pcc.kernels_cached", lambda: cached)
    old_verbosity, old_file = sc.settings.verbosity, sc.settings.logfile
    buffer = io.StringIO()
    sc.settings.verbosity = 1  # scanpy's default: warnings only
    sc.settings.logfile = buffer
    try:
        scc.tl.pcc(ens_adata.copy(), n_clusters=4)
    finally:
        sc.settings.verbosity = old_verbosity
        sc.settings.logfile = old_file
    assert ("first use of PCC: numba compiles its kernels now" in buffer.getvalue()) != cached


def test_kernels_cached_reads_numba_cache(ens_adata, tmp_path):
    import os
    import subprocess
    import sys

    from scconsensus.core.pcc._cache import kernels_cached

    scc.tl.pcc(ens_adata.copy(), n_clusters=4)  # compiled (or loaded) and on disk now
    assert kernels_cached()
    # an empty numba cache: nothing compiled yet
    code = "from scconsensus.core.pcc._cache import kernels_cached; print(kernels_cached())"
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.strip() == "False", out.stderr


def test_pcc_bad_input(ens_adata):
    adata = ens_adata.copy()
    with pytest.raises(ValueError, match="No ensemble"):
        scc.tl.pcc(adata, ensemble_key="nope")
    with pytest.raises(ValueError, match="mode"):
        scc.tl.pcc(adata, mode="fast")
    with pytest.raises(ValueError, match="too large"):
        scc.tl.pcc(adata, n_clusters=adata.n_obs)
    assert "pcc" not in adata.obs


def test_pcc_on_real_ensemble_iris():
    adata = scc.datasets.iris()
    scc.tl.ensemble(adata, n_partitions=20, k=(3, 6), random_state=0)
    scc.tl.pcc(adata, n_clusters=3)
    assert adata.obsm["pcc_membership"].shape == (150, 3)
    # a k-means-only ensemble splits versicolor/virginica poorly: the paper's Table 4
    # (ensemble type 1) has H = 0.71-0.86 on iris
    assert scc.metrics.h_criterion(adata.obs["truth"], adata.obs["pcc"]) > 0.7


def test_pcc_cli(ens_adata, tmp_path):
    from scconsensus.cli import run_method

    adata = ens_adata.copy()
    run_method(adata, "pcc", n_clusters=4, random_state=0, key_added="cli")
    assert "cli" in adata.obs and "cli_membership" in adata.obsm


def test_knn_pairs_read_float32_x_pca_as_it_is(blobs_adata, monkeypatch):
    """The sparse route's kNN pairs search scanpy's float32 ``X_pca`` without a float64
    copy (400 MB at 10^6 x 50); the user's ``X_pca`` is left as it was."""
    adata = blobs_adata.copy()
    adata.obsm["X_pca"] = adata.X.astype(np.float32)
    scc.tl.ensemble(adata, n_partitions=8, k=3, random_state=0, progress=False)
    seen = knn_dtypes(monkeypatch)
    scc.tl.pcc(adata, n_clusters=3, mode="sparse", pairs="knn", random_state=0, progress=False)
    assert seen == [np.dtype(np.float32)]
    assert adata.obsm["X_pca"].dtype == np.float32
    assert adjusted_rand_index(adata.obs["truth"], adata.obs["pcc"]) > 0.9


def test_knn_pairs_of_a_sparse_x(blobs_adata):
    """``use_rep="X"`` on a sparse ``adata.X`` (float32, as read from h5ad): the kNN pairs
    are searched on the sparse rows; np.asarray of the CSR matrix was a 0-d object array
    and the search failed with an IndexError."""
    import scipy.sparse as sp

    adata = blobs_adata.copy()
    adata.X = sp.csr_matrix(adata.X.astype(np.float32))
    scc.tl.ensemble(adata, n_partitions=8, k=3, use_rep="X", random_state=0, progress=False)
    scc.tl.pcc(adata, n_clusters=3, mode="sparse", pairs="knn", use_rep="X", random_state=0)
    assert adata.uns["pcc"]["pair_source"] == "knn"
    assert adjusted_rand_index(adata.obs["truth"], adata.obs["pcc"]) > 0.9
    assert sp.issparse(adata.X) and adata.X.dtype == np.float32


def test_max_iter_reached_is_a_convergence_warning():
    """A Python warning (scikit-learn's class), which R and catch_warnings catch; it was a
    log line, silent at verbosity 0."""
    from sklearn.exceptions import ConvergenceWarning

    adata = scc.datasets.iris()
    scc.tl.ensemble(adata, n_partitions=10, k=3, random_state=0, progress=False)
    with pytest.warns(ConvergenceWarning, match=r"PCC stopped at max_iter \(\d+ batch steps"):
        scc.tl.pcc(adata, n_clusters=3, max_iter=1, random_state=0, progress=False)


def test_a_fit_on_a_subset_is_logged_once(ens_adata, monkeypatch):
    """A user trial: 30,000 cells logged "fit_size='auto': fitting 10000 of 30000 items"
    and then "fitting on 10000 of 30000 items" again."""
    adata = ens_adata.copy()
    monkeypatch.setattr(scc.settings, "auto_fit_size", 30)
    with scanpy_log("info") as log:
        scc.tl.pcc(adata, n_clusters=4, fit_size="auto")
    assert log.getvalue().count("30 of 60 items") == 1, log.getvalue()
