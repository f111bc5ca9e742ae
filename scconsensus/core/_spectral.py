"""Spectral view of an ensemble: the normalised item x cluster incidence matrix.

Every partition contributes one column per cluster to the incidence matrix
``H`` (``n_items x Σ k_l``, ``H[i, c] = 1`` when partition ``l`` puts item ``i``
in its cluster ``c``). Its normalised form ``A = D_r^{-1/2} H D_c^{-1/2}`` is the
bipartite graph of Strehl & Ghosh's HBGF (Fern & Brodley 2004): ``A Aᵀ`` is the
co-association with each co-clustering weighted by one over the cluster's size,
and its leading singular vectors embed items so that groups the partitions never
cut become orthogonal directions. Everything here is ``O(n Σ k_l)``: no ``n x n``
matrix is formed.
"""

from __future__ import annotations

import warnings

import numba
import numpy as np
import scipy.sparse as sp
from scipy.linalg.blas import dsymm

from .._docs import doc_params
from .._threads import one_blas_thread
from .._validation import (
    RandomState,
    check_int,
    check_labels,
    check_n_clusters,
    check_rng,
    seed_sequence,
)
from .._warnings import warn
from ._labels import _numbered, columns, compact_labels, present_ids
from ._lapack import eigh_evr
from .coassociation import _one_hot

__all__ = ["incidence_matrix", "incidence_spectrum", "partition_sizes", "spectral_consensus"]


@doc_params()
def partition_sizes(labels: np.ndarray) -> np.ndarray:
    """Number of clusters each partition found (``-1`` entries ignored).

    Parameters
    ----------
    {labels}

    Returns
    -------
    numpy.ndarray
        ``(n_partitions,)`` int64 counts.
    """
    return _partition_sizes(check_labels(labels))


def _partition_sizes(labels: np.ndarray, numbered: bool | None = None) -> np.ndarray:
    """:func:`partition_sizes` of checked labels; ``numbered`` as
    :func:`~scconsensus.core._labels.compact_labels` takes it (``None``: checked here)."""
    if labels.shape[0] == 0:
        return np.zeros(labels.shape[1], dtype=np.int64)
    if _numbered(labels) if numbered is None else numbered:  # ids 0..k-1: k is the top + 1
        return labels.max(axis=0).astype(np.int64) + 1
    # other ids (1-based, another tool's): counted per column, without the renumbered
    # copy of the whole ensemble that compact_labels would make (400 MB at 10^6 x 100)
    sizes = np.empty(labels.shape[1], dtype=np.int64)
    for j, col in enumerate(columns(labels)):
        values = col[col >= 0]
        present = present_ids(values)
        sizes[j] = np.unique(values).size if present is None else np.count_nonzero(present)
    return sizes


def incidence_matrix(labels: np.ndarray) -> sp.csr_matrix:
    """Sparse one-hot incidence ``H`` (items x clusters of all partitions), no empty columns."""
    H = _one_hot(check_labels(labels))[0]
    used = np.flatnonzero(np.asarray(H.sum(axis=0)).ravel() > 0)
    return H[:, used].astype(np.float64).tocsr()


def _normalised(H: sp.csr_matrix) -> sp.csr_matrix:
    d_rows = np.asarray(H.sum(axis=1)).ravel()
    d_cols = np.asarray(H.sum(axis=0)).ravel()
    # an item no partition sampled has an empty row: it stays at the origin
    r = np.divide(1.0, np.sqrt(d_rows), out=np.zeros_like(d_rows), where=d_rows > 0)
    return (sp.diags(r) @ H @ sp.diags(1.0 / np.sqrt(d_cols))).tocsr()


@doc_params()
def incidence_spectrum(
    labels: np.ndarray, n_components: int, *, random_state: RandomState = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Leading eigenvalues and item embedding of the ensemble's normalised co-association.

    Parameters
    ----------
    {labels}
    n_components
        How many leading components to return.
    {random_state}
        Here it seeds the start block of the iterative eigensolver, used only when both
        sides of the incidence matrix exceed a few thousand; the eigenvalues do not depend
        on it beyond the solver's tolerance.

    Returns
    -------
    eigenvalues : numpy.ndarray
        The ``n_components`` largest eigenvalues of ``A Aᵀ`` in decreasing order (in
        ``[0, 1]``; the first is 1).
    embedding : numpy.ndarray
        The ``(n_items, n_components)`` matching left singular vectors of ``A``.

    Examples
    --------
    >>> import numpy as np
    >>> from scconsensus.core import incidence_spectrum
    >>> labels = np.repeat([[0, 0], [1, 1]], 5, axis=0)
    >>> incidence_spectrum(labels, 3)[0].round(3)
    array([1., 1., 0.])
    """
    labels, k = check_labels(labels), check_int(n_components, "n_components", 1)
    with one_blas_thread():
        found = _column_leading(labels, k)
        if found is None:
            return _leading(_normalised(incidence_matrix(labels)), k, random_state)
        return _padded(*found, k)


#: The exact route diagonalises the Gram matrix of the smaller side of ``A`` while that
#: side has at most this many rows: the Σ k_l columns of an ensemble rarely exceed a few
#: thousand, where LAPACK's ``syevr`` takes well under a second.
EXACT_MAX_SIDE = 6_000
#: Residual ``||A Aᵀ u - λ u||`` below which the iterative route accepts an eigenpair;
#: it bounds the error of ``λ`` (Kahan's theorem for Rayleigh–Ritz pairs).
RESIDUAL_TOL = 1e-7
#: Subspace iterations the iterative route runs at most before it says it did not converge.
MAX_SUBSPACE_ITER = 2_000
#: Fewest items for which :func:`nested_spectra` and :func:`incidence_spectrum` form their
#: Gram matrices in compiled code.
NESTED_MIN_ITEMS = 2_000


def _leading(A: sp.csr_matrix, k: int, random_state: RandomState):
    """``incidence_spectrum`` on the normalised incidence matrix ``A``.

    Clear groups give eigenvalues clustered at 1, the case where Lanczos codes (ARPACK)
    miss some and depend on their start vector; the evidence for ``K`` is built from
    exactly these. So: the exact Gram of the smaller side where it fits, else block
    subspace iteration with a block wider than ``k`` and a residual check.
    """
    if min(A.shape) <= EXACT_MAX_SIDE:
        w, U = _exact_leading(A, k)
    else:
        w, U = _subspace_leading(A, k, check_rng(random_state))
    return _padded(w, U, k)


def _padded(w: np.ndarray, U: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The first ``k`` pairs, eigenvalues clipped to ``[0, 1]``, zeros where fewer."""
    out_w, out_U = np.zeros(k), np.zeros((U.shape[0], k))
    m = min(k, w.size)
    out_w[:m], out_U[:, :m] = np.clip(w[:m], 0.0, 1.0), U[:, :m]
    return out_w, out_U


def _column_leading(labels: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray] | None:
    """:func:`_exact_leading` on the column side with the Gram matrix from the compiled
    pass of :func:`nested_spectra`, by :func:`_subspace_top` where it converges, else
    LAPACK; ``None`` where that does not apply (fewer than :data:`NESTED_MIN_ITEMS`
    items, or more clusters than items or than :data:`EXACT_MAX_SIDE`).

    PCC's spectral start on 20,000 items: SciPy's sparse ``AᵀA`` and building ``A``
    took 0.9 of its 1.3-1.5 s.
    """
    if labels.shape[0] < NESTED_MIN_ITEMS:
        return None
    codes, _, scale = _column_codes(labels, np.arange(labels.shape[1]))
    m = scale.size
    if m == 0 or m > min(labels.shape[0], EXACT_MAX_SIDE):
        return None
    G = np.zeros((m, m), order="F")
    _column_gram(codes, codes.shape[1], scale, G)
    w, V, _ = _top_pairs(G, min(k, m))
    V = V * scale[:, None]
    # A V: each item's row is its clusters' rows of V (over sqrt(cluster size)), over
    # sqrt(its number of partitions), as _normalised scales A
    AV, sampled = np.zeros((labels.shape[0], w.size)), codes >= 0
    for col, ok in zip(codes.T, sampled.T, strict=True):
        AV[ok] += V[col[ok]]
    d = sampled.sum(axis=1)
    AV *= np.divide(1.0, np.sqrt(d), out=np.zeros(d.size), where=d > 0)[:, None]
    return w, _left_vectors(AV, w)


def _left_vectors(AV: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``A V / sqrt(w)``: the left singular vectors of ``A`` for the eigenpairs ``(w, V)``
    of ``AᵀA`` (a column stays ``A v`` where ``w`` is 0)."""
    s = np.sqrt(np.clip(w, 0.0, None))
    return AV / np.where(s > 1e-12, s, 1.0)


def _exact_leading(A: sp.csr_matrix, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Leading ``k`` eigenpairs of ``A Aᵀ`` from LAPACK on the smaller Gram matrix."""
    columns = A.shape[1] <= A.shape[0]
    G = (A.T @ A if columns else A @ A.T).toarray()
    m = G.shape[0]
    k = min(k, m)
    # up to a 6,000-side Gram: seconds, so in a form Ctrl-C interrupts
    w, V = eigh_evr(G, subset_by_index=(m - k, m - 1))
    w, V = w[::-1], V[:, ::-1]
    if not columns:
        return w, V
    return w, _left_vectors(A @ V, w)


def _subspace_leading(A: sp.csr_matrix, k: int, rng: np.random.Generator):
    """Leading ``k`` eigenpairs of ``A Aᵀ`` by block subspace iteration with Rayleigh–Ritz.

    A block of ``2k + 10`` vectors holds any cluster of up to that many eigenvalues, so
    none is missed; iteration stops when every wanted Ritz pair's residual is below
    :data:`RESIDUAL_TOL` (checked every few steps).
    """
    b = min(2 * k + 10, min(A.shape))
    Q, _ = np.linalg.qr(A @ rng.standard_normal((A.shape[1], b)))
    for it in range(MAX_SUBSPACE_ITER):
        Z = A.T @ Q
        if it % 5 == 0:
            W, s, _ = np.linalg.svd(Z.T, full_matrices=False)
            w, U = s**2, Q @ W
            R = A @ (A.T @ U[:, :k]) - U[:, :k] * w[:k]
            if np.linalg.norm(R, axis=0).max() <= RESIDUAL_TOL:
                return w[:k], U[:, :k]
        Q, _ = np.linalg.qr(A @ Z)
    warn(
        f"incidence_spectrum: the leading {k} eigenvalues did not converge to "
        f"{RESIDUAL_TOL:g} in {MAX_SUBSPACE_ITER} subspace iterations; the choice of K "
        "and the spectral start may be inexact.",
        RuntimeWarning,
    )
    return w[:k], U[:, :k]


def nested_spectra(
    labels: np.ndarray, order: np.ndarray, requests: list[tuple[int, int]]
) -> list[np.ndarray] | None:
    """Leading eigenvalues of ``A Aᵀ`` over nested sets of partitions, from one pass each.

    For each ``(count, k)`` of ``requests``: the ``k`` largest eigenvalues (decreasing,
    zero-padded) of the normalised incidence of the partitions ``order[:count]``, as
    :func:`incidence_spectrum` gives them. ``None`` when the item side of the
    incidence is the smaller one (or too large for the exact route): the caller then
    asks :func:`incidence_spectrum` for each set. Also ``None`` below
    :data:`NESTED_MIN_ITEMS` items, where the sparse products cost less than compiling
    the pass (0.9 s, once).

    :func:`~scconsensus.core.select_k` needs some 30 such spectra; forming each Gram
    matrix with sparse products took as long as its eigendecomposition at 5,000
    items (2.4 of 7.8 s). Here one compiled pass over the items adds each item's
    ``1 / d_i`` to the pairs of its clusters, straight into the Fortran-ordered
    buffer LAPACK overwrites. The eigendecompositions then took 4.4 of select_k's 5.4 s
    at 10⁵ items; the largest sets, which ask for the fewest eigenvalues, now go to
    block subspace iteration first (:func:`_subspace_top`: 2.2 s in all, values
    within 1e-7, measured 1e-14, of LAPACK's).
    """
    labels = check_labels(labels)
    if labels.shape[0] < NESTED_MIN_ITEMS:
        return None
    codes, ends, scale = _column_codes(labels, np.asarray(order))
    if scale.size > min(labels.shape[0], EXACT_MAX_SIDE):
        return None
    out = [np.zeros(k) for _, k in requests]
    iterate = True
    # the largest sets first: they have the largest Gram matrices and ask for the fewest
    # eigenvalues, where subspace iteration beats LAPACK's reduction 2-5x
    for i in sorted(range(len(requests)), key=lambda i: -requests[i][0]):
        count, k = requests[i]
        m = int(ends[count - 1]) if count > 0 else 0
        if m == 0:
            continue
        G = np.zeros((m, m), order="F")
        _column_gram(codes, count, scale, G)
        top = min(k, m)
        # BLAS and LAPACK round differently on another number of threads (other bits on
        # 2 than on 1): one thread, as incidence_spectrum
        with one_blas_thread():
            # sets further down hold fewer partitions, so less clear-cut evidence and
            # more eigenvalues asked: once iteration is slower than LAPACK, so it stays
            vals, _, iterate = _top_pairs(G, top, iterate)
        out[i][:top] = np.clip(vals, 0.0, 1.0)
    return out


#: Fewest start vectors of :func:`_subspace_top`: a wider block converges in fewer
#: steps when many eigenvalues crowd near 1 (clear groups), for the same cost per step.
SUBSPACE_MIN_BLOCK = 32
#: Steps :func:`_subspace_top` takes at most, per ``m / block``: about half the time
#: of LAPACK's tridiagonal reduction of the same matrix, so a failed try costs at most
#: that.
SUBSPACE_BUDGET = 0.5


def _top_pairs(G: np.ndarray, k: int, iterate: bool = True) -> tuple[np.ndarray, np.ndarray, bool]:
    """The ``k`` leading eigenpairs of ``G`` (its lower triangle), decreasing: by
    :func:`_subspace_top` when ``iterate`` and it converges, else by LAPACK (which
    overwrites ``G``); and whether the iteration gave them."""
    found = _subspace_top(G, k) if iterate else None
    if found is not None:
        return found[0], found[1], True
    m = G.shape[0]
    w, V = eigh_evr(G, subset_by_index=(m - k, m - 1), overwrite_a=True)
    return w[::-1], V[:, ::-1], False


def _subspace_top(G: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray] | None:
    """The ``k`` largest eigenvalues of ``G`` (its lower triangle), decreasing, and their
    eigenvectors; ``None`` when block subspace iteration does not reach them within
    :data:`SUBSPACE_BUDGET`, or when ``G`` is too small for it to pay (``4 b > m``).

    Each returned value is a Ritz value whose residual is below :data:`RESIDUAL_TOL`,
    so it lies within that of an eigenvalue of ``G`` (within its square over the gap, in
    practice ~1e-14). That it is the ``j``-th largest, not another one, comes from the
    start: Ritz values never exceed the eigenvalues they stand for, and a random block of
    ``b = max(2k + 10, 32)`` vectors has a part along every leading eigenvector, so none
    of them, in a cluster or not, is missed. The start's fixed seed makes the result the
    same in every process.
    """
    m = G.shape[0]
    b = max(2 * k + 10, SUBSPACE_MIN_BLOCK)
    if 4 * b > m:  # LAPACK costs little here
        return None
    Q = np.linalg.qr(np.random.default_rng(0).standard_normal((m, b)))[0]
    for _ in range(int(SUBSPACE_BUDGET * m / b)):
        Z = dsymm(1.0, G, Q, lower=1)
        theta, W = np.linalg.eigh(Q.T @ Z)
        theta, U = theta[::-1][:k], W[:, ::-1][:, :k]
        V = Q @ U
        if np.linalg.norm(Z @ U - V * theta, axis=0).max() <= RESIDUAL_TOL:
            return theta, V
        Q = np.linalg.qr(Z)[0]
    return None


def _column_codes(labels: np.ndarray, order: np.ndarray) -> tuple[np.ndarray, ...]:
    """Each item's column in the partitions ``order`` (clusters numbered partition after
    partition, ``-1`` unsampled), where each partition's columns end, and ``1 /
    sqrt(cluster size)`` of every column."""
    sub = compact_labels(labels[:, order])
    k = (sub.max(axis=0, initial=-1) + 1).astype(np.int64)
    ends = np.cumsum(k)
    codes = np.ascontiguousarray(np.where(sub >= 0, sub + (ends - k), -1), dtype=np.int64)
    size = np.bincount(codes[codes >= 0], minlength=int(ends[-1]) if ends.size else 0)
    return codes, ends, 1.0 / np.sqrt(np.maximum(size, 1))


@numba.njit(cache=True)
def _column_gram(codes, count, scale, G):  # pragma: no cover - compiled
    """Lower triangle of ``Aᵀ A`` over the first ``count`` partitions, into ``G``."""
    cols = np.empty(count, dtype=np.int64)
    for i in range(codes.shape[0]):
        d = 0
        for p in range(count):
            if codes[i, p] >= 0:
                cols[d] = codes[i, p]
                d += 1
        if d == 0:
            continue
        w = 1.0 / d
        for a in range(d):  # columns increase with the partition: a >= b is the lower side
            for b in range(a + 1):
                G[cols[a], cols[b]] += w
    m = G.shape[0]
    for b in range(m):
        for a in range(b, m):
            G[a, b] *= scale[a] * scale[b]


@doc_params()
def spectral_consensus(
    labels: np.ndarray, n_clusters: int, *, random_state: RandomState = 0
) -> np.ndarray:
    """Hard consensus of an ensemble by spectral clustering of its incidence matrix.

    The items' rows of the ``n_clusters`` leading singular vectors of the
    normalised incidence matrix, scaled to unit length (Ng, Jordan & Weiss 2001),
    are clustered by k-means. ``O(n Σ k_l)`` time and memory.

    Parameters
    ----------
    {labels}
    n_clusters
        Number of consensus clusters ``K``.
    {random_state}
        Here it seeds the eigensolver and k-means.

    Returns
    -------
    numpy.ndarray
        ``(n_items,)`` int32 labels ``0..n_clusters-1``, largest cluster first.

    Examples
    --------
    >>> import numpy as np
    >>> from scconsensus.core import spectral_consensus
    >>> labels = np.array([[0, 1, 0]] * 4 + [[1, 0, 2]] * 4)
    >>> spectral_consensus(labels, 2).tolist()
    [0, 0, 0, 0, 1, 1, 1, 1]
    """
    from sklearn.cluster import KMeans

    labels = check_labels(labels)
    K = check_n_clusters(n_clusters, labels.shape[0])
    seeds = seed_sequence(random_state).spawn(2)
    _, U = incidence_spectrum(labels, K, random_state=np.random.default_rng(seeds[0]))
    E = U / np.maximum(np.linalg.norm(U, axis=1, keepdims=True), 1e-12)
    seed = int(np.random.default_rng(seeds[1]).integers(2**31 - 1))
    with warnings.catch_warnings():
        # fewer distinct rows than K (K near n): the start has fewer clusters, which the
        # fit then reports as clusters without mass; scikit-learn's words would only confuse
        warnings.filterwarnings("ignore", message="Number of distinct clusters")
        raw = KMeans(n_clusters=K, n_init=10, random_state=seed).fit_predict(E)
    sizes = np.bincount(raw, minlength=K)
    rank = np.empty(K, dtype=np.int64)
    rank[np.argsort(-sizes, kind="stable")] = np.arange(K)
    return rank[raw].astype(np.int32)
