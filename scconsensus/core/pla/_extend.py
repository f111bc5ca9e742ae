"""Out-of-sample extension of a PLA fit (Lange & Buhmann 2005, Sect. 3.3, eqs. 22–26).

For a new item ``x`` the co-association with a fitted item ``i`` is
``z_ix = Σ_l α_l <y_i^l, φ_l(x)>`` (eq. 23), where ``φ_l(x)`` is ``x``'s membership in
partition ``l`` — known when ``x`` was in the ensemble but left out of the fit, or
predicted by the partition's classifier for a cell never seen (nearest neighbour for
single linkage, as in the paper). Then ``p(i|x) = z_ix / Σ_b z_bx`` (eq. 24) and, with
``p(x|v) ≈ Σ_i p(i|v) p(x|i)`` (eq. 25) and Bayes (eq. 26),

    p(v|x) = Σ_i p(i|x) p(v|i),

using ``p(v) p(i|v) = p(i) p(v|i)`` on the fitted items (Bayes for the fitted joint;
the paper's likelihood form ``p(v) Σ_i p(i|v) p(x|i)`` with the EM factor ``p(j|v)``
differed from it by 4e-5 to 1.2e-3 in mean posterior, max 5e-3, on noisy
test ensembles with 5-25 % flipped labels). This form needs
only the posteriors, so a stored consensus is enough to transfer to new cells.

Because ``z_ix`` is a sum of inner products this never needs the ``(n-r) x r`` block:
``Σ_i z_ix p(v|i) = Σ_l α_l φ_l(x)ᵀ (Y_lᵀ P)`` with the ``k_l x K`` summaries
``Y_lᵀ P`` of the fitted items, so extending ``m`` items costs O(m·L·K) for hard
ensembles (O(k r (n-r)) in the paper's dense form).

Eq. 26 weighs every co-clustered fitted item alike, so a large cluster that a
partition merges with a small one outvotes it: fitted on 20,000 of 100,000 cells, 80 %
of a population of 0.5 % went to its larger neighbours at one seed, 24 % at another. The
default (``"fold_in"``) starts there and folds the item into the fitted model instead
(as for PLSA, Hofmann 1999): with the fitted clusters' label distributions
``p_l(j|v) ∝ Σ_i y_ij^l p(v|i)`` held fixed (each with one item's worth of the
partition's own label distribution, so that a cluster with almost no fitted mass does
not claim items), EM maximises the item's own weighted log-likelihood
``Σ_l α_l Σ_j φ_lj(x) log Σ_v p(v|x) p_l(j|v)``, which is concave in ``p(v|x)``. Each
partition then counts by how typical the item's label is of each cluster, not by how
many items share it (``benchmarks/pcc_fit_size.py --method pla``). It costs O(L·K) per
item and EM step, and stops when no cluster can raise the item's mean log-likelihood by
more than 1e-6.
"""

from __future__ import annotations

import numba
import numpy as np
import scipy.sparse as sp

from ..._threads import interruptible
from ..._validation import check_choice, check_labels, check_matrix
from ..._warnings import warn
from .._labels import compact_labels
from ._members import Members, as_members, hard_labels

__all__ = ["EXTENSIONS", "pla_extend", "predict_ensemble_labels"]

#: The extensions :func:`pla_extend` offers: the item folded into the fitted model
#: (default), or the paper's eq. 26 alone.
EXTENSIONS = ("fold_in", "paper")
_FOLD_IN_MAX_ITER = 1000
#: Stop when no cluster can raise the item's mean log-likelihood per unit weight by more
#: (the gap to the optimum is at most ``log max_v g_v / Σ weight`` by Jensen, at most
#: that ratio minus 1, which is what is tested).
_FOLD_IN_GAP = 1e-6
#: The fold-in's start keeps this share uniform, so that EM can still move mass to a
#: cluster that eq. 26 gives none.
_FOLD_IN_START_UNIFORM = 1e-3
#: Items per call of the fold-in kernel: Ctrl-C, which reaches Python between calls
#: only, waits for one (about 0.3 s for 20,000 items of overlapping planted data, one
#: thread).
_FOLD_IN_CHUNK = 20_000
#: Items' worth of the partition's own label distribution in each cluster's (a prior):
#: a cluster holding almost no fitted mass cannot claim items by a peaked distribution.
_PSEUDOCOUNT = 1.0


def _extend(
    posteriors: np.ndarray,
    fitted: Members,
    new: Members,
    alpha: np.ndarray,
    method: str = "fold_in",
) -> tuple[np.ndarray, np.ndarray]:
    """Extended posteriors and a mask of items without any co-association (left uniform)."""
    w = fitted.column_weights(alpha)
    counts = np.asarray(fitted.H.T @ posteriors)  # (C, K): Y_lᵀ P
    mass = np.asarray(fitted.H.sum(axis=0)).ravel()  # (C,): Y_lᵀ 1
    num = np.asarray(new.H @ (counts * w[:, None]))
    den = np.asarray(new.H @ (mass * w)).ravel()
    empty = den <= 0
    K = posteriors.shape[1]
    out = np.full((new.n_items, K), 1.0 / K)
    ok = ~empty
    out[ok] = num[ok] / den[ok, None]
    out[ok] /= out[ok].sum(axis=1, keepdims=True)
    if method == "fold_in":
        H = new.H
        likelihoods = _label_likelihoods(counts, mass, fitted.part, fitted.n_partitions)
        out = (1.0 - _FOLD_IN_START_UNIFORM) * out + _FOLD_IN_START_UNIFORM / K
        for lo in range(0, new.n_items, _FOLD_IN_CHUNK):
            rows = slice(lo, lo + _FOLD_IN_CHUNK)
            indptr = H.indptr[lo : lo + _FOLD_IN_CHUNK + 1]
            _fold_in(indptr, H.indices, H.data, w, likelihoods, out[rows], ok[rows])
    return out, empty


def _label_likelihoods(
    counts: np.ndarray, mass: np.ndarray, part: np.ndarray, n_partitions: int
) -> np.ndarray:
    """``(C, K)`` ``p_l(j|v)``: each partition's label distribution in each cluster.

    ``counts`` are the fitted items' posterior mass per label and cluster, ``mass`` per
    label; each cluster's distribution gets :data:`_PSEUDOCOUNT` items of the
    partition's own, so a cluster without fitted items in a partition learns that.
    """
    totals = np.zeros((n_partitions, counts.shape[1]))
    np.add.at(totals, part, counts)
    sizes = np.bincount(part, weights=mass, minlength=n_partitions)[part]
    width = np.bincount(part, minlength=n_partitions)[part]
    own = np.where(sizes > 0, mass / np.where(sizes > 0, sizes, 1.0), 1.0 / width)
    return (counts + _PSEUDOCOUNT * own[:, None]) / (totals[part] + _PSEUDOCOUNT)


@numba.njit(cache=True, nogil=True, parallel=True)
def _fold_in(indptr, indices, data, colw, likelihoods, p, ok):  # pragma: no cover
    """EM on the rows of ``p`` (in place); ``indptr`` has one entry more than they."""
    K = likelihoods.shape[1]
    for i in numba.prange(p.shape[0]):
        if ok[i]:
            _fold_in_item(indices[indptr[i] : indptr[i + 1]], data[indptr[i] : indptr[i + 1]],
                          colw, likelihoods, p[i], np.empty(K))  # fmt: skip


@numba.njit(cache=True, nogil=True)
def _fold_in_item(cols, vals, colw, likelihoods, p, g):  # pragma: no cover
    """EM on one item's ``p(v|x)`` (in place); each row alone, so any thread count agrees.

    ``g_v`` is the mean of ``p_l(j|v) / p(j|x)`` over the item's labels: EM multiplies
    ``p(v|x)`` by it, and the optimum has ``g_v <= 1`` everywhere.
    """
    K = p.size
    for _ in range(_FOLD_IN_MAX_ITER):
        g[:] = 0.0
        total = 0.0
        for t in range(cols.size):
            weight = vals[t] * colw[cols[t]]
            s = 0.0
            for v in range(K):
                s += p[v] * likelihoods[cols[t], v]
            if weight <= 0.0 or s <= 0.0:
                continue  # a label no fitted item carries says nothing
            for v in range(K):
                g[v] += weight * likelihoods[cols[t], v] / s
            total += weight
        if total <= 0.0:
            return
        if g.max() / total - 1.0 < _FOLD_IN_GAP:
            return
        for v in range(K):
            p[v] *= g[v] / total


def pla_extend(
    posteriors: np.ndarray,
    ensemble_fit,
    ensemble_new,
    weights: np.ndarray | None = None,
    *,
    method: str = "fold_in",
) -> np.ndarray:
    """Posteriors ``p(v|x)`` of new items from a fitted PLA (Lange & Buhmann 2005, Sect. 3.3).

    Parameters
    ----------
    posteriors
        ``(r, K)`` fitted ``p(v|i)`` of the items the model was fitted on.
    ensemble_fit
        The ensemble restricted to those ``r`` items: ``(r, L)`` labels (``-1`` =
        unsampled) or a list of ``L`` soft ``(r, k_l)`` memberships.
    ensemble_new
        The same ``L`` partitions on the new items, in the same format: their
        labels in the ensemble, or labels predicted by each partition's classifier
        (see :func:`predict_ensemble_labels`).
    weights
        ``(L,)`` partition weights ``α`` of a weighted fit; uniform when omitted.
    method
        ``"fold_in"``: the posteriors that maximise each new item's likelihood of its
        labels under the fitted clusters' label distributions, started from eq. 26;
        ``"paper"``: eq. 26 alone, the mean posterior of the co-clustered fitted items
        (it favours large clusters; see the module notes).

    Returns
    -------
    ``(m, K)`` posteriors, rows summing to 1. Items that share no cluster with
    any fitted item get uniform rows (with a warning).

    Examples
    --------
    >>> import numpy as np
    >>> from scconsensus.core.pla import pla_extend
    >>> fit_labels = np.array([[0, 1], [0, 1], [1, 0], [1, 0]])
    >>> post = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])
    >>> pla_extend(post, fit_labels, np.array([[1, 0]])).round(2).tolist()
    [[0.0, 1.0]]
    """
    check_choice(method, EXTENSIONS, "method")
    fitted, new = _members_pair(ensemble_fit, ensemble_new)
    posteriors = check_matrix(posteriors, "posteriors", min_items=1)
    if posteriors.shape[0] != fitted.n_items:
        raise ValueError(
            f"posteriors has {posteriors.shape[0]} rows but ensemble_fit has "
            f"{fitted.n_items} items; pass the ensemble of the fitted items only."
        )
    if new.n_partitions != fitted.n_partitions:
        raise ValueError(
            f"ensemble_new has {new.n_partitions} partitions but ensemble_fit has "
            f"{fitted.n_partitions}; both must hold the same partitions."
        )
    fitted, new = align_members(fitted, new)
    alpha = _check_weights(weights, fitted.n_partitions)
    out, empty = _extend(np.asarray(posteriors), fitted, new, alpha, method)
    if empty.any():
        warn(
            f"{int(empty.sum())} new item(s) share no cluster with any fitted item "
            "(never sampled, labelled with ids no fitted item has in those partitions, or "
            "weights zero on them); they get uniform posteriors. Labels given for new items "
            "must come from the same partitions as the reference's.",
            RuntimeWarning,
        )
    return out


def _members_pair(ensemble_fit, ensemble_new) -> tuple[Members, Members]:
    """Both ensembles as :class:`Members`; hard labels renumbered with one map for both.

    Label ``c`` of a partition must stay one column on both sides, and ids such as
    ``10**8`` must not size the columns: the two label matrices are compacted stacked.
    """
    fit = hard_labels(ensemble_fit, 1, "ensemble_fit")
    new = hard_labels(ensemble_new, 1, "ensemble_new")
    if fit is None or new is None or fit.shape[1] != new.shape[1]:
        # soft memberships, or a mismatch the caller reports
        return as_members(ensemble_fit, min_items=1), as_members(ensemble_new, min_items=1)
    both = compact_labels(np.vstack([fit, new]))
    return (
        as_members(both[: len(fit)], min_items=1, compact=False),
        as_members(both[len(fit) :], min_items=1, compact=False),
    )


def _relayout(m: Members, width: np.ndarray) -> Members:
    offsets = np.concatenate([[0], np.cumsum(width)])
    own = np.searchsorted(m.part, np.arange(m.n_partitions))
    coo = m.H.tocoo()
    p = m.part[coo.col]
    cols = offsets[p] + (coo.col - own[p])
    H = sp.csr_matrix((coo.data, (coo.row, cols)), shape=(m.n_items, int(offsets[-1])))
    H.sort_indices()
    part = np.repeat(np.arange(m.n_partitions, dtype=np.int64), width)
    return Members(H, part, m.n_partitions)


def align_members(a: Members, b: Members) -> tuple[Members, Members]:
    """Both ensembles with one column layout (a cluster missing on one side is empty there).

    Hard label matrices built separately (fitted items, new items) can see different
    numbers of clusters per partition; label ``c`` of partition ``l`` must map to the
    same column on both sides.

    Parameters
    ----------
    a, b
        The two ensembles' memberships over the same partitions.

    Returns
    -------
    tuple of Members
        ``a`` and ``b`` with matching columns.
    """
    wa = np.bincount(a.part, minlength=a.n_partitions)
    wb = np.bincount(b.part, minlength=b.n_partitions)
    if np.array_equal(wa, wb):
        return a, b
    width = np.maximum(wa, wb)
    return _relayout(a, width), _relayout(b, width)


def _check_weights(weights, n_partitions: int) -> np.ndarray:
    if weights is None:
        return np.full(n_partitions, 1.0 / n_partitions)
    w = np.asarray(weights, dtype=np.float64).ravel()
    if w.size != n_partitions:
        raise ValueError(f"weights has {w.size} entries but the ensemble has {n_partitions}.")
    if not np.all(np.isfinite(w)) or w.min() < 0 or w.sum() <= 0:
        raise ValueError("weights must be finite, non-negative and not all zero.")
    return w / w.sum()


def _vote(X_ref, lab_ref: np.ndarray, X_new, idx: np.ndarray, k: int, part: int) -> np.ndarray:
    """Labels of the new items in one partition: ``k``-NN vote of its sampled items.

    ``idx`` holds each new item's nearest reference items (sampled or not); items with
    fewer than ``k`` sampled among them search this partition's sampled items instead.
    """
    from sklearn.neighbors import NearestNeighbors

    m, n_cand = idx.shape
    rank_bonus = 1e-6 * (n_cand - np.arange(n_cand))[None, :]  # ties go to the nearest
    lab = lab_ref[idx]
    valid = lab >= 0
    used = valid & (np.cumsum(valid, axis=1) <= k)
    enough = used.sum(axis=1) >= min(k, int((lab_ref >= 0).sum()))
    width = int(lab_ref.max()) + 1
    if width <= 0:
        raise ValueError(f"Partition {part} of labels_ref samples no item.")
    votes = np.zeros((m, width))
    rows, cols = np.nonzero(used)
    np.add.at(votes, (rows, lab[rows, cols]), 1.0 + rank_bonus[0, cols])
    out = votes.argmax(axis=1)
    short = np.flatnonzero(~enough)
    if short.size:
        # few sampled items near these points: search this partition's sampled items
        keep = np.flatnonzero(lab_ref >= 0)
        kk = min(k, keep.size)
        nn = NearestNeighbors(n_neighbors=kk).fit(X_ref[keep])
        near = keep[interruptible(nn.kneighbors, X_new[short], return_distance=False)]
        lab_s = lab_ref[near]
        votes_s = np.zeros((short.size, width))
        r_s = np.repeat(np.arange(short.size), kk)
        np.add.at(votes_s, (r_s, lab_s.ravel()), 1.0 + np.tile(rank_bonus[0, :kk], short.size))
        out[short] = votes_s.argmax(axis=1)
    return out


def predict_ensemble_labels(
    X_ref: np.ndarray,
    labels_ref: np.ndarray,
    X_new: np.ndarray,
    *,
    n_neighbors: int = 1,
) -> np.ndarray:
    """Labels of new items in every partition of a reference ensemble, by k-NN vote.

    The nearest-neighbour rule is the natural predictor of single linkage
    (Lange & Buhmann 2005, Sect. 2) and the generic fallback for any clustering; for partition ``l``
    only reference items it sampled (label ``>= 0``) vote.

    Parameters
    ----------
    X_ref
        ``(n_ref, p)`` representation of the reference items.
    labels_ref
        ``(n_ref, L)`` reference ensemble labels, ``-1`` = unsampled.
    X_new
        ``(m, p)`` the new items in the same space (same features, or an embedding
        projected with the reference's PCA).
    n_neighbors
        Voters per partition (majority, ties to the nearest).

    Returns
    -------
    numpy.ndarray
        ``(m, L)`` int32 labels.

    Examples
    --------
    >>> import numpy as np
    >>> from scconsensus.core.pla import predict_ensemble_labels
    >>> X = np.array([[0.0], [1.0], [10.0], [11.0]])
    >>> labels = np.array([[0, -1], [0, 1], [1, 0], [-1, 0]])
    >>> predict_ensemble_labels(X, labels, np.array([[0.2], [10.5]])).tolist()
    [[0, 1], [1, 0]]
    """
    from sklearn.neighbors import NearestNeighbors

    X_ref = check_matrix(X_ref, "X_ref", min_items=1)
    X_new = check_matrix(X_new, "X_new", min_items=1)
    labels_ref = check_labels(labels_ref, "labels_ref")
    if labels_ref.shape[0] != X_ref.shape[0]:
        raise ValueError(
            f"labels_ref has {labels_ref.shape[0]} rows but X_ref has {X_ref.shape[0]}."
        )
    if X_new.shape[1] != X_ref.shape[1]:
        raise ValueError(
            f"X_new has {X_new.shape[1]} features but X_ref has {X_ref.shape[1]}; both "
            "must live in the same space (same genes, or the reference's PCA projection)."
        )
    k = int(n_neighbors)
    if k < 1:
        raise ValueError(f"n_neighbors must be at least 1, got {n_neighbors}.")
    n_cand = min(labels_ref.shape[0], max(4 * k, 32))
    nn = NearestNeighbors(n_neighbors=n_cand).fit(X_ref)
    # seconds in one call at 10,000 x 10,000 items: in a worker, so Ctrl-C is not held
    idx = interruptible(nn.kneighbors, X_new, return_distance=False)
    out = np.empty((X_new.shape[0], labels_ref.shape[1]), dtype=np.int32)
    for part in range(labels_ref.shape[1]):
        # votes are counted per cluster, not per label id (ids may be ~1e8)
        col = labels_ref[:, part]
        ids = np.unique(col[col >= 0])
        codes = np.where(col >= 0, np.searchsorted(ids, col), -1)
        out[:, part] = ids[_vote(X_ref, codes, X_new, idx, k, part)]
    return out
