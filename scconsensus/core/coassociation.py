"""Co-association counts of an ensemble: how often two items are clustered together.

For an ensemble of ``R`` partitions given as an ``(n, R)`` label matrix (``-1`` marks an
item a partition did not sample) the co-association is the pair of counts

- ``C[i, j]``: partitions that put ``i`` and ``j`` in the same cluster,
- ``N[i, j]``: partitions that sampled both ``i`` and ``j``,

so ``c_ij / N_ij`` estimates the probability that ``i`` and ``j`` belong together.
Dense counts are ``C = H Hᵀ`` and ``N = S Sᵀ`` with ``H`` the one-hot labels and ``S`` the
sampling indicators, computed with BLAS in row blocks. For large ``n`` only a set of pairs is
counted (numba kernel, O(pairs × R)).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._memory_guard import COASSOCIATION_BLOCK_ROWS, check_dense_route
from .._threads import interruptible
from .._validation import RandomState, check_labels, check_rng
from ._distributed import count_pairs_distributed
from ._labels import compact_labels
from ._pairs import check_pairs, count_pairs

__all__ = ["coassociation", "pairs_from_sparse", "sample_pairs"]

# Rows per BLAS block: at most _BLOCK (bounds the float32 temporary to _BLOCK x n), and
# at most _BLOCK_MACS multiply-adds per block: one BLAS call holds the interpreter, and
# Ctrl-C waits for it (a 2,048-row block of 8,000 items and 400 clusters held it 1.2 s
# on a loaded machine; 330-row blocks take 0.07 s each on one thread, and the whole
# product no longer than 2,048-row blocks: 1.7 s against 1.8 s).
_BLOCK = COASSOCIATION_BLOCK_ROWS
_BLOCK_MACS = 2**30


def _one_hot(labels: np.ndarray) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    """Sparse one-hot ``H`` (n x Σk_l) and sampling indicator ``S`` (n x R)."""
    labels = compact_labels(labels)
    n, n_partitions = labels.shape
    sampled = labels >= 0
    offsets = np.zeros(n_partitions + 1, dtype=np.int64)
    offsets[1:] = np.cumsum(labels.max(axis=0).clip(min=-1) + 1)
    rows, cols = np.nonzero(sampled)
    h = sp.csr_matrix(
        (np.ones(rows.size, dtype=np.float32), (rows, offsets[cols] + labels[rows, cols])),
        shape=(n, int(offsets[-1])),
    )
    s = sp.csr_matrix(sampled.astype(np.float32))
    return h, s


def _dense_gram(a: sp.csr_matrix) -> np.ndarray:
    """``a @ a.T`` as an exact int32 array, computed blockwise in float32."""
    n = a.shape[0]
    dense = a.toarray()
    out = np.empty((n, n), dtype=np.int32)
    block = int(np.clip(_BLOCK_MACS // max(n * a.shape[1], 1), 32, _BLOCK))
    for start in range(0, n, block):
        stop = min(start + block, n)
        # counts are integers <= R < 2**24, exact in float32
        np.rint(dense[start:stop] @ dense.T, out=out[start:stop], casting="unsafe")
    return out


def coassociation(
    labels: np.ndarray,
    mode: str = "dense",
    *,
    pairs: np.ndarray | None = None,
    client=None,
) -> tuple[np.ndarray, np.ndarray] | tuple[sp.csr_matrix, sp.csr_matrix]:
    """Count co-clustering ``C`` and co-sampling ``N`` over an ensemble.

    Parameters
    ----------
    labels
        ``(n_items, n_partitions)`` integer labels, ``-1`` where a partition did
        not sample the item.
    mode
        ``"dense"``: full ``n x n`` int32 arrays, diagonal included
        (``C[i, i] = N[i, i]`` = partitions sampling ``i``).
        ``"sparse"``: only the given ``pairs``; symmetric CSR matrices with the
        same sparsity pattern (explicit zeros kept in ``C``), holding the pairs
        with ``N > 0`` and no diagonal.
    pairs
        ``(m, 2)`` item index pairs for ``mode="sparse"`` (order and duplicates do
        not matter); see :func:`sample_pairs`. Required for sparse mode.
    client
        A :class:`dask.distributed.Client`: count the sparse mode's pairs in
        chunks on its cluster (same counts as the local kernel).

    Returns
    -------
    ``(C, N)``.

    Examples
    --------
    >>> import numpy as np
    >>> from scconsensus.core.coassociation import coassociation
    >>> labels = np.array([[0, 1], [0, -1], [1, 1]])
    >>> C, N = coassociation(labels)
    >>> C.tolist(), N.tolist()
    ([[2, 1, 1], [1, 1, 0], [1, 0, 2]], [[2, 1, 2], [1, 1, 1], [2, 1, 2]])
    """
    labels = check_labels(labels)
    n = labels.shape[0]
    if mode == "dense":
        # C, N and the product block (dense_route_bytes), before any set-up work
        check_dense_route("coassociation", n, what="Dense co-association")
        h, s = _one_hot(labels)
        return _dense_gram(h), _dense_gram(s)
    if mode == "sparse":
        if pairs is None:
            raise ValueError(
                "mode='sparse' needs pairs: pass pairs=sample_pairs(n_items, X) "
                "(kNN plus random pairs) or an explicit (m, 2) array."
            )
        rows, cols = check_pairs(pairs, n)
        if client is not None:
            c, m = count_pairs_distributed(client, labels, rows, cols)
        else:
            c = np.empty(rows.size, dtype=np.int32)
            m = np.empty(rows.size, dtype=np.int32)
            count_pairs(labels, rows, cols, c, m)
        keep = m > 0
        rows, cols, c, m = rows[keep], cols[keep], c[keep], m[keep]
        r = np.concatenate([rows, cols])
        q = np.concatenate([cols, rows])
        # one shared (sorted, duplicate-free) pattern for both matrices
        n_mat = sp.csr_matrix((np.concatenate([m, m]).astype(np.float64), (r, q)), shape=(n, n))
        c_mat = sp.csr_matrix((np.concatenate([c, c]).astype(np.float64), (r, q)), shape=(n, n))
        n_mat.sort_indices()
        c_mat.sort_indices()
        if c_mat.nnz != n_mat.nnz:  # scipy dropped nothing, but keep the invariant explicit
            c_mat = _on_pattern(c_mat, n_mat)
        return c_mat, n_mat
    raise ValueError(f"mode={mode!r} is not supported; choose 'dense' or 'sparse'.")


def _on_pattern(values: sp.csr_matrix, pattern: sp.csr_matrix) -> sp.csr_matrix:
    """``values`` read on the sparsity pattern of ``pattern`` (zeros kept explicitly)."""
    rows = np.repeat(np.arange(pattern.shape[0]), np.diff(pattern.indptr))
    data = np.asarray(values[rows, pattern.indices]).ravel() if rows.size else np.zeros(0)
    return sp.csr_matrix((data, pattern.indices.copy(), pattern.indptr.copy()), shape=pattern.shape)


def pairs_from_sparse(
    C: sp.spmatrix, N: sp.spmatrix
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Upper-triangle pairs ``(rows, cols, c, N)`` of sparse co-association matrices.

    ``c`` is read on the pattern of ``N``, so pairs co-sampled but never co-clustered
    keep ``c = 0`` even if ``C`` lost its explicit zeros.

    Parameters
    ----------
    C
        ``(n, n)`` sparse co-clustering counts.
    N
        ``(n, n)`` sparse co-sampling counts; its pattern defines the pairs.

    Returns
    -------
    ``rows``, ``cols`` (int64, ``rows < cols``) and the counts ``c``, ``N`` (float64)
    of every pair sampled together at least once.
    """
    N = sp.csr_matrix(N)
    C = sp.csr_matrix(C)
    if C.shape != N.shape:
        raise ValueError(f"C and N shapes differ: {C.shape} vs {N.shape}.")
    N.sort_indices()
    C.sort_indices()
    if not (np.array_equal(C.indptr, N.indptr) and np.array_equal(C.indices, N.indices)):
        C = _on_pattern(C, N)
    rows = np.repeat(np.arange(N.shape[0], dtype=np.int64), np.diff(N.indptr))
    cols = N.indices.astype(np.int64)
    keep = (cols > rows) & (N.data > 0)
    return rows[keep], cols[keep], C.data[keep].astype(np.float64), N.data[keep].astype(np.float64)


def sample_pairs(
    n_items: int,
    X: np.ndarray | None = None,
    *,
    n_neighbors: int = 10,
    n_random: int = 30,
    random_state: RandomState = 0,
) -> np.ndarray:
    """Pairs of items on which to count co-association for large data.

    The kNN pairs of ``X`` carry the within-cluster evidence; random pairs per
    item carry the between-cluster evidence that kNN alone misses (Lourenço et al. 2015, Sect. 5.4
    samples pairs uniformly).

    Parameters
    ----------
    n_items
        Number of items.
    X
        ``(n_items, p)`` representation for kNN pairs, dense or sparse; omitted → random
        pairs only.
    n_neighbors
        Nearest neighbours per item (exact for up to 50,000 items, pynndescent above).
    n_random
        Random partners per item.
    random_state
        Seed for the random partners and the approximate kNN search.

    Returns
    -------
    ``(m, 2)`` int64 unique pairs with ``i < j``.

    Examples
    --------
    >>> from scconsensus.core.coassociation import sample_pairs
    >>> sample_pairs(100, n_random=5).shape[1]
    2
    """
    n_items = int(n_items)
    if n_items < 2:
        raise ValueError(f"sample_pairs needs at least 2 items, got {n_items}.")
    rng = check_rng(random_state)
    parts = []
    if X is not None:
        # both kNN searches take CSR rows; np.asarray would wrap them in a 0-d object array
        X = X if sp.issparse(X) else np.asarray(X)
        if X.shape[0] != n_items:
            raise ValueError(f"X has {X.shape[0]} rows but n_items={n_items}.")
        k = min(int(n_neighbors), n_items - 1)
        if k > 0:
            nn = knn_indices(X, k, random_state=int(rng.integers(2**31)))
            parts.append(np.column_stack([np.repeat(np.arange(n_items), k), nn.ravel()]))
    if n_random > 0:
        first = np.repeat(np.arange(n_items, dtype=np.int64), n_random)
        # a partner drawn from the other n-1 items, never the item itself
        second = rng.integers(0, n_items - 1, size=first.size)
        second += second >= first
        parts.append(np.column_stack([first, second]))
    if not parts:
        raise ValueError("sample_pairs: give X with n_neighbors > 0 or n_random > 0.")
    rows, cols = check_pairs(np.concatenate(parts).astype(np.int64), n_items)
    return np.column_stack([rows, cols])


def knn_indices(X: np.ndarray | sp.csr_matrix, k: int, *, random_state: int = 0) -> np.ndarray:
    """``(n, k)`` indices of each item's ``k`` nearest neighbours (itself excluded) in ``X``,
    dense or CSR."""
    n = X.shape[0]
    if n <= 50_000:
        from sklearn.neighbors import NearestNeighbors

        nn = NearestNeighbors(n_neighbors=k + 1).fit(X)
        # seconds in one call at tens of thousands of items: in a worker, so Ctrl-C is
        # not held
        idx = interruptible(nn.kneighbors, X, return_distance=False)
    else:
        from pynndescent import NNDescent

        index = NNDescent(X, n_neighbors=k + 1, random_state=random_state, n_jobs=1)
        idx = index.neighbor_graph[0]
    self_first = idx[:, 0] == np.arange(n)
    if self_first.all():
        return idx[:, 1:].astype(np.int64)
    # duplicated points can displace an item from its own first neighbour slot
    out = idx[:, 1:].astype(np.int64)
    for i in np.flatnonzero(~self_first):
        row = idx[i][idx[i] != i]
        out[i] = row[:k]
    return out
