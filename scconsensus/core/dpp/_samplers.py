"""Samplers of Voronoi generators: determinantal (exact or low rank), uniform, k-means++.

The DPP sampler is the spectral algorithm of Hough et al. (2006) as written by Kulesza &
Taskar (2012, Alg. 1), the one 004_ Sect. 4 uses:

1. eigendecompose ``L = Σ λ_i v_i v_iᵀ``;
2. keep eigenvector ``i`` with probability ``λ_i / (1 + λ_i)`` (this picks an elementary
   DPP, a mixture component of weight ``Π_{i∈J} λ_i / det(L + I)``);
3. sample the projection DPP spanned by the kept vectors ``V_J`` item by item, each item
   with probability proportional to its squared residual norm after projecting out the
   items already chosen (chain rule; incremental Gram–Schmidt in O(n k) per item).

The low-rank (dual) sampler runs the same three steps on ``L = F Fᵀ`` with ``F`` n × d
(Nyström features): the eigenpairs come from the d × d matrix ``Fᵀ F`` and the
eigenvectors of ``L`` are ``F w / √λ``, so nothing costs more than O(n d²). With
``F Fᵀ = L`` exactly (full rank) it is the exact sampler.

``"uniform"`` is the PAM-like baseline of 004_ Sect. 5 (``k`` uniform in ``1..K_max``,
then ``k`` items uniformly without replacement); ``"kmeans++"`` draws ``k`` the same way
and seeds k-means with the k-means++ rule (004_ Sect. 6).
"""

from __future__ import annotations

import numpy as np

__all__ = ["SpectralDPP", "sample_projection_dpp", "sample_uniform"]


def sample_projection_dpp(V: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One draw of the projection DPP with kernel ``V Vᵀ`` (``V`` n × k, orthonormal columns).

    Returns exactly ``k`` distinct item indices, sorted.
    """
    n, k = V.shape
    if k == 0:
        return np.empty(0, dtype=np.int64)
    # residual squared norms = conditional inclusion probabilities (sum to k - t)
    resid = np.einsum("ij,ij->i", V, V)
    basis = np.empty((k, n), dtype=np.float64)
    chosen = np.empty(k, dtype=np.int64)
    for t in range(k):
        total = resid.sum()
        if total <= 0.0:  # rounding exhausted the span early; keep what was drawn
            return np.sort(chosen[:t])
        cum = np.cumsum(resid)
        i = int(np.searchsorted(cum, rng.random() * cum[-1], side="right"))
        i = min(i, n - 1)
        chosen[t] = i
        # kernel column K[:, i] minus its projection on the directions already taken
        col = V @ V[i]
        if t:
            col -= basis[:t].T @ basis[:t, i]
        col /= np.sqrt(resid[i])
        basis[t] = col
        resid -= col * col
        np.clip(resid, 0.0, None, out=resid)
        resid[chosen[: t + 1]] = 0.0
    return np.sort(chosen)


class SpectralDPP:
    """An L-ensemble DPP given by eigenpairs of its kernel ``L``.

    ``P(Y) = det(L_Y) / det(L + I)`` (004_ eq. 3). Build it with
    :meth:`from_kernel` (exact, O(n³) once) or :meth:`from_features` (dual, ``L = F Fᵀ``,
    O(n d²) once); :meth:`sample` then costs O(n k²) for a draw of size ``k``.

    Parameters
    ----------
    eigvals
        ``(m,)`` non-negative eigenvalues of ``L``.
    eigvecs
        ``(n, m)`` orthonormal eigenvectors of ``L``.

    Examples
    --------
    >>> import numpy as np
    >>> from scconsensus.core.dpp import SpectralDPP, rbf_kernel
    >>> X = np.random.default_rng(0).normal(size=(30, 2))
    >>> dpp = SpectralDPP.from_kernel(rbf_kernel(X, sigma2=1.0))
    >>> Y = dpp.sample(np.random.default_rng(1))
    >>> bool(np.all(np.diff(Y) > 0))
    True
    """

    def __init__(self, eigvals: np.ndarray, eigvecs: np.ndarray):
        eigvals = np.asarray(eigvals, dtype=np.float64)
        eigvecs = np.asarray(eigvecs, dtype=np.float64)
        if eigvecs.ndim != 2 or eigvals.shape != (eigvecs.shape[1],):
            raise ValueError(
                f"eigvecs must be (n, m) with m = len(eigvals); got {eigvecs.shape} and "
                f"{eigvals.shape}."
            )
        if not (np.all(np.isfinite(eigvals)) and np.all(np.isfinite(eigvecs))):
            raise ValueError("The DPP eigenpairs contain NaN or infinite values.")
        # round-off makes tiny eigenvalues of a PSD kernel slightly negative
        self.eigvals = np.clip(eigvals, 0.0, None)
        self.eigvecs = eigvecs
        self.inclusion = self.eigvals / (1.0 + self.eigvals)

    @classmethod
    def from_kernel(cls, L: np.ndarray) -> SpectralDPP:
        """Exact sampler from a symmetric PSD kernel matrix (eigendecomposition)."""
        L = np.asarray(L, dtype=np.float64)
        if L.ndim != 2 or L.shape[0] != L.shape[1]:
            raise ValueError(f"L must be a square kernel matrix, got shape {L.shape}.")
        if not np.all(np.isfinite(L)):
            raise ValueError("L contains NaN or infinite values.")
        if not np.allclose(L, L.T, rtol=1e-10, atol=1e-12):
            raise ValueError("L must be symmetric (a DPP kernel is symmetric PSD).")
        lam, V = np.linalg.eigh(L)
        if lam[0] < -1e-8 * max(1.0, abs(lam[-1])):
            raise ValueError(
                f"L is not positive semidefinite (smallest eigenvalue {lam[0]:.3g}); "
                "a DPP needs a PSD kernel such as the RBF kernel."
            )
        return cls(lam, V)

    @classmethod
    def from_features(cls, F: np.ndarray, *, rcond: float = 1e-12) -> SpectralDPP:
        """Low-rank (dual) sampler for ``L = F Fᵀ`` with ``F`` n × d, d ≪ n.

        The eigenpairs of the d × d dual kernel ``Fᵀ F = W Λ Wᵀ`` give those of ``L``:
        same non-zero eigenvalues, eigenvectors ``F W Λ^{-1/2}``.
        """
        F = np.asarray(F, dtype=np.float64)
        if F.ndim != 2:
            raise ValueError(f"F must be an (n, d) feature matrix, got shape {F.shape}.")
        if not np.all(np.isfinite(F)):
            raise ValueError("F contains NaN or infinite values.")
        lam, W = np.linalg.eigh(F.T @ F)
        keep = lam > rcond * max(lam[-1], 0.0) if lam.size else lam > 0
        lam, W = lam[keep], W[:, keep]
        return cls(lam, (F @ W) / np.sqrt(lam))

    @property
    def n_items(self) -> int:
        return self.eigvecs.shape[0]

    @property
    def expected_size(self) -> float:
        """``E|Y| = Σ λ_i / (1 + λ_i)``."""
        return float(self.inclusion.sum())

    def marginal_diagonal(self) -> np.ndarray:
        """Inclusion probabilities ``P(i ∈ Y)``: the diagonal of ``K = L (L + I)⁻¹``."""
        return (self.eigvecs**2) @ self.inclusion

    def sample(self, rng: np.random.Generator) -> np.ndarray:
        """One draw ``Y ~ DPP(L)`` as sorted item indices (possibly empty)."""
        J = np.flatnonzero(rng.random(self.inclusion.size) < self.inclusion)
        return sample_projection_dpp(self.eigvecs[:, J], rng)


def sample_uniform(n_items: int, k_max: int, rng: np.random.Generator) -> np.ndarray:
    """The PAM-like draw of 004_ Sect. 5: ``k ~ U{1..k_max}``, then ``k`` items uniformly."""
    k = int(rng.integers(1, k_max + 1))
    return np.sort(rng.choice(n_items, size=k, replace=False))
