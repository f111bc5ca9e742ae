"""Determinantal consensus clustering end to end (Vicente & Murua 2021, Sect. 4), on arrays."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ..._docs import doc_params
from ..._progress import progress_bar
from ..._settings import settings
from ..._validation import (
    RandomState,
    check_choice,
    check_dense_memory,
    check_int,
    check_matrix,
    check_number,
    seed_sequence,
)
from .._membership import normalize_rows
from ..coassociation import coassociation
from ._consensus import (
    candidate_thresholds,
    consensus_membership,
    maximum_spanning_forest,
    threshold_partitions,
    validity_indices,
    voronoi_labels,
)
from ._doc import DPP_PARAMS
from ._kernel import nystrom_features, rbf_bandwidth, rbf_kernel
from ._samplers import SpectralDPP, sample_uniform
from ._sparse import sparse_consensus

__all__ = ["DPPConsensus", "dpp_consensus"]

SAMPLERS = ("dpp", "uniform", "kmeans++")
MODES = ("auto", "dense", "sparse")


@dataclass
class DPPConsensus:
    """Result of :func:`dpp_consensus`.

    Attributes
    ----------
    labels
        ``(n,)`` int32 final clusters ``0..K-1``, largest first.
    membership
        ``(n, K)`` mean consensus of each item with each final cluster, rows normalised.
    threshold
        The chosen threshold θ.
    candidates
        One row per threshold: ``threshold``, ``n_clusters``, ``kvi``, ``sr``, ``within``
        (W_V), ``between`` (B_V), ``btilde`` and ``chosen``.
    run_labels
        ``(n, R)`` int32 labels of the individual runs (Voronoi cells or k-means).
    run_sizes
        ``(R,)`` number of generators (clusters) of each run.
    sigma2
        Bandwidth σ̂² of eq. 8 (before the ``s`` scaling).
    mode
        ``"dense"`` (exact) or ``"sparse"`` (large-n route).
    info
        Further figures: ``alpha`` of KVI, ``expected_size`` of the DPP, ``rank`` of the
        Nyström features, ``k_max``, and ``timings`` (seconds per stage).
    """

    labels: np.ndarray
    membership: np.ndarray
    threshold: float
    candidates: pd.DataFrame
    run_labels: np.ndarray
    run_sizes: np.ndarray
    sigma2: float
    mode: str
    info: dict = field(default_factory=dict)


def _check_params(n, sampler, n_runs, a, tau, s, k_max, expected_size, n_components, n_thresholds):
    check_int(n_runs, "n_runs", 1)
    a, tau, s = (check_number(v, name) for v, name in ((a, "a"), (tau, "tau"), (s, "s")))
    if k_max is not None:
        k_max = check_int(k_max, "k_max")
    if expected_size is not None:
        check_number(expected_size, "expected_size")
    if not (0.0 < float(a) < 1.0):
        raise ValueError(f"a must be in (0, 1) (clusters smaller than n**a are merged), got {a}.")
    if not (0.0 <= float(tau) <= 1.0):
        raise ValueError(f"tau must be a consensus level in [0, 1], got {tau}.")
    if not (np.isfinite(s) and float(s) > 0):
        raise ValueError(f"s (bandwidth scale, eq. 9) must be positive, got {s}.")
    if k_max is not None and not (1 <= int(k_max) <= n):
        raise ValueError(f"k_max must be between 1 and the number of items ({n}), got {k_max}.")
    if expected_size is not None and sampler != "dpp":
        raise ValueError(
            f"expected_size applies to sampler='dpp' only; the {sampler!r} baseline draws "
            "k uniformly in 1..k_max, set k_max instead."
        )
    if expected_size is not None and not (0.0 < float(expected_size) < n):
        raise ValueError(
            f"expected_size must be a number of generators in (0, {n}), got {expected_size}."
        )
    if n_components is not None:
        check_int(n_components, "n_components", 1)
    if n_thresholds is not None:
        check_int(n_thresholds, "n_thresholds", 1)


def _kmeans_run(X: np.ndarray, k: int, seed: int) -> np.ndarray:
    from sklearn.cluster import KMeans, kmeans_plusplus

    if k == 1:
        return np.zeros(X.shape[0], dtype=np.int32)
    # plain k-means++ seeding (one candidate per step) as in Vicente & Murua (2021),
    # Sect. 6, then Lloyd
    centres, _ = kmeans_plusplus(X, k, random_state=seed, n_local_trials=1)
    km = KMeans(k, init=centres, n_init=1, random_state=seed).fit(X)
    return km.labels_.astype(np.int32)


class _Laps:
    """Seconds per stage, each measured from the end of the one before."""

    def __init__(self) -> None:
        self.timings: dict[str, float] = {}
        self._clock = time.perf_counter()

    def __call__(self, stage: str) -> None:
        now = time.perf_counter()
        self.timings[stage] = now - self._clock
        self._clock = now


def _check_inputs(
    X, sampler, mode, n_runs, a, tau, s, k_max, expected_size, n_components, n_thresholds
):
    """Dense validated ``X``, the route (``"auto"`` resolved) and ``k_max``."""
    X = check_matrix(X, "X", min_items=3)
    if sp.issparse(X):
        X = X.toarray()
    n = X.shape[0]
    check_choice(sampler, SAMPLERS, "sampler")
    check_choice(mode, MODES, "mode")
    _check_params(n, sampler, n_runs, a, tau, s, k_max, expected_size, n_components, n_thresholds)
    if mode == "auto":
        mode = "dense" if n <= settings.dense_auto_max_items else "sparse"
    if mode == "dense":
        # L, its eigenvectors and the consensus values: three n x n float64 matrices
        check_dense_memory(n, n_matrices=3, itemsize=8, what="Exact DPP consensus")
    k_max = math.ceil(math.sqrt(n)) if k_max is None else int(k_max)
    return X, mode, k_max


def _kernel(X: np.ndarray, mode: str, sigma2: float, s: float, n_components, seed, info: dict):
    """The exact kernel ``L`` (dense route) or Nyström features ``F`` (sparse route)."""
    if mode == "dense":
        return rbf_kernel(X, sigma2=sigma2, s=s), None
    n = X.shape[0]
    rank = min(n, 300) if n_components is None else min(n, int(n_components))
    F = nystrom_features(X, rank, sigma2=sigma2, s=s, random_state=seed)
    info["rank"] = int(F.shape[1])
    return None, F


def _draw_runs(X, sampler: str, runs, rngs, L, F, k_max: int, expected_size, info, lap):
    """``(n, R)`` labels of the runs and the number of generators (clusters) of each."""
    if sampler == "kmeans++":
        run_labels = np.empty((X.shape[0], len(rngs)), dtype=np.int32)
        for r in runs:
            k = int(rngs[r].integers(1, k_max + 1))
            run_labels[:, r] = _kmeans_run(X, k, int(rngs[r].integers(2**31)))
        return run_labels, run_labels.max(axis=0).astype(np.int64) + 1
    if sampler == "dpp":
        dpp = SpectralDPP.from_kernel(L) if F is None else SpectralDPP.from_features(F)
        if expected_size is not None:
            dpp = dpp.with_expected_size(expected_size)
            info["kernel_scale"] = dpp.scale
        info["expected_size"] = dpp.expected_size
        lap("eigendecomposition")
        generators = dpp.sample_many((rngs[r] for r in runs), nonempty=True)
        del dpp
    else:
        generators = [sample_uniform(X.shape[0], k_max, rngs[r]) for r in runs]
    run_sizes = np.array([g.size for g in generators], dtype=np.int64)
    lap("sampling")
    return voronoi_labels(X, generators), run_sizes


def _consensus_forest(run_labels, X, mode, n_neighbors, n_random, seed, tau, n_thresholds):
    """Maximum spanning forest of the consensus of the runs, and the thresholds to cut."""
    n, n_runs = run_labels.shape
    if mode == "dense":
        counts, _ = coassociation(run_labels, mode="dense")
        consensus = counts.astype(np.float64)
        del counts
        consensus /= n_runs
        values = np.unique(consensus[np.triu_indices(n, 1)])
    else:
        consensus = sparse_consensus(
            run_labels, X, n_neighbors=n_neighbors, n_random=n_random, random_state=seed
        )
        values = np.unique(consensus.data)
    thresholds = candidate_thresholds(values, tau, n_thresholds)
    if thresholds.size == 0:
        raise ValueError(
            f"No pair of items reaches consensus tau={tau} (largest observed "
            f"{values.max() if values.size else 0:.3g}). Lower tau or use more runs."
        )
    return maximum_spanning_forest(consensus), thresholds


def _select(partitions: list, thresholds: np.ndarray, L, F):
    """The candidates' table, the index of the lowest-KVI candidate, and KVI's alpha."""
    # score each distinct partition once (neighbouring thresholds often agree)
    keys = [p.tobytes() for p in partitions]
    unique_keys = list(dict.fromkeys(keys))
    first = {key: keys.index(key) for key in unique_keys}
    scores = validity_indices([partitions[first[key]] for key in unique_keys], kernel=L, features=F)
    where = np.array([unique_keys.index(key) for key in keys])
    columns = ("n_clusters", "kvi", "sr", "within", "between", "btilde")
    table = pd.DataFrame({"threshold": thresholds, **{c: scores[c][where] for c in columns}})
    kvi = table["kvi"].to_numpy()
    best = int(np.nanargmin(kvi)) if np.any(np.isfinite(kvi)) else 0
    table["chosen"] = np.arange(len(table)) == best
    return table, best, scores["alpha"]


def _solve(
    X,
    n_runs,
    sampler,
    a,
    tau,
    s,
    mode,
    k_max,
    expected_size,
    n_components,
    n_thresholds,
    n_neighbors,
    n_random,
    random_state,
    progress,
) -> DPPConsensus:
    """:func:`dpp_consensus` on validated arguments: kernel, runs, consensus, cut, choice."""
    n = X.shape[0]
    lap = _Laps()
    sigma2 = rbf_bandwidth(X)
    seeds = seed_sequence(random_state).spawn(n_runs + 2)
    info: dict = {"k_max": k_max}
    L, F = _kernel(X, mode, sigma2, s, n_components, seeds[-1], info)
    lap("kernel")
    rngs = [np.random.default_rng(q) for q in seeds[:n_runs]]
    runs = progress_bar(range(n_runs), desc=f"{sampler} runs", progress=progress)
    run_labels, run_sizes = _draw_runs(
        X, sampler, runs, rngs, L, F, k_max, expected_size, info, lap
    )
    lap("partitions")
    forest, thresholds = _consensus_forest(
        run_labels, X, mode, n_neighbors, n_random, seeds[-2], tau, n_thresholds
    )
    lap("consensus")
    partitions = threshold_partitions(forest, n, thresholds, n**a)
    lap("thresholds")
    table, best, info["alpha"] = _select(partitions, thresholds, L, F)
    lap("validity")
    membership = normalize_rows(consensus_membership(run_labels, partitions[best]))
    lap("membership")
    info["timings"] = lap.timings
    return DPPConsensus(
        labels=partitions[best],
        membership=membership,
        threshold=float(thresholds[best]),
        candidates=table,
        run_labels=run_labels,
        run_sizes=run_sizes,
        sigma2=float(sigma2),
        mode=mode,
        info=info,
    )


@doc_params(**DPP_PARAMS)
def dpp_consensus(
    X: np.ndarray,
    n_runs: int = 200,
    *,
    sampler: str = "dpp",
    a: float = 0.5,
    tau: float = 0.6,
    s: float = 1.0,
    mode: str = "auto",
    k_max: int | None = None,
    expected_size: float | None = None,
    n_components: int | None = None,
    n_thresholds: int | None = None,
    n_neighbors: int = 15,
    n_random: int = 10,
    random_state: RandomState = 0,
    progress: bool | None = None,
) -> DPPConsensus:
    """Determinantal consensus clustering of Vicente & Murua (2021, Sect. 4).

    ``n_runs`` generator sets are drawn (from a DPP with the RBF kernel of eq. 9 by
    default), each defines a Voronoi partition, and their consensus matrix (eq. 2) is cut
    at every observed consensus value ``θ ≥ tau``. Each cut's connected components, with
    components smaller than ``n**a`` merged by single linkage, is a candidate; the
    candidate with the lowest kernel validity index (eq. 11) is returned.

    Parameters
    ----------
    {X}
    {dpp_runs}
    {dpp_cut}
    {dpp_route}
    {random_state}
        Every run gets its own child stream, so results do not depend on chunking.
    {progress}

    Returns
    -------
    DPPConsensus
        Final labels and memberships, the candidates' table and the runs.

    Examples
    --------
    >>> import numpy as np
    >>> from scconsensus.core.dpp import dpp_consensus
    >>> rng = np.random.default_rng(0)
    >>> X = np.r_[rng.normal(0, 0.3, (40, 2)), rng.normal(4, 0.3, (40, 2))]
    >>> res = dpp_consensus(X, n_runs=50, random_state=0)
    >>> int(res.labels.max()) + 1
    2
    """
    X, mode, k_max = _check_inputs(
        X, sampler, mode, n_runs, a, tau, s, k_max, expected_size, n_components, n_thresholds
    )
    return _solve(
        X,
        int(n_runs),
        sampler,
        a,
        tau,
        s,
        mode,
        k_max,
        expected_size,
        n_components,
        n_thresholds,
        n_neighbors,
        n_random,
        random_state,
        progress,
    )
