"""One fit-on-a-subset rule for PCC and PLA (core/_subset.py), and PCC's core entry point."""

from __future__ import annotations

import itertools

import anndata as ad
import numpy as np
import pytest
from _helpers import planted, scanpy_log

import scconsensus as scc
from scconsensus._validation import check_labels
from scconsensus.core import FitRoute, pcc_consensus
from scconsensus.core._labels import _numbered
from scconsensus.core._subset import auto_fit_size, fit_count, fit_subset
from scconsensus.core.pla import pla


def test_fit_count_rounds_the_fraction_up_and_caps_at_all_items():
    assert fit_count(10, None, 0.25, method="pcc") == 3
    assert fit_count(10, None, None, method="pcc") == 10
    assert fit_count(10, 4, None, method="pla") == 4
    assert fit_count(10, 40, None, method="pcc") == 10
    assert fit_count(10, 4.0, None, method="pcc") == 4


def test_fit_count_auto_is_each_methods_own_unless_the_settings_say(monkeypatch):
    assert scc.settings.auto_fit_size is None
    assert fit_count(500, "auto", None, method="pcc") == 500
    assert fit_count(50_000, "auto", None, method="pcc") == 10_000
    assert fit_count(50_000, "auto", None, method="pla") == 20_000
    monkeypatch.setattr(scc.settings, "auto_fit_size", 60)
    for method in ("pcc", "pla"):
        assert fit_count(500, "auto", None, method=method) == 60
        assert fit_count(60, "auto", None, method=method) == 60
        assert fit_count(50, "auto", None, method=method) == 50
        assert fit_count(500, "auto", 0.5, method=method) == 250
    monkeypatch.setattr(scc.settings, "auto_fit_size", None)
    assert fit_count(50_000, "auto", None, method="pcc") == 10_000


@pytest.mark.parametrize("method", ["pcc", "pla"])
def test_fit_count_auto_has_no_cliff(method):
    # the fitted count never falls as n grows: a full fit up to the setting, then constant
    most = auto_fit_size(method)
    counts = [fit_count(n, "auto", None, method=method) for n in range(1, 3 * most, 997)]
    assert all(b >= a for a, b in itertools.pairwise(counts))
    assert max(counts) == most


@pytest.mark.parametrize(
    ("fit_size", "fit_fraction", "match"),
    [
        (10, 0.5, "either fit_size or fit_fraction, not both"),
        (None, 1.5, "fit_fraction"),
        ("all", None, "fit_size='all' is not supported.*None to fit every item"),
        (2.5, None, "fit_size must be an integer"),
        (0, None, "fit_size must be a positive integer"),
    ],
)
def test_fit_count_refuses(fit_size, fit_fraction, match):
    with pytest.raises(ValueError, match=match):
        fit_count(10, fit_size, fit_fraction, method="pcc")


def test_fit_subset_needs_more_items_than_clusters():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="more than n_clusters=3"):
        fit_subset(100, 3, None, 3, rng, method="pcc")
    assert fit_subset(100, 100, None, 3, rng, method="pcc") is None
    idx = fit_subset(100, 10, None, 3, rng, method="pcc")
    assert idx.dtype == np.int64 and idx.size == 10 and np.all(np.diff(idx) > 0)


@pytest.mark.slow
def test_pcc_and_pla_fit_the_same_number_of_items():
    _, labels = planted(n_per=30, k=3, R=20, seed=1)
    n = labels.shape[0]
    res = pla(labels, 3, fit_fraction=0.21, random_state=0)
    assert res.fit_index.size == int(np.ceil(0.21 * n))
    adata = ad.AnnData(np.zeros((n, 1)))
    adata.obsm["scc_ensemble"] = labels
    scc.tl.pcc(adata, 3, fit_fraction=0.21, n_init=1, pairs="ensemble")
    assert adata.uns["pcc"]["fit_size"] == int(np.ceil(0.21 * n))


def test_pcc_consensus_is_what_tl_pcc_stores():
    _, labels = planted(n_per=25, k=3, R=20, seed=2)
    route = FitRoute(fit_size=50)
    out = pcc_consensus(labels, "auto", route=route, pairs="ensemble", random_state=3)
    adata = ad.AnnData(np.zeros((labels.shape[0], 1)))
    adata.obsm["scc_ensemble"] = labels
    scc.tl.pcc(adata, "auto", fit_size=50, pairs="ensemble", random_state=3)
    # store_consensus renormalises the rows: equal up to rounding
    np.testing.assert_allclose(adata.obsm["pcc_membership"], out.membership, atol=1e-12)
    np.testing.assert_array_equal(adata.uns["pcc"]["fit_index"], out.fit_indices)
    assert adata.uns["pcc"]["route"] == out.route == "dense"
    assert adata.uns["pcc"]["n_clusters_chosen"] == out.plan.n_clusters


def test_settings_refuse_unknown_and_removed_names():
    with pytest.raises(AttributeError, match="set auto_fit_size instead"):
        scc.settings.auto_fit_above = 10
    with pytest.raises(AttributeError, match="the settings are max_dense_bytes"):
        scc.settings.max_dens_bytes = 10


def test_settings_take_none_only_where_it_means_each_methods_default(monkeypatch):
    for name in ("max_dense_bytes", "dense_auto_max_items"):
        with pytest.raises(ValueError, match=f"{name} must be a whole number, got None"):
            setattr(scc.settings, name, None)
    with pytest.raises(ValueError, match="auto_fit_size must be a whole number or None"):
        scc.settings.auto_fit_size = "10k"
    monkeypatch.setattr(scc.settings, "auto_fit_size", 500)
    scc.settings.auto_fit_size = None
    assert scc.settings.auto_fit_size is None


@pytest.mark.parametrize("method", ["pcc", "pla"])
def test_tl_fits_auto_subset_by_default(monkeypatch, method):
    # both methods fit at most settings.auto_fit_size items unless told otherwise
    adata = scc.datasets.iris()
    scc.tl.ensemble(adata, 30, k=3, random_state=0, progress=False)
    monkeypatch.setattr(scc.settings, "auto_fit_size", 100)

    def fitted(key: str) -> int:  # PCC records the count, PLA the fitted items
        rec = adata.uns[key]
        return rec["fit_size"] if method == "pcc" else len(rec["fit_index"])

    with scanpy_log("info") as log:
        getattr(scc.tl, method)(adata, n_clusters=3, progress=False)
    assert fitted(method) == 100
    if method == "pla":  # the user is told that most cells were folded in
        assert "fitted 100 of 150 cells (fit_size='auto'); the other 50 folded in" in log.getvalue()
    getattr(scc.tl, method)(adata, n_clusters=3, fit_size=None, key_added="all", progress=False)
    assert fitted("all") == 150


def test_pcc_plan_keeps_the_matched_partitions_row_major():
    # the extension's pair counts read an item's labels as one row: a column-major copy
    # of the matched partitions made them 8-14x slower at 10^6 items
    from scconsensus.core.pcc._consensus import _plan

    rng = np.random.default_rng(0)
    truth = np.repeat(np.arange(3), 40)
    cols = [truth * k + rng.integers(0, k, truth.size) for k in (1, 1, 2, 2, 5, 5, 9)]
    labels = np.stack(cols, axis=1).astype(np.int32)
    plan, kept, fitted, _, numbered = _plan(labels, 3, "matched", "spectral", 0, None, None)
    assert plan.columns.size < labels.shape[1]  # a real selection of columns
    assert numbered  # every partition uses its ids 0..k-1
    assert kept.flags.c_contiguous and fitted.flags.c_contiguous
    np.testing.assert_array_equal(kept, labels[:, plan.columns])


def _counted(monkeypatch, function, n_items: int) -> list[int]:
    """Calls of ``function`` on ``n_items``-row label arrays, wherever a package module
    imported it (``check_labels``, ``_numbered``)."""
    import sys

    calls = []

    def counting(labels, *args, **kwargs):
        if np.shape(labels)[0] == n_items:
            calls.append(1)
        return function(labels, *args, **kwargs)

    for module in list(sys.modules.values()):
        name = function.__name__
        if module.__name__.startswith("scconsensus") and getattr(module, name, None) is function:
            monkeypatch.setattr(module, name, counting)
    return calls


def test_pcc_consensus_checks_the_whole_ensemble_once(monkeypatch):
    # the plan, its partition sizes and the extension each checked the labels and their
    # numbering again: 0.2 s per pass over 10^6 items and 100 partitions
    rng = np.random.default_rng(0)
    truth = np.repeat(np.arange(3), 200)
    cols = [truth * k + rng.integers(0, k, truth.size) for k in (1, 1, 2, 2, 5, 9)]
    labels = np.stack(cols, axis=1).astype(np.int32)
    checks = _counted(monkeypatch, check_labels, labels.shape[0])
    numbering = _counted(monkeypatch, _numbered, labels.shape[0])
    res = pcc_consensus(labels, 3, route=FitRoute(fit_size=200), random_state=0)
    assert res.fit_indices is not None  # the extension ran on all 600 items
    assert (len(checks), len(numbering)) == (1, 1)


@pytest.mark.parametrize("shift", [1, 10**6])
def test_pcc_consensus_same_result_for_other_ids(shift):
    # ids 1..k or sparse ones are renumbered where tables are indexed by them: the plan,
    # the fit and the extension see the same ensemble as with 0..k-1
    rng = np.random.default_rng(1)
    truth = np.repeat(np.arange(3), 200)
    cols = [truth * k + rng.integers(0, k, truth.size) for k in (1, 2, 2, 3, 5)]
    labels = np.stack(cols, axis=1).astype(np.int32)
    labels[rng.random(labels.shape) < 0.1] = -1
    other = np.where(labels >= 0, labels * shift + shift, -1)
    route = FitRoute(fit_size=200)
    a = pcc_consensus(labels, 3, route=route, random_state=0)
    b = pcc_consensus(other, 3, route=route, random_state=0)
    assert a.fit_indices is not None
    np.testing.assert_array_equal(a.membership, b.membership)
    assert a.fit.objective == b.fit.objective


def test_plan_adds_the_nearest_partitions_until_every_sampled_item_is_in_one():
    """K = 3 matches partitions 0 and 1; item 0 is sampled only by partition 2 (6
    clusters), item 1 by none: partition 2 joins, partition 3 (9 clusters) is not needed."""
    from scconsensus.core._plan import _cover_items, _coverage

    ks = np.array([3, 3, 6, 9])
    labels = (np.arange(30)[:, None] % ks).astype(np.int32)
    labels[0, [0, 1, 3]] = -1
    labels[1] = -1
    covered, coverable = _coverage(labels, np.array([0, 1]))
    assert not covered[0] and coverable[0] and not covered[1] and not coverable[1]
    assert covered[2:].all() and coverable[2:].all()
    np.testing.assert_array_equal(_cover_items(labels, ks, 3, np.array([0, 1])), [0, 1, 2])
    np.testing.assert_array_equal(_cover_items(labels, ks, 3, np.array([0, 1, 2])), [0, 1, 2])


@pytest.mark.parametrize("method", ["pcc", "pla"])
def test_fitted_subset_follows_every_kind_of_seed(method):
    # a numpy integer or a Generator drew seed 0's subset before
    adata = scc.datasets.iris()
    scc.tl.ensemble(adata, 30, k=3, random_state=0, progress=False)
    keys = itertools.count()

    def subset(seed) -> np.ndarray:
        key = f"s{next(keys)}"
        run = getattr(scc.tl, method)
        run(adata, n_clusters=3, fit_size=100, random_state=seed, key_added=key, progress=False)
        return np.asarray(adata.uns[key]["fit_index"])  # one name for both methods

    assert np.array_equal(subset(5), subset(np.int64(5)))
    assert not np.array_equal(subset(5), subset(6))
    rng = np.random.default_rng
    assert np.array_equal(subset(rng(7)), subset(rng(7)))
    assert not np.array_equal(subset(rng(7)), subset(rng(8)))
