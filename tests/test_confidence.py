"""Which cells are uncertain (issue 24): stored = fitted, a confidence with a meaning,
K as a maximum, and the calibration figures users can compute on labelled data."""

from __future__ import annotations

import warnings

import anndata as ad
import numpy as np
import pandas as pd
import pytest

import scconsensus as scc
from scconsensus import metrics
from scconsensus.core import coassociation, ensemble_confidence, ensemble_support
from scconsensus.core.pcc._divergences import check_divergence
from scconsensus.core.pcc._greedy import objective_dense


def noisy_ensemble(n=300, groups=6, n_partitions=40, seed=0):
    """Planted groups, partitions with 15 % of their labels replaced by noise over 8 ids."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, groups, n)
    cols = []
    for _ in range(n_partitions):
        col = truth.copy()
        noise = rng.random(n) < 0.15
        col[noise] = rng.integers(0, 8, noise.sum())
        cols.append(col)
    return np.stack(cols, axis=1).astype(np.int32), truth


def test_stored_membership_is_the_solvers_solution():
    """K above the groups leaves clusters with mass that are nobody's argmax: they stay."""
    labels, _ = noisy_ensemble()
    adata = ad.AnnData(np.zeros((labels.shape[0], 1)))
    adata.obsm["scc_ensemble"] = labels
    scc.tl.pcc(adata, n_clusters=10, partitions="all", progress=False)
    M = adata.obsm["pcc_membership"]
    C, N = coassociation(labels)
    stored = objective_dense(C.astype(np.float64), N.astype(np.float64), M, check_divergence("kl"))
    assert stored == pytest.approx(adata.uns["pcc"]["objective"], rel=1e-9)
    # labelled clusters first: category c is column c
    codes = adata.obs["pcc"].cat.codes.to_numpy()
    k = adata.obs["pcc"].cat.categories.size
    assert set(codes) == set(range(k)) and M.shape[1] >= k
    np.testing.assert_array_equal(M[:, :k].argmax(axis=1), codes)


@pytest.mark.parametrize("mode", ["dense", "sparse", "lowrank", "subset"])
def test_stored_rows_are_the_fitted_rows_on_every_route(mode):
    labels, _ = noisy_ensemble(n=400, seed=1)
    route = scc.core.FitRoute(mode=mode, fit_size="auto")
    kw = {"route": route, "divergence": "l2" if mode == "lowrank" else "kl"}
    if mode == "subset":
        kw = {"route": scc.core.FitRoute(mode="dense", fit_size=200)}
    out = scc.core.pcc_consensus(labels, 6, random_state=0, **kw)
    fitted = out.membership if out.fit_indices is None else out.membership[out.fit_indices]
    # the same point up to the order of the columns
    perm = [int(np.argmin(np.abs(out.fit.membership - fitted[:, [c]]).sum(0))) for c in range(6)]
    np.testing.assert_allclose(fitted, out.fit.membership[:, perm], atol=1e-12)


def test_fit_objective_is_that_of_the_returned_membership():
    labels = np.repeat([[0, 0, 1], [1, 1, 0], [2, 2, 2]], 20, axis=0)
    labels[::7, 0] = 1  # some disagreement, so that no membership is exactly a vertex
    C, N = coassociation(labels)
    res = scc.core.pcc(C, N, 5, "kl", random_state=0)
    assert res.n_clusters < 5  # clusters without mass were dropped
    got = objective_dense(
        C.astype(np.float64), N.astype(np.float64), res.membership, check_divergence("kl")
    )
    assert got == pytest.approx(res.objective, rel=1e-9)


def test_a_k_far_above_the_data_leaves_a_finite_objective_of_the_stored_point():
    """A trial fitted n_clusters=[3, 140] on iris (and 16 alone): dropping the clusters
    below min_mass put items wholly in one cluster with partners some partition kept
    apart, and the reported objective was inf."""
    a = scc.datasets.iris()
    scc.tl.ensemble(a, random_state=0, progress=False)
    for K in (16, 30):
        fit = scc.core.pcc_consensus(a.obsm["scc_ensemble"], K, random_state=0).fit
        assert np.isfinite(fit.objective)
        # within a few per cent of the solver's point, which keeps every cluster
        assert fit.objective <= 1.03 * fit.restart_objectives.min()
    assert fit.n_clusters < 30  # clusters below min_mass are still dropped where they can be


def test_ensemble_support_rows_and_confidence_range():
    labels, truth = noisy_ensemble(seed=3)
    S = ensemble_support(labels, truth)
    np.testing.assert_allclose(S.sum(axis=1), 1.0)
    conf = ensemble_confidence(labels, truth)
    assert ((conf >= 0) & (conf <= 1)).all()
    # an item labelled against the ensemble's evidence gets a low confidence
    wrong = truth.copy()
    wrong[:10] = (truth[:10] + 1) % 6
    low = ensemble_confidence(labels, wrong)
    assert low[:10].max() < conf[10:].min()
    assert np.isnan(ensemble_confidence(labels, np.r_[-1, truth[1:]])[0])


@pytest.mark.parametrize("size", [3, 7])
def test_confidence_refuses_labels_of_another_length(size):
    # the compiled kernels index the per-item sums by the ensemble's rows: labels of
    # another length must fail before them, not write past the arrays' ends
    ens = np.array([[0, 0], [0, 0], [0, 1], [1, 1], [1, 1]], dtype=np.int32)
    labels = np.zeros(size, dtype=np.int64)
    for fn in (ensemble_confidence, ensemble_support):
        with pytest.raises(ValueError, match=r"one consensus label per item of the ensemble \(5\)"):
            fn(ens, labels)
    with pytest.raises(ValueError, match="1-D"):
        ensemble_confidence(ens, np.zeros((5, 1), dtype=np.int64))


def _shares_by_partition(ensemble, labels):
    """``(support, recall)`` of :mod:`scconsensus.core._confidence` as its definition reads."""
    n, k = labels.size, labels.max() + 1
    ensemble = np.stack(
        [np.unique(c, return_inverse=True)[1] - (c < 0).any() for c in ensemble.T], 1
    )
    support, seen, recall, counted = np.zeros((n, k)), np.zeros(n), np.zeros(n), np.zeros(n)
    fine = ensemble.max(axis=0) + 1 >= k
    for r in range(ensemble.shape[1]):
        for i in range(n):
            a = ensemble[i, r]
            if a < 0:
                continue
            mates = (ensemble[:, r] == a) & (labels >= 0)
            if fine[r] and mates.any():
                support[i] += np.bincount(labels[mates], minlength=k) / mates.sum()
                seen[i] += 1
            if labels[i] >= 0:
                recall[i] += (mates & (labels == labels[i])).sum() / (
                    (ensemble[:, r] >= 0) & (labels == labels[i])
                ).sum()
                counted[i] += 1
    return support / np.maximum(seen, 1)[:, None], recall / np.maximum(counted, 1)


@pytest.mark.parametrize("seed", range(4))
def test_confidence_kernels_match_the_definition(seed):
    rng = np.random.default_rng(seed)
    ens, truth = noisy_ensemble(n=60, groups=3, n_partitions=7, seed=seed)
    ens = np.where(rng.random(ens.shape) < 0.2, -1, ens * 1000 + 7).astype(np.int32)  # sparse ids
    labels = truth.copy()
    labels[rng.random(labels.size) < 0.1] = -1
    support, recall = _shares_by_partition(ens, labels)
    np.testing.assert_allclose(ensemble_support(ens, labels), support, atol=1e-12)
    mine = support[np.arange(labels.size), np.maximum(labels, 0)]
    want = np.where(labels >= 0, 0.5 * (mine + recall), np.nan)
    np.testing.assert_allclose(ensemble_confidence(ens, labels), want, atol=1e-12)


@pytest.mark.parametrize("seed", range(3))
def test_transferred_confidence_matches_the_definition(seed):
    """New items counted against the ensemble's items only (co-members of nobody)."""
    rng = np.random.default_rng(seed)
    ens, truth = noisy_ensemble(n=60, groups=3, n_partitions=7, seed=seed)
    ens = np.where(rng.random(ens.shape) < 0.2, -1, ens).astype(np.int32)
    ref, new = ens[:45], ens[45:].copy()
    new[0, 0] = 9  # a cluster no reference item is in
    labels, new_labels = truth[:45], truth[45:].copy()
    new_labels[1], new_labels[2] = -1, 5  # no label; a label no reference item has
    got = scc.core.transferred_confidence(ref, labels, new, new_labels)
    k = labels.max() + 1
    fine = np.array([np.unique(c[c >= 0]).size >= k for c in ref.T])
    for j, (row, c) in enumerate(zip(new, new_labels, strict=True)):
        if c < 0:
            assert np.isnan(got[j])
            continue
        prec, recall = [], []
        for r, a in enumerate(row):
            if a < 0:
                continue
            mates = (ref[:, r] == a) & (labels >= 0)
            if fine[r] and mates.any():
                prec.append((labels[mates] == c).mean())
            own = (ref[:, r] >= 0) & (labels == c)
            if own.any():  # a partition that sampled none of the cluster says nothing
                recall.append((mates & own).sum() / own.sum())
        want = 0.5 * (np.mean(prec) if prec else 0.0) + 0.5 * (np.mean(recall) if recall else 0)
        assert got[j] == pytest.approx(want, abs=1e-12)
    assert got[2] == 0.0
    # the ensemble's own items, as new ones: ensemble_confidence
    np.testing.assert_allclose(
        scc.core.transferred_confidence(ens, truth, ens, truth), ensemble_confidence(ens, truth)
    )
    with pytest.raises(ValueError, match=r"new_ensemble must be \(n_new, 7\)"):
        scc.core.transferred_confidence(ens, truth, ens[:, :3], truth)


def test_confidence_ranks_the_misassigned_cells():
    """iris at the true K: the max membership ranked them at chance (AUROC 0.45, issue 24)."""
    adata = scc.datasets.iris()
    scc.tl.ensemble(adata, random_state=0, progress=False)
    scc.tl.pcc(adata, n_clusters=3, progress=False)
    table = scc.tl.compare(adata, ["pcc"], truth="truth")
    row = table.iloc[-1]
    assert row["auroc"] >= 0.85
    assert row["ece"] <= 0.15
    codes = adata.obs["pcc"].cat.codes.to_numpy()
    right = metrics.majority_correct(adata.obs["truth"], codes)
    top = adata.obsm["pcc_membership"].max(axis=1)
    assert row["auroc"] > metrics.confidence_auroc(top, right) + 0.2


def test_calibration_metrics_by_hand():
    assert metrics.majority_correct([0, 0, 1, 1, 1], [0, 0, 0, 1, 1]).tolist() == [
        True,
        True,
        False,
        True,
        True,
    ]
    assert metrics.confidence_auroc([0.2, 0.9, 0.9], [False, True, True]) == 1.0
    assert metrics.confidence_auroc([0.5, 0.5], [False, True]) == 0.5
    assert np.isnan(metrics.confidence_auroc([0.5, 0.7], [True, True]))
    table = metrics.calibration([0.05, 0.95, 0.95, 0.55], [False, True, False, True], n_bins=10)
    assert table["n_items"].tolist() == [1, 1, 2]
    assert table["accuracy"].tolist() == [0.0, 1.0, 0.5]
    ece = metrics.expected_calibration_error([0.05, 0.95, 0.95, 0.55], [False, True, False, True])
    assert ece == pytest.approx((0.05 + 0.45 + 2 * 0.45) / 4)
    with pytest.raises(ValueError, match="n_bins"):
        metrics.calibration([0.5], [True], n_bins=0)


def test_pl_calibration_draws_each_key(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    adata = scc.datasets.iris()
    scc.tl.ensemble(adata, n_partitions=30, random_state=0, progress=False)
    scc.tl.pcc(adata, n_clusters=3, progress=False)
    scc.tl.pla(adata, n_clusters=3, progress=False)
    ax = scc.pl.calibration(adata, ["pcc", "pla"], show=False)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert [lab.split(":")[0] for lab in labels] == ["pcc", "pla"]
    assert all("AUROC" in lab and "ECE" in lab for lab in labels)
    with pytest.raises(ValueError, match="truth='nope'"):
        scc.pl.calibration(adata, "pcc", truth="nope", show=False)
    with pytest.raises(ValueError, match="No consensus result 'dpp'"):
        scc.pl.calibration(adata, "dpp", show=False)


def test_auroc_and_ece_leave_out_the_same_nan_items():
    conf, right = [0.9, np.nan, 0.3, 0.6], [1, 1, 0, 0]
    # was NaN for the AUROC while the ECE dropped the NaN item
    assert metrics.confidence_auroc(conf, right) == 1.0
    assert metrics.confidence_auroc(conf, right) == metrics.confidence_auroc(
        [0.9, 0.3, 0.6], [1, 0, 0]
    )
    assert metrics.expected_calibration_error(conf, right) == pytest.approx(
        metrics.expected_calibration_error([0.9, 0.3, 0.6], [1, 0, 0])
    )
    assert np.isnan(metrics.confidence_auroc([np.nan, 0.4], [True, False]))  # one class left
    assert np.isnan(metrics.expected_calibration_error([np.nan], [True]))  # nothing to bin
    with pytest.raises(ValueError, match="confidence has 3 items but correct has 2"):
        metrics.confidence_auroc([0.1, 0.2, 0.3], [True, False])


def _calibration_adata(seed=0):
    """Two results "a", "b" (200 cells, 2 classes, 20 % misplaced, confidences lower on
    them) and "half", a result with "a"'s labels on the first 100 cells only."""
    from scconsensus.tl._anndata import store_consensus

    rng = np.random.default_rng(seed)
    n = 200
    adata = ad.AnnData(np.zeros((n, 1)))
    adata.obs_names = [f"cell{i}" for i in range(n)]
    truth = rng.integers(0, 2, n)
    adata.obs["truth"] = pd.Categorical(np.array(["x", "y"])[truth])
    for key in ("a", "b"):
        wrong = rng.random(n) < 0.2
        store_consensus(
            adata, key, np.eye(2)[np.where(wrong, 1 - truth, truth)], method="pcc", params={}
        )
        adata.obs[f"{key}_confidence"] = np.clip(rng.normal(0.85 - 0.3 * wrong, 0.1), 0, 1)
    adata.obs["half"] = adata.obs["a"].astype(object).where(np.arange(n) < 100)
    adata.obs["half_confidence"] = adata.obs["a_confidence"]
    return adata


def test_pl_calibration_refuses_before_drawing():
    import matplotlib.pyplot as plt

    adata = _calibration_adata()
    plt.close("all")
    bad = [
        ({"keys": "nope"}, "No consensus result 'nope'"),
        ({"n_bins": 0}, "n_bins must be a positive integer"),
        ({"n_bins": 3.0}, "n_bins must be a positive integer"),
        ({"keys": []}, "keys is empty"),
        ({"truth": "nope"}, "truth='nope' is not a column"),
        ({"truth": [0, 1]}, "truth has 2 labels but adata has 200"),
        ({"truth": None}, "truth is None: pass the known classes"),
    ]
    for kwargs, message in bad:
        with pytest.raises(ValueError, match=message):
            scc.pl.calibration(adata, **{"keys": "a", **kwargs, "show": False})
        assert plt.get_fignums() == [], kwargs  # no empty figure left open


def test_pl_calibration_takes_the_truth_and_keys_compare_takes():
    import matplotlib.pyplot as plt

    adata = _calibration_adata()

    def legend(**kwargs):
        ax = scc.pl.calibration(adata, show=False, **kwargs)
        texts = [t.get_text() for t in ax.get_legend().get_texts()]
        plt.close(ax.figure)
        return texts

    want = legend(keys=["a", "b"], truth="truth")
    assert legend(keys=None) == want  # every result, as tl.compare
    series = adata.obs["truth"]
    for truth in (series.to_numpy(), list(series), series.iloc[::-1]):
        assert legend(keys=["a", "b"], truth=truth) == want
    table = scc.tl.compare(adata, ["a", "b"], truth=series.iloc[::-1]).iloc[1:]
    assert want == [
        f"{k}: AUROC {r.auroc:.2f}, ECE {r.ece:.3f}"
        for k, r in zip(["a", "b"], table.itertuples(), strict=True)
    ]


def test_pl_calibration_marker_area_is_one_count_scale_for_all_keys():
    """Marker areas were scaled per key (each key's largest bin 300 pt²): "half", with
    half the cells, looked as populous as "a"."""
    import matplotlib.pyplot as plt

    adata = _calibration_adata()
    ax = scc.pl.calibration(adata, ["a", "half"], n_bins=5, show=False)
    per_cell = []
    for key, points in zip(["a", "half"], ax.collections, strict=True):
        labels = adata.obs[key]
        both = labels.notna().to_numpy()
        conf = adata.obs[f"{key}_confidence"].to_numpy()[both]
        right = metrics.majority_correct(adata.obs["truth"][both], labels[both].astype(str))
        counts = metrics.calibration(conf, right, n_bins=5)["n_items"].to_numpy()
        per_cell.append(points.get_sizes() / counts)
    per_cell = np.concatenate(per_cell)
    np.testing.assert_allclose(per_cell, per_cell[0])  # one area per cell in every key
    legends = [*ax.artists, *ax.figure.legends]  # the figure's, in a figure of its own
    size_legend = next(a for a in legends if a.get_title().get_text() == "cells per bin")
    counts = [int(t.get_text()) for t in size_legend.get_texts()]
    areas = [h.get_markersize() ** 2 for h in size_legend.legend_handles]
    np.testing.assert_allclose(np.array(areas) / counts, per_cell[0])  # readable counts
    plt.close(ax.figure)


def test_matched_partitions_never_fit_a_handful():
    from scconsensus.core import matched_partitions

    sizes = np.full(1000, 4)
    assert matched_partitions(sizes, 8).size == 1000  # K as a maximum: the nearest resolution
    sizes = np.r_[np.full(50, 3), np.full(50, 30)]
    kept = matched_partitions(sizes, 12)
    assert kept.size >= 10


def soft_synthetic(seed=0):
    return scc.datasets.soft_gaussian_mixture(
        n_per_component=200, n_partitions=1000, random_state=seed
    )


@pytest.mark.slow
@pytest.mark.parametrize("n_clusters", [4, 8, "auto"])
def test_pcc_paper_soft_recovery_with_the_defaults(n_clusters):
    """Lourenço et al. (2015), Sect. 7.1, through tl.pcc's defaults: K exact, K as a
    maximum (the paper's use) and K chosen; JS at most the paper's 0.0012 (+ margin)."""
    scores = []
    for seed in (0, 1):
        adata = soft_synthetic(seed)
        scc.tl.pcc(adata, n_clusters=n_clusters, progress=False)
        assert adata.obsm["pcc_membership"].shape[1] == 4
        scores.append(metrics.js_criterion(adata.obsm["pcc_membership"], adata.obsm["soft_truth"]))
    assert np.mean(scores) <= 0.0015


def test_select_k_on_one_resolution_chooses_at_most_that_resolution():
    adata = scc.datasets.soft_gaussian_mixture(n_per_component=60, n_partitions=100, random_state=0)
    sel = scc.core.select_k(adata.obsm["scc_ensemble"])
    assert sel.n_clusters == 4
    assert "same number of clusters" in sel.reason


def test_an_unlabelled_item_has_no_confidence_in_every_layout():
    """DPP, CCP and consensus-k store the membership in the own cluster: an item with no
    label gets NaN there too, as the docs say (it got its largest membership)."""
    from scconsensus.tl._anndata import store_consensus

    a = ad.AnnData(np.zeros((4, 2)))
    M = np.array([[0.9, 0.1], [0.8, 0.2], [0.6, 0.4], [0.1, 0.9]])
    store_consensus(a, "d", M, labels=np.array([0, 0, -1, 1]), method="pcc", params={})
    conf = a.obs["d_confidence"].to_numpy()
    assert np.isnan(conf[2]) and a.obs["d"].isna().tolist() == [False, False, True, False]
    np.testing.assert_allclose(conf[[0, 1, 3]], [0.9, 0.8, 0.9])


def test_an_exact_tie_is_unlabelled_with_a_warning_naming_only_placed_items():
    """A user trial found a sampled cell at exactly 0.5 / 0.5 left unlabelled in silence;
    items no partition placed are the consensus' own warning, not counted again."""
    from scconsensus.tl._anndata import store_consensus

    a = ad.AnnData(np.zeros((4, 2)))
    M = np.array([[0.9, 0.1], [0.5, 0.5], [0.5, 0.5], [0.1, 0.9]])
    E = np.array([[0, 0], [0, 1], [-1, -1], [1, 1]], dtype=np.int32)
    with pytest.warns(RuntimeWarning, match=r"^1 item\(s\) have a membership tied exactly"):
        store_consensus(a, "pcc", M, method="pcc", params={}, ensemble=E)
    assert a.obs["pcc"].isna().tolist() == [False, True, True, False]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        store_consensus(a, "pcc", M[[0, 3]].repeat(2, axis=0), method="pcc", params={}, ensemble=E)
        # a row without mass (DPP's lone outlier, no ensemble) has no evidence: no tie
        store_consensus(a, "dpp", np.vstack([M[[0, 3, 0]], [0.0, 0.0]]), method="dpp", params={})
    assert a.obs["dpp"].isna().tolist() == [False, False, False, True]
