"""Ensembles as one stacked membership matrix, and the co-association built from it.

PLA (Lange & Buhmann 2005, Sect. 3) works on ``Z = Σ_l α_l Y_l Y_lᵀ``. Every partition ``Y_l``
(``n x k_l``, hard one-hot or soft rows on the simplex, zero rows for items the
partition did not sample) becomes a block of columns of one sparse ``H = [Y_1 … Y_L]``,
so that ``Z = H diag(α_part) Hᵀ``. Dense ``Z`` is that product; sparse ``Z`` is
evaluated only on a pattern of item pairs by merging two rows of ``H`` (numba),
O(L) per pair for hard ensembles, and never needs an ``n x n`` temporary.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numba
import numpy as np
import scipy.sparse as sp

from ..._docs import doc_params
from ..._validation import check_labels
from .._labels import compact_labels

__all__ = ["Members", "as_members"]

_ROWS_COLS = """\
rows, cols
    The ensemble's memberships on the row items and on the column items (the same
    partitions, :func:`align_members` layout)."""
_ALPHA = """\
alpha
    ``(L,)`` partition weights ``α_l``."""
_PATTERN = """\
pattern
    CSR pattern of ``(row item, column item)`` pairs, sorted indices."""
_SUMS = """\
numpy.ndarray
    ``(L,)`` one sum per partition."""


@dataclass(frozen=True)
class Members:
    """An ensemble of ``L`` (soft) partitions stacked column-wise.

    Attributes
    ----------
    H
        ``(n_items, Σ k_l)`` CSR matrix with sorted column indices: row ``i`` holds
        item ``i``'s memberships in every partition (zeros where unsampled).
    part
        ``(Σ k_l,)`` partition index of every column.
    n_partitions
        ``L``.
    """

    H: sp.csr_matrix
    part: np.ndarray
    n_partitions: int

    @property
    def n_items(self) -> int:
        return self.H.shape[0]

    def subset(self, rows: np.ndarray) -> Members:
        """The same partitions restricted to the items ``rows``."""
        H = self.H[np.asarray(rows)]
        H.sort_indices()
        return Members(sp.csr_matrix(H), self.part, self.n_partitions)

    def column_weights(self, alpha: np.ndarray) -> np.ndarray:
        """Per-column weight ``α_l`` of the partition each column belongs to."""
        return np.ascontiguousarray(np.asarray(alpha, dtype=np.float64)[self.part])

    def argmax_labels(self) -> np.ndarray:
        """``(n_items, L)`` int32: each item's largest membership per partition, ``-1``
        where it has none (the labels themselves for a hard ensemble)."""
        H = self.H.tocoo()
        keep = H.data > 0
        row, col, val = H.row[keep], H.col[keep], H.data[keep]
        part = self.part[col]
        first_col = np.searchsorted(self.part, np.arange(self.n_partitions))
        order = np.lexsort((-val, part, row))
        row, part, col = row[order], part[order], col[order]
        lead = np.ones(row.size, dtype=bool)
        lead[1:] = (row[1:] != row[:-1]) | (part[1:] != part[:-1])
        labels = np.full((self.n_items, self.n_partitions), -1, dtype=np.int32)
        labels[row[lead], part[lead]] = col[lead] - first_col[part[lead]]
        return labels

    def sampled(self) -> np.ndarray:
        """``(n_items,)`` number of partitions that give item ``i`` any membership."""
        H = self.H.tocoo()
        seen = np.zeros((self.n_items, self.n_partitions), dtype=bool)
        seen[H.row, self.part[H.col]] = H.data > 0
        return seen.sum(axis=1)


def _from_labels(labels: np.ndarray) -> Members:
    n, n_partitions = labels.shape
    width = labels.max(axis=0).clip(min=-1).astype(np.int64) + 1
    offsets = np.concatenate([[0], np.cumsum(width)])
    rows, cols = np.nonzero(labels >= 0)
    H = sp.csr_matrix(
        (np.ones(rows.size), (rows, offsets[cols] + labels[rows, cols])),
        shape=(n, int(offsets[-1])),
    )
    H.sort_indices()
    part = np.repeat(np.arange(n_partitions, dtype=np.int64), width)
    return Members(H, part, n_partitions)


def _from_soft(memberships: Sequence[np.ndarray], min_items: int = 2) -> Members:
    if len(memberships) == 0:
        raise ValueError("The ensemble is empty: give at least one membership matrix.")
    blocks = []
    n = None
    for idx, Y in enumerate(memberships):
        Y = Y.toarray() if sp.issparse(Y) else np.asarray(Y)
        name = f"memberships[{idx}]"
        if Y.ndim != 2:
            raise ValueError(f"{name} must be an (n_items, k) matrix, got shape {Y.shape}.")
        if Y.dtype.kind not in "biuf":
            raise ValueError(f"{name} must be numeric, got dtype {Y.dtype}.")
        Y = Y.astype(np.float64)
        if n is None:
            n = Y.shape[0]
        elif Y.shape[0] != n:
            raise ValueError(
                f"{name} has {Y.shape[0]} rows but memberships[0] has {n}: every partition "
                "must give one row per item (all-zero rows for unsampled items)."
            )
        if not np.all(np.isfinite(Y)):
            raise ValueError(f"{name} contains NaN or infinite values.")
        if Y.size and Y.min() < 0:
            raise ValueError(f"{name} has negative memberships; memberships must be >= 0.")
        sums = Y.sum(axis=1)
        bad = ~(np.isclose(sums, 1.0, atol=1e-6) | (sums == 0))
        if bad.any():
            raise ValueError(
                f"{name}: {int(bad.sum())} row(s) sum to neither 1 nor 0. Rows must be "
                "memberships on the simplex (or all zero for items the partition did not "
                "sample); normalise them with Y / Y.sum(axis=1, keepdims=True)."
            )
        blocks.append(sp.csr_matrix(Y))
    if n is None or n < min_items:
        raise ValueError(f"The ensemble has {n} item(s); at least {min_items} are needed.")
    H = sp.csr_matrix(sp.hstack(blocks, format="csr"))
    H.eliminate_zeros()
    H.sort_indices()
    part = np.repeat(np.arange(len(blocks), dtype=np.int64), [b.shape[1] for b in blocks])
    return Members(H, part, len(blocks))


def hard_labels(ensemble, min_items: int = 2, name: str = "ensemble") -> np.ndarray | None:
    """``ensemble`` as checked int32 hard labels, or ``None`` for soft memberships.

    Parameters
    ----------
    ensemble
        What :func:`as_members` accepts.
    min_items
        Fewest items accepted (``1``: a single new item).
    name
        The argument's name, for the messages.

    Returns
    -------
    numpy.ndarray or None
        ``(n, L)`` labels, ``-1`` unsampled, as given (not renumbered).
    """
    if isinstance(ensemble, Members | list | tuple):
        return None
    arr = np.asarray(ensemble)
    if arr.ndim == 3:
        return None
    if min_items < 2 and arr.ndim == 2 and arr.shape[0] == 1:
        # check_labels insists on two items; a lone new item is checked as a pair
        return check_labels(np.vstack([arr, arr]), name)[:1]
    return check_labels(arr, name)


def as_members(ensemble, *, min_items: int = 2, compact: bool = True) -> Members:
    """Hard labels ``(n, L)`` (``-1`` = unsampled) or a list of soft ``(n, k_l)`` memberships.

    Parameters
    ----------
    ensemble
        Hard labels, a list of soft memberships (or an ``(n, k, L)`` array of them), or
        :class:`Members` (returned as is).
    min_items
        Fewest items accepted; ``min_items=1`` accepts a single item (new items to
        extend to).
    compact
        Renumber hard labels ``0..k-1`` per partition first, so the columns grow with
        the number of clusters, not with the largest label id (``False`` for labels
        already renumbered together with another ensemble's, as :func:`pla_extend` does).

    Returns
    -------
    Members
        The stacked memberships.

    Raises
    ------
    ValueError
        On wrong shapes, non-integer labels, negative or non-normalised memberships.
    """
    if isinstance(ensemble, Members):
        return ensemble
    labels = hard_labels(ensemble, min_items)
    if labels is not None:
        return _from_labels(compact_labels(labels) if compact else labels)
    if isinstance(ensemble, list | tuple):
        return _from_soft(ensemble, min_items)
    arr = np.asarray(ensemble)
    return _from_soft([arr[:, :, i] for i in range(arr.shape[2])], min_items)


# --------------------------------------------------------------------------- dense Z


@doc_params(rows_cols=_ROWS_COLS, alpha=_ALPHA, pattern=_PATTERN, sums=_SUMS)
def z_dense(rows: Members, cols: Members, alpha: np.ndarray) -> np.ndarray:
    """``Z[i, j] = Σ_l α_l <y_i^l, y_j^l>`` for all items of ``rows`` x ``cols``.

    Parameters
    ----------
    {rows_cols}
    {alpha}

    Returns
    -------
    numpy.ndarray
        ``(n_rows, n_cols)`` co-association.
    """
    w = rows.column_weights(alpha)
    right = cols.H.T.toarray()  # (C, n_cols): small next to the n_rows x n_cols result
    right *= w[:, None]
    return np.ascontiguousarray(rows.H @ right, dtype=np.float64)


# --------------------------------------------------------------------------- pattern Z


def symmetric_pattern(n_items: int, pairs: np.ndarray, *, diagonal: bool) -> sp.csr_matrix:
    """Symmetric CSR pattern (data = 1) of the pairs ``(i, j)``, ``(j, i)`` and the diagonal.

    Parameters
    ----------
    n_items
        ``n``.
    pairs
        ``(m, 2)`` item pairs (order and repeats do not matter).
    diagonal
        Include ``(i, i)`` for every item.

    Returns
    -------
    scipy.sparse.csr_matrix
        ``(n, n)`` pattern with sorted indices.
    """
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    rows = [pairs[:, 0], pairs[:, 1]]
    cols = [pairs[:, 1], pairs[:, 0]]
    if diagonal:
        rows.append(np.arange(n_items, dtype=np.int64))
        cols.append(np.arange(n_items, dtype=np.int64))
    r = np.concatenate(rows)
    c = np.concatenate(cols)
    M = sp.csr_matrix((np.ones(r.size), (r, c)), shape=(n_items, n_items))
    M.sum_duplicates()
    M.data[:] = 1.0
    M.sort_indices()
    return M


@numba.njit(cache=True, parallel=True)
def _pattern_values(
    a_ptr, a_idx, a_val, b_ptr, b_idx, b_val, col_w, indptr, indices, out
):  # pragma: no cover - compiled
    n_rows = indptr.size - 1
    for i in numba.prange(n_rows):
        a0 = a_ptr[i]
        a1 = a_ptr[i + 1]
        for e in range(indptr[i], indptr[i + 1]):
            j = indices[e]
            p = a0
            q = b_ptr[j]
            q1 = b_ptr[j + 1]
            s = 0.0
            while p < a1 and q < q1:
                cp = a_idx[p]
                cq = b_idx[q]
                if cp == cq:
                    s += a_val[p] * b_val[q] * col_w[cp]
                    p += 1
                    q += 1
                elif cp < cq:
                    p += 1
                else:
                    q += 1
            out[e] = s


@numba.njit(cache=True)
def _pattern_partition_sums(
    a_ptr, a_idx, a_val, b_ptr, b_idx, b_val, part, indptr, indices, weight, out
):  # pragma: no cover - compiled
    n_rows = indptr.size - 1
    for i in range(n_rows):
        a0 = a_ptr[i]
        a1 = a_ptr[i + 1]
        for e in range(indptr[i], indptr[i + 1]):
            w = weight[e]
            if w == 0.0:
                continue
            j = indices[e]
            p = a0
            q = b_ptr[j]
            q1 = b_ptr[j + 1]
            while p < a1 and q < q1:
                cp = a_idx[p]
                cq = b_idx[q]
                if cp == cq:
                    out[part[cp]] += a_val[p] * b_val[q] * w
                    p += 1
                    q += 1
                elif cp < cq:
                    p += 1
                else:
                    q += 1


def _csr_parts(m: sp.csr_matrix):
    return (
        m.indptr.astype(np.int64),
        m.indices.astype(np.int64),
        np.ascontiguousarray(m.data, dtype=np.float64),
    )


@doc_params(rows_cols=_ROWS_COLS, alpha=_ALPHA, pattern=_PATTERN, sums=_SUMS)
def z_on_pattern(
    rows: Members, cols: Members, alpha: np.ndarray, pattern: sp.csr_matrix
) -> np.ndarray:
    """Values of ``Z`` on every stored entry of ``pattern`` (rows x cols items).

    Parameters
    ----------
    {rows_cols}
    {alpha}
    {pattern}

    Returns
    -------
    numpy.ndarray
        ``(pattern.nnz,)`` values, in the pattern's storage order.
    """
    out = np.zeros(pattern.nnz, dtype=np.float64)
    ptr, idx, _ = _csr_parts(pattern)
    _pattern_values(
        *_csr_parts(rows.H), *_csr_parts(cols.H), rows.column_weights(alpha), ptr, idx, out
    )
    return out


@doc_params(rows_cols=_ROWS_COLS, alpha=_ALPHA, pattern=_PATTERN, sums=_SUMS)
def partition_sums_on_pattern(
    rows: Members, cols: Members, pattern: sp.csr_matrix, weight: np.ndarray
) -> np.ndarray:
    """``(L,)`` sums ``Σ_e weight_e · z^(l)_e`` over the stored entries ``e`` of ``pattern``.

    Parameters
    ----------
    {rows_cols}
    {pattern}
    weight
        ``(pattern.nnz,)`` weight of each stored entry.

    Returns
    -------
    {sums}
    """
    out = np.zeros(rows.n_partitions, dtype=np.float64)
    ptr, idx, _ = _csr_parts(pattern)
    _pattern_partition_sums(
        *_csr_parts(rows.H),
        *_csr_parts(cols.H),
        rows.part,
        ptr,
        idx,
        np.ascontiguousarray(weight, dtype=np.float64),
        out,
    )
    return out


@doc_params(rows_cols=_ROWS_COLS, alpha=_ALPHA, pattern=_PATTERN, sums=_SUMS)
def partition_sums_dense(
    rows: Members, cols: Members, weight: np.ndarray, *, block: int = 1024
) -> np.ndarray:
    """``(L,)`` sums ``Σ_ij weight_ij · z^(l)_ij`` for a dense ``weight`` (rows x cols).

    Parameters
    ----------
    {rows_cols}
    weight
        ``(n_rows, n_cols)`` weights.
    block
        Row items per step (bounds the temporary).

    Returns
    -------
    {sums}
    """
    Hc = cols.H
    per_col = np.zeros(rows.H.shape[1], dtype=np.float64)
    for s in range(0, rows.n_items, block):
        e = min(s + block, rows.n_items)
        # Σ_ij H_ic w_ij H_jc = Σ_i H_ic (w Hc)_ic, blockwise over rows
        T = np.asarray(Hc.T @ weight[s:e].T).T  # (block, C)
        per_col += np.asarray(rows.H[s:e].multiply(T).sum(axis=0)).ravel()
    return np.bincount(rows.part, weights=per_col, minlength=rows.n_partitions)
