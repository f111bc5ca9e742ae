"""Which partitions an ensemble holds: the method, ``k`` and seed of each, drawn from
one :class:`numpy.random.SeedSequence` before any work is scheduled, so the ensemble is
the same for any ``n_jobs``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._validation import RandomState, check_int, seed_sequence, too_many_clusters
from .._warnings import warn


@dataclass(frozen=True)
class Spec:
    method: str
    k: int | None
    seed: np.random.SeedSequence


def auto_k_max(n_items: int) -> int:
    """Finest resolution of the default ensemble: ``sqrt(n)`` clusters, within [10, 50].

    ``sqrt(n)`` is the upper end of the split ensembles of Fred & Jain (2005) and
    Lourenço et al. (2015); 10 keeps small data multi-resolution, 50 bounds the cost.
    """
    return int(min(max(10, round(np.sqrt(n_items))), 50, max(2, n_items - 1)))


def k_choices(
    k: int | tuple[int, int] | Sequence[int] | str, n_items: int
) -> tuple[str, list[int]]:
    """``("range"|"log", [lo, hi])`` or ``("list", values)``, each checked against ``n_items``.

    ``"auto"`` is ``("log", [2, auto_k_max(n_items)])``: k drawn log-uniformly.

    Every value follows :func:`check_int` (integral numbers, no strings), so ``k="25"`` is
    refused rather than read as the list ``[2, 5]``.
    """
    if isinstance(k, str) and k == "auto":
        return "log", [2, auto_k_max(n_items)]
    if isinstance(k, int | float | np.number | str | bool):
        values, kind = [check_int(k, "k")], "list"
    elif isinstance(k, tuple):
        if len(k) != 2:
            raise ValueError(f"k as a tuple is an inclusive (lo, hi) range, got {k!r}.")
        values, kind = [check_int(v, "k") for v in k], "range"
        if values[0] > values[1]:
            raise ValueError(f"k range {k!r} has lo > hi.")
    elif isinstance(k, Sequence | np.ndarray):
        values, kind = [check_int(v, "k") for v in k], "list"
        if not values:
            raise ValueError("k is an empty list.")
    else:
        raise ValueError(
            "k must be 'auto', an int, a (lo, hi) tuple or a sequence of ints (list, range, "
            f"1-D array), got {k!r}."
        )
    for v in values:
        if v < 2:
            raise ValueError(f"k={v} is too small: every partition needs at least 2 clusters.")
        if v >= n_items:
            raise ValueError(too_many_clusters("k", v, n_items, "sampled items per partition"))
    return kind, values


def k_argument(k: Any) -> Any:
    """``k`` with a ``range`` or a numpy array as the list (or int) it stands for."""
    if isinstance(k, range):
        return list(k)
    if isinstance(k, np.ndarray):
        if k.ndim > 1:
            raise ValueError(
                f"k as an array must be 1-D (a list of k values), got shape {k.shape}."
            )
        return k.item() if k.ndim == 0 else k.tolist()
    return k


def warn_small_subsample(k: Any, methods: list[str], subsample: float, n_sub: int, n: int):
    """Warn when ``k="auto"`` must cap its resolution because partitions have few items.

    An explicit ``k`` at or above the items per partition is refused by :func:`k_choices`;
    ``"auto"`` instead shrinks to what the subsample allows, which hides a typo such as
    ``subsample=0.001`` (partitions of 2 items).
    """
    wanted = auto_k_max(n)
    if not (isinstance(k, str) and k == "auto") or all(m == "leiden" for m in methods):
        return
    # small data: auto_k_max(n) is n - 1, so the default 0.8 always trims it a little
    if 2 * auto_k_max(n_sub) < wanted:
        warn(
            f"subsample={subsample:g} leaves {n_sub} of {n} items per partition, fewer than "
            f"the {wanted} clusters k='auto' asks for at most on {n} items; each partition "
            f"gets at most {auto_k_max(n_sub)} clusters and most items are left out of it. "
            "Raise subsample (default 0.8) or pass a smaller k.",
            UserWarning,
        )


def plan_partitions(
    n_partitions: int,
    methods: Sequence[str],
    k: Any,
    n_sub: int,
    random_state: RandomState,
) -> list[Spec]:
    """Method, ``k`` and seed of every partition, fixed before any work is scheduled."""
    if all(m == "leiden" for m in methods):
        kind, values = "list", [0]  # Leiden's resolution, not k, sets the number of clusters
    else:
        kind, values = k_choices(k, n_sub)
    root = seed_sequence(random_state)
    children = root.spawn(n_partitions)
    k_rng = np.random.default_rng(root.spawn(1)[0])
    split_lo = max(2, int(np.ceil(np.sqrt(n_sub) / 2)))
    split_hi = max(split_lo, min(int(np.floor(np.sqrt(n_sub))), n_sub - 1))
    specs = []
    n_methods = len(methods)
    for i, seed in enumerate(children):
        method = methods[i % n_methods]
        if method == "kmeans_split":
            ki = int(k_rng.integers(split_lo, split_hi + 1))
        elif method == "leiden":
            ki = None
        elif kind == "range":
            ki = int(k_rng.integers(values[0], values[1] + 1))
        elif kind == "log":
            # log-uniform: every doubling of the resolution gets the same share of partitions
            ki = int(np.exp(k_rng.uniform(np.log(values[0]), np.log(values[1] + 1))))
            ki = min(max(ki, values[0]), values[1])
        else:
            ki = values[(i // n_methods) % len(values)]
        specs.append(Spec(method, ki, seed))
    return specs
