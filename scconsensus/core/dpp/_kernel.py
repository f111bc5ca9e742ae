"""RBF kernel of determinantal consensus clustering and its low-rank factor.

Vicente & Murua (2021), eqs. 7–9.

The bandwidth is the mean pairwise squared Euclidean distance (eq. 8), scaled by a
tuning factor ``s`` (eq. 9):

    κ(x_i, x_j) = exp(-‖x_i − x_j‖² / (2 s σ̂²)),   σ̂² = 2 Σ_{i<j} ‖x_i − x_j‖² / (n(n−1)).

Because Σ_{i<j} ‖x_i − x_j‖² = n Σ_i ‖x_i − x̄‖², σ̂² = 2 Σ_i ‖x_i − x̄‖² / (n − 1): it is
computed from the mean and the row norms in O(np), with no n × n temporary.

For large n the kernel matrix is replaced by Nyström features ``F`` (n × d) with
``F Fᵀ ≈ L``; they drive the low-rank DPP sampler and the kernel validity index of the
sparse route.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.metrics.pairwise import euclidean_distances

from ..._docs import doc_params
from ..._validation import RandomState, check_rng

__all__ = ["nystrom_features", "rbf_bandwidth", "rbf_kernel"]

# Rows per block when evaluating kernel columns: bounds temporaries to _BLOCK x m.
_BLOCK = 8192


def rbf_bandwidth(X: np.ndarray | sp.spmatrix) -> float:
    """σ̂² of eq. 8: the mean squared Euclidean distance over all pairs ``i < j``.

    Parameters
    ----------
    X
        ``(n, p)`` data, dense or sparse, ``n >= 2``.

    Returns
    -------
    The bandwidth ``σ̂²`` (before the ``s`` scaling of eq. 9).

    Examples
    --------
    >>> import numpy as np
    >>> from scconsensus.core.dpp import rbf_bandwidth
    >>> round(rbf_bandwidth(np.array([[0.0], [1.0], [3.0]])), 6)  # (1 + 9 + 4) / 3
    4.666667
    """
    n = X.shape[0]
    if n < 2:
        raise ValueError(f"The RBF bandwidth needs at least 2 items, got {n}.")
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64)
        mean = np.asarray(X.mean(axis=0)).ravel()
        total = float(X.multiply(X).sum()) - n * float(mean @ mean)
    else:
        X = np.asarray(X, dtype=np.float64)
        centred = X - X.mean(axis=0)
        # einsum avoids materialising the squared matrix
        total = float(np.einsum("ij,ij->", centred, centred))
    return 2.0 * max(total, 0.0) / (n - 1)


def _gamma(sigma2: float, s: float) -> float:
    if not (np.isfinite(sigma2) and sigma2 > 0):
        raise ValueError(
            f"The RBF bandwidth is {sigma2}: all items are identical (or X is not finite), "
            "so the kernel cannot separate them. Remove duplicated items or constant data."
        )
    if not (np.isfinite(s) and s > 0):
        raise ValueError(f"s (bandwidth scale, eq. 9) must be a positive number, got {s}.")
    return 1.0 / (2.0 * s * sigma2)


def rbf_kernel(
    X: np.ndarray,
    Y: np.ndarray | None = None,
    *,
    sigma2: float,
    s: float = 1.0,
) -> np.ndarray:
    """The kernel matrix of eq. 9 between the rows of ``X`` and of ``Y`` (default ``X``).

    Parameters
    ----------
    X, Y
        ``(n, p)`` and ``(m, p)`` data; ``Y`` omitted: ``X``.
    sigma2
        Bandwidth σ̂² of eq. 8 (:func:`rbf_bandwidth`).
    s
        Bandwidth scale (paper: 1).

    Returns
    -------
    numpy.ndarray
        ``(n, m)`` kernel values.

    Examples
    --------
    >>> import numpy as np
    >>> from scconsensus.core.dpp import rbf_kernel
    >>> L = rbf_kernel(np.eye(3), sigma2=1.0)
    >>> float(L[0, 1]) == float(np.exp(-1.0))
    True
    """
    gamma = _gamma(sigma2, s)
    d2 = euclidean_distances(X, Y, squared=True)
    d2 *= -gamma
    np.exp(d2, out=d2)
    if Y is None:
        np.fill_diagonal(d2, 1.0)
    return d2


@doc_params()
def nystrom_features(
    X: np.ndarray,
    n_components: int,
    *,
    sigma2: float,
    s: float = 1.0,
    random_state: RandomState = 0,
    rcond: float = 1e-10,
) -> np.ndarray:
    """Nyström features ``F`` (n × d) of the RBF kernel: ``F Fᵀ = K_nm K_mm⁺ K_mn ≈ L``.

    ``n_components`` landmarks are drawn uniformly without replacement; with all ``n``
    items as landmarks ``F Fᵀ`` equals ``L`` up to the dropped eigenvalues below
    ``rcond · λ_max`` of ``K_mm``. The columns of ``F`` are orthogonal (they are the
    eigenbasis of ``K_mm`` mapped to all items), which the dual sampler relies on only
    through ``Fᵀ F``.

    Parameters
    ----------
    X
        ``(n, p)`` dense data.
    n_components
        Number of landmarks ``m`` (the rank is at most ``m``).
    sigma2, s
        Bandwidth (eq. 8) and its scale (eq. 9).
    {random_state}
        Here it seeds the landmark draw.
    rcond
        Relative eigenvalue cut-off of the landmark kernel's pseudo-inverse.
    """
    X = np.asarray(X, dtype=np.float64)
    n = X.shape[0]
    m = int(n_components)
    if m < 1:
        raise ValueError(f"n_components must be a positive integer, got {n_components}.")
    m = min(m, n)
    rng = check_rng(random_state)
    landmarks = np.sort(rng.choice(n, size=m, replace=False)) if m < n else np.arange(n)
    Z = X[landmarks]
    K_mm = rbf_kernel(Z, sigma2=sigma2, s=s)
    lam, U = np.linalg.eigh(K_mm)
    keep = lam > rcond * lam[-1]
    # K_nm U Λ^{-1/2}: its Gram matrix is the Nyström approximation K_nm K_mm⁺ K_mn
    proj = U[:, keep] / np.sqrt(lam[keep])
    F = np.empty((n, proj.shape[1]), dtype=np.float64)
    for start in range(0, n, _BLOCK):
        stop = min(start + _BLOCK, n)
        F[start:stop] = rbf_kernel(X[start:stop], Z, sigma2=sigma2, s=s) @ proj
    return F
