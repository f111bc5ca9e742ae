"""The resampling engine of consensus-k and :func:`consensus_k` end to end.

Partitions of shared item subsamples for every ``k`` (:func:`resample_partitions`), then
one consensus matrix ``M_k`` at a time (:class:`_LazyConsensus`) into
:func:`~scconsensus.core.consensus_k.summarize_consensus`.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from dataclasses import fields
from typing import Any

import numpy as np
from joblib import Parallel, delayed

from ..._docs import doc_params
from ..._memory_guard import NO_SPARSE_ADVICE, check_dense_memory
from ..._progress import progress_bar
from ..._validation import (
    RandomState,
    check_choice,
    check_correlation_rows,
    check_correlation_subsample,
    check_fraction,
    check_int,
    check_kwargs,
    check_labels,
    check_matrix,
    check_n_jobs,
    check_options,
    random_state_record,
    seed_sequence,
    too_many_clusters,
)
from ..._warnings import warn
from .._distance import condensed_distance
from .._options import options_record
from ..coassociation import coassociation
from ..ensemble import (
    DISCONNECTED_SINK,
    DISTANCES,
    LINKAGES,
    METHODS,
    DisconnectedGraphWarning,
    PartitionOptions,
    generate_ensemble,
)
from ._options import Resampling
from ._result import ConsensusK
from ._statistics import FINAL_LINKAGES, _check_window, summarize_consensus

#: Methods with a fixed number of clusters (Leiden and kmeans_split choose their own).
FIXED_K_METHODS = tuple(m for m in METHODS if m not in ("leiden", "kmeans_split"))


def _square_distance(X: np.ndarray, distance: str) -> np.ndarray | None:
    """Correlation / cosine distances of all items with one BLAS product (``None``: other).

    ``pdist``'s correlation loops over pairs in C without BLAS (1.5 s for 1,000 x 2,000);
    this is the same ``1 - r`` up to rounding. Constant items get distance 2 to all others,
    as in :func:`~scconsensus.core._distance.condensed_distance`.
    """
    if distance not in ("pearson", "spearman", "cosine"):
        return None
    if distance == "spearman":
        from scipy.stats import rankdata

        X = rankdata(X, axis=1)
    Z = np.array(X, dtype=np.float64)
    if distance != "cosine":
        Z -= Z.mean(axis=1, keepdims=True)
    norm = np.linalg.norm(Z, axis=1)
    flat = norm == 0
    if distance == "cosine" and flat.any():
        return None  # pdist's NaN convention for all-zero items differs: use it
    Z /= np.where(flat, 1.0, norm)[:, None]
    D = Z @ Z.T
    np.subtract(1.0, D, out=D)
    np.clip(D, 0.0, 2.0, out=D)
    D[flat, :] = 2.0
    D[:, flat] = 2.0
    np.fill_diagonal(D, 0.0)
    return D


def _hc_rep(
    X: np.ndarray,
    D: np.ndarray | None,
    seed: np.random.SeedSequence,
    ks: np.ndarray,
    n_sub: int,
    n_feat: int,
    linkage: str,
    distance: str,
) -> np.ndarray:
    """One subsample, one tree, cut at every ``k``: ``(n, len(ks))`` labels (-1 unsampled).

    The subsample draws replay :func:`generate_ensemble`'s, so the cut at ``k`` is the
    partition its ``"hc"`` method gives for the same seed and ``k`` (distances equal up to
    rounding when ``D`` comes from :func:`_square_distance`).
    """
    from scipy.cluster.hierarchy import fcluster
    from scipy.cluster.hierarchy import linkage as scipy_linkage
    from scipy.spatial.distance import squareform

    rng = np.random.default_rng(seed)
    n, p = X.shape
    items = np.sort(rng.choice(n, size=n_sub, replace=False)) if n_sub < n else np.arange(n)
    feats = np.sort(rng.choice(p, size=n_feat, replace=False)) if n_feat < p else None
    if linkage in ("ward", "centroid") and distance == "euclidean":
        X_sub = X[items] if feats is None else X[items][:, feats]
        tree = scipy_linkage(X_sub, method=linkage, metric="euclidean")
    else:
        if D is not None:
            d = squareform(D[np.ix_(items, items)], checks=False)
        else:
            d = condensed_distance(X[items][:, feats], distance)
        tree = scipy_linkage(d, method=linkage)
    out = np.full((n, ks.size), -1, dtype=np.int32)
    for j, k in enumerate(ks):
        out[items, j] = fcluster(tree, t=int(k), criterion="maxclust") - 1
    return out


#: Arguments of :func:`generate_ensemble` that consensus-k does not set itself.
ENSEMBLE_EXTRAS = ("predict_unsampled", "n_neighbors", "client")


def _check_ensemble_kwargs(kwargs: Mapping[str, Any], method: str) -> None:
    """Refuse ``**ensemble_kwargs`` that would be ignored, so typos cannot pass silently."""
    if not kwargs:
        return
    # tl.consensus_k takes the record's fields flat; here they belong in the record
    flat = [name for name in (field.name for field in fields(Resampling)) if name in kwargs]
    if flat:
        given = ", ".join(f"{name}={kwargs[name]!r}" for name in flat)
        raise ValueError(
            f"consensus_k takes {', '.join(flat)} in its resampling record: pass "
            f"resampling=Resampling({given}) (from scconsensus.core.consensus_k), or the "
            "flat keywords to scconsensus.tl.consensus_k."
        )
    if "resolution" in kwargs:  # Leiden's, and consensus-k runs fixed-k methods only
        raise ValueError(
            "resolution sets Leiden's number of clusters, and consensus_k runs each k itself "
            f"with a fixed-k method ({', '.join(FIXED_K_METHODS)}): drop resolution."
        )
    if "n_neighbors" in kwargs and method != "spectral" and not method.startswith("hc"):
        raise ValueError(
            f"n_neighbors sets the spectral method's kNN graph, which method={method!r} does "
            "not build: drop n_neighbors, or use method='spectral'."
        )
    own = [name for name in inspect.signature(consensus_k).parameters if name != "X"]
    own += [field.name for field in fields(Resampling)]  # a typo of one is told the name
    check_kwargs(kwargs, ENSEMBLE_EXTRAS, "consensus_k", suggest=own)
    if method.startswith("hc"):
        raise ValueError(
            f"{sorted(kwargs)} go to generate_ensemble, which method={method!r} does not use "
            "(trees are built directly); drop them or choose another method, e.g. 'kmeans'."
        )


def _resample_hc(
    X: np.ndarray,
    ks: np.ndarray,
    reps: int,
    sizes: tuple[int, int],
    link: str,
    distance: str,
    random_state: RandomState,
    n_jobs: int | None,
    progress: bool | None,
) -> dict[int, np.ndarray]:
    """CCP's protocol for hierarchical clustering: one tree per subsample, cut at every k."""
    from scipy.spatial.distance import squareform

    n, p = X.shape
    n_sub, n_feat = sizes
    check_correlation_rows(X, distance)
    check_correlation_subsample(n_feat, p, distance, "p_feature")
    check_dense_memory(n, itemsize=8, what="Consensus-k distance matrix", advice=NO_SPARSE_ADVICE)
    D = None
    if n_feat == p and not (link in ("ward", "centroid") and distance == "euclidean"):
        # one distance matrix for all subsamples, as CCP does with pFeature = 1
        D = _square_distance(X, distance)
        if D is None:
            D = squareform(condensed_distance(X, distance))
    seeds = seed_sequence(random_state).spawn(reps)
    run = delayed(_hc_rep)
    tasks = (run(X, D, s, ks, n_sub, n_feat, link, distance) for s in seeds)
    results = Parallel(n_jobs=n_jobs, return_as="generator")(tasks)
    stacked = np.empty((ks.size, n, reps), dtype=np.int32)
    for r, cuts in enumerate(
        progress_bar(results, progress=progress, total=reps, desc="consensus_k", unit="rep")
    ):
        stacked[:, :, r] = cuts.T
    return {int(k): np.ascontiguousarray(stacked[j]) for j, k in enumerate(ks)}


def _checked_run(
    shape: tuple[int, int],
    max_k: int,
    reps: int,
    resampling: Resampling,
    ensemble_kwargs: Mapping[str, Any],
) -> tuple[int, int, tuple[int, int]]:
    """``(max_k, reps, (items, features) per subsample)``, every option checked."""
    n, p = shape
    check_choice(resampling.method, FIXED_K_METHODS, "method")
    check_choice(resampling.distance, DISTANCES, "distance")
    check_choice(resampling.linkage, LINKAGES, "linkage")
    p_item = check_fraction(resampling.p_item, "p_item")
    p_feature = check_fraction(resampling.p_feature, "p_feature")
    reps = check_int(reps, "reps", 1)
    n_sub = max(2, round(p_item * n))
    max_k = check_int(max_k, "max_k", 2)
    if max_k >= n_sub:
        raise ValueError(
            too_many_clusters(
                "max_k", max_k, n_sub, f"items per subsample (p_item={p_item} of {n})"
            )
        )
    _check_ensemble_kwargs(ensemble_kwargs, resampling.method)
    return max_k, reps, (n_sub, max(1, round(p_feature * p)))


def check_consensus_k(
    shape: tuple[int, int],
    max_k: int = 6,
    reps: int = 50,
    *,
    resampling: Resampling | None = None,
    final_linkage: str = "average",
    pac_window: Sequence[float] = (0.1, 0.9),
    n_jobs: int | None = 1,
    keep_matrices: bool = False,
    **ensemble_kwargs: Any,
) -> None:
    """Refuse what :func:`consensus_k` would refuse on data of this ``shape``, at once.

    For a caller that reports the run before it starts (``tl.consensus_k`` logs it):
    every option, ``max_k`` against the items per subsample, and the dense memory.
    (``random_state`` is read when the run starts.)

    Examples
    --------
    >>> from scconsensus.core.consensus_k import check_consensus_k
    >>> check_consensus_k((150, 4), max_k=6)
    >>> check_consensus_k((10, 4), max_k=9)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: max_k=9 ...
    """
    resampling = check_options(resampling, Resampling, "resampling")
    max_k, *_ = _checked_run(shape, max_k, reps, resampling, ensemble_kwargs)
    check_choice(final_linkage, FINAL_LINKAGES, "final_linkage")
    _check_window(pac_window)
    check_n_jobs(n_jobs)
    _check_memory(shape[0], max_k, keep_matrices)


@doc_params()
def resample_partitions(
    X: np.ndarray,
    max_k: int = 6,
    reps: int = 50,
    *,
    resampling: Resampling | None = None,
    random_state: RandomState = 0,
    n_jobs: int | None = 1,
    progress: bool | None = None,
    **ensemble_kwargs: Any,
) -> dict[int, np.ndarray]:
    """The resampling protocol of ConsensusClusterPlus: ``{k: (n, reps) int32 labels}``.

    Every ``k`` sees the same ``reps`` item subsamples. Hierarchical methods build one tree
    per subsample and cut it at every ``k`` (as CCP does); other methods run
    :func:`~scconsensus.core.ensemble.generate_ensemble` once per ``k`` with the same seed.

    Parameters
    ----------
    {X}
    {consensus_k_max_k_reps}
    resampling
        ``p_item``, ``p_feature``, ``method``, ``distance``, ``linkage`` as a
        :class:`Resampling` (``tl.consensus_k`` documents each); ``None``: CCP's defaults.
    {random_state}
    {n_jobs}
    {progress}
    {consensus_k_ensemble_kwargs}

    Returns
    -------
    ``{k: (n_items, reps) int32 labels}``, ``-1`` where a subsample left the item out.
    """
    resampling = check_options(resampling, Resampling, "resampling")
    X = check_matrix(X)
    if not isinstance(X, np.ndarray):
        X = X.toarray()
    max_k, reps, (n_sub, n_feat) = _checked_run(X.shape, max_k, reps, resampling, ensemble_kwargs)
    method, distance, linkage = resampling.method, resampling.distance, resampling.linkage
    p_item, p_feature = resampling.p_item, resampling.p_feature
    n_jobs = check_n_jobs(n_jobs)
    ks = np.arange(2, max_k + 1)
    if method.startswith("hc"):
        link = method[3:] or linkage
        sizes = (n_sub, n_feat)
        return _resample_hc(X, ks, reps, sizes, link, distance, random_state, n_jobs, progress)
    client = ensemble_kwargs.pop("client", None)
    options = PartitionOptions(
        subsample=p_item, feature_subsample=p_feature, linkage=linkage, distance=distance,
        **ensemble_kwargs,
    )  # fmt: skip
    run = (random_state, n_jobs, client, progress)
    return _resample_fixed_k(X, ks, reps, method, options, run)


def _resample_fixed_k(X, ks, reps: int, method: str, options: PartitionOptions, run: tuple):
    """A fixed-``k`` method's protocol: one ensemble per ``k``, all on the same seeds.

    ``run`` is ``(random_state, n_jobs, client, progress)``.
    """
    random_state, n_jobs, client, progress = run
    out = {}
    said = []
    token = DISCONNECTED_SINK.set(said)
    try:
        for k in progress_bar(ks, progress=progress, desc="consensus_k", unit="k"):
            ens = generate_ensemble(
                X,
                reps,
                method=method,
                k=int(k),
                options=options,
                random_state=random_state,
                n_jobs=n_jobs,
                client=client,
                progress=False,
            )
            out[int(k)] = ens.labels
    finally:
        DISCONNECTED_SINK.reset(token)
    if said:  # one warning for every k, where each ensemble would say its own
        disconnected = sum(w.disconnected for w in said)
        spectral = sum(w.spectral for w in said)
        warn(DisconnectedGraphWarning(disconnected, spectral, f" (k = {ks[0]}..{ks[-1]})"))
    return out


class _LazyConsensus(Mapping):
    """``{k: M_k}`` computed on access, so only one dense ``M_k`` lives at a time."""

    def __init__(self, parts: Mapping[int, np.ndarray], N: np.ndarray):
        self._parts = parts
        self._N = N

    def __getitem__(self, k: int) -> np.ndarray:
        C, _ = coassociation(check_labels(self._parts[int(k)]), mode="dense")
        # N (co-sampling) is the same for every k: the subsamples are shared
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self._N > 0, C / np.where(self._N > 0, self._N, 1), 0.0)

    def __iter__(self):
        return iter(self._parts)

    def __len__(self) -> int:
        return len(self._parts)


def _check_memory(n: int, max_k: int, keep_matrices: bool) -> None:
    # C, N (int32), M and the condensed 1 - M (float64) of one k at a time
    check_dense_memory(
        n, n_matrices=4, itemsize=8, what="Consensus-k matrices", advice=NO_SPARSE_ADVICE
    )
    if keep_matrices:
        check_dense_memory(
            n,
            n_matrices=max_k + 2,
            itemsize=8,
            what="Kept consensus-k matrices",
            advice=NO_SPARSE_ADVICE,
        )


def _run_params(
    max_k: int, reps: int, resampling: Resampling, random_state: RandomState, N: np.ndarray
) -> dict[str, Any]:
    """The resampling part of :attr:`ConsensusK.params`."""
    return {
        "max_k": int(max_k),
        "reps": int(reps),
        **options_record(resampling),
        "p_item": float(resampling.p_item),
        "p_feature": float(resampling.p_feature),
        "random_state": random_state_record(random_state),
        "n_never_sampled": int(np.count_nonzero(np.diagonal(N) == 0)),
    }


def _summarize_resampled(
    parts: Mapping[int, np.ndarray],
    n_bins: int,
    pac_window: Sequence[float],
    final_linkage: str,
    keep_matrices: bool,
) -> tuple[ConsensusK, np.ndarray]:
    """Statistics of resampled partitions, and their co-sampling counts ``N``."""
    _, N = coassociation(parts[int(min(parts))], mode="dense")
    result = summarize_consensus(
        _LazyConsensus(parts, N),
        n_bins=n_bins,
        pac_window=pac_window,
        final_linkage=final_linkage,
        keep_matrices=keep_matrices,
    )
    return result, N


@doc_params()
def consensus_k(
    X: np.ndarray,
    max_k: int = 6,
    reps: int = 50,
    *,
    resampling: Resampling | None = None,
    final_linkage: str = "average",
    n_bins: int = 100,
    pac_window: Sequence[float] = (0.1, 0.9),
    random_state: RandomState = 0,
    n_jobs: int | None = 1,
    keep_matrices: bool = False,
    keep_partitions: bool = False,
    progress: bool | None = None,
    **ensemble_kwargs: Any,
) -> ConsensusK:
    """Monti consensus clustering for ``k = 2..max_k``: CDF, delta area, PAC, consensus.

    Parameters
    ----------
    {X}
    {consensus_k_max_k_reps}
    resampling
        ``p_item``, ``p_feature``, ``method``, ``distance``, ``linkage`` as a
        :class:`Resampling` (``tl.consensus_k`` documents each); ``None``: CCP's defaults.
    final_linkage, n_bins, pac_window
        Linkage of the clustering of ``1 - M_k`` (CCP's ``finalLinkage``), CDF grid and
        PAC window.
    {random_state}
    {n_jobs}
    keep_matrices, keep_partitions
        Keep the consensus matrices / resampled partitions in the result.
    {progress}
    {consensus_k_ensemble_kwargs}

    Returns
    -------
    :class:`ConsensusK`.

    Examples
    --------
    >>> import numpy as np
    >>> from scconsensus.core.consensus_k import consensus_k
    >>> rng = np.random.default_rng(0)
    >>> X = np.vstack([rng.normal(m, 1, size=(20, 30)) for m in (-3, 0, 3)])
    >>> X += rng.normal(0, 3, size=(1, 30))  # a shared profile, so Pearson sees the groups
    >>> res = consensus_k(X, max_k=4, reps=20, progress=False)
    >>> int(res.ks[0]), len(res.pac)
    (2, 3)
    """
    resampling = check_options(resampling, Resampling, "resampling")
    X = check_matrix(X)
    # refused before the resampling, not after it
    check_consensus_k(
        X.shape, max_k, reps, resampling=resampling, final_linkage=final_linkage,
        pac_window=pac_window, n_jobs=n_jobs, keep_matrices=keep_matrices, **ensemble_kwargs,
    )  # fmt: skip
    max_k = check_int(max_k, "max_k", 2)
    parts = resample_partitions(
        X,
        max_k,
        reps,
        resampling=resampling,
        random_state=random_state,
        n_jobs=n_jobs,
        progress=progress,
        **ensemble_kwargs,
    )
    result, N = _summarize_resampled(parts, n_bins, pac_window, final_linkage, keep_matrices)
    result.params.update(_run_params(max_k, reps, resampling, random_state, N))
    if keep_partitions:
        result.partitions = parts
    return result
