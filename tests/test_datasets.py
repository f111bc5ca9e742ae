import numpy as np
import pytest

import scconsensus as scc


@pytest.mark.parametrize(
    ("name", "shape", "n_classes"),
    [
        ("iris", (150, 4), 3),
        ("wine", (178, 13), 3),
        ("breast_cancer", (569, 30), 2),
        ("digits", (1797, 64), 10),
    ],
)
def test_sklearn_datasets(name, shape, n_classes):
    adata = getattr(scc.datasets, name)()
    assert adata.shape == shape
    assert adata.obs["truth"].nunique() == n_classes


def test_pbmc68k_reduced():
    adata = scc.datasets.pbmc68k_reduced()
    assert adata.n_obs == 700 and "X_pca" in adata.obsm and "truth" in adata.obs


def test_soft_gaussian_mixture():
    adata = scc.datasets.soft_gaussian_mixture(n_per_component=50, n_partitions=400)
    soft = adata.obsm["soft_truth"]
    labels = adata.obsm["scc_ensemble"]
    assert soft.shape == (200, 4) and labels.shape == (200, 400)
    np.testing.assert_allclose(soft.sum(1), 1)
    # hard partitions are drawn from the soft truth: label frequencies estimate it
    freq = np.stack([(labels == c).mean(axis=1) for c in range(4)], axis=1)
    assert np.abs(freq - soft).max() < 0.12
    means = adata.uns["soft_gaussian_mixture"]["means"]
    assert (np.sign(means) == np.array([[1, 1], [-1, 1], [-1, -1], [1, -1]])).all()
    again = scc.datasets.soft_gaussian_mixture(n_per_component=50, n_partitions=400)
    np.testing.assert_array_equal(again.obsm["scc_ensemble"], labels)
