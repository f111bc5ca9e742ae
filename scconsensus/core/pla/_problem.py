"""The co-association of a set of items, dense or on a sparse pattern of pairs.

A ``Problem`` knows an ensemble restricted to some items and how ``Z`` is stored
(all pairs, or the pairs of a fixed pattern). It builds ``Z_α = Σ_l α_l Z_l`` for any
weights and evaluates the per-partition sums that weighted PLA needs
(``Σ_ij z^(l)_ij log p(i, j)``), without an ``n x n`` temporary in sparse mode.
"""

from __future__ import annotations

import numba
import numpy as np
import scipy.sparse as sp

from ._em import _DENSE_BLOCK_BYTES, _TINY, PLAFit
from ._members import (
    Members,
    partition_sums_dense,
    partition_sums_on_pattern,
    z_dense,
    z_on_pattern,
)


@numba.njit(cache=True, parallel=True)
def _pattern_logq(indptr, indices, P, W, logp, out):  # pragma: no cover - compiled
    K = P.shape[1]
    for i in numba.prange(indptr.size - 1):
        for e in range(indptr[i], indptr[i + 1]):
            j = indices[e]
            q = 0.0
            for v in range(K):
                q += P[i, v] * W[j, v]
            out[e] = np.log(max(q, 1e-300)) + logp[i]


def pattern_logq(
    pattern: sp.csr_matrix, P: np.ndarray, W: np.ndarray, logp: np.ndarray
) -> np.ndarray:
    """``log(p(i) Σ_v P_iv W_jv)`` on every stored entry ``(i, j)`` of ``pattern``.

    Parameters
    ----------
    pattern
        CSR pattern of item pairs.
    P, W
        ``(n, K)`` posteriors ``p(v|i)`` and likelihoods ``p(j|v)``.
    logp
        ``(n,)`` log marginals ``log p(i)``.

    Returns
    -------
    numpy.ndarray
        ``(pattern.nnz,)`` values, in the pattern's storage order.
    """
    out = np.empty(pattern.nnz)
    _pattern_logq(
        pattern.indptr.astype(np.int64),
        pattern.indices.astype(np.int64),
        np.ascontiguousarray(P, dtype=np.float64),
        np.ascontiguousarray(W, dtype=np.float64),
        np.ascontiguousarray(logp, dtype=np.float64),
        out,
    )
    return out


class Problem:
    """Items of an ensemble and the support of their co-association.

    Parameters
    ----------
    members
        The ensemble on these items.
    pattern
        ``None`` for dense ``Z`` (every pair, diagonal included), else a square
        CSR pattern whose stored entries are the pairs ``Z`` is evaluated on.
    """

    def __init__(
        self,
        members: Members,
        pattern: sp.csr_matrix | None = None,
        *,
        z_ones: np.ndarray | None = None,
    ):
        self.members = members
        self.pattern = pattern
        # values of Z = Σ_l Z_l on the pattern, when the caller has them already
        self._z_ones = z_ones

    @property
    def sparse(self) -> bool:
        return self.pattern is not None

    @property
    def n_items(self) -> int:
        return self.members.n_items

    @property
    def n_partitions(self) -> int:
        return self.members.n_partitions

    def z(self, alpha: np.ndarray) -> np.ndarray | sp.csr_matrix:
        """``Z_α`` (dense array, or CSR on the pattern)."""
        if self.pattern is None:
            return z_dense(self.members, self.members, alpha)
        alpha = np.asarray(alpha, dtype=np.float64)
        if self._z_ones is not None and np.all(alpha == 1.0):
            data = self._z_ones.copy()
        else:
            data = z_on_pattern(self.members, self.members, alpha, self.pattern)
        return sp.csr_matrix(
            (data, self.pattern.indices.copy(), self.pattern.indptr.copy()),
            shape=self.pattern.shape,
        )

    def partition_mass(self) -> np.ndarray:
        """``(L,)`` ``Σ_ij z^(l)_ij`` over the stored pairs."""
        if self.pattern is None:
            # Σ_ij Σ_{c in l} H_ic H_jc = Σ_{c in l} (Σ_i H_ic)²
            col = np.asarray(self.members.H.sum(axis=0)).ravel()
            return np.bincount(self.members.part, weights=col**2, minlength=self.n_partitions)
        return partition_sums_on_pattern(
            self.members, self.members, self.pattern, np.ones(self.pattern.nnz)
        )

    def partition_loglik(self, fit: PLAFit) -> np.ndarray:
        """``(L,)`` ``Σ_ij z^(l)_ij log(p(i) Σ_v p(v|i) p(j|v))`` — minus ``c_l`` of eq. 18."""
        P, W = fit.posteriors, fit.likelihoods
        with np.errstate(divide="ignore"):
            logp = np.log(np.maximum(fit.marginals, _TINY))
        if self.pattern is None:
            n = self.n_items
            out = np.zeros(self.n_partitions)
            block = max(1, min(n, _DENSE_BLOCK_BYTES // (8 * n)))
            for s in range(0, n, block):
                e = min(s + block, n)
                logq = np.log(np.maximum(P[s:e] @ W.T, _TINY)) + logp[s:e, None]
                out += partition_sums_dense(
                    self.members.subset(np.arange(s, e)), self.members, logq
                )
            return out
        logq = pattern_logq(self.pattern, P, W, logp)
        return partition_sums_on_pattern(self.members, self.members, self.pattern, logq)

    def subset(self, items: np.ndarray) -> Problem:
        """The problem restricted to ``items`` (the pattern's pairs among them)."""
        items = np.asarray(items)
        members = self.members.subset(items)
        if self.pattern is None:
            return Problem(members)
        sub = self.pattern[items][:, items].tocsr()
        sub.sort_indices()
        return Problem(members, sub)

    def block(
        self, rows: np.ndarray, cols: np.ndarray, alpha: np.ndarray
    ) -> np.ndarray | sp.csr_matrix:
        """``Z_α`` between the items ``rows`` and ``cols`` (for held-out scoring).

        Parameters
        ----------
        rows, cols
            Item indices.
        alpha
            ``(L,)`` partition weights ``α_l``.

        Returns
        -------
        numpy.ndarray or scipy.sparse.csr_matrix
            Dense, or on the problem's pattern when it has one.
        """
        a = self.members.subset(rows)
        b = self.members.subset(cols)
        if self.pattern is None:
            return z_dense(a, b, alpha)
        sub = self.pattern[rows][:, cols].tocsr()
        sub.sort_indices()
        data = z_on_pattern(a, b, alpha, sub)
        return sp.csr_matrix((data, sub.indices, sub.indptr), shape=sub.shape)
