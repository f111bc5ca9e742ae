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


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


# Starting R (rpy2, anndata2ri; possibly while test modules are collected) prepends R's and
# the system's library folders to LD_LIBRARY_PATH; child processes started later (joblib
# workers, Dask nannies, ``python -c`` checks) would then load the system libpython and lose
# this interpreter's site-packages. Keep the value the session started with.
_LIBRARY_PATH = os.environ.get("LD_LIBRARY_PATH")


def _restore_library_path() -> None:
    if _LIBRARY_PATH is None:
        os.environ.pop("LD_LIBRARY_PATH", None)
    else:
        os.environ["LD_LIBRARY_PATH"] = _LIBRARY_PATH


def pytest_collection_finish(session):
    _restore_library_path()


@pytest.fixture(autouse=True)
def _keep_library_path():
    yield
    _restore_library_path()
