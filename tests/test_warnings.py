"""Every warning names the user's line (here: this file), whichever entry point reached it.

A fixed ``stacklevel`` was right for one call path only: through the ``tl`` wrappers or
the renamed-argument shim the same warnings named lines inside the package.
"""

from __future__ import annotations

import warnings

import anndata as ad
import numpy as np
import pytest

import scconsensus as scc
from scconsensus.core import PartitionOptions, StartPlan, generate_ensemble, pcc_consensus, select_k
from scconsensus.core.pla import Weighting, pla, pla_extend

GROUPS = np.repeat([[0, 0, 1], [1, 1, 0], [2, 2, 2]], 12, axis=0).astype(np.int32)
UNSAMPLED = np.where(np.arange(36)[:, None] < 5, -1, GROUPS).astype(np.int32)
# five items each alone in their own cluster of every partition: those left out of the fitted
# subset share no cluster with a fitted item
LONERS = np.vstack([GROUPS, 100 + np.arange(5)[:, None].repeat(3, axis=1)]).astype(np.int32)
RNG = np.random.default_rng(0)
X = RNG.normal(size=(36, 4))
# three partitions that do not agree on any K: select_k cannot decide
UNDECIDED = np.stack(
    [
        np.repeat(np.arange(3), 30) * 3 + np.random.default_rng(1).integers(0, m, 90)
        for m in (1, 2, 3)
    ],
    axis=1,
).astype(np.int32)


def _adata(labels=GROUPS) -> ad.AnnData:
    a = ad.AnnData(np.random.default_rng(0).normal(size=(labels.shape[0], 4)))
    a.obsm["scc_ensemble"] = np.ascontiguousarray(labels, dtype=np.int32)
    return a


def _pla_transfer_old_order():
    ref, new = _adata(), _adata()
    scc.tl.pla(ref, n_clusters=3)
    scc.tl.pla_transfer(ref, new)  # the old order: reference first


CASES = {
    "tl.pcc, items in no partition": (
        lambda: scc.tl.pcc(_adata(UNSAMPLED), n_clusters=3, n_init=1),
        RuntimeWarning,
        "no partition",
    ),
    "core.pcc_consensus, items in no partition": (
        lambda: pcc_consensus(UNSAMPLED, 3, start=StartPlan(n_init=1)),
        RuntimeWarning,
        "no partition",
    ),
    "tl.pla, items in no partition": (
        lambda: scc.tl.pla(_adata(UNSAMPLED), n_clusters=3),
        RuntimeWarning,
        "no partition",
    ),
    "core.pla, items in no partition": (
        lambda: pla(UNSAMPLED, 3, random_state=0),
        RuntimeWarning,
        "no partition",
    ),
    "core.pla, lam unused": (
        lambda: pla(GROUPS, 3, weighting=Weighting(lam=5), random_state=0),
        UserWarning,
        "no effect",
    ),
    "tl.pla, lam unused": (
        lambda: scc.tl.pla(_adata(), n_clusters=3, lam=5),
        UserWarning,
        "no effect",
    ),
    "core.select_k, too few partitions": (lambda: select_k(UNDECIDED), UserWarning, "too few"),
    "tl.pcc choosing K, too few partitions": (
        lambda: scc.tl.pcc(_adata(UNDECIDED), n_init=1),
        UserWarning,
        "too few",
    ),
    "tl.ensemble, tiny subsample": (
        lambda: scc.tl.ensemble(ad.AnnData(RNG.normal(size=(200, 3))), 3, subsample=0.01),
        UserWarning,
        "subsample=0.01",
    ),
    "core.generate_ensemble, tiny subsample": (
        lambda: generate_ensemble(
            RNG.normal(size=(200, 3)), 3, progress=False, options=PartitionOptions(subsample=0.01)
        ),
        UserWarning,
        "subsample=0.01",
    ),
    "tl.ensemble, renamed argument": (
        lambda: scc.tl.ensemble(ad.AnnData(X), 3, methods="kmeans", k=3),
        FutureWarning,
        "methods= is now method=",
    ),
    "tl.pla_transfer, old argument order": (
        _pla_transfer_old_order,
        FutureWarning,
        "reference goes second",
    ),
    "core.pla fit on a subset, item sharing no cluster": (
        lambda: pla(LONERS, 3, fit_size=25, random_state=0),
        RuntimeWarning,
        "share no cluster with a fitted item",
    ),
    "core.pla_extend, item sharing no cluster": (
        lambda: pla_extend(
            np.array([[1.0, 0], [1, 0], [0, 1], [0, 1]]),
            np.array([[0, 0], [0, 0], [1, 1], [1, 1]]),
            np.array([[-1, -1], [0, 0]]),
        ),
        RuntimeWarning,
        "uniform",
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_warning_names_the_callers_line(case):
    call, category, text = CASES[case]
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        call()
    hits = [w for w in record if issubclass(w.category, category) and text in str(w.message)]
    assert len(hits) == 1, [str(w.message) for w in record]  # once, not once per layer
    assert hits[0].filename == __file__, (hits[0].filename, hits[0].lineno)


def test_pseudo_files_are_the_users_even_from_the_package_folder(monkeypatch):
    """``<stdin>``, ``<doctest ...>``, notebook cells: never mistaken for package files."""
    import os

    from scconsensus import _warnings

    monkeypatch.chdir(os.path.dirname(_warnings.__file__))
    assert not _warnings._inside("<stdin>")
    assert not _warnings._inside("<doctest scconsensus.tl.pcc>")
    assert _warnings._inside(_warnings.__file__)
    assert not _warnings._inside(__file__)
