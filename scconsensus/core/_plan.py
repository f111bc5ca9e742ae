"""What a model-based consensus (PCC, PLA) fits: K, the partitions, the start.

The three are decided together because they must agree: the number of
clusters ``K`` (given, or chosen from the ensemble by :func:`select_k`), the
partitions whose resolution matches ``K`` (:func:`matched_partitions`), and a
deterministic start at ``K`` (the spectral consensus of the whole ensemble,
:func:`spectral_consensus`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numba
import numpy as np

from .._docs import doc_params
from .._validation import (
    RandomState,
    check_choice,
    check_labels,
    check_n_clusters,
    check_number,
    k_hint,
)
from ._laps import Laps
from ._matching import _window, matched_partitions
from ._resolution import KSelection, choose_k
from ._spectral import _partition_sizes, spectral_consensus

__all__ = ["ConsensusPlan", "plan_consensus", "smoothed_one_hot"]

INITS = ("spectral", "random", "ensemble")
PARTITIONS = ("matched", "all")


@dataclass
class ConsensusPlan:
    """The decisions taken before a consensus model is fitted.

    Attributes
    ----------
    n_clusters
        ``K``.
    columns
        Indices of the partitions the model is fitted to.
    start
        ``(n_items, K)`` starting memberships, or ``None`` for random starts.
    selection
        The evidence for ``K`` when it was chosen from the data, else ``None``.
    note
        A warning for the user (partitions far from ``K``), or ``""``.
    fit_indices
        The items the model is fitted on when a subset is (``start`` has their rows
        only), else ``None``.
    seconds
        Time spent on each decision (``"choose K"``, ``"partitions"``, ``"start"``).
    """

    n_clusters: int
    columns: np.ndarray
    start: np.ndarray | None
    selection: KSelection | None
    note: str = ""
    fit_indices: np.ndarray | None = None
    seconds: dict = field(default_factory=dict)


def smoothed_one_hot(hard: np.ndarray, n_clusters: int, smoothing: float = 0.1) -> np.ndarray:
    """``(1 - smoothing) one_hot + smoothing / K``: inside the simplex, where KL is finite.

    Exact vertices would put ``y_i . y_j = 0`` on pairs the ensemble sometimes
    co-clusters (an infinite KL gradient); exactly uniform rows are a stationary
    point of PCC.

    Parameters
    ----------
    hard
        ``(n_items,)`` hard labels ``0..K-1``.
    n_clusters
        ``K``, the number of columns.
    smoothing
        Mass spread evenly over all ``K`` clusters.

    Returns
    -------
    numpy.ndarray
        ``(n_items, K)`` memberships, rows on the simplex.
    """
    K = int(n_clusters)
    Y = np.full((hard.shape[0], K), smoothing / K)
    Y[np.arange(hard.shape[0]), hard] += 1.0 - smoothing
    return Y


def _cover_items(labels, sizes, K, columns) -> np.ndarray:
    """Add the next-nearest partitions until every item sampled at all is in one of them.

    An item no fitted partition sampled has no evidence and would get no label.
    """
    covered, coverable = _coverage(labels, columns)
    if (covered >= coverable).all():
        return columns
    chosen = set(columns.tolist())
    for col in np.argsort(np.abs(sizes - K), kind="stable"):
        if col in chosen:
            continue
        chosen.add(int(col))
        covered |= labels[:, col] >= 0
        if (covered >= coverable).all():
            break
    return np.array(sorted(chosen), dtype=np.int64)


@numba.njit(cache=True)
def _coverage(labels, columns):  # pragma: no cover - compiled
    """Per item: sampled by one of ``columns``, sampled by any partition. One pass that
    stops at each row's first sampled entry: NumPy's two boolean ``n x R`` masks took
    0.5 s at 10^6 items and 100 partitions."""
    n = labels.shape[0]
    covered = np.zeros(n, dtype=np.bool_)
    coverable = np.zeros(n, dtype=np.bool_)
    for i in range(n):
        for c in columns:
            if labels[i, c] >= 0:
                covered[i] = True
                break
        if covered[i]:
            coverable[i] = True
            continue
        for r in range(labels.shape[1]):
            if labels[i, r] >= 0:
                coverable[i] = True
                break
    return covered, coverable


def _far_note(sizes: np.ndarray, columns: np.ndarray, K: int, labels: np.ndarray) -> str:
    """Why the fit uses partitions far from ``K`` and what to build instead, or ``""``.

    Counts what the ensemble holds (the advice must not repeat how the user built it,
    which this function cannot see): partitions of about ``K`` clusters (the window of
    :func:`matched_partitions`), those of exactly ``K``, and the farthest one used. The
    k range advised stays below the items a partition samples (the median over the
    partitions: tl.ensemble refuses more clusters than that).
    """
    far = int(np.abs(sizes[columns] - K).max())
    if far <= K / 4:
        return ""
    n_sampled = int(np.median((labels >= 0).sum(axis=0)))
    near = _window(sizes, K).size
    exact = int((sizes == K).sum())
    low, high = max(2, K - K // 4 - 1), min(K + K // 4 + 1, n_sampled - 1)
    head = (
        f"only {near} of the ensemble's {sizes.size} partition(s) have about {K} clusters "
        f"({exact} exactly {K}), so the fit also uses partitions with up to {far} cluster(s) "
        f"more or fewer; the consensus model fits best to partitions near its K: "
    )
    if K >= n_sampled:  # no partition of n_sampled items holds K clusters
        return head + (
            f"with {n_sampled} items in a partition, ask for fewer clusters than {K} "
            "(or subsample a larger fraction of the items)"
        )
    if near:  # more partitions over the same k add some near K
        return head + (
            f"rebuild the ensemble with more partitions (n_partitions) or a k range around "
            f"{K}, e.g. k=({low}, {high})"
        )
    # none near K (a user trial: k=2 partitions, K=3): only another k range reaches it
    return head + f"rebuild the ensemble with a k range around {K}, e.g. k=({low}, {high})"


@doc_params()
def plan_consensus(
    labels: np.ndarray,
    n_clusters: int | str = "auto",
    *,
    partitions: str = "matched",
    init: str = "spectral",
    random_state: RandomState = 0,
    subset: Callable[[int], np.ndarray | None] | None = None,
    smoothing: float = 0.1,
) -> ConsensusPlan:
    """Choose ``K``, the partitions to fit and the start for PCC or PLA.

    Parameters
    ----------
    {labels}
    {n_clusters}
    partitions
        ``"matched"``: the partitions whose number of clusters is near ``K``
        (:func:`matched_partitions`); ``"all"``: every partition.
    init
        ``"spectral"``: smoothed one-hot of :func:`spectral_consensus` at ``K``
        (deterministic for a seed); ``"ensemble"``: of the matched partition
        closest to ``K``; ``"random"``: no start (the solver draws its own).
    {random_state}
        Here it seeds the choice of ``K`` and the spectral start.
    subset
        Given ``K``, the items the model will be fitted on (``None``: all), e.g. a
        random subset of a million cells: the start is computed on them only, so that
        planning costs what the fit does (:mod:`scconsensus.core._subset`).
    smoothing
        Share of the spectral start spread uniformly (:func:`smoothed_one_hot`), in
        ``(0, 1)``.

    Returns
    -------
    ConsensusPlan
        ``K``, the partitions to fit, the fitted items and the starting memberships.

    Examples
    --------
    >>> import numpy as np
    >>> from scconsensus.core import plan_consensus
    >>> labels = np.array([[0, 1, 0, 2]] * 5 + [[1, 0, 1, 0]] * 5)
    >>> plan = plan_consensus(labels, 2)
    >>> plan.n_clusters, plan.start.argmax(axis=1).tolist()
    (2, [0, 0, 0, 0, 0, 1, 1, 1, 1, 1])
    """
    labels = check_labels(labels)
    check_choice(partitions, PARTITIONS, "partitions")
    check_choice(init, INITS, "init")
    _check_smoothing(smoothing)
    return plan_checked(labels, n_clusters, partitions, init, random_state, subset, smoothing)


def plan_checked(
    labels: np.ndarray,
    n_clusters: int | str,
    partitions: str,
    init: str,
    random_state: RandomState,
    subset: Callable[[int], np.ndarray | None] | None,
    smoothing: float = 0.1,
    numbered: bool | None = None,
) -> ConsensusPlan:
    """:func:`plan_consensus` of checked labels, ``partitions`` and ``init``; ``numbered``
    as :func:`~scconsensus.core._labels.compact_labels` takes it (``None``: checked here)."""
    lap = Laps(time.process_time)
    selection = None
    if isinstance(n_clusters, str) and n_clusters == "auto":
        selection = choose_k(labels, random_state=random_state, numbered=numbered)
        K = selection.n_clusters
    else:
        K = check_n_clusters(n_clusters, labels.shape[0], hint=k_hint(n_clusters))
    lap("choose K")
    fit_idx = None if subset is None else subset(K)
    columns, note = _columns(labels, K, partitions, numbered)
    lap("partitions")
    fitted = labels if fit_idx is None else labels[fit_idx]
    start = None
    if init == "spectral":
        hard = spectral_consensus(fitted, K, random_state=random_state)
        start = smoothed_one_hot(hard, K, smoothing)
    elif init == "ensemble":
        # the leaf module, not core.pcc, whose pcc_consensus imports this module
        from .pcc._init import ensemble_init

        start = ensemble_init(fitted[:, columns], K)
    lap("start")
    return ConsensusPlan(K, columns, start, selection, note, fit_idx, lap.timings)


def _check_smoothing(smoothing: float) -> None:
    """Refuse a start off the simplex's interior: 0 leaves its vertices (an infinite KL
    gradient), 1 uniform rows (a stationary point), others negative memberships."""
    if not 0.0 < check_number(smoothing, "smoothing") < 1.0:
        raise ValueError(
            f"smoothing must lie strictly between 0 and 1 (the share of the spectral start "
            f"spread uniformly; PCC uses 0.1, PLA 0.9), got {smoothing!r}."
        )


def _columns(labels: np.ndarray, K: int, partitions: str, numbered) -> tuple[np.ndarray, str]:
    """The partitions to fit (every item sampled at all in one of them) and a note."""
    sizes = _partition_sizes(labels, numbered)
    if partitions == "all":
        return np.arange(sizes.size), ""
    columns = _cover_items(labels, sizes, K, matched_partitions(sizes, K))
    return columns, _far_note(sizes, columns, K, labels)
