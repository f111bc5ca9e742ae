"""Datasets as AnnData: the bundled PBMC data, scikit-learn's classics, and the PCC synthetic.

Every dataset with known classes stores them in ``.obs["truth"]`` (categorical).
Nothing here downloads: the data ship with scanpy and scikit-learn.
"""

from ._sklearn import breast_cancer, digits, iris, wine
from ._synthetic import soft_gaussian_mixture


def pbmc68k_reduced():
    """700 PBMCs x 765 genes, with PCA/UMAP and annotations (the copy that ships inside scanpy).

    ``.obs["truth"]`` holds the shipped ``bulk_labels`` annotation.

    Examples
    --------
    >>> import scconsensus as scc
    >>> adata = scc.datasets.pbmc68k_reduced()
    >>> adata.obsm["X_pca"].shape
    (700, 50)
    """
    import scanpy as sc

    adata = sc.datasets.pbmc68k_reduced()
    adata.obs["truth"] = adata.obs["bulk_labels"].astype("category")
    return adata


__all__ = ["breast_cancer", "digits", "iris", "pbmc68k_reduced", "soft_gaussian_mixture", "wine"]
