"""Option records shared by the consensus methods, and their ``params`` encoding.

A method's ``core`` function takes the options of one stage as one frozen record (its
fields and defaults written once, there); the ``tl`` wrapper takes the same options as
flat keywords, scanpy's style, and builds the records from them.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any

from .._docs import doc_params

__all__ = [
    "PCC_ROUTE",
    "PLA_ROUTE",
    "FitRoute",
    "PartitionOptions",
    "StartPlan",
    "options_record",
    "takes_records",
]


def takes_records(**records: type) -> Callable[[Callable], Callable]:
    """Refuse a record's field given as a flat keyword, naming the record it belongs in.

    ``records`` maps each record parameter of the decorated ``core`` function to its
    class (e.g. ``route=FitRoute``). The ``tl`` functions take these fields flat; without
    this, a ``core`` call in that form fails with Python's bare "unexpected keyword
    argument". Fields that are also the function's own parameters pass through.
    """

    def decorate(fn: Callable) -> Callable:
        own = inspect.signature(fn).parameters
        home = {
            f.name: (param, cls)
            for param, cls in records.items()
            for f in fields(cls)
            if f.name not in own
        }

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            flat = [name for name in kwargs if name in home]
            if flat:
                raise TypeError(_moved(fn.__name__, flat, kwargs, home))
            return fn(*args, **kwargs)

        return wrapper

    return decorate


def _moved(fn_name: str, flat: list[str], kwargs: dict, home: dict) -> str:
    """The message of :func:`takes_records`: each record and the fields that go in it."""
    by_record: dict[str, list[str]] = {}
    for name in flat:
        param, cls = home[name]
        by_record.setdefault(f"{param}={cls.__name__}", []).append(f"{name}={kwargs[name]!r}")
    where = " and ".join(f"{head}({', '.join(given)})" for head, given in by_record.items())
    return (
        f"{fn_name} takes {', '.join(flat)} in an option record, not as a keyword: pass "
        f"{where} (the scconsensus.tl functions take them as flat keywords)."
    )


def options_record(*options) -> dict:
    """The fields of the option records ``options``, in order, as one flat dict."""
    return {f.name: getattr(o, f.name) for o in options for f in fields(o)}


@dataclass(frozen=True)
class StartPlan:
    """Where a model of an ensemble starts from and which partitions it fits (PCC, PLA).

    Each method checks the values (:func:`~scconsensus.core.pcc_consensus`,
    :func:`~scconsensus.core.pla_consensus` document what they do there).

    Attributes
    ----------
    init
        ``"spectral"`` (default): the spectral consensus of the ensemble at ``K``;
        ``"random"``: random starts only; ``"ensemble"`` (PCC): the matched partition
        closest to ``K``.
    partitions
        ``"matched"`` (default): the partitions whose number of clusters is near ``K``;
        ``"all"``: every partition.
    n_init
        Starts (restarts): the ``init`` start, then random ones; the best fit wins.
    """

    init: str = "spectral"
    partitions: str = "matched"
    n_init: int = 1


@dataclass(frozen=True)
class FitRoute:
    """How a model of an ensemble scales: all pairs or sampled ones, all items or a subset.

    Attributes
    ----------
    mode
        ``"dense"`` (all pairs), ``"sparse"`` (sampled pairs) or ``"auto"``
        (:func:`~scconsensus.core._pair_source.auto_mode`); PCC also has ``"lowrank"``.
    n_neighbors, n_random
        Pairs per item on the sparse route: within-cluster partners and random ones.
    fit_size, fit_fraction
        Fit on this many items (or ``ceil(fit_fraction n)``) drawn at random and extend
        to the rest; ``None``: every item; ``"auto"``: at most ``settings.auto_fit_size``
        (``None``: 10,000 for PCC, 20,000 for PLA). Both methods default to ``"auto"``
        (:data:`PCC_ROUTE`, :data:`PLA_ROUTE`); a ``FitRoute`` built from scratch fits
        every item, so to change one field of a method's route keep the others with
        ``dataclasses.replace(PCC_ROUTE, mode="sparse")``.
    """

    mode: str = "auto"
    n_neighbors: int = 10
    n_random: int = 30
    fit_size: int | str | None = None
    fit_fraction: float | None = None


#: :func:`~scconsensus.core.pcc_consensus`'s default route: it fits at most
#: ``settings.auto_fit_size`` items (``None``: 10,000) and extends to the rest.
PCC_ROUTE = FitRoute(fit_size="auto")

#: :func:`~scconsensus.core.pla_consensus`'s default route: it fits at most
#: ``settings.auto_fit_size`` items (``None``: 20,000) and folds the rest in.
PLA_ROUTE = FitRoute(fit_size="auto")


@doc_params()
@dataclass(frozen=True)
class PartitionOptions:
    """How each partition of an ensemble samples and clusters (``generate_ensemble``).

    Checked by :func:`~scconsensus.core.generate_ensemble`.

    Attributes
    ----------
    {ensemble_sampling}
    """

    subsample: float = 0.8
    feature_subsample: float = 1.0
    predict_unsampled: bool | str = False
    linkage: str = "average"
    distance: str = "euclidean"
    resolution: float | tuple[float, float] | None = None
    n_neighbors: int = 15
