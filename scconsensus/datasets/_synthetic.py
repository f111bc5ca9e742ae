"""The soft-ground-truth synthetic of Lourenço et al. 2015, Sect. 7.1."""

from __future__ import annotations

import numpy as np
import pandas as pd
from anndata import AnnData
from scipy.stats import multivariate_normal

from .._docs import doc_params
from .._validation import RandomState, check_rng

# signs of the four orthants, one Gaussian in each
_ORTHANTS = np.array([[1, 1], [-1, 1], [-1, -1], [1, -1]], dtype=float)


@doc_params()
def soft_gaussian_mixture(
    n_per_component: int = 200,
    n_partitions: int = 1000,
    *,
    mean_range: tuple[float, float] = (0.5, 3.0),
    std: float = 1.0,
    random_state: RandomState = 0,
    key_added: str = "scc_ensemble",
) -> AnnData:
    """Four planar Gaussians with a soft ground truth and hard partitions sampled from it.

    As in Sect. 7.1 of Lourenço et al. 2015: four isotropic bivariate Gaussians of
    ``n_per_component`` points each, with means drawn at random in the four
    orthants; the soft ground truth of a point is its normalised likelihood
    under each Gaussian; each of the ``n_partitions`` hard partitions assigns
    every point independently to a cluster drawn from its soft truth.

    Parameters
    ----------
    n_per_component
        Points per Gaussian (the paper: 200).
    n_partitions
        Hard partitions sampled from the soft truth (the paper: 1000).
    mean_range
        Absolute value range of each mean coordinate (sign fixed by the orthant).
    std
        Standard deviation of every Gaussian.
    {random_state}
    key_added
        Where the sampled ensemble goes (``.obsm`` and ``.uns``).

    Returns
    -------
    AnnData
        ``X`` (points), ``.obs["truth"]`` (most probable component),
        ``.obs["component"]`` (generating component), ``.obsm["soft_truth"]``
        (``n x 4``), ``.obsm[key_added]`` (``n x n_partitions`` int32 labels),
        ``.uns["soft_gaussian_mixture"]`` (means and parameters).

    Examples
    --------
    >>> import scconsensus as scc
    >>> adata = scc.datasets.soft_gaussian_mixture(n_per_component=20, n_partitions=10)
    >>> adata.obsm["soft_truth"].shape, adata.obsm["scc_ensemble"].shape
    ((80, 4), (80, 10))
    """
    if n_per_component < 1 or n_partitions < 1:
        raise ValueError("n_per_component and n_partitions must be positive.")
    rng = check_rng(random_state)
    lo, hi = mean_range
    means = _ORTHANTS * rng.uniform(lo, hi, size=(4, 2))
    component = np.repeat(np.arange(4), n_per_component)
    X = means[component] + std * rng.standard_normal((component.size, 2))
    dens = np.column_stack(
        [multivariate_normal(mean=m, cov=std**2 * np.eye(2)).pdf(X) for m in means]
    )
    soft = dens / dens.sum(axis=1, keepdims=True)
    labels = _sample_partitions(soft, n_partitions, rng)
    obs = pd.DataFrame(
        {
            "truth": pd.Categorical(soft.argmax(axis=1).astype(str)),
            "component": pd.Categorical(component.astype(str)),
        },
        index=[f"p{i}" for i in range(component.size)],
    )
    adata = AnnData(X=X, obs=obs)
    adata.var_names = ["x", "y"]
    adata.obsm["soft_truth"] = soft
    adata.obsm[key_added] = labels
    method = np.array(["soft_sampling"], dtype=object)
    adata.uns[key_added] = {"params": {"n_partitions": int(n_partitions), "method": method}}
    adata.uns["soft_gaussian_mixture"] = {
        "means": means,
        "std": float(std),
        "n_per_component": int(n_per_component),
    }
    return adata


def _sample_partitions(soft: np.ndarray, n_partitions: int, rng) -> np.ndarray:
    """``(n, n_partitions)`` labels, each item's cluster drawn from its row of ``soft``."""
    cum = soft.cumsum(axis=1)
    cum[:, -1] = 1.0
    draws = rng.random((soft.shape[0], n_partitions))
    labels = np.empty((soft.shape[0], n_partitions), dtype=np.int32)
    for j in range(n_partitions):
        labels[:, j] = (draws[:, j : j + 1] > cum).sum(axis=1)
    return labels
