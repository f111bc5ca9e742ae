"""How many groups, as a new user asks for them (issue 28's trial): what the finish line
counts, how a refused number of clusters is explained, the forms a list of K may take,
and the plots of the evidence for K."""

from __future__ import annotations

import anndata as ad
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from _helpers import evidence_table, fails_cleanly, scanpy_log

import scconsensus as scc
from scconsensus.core import plan_consensus


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def small():
    """40 items in 3 groups, with an ensemble over k = 2..4."""
    rng = np.random.default_rng(0)
    truth = np.repeat([0, 1, 2], [14, 13, 13])
    X = rng.normal(scale=4.0, size=(3, 5))[truth] + rng.standard_normal((40, 5))
    a = ad.AnnData(X)
    a.obs_names = [f"c{i}" for i in range(40)]
    scc.tl.ensemble(a, 12, k=(2, 4), random_state=0, progress=False)
    return a


@pytest.fixture
def adata(small):
    return small.copy()


def _mass_without_label() -> ad.AnnData:
    """90 items in 3 groups, the largest split at random by a third of the partitions:
    PCC at K = 4 gives the fourth cluster mass (about 4 items) but no item's label."""
    rng = np.random.default_rng(0)
    truth = np.repeat([0, 1, 2], [40, 30, 20])
    labels = np.tile(truth[:, None], (1, 12))
    for j in range(4):
        labels[:40, j] = rng.integers(0, 2, 40) * 3
    a = ad.AnnData(np.zeros((90, 2)))
    a.obsm["scc_ensemble"] = labels.astype(np.int32)
    return a


# ------------------------------------------------------------- 1: the finish line


def test_pcc_finish_line_counts_the_clusters_that_label_cells():
    a = _mass_without_label()
    with scanpy_log("info") as log:
        scc.tl.pcc(a, n_clusters=4, partitions="all", progress=False)
    assert a.obsm["pcc_membership"].shape[1] == 4 and a.obs["pcc"].nunique() == 3
    assert (
        "finished: 4 clusters fitted, 3 of them label cells (the other 1 carries mass only: "
        "see .obsm['pcc_membership'])"
    ) in log.getvalue()


@pytest.mark.parametrize("method", ["pcc", "pla", "dpp"])
def test_finish_line_counts_the_clusters_written(adata, method):
    kwargs = {"n_runs": 5} if method == "dpp" else {"n_clusters": 3}
    with scanpy_log("info") as log:
        getattr(scc.tl, method)(adata, **kwargs)
    n = adata.obs[method].cat.categories.size
    assert adata.obsm[f"{method}_membership"].shape[1] == n
    assert f"finished: {n} clusters" in log.getvalue()


# ------------------------------------------- 2: a refused K names what is accepted

LISTS = r'Give "auto" \(K chosen from the ensemble\), an integer >= 2 or a list of them'


@pytest.mark.parametrize("method", ["pcc", "pla"])
@pytest.mark.parametrize(
    ("n_clusters", "match"),
    [
        ("AUTO", r"not the string 'AUTO'\. " + LISTS + r'.*\("auto" is lower case\)'),
        ("three", r"must be an integer >= 2, not the string 'three'\. " + LISTS),
        ("3", r"not the string '3'; pass it without quotes\. " + LISTS),
        (None, r"must be an integer, got None\. " + LISTS),
        (1, r"must be at least 2, got 1\. " + LISTS),
        (0, r"must be at least 2, got 0\. " + LISTS),
        ({3: 4}, r"must be an integer, got \{3: 4\}\. " + LISTS),
        ([[3, 4]], r"n_clusters=\[\[3, 4\]\] nests lists; give one flat list of K"),
        ([3, (4, 5)], r"nests lists; give one flat list of K, e\.g\. n_clusters=\[4, 8\]"),
        ([[3, 4]], r"n_clusters=\[4, 8\] \(each K is fitted"),
        (np.array([[3, 4]]), r"nests lists"),
    ],
)
def test_a_refused_k_names_the_forms_n_clusters_takes(adata, method, n_clusters, match):
    fails_cleanly(getattr(scc.tl, method), adata, match, n_clusters=n_clusters)


def test_core_plan_names_auto_and_an_integer_without_lists(small):
    labels = small.obsm["scc_ensemble"]
    forms = r'Give "auto" \(K chosen from the ensemble\) or an integer >= 2'
    with pytest.raises(ValueError, match=forms + r' \("auto" is lower case\)\.$'):
        plan_consensus(labels, "Auto")
    with pytest.raises(ValueError, match=r"must be at least 2, got 1\. " + forms + r"\.$"):
        plan_consensus(labels, 1)


def test_dpp_names_its_own_forms(adata):
    match = r'Give "auto" or None \(the number chosen from the data\) or an integer >= 1'
    fails_cleanly(scc.tl.dpp, adata, match + r' \("auto" is lower case\)', n_clusters="AUTO")
    once = r"This method returns one clustering: call it once per K\."
    fails_cleanly(scc.tl.dpp, adata, match + r"\. " + once, n_clusters=[2, 5])


@pytest.mark.parametrize(
    ("forms", "Ks"),
    [
        (range(2, 4), [2, 3]),
        ((2, 3), [2, 3]),
        # CPython iterates {9, 2} as [9, 2] ({3, 2} already as [2, 3]): the sort is seen
        ({9, 2}, [2, 9]),
        (np.array([2, 3]), [2, 3]),
        (pd.Series([2, 3]), [2, 3]),
    ],
)
def test_any_flat_iterable_of_k_is_a_list(small, forms, Ks):
    a, b = small.copy(), small.copy()
    scc.tl.pcc(a, n_clusters=Ks, progress=False)
    with scanpy_log("info") as log:
        scc.tl.pcc(b, n_clusters=forms, progress=False)
    assert f"n_clusters={Ks}: one fit per K" in log.getvalue()  # a set in increasing order
    for K in Ks:
        pd.testing.assert_series_equal(a.obs[f"pcc_k{K}"], b.obs[f"pcc_k{K}"])


# ------------------------------------------------------------- consensus_k's k


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"max_k": "auto"}, r"max_k must be an integer >= 2, not the string 'auto'\. max_k is"),
        ({"max_k": 0}, "max_k must be at least 2, got 0"),
        ({"max_k": None}, "max_k must be an integer, got None"),
        ({"reps": "many"}, "reps must be a positive integer, not the string 'many'"),
        ({"keep_k": 3.5}, r"keep_k must be an integer, got 3\.5\. Give 'best', 'all', or k"),
        ({"keep_k": [2, "x"]}, "keep_k must be an integer, not the string 'x'"),
        # a mapping is no list of k, as for n_clusters (its keys were kept)
        ({"keep_k": {3: 4}}, r"keep_k must be an integer, got \{3: 4\}\. Give 'best', 'all'"),
    ],
)
def test_consensus_k_refuses_before_it_logs_its_start(adata, kwargs, match):
    with scanpy_log("info") as log:
        fails_cleanly(scc.tl.consensus_k, adata, match, **{"reps": 3, **kwargs})
    assert "consensus_k:" not in log.getvalue()  # no "k = 2..auto"


@pytest.mark.parametrize("keep_k", [3.0, np.int64(3), np.array(3), {3}])
def test_consensus_k_keeps_an_integral_k_given_in_any_form(adata, keep_k):
    scc.tl.consensus_k(adata, max_k=4, reps=3, keep_k=keep_k, progress=False)
    assert adata.uns["consensus_k"]["keys"] == ["consensus_k_k3"]


# ------------------------------------------------------------------- 3: the plots


def test_k_selection_leaves_room_for_a_strength_near_one():
    # a split whose level is 1.0 (nested data at K=4, a one-resolution ensemble): its
    # strength was written above the axes' top, over the title
    a = ad.AnnData(np.zeros((3, 1)))
    a.uns["pcc"] = {
        "k_selection": evidence_table([0.0, 0.06, 0.0, 0.0, 0.0, 0.5, 0.0, 0.0], 3),
        "k_selection_threshold": 0.05,
    }
    ax = scc.pl.k_selection(a, "pcc", show=False)
    renderer = ax.figure.canvas.get_renderer()
    box = ax.get_window_extent(renderer)
    assert [t.get_text() for t in ax.texts] == ["0.50", "0.06"]
    for text in ax.texts:
        label = text.get_window_extent(renderer)
        assert box.y0 <= label.y0 and label.y1 <= box.y1, text.get_text()


@pytest.fixture(scope="module")
def monti():
    a = scc.datasets.iris()
    scc.tl.consensus_k(a, max_k=5, reps=10, distance="euclidean", progress=False)
    return a


def test_pac_marks_the_best_k(monti):
    best = int(monti.uns["consensus_k"]["best_k"])
    ax = scc.pl.pac(monti, "consensus_k", show=False)
    (mark,) = [line for line in ax.get_lines() if "best k" in line.get_label()]
    assert mark.get_label() == f"best k = {best} (lowest PAC)"
    assert list(mark.get_xdata()) == [best, best]
    # two sources: one mark each, named by its key (on a copy: monti is shared)
    two = monti.copy()
    two.uns["other"] = two.uns["consensus_k"]
    ax = scc.pl.pac(two, ["consensus_k", "other"], show=False)
    labels = [line.get_label() for line in ax.get_lines() if "best k" in line.get_label()]
    assert labels == [f"{key}: best k = {best} (lowest PAC)" for key in ("consensus_k", "other")]


def test_k_selection_of_consensus_k_points_to_its_plots(monti):
    match = r"consensus-k statistics.*scc\.pl\.pac\(adata, 'consensus_k'\).*\['best_k'\]"
    with pytest.raises(ValueError, match=match):
        scc.pl.k_selection(monti, "consensus_k", show=False)
    assert plt.get_fignums() == []
