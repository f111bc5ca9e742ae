"""Resolution of an ensemble: how many groups are stable.

**Choosing K.** Let ``E_K`` be the partitions with at least ``K`` clusters. If
the data hold ``G`` groups that partitions finer than ``G`` rarely cut across,
the normalised co-association of ``E_K`` has ``K`` eigenvalues near 1 for every
``K <= G`` (``λ_K(E_K)`` is one minus a normalised cut between ``K`` groups),
and ``λ_{G+1}(E_{G+1})`` drops: a ``(G+1)``-th group would have to split a group
that finer partitions cut in ever different places. We take the running minimum
of ``λ_K(E_K)`` over ``K`` (the sequence cannot rise in expectation: fewer
partitions, more groups; bumps are resampling noise) and choose the smallest
``K`` after which it drops by at least ``threshold`` and stays down for the
next two ``K`` (one low value is resampling noise), so a group is only split
off when separating it costs a visible share of the co-association. When no drop
reaches the threshold, the largest drop wins. Measured on the accuracy panel
(``benchmarks/accuracy.py``) against the incidence eigengap, the dendrogram
lifetime of Fred & Jain (2005), modularity of the co-association graph and
PCC's clusters emptied from a large K.

**A weak coarse level** is read as :mod:`scconsensus.core._splits` says.

**The ensemble's finest k** is no candidate (nothing finer shows whether it splits) unless
every partition has it; with no split up to the last candidate and the evidence unbroken
there, the next ``K`` that keeps it is chosen as a lower bound, with a warning. So is the
last ``K`` that keeps it when each of the last three candidates keeps more evidence than
the chosen ``K`` by more than the threshold, and more than ``HELD``, with no split after:
coarse partitions of more clear groups than the ensemble can judge merge them anew each
time (25 equal groups of 40 cells, k up to 28: ``λ`` 0.65-0.75 up to ``K`` = 8, 0.84-0.87
at 17-22), and a chance drop at ``K`` = 2 was the answer. On the panel the chosen split
keeps 0.13-0.36 more than the last three candidates.

Which partitions a fit at ``K`` reads: :mod:`scconsensus.core._matching`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd

from .._docs import doc_params
from .._validation import (
    RandomState,
    check_fraction,
    check_int,
    check_labels,
    seed_sequence,
)
from .._warnings import warn
from ._spectral import _partition_sizes, incidence_spectrum, nested_spectra
from ._splits import first_level, span, stable_splits

__all__ = ["KSelection", "k_evidence", "select_k"]


@dataclass
class KSelection:
    """The number of clusters chosen from an ensemble, with the evidence per candidate.

    Attributes
    ----------
    n_clusters
        The chosen ``K``.
    table
        One row per candidate ``K``: ``eigenvalue`` (``λ_K(E_K)``), ``envelope``
        (its running minimum), ``drop`` (``envelope[K]`` minus the larger
        eigenvalue of ``K + 1`` and ``K + 2``),
        ``n_partitions`` (size of ``E_K``) and ``chosen``. Consecutive ``K`` whose drop
        reaches ``threshold`` are one split, a stable resolution (:attr:`splits`), and so
        is a run one ``K`` after another when it is at least as strong.
    threshold
        The drop a split had to reach.
    reason
        One sentence saying why ``n_clusters`` was chosen (also logged), naming the
        other stable resolutions.
    """

    n_clusters: int
    table: pd.DataFrame
    threshold: float
    reason: str

    @property
    def splits(self) -> pd.DataFrame:
        """Every stable resolution, one row per split, the strongest first.

        A split is a run of consecutive ``K`` whose drop reaches the threshold (a group
        that separates gradually drops at several ``K``); a run one ``K`` after it that
        is at least as strong is part of it. Columns: ``n_clusters``, the
        ``K`` the rule reads the split at (the chosen ``K`` for its own split; module
        docstring), ``k_first`` and ``k_last``, the span of ``K`` it drops over, and
        ``strength``, the fall of the running minimum across it (its drop when it spans
        one ``K``). Empty when no drop reached the threshold. Read from ``table`` and
        ``threshold`` once, at the first access (as ``reason`` was at construction);
        each access returns a copy, which the caller may change.
        """
        return self._splits.copy()

    @cached_property
    def _splits(self) -> pd.DataFrame:
        # the reason, the candidates and tl's record each read the splits: one
        # reading of the table (a few ms of pandas each) serves them all
        return stable_splits(self.table, self.threshold)

    @property
    def candidates(self) -> list[int]:
        """Every stable resolution as one ``K`` per split (:attr:`splits`), the strongest
        first (biology nests groups: lineages, types, states). The chosen ``K`` is among
        them unless no drop reached the threshold or ``K`` is a lower bound."""
        return [int(K) for K in self._splits["n_clusters"]]


#: :func:`select_k`'s defaults: the drop a split must reach, the items it reads.
THRESHOLD, MAX_ITEMS = 0.05, 5_000

#: Partitions finer than a candidate K needed to judge it, and below which an ensemble
#: without a clear split gets a warning instead of a silent fallback.
MIN_PARTITIONS = 5

#: Share of the ensemble (at least ``MIN_PARTITIONS``) finer than a K to judge it. 5 % (10 %
#: until 2026-11-26, when the table stopped before 20 clear groups of 1,000 cells, k up to
#: 28, and a chance drop at K = 2 was chosen). The panel's K are the same at 5 and 10 %.
JUDGE_SHARE = 0.05

#: ``λ`` the last three candidates keep for a lower bound past them (clear groups: 0.81-0.93).
HELD = 0.75


def _candidate_cap(sizes: np.ndarray, n_items: int, max_k: int | None) -> int:
    """Largest K that can be judged: enough partitions finer than K to see the next
    split, or, in an ensemble at one resolution ``k``, ``K = k`` itself (it can then
    still choose ``k``).

    An ensemble's finest ``k`` is no candidate when coarser partitions exist: its drop
    would be to no partition at all (``λ = 0``), a split of full strength that the data
    never showed (``k=(2, 18)`` on 20 types in 4 lineages chose 18, not 4).
    """
    # an ensemble of fewer than MIN_PARTITIONS partitions judges a K by all of them, so
    # that a unanimous one (every partition cuts the same k groups) can choose K = k
    need = judging(sizes.size)
    one_resolution = sizes.min() == sizes.max()
    cap = 2
    for K in range(2, int(sizes.max()) + 1):
        finer, here = int((sizes >= K + 1).sum()), int((sizes >= K).sum())
        if K < n_items and (finer >= need or (one_resolution and here >= need)):
            cap = K
    if max_k is not None:
        cap = min(cap, int(max_k))
    return max(cap, 2)


def judging(n_partitions: int) -> int:
    """Partitions needed to judge a ``K``: ``JUDGE_SHARE`` of the ensemble, at least
    ``MIN_PARTITIONS``, at most all of them."""
    return min(max(MIN_PARTITIONS, int(np.ceil(JUDGE_SHARE * n_partitions))), n_partitions)


def _evidence(labels: np.ndarray, sizes: np.ndarray, Ks: np.ndarray, seed):
    """``λ_K(E_K)`` for each candidate ``K``, and how many partitions have ``≥ K`` clusters.

    Candidates with the same ``E_K`` (no partition has exactly ``K - 1`` clusters) share
    one spectrum.
    """
    eig = np.zeros(Ks.size)
    n_parts = np.array([int((sizes >= K).sum()) for K in Ks], dtype=np.int64)
    counts = np.unique(n_parts[n_parts > 0])
    groups = [np.flatnonzero(n_parts == count) for count in counts]
    # partitions by decreasing size: each E_K is the first n_parts[K] of them
    order = np.argsort(-sizes, kind="stable")
    nested = nested_spectra(
        labels, order, [(int(c), int(Ks[g[-1]])) for c, g in zip(counts, groups, strict=True)]
    )
    for i, same in enumerate(groups):
        if nested is None:
            cols = np.flatnonzero(sizes >= Ks[same[0]])
            rng = np.random.default_rng(seed)
            w, _ = incidence_spectrum(labels[:, cols], int(Ks[same[-1]]), random_state=rng)
        else:
            w = nested[i]
        eig[same] = w[Ks[same] - 1]
    return eig, n_parts


@doc_params()
def select_k(
    labels: np.ndarray,
    *,
    max_k: int | None = None,
    threshold: float = THRESHOLD,
    max_items: int = MAX_ITEMS,
    random_state: RandomState = 0,
) -> KSelection:
    """Choose the number of stable groups of an ensemble (see the module docstring).

    Parameters
    ----------
    {labels}
        The partitions should span several numbers of clusters (the default
        ensemble of :func:`scconsensus.tl.ensemble` does): partitions at one ``k``
        cannot show more than ``k`` groups, and a ``UserWarning`` says so when ``k``
        itself is chosen; the ensemble's finest ``k`` is no candidate otherwise.
    max_k
        Largest ``K`` considered, at least 2 (default: as far as the ensemble's
        partitions allow judging, i.e. while at least 5 % of them, and at least 5,
        are finer; an ensemble of fewer than 5 partitions needs all of them).
    threshold
        Smallest drop of the (enveloped) eigenvalue that counts as a split, in
        ``(0, 1]``. With no drop this large, a ``UserWarning`` says that no ``K`` is
        stable (or, under 5 partitions, that they are too few to choose ``K``).
    max_items
        Items drawn at random to compute the evidence (the number of groups is
        a property of the whole; this bounds the cost for large data).
    {random_state}
        Here it seeds the item draw and the eigensolver.

    Returns
    -------
    KSelection
        The chosen ``K``, the evidence table and the reason.

    Warns
    -----
    UserWarning
        When ``K`` is only a lower bound (build the ensemble over larger ``k``), when every
        partition has one ``k`` and ``K`` is it, when no split reaches the threshold (no
        ``K`` is stable), and when under 5 partitions show no split.

    Examples
    --------
    >>> import numpy as np
    >>> from scconsensus.core import select_k
    >>> rng = np.random.default_rng(0)
    >>> truth = np.repeat(np.arange(4), 30)
    >>> cols = [truth * 3 + rng.integers(0, k, 120) for k in (1, 2, 3) for _ in range(8)]
    >>> select_k(np.stack(cols, axis=1)).n_clusters
    4
    """
    labels = check_labels(labels)
    # drops are of eigenvalues in [0, 1]: a threshold outside (0, 1] decides nothing
    threshold = check_fraction(threshold, "threshold")
    if max_k is not None:
        max_k = check_int(max_k, "max_k", 2)
    max_items = check_int(max_items, "max_items", 2)
    return choose_k(
        labels, max_k=max_k, threshold=threshold, max_items=max_items, random_state=random_state
    )


def choose_k(
    labels: np.ndarray,
    *,
    max_k: int | None = None,
    threshold: float = THRESHOLD,
    max_items: int = MAX_ITEMS,
    random_state: RandomState = 0,
    numbered: bool | None = None,
) -> KSelection:
    """:func:`select_k` on checked labels and arguments; ``numbered`` as
    :func:`~scconsensus.core._labels.compact_labels` takes it (``None``: checked here),
    used when all items are read."""
    seeds = seed_sequence(random_state).spawn(2)
    labels, numbered = _drawn(labels, max_items, seeds[0], numbered)
    if not (labels >= 0).any():
        raise ValueError(
            "No partition of the ensemble labels any item (every entry is -1, 'not "
            "sampled'): there is nothing to choose a number of clusters from. Build the "
            "ensemble with tl.ensemble, or check the labels passed."
        )
    sizes = _partition_sizes(labels, numbered)
    if sizes.max() < 2:
        raise ValueError(
            "Every partition of the ensemble has a single cluster: no structure to choose a "
            "number of clusters from. Build it with k >= 2, or check for identical items."
        )
    Ks = np.arange(2, _candidate_cap(sizes, labels.shape[0], max_k) + 3)
    eig, n_parts = _evidence(labels, sizes, Ks, seeds[1])
    envelope = np.minimum.accumulate(eig)
    # a split counts when the next two candidates both stay below: one low value is noise
    drop = envelope[:-2] - np.maximum(eig[1:-1], eig[2:])
    # a max_k below the finest k bounds K: the lower bound would pass it
    finest = int(sizes.max()) if max_k is None or max_k >= sizes.max() else 0
    K, reason = _choose(
        Ks[:-2],
        drop,
        envelope[:-2],
        threshold,
        sizes.size,
        one_resolution=sizes.min() == sizes.max(),
        finest=finest,
        beyond=eig[-2:],
    )
    K, reason = _past_the_candidates(
        K, reason, Ks, eig, drop, finest=finest, n_partitions=sizes.size, threshold=threshold
    )
    _warn_arbitrary(K, reason, threshold)
    table = _table(Ks[:-2], eig[:-2], envelope[:-2], drop, n_parts[:-2], K)
    if K > Ks[-3]:  # a lower bound past the candidates: its row, without a drop
        at = K - 2
        row = (eig[at], envelope[at], np.nan, n_parts[at])
        bound = _table(np.array([K]), *map(np.atleast_1d, row), K)
        table = pd.concat([table, bound], ignore_index=True)
    return _with_candidates(KSelection(int(K), table, threshold, reason))


def _drawn(labels: np.ndarray, max_items: int, seed, numbered: bool | None):
    """``(labels, numbered)`` of at most ``max_items`` items drawn at random."""
    n = labels.shape[0]
    if n <= max_items:
        return labels, numbered
    keep = np.sort(np.random.default_rng(seed).choice(n, max_items, replace=False))
    return labels[keep], None  # a subset of items may miss a cluster


def k_evidence(
    labels: np.ndarray,
    Ks: np.ndarray,
    *,
    max_items: int = MAX_ITEMS,
    random_state=0,
    judged: bool = False,
) -> np.ndarray:
    """``λ_K(E_K)`` of an ensemble for each ``K`` of ``Ks``, read as :func:`select_k` reads
    it (the same item draw and eigensolver for the same ``random_state``).

    Parameters
    ----------
    labels
        Checked ensemble labels, ``(n_items, n_partitions)``, ``-1`` where unsampled.
    Ks
        The numbers of clusters to read, each at least 2.
    max_items
        Items drawn at random to read (as :func:`select_k`).
    random_state
        Seeds the item draw and the eigensolver.
    judged
        Only where as many partitions have ``K`` clusters or more as :func:`select_k`
        needs to judge a ``K`` (5 % of them, at least 5): one or two partitions give an
        eigenvalue near 1 for nothing.

    Returns
    -------
    numpy.ndarray
        One eigenvalue per ``K``; NaN where no partition (or, ``judged``, too few) has
        ``K`` clusters or more.

    Examples
    --------
    >>> import numpy as np
    >>> from scconsensus.core import k_evidence
    >>> labels = np.repeat(np.arange(3), 10)[:, None].repeat(4, axis=1)
    >>> k_evidence(labels, [2, 3]).round(3)
    array([1., 1.])
    """
    seeds = seed_sequence(random_state).spawn(2)
    labels, numbered = _drawn(labels, max_items, seeds[0], None)
    Ks = np.asarray(Ks, dtype=np.int64)
    eig, n_parts = _evidence(labels, _partition_sizes(labels, numbered), Ks, seeds[1])
    return np.where(n_parts >= (judging(labels.shape[1]) if judged else 1), eig, np.nan)


def _table(Ks, eig, envelope, drop, n_parts, K: int) -> pd.DataFrame:
    """:attr:`KSelection.table`, one row per candidate."""
    return pd.DataFrame(
        {
            "n_clusters": Ks,
            "eigenvalue": eig,
            "envelope": envelope,
            "drop": drop,
            "n_partitions": n_parts,
            "chosen": Ks == K,
        }
    )


def _with_candidates(selection: KSelection) -> KSelection:
    """``selection`` whose reason also names the span of the chosen split, when it drops
    over several ``K``, and the other stable resolutions."""
    splits = selection.splits
    own = splits[splits["n_clusters"] == selection.n_clusters]
    for row in own[own["k_first"] != own["k_last"]].itertuples():
        # a user read K=3-7 as rejected: they are this split, read once
        # its strength, as the other resolutions are quoted (a user compared K=2's one-step
        # drop, 0.095, with K=19's strength, 0.091, where K=2's split had 0.259)
        selection.reason += (
            f"; its split drops over {span(row)}, {row.strength:.3f} in all (one split, read "
            f"at K={selection.n_clusters})"
        )
    others = splits[splits["n_clusters"] != selection.n_clusters]
    if len(others):
        listed = ", ".join(
            f"K={row.n_clusters} ({row.strength:.3f}"
            + (f", over {span(row)})" if row.k_first != row.k_last else ")")
            for row in others.itertuples()
        )
        selection.reason += f"; other stable resolutions, strongest first: {listed}"
    return selection


def _choose(
    Ks: np.ndarray,
    drop: np.ndarray,
    envelope: np.ndarray,
    threshold: float,
    n_partitions: int,
    *,
    one_resolution: bool = False,
    finest: int = 0,
    beyond: np.ndarray | None = None,
) -> tuple[int, str]:
    """``(K, reason)``: the first clear split that is not a weak coarse level, else the
    largest drop (with a warning when the partitions are too few for the fallback to
    mean anything).

    An ensemble at one resolution ``k`` has no finer partitions to show where a group
    splits: every ``E_K`` is the whole ensemble and the drops are the eigengaps of one
    matrix, which fall gradually where its clusters overlap. The largest gap then
    decides (the drop after ``k`` is to no partition at all).

    Coarser partitions present, the ensemble's ``finest`` k is no candidate (nothing
    finer shows whether it splits). When no drop reaches the threshold and the evidence
    is still unbroken at the last candidate (its running minimum at least ``1 -
    threshold``; at least ``MIN_PARTITIONS`` partitions), the data hold more groups than
    it: the larger of the next two ``K`` whose eigenvalue (``beyond``) stays within the
    threshold is chosen, with a warning that it is a lower bound.
    """
    hit = np.flatnonzero(drop >= threshold)
    if one_resolution:
        return _one_resolution(Ks, drop)
    if hit.size:
        at, note = first_level(Ks, drop, envelope, threshold)
        K = int(Ks[at])
        return K, (
            f"K={K}: the {'split' if note else 'first split'} whose normalised "
            f"co-association drops by >= {threshold:g} ({drop[at]:.3f}) when a group more "
            f"is cut{note}"
        )
    unbroken = finest > Ks[-1] and envelope[-1] >= 1.0 - threshold
    if unbroken and n_partitions >= MIN_PARTITIONS:
        return _lower_bound(int(Ks[-1]), float(envelope[-1]), beyond, threshold)
    K, largest = _largest_change(Ks, drop)
    reason = f"K={K}: no split drops the normalised co-association by {threshold:g}; {largest}"
    if n_partitions >= MIN_PARTITIONS:
        reason += ARBITRARY.format(K=K)  # warned by choose_k unless a lower bound replaces K
    else:
        reason += f"; only {n_partitions} partition(s), too few to choose K"
        warn(
            f"select_k: {n_partitions} partition(s) are too few to choose the number of "
            f"clusters (no split is clear, so K={K} is a weak answer). Build more "
            "partitions, e.g. tl.ensemble(n_partitions=20) or more (the default is 100), "
            "or give the number of clusters.",
            UserWarning,
        )
    return K, reason


#: The end of the reason for a K no split supports (:func:`_warn_arbitrary`).
ARBITRARY = ": no number of clusters is stable, so K={K} is arbitrary"


def _warn_arbitrary(K: int, reason: str, threshold: float) -> None:
    """Warn that no split supports ``K`` (a user trial: Gaussian noise got K=10 without a
    word), unless ``K`` is another reading (a lower bound past the candidates, which says
    the opposite: more groups than the ensemble can judge)."""
    if not reason.endswith(ARBITRARY.format(K=K)):
        return
    warn(
        f"select_k: no number of clusters is stable in this ensemble (no split drops its "
        f"normalised co-association by {threshold:g}), so K={K} is arbitrary: the data may "
        "hold no groups at the resolutions the ensemble spans. Look at pl.k_selection, and "
        "give the number of clusters if the biology sets one.",
        UserWarning,
    )


def _past_the_candidates(
    K: int, reason: str, Ks: np.ndarray, eig: np.ndarray, drop: np.ndarray, **judged
) -> tuple[int, str]:
    """``(K, reason)``, or a lower bound past the candidates ``Ks`` when each of the last
    three keeps more evidence than the split chosen at ``K`` (or, with no split, the
    largest drop) by more than the threshold, and more than ``HELD``, with no split after
    (module docstring), with a warning. ``judged``: ``finest`` (0 when ``max_k`` bounds
    K), ``n_partitions`` and ``threshold``, as :func:`_choose` takes them."""
    shown, threshold = eig[:-2], judged["threshold"]
    at = np.flatnonzero(Ks[:-2] == K)
    enough = judged["finest"] > Ks[-3] and judged["n_partitions"] >= MIN_PARTITIONS
    if not enough or not at.size:
        return K, reason
    after = at[0] + int(np.argmin(drop[at[0] :] >= threshold))  # at[0] if none past it
    here, kept = float(shown[at[0]]), float(shown[-3:].min())
    if (drop[after:] >= threshold).any() or kept <= max(here + threshold, HELD):
        return K, reason
    last = int(Ks[-3])
    # the last three keep it: the bound is at least the last, or one of the next two
    bound = last + 1 + _keeping(eig[-2:], kept, threshold)
    chosen = "the split" if drop[at[0]] >= threshold else "the largest drop"
    warn(
        f"select_k: the finest K the ensemble's partitions can judge (up to K={last}) keep "
        f"more of their co-association than {chosen} at K={K}: the data hold more groups "
        f"than they can judge, and K={bound} is only a lower bound. Build the ensemble over "
        "larger k (tl.ensemble's default k='auto' reaches sqrt(n)), or give the number of "
        "clusters.",
        UserWarning,
    )
    return bound, (
        f"K={bound}: {chosen} at K={K} keeps {here:.3f} of the normalised co-association, "
        f"the finest candidates (K={last - 2}-{last}) at least {kept:.3f}: the data hold more "
        f"groups than the partitions can judge; K={bound} is a lower bound (was: {reason})"
    )


def _lower_bound(last: int, kept: float, beyond, threshold: float) -> tuple[int, str]:
    """``(K, reason)`` when no group is cut up to the last candidate ``last`` (running
    minimum ``kept``): the larger of ``last + 1``, ``last + 2`` whose eigenvalue in
    ``beyond`` stays within ``threshold`` of it (one does, or ``last`` would drop), with
    a warning that it is a lower bound."""
    i = _keeping(beyond, kept, threshold)
    K = last + 1 + i
    warn(
        f"select_k: no split up to K={last}, the largest K the ensemble's partitions can "
        f"judge (too few are finer): the data may hold more than {last} groups; K={K} is "
        "only a lower bound. Build the ensemble over larger k or with more partitions "
        "(tl.ensemble's default k='auto' reaches sqrt(n)), or give the number of clusters.",
        UserWarning,
    )
    return K, (
        f"K={K}: no split drops the normalised co-association up to K={last} (it keeps "
        f"{kept:.3f}), so the data may hold more than {last} groups; K={K} keeps "
        f"{beyond[i]:.3f}, a lower bound: too few partitions are finer to judge more"
    )


def _one_resolution(Ks: np.ndarray, drop: np.ndarray) -> tuple[int, str]:
    """``(K, reason)`` of an ensemble whose partitions all have ``k = Ks[-1]`` clusters:
    the largest drop, with a warning when it is after ``k`` itself (to no partition: the
    ensemble cannot tell ``k`` groups from more)."""
    K, largest = _largest_change(Ks, drop)
    reason = f"K={K}: every partition has the same number of clusters, and {largest}"
    if K == int(Ks[-1]):
        reason += f", their own k: the data may hold more than {K} groups"
        warn(
            f"select_k: every partition of the ensemble has {K} clusters, so it cannot show "
            f"whether the data hold {K} groups or more; K={K} is its own resolution. Build "
            "the ensemble over several k (tl.ensemble's default k='auto') to see where the "
            "groups stop splitting, or give the number of clusters.",
            UserWarning,
        )
    return K, reason


def _largest_change(Ks: np.ndarray, drop: np.ndarray) -> tuple[int, str]:
    """``(K, text)``: the ``K`` after which the evidence drops most, and the words for
    it ("change" when nothing drops: a user read a negative "largest drop")."""
    t = int(np.argmax(drop))
    K = int(Ks[t])
    what = "drop" if drop[t] > 0 else "change (none drops)"
    return K, f"the largest {what} ({drop[t]:.3f}) is after K={K}"


def _keeping(beyond: np.ndarray, kept: float, threshold: float) -> int:
    """Index of the last of ``beyond`` (the ``K`` past the candidates) whose eigenvalue
    stays within ``threshold`` of ``kept``, ``-1`` for none."""
    return max((j for j, value in enumerate(beyond) if value > kept - threshold), default=-1)
