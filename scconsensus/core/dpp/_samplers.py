"""Samplers of Voronoi generators: determinantal (exact or low rank), uniform, k-means++.

The DPP sampler is the spectral algorithm of Hough et al. (2006) as written by Kulesza &
Taskar (2012, Alg. 1), the one Vicente & Murua 2021, Sect. 4, use:

1. eigendecompose ``L = Σ λ_i v_i v_iᵀ``;
2. keep eigenvector ``i`` with probability ``λ_i / (1 + λ_i)`` (this picks an elementary
   DPP, a mixture component of weight ``Π_{i∈J} λ_i / det(L + I)``);
3. sample the projection DPP spanned by the kept vectors ``V_J`` item by item, each item
   with probability proportional to its squared residual norm after projecting out the
   items already chosen (chain rule), drawn exactly by rejection from the fixed proposal
   ``‖v_i‖²`` (see :func:`sample_projection_dpp`).

The low-rank (dual) sampler runs the same three steps on ``L = F Fᵀ`` with ``F`` n × d
(Nyström features): the eigenpairs come from the d × d matrix ``Fᵀ F`` and the
eigenvectors of ``L`` are ``F w / √λ``, so nothing costs more than O(n d²). With
``F Fᵀ = L`` exactly (full rank) it is the exact sampler.

``"uniform"`` is the PAM-like baseline of Vicente & Murua (2021), Sect. 5 (``k`` uniform
in ``1..K_max``, then ``k`` items uniformly without replacement); ``"kmeans++"`` draws
``k`` the same way and seeds k-means with the k-means++ rule (their Sect. 6).
"""

from __future__ import annotations

import numpy as np
import scipy.optimize

from ..._threads import one_blas_thread
from .._lapack import eigh_evr

__all__ = ["SpectralDPP", "sample_projection_dpp", "sample_uniform"]

# Proposal batches per item before giving up on a (numerically) exhausted span.
_MAX_BATCHES = 10_000
# Redraws allowed when a DPP draw comes out empty (probability Π 1/(1+λ_i)).
_MAX_EMPTY_REDRAWS = 1000


def sample_projection_dpp(
    V: np.ndarray,
    rng: np.random.Generator,
    columns: np.ndarray | None = None,
    norms: np.ndarray | None = None,
) -> np.ndarray:
    """One draw of the projection DPP with kernel ``V_J V_Jᵀ`` (orthonormal columns ``J``).

    Chain rule: after items ``S`` are chosen, item ``i`` comes next with probability
    proportional to ``‖P_S^⊥ v_i‖²``, the squared norm of its row ``v_i`` of ``V_J`` after
    projecting out the rows already chosen (a k-dimensional computation). It is sampled
    exactly by rejection: propose ``i`` with probability ``‖v_i‖² / k`` (fixed, one binary
    search) and accept with probability ``‖P_S^⊥ v_i‖² / ‖v_i‖²``. Step ``t`` needs
    ``k / (k - t)`` proposals on average, ``k log k`` in all, each O(k t); nothing touches
    all ``n`` rows after the proposal weights, so a draw costs O(n k + k³ log k) instead
    of the O(n k²) of the textbook update (which reads ``V`` once per item drawn).
    Proposals are scored in batches; the first accepted one is the rejection sampler's
    draw.

    Parameters
    ----------
    V
        ``(n, m)`` matrix whose columns ``columns`` are orthonormal.
    rng
        Random generator.
    columns
        The ``k`` columns spanning the projection DPP (default: all).
    norms
        Precomputed ``‖v_i‖²`` over ``columns`` (saves one pass over ``V``).

    Returns
    -------
    Exactly ``k`` distinct item indices, sorted.
    """
    n = V.shape[0]
    if columns is None:
        columns = np.arange(V.shape[1])
    k = int(np.size(columns))
    if k == 0:
        return np.empty(0, dtype=np.int64)
    if norms is None:
        sub = V[:, columns]
        norms = np.einsum("ij,ij->i", sub, sub)
    cum = np.cumsum(norms)
    basis = np.zeros((k, k), dtype=np.float64)
    chosen = np.empty(k, dtype=np.int64)
    for t in range(k):
        batch = min(4096, int(np.ceil(1.5 * k / (k - t))) + 2)
        for _ in range(_MAX_BATCHES):
            cand = np.searchsorted(cum, rng.random(batch) * cum[-1], side="right")
            np.minimum(cand, n - 1, out=cand)
            rows = V[np.ix_(cand, columns)]
            if t:
                rows -= (rows @ basis[:t].T) @ basis[:t]
            resid = np.einsum("ij,ij->i", rows, rows)
            ok = np.flatnonzero(rng.random(batch) * norms[cand] < resid)
            if ok.size:
                j = ok[0]
                break
        else:  # pragma: no cover - only if rounding leaves no mass outside the span
            return np.sort(chosen[:t])
        chosen[t] = cand[j]
        new = rows[j]
        if t:
            # second Gram-Schmidt pass keeps the basis orthonormal to rounding
            new -= basis[:t].T @ (basis[:t] @ new)
        basis[t] = new / np.linalg.norm(new)
    return np.sort(chosen)


class SpectralDPP:
    """An L-ensemble DPP given by eigenpairs of its kernel ``L``.

    ``P(Y) = det(L_Y) / det(L + I)`` (Vicente & Murua 2021, eq. 3). Build it with
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
        # squared eigenvectors give every draw's proposal weights with one GEMV
        self._sq = eigvecs**2
        #: factor applied to the kernel by :meth:`with_expected_size` (1 otherwise)
        self.scale = 1.0

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
        # MRRR (syevr) is the fastest full symmetric eigensolver here (about 2x syevd);
        # seconds at a few thousand items, so in a form Ctrl-C interrupts
        lam, V = eigh_evr(L)
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

        Parameters
        ----------
        F
            ``(n, d)`` features.
        rcond
            Dual eigenvalues below ``rcond`` times the largest are dropped.

        Returns
        -------
        SpectralDPP
            The sampler of ``DPP(F Fᵀ)``.
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

    def with_expected_size(self, expected_size: float) -> SpectralDPP:
        """The DPP of ``c L`` with ``c`` chosen so that ``E|Y| = expected_size``.

        Scaling ``L`` keeps its eigenvectors, hence which sets are diverse, and only moves
        the size distribution: ``E|Y| = Σ cλ_i / (1 + cλ_i)`` is increasing in ``c``. The
        factor is stored as ``scale`` on the result.

        Parameters
        ----------
        expected_size
            The mean number of items per draw, in ``(0, rank)``.

        Returns
        -------
        SpectralDPP
            The sampler of ``DPP(c L)``.
        """
        target = float(expected_size)
        rank = int(np.count_nonzero(self.eigvals > 0))
        if not (0.0 < target < rank):
            raise ValueError(
                f"expected_size must be in (0, {rank}) (the kernel's rank), got {expected_size}."
            )
        lam = self.eigvals[self.eigvals > 0]

        def excess(log_c: float) -> float:
            c = np.exp(log_c)
            return float((c * lam / (1.0 + c * lam)).sum()) - target

        lo, hi = -50.0, 50.0
        log_c = scipy.optimize.brentq(excess, lo, hi, xtol=1e-12)
        return self.scaled(np.exp(log_c))

    def scaled(self, factor: float) -> SpectralDPP:
        """The DPP of ``factor * L`` (same eigenvectors; ``scale`` records the factor).

        Parameters
        ----------
        factor
            Positive multiplier of the kernel.

        Returns
        -------
        SpectralDPP
            The sampler of ``DPP(factor L)``.
        """
        factor = float(factor)
        if not (np.isfinite(factor) and factor > 0):
            raise ValueError(f"The kernel scale must be a positive number, got {factor}.")
        out = SpectralDPP(self.eigvals * factor, self.eigvecs)
        out.scale = self.scale * factor
        return out

    def marginal_diagonal(self) -> np.ndarray:
        """Inclusion probabilities ``P(i ∈ Y)``: the diagonal of ``K = L (L + I)⁻¹``."""
        return self._sq @ self.inclusion

    def sample(self, rng: np.random.Generator) -> np.ndarray:
        """One draw ``Y ~ DPP(L)`` as sorted item indices (possibly empty).

        Parameters
        ----------
        rng
            The draw's generator.

        Returns
        -------
        numpy.ndarray
            The drawn item indices, sorted.
        """
        pick = rng.random(self.inclusion.size) < self.inclusion
        J = np.flatnonzero(pick)
        if J.size == 0:
            return np.empty(0, dtype=np.int64)
        norms = self._sq @ pick.astype(np.float64)
        return sample_projection_dpp(self.eigvecs, rng, columns=J, norms=norms)

    def sample_many(self, rngs, *, nonempty: bool = False) -> list[np.ndarray]:
        """One draw per generator in ``rngs``; ``nonempty`` redraws empty sets.

        Conditioning on ``Y ≠ ∅`` (a Voronoi diagram needs a generator) changes the law
        by the factor ``1 / (1 − Π 1/(1 + λ_i))``, negligible for RBF kernels.

        Parameters
        ----------
        rngs
            :class:`numpy.random.Generator` objects, one per draw.
        nonempty
            Draw again (up to a fixed number of tries) when a draw is empty.

        Returns
        -------
        list of numpy.ndarray
            The sampled item indices of each draw.

        Raises
        ------
        ValueError
            If ``nonempty`` and every try drew the empty set.
        """
        out = []
        # a draw is a chain of tiny GEMMs: BLAS threads only add synchronisation
        # (10x slower measured on a loaded 2-core machine)
        with one_blas_thread():
            for rng in rngs:
                Y = self.sample(rng)
                tries = 1
                while nonempty and Y.size == 0:
                    if tries >= _MAX_EMPTY_REDRAWS:
                        raise ValueError(
                            f"The DPP kernel drew {tries} empty sets (expected size "
                            f"{self.expected_size:.3g}). Increase the bandwidth scale s or "
                            "check the data."
                        )
                    Y = self.sample(rng)
                    tries += 1
                out.append(Y)
        return out


def sample_uniform(n_items: int, k_max: int, rng: np.random.Generator) -> np.ndarray:
    """The PAM-like draw of Vicente & Murua (2021), Sect. 5: ``k ~ U{1..k_max}``, then ``k`` items.

    The ``k`` items are drawn uniformly without replacement.

    Parameters
    ----------
    n_items
        ``n``.
    k_max
        Largest ``k``.
    rng
        The run's generator.

    Returns
    -------
    numpy.ndarray
        The sorted indices of the drawn items.
    """
    k = int(rng.integers(1, k_max + 1))
    return np.sort(rng.choice(n_items, size=k, replace=False))
