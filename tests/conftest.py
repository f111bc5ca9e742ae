import os

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")
os.environ.setdefault("NUMBA_NUM_THREADS", "2")


@pytest.fixture
def blobs():
    """Three well-separated Gaussian blobs: (X, truth)."""
    from sklearn.datasets import make_blobs

    X, y = make_blobs(n_samples=120, centers=3, cluster_std=0.6, random_state=0)
    return X, y


@pytest.fixture
def blobs_adata(blobs):
    import anndata as ad
    import pandas as pd

    X, y = blobs
    adata = ad.AnnData(X=X, obs=pd.DataFrame({"truth": pd.Categorical(y.astype(str))}))
    adata.obs_names = [f"c{i}" for i in range(X.shape[0])]
    return adata


@pytest.fixture(scope="module")
def planted_dense():
    """Co-association of the default planted ensemble: (truth, C, N)."""
    from _helpers import planted

    from scconsensus.core.coassociation import coassociation

    truth, labels = planted()
    C, N = coassociation(labels)
    return truth, C, N


@pytest.fixture
def rng():
    return np.random.default_rng(12345)
