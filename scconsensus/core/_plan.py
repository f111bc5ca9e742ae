"""What a model-based consensus (PCC, PLA) fits: K, the partitions, the start.

The three are decided together because they must agree: the number of
clusters ``K`` (given, or chosen from the ensemble by :func:`select_k`), the
partitions whose resolution matches ``K`` (:func:`matched_partitions`), and a
deterministic start at ``K`` (the spectral consensus of the whole ensemble,
:func:`spectral_consensus`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._docs import doc_params
from .._validation import RandomState, check_choice, check_labels, check_n_clusters
from ._resolution import KSelection, matched_partitions, select_k
from ._spectral import partition_sizes, spectral_consensus

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
    """

    n_clusters: int
    columns: np.ndarray
    start: np.ndarray | None
    selection: KSelection | None
    note: str = ""


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
    coverable = (labels >= 0).any(axis=1)
    covered = (labels[:, columns] >= 0).any(axis=1)
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


def _far_note(sizes: np.ndarray, columns: np.ndarray, K: int) -> str:
    """Why the fit uses partitions far from ``K`` and what to build instead, or ``""``.

    Counts what the ensemble holds (the advice must not repeat how the user built it,
    which this function cannot see): partitions of about ``K`` clusters (the window of
    :func:`matched_partitions`), those of exactly ``K``, and the farthest one used.
    """
    far = int(np.abs(sizes[columns] - K).max())
    if far <= K / 4:
        return ""
    near = int(((sizes * 1.25 >= K) & (sizes <= K * 1.25)).sum())
    exact = int((sizes == K).sum())
    low, high = max(2, K - K // 4 - 1), K + K // 4 + 1
    return (
        f"only {near} of the ensemble's {sizes.size} partition(s) have about {K} clusters "
        f"({exact} exactly {K}), so the fit also uses partitions with up to {far} cluster(s) "
        f"more or fewer; the consensus model fits best to partitions near its K: rebuild "
        f"the ensemble with more partitions (n_partitions) or a k range around {K}, "
        f"e.g. k=({low}, {high})"
    )


@doc_params()
def plan_consensus(
    labels: np.ndarray,
    n_clusters: int | str = "auto",
    *,
    partitions: str = "matched",
    init: str = "spectral",
    random_state: RandomState = 0,
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

    Returns
    -------
    ConsensusPlan
        ``K``, the partitions to fit and the starting memberships.

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
    selection = None
    if isinstance(n_clusters, str) and n_clusters == "auto":
        selection = select_k(labels, random_state=random_state)
        K = selection.n_clusters
    else:
        K = check_n_clusters(n_clusters, labels.shape[0])
    sizes = partition_sizes(labels)
    columns = np.arange(sizes.size)
    note = ""
    if partitions == "matched":
        columns = _cover_items(labels, sizes, K, matched_partitions(sizes, K))
        note = _far_note(sizes, columns, K)
    start = None
    if init == "spectral":
        start = smoothed_one_hot(spectral_consensus(labels, K, random_state=random_state), K)
    elif init == "ensemble":
        # the leaf module, not core.pcc, whose pcc_consensus imports this module
        from .pcc._init import ensemble_init

        start = ensemble_init(labels[:, columns], K)
    return ConsensusPlan(n_clusters=K, columns=columns, start=start, selection=selection, note=note)
