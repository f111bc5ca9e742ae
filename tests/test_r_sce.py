"""AnnData <-> SingleCellExperiment keeps consensus labels and memberships."""

from __future__ import annotations

import os
import shutil

import anndata as ad
import numpy as np
import pandas as pd
import pytest


def _require_r() -> None:
    try:
        import anndata2ri  # noqa: F401
        import rpy2.robjects  # noqa: F401

        ok = shutil.which("Rscript") is not None
    except Exception:
        ok = False
    if not ok:
        if os.environ.get("CI"):
            pytest.fail("R/rpy2/anndata2ri are required in CI (.ci/run installs them).")
        pytest.skip("R, rpy2 or anndata2ri not installed")


_require_r()

import rpy2.robjects as ro  # noqa: E402

from scconsensus.r import from_sce, to_sce  # noqa: E402
from scconsensus.tl._anndata import store_consensus  # noqa: E402


@pytest.fixture
def result_adata():
    rng = np.random.default_rng(0)
    n = 30
    adata = ad.AnnData(
        X=rng.normal(size=(n, 6)),
        obs=pd.DataFrame(index=[f"cell{i}" for i in range(n)]),
        var=pd.DataFrame(index=[f"gene{j}" for j in range(6)]),
    )
    adata.layers["counts"] = rng.poisson(3, size=(n, 6)).astype(float)
    adata.obsm["X_pca"] = rng.normal(size=(n, 3))
    adata.obsm["scc_ensemble"] = rng.integers(-1, 4, size=(n, 8)).astype(np.int32)
    membership = rng.dirichlet(np.ones(4), size=n)
    store_consensus(adata, "pcc", membership, method="pcc", params={"n_clusters": 4, "loss": "kl"})
    return adata


@pytest.mark.slow
def test_round_trip_keeps_results(result_adata):
    adata = result_adata
    sce = to_sce(adata, x_assay="logcounts")
    # R sees what a Bioconductor user expects.
    ro.globalenv["sce_test"] = sce
    info = ro.r(
        """local({
            library(SingleCellExperiment)
            s <- sce_test
            list(dim = dim(s), assays = assayNames(s), rd = reducedDimNames(s),
                 levels = levels(s$pcc), labels = as.character(s$pcc),
                 memb = reducedDim(s, "pcc_membership"), cells = colnames(s),
                 conf = s$pcc_confidence)
        })"""
    )
    info = dict(zip(info.names, info, strict=True))
    assert list(info["dim"]) == [6, 30]  # features in rows
    assert list(info["assays"]) == ["logcounts", "counts"]
    assert set(info["rd"]) == {"PCA", "scc_ensemble", "pcc_membership"}
    assert list(info["levels"]) == ["0", "1", "2", "3"]
    assert list(info["labels"]) == list(adata.obs["pcc"].astype(str))
    assert list(info["cells"]) == list(adata.obs_names)
    memb = np.asarray(info["memb"]).reshape(30, 4, order="F")
    np.testing.assert_allclose(memb, adata.obsm["pcc_membership"])
    np.testing.assert_allclose(np.asarray(info["conf"]), adata.obs["pcc_confidence"])

    back = from_sce(sce)
    assert back.shape == adata.shape
    np.testing.assert_array_equal(back.obs_names, adata.obs_names)
    np.testing.assert_allclose(back.X, adata.X)
    np.testing.assert_allclose(back.layers["counts"], adata.layers["counts"])
    assert isinstance(back.obs["pcc"].dtype, pd.CategoricalDtype)
    assert list(back.obs["pcc"].cat.categories) == ["0", "1", "2", "3"]
    np.testing.assert_array_equal(back.obs["pcc"].to_numpy(), adata.obs["pcc"].to_numpy())
    for key in ("pcc_membership", "X_pca"):
        np.testing.assert_allclose(back.obsm[key], adata.obsm[key])
    np.testing.assert_array_equal(back.obsm["scc_ensemble"], adata.obsm["scc_ensemble"])
    np.testing.assert_allclose(back.obs["pcc_entropy"], adata.obs["pcc_entropy"])
    assert back.uns["pcc"]["params"]["loss"] == "kl"
    # The user's object is untouched.
    assert "logcounts" not in adata.layers


def test_uns_round_trip_keeps_none_lists_and_logicals(result_adata):
    """anndata2ri stopped at the first None of a dict: every later key was lost, silently."""
    import warnings

    params = {
        "n_clusters": 4,
        "max_iter": None,  # before: this and everything after it were dropped
        "weighted": False,
        "lam_grid": [0.1, 1.0],
        "k": (2, 8),
        "divergence": "kl",
        "nested": {"fit_size": None, "n_init": 3},
        "mixed": [1, "a", None],
    }
    result_adata.uns["pcc"]["params"] = params
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no NotConvertedWarning per None either
        back = from_sce(to_sce(result_adata)).uns["pcc"]["params"]
    assert list(back) == list(params)
    assert back["n_clusters"] == 4 and back["max_iter"] is None and back["weighted"] is False
    np.testing.assert_allclose(back["lam_grid"], [0.1, 1.0])
    np.testing.assert_array_equal(back["k"], [2, 8])
    assert back["divergence"] == "kl"
    assert back["nested"] == {"fit_size": None, "n_init": 3}
    assert back["mixed"] == {"0": 1, "1": "a", "2": None}  # R lists are named, not Python lists


def test_choose_x_assay_and_skip_uns(result_adata):
    sce = to_sce(result_adata, uns=False)
    back = from_sce(sce, x_assay="counts")
    np.testing.assert_allclose(back.X, result_adata.layers["counts"])
    np.testing.assert_allclose(back.layers["X"], result_adata.X)
    assert "pcc" not in back.uns
    with pytest.raises(ValueError, match="no assay 'logcounts'"):
        from_sce(sce, x_assay="logcounts")


def test_x_assay_named_after_what_x_holds(result_adata):
    """Issue 27, item 4: X is "logcounts" after sc.pp.log1p, "counts" for integers."""
    assay_names = ro.r("function(s) SummarizedExperiment::assayNames(s)")
    assert list(assay_names(to_sce(result_adata, uns=False))) == ["X", "counts"]
    logged = result_adata.copy()
    logged.uns["log1p"] = {"base": None}
    assert "logcounts" in list(assay_names(to_sce(logged, uns=False)))
    counts = ad.AnnData(np.ones((4, 3), dtype=np.int64))
    assert list(assay_names(to_sce(counts))) == ["counts"]
    assert list(assay_names(to_sce(counts, x_assay="X"))) == ["X"]
    # counts stored as float32, as AnnData files often hold them (a docs audit: "X")
    floats = ad.AnnData(np.random.default_rng(0).poisson(3, (30, 5)).astype(np.float32))
    assert list(assay_names(to_sce(floats))) == ["counts"]


def test_bad_input(result_adata):
    with pytest.raises(ValueError, match="AnnData"):
        to_sce(np.zeros((3, 3)))
    with pytest.raises(ValueError, match="also a layer"):
        to_sce(result_adata, x_assay="counts")
    with pytest.raises(ValueError, match="SingleCellExperiment"):
        from_sce(ro.r("matrix(1:4, 2)"))


def test_a_labels_table_in_obsm_becomes_a_numeric_reduced_dim():
    """A user trial: to_sce after tl.consensus_k raised anndata2ri's "Cannot interpret
    CategoricalDtype" (its .obsm labels table); the labels now travel as numbers."""
    import scconsensus as scc

    adata = scc.datasets.iris()
    scc.tl.consensus_k(adata, max_k=3, reps=10, progress=False)
    table = adata.obsm["consensus_k_labels"]
    table.iloc[0, 0] = np.nan  # an item without a label at k = 2
    sce = to_sce(adata)
    read = ro.r("function(s) SingleCellExperiment::reducedDim(s, 'consensus_k_labels')")
    back = np.asarray(read(sce))
    # with their names (a verification trial: NULL column names in R)
    assert list(ro.r("function(m) colnames(m)")(read(sce))) == list(table.columns)
    expected = table.apply(lambda col: col.astype(float)).to_numpy()
    np.testing.assert_array_equal(back, expected)
    assert np.isnan(back[0, 0]) and isinstance(adata.obsm["consensus_k_labels"], pd.DataFrame)
