"""Determinantal consensus clustering end to end (Vicente & Murua 2021, Sect. 4), on arrays.

**How many generators a run draws (the one default that leaves the paper).** The RBF
kernel matrix ``L`` of ``n`` items is ``n`` times a discretisation of the kernel's
integral operator on the data distribution: its eigenvalues are about ``n μ_i``
(Koltchinskii & Giné 2000), so the paper's DPP draws ``E|Y| = Σ nμ_i / (1 + nμ_i)``
generators per run, a number that grows with ``n`` and, as distances concentrate, with
the dimension. The consensus of ever finer Voronoi partitions tends to zero between any
two distinct items, and no threshold in ``[τ, 1]`` joins the cells again: measured, 27
clusters for 20 planted ones at n = 2,000 (180 generators per run), 47 at 10,000 and
156 at 100,000. By default the runs are drawn from ``L · m / n`` with ``m =
reference_size`` (200): the DPP that the paper's kernel defines on ``m`` items of the
same distribution, whose law does not depend on ``n``; data of at most ``m`` items get
the paper's kernel. Screened on the accuracy panel against the paper's ``L``, fixed
mean sizes (5, 10, 20), ``E|Y| = ⌈√n⌉``, other ``m`` (25 to 400), thresholds below
``τ`` and other choices of the cut (stability of K across the runs, the widest range of
thresholds): see ``benchmarks/README.md``. ``reference_size=None`` is the paper's
protocol.

**The cut.** The number of clusters is the paper's: the cut of the consensus at
``θ ≥ τ`` with the lowest kernel validity index. ``n_clusters`` asks for a number
instead (every observed consensus value is then a candidate threshold).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ..._docs import doc_params
from ..._memory_guard import check_dense_route
from ..._progress import progress_bar
from ..._settings import settings
from ..._validation import (
    RandomState,
    check_choice,
    check_int,
    check_matrix,
    check_n_clusters,
    check_number,
    check_options,
    random_state_record,
    seed_sequence,
)
from ..._warnings import warn
from .._laps import Laps
from .._options import options_record, takes_records
from ..coassociation import coassociation
from ..membership import normalize_rows
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
from ._options import DPPCut, DPPRoute, DPPSampling
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
        Further figures: ``alpha`` of KVI, ``expected_size`` of the DPP (and
        ``kernel_scale``, the factor applied to ``L``, when not 1), ``rank`` of the
        Nyström features, ``k_max``, ``reason`` (one sentence: why this cut) and
        ``timings`` (seconds per stage).
    params
        The run's options, flat, in :func:`dpp_consensus`'s order (``k_max`` as
        resolved, ``random_state`` as
        :func:`~scconsensus._validation.random_state_record` writes it).
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
    params: dict = field(default_factory=dict)


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


def _check_reference_size(reference_size) -> int | None:
    if reference_size is None:
        return None
    # the DPP of the kernel of one item draws at most one generator, a single Voronoi cell
    return check_int(reference_size, "reference_size", 2)


def _kmeans_run(X: np.ndarray, k: int, seed: int) -> np.ndarray:
    from sklearn.cluster import KMeans, kmeans_plusplus

    if k == 1:
        return np.zeros(X.shape[0], dtype=np.int32)
    # plain k-means++ seeding (one candidate per step) as in Vicente & Murua (2021),
    # Sect. 6, then Lloyd
    centres, _ = kmeans_plusplus(X, k, random_state=seed, n_local_trials=1)
    km = KMeans(k, init=centres, n_init=1, random_state=seed).fit(X)
    return km.labels_.astype(np.int32)


def _check_inputs(X, sampling: DPPSampling, cut: DPPCut, route: DPPRoute, n_runs):
    """Dense validated ``X``, the route (``"auto"`` resolved) and ``k_max``."""
    X = check_matrix(X, "X", min_items=3)
    if sp.issparse(X):
        X = X.toarray()
    n = X.shape[0]
    sampler, mode, k_max = sampling.sampler, route.mode, sampling.k_max
    check_choice(sampler, SAMPLERS, "sampler")
    check_choice(mode, MODES, "mode")
    _check_params(
        n, sampler, n_runs, cut.a, cut.tau, cut.s, k_max, sampling.expected_size,
        route.n_components, cut.n_thresholds,
    )  # fmt: skip
    if mode == "auto":
        mode = "dense" if n <= settings.dense_auto_max_items else "sparse"
    if mode == "dense":
        check_dense_route("dpp", n, what="Exact DPP consensus")
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


def _size_dpp(dpp: SpectralDPP, size: dict, info: dict) -> SpectralDPP:
    """The DPP of the runs: ``L`` scaled to a set mean draw, to ``reference_size`` items,
    or as it is (the paper)."""
    n = dpp.n_items
    if size["expected_size"] is not None:
        dpp = dpp.with_expected_size(size["expected_size"])
    elif size["reference_size"] is not None and size["reference_size"] < n:
        # L / n approximates the kernel's integral operator: L * m / n is the kernel of
        # m items drawn from the same distribution, whatever n is
        dpp = dpp.scaled(size["reference_size"] / n)
    if dpp.scale != 1.0:
        info["kernel_scale"] = dpp.scale
    info["expected_size"] = dpp.expected_size
    return dpp


def _draw_runs(X, sampler: str, runs, rngs, L, F, k_max: int, size: dict, info, lap):
    """``(n, R)`` labels of the runs and the number of generators (clusters) of each."""
    if sampler == "kmeans++":
        run_labels = np.empty((X.shape[0], len(rngs)), dtype=np.int32)
        for r in runs:
            k = int(rngs[r].integers(1, k_max + 1))
            run_labels[:, r] = _kmeans_run(X, k, int(rngs[r].integers(2**31)))
        return run_labels, run_labels.max(axis=0).astype(np.int64) + 1
    if sampler == "dpp":
        dpp = SpectralDPP.from_kernel(L) if F is None else SpectralDPP.from_features(F)
        dpp = _size_dpp(dpp, size, info)
        lap("eigendecomposition")
        generators = dpp.sample_many((rngs[r] for r in runs), nonempty=True)
        del dpp
    else:
        generators = [sample_uniform(X.shape[0], k_max, rngs[r]) for r in runs]
    run_sizes = np.array([g.size for g in generators], dtype=np.int64)
    lap("sampling")
    return voronoi_labels(X, generators), run_sizes


def _consensus_forest(run_labels, X, mode, n_neighbors, n_random, seed, floor, n_thresholds):
    """Maximum spanning forest of the consensus of the runs, and the thresholds to cut."""
    n_runs = run_labels.shape[1]
    if mode == "dense":
        counts, _ = coassociation(run_labels, mode="dense")
        values = _pair_values(counts, n_runs)
        consensus = counts.astype(np.float64)
        del counts
        consensus /= n_runs
    else:
        consensus = sparse_consensus(
            run_labels, X, n_neighbors=n_neighbors, n_random=n_random, random_state=seed
        )
        values = np.unique(consensus.data)
    thresholds = candidate_thresholds(values, floor, n_thresholds)
    if thresholds.size == 0:
        raise ValueError(
            f"No pair of items reaches consensus tau={floor} (largest observed "
            f"{values.max() if values.size else 0:.3g}): lower tau to at most that; if the "
            "runs agree little on every pair, use more runs or cluster a representation "
            "(e.g. a PCA)."
        )
    return maximum_spanning_forest(consensus), thresholds


def _pair_values(counts: np.ndarray, n_runs: int) -> np.ndarray:
    """The distinct values of ``counts / n_runs`` over the pairs ``i < j``, ascending.

    As ``np.unique((counts / n_runs)[np.triu_indices(n, 1)])`` (the same bits) for a
    symmetric ``counts`` in ``0..n_runs``, from a histogram of row blocks: no sort of
    the n²/2 pairs (it held Ctrl-C for half a second at 3,000 items) and no index
    arrays. Off the diagonal, a count occurs above it iff below it.
    """
    hist = -np.bincount(np.diagonal(counts), minlength=n_runs + 1)
    for start in range(0, counts.shape[0], _HIST_ROWS):
        hist += np.bincount(counts[start : start + _HIST_ROWS].ravel(), minlength=n_runs + 1)
    return np.flatnonzero(hist).astype(np.float64) / n_runs


#: Rows of the count matrix per histogram block in :func:`_pair_values`.
_HIST_ROWS = 256


def _choose(table: pd.DataFrame, n_clusters: int | None) -> tuple[int, str]:
    """Row of the chosen cut and one sentence saying why."""
    kvi = table["kvi"].to_numpy()
    ks = table["n_clusters"].to_numpy()
    theta = table["threshold"].to_numpy()
    if n_clusters is None:
        best = int(np.nanargmin(kvi)) if np.any(np.isfinite(kvi)) else 0
        return best, (
            f"{ks[best]} clusters: the lowest kernel validity index (KVI {kvi[best]:.3g}, "
            f"threshold {theta[best]:.3g}) among {len(table)} cuts of the consensus at "
            f"thresholds {theta.min():.3g}..{theta.max():.3g}"
        )
    gap = np.abs(ks - n_clusters)
    near = np.flatnonzero(gap == gap.min())
    # several thresholds can give that many clusters: the paper's criterion decides
    scored = near[np.isfinite(kvi[near])]
    best = int(scored[np.argmin(kvi[scored])]) if scored.size else int(near[0])
    reason = f"{ks[best]} clusters: n_clusters={n_clusters} asked, cut at θ = {theta[best]:.3g}"
    if ks[best] != n_clusters:
        found = np.unique(ks)
        reason += (
            f"; no cut of the consensus has exactly {n_clusters} clusters (cuts have "
            f"{', '.join(map(str, found))}; components smaller than n**a are merged), "
            "the nearest is returned"
        )
    return best, reason


def _values_reaching(tau: float, n_runs: int) -> int:
    """How many consensus values ``j / n_runs`` (``j = 0..n_runs``) are at least ``tau``."""
    return n_runs - int(np.ceil(tau * n_runs - 1e-9)) + 1


def warn_no_choice(table: pd.DataFrame, cut: DPPCut, n_clusters, n_runs: int) -> None:
    """Warn when one or two consensus values reach tau and cut the same clusters: KVI had
    nothing to choose from (a user trial's 3 clear groups of 500 log-expression features
    got 7 clusters from the one value above tau, 0.605: DPP's runs on many features rarely
    agree). Many thresholds that all give the same cut are the opposite, a stable one; a
    subset of thresholds (``n_thresholds``) or a given K says nothing of it."""
    theta = table["threshold"].to_numpy()
    if n_clusters is not None or cut.n_thresholds is not None or len(theta) > 2:
        return
    if table["n_clusters"].nunique() != 1:
        return
    # a consensus value is a multiple of 1 / n_runs: few runs allow few values above tau
    possible = _values_reaching(cut.tau, n_runs)
    if possible > 2:
        advice = (
            "the runs agree too little. Cluster a representation (e.g. a PCA), lower tau, "
            "or give n_clusters."
        )
    elif _values_reaching(cut.tau, max(200, 10 * n_runs)) > 2:
        advice = (
            f"with n_runs={n_runs}, at most {possible} value(s) can reach tau={cut.tau:g}. "
            "Use more runs (the default is 200), or give n_clusters."
        )
    else:  # tau at or near 1: more runs would not help
        advice = (
            f"tau={cut.tau:g} leaves at most {possible} value(s) above it whatever the number "
            "of runs. Lower tau, or give n_clusters."
        )
    warn(
        f"dpp: only {len(theta)} consensus value(s) reach tau (largest {theta.max():.3g}), "
        f"and they cut the same {int(table['n_clusters'].iloc[0])} clusters, so the number "
        f"of clusters was not chosen: {advice}",
        UserWarning,
    )


def _select(partitions: list, thresholds: np.ndarray, tau: float, L, F, n_clusters):
    """The candidates' table, the chosen row, KVI's alpha and the reason for the choice.

    The validity indices are computed for the cuts at ``θ ≥ tau`` and, when
    ``n_clusters`` is given, for the cuts nearest to it (the others' are NaN).
    """
    ks = np.array([int(p.max()) + 1 for p in partitions], dtype=np.int64)
    scored = thresholds >= tau - 1e-12
    if n_clusters is not None:
        gap = np.abs(ks - n_clusters)
        scored |= gap == gap.min()
    rows = np.flatnonzero(scored)
    # score each distinct partition once (neighbouring thresholds often agree)
    keys = [partitions[i].tobytes() for i in rows]
    unique_keys = list(dict.fromkeys(keys))
    first = {key: rows[keys.index(key)] for key in unique_keys}
    scores = validity_indices([partitions[first[key]] for key in unique_keys], kernel=L, features=F)
    where = np.array([unique_keys.index(key) for key in keys], dtype=np.int64)
    table = pd.DataFrame({"threshold": thresholds, "n_clusters": ks})
    for column in ("kvi", "sr", "within", "between", "btilde"):
        values = np.full(len(partitions), np.nan)
        values[rows] = scores[column][where]
        table[column] = values
    best, reason = _choose(table, n_clusters)
    table["chosen"] = np.arange(len(table)) == best
    return table, best, scores["alpha"], reason


def _solve(
    X, n_runs, sampler, cut: DPPCut, mode, k_max, size, route: DPPRoute, random_state, progress,
    n_clusters,
) -> DPPConsensus:  # fmt: skip
    """:func:`dpp_consensus` on validated arguments: kernel, runs, consensus, cut, choice."""
    n = X.shape[0]
    lap = Laps()
    sigma2 = rbf_bandwidth(X)
    seeds = seed_sequence(random_state).spawn(n_runs + 2)
    info: dict = {"k_max": k_max}
    L, F = _kernel(X, mode, sigma2, cut.s, route.n_components, seeds[-1], info)
    lap("kernel")
    rngs = [np.random.default_rng(q) for q in seeds[:n_runs]]
    runs = progress_bar(range(n_runs), desc=f"{sampler} runs", progress=progress)
    run_labels, run_sizes = _draw_runs(X, sampler, runs, rngs, L, F, k_max, size, info, lap)
    lap("partitions")
    # a given K may need cuts below tau (fewer clusters): then every observed value is cut
    floor = cut.tau if n_clusters is None else 0.0
    forest, thresholds = _consensus_forest(
        run_labels, X, mode, route.n_neighbors, route.n_random, seeds[-2], floor, cut.n_thresholds
    )
    lap("consensus")
    partitions = threshold_partitions(forest, n, thresholds, n**cut.a)
    lap("thresholds")
    table, best, info["alpha"], info["reason"] = _select(
        partitions, thresholds, cut.tau, L, F, n_clusters
    )
    warn_no_choice(table, cut, n_clusters, n_runs)
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


@takes_records(sampling=DPPSampling, cut=DPPCut, route=DPPRoute)
@doc_params(**DPP_PARAMS)
def dpp_consensus(
    X: np.ndarray,
    n_runs: int = 200,
    *,
    sampling: DPPSampling | None = None,
    cut: DPPCut | None = None,
    n_clusters: int | str | None = None,
    route: DPPRoute | None = None,
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
    {dpp_n_runs}
    sampling
        How each run draws its generators: a :class:`DPPSampling` (``sampler``,
        ``k_max``, ``reference_size``, ``expected_size``); ``None``: its defaults.
    cut
        Where the consensus is cut: a :class:`DPPCut` (``a``, ``tau``, ``s``,
        ``n_thresholds``); ``None``: the paper's values.
    {dpp_n_clusters}
    route
        The exact or the large-n route: a :class:`DPPRoute` (``mode``,
        ``n_components``, ``n_neighbors``, ``n_random``); ``None``: its defaults.
    {random_state}
        Every run gets its own child stream, so results do not depend on chunking.
    {progress}

    Returns
    -------
    DPPConsensus
        Final labels and memberships, the candidates' table, the runs and ``params``.

    Examples
    --------
    >>> import numpy as np
    >>> from scconsensus.core.dpp import DPPSampling, dpp_consensus
    >>> rng = np.random.default_rng(0)
    >>> X = np.r_[rng.normal(0, 0.3, (40, 2)), rng.normal(4, 0.3, (40, 2))]
    >>> res = dpp_consensus(X, n_runs=50, random_state=0)
    >>> int(res.labels.max()) + 1
    2
    >>> res = dpp_consensus(X, 50, sampling=DPPSampling(sampler="uniform"), random_state=0)
    """
    sampling = check_options(sampling, DPPSampling, "sampling")
    cut, route = check_options(cut, DPPCut, "cut"), check_options(route, DPPRoute, "route")
    X, mode, k_max = _check_inputs(X, sampling, cut, route, n_runs)
    requested, n_clusters = n_clusters, check_n_clusters(n_clusters, X.shape[0], nearest=True)
    size = {
        "expected_size": sampling.expected_size,
        "reference_size": _check_reference_size(sampling.reference_size),
    }
    res = _solve(
        X,
        int(n_runs),
        sampling.sampler,
        cut,
        mode,
        k_max,
        size,
        route,
        random_state,
        progress,
        n_clusters,
    )
    res.params = {"n_runs": n_runs, **options_record(sampling, cut)}
    res.params.update(k_max=k_max, n_clusters=requested, **options_record(route))
    res.params["random_state"] = random_state_record(random_state)
    return res
