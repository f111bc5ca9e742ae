"""Defects of the new-user trial: arguments accepted and silently misread, or refused late.

Each failing call must name the problem and the fix and leave the AnnData as it was.
"""

from __future__ import annotations

import warnings

import anndata as ad
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from _helpers import fails_cleanly

import scconsensus as scc
from scconsensus.core import plan_consensus, select_k, spectral_consensus
from scconsensus.core.pla import Weighting
from scconsensus.core.pla import pla as core_pla


@pytest.fixture(scope="module")
def small():
    """60 items in 3 groups with a stored ensemble."""
    rng = np.random.default_rng(0)
    truth = np.repeat([0, 1, 2], 20)
    X = rng.normal(scale=5.0, size=(3, 4))[truth] + rng.standard_normal((60, 4))
    a = ad.AnnData(X, obs=pd.DataFrame({"truth": pd.Categorical(truth.astype(str))}))
    a.obs_names = [f"c{i}" for i in range(60)]
    scc.tl.ensemble(a, 6, k=(2, 4), random_state=0)
    return a


@pytest.fixture
def adata(small):
    return small.copy()


_refused = fails_cleanly


# ------------------------------------------------------------------ 1, 2: tl.pla arguments


@pytest.mark.parametrize("mode", ["Dense", "full", "lowrank", 42])
def test_pla_unknown_mode_is_refused(adata, mode):
    _refused(scc.tl.pla, adata, r"mode=.*choose one of \['auto', 'dense', 'sparse'\]", mode=mode)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"weighted": True, "cv_folds": 1000}, r"cv_folds=1000 is more than the 60 fitted"),
        ({"weighted": True, "cv_folds": 1}, "cv_folds must be at least 2"),
        ({"weighted": True, "lam_grid": 5}, r"lam_grid must be a non-empty sequence.*lam="),
        ({"weighted": True, "lam_grid": []}, "lam_grid must hold positive"),
        ({"weighted": True, "lam_grid": [1.0, float("nan")]}, "must be finite"),
        ({"n_neighbors": -1}, "n_neighbors must be a non-negative integer"),
        ({"n_random": -2}, "n_random must be a non-negative integer"),
        ({"mode": "Dense"}, r"mode='Dense' is not supported"),
        ({"n_init": 0}, "n_init must be a positive integer"),
        ({"max_iter": 0}, "max_iter must be a positive integer"),
        ({"tol": "x"}, "tol must be a number"),
        ({"weighted": True, "lam": -1}, "lam must be a positive number or 'cv'"),
        ({"weighted": True, "cv_score": "auc"}, "cv_score='auc' is not supported"),
        ({"weighted": "yes"}, "weighted must be True or False"),
        ({"fit_size": -5}, "fit_size must be a positive integer"),
        ({"use_rep": "X_umap"}, r"use_rep='X_umap' is not in adata.obsm"),
    ],
)
def test_pla_bad_arguments_refused_before_planning(adata, kwargs, match, monkeypatch):
    def no_work(*args, **kwargs):
        raise AssertionError("planned before checking the arguments")

    monkeypatch.setattr("scconsensus.core.pla._consensus.plan_consensus", no_work)
    _refused(scc.tl.pla, adata, match, n_clusters=3, **kwargs)


@pytest.mark.parametrize("function", ["pcc", "pla", "coassociation"])
def test_misspelt_use_rep_refused_on_the_dense_route_too(adata, function):
    # the dense route never reads use_rep; a typo must not pass unnoticed
    _refused(getattr(scc.tl, function), adata, r"use_rep='X_pcaa' is not in", use_rep="X_pcaa")


def test_pla_lam_without_weighting_warns(adata):
    with pytest.warns(UserWarning, match=r"lam=5 has no effect with weighted=False"):
        scc.tl.pla(adata, n_clusters=3, lam=5)
    assert adata.uns["pla"]["params"]["weighted"] is False


def test_core_pla_cv_folds_counts_the_fitted_items(small):
    labels = small.obsm["scc_ensemble"]
    with pytest.raises(ValueError, match="more than the 30 fitted items"):
        core_pla(labels, 3, weighted=True, weighting=Weighting(cv_folds=40), fit_size=30)


# ------------------------------------------------------------------------ 3: select_k


@pytest.mark.parametrize("k", [3, 4, 5])
@pytest.mark.parametrize("n_partitions", [1, 3])
def test_select_k_unanimous_few_partitions_give_their_k(k, n_partitions):
    """Unanimous partitions give their k, not a warning that they are too few; only that
    one resolution cannot tell k groups from more."""
    truth = np.repeat(np.arange(k), 20)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sel = select_k(np.stack([truth] * n_partitions, axis=1))
    assert sel.n_clusters == k
    assert [str(w.message) for w in caught if "too few" in str(w.message)] == []
    assert any(f"whether the data hold {k} groups or more" in str(w.message) for w in caught)


def test_pcc_auto_on_three_agreeing_partitions_finds_the_five_groups():
    rng = np.random.default_rng(0)
    X = np.concatenate([rng.normal(c * 10, 1, (60, 5)) for c in range(5)])
    a = ad.AnnData(X)
    scc.tl.ensemble(a, n_partitions=3, k=5, random_state=0)
    scc.tl.pcc(a, n_init=1)
    assert a.obs["pcc"].nunique() == 5


def test_select_k_too_few_undecided_partitions_warn():
    rng = np.random.default_rng(1)
    truth = np.repeat(np.arange(3), 30)
    labels = np.stack([truth * 3 + rng.integers(0, m, 90) for m in (1, 2, 3)], axis=1)
    with pytest.warns(UserWarning, match=r"3 partition\(s\) are too few.*n_partitions=20"):
        sel = select_k(labels)
    assert "too few" in sel.reason


def test_no_stable_grouping_is_said(recwarn):
    """Gaussian noise has no groups: the fallback's K comes with a warning (a fourth user
    trial got K=10 without a word), while clear groups get none."""
    a = ad.AnnData(np.random.default_rng(0).normal(size=(1000, 10)).astype("float32"))
    scc.tl.ensemble(a, random_state=0, progress=False)
    with pytest.warns(UserWarning, match="no number of clusters is stable.*arbitrary"):
        scc.tl.pcc(a, progress=False)
    assert a.uns["pcc"]["k_candidates"].size == 0
    assert "is arbitrary" in a.uns["pcc"]["k_selection_reason"]
    rng = np.random.default_rng(0)
    clear = ad.AnnData(np.concatenate([rng.normal(c * 10, 1, (100, 5)) for c in range(4)]))
    scc.tl.ensemble(clear, random_state=0, progress=False)
    recwarn.clear()
    scc.tl.pcc(clear, progress=False)
    assert not [w for w in recwarn if "stable" in str(w.message)]
    assert clear.uns["pcc"]["n_clusters_chosen"] == 4


def test_no_stable_k_is_not_said_of_a_lower_bound():
    """A review: the fallback's "K=2 is arbitrary" and the lower bound past the candidates
    ("more groups than it can judge", K=13) were both warned; only the K returned is."""
    from scconsensus.core._resolution import ARBITRARY, _warn_arbitrary

    fallback = "K=2: no split drops the normalised co-association by 0.05" + ARBITRARY.format(K=2)
    with pytest.warns(UserWarning, match="K=2 is arbitrary"):
        _warn_arbitrary(2, fallback, 0.05)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _warn_arbitrary(13, f"K=13: a lower bound (was: {fallback})", 0.05)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"max_k": 1}, "max_k must be at least 2"),
        ({"max_k": "4"}, "not the string"),
        ({"threshold": -1}, r"threshold must be in \(0, 1\]"),
        ({"threshold": 0}, r"threshold must be in \(0, 1\]"),
    ],
)
def test_select_k_bad_arguments(kwargs, match):
    truth = np.repeat(np.arange(3), 20)
    with pytest.raises(ValueError, match=match):
        select_k(np.stack([truth] * 6, axis=1), **kwargs)


# ------------------------------------------------------- 6: the "few partitions" warning


def _ensemble_of_sizes(sizes, n=80):
    """One partition of ``s`` clusters per entry (items dealt round-robin)."""
    return np.stack([np.arange(n) % s for s in sizes], axis=1).astype(np.int32)


def test_far_partitions_note_counts_the_exact_ones():
    labels = _ensemble_of_sizes([3, 3, 5, 6, 7, 8, 9, 10])
    note = plan_consensus(labels, 3, init="random").note
    assert "only 2 of the ensemble's 8 partition(s) have about 3 clusters (2 exactly 3)" in note
    assert "up to 4 cluster(s) more or fewer" in note
    assert "nearest" not in note


def test_far_partitions_note_does_not_advise_what_was_done():
    # k='auto' ensembles: the advice is more partitions or a range, never k='auto' again
    labels = _ensemble_of_sizes([2, 2, 2, 3, 4, 5, 8, 12, 20])
    note = plan_consensus(labels, 8, init="random").note
    assert note.startswith("only 1 of the ensemble's 9 partition(s) have about 8 clusters")
    assert "k='auto'" not in note and "n_partitions" in note and "k=(5, 11)" in note
    assert plan_consensus(_ensemble_of_sizes([8] * 6), 8, init="random").note == ""


def test_far_partitions_advice_is_an_ensemble_that_can_be_built():
    """A user trial: n_clusters=149 of iris advised k=(111, 187), which tl.ensemble
    refuses for partitions of 120 items; the range stays below them, or the advice is
    fewer clusters."""
    labels = _ensemble_of_sizes([2, 3, 4, 5, 6], n=30)
    assert "k=(19, 29)" in plan_consensus(labels, 26, init="random").note  # was (19, 33)
    assert "k=(21, 29)" in plan_consensus(labels, 29, init="random").note
    labels[0] = -1  # 29 items in each partition now
    note = plan_consensus(labels, 29, init="random").note
    assert "with 29 items in a partition, ask for fewer clusters than 29" in note
    assert "k=(" not in note


def test_far_partitions_advice_is_other_k_when_k_stops_short_of_k():
    """A user trial: k=2 partitions, K=3; more partitions of k=2 never reach K = 3."""
    note = plan_consensus(_ensemble_of_sizes([2] * 6), 3, init="random").note
    assert "n_partitions" not in note and "a k range around 3, e.g. k=(2, 4)" in note


def test_far_partitions_warning_is_a_python_warning_at_any_verbosity():
    """R and warnings.catch_warnings catch it; scanpy's log at verbosity 0 dropped it."""
    import scanpy as sc

    adata = scc.datasets.iris()
    scc.tl.ensemble(adata, n_partitions=8, k=(2, 4), random_state=0, progress=False)
    verbosity, sc.settings.verbosity = sc.settings.verbosity, 0
    try:
        with pytest.warns(UserWarning, match=r"^Only \d+ of the ensemble's 8 partition\(s\)"):
            scc.tl.pcc(adata, n_clusters=12, random_state=0, progress=False)
    finally:
        sc.settings.verbosity = verbosity


# ------------------------------------------------------------- 4: spectral_consensus K


@pytest.mark.parametrize(
    ("K", "match"),
    [
        ("3", "not the string '3'"),
        (100, "n_clusters=100 is too large for 60 items; choose n_clusters < 60"),
        (1, "n_clusters must be at least 2"),
        (2.5, "must be an integer"),
    ],
)
def test_spectral_consensus_checks_k(K, match):
    labels = np.stack([np.repeat(np.arange(3), 20)] * 3, axis=1)
    with pytest.raises(ValueError, match=match):
        spectral_consensus(labels, K)


# ------------------------------------------------ 5: consensus_heatmap, dpp reference_size


@pytest.mark.parametrize("max_items", [0, 1, -5, "100"])
def test_heatmap_max_items_checked(adata, max_items):
    _refused(scc.pl.consensus_heatmap, adata, "max_items", "scc_ensemble", max_items=max_items)


def test_heatmap_of_consensus_k_without_matrices_names_store_matrices(adata):
    scc.tl.consensus_k(adata, max_k=4, reps=5, random_state=0)
    key = f"consensus_k_k{adata.uns['consensus_k']['best_k']}"
    with pytest.raises(ValueError, match=r"run it again with store_matrices=True"):
        scc.pl.consensus_heatmap(adata, key, show=False)
    scc.tl.consensus_k(adata, max_k=4, reps=5, random_state=0, store_matrices=True)
    assert scc.pl.consensus_heatmap(adata, key, show=False) is not None
    plt.close("all")


def test_dpp_reference_size_below_two_refused(adata):
    _refused(scc.tl.dpp, adata, "reference_size must be at least 2", reference_size=1)


# ------------------------------------------------------------------ 7: CLI --truth


def test_cli_unknown_truth_column_is_an_error(tmp_path, capsys):
    from scconsensus.cli import main

    out = tmp_path / "x.h5ad"
    rc = main(["run", "iris", "--method", "pcc", "--truth", "nope", "--out", str(out)])
    assert rc == 2 and not out.exists()
    err = capsys.readouterr().err
    assert "--truth 'nope' is not a column" in err and "available: ['truth'" in err


# ------------------------------------- fourth trial: a result outlives its ensemble


def test_result_refuses_an_ensemble_rebuilt_since_its_fit(blobs_adata, tmp_path):
    """The heatmap drew a new ensemble's partitions under PCC's name (or raised an
    IndexError when it had fewer), and pla_transfer would read them: both refuse now."""
    a = blobs_adata
    scc.tl.ensemble(a, 12, k=(2, 5), random_state=0, progress=False)
    scc.tl.pcc(a, n_clusters=3, progress=False)
    scc.tl.pla(a, n_clusters=3, progress=False)
    fitted = int(a.uns["pcc"]["ensemble_run"])
    assert fitted == int(a.obsm["scc_ensemble_run"][0, 0]) == int(a.uns["pla"]["ensemble_run"])
    scc.pl.consensus_heatmap(a, "pcc", show=False)  # the same ensemble: drawn
    plt.close("all")
    for n_partitions in (10, 40):  # fewer partitions (an IndexError once) and more (silent)
        scc.tl.ensemble(a, n_partitions, k=(4, 6), random_state=3, progress=False)
        with pytest.raises(ValueError, match=r"'pcc' was fitted to another ensemble.*tl.pcc"):
            scc.pl.consensus_heatmap(a, "pcc", show=False)
    new = ad.AnnData(a.X[:10].copy())
    with pytest.raises(ValueError, match=r"'pla' was fitted to another ensemble.*tl.pla"):
        scc.tl.pla_transfer(new, a, "pla")
    assert "pla" not in new.obs and "pla_membership" not in new.obsm
    # the report lists the heatmap among the figures not drawn, and says why
    from scconsensus._report import write_report

    text = write_report(a, tmp_path / "report", ["pcc"]).read_text()
    assert "## Figures not drawn" in text and "'pcc' was fitted to another ensemble" in text


def test_transfer_onto_one_or_two_cells(blobs_adata):
    """A review: the 3 items a clustering needs were asked of the new cells too."""
    scc.tl.ensemble(blobs_adata, 10, k=(2, 4), progress=False)
    scc.tl.pla(blobs_adata, n_clusters=3, progress=False)
    for n in (1, 2):
        new = ad.AnnData(blobs_adata.X[:n].copy())
        scc.tl.pla_transfer(new, blobs_adata, "pla")
        assert new.obs["pla"].notna().all()


def test_pla_transfer_takes_a_pla_fit_only(blobs_adata):
    """A review: a PCC result passed as the reference was folded in as if PLA's."""
    scc.tl.ensemble(blobs_adata, 10, k=(2, 4), progress=False)
    scc.tl.pcc(blobs_adata, n_clusters=3, progress=False)
    new = ad.AnnData(blobs_adata.X[:5].copy())
    with pytest.raises(
        ValueError, match=r"is a pcc result; pla_transfer folds new cells into a PLA"
    ):
        scc.tl.pla_transfer(new, blobs_adata, "pcc")


@pytest.mark.parametrize(
    ("record", "method"),
    [
        ({"restart_objectives": [1.0]}, "pcc"),
        ({"log_likelihood": -1.0}, "pla"),
        ({"transferred_from": "pla", "log_likelihood": -1.0}, "pla_transfer"),
        ({"run_sizes": [3]}, "dpp"),
        ({"pac": [0.1], "params": {"reps": 5}}, "consensus_k"),
        ({"pac": [0.1], "params": {"cluster_alg": "hc"}}, "consensus_cluster_plus"),
        ({"params": {}}, None),
    ],
)
def test_records_of_older_files_still_name_their_method(record, method):
    """Records written before ``.uns[key]["method"]`` are read by the entries only their
    method writes (a review: one doctest covered the fallback)."""
    from scconsensus._results import result_method

    a = ad.AnnData(np.zeros((3, 1)), uns={"r": record})
    assert result_method(a, "r") == method
    a.uns["r"] = {**record, "method": "pla"}
    assert result_method(a, "r") == "pla"
