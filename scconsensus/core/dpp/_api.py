"""Determinantal consensus clustering end to end (Vicente & Murua 2021, Sect. 4), on arrays."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import scipy.sparse as sp

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
    X
        ``(n, p)`` data (items in rows).
    n_runs
        Number of runs ``R`` (paper: 200).
    sampler
        ``"dpp"`` (determinantal generators), ``"uniform"`` (PAM-like baseline of Sect. 5:
        ``k ~ U{1..k_max}`` items uniformly) or ``"kmeans++"`` (k-means from k-means++
        seeds, ``k ~ U{1..k_max}``, Sect. 6).
    a
        Components smaller than ``n**a`` are merged (paper: 1/2).
    tau
        Smallest threshold considered (paper: 0.6).
    s
        Bandwidth scale of eq. 9 (paper: 1).
    mode
        ``"dense"``: exact kernel, exact DPP sampler and full consensus matrix (O(n²)
        memory, O(n³) eigendecomposition). ``"sparse"``: the large-n route of
        :mod:`scconsensus.core.dpp._sparse` (Nyström kernel, low-rank sampler, consensus
        on sampled pairs). ``"auto"``: dense up to
        ``scconsensus.settings.dense_auto_max_items`` items.
    k_max
        Largest ``k`` of the uniform and k-means++ samplers; default ``ceil(sqrt(n))``
        (with ``a = 1/2`` no final cluster can be smaller than ``sqrt(n)``, so no more
        than ``sqrt(n)`` clusters survive).
    expected_size
        Not in the paper: draw from ``DPP(c L)`` with ``c`` set so that the mean number
        of generators per run is ``expected_size`` (same eigenvectors, so the same
        notion of diversity). ``None`` (default) uses ``L`` as the paper does. With the
        paper's ``L`` the mean size ``Σ λ/(1+λ)`` grows with ``n`` and with the
        dimension (about 33 generators on the standardised 30-feature breast cancer
        data, 171 on 100,000 items in 20 dimensions), and runs with many more cells than
        there are clusters fragment the consensus; see ``vignettes/dpp_table4.py``.
    n_components
        Nyström rank of the sparse route (default ``min(n, 300)``).
    n_thresholds
        Keep at most this many thresholds, spread over the observed values (default: all).
    n_neighbors, n_random
        Pairs per item on which the sparse route counts consensus.
    random_state
        Seed; every run gets its own child stream, so results do not depend on chunking.
    progress
        Show a progress bar over the runs (``None``: when scanpy's verbosity is
        ``'info'`` or higher).

    Returns
    -------
    A :class:`DPPConsensus`.

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
    n_runs = int(n_runs)
    k_max = math.ceil(math.sqrt(n)) if k_max is None else int(k_max)

    clock = time.perf_counter()
    timings: dict[str, float] = {}

    def lap(stage: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        timings[stage] = now - clock
        clock = now

    sigma2 = rbf_bandwidth(X)
    seeds = seed_sequence(random_state).spawn(n_runs + 2)
    info: dict = {"k_max": k_max}
    L = F = None
    if mode == "dense":
        L = rbf_kernel(X, sigma2=sigma2, s=s)
    else:
        rank = min(n, 300) if n_components is None else min(n, int(n_components))
        F = nystrom_features(X, rank, sigma2=sigma2, s=s, random_state=seeds[-1])
        info["rank"] = int(F.shape[1])
    lap("kernel")

    rngs = [np.random.default_rng(q) for q in seeds[:n_runs]]
    runs = progress_bar(range(n_runs), desc=f"{sampler} runs", progress=progress)
    if sampler == "kmeans++":
        run_labels = np.empty((n, n_runs), dtype=np.int32)
        for r in runs:
            k = int(rngs[r].integers(1, k_max + 1))
            run_labels[:, r] = _kmeans_run(X, k, int(rngs[r].integers(2**31)))
        run_sizes = run_labels.max(axis=0).astype(np.int64) + 1
    else:
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
            generators = [sample_uniform(n, k_max, rngs[r]) for r in runs]
        run_sizes = np.array([g.size for g in generators], dtype=np.int64)
        lap("sampling")
        run_labels = voronoi_labels(X, generators)
    lap("partitions")

    if mode == "dense":
        counts, _ = coassociation(run_labels, mode="dense")
        consensus = counts.astype(np.float64)
        del counts
        consensus /= n_runs
        values = np.unique(consensus[np.triu_indices(n, 1)])
    else:
        consensus = sparse_consensus(
            run_labels,
            X,
            n_neighbors=n_neighbors,
            n_random=n_random,
            random_state=seeds[-2],
        )
        values = np.unique(consensus.data)
    thresholds = candidate_thresholds(values, tau, n_thresholds)
    if thresholds.size == 0:
        raise ValueError(
            f"No pair of items reaches consensus tau={tau} (largest observed "
            f"{values.max() if values.size else 0:.3g}). Lower tau or use more runs."
        )
    forest = maximum_spanning_forest(consensus)
    del consensus
    lap("consensus")
    partitions = threshold_partitions(forest, n, thresholds, n**a)
    lap("thresholds")

    # score each distinct partition once (neighbouring thresholds often agree)
    keys = [p.tobytes() for p in partitions]
    unique_keys = list(dict.fromkeys(keys))
    first = {key: keys.index(key) for key in unique_keys}
    scores = validity_indices([partitions[first[key]] for key in unique_keys], kernel=L, features=F)
    where = np.array([unique_keys.index(key) for key in keys])
    table = pd.DataFrame(
        {
            "threshold": thresholds,
            "n_clusters": scores["n_clusters"][where],
            "kvi": scores["kvi"][where],
            "sr": scores["sr"][where],
            "within": scores["within"][where],
            "between": scores["between"][where],
            "btilde": scores["btilde"][where],
        }
    )
    kvi = table["kvi"].to_numpy()
    best = int(np.nanargmin(kvi)) if np.any(np.isfinite(kvi)) else 0
    table["chosen"] = np.arange(len(table)) == best
    labels = partitions[best]
    lap("validity")
    membership = normalize_rows(consensus_membership(run_labels, labels))
    lap("membership")
    info["alpha"] = scores["alpha"]
    info["timings"] = timings
    return DPPConsensus(
        labels=labels,
        membership=membership,
        threshold=float(thresholds[best]),
        candidates=table,
        run_labels=run_labels,
        run_sizes=run_sizes,
        sigma2=float(sigma2),
        mode=mode,
        info=info,
    )
