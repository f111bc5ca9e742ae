import warnings

import anndata as ad
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

import scconsensus as scc
from scconsensus.tl._anndata import get_ensemble, get_rep, sanitize_uns, store_consensus


def test_ensemble_writes_only_its_keys(blobs_adata):
    before = blobs_adata.copy()
    scc.tl.ensemble(blobs_adata, 6, ["kmeans", "hc"], k=(2, 4), random_state=0)
    assert blobs_adata.obsm["scc_ensemble"].shape == (blobs_adata.n_obs, 6)
    assert blobs_adata.obsm["scc_ensemble"].dtype == np.int32
    assert set(blobs_adata.obsm) == {"scc_ensemble", "scc_ensemble_run"}
    assert set(blobs_adata.uns) == {"scc_ensemble"}
    assert blobs_adata.obs.equals(before.obs)
    np.testing.assert_array_equal(blobs_adata.X, before.X)
    parts = blobs_adata.uns["scc_ensemble"]["partitions"]
    assert list(parts["method"]) == ["kmeans", "hc"] * 3


def test_ensemble_log_lists_every_key_it_writes(blobs_adata):
    """The run marker in .obsm was written without being named (issue 24)."""
    import io

    import scanpy as sc

    buffer, old = io.StringIO(), (sc.settings.verbosity, sc.settings.logfile)
    sc.settings.verbosity, sc.settings.logfile = "debug", buffer
    try:
        scc.tl.ensemble(blobs_adata, 3, k=3, key_added="ens", progress=False)
    finally:
        sc.settings.verbosity, sc.settings.logfile = old
    added = buffer.getvalue().split("added", 1)[1]
    written = [
        f".{slot}[{key!r}]" for slot in ("obsm", "uns") for key in getattr(blobs_adata, slot)
    ]
    assert written and all(entry in added for entry in written)


def test_ensemble_copy_leaves_input(blobs_adata):
    out = scc.tl.ensemble(blobs_adata, 3, k=3, copy=True)
    assert "scc_ensemble" not in blobs_adata.obsm
    assert out.obsm["scc_ensemble"].shape == (blobs_adata.n_obs, 3)


@pytest.mark.slow
def test_ensemble_same_for_n_jobs(blobs_adata):
    a = scc.tl.ensemble(blobs_adata, 6, ["kmeans", "leiden"], k=(2, 5), n_jobs=1, copy=True)
    b = scc.tl.ensemble(blobs_adata, 6, ["kmeans", "leiden"], k=(2, 5), n_jobs=2, copy=True)
    np.testing.assert_array_equal(a.obsm["scc_ensemble"], b.obsm["scc_ensemble"])


def test_use_rep_and_errors(blobs_adata):
    blobs_adata.obsm["X_pca"] = blobs_adata.X[:, :1].copy()
    np.testing.assert_array_equal(get_rep(blobs_adata), blobs_adata.obsm["X_pca"])
    np.testing.assert_array_equal(get_rep(blobs_adata, "X"), blobs_adata.X)
    with pytest.raises(ValueError, match=r"not in adata\.obsm"):
        scc.tl.ensemble(blobs_adata, 2, use_rep="X_umap")
    with pytest.raises(ValueError, match="layer"):
        scc.tl.ensemble(blobs_adata, 2, layer="counts")
    wide = ad.AnnData(np.zeros((5, 6000)))
    with pytest.raises(ValueError, match=r"sc\.pp\.pca"):
        get_rep(wide)
    bad = blobs_adata.copy()
    bad.X[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        scc.tl.ensemble(bad, 2, use_rep="X")
    with pytest.raises(ValueError, match="AnnData"):
        scc.tl.ensemble(np.zeros((5, 2)), 2)


def test_coassociation_dense_and_sparse(blobs_adata):
    scc.tl.ensemble(blobs_adata, 5, k=3)
    scc.tl.coassociation(blobs_adata, mode="dense")
    C, N = blobs_adata.obsp["scc_coassoc_c"], blobs_adata.obsp["scc_coassoc_n"]
    assert C.shape == (blobs_adata.n_obs,) * 2 and (C <= N).all()
    scc.tl.coassociation(blobs_adata, mode="sparse", key_added="sp", n_random=5)
    Cs, Ns = blobs_adata.obsp["sp_c"], blobs_adata.obsp["sp_n"]
    assert sp.issparse(Cs) and Cs.nnz == Ns.nnz
    rows, cols = Ns.nonzero()
    np.testing.assert_array_equal(np.asarray(Cs[rows, cols]).ravel(), C[rows, cols])
    assert blobs_adata.uns["sp"]["params"]["mode"] == "sparse"


def test_missing_ensemble_error(blobs_adata):
    with pytest.raises(ValueError, match=r"Run scconsensus.tl.ensemble"):
        scc.tl.coassociation(blobs_adata)


def test_store_consensus_layout(blobs_adata):
    m = np.random.default_rng(0).dirichlet(np.ones(3), size=blobs_adata.n_obs)
    store_consensus(blobs_adata, "demo", m, method="pcc", params={"n_clusters": 3, "note": None})
    assert list(blobs_adata.obs["demo"].cat.categories) == ["0", "1", "2"]
    np.testing.assert_allclose(blobs_adata.obsm["demo_membership"].sum(1), 1)
    np.testing.assert_allclose(blobs_adata.obs["demo_confidence"], m.max(1))
    assert (blobs_adata.obs["demo_entropy"] >= 0).all()
    assert blobs_adata.uns["demo"]["params"]["note"] is None
    assert blobs_adata.uns["demo"]["method"] == "pcc"


def test_h5ad_round_trip(blobs_adata, tmp_path):
    scc.tl.ensemble(blobs_adata, 4, ["kmeans", "leiden"], k=(2, 4))
    scc.tl.coassociation(blobs_adata, mode="dense")
    scc.tl.coassociation(blobs_adata, mode="sparse", key_added="sp", n_random=4)
    m = np.random.default_rng(0).dirichlet(np.ones(3), size=blobs_adata.n_obs)
    store_consensus(
        blobs_adata, "demo", m, method="pla", params={"k": (2, 3), "nested": {1: [1, 2]}},
        uns={"x": [{"a": 1}]},
    )  # fmt: skip
    path = tmp_path / "out.h5ad"
    blobs_adata.write_h5ad(path)
    back = ad.read_h5ad(path)
    np.testing.assert_array_equal(back.obsm["scc_ensemble"], blobs_adata.obsm["scc_ensemble"])
    np.testing.assert_array_equal(back.obsp["scc_coassoc_c"], blobs_adata.obsp["scc_coassoc_c"])
    assert back.obsp["sp_c"].nnz == blobs_adata.obsp["sp_c"].nnz  # explicit zeros survive
    pd.testing.assert_frame_equal(
        back.uns["scc_ensemble"]["partitions"], blobs_adata.uns["scc_ensemble"]["partitions"]
    )
    assert back.obs["demo"].equals(blobs_adata.obs["demo"])
    assert back.uns["demo"]["method"] == "pla"
    np.testing.assert_allclose(back.obsm["demo_membership"], blobs_adata.obsm["demo_membership"])


def test_sanitize_uns():
    out = sanitize_uns({1: (1, 2), "a": None, "b": [{"x": 1}], "c": np.float32(2.5)})
    assert set(out) == {"1", "a", "b", "c"}
    assert isinstance(out["1"], np.ndarray) and out["a"] is None
    assert out["b"] == {"0": {"x": 1}} and isinstance(out["c"], float)


def test_concat_of_separate_ensembles_is_refused_before_anything_is_written(blobs_adata):
    halves = [blobs_adata[:60].copy(), blobs_adata[60:].copy()]
    for i, half in enumerate(halves):
        scc.tl.ensemble(half, 6, k=(2, 4), random_state=i)
    joined = ad.concat(halves)
    assert "scc_ensemble" in joined.obsm and "scc_ensemble" not in joined.uns
    for tool in (scc.tl.pla, scc.tl.pcc):
        with pytest.raises(ValueError, match=r"joins 2 ensembles built separately.*joint data"):
            tool(joined, n_clusters=3)
    assert "pla" not in joined.obs and "pcc" not in joined.obs
    # and its co-association is not drawn either (a user trial: the heatmap drew it)
    with pytest.raises(ValueError, match=r"joins 2 ensembles built separately"):
        scc.pl.consensus_heatmap(joined, "scc_ensemble", show=False)
    # one ensemble, subset or not, is fine
    scc.tl.ensemble(joined, 6, k=(2, 4), random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        get_ensemble(joined)
        get_ensemble(joined[:30].copy())


@pytest.mark.parametrize("sparse_chunks", [False, True])
def test_a_dask_x_is_clustered_as_the_same_matrix_in_memory(sparse_chunks):
    """A user trial: a dask X of CSR chunks (scanpy's lazy workflows) was refused as
    "must be numeric, got dtype object"; dense and sparse chunks now give the ensemble of
    the matrix in memory."""
    da = pytest.importorskip("dask.array")

    X = sp.random(120, 8, density=0.5, format="csr", dtype=np.float64, random_state=0)
    X = X if sparse_chunks else X.toarray()
    lazy = ad.AnnData(da.from_array(X, chunks=(40, 8), asarray=False))
    kept = ad.AnnData(X)
    for a in (lazy, kept):
        scc.tl.ensemble(a, 4, k=3, random_state=0, progress=False)
    np.testing.assert_array_equal(lazy.obsm["scc_ensemble"], kept.obsm["scc_ensemble"])
