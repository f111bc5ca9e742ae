"""Several numbers of clusters in one call: ``tl.pcc(adata, n_clusters=[4, 8])``.

Biology nests groups (lineages, types, states), and :func:`scconsensus.core.select_k`
names every stable resolution (``.uns[key]["k_candidates"]``), so users fit several K
as MultiK and clustree users do. :func:`fits_each_k` lets a consensus wrapper take a list
of K: the list is checked once against the data, before anything is written, and the
wrapper then runs once per K with its other arguments unchanged, storing each result
under ``f"{key_added}_k{K}"``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from collections.abc import Set as AbstractSet
from contextlib import contextmanager
from numbers import Real

import numpy as np
from anndata import AnnData
from scanpy import logging as logg

from .._validation import check_int, check_key, check_n_clusters, is_k_list, k_hint
from ._anndata import check_copy, get_ensemble
from ._record_keys import check_record_key, each_k_key

__all__ = ["each_k_key", "fits_each_k"]


def check_k_list(n_clusters: Iterable, n_items: int) -> list[int]:
    """The K of a list, each an integer in ``[2, n_items)``, none twice, at least one; a
    set in increasing order (it has no order of its own)."""
    if isinstance(n_clusters, np.ndarray) and n_clusters.ndim > 1:
        raise ValueError(_nested(n_clusters.tolist()))
    Ks = list(n_clusters)
    if isinstance(n_clusters, AbstractSet) and all(isinstance(K, Real) for K in Ks):
        Ks = sorted(Ks)
    if not Ks:
        raise ValueError(
            "n_clusters=[] names no number of clusters. Give at least one, e.g. "
            "n_clusters=[4, 8], or n_clusters='auto' (an empty "
            ".uns[key]['k_candidates'] means no drop of the evidence reached the threshold)."
        )
    if any(is_k_list(K) for K in Ks):
        raise ValueError(_nested(Ks))
    if any(isinstance(K, str) for K in Ks):
        raise ValueError(
            f"n_clusters={list(Ks)!r}: a list holds integers only; fit 'auto' in its own "
            "call (its K and the other stable resolutions are in .uns[key]['k_candidates'])."
        )
    Ks = [check_n_clusters(K, n_items, f"n_clusters[{i}]") for i, K in enumerate(Ks)]
    twice = sorted({K for K in Ks if Ks.count(K) > 1})
    if twice:
        raise ValueError(
            f"n_clusters lists K={', '.join(map(str, twice))} more than once; each K is fitted "
            "and stored once. Remove the repeats."
        )
    return Ks


def _nested(Ks: list) -> str:
    """Why a list of lists of K is refused (flattened, it could fit K nobody meant)."""
    return (
        f"n_clusters={Ks!r} nests lists; give one flat list of K, e.g. n_clusters=[4, 8] "
        "(each K is fitted and stored under its own key)."
    )


def fits_each_k(fit: Callable) -> Callable:
    """Let the consensus wrapper ``fit`` take ``n_clusters`` as a list of K.

    A list, tuple, range, 1-d array or any other iterable of integers (a set in
    increasing order; no string, mapping or nested list) is checked whole (each K an
    integer in ``[2, n_obs)``, none twice, the keys valid) before any K is fitted, and a
    single K's type before ``fit`` runs; ``fit`` then runs once per K,
    with ``n_clusters=K`` and ``key_added=f"{key_added}_k{K}"`` and the same other
    arguments, on one copy of ``adata`` when ``copy=True``. A fault in any K (an error
    that only that K meets, Ctrl-C) removes what the earlier K wrote: all K or none.
    Anything else goes to ``fit`` unchanged. ``fit`` takes ``(adata, n_clusters, ...)``
    first and ``ensemble_key``, ``key_added`` and ``copy`` as keyword-only arguments.
    """
    defaults = fit.__kwdefaults__

    @functools.wraps(fit)
    def wrapper(adata, n_clusters="auto", *args, **kwargs):
        if not is_k_list(n_clusters):
            if not (isinstance(n_clusters, str) and n_clusters == "auto"):
                # refused here, where a list is also taken, so the message names all three
                check_int(n_clusters, "n_clusters", 2, hint=k_hint(n_clusters, lists=True))
            return fit(adata, n_clusters, *args, **kwargs)
        options = {name: kwargs.get(name, defaults[name]) for name in _READ}
        return _fit_each(fit, adata, n_clusters, args, kwargs, options)

    wrapper.takes_k_list = True  # read by the command line: one call for several K
    return wrapper


#: The keyword-only arguments of the wrapped ``fit`` that :func:`_fit_each` reads.
_READ = ("ensemble_key", "key_added", "copy")


def _fit_each(fit, adata, n_clusters, args, kwargs, options) -> AnnData | None:
    """Run ``fit`` once per K of ``n_clusters`` (see :func:`fits_each_k`)."""
    key_added = check_key(options["key_added"])
    # the ensemble is read and checked here, once, so that K is judged against its items
    labels = get_ensemble(adata, options["ensemble_key"])
    Ks = check_k_list(n_clusters, labels.shape[0])
    check_record_key(adata, key_added, "consensus", per_k=Ks, top=False)
    keys = [each_k_key(key_added, K) for K in Ks]
    copy = check_copy(adata, options["copy"])
    target = adata.copy() if copy else adata
    logg.info(f"n_clusters={Ks}: one fit per K, stored under {', '.join(map(repr, keys))}")
    with _all_or_none(target, keys):
        for K, key in zip(Ks, keys, strict=True):
            fit(target, K, *args, **{**kwargs, "key_added": key, "copy": False})
    return target if copy else None


@contextmanager
def _all_or_none(adata: AnnData, keys: list[str]):
    """Undo, on any fault (an error in a later K, Ctrl-C), what earlier K wrote: the entries
    named ``key`` or ``key_*`` of each of ``keys``, as each fit writes its own layout."""

    def owned(name) -> bool:
        return any(name == key or str(name).startswith(f"{key}_") for key in keys)

    slots = ("obs", "obsm", "obsp", "uns")
    before = {
        slot: {k: getattr(adata, slot)[k] for k in list(getattr(adata, slot).keys()) if owned(k)}
        for slot in slots
    }
    try:
        yield
    except BaseException:
        for slot in slots:
            store, old = getattr(adata, slot), before[slot]
            for k in [k for k in list(store.keys()) if owned(k) and k not in old]:
                del store[k]
            for k, value in old.items():
                store[k] = value
        raise
