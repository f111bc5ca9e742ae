"""scikit-learn's bundled classification data as AnnData (items in rows)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from anndata import AnnData


def _load(loader, name: str) -> AnnData:
    bunch = loader()
    X = np.asarray(bunch.data, dtype=np.float64)
    names = np.asarray(bunch.target_names)[bunch.target].astype(str)
    feature_names = getattr(bunch, "feature_names", None)
    if feature_names is None or len(feature_names) != X.shape[1]:
        feature_names = [f"f{i}" for i in range(X.shape[1])]
    obs = pd.DataFrame(
        {"truth": pd.Categorical(names, categories=[str(t) for t in bunch.target_names])},
        index=[f"{name}_{i}" for i in range(X.shape[0])],
    )
    var = pd.DataFrame(index=[str(f) for f in feature_names])
    adata = AnnData(X=X, obs=obs, var=var)
    adata.uns["dataset"] = name
    return adata


def iris() -> AnnData:
    """Fisher's iris: 150 flowers x 4 measurements, 3 species in ``.obs["truth"]``.

    Examples
    --------
    >>> import scconsensus as scc
    >>> scc.datasets.iris().shape
    (150, 4)
    """
    from sklearn.datasets import load_iris

    return _load(load_iris, "iris")


def wine() -> AnnData:
    """UCI wine: 178 wines x 13 chemical measurements, 3 cultivars in ``.obs["truth"]``.

    The measurements keep their own units (proline up to 1,680 and 99.8 % of the
    variance): scale them first, ``sc.pp.scale(adata)``, or the clusters follow proline.

    Examples
    --------
    >>> import scconsensus as scc
    >>> scc.datasets.wine().shape
    (178, 13)
    """
    from sklearn.datasets import load_wine

    return _load(load_wine, "wine")


def breast_cancer() -> AnnData:
    """Wisconsin diagnostic breast cancer: 569 tumours x 30 features, 2 classes.

    The features keep their own units (areas in the thousands): ``sc.pp.scale(adata)``
    puts them on one scale.

    Examples
    --------
    >>> import scconsensus as scc
    >>> scc.datasets.breast_cancer().shape
    (569, 30)
    """
    from sklearn.datasets import load_breast_cancer

    return _load(load_breast_cancer, "breast_cancer")


def digits() -> AnnData:
    """Optical digits: 1,797 images x 64 pixels, 10 digits in ``.obs["truth"]``.

    Examples
    --------
    >>> import scconsensus as scc
    >>> scc.datasets.digits().shape
    (1797, 64)
    """
    from sklearn.datasets import load_digits

    return _load(load_digits, "digits")
