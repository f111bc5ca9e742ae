"""Reading the splits of ``select_k``'s evidence: runs of candidates whose drop
reaches the threshold, their strength, and the first level that is not a weak coarse one.

**A weak coarse level.** Consecutive ``K`` that all drop are one *split*, whose strength
is the fall of the running minimum over them; so are two such runs with a single ``K``
between them when the second is at least as strong (unequal groups can drop partly at
18, not at 19, and fully at 20: read as two splits, the weak one at 18 hid the coarse
level before it). When a split is followed by a *plateau* of at least ``PLATEAU`` (8)
candidates without a drop and then by a finer level (the splits up to the next plateau)
with a split at least ``STRONGER`` (3) times as strong, the coarse split is a weak level
above the groups (e.g. two halves of 20 groups of unequal size that coarse partitions
happen to agree on: ``λ_2 = 0.99``, ``λ_3 = 0.89`` and a plateau up to a fall of 0.67 at
20) and the first such split is chosen (the smallest groups may split off a few ``K``
before the rest: 0.057 at 18, 0.54 at 21 for 20 unequal groups and one of 0.5 %); the
coarse one stays among the stable resolutions. A split reached after such a plateau is
read at its largest drop (unequal groups leave a partial drop one ``K`` before the full
one), and so is a first split preceded by at least ``READ_AFTER`` (5) candidates without
a drop (e.g. 20 unequal groups with no coarse level: a partial drop at 19, the full one at
20; 10 unequal groups: 0.069 at 9, 0.660 at 10). A gradual descent (drops at several ``K``
with no plateau between) keeps the first drop: the panel's start after at most 3
candidates (ALL's at ``K`` = 2-4, pbmc68k's at 4-7).
Each split is one stable resolution (:attr:`~scconsensus.core.KSelection.splits`), read
at the ``K`` the rule reads it at (the chosen ``K`` for the split that holds it), so
fitting every candidate fits no ``K`` of one split twice. ``PLATEAU`` and ``STRONGER``
are not tuned to one boundary: on the stored evidence of the panel's 21 ensembles and of
195 planted tables (20 groups, equal, unequal and nested, 2,000 to 100,000 cells, several
seeds;
``benchmarks/README.md``, "K found") any plateau of 5 to 11 and any ratio of 1.5 to 3 give
the same K on the panel and 20 on every planted table; the panel's longest plateau before a
stronger split is 4 (wine). ``READ_AFTER`` at 5 and at 8 gives the same K on the panel's 24
ensembles and 45 planted ones (``benchmarks/README.md``, "4 to 25 groups").
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["PLATEAU", "READ_AFTER", "STRONGER", "first_level", "span", "stable_splits"]

#: Candidates without a drop between a split and a stronger one that make the first a
#: weak coarse level (module docstring), and how much stronger the second must be.
PLATEAU, STRONGER = 8, 3.0

#: Candidates without a drop before a first split that make it read at its largest drop.
#: 5 (``PLATEAU`` until 2026-11-26): 8 and 10 unequal groups (5 and 7 candidates before
#: their split) were read at the partial drop one K before the full one (K = 7 and 9).
READ_AFTER = 5


def span(row) -> str:
    """``"K=19-21"``: the ``K`` a split drops over."""
    return f"K={int(row.k_first)}-{int(row.k_last)}"


def stable_splits(table: pd.DataFrame, threshold: float) -> pd.DataFrame:
    """The splits of :attr:`~scconsensus.core.KSelection.table`, one row each, the strongest first
    (:attr:`~scconsensus.core.KSelection.splits` documents the columns).

    A split is read where :func:`~scconsensus.core.select_k` reads it (module docstring),
    and the split holding the chosen ``K`` at that ``K``: one ``K`` per split, so that fitting every
    stable resolution fits no ``K`` twice over (a split over ``K`` = 19-21 was three).
    """
    Ks = table["n_clusters"].to_numpy(dtype=np.int64)
    drop = table["drop"].to_numpy(dtype=float)
    envelope = table["envelope"].to_numpy(dtype=float)
    chosen = table["chosen"].to_numpy(dtype=bool)
    runs = _runs(drop, envelope, threshold)
    rows = []
    for run, gap in zip(runs, _gaps(runs), strict=True):
        start, stop = run
        inside = np.flatnonzero(chosen[start:stop])
        at = start + int(inside[0]) if inside.size else _read(drop, run, gap)
        rows.append((Ks[at], Ks[start], Ks[stop - 1], _strength(envelope, drop, run)))
    splits = pd.DataFrame(rows, columns=["n_clusters", "k_first", "k_last", "strength"])
    splits = splits.astype({"n_clusters": np.int64, "k_first": np.int64, "k_last": np.int64})
    splits["strength"] = splits["strength"].astype(float)
    return splits.sort_values("strength", ascending=False, kind="stable").reset_index(drop=True)


def _runs(drop: np.ndarray, envelope: np.ndarray, threshold: float) -> list[tuple[int, int]]:
    """``(start, stop)`` of each split: a run of consecutive candidates whose ``drop``
    reaches ``threshold``, and a run one candidate after another that is at least as
    strong is part of it (a partial drop before the full one; module docstring)."""
    hit = (drop >= threshold).astype(np.int8)
    edges = np.flatnonzero(np.diff(np.concatenate([[0], hit, [0]])))
    runs: list[tuple[int, int]] = []
    for run in zip(edges[::2].tolist(), edges[1::2].tolist(), strict=True):
        last = runs[-1] if runs else None
        if last and run[0] - last[1] == 1:
            if _strength(envelope, drop, run) >= _strength(envelope, drop, last):
                runs[-1] = (last[0], run[1])
                continue
        runs.append(run)
    return runs


def _gaps(runs: list[tuple[int, int]]) -> list[int]:
    """Candidates without a drop before each run (since the previous run, or the first K)."""
    return [start - (runs[i - 1][1] if i else 0) for i, (start, _) in enumerate(runs)]


def _strength(envelope: np.ndarray, drop: np.ndarray, run: tuple[int, int]) -> float:
    """How far the running minimum falls across the split ``run``."""
    start, stop = run
    return float(envelope[start] - (envelope[stop - 1] - drop[stop - 1]))


def _read(drop: np.ndarray, run: tuple[int, int], plateau: int) -> int:
    """Index the split ``run`` is read at: its first ``K``, or its largest drop after a
    plateau of at least ``READ_AFTER`` candidates without a drop (a split seen over several
    ``K`` is one)."""
    start, stop = run
    return start + int(np.argmax(drop[start:stop])) if plateau >= READ_AFTER else start


def first_level(
    Ks: np.ndarray, drop: np.ndarray, envelope: np.ndarray, threshold: float
) -> tuple[int, str]:
    """Index of the chosen split among the candidates ``Ks`` (at least one drop reaches
    ``threshold``), and the weak coarse levels it skipped, for the reason (module
    docstring, "A weak coarse level")."""
    runs = _runs(drop, envelope, threshold)
    gaps = _gaps(runs)
    at, nxt, note, plateau = 0, 1, "", gaps[0]
    while nxt < len(runs) and gaps[nxt] >= PLATEAU:
        this = _strength(envelope, drop, runs[at])
        # the finer level: the splits after the plateau up to the next one. Its first split
        # STRONGER times as strong, not only its first split: the smallest groups may split
        # off a few K before the rest (0.057 at 18, 0.54 at 21)
        end = next((j for j in range(nxt + 1, len(runs)) if gaps[j] >= PLATEAU), len(runs))
        strong = [
            j for j in range(nxt, end) if _strength(envelope, drop, runs[j]) >= STRONGER * this
        ]
        if not strong:
            break
        ratio = _strength(envelope, drop, runs[strong[0]]) / this
        note += (
            f"; K={Ks[_read(drop, runs[at], plateau)]} ({this:.3f}) is a weak coarse level: "
            f"{gaps[nxt]} candidates without a drop follow it, then a split at "
            f"K={Ks[_read(drop, runs[strong[0]], PLATEAU)]} {ratio:.1f} times as strong"
        )
        # reached after a plateau: read at its largest drop, wherever it is in the level
        at, nxt, plateau = strong[0], end, PLATEAU
    return _read(drop, runs[at], plateau), note
