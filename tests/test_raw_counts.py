"""A user trial clustered an un-normalised counts file without a word: X that looks like
raw counts is named, with what to run first."""

from __future__ import annotations

import warnings

import anndata as ad
import numpy as np
import pytest
import scipy.sparse as sp

import scconsensus as scc


def _counts(n=60, genes=30, seed=0):
    rng = np.random.default_rng(seed)
    return rng.negative_binomial(5, 0.05, size=(n, genes)).astype(np.float32)


@pytest.mark.parametrize("sparse", [False, True])
def test_raw_counts_in_x_get_a_warning_naming_the_fix(sparse):
    X = _counts()
    a = ad.AnnData(sp.csr_matrix(X) if sparse else X)
    with pytest.warns(UserWarning, match=r"adata.X looks like raw counts.*sc.pp.log1p"):
        scc.tl.ensemble(a, n_partitions=3, k=3)


@pytest.mark.parametrize(
    "X",
    [
        np.log1p(_counts()),  # normalised values
        np.random.default_rng(0).integers(0, 17, size=(60, 30)).astype(float),  # digits' 0-16
        np.random.default_rng(0).normal(size=(60, 30)) * 500,  # negative values
    ],
)
def test_other_data_get_no_counts_warning(X):
    a = ad.AnnData(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        scc.tl.ensemble(a, n_partitions=3, k=3)


def test_a_counts_layer_and_a_fortran_x_are_checked_too():
    a = ad.AnnData(np.log1p(_counts()))
    a.layers["counts"] = _counts()
    with pytest.warns(UserWarning, match=r"adata.layers\['counts'\] looks like raw counts") as w:
        scc.tl.ensemble(a, n_partitions=3, k=3, layer="counts")
    # the layer was passed: the advice is another one (a user trial was told "or layer")
    assert "or another layer of normalised values" in str(w[0].message)
    b = ad.AnnData(np.asfortranarray(_counts(n=3000)))
    with pytest.warns(UserWarning, match="adata.X looks like raw counts"):
        scc.tl.ensemble(b, n_partitions=2, k=3)


def test_a_representation_is_not_checked_for_counts():
    a = ad.AnnData(_counts())
    a.obsm["X_pca"] = np.log1p(a.X[:, :5])
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        scc.tl.ensemble(a, n_partitions=3, k=3)


@pytest.mark.parametrize("sparse", [False, True])
def test_one_feature_on_its_own_scale_is_named(sparse):
    """A fourth user trial clustered UCI wine unscaled (ARI 0.22; 0.90 scaled): the
    feature that holds the variance is named, scaled data and PCA pass."""
    import scanpy as sc

    wine = scc.datasets.wine()
    if sparse:
        wine.X = sp.csr_matrix(wine.X)
    with pytest.warns(UserWarning, match=r"adata.X \('proline'\) holds 99.8% of its variance"):
        scc.tl.ensemble(wine, n_partitions=3, k=3, progress=False)
    scaled = scc.datasets.wine()
    sc.pp.scale(scaled)
    for quiet in (scaled, scc.datasets.iris(), scc.datasets.breast_cancer()):
        with warnings.catch_warnings():
            warnings.filterwarnings("error", message="One feature")
            scc.tl.ensemble(quiet, n_partitions=3, k=3, progress=False)
