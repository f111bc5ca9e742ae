"""``tl.dpp``: AnnData layout, h5ad round trip, copy semantics, route choice."""

from __future__ import annotations

import warnings

import anndata as ad
import numpy as np
import pandas as pd
import pytest

import scconsensus as scc
from scconsensus.metrics import adjusted_rand_index


@pytest.fixture
def adata():
    rng = np.random.default_rng(0)
    centres = np.array([[0, 0, 0], [7, 0, 0], [0, 7, 0]], dtype=float)
    truth = np.repeat([0, 1, 2], [40, 35, 25])
    a = ad.AnnData(centres[truth] + rng.normal(size=(100, 3)))
    a.obs["truth"] = pd.Categorical(truth.astype(str))
    return a


def test_layout_and_h5ad_round_trip(adata, tmp_path):
    scc.tl.dpp(adata, n_runs=40)
    labels = adata.obs["dpp"]
    assert isinstance(labels.dtype, pd.CategoricalDtype)
    k = labels.cat.categories.size
    assert list(labels.cat.categories) == [str(i) for i in range(k)]
    assert adjusted_rand_index(adata.obs["truth"], labels) > 0.95
    M = adata.obsm["dpp_membership"]
    assert M.shape == (100, k)
    np.testing.assert_allclose(M.sum(1), 1.0)
    codes = labels.cat.codes.to_numpy()
    np.testing.assert_allclose(adata.obs["dpp_confidence"], M[np.arange(100), codes])
    # the hard labels are the thresholded consensus, and each item sits with its own
    # cluster by mean consensus
    assert np.mean(M.argmax(1) == codes) > 0.95
    uns = adata.uns["dpp"]
    assert uns["params"]["sampler"] == "dpp" and uns["params"]["n_runs"] == 40
    cand = uns["candidates"]
    assert {"threshold", "n_clusters", "kvi", "sr", "chosen"} <= set(cand.columns)
    assert cand["chosen"].sum() == 1
    assert uns["threshold"] == cand.loc[cand["chosen"], "threshold"].iloc[0]
    assert uns["n_clusters"] == k and uns["mode"] == "dense"
    assert uns["run_sizes"].shape == (40,) and uns["expected_size"] > 1
    path = tmp_path / "dpp.h5ad"
    adata.write_h5ad(path)
    back = ad.read_h5ad(path)
    pd.testing.assert_series_equal(back.obs["dpp"], adata.obs["dpp"])
    np.testing.assert_allclose(back.obsm["dpp_membership"], M)
    pd.testing.assert_frame_equal(back.uns["dpp"]["candidates"], cand)
    assert back.uns["dpp"]["params"]["tau"] == 0.6


def test_confidence_is_the_membership_of_the_items_own_cluster():
    """Where the threshold cut puts a boundary item apart from its largest membership.

    Its confidence was the largest membership, that of another cluster than its label.
    """
    a = scc.datasets.iris()
    scc.tl.dpp(a, progress=False)
    M, codes = a.obsm["dpp_membership"], a.obs["dpp"].cat.codes.to_numpy()
    assert (M.argmax(1) != codes).sum() > 0  # iris with the defaults has such items
    # and says how many (a user trial: 22 % of 30,000 cells, where the docs spoke of
    # boundary items only)
    assert a.uns["dpp"]["label_agreement"] == pytest.approx(np.mean(M.argmax(1) == codes))
    np.testing.assert_allclose(a.obs["dpp_confidence"], M[np.arange(a.n_obs), codes])
    ticks = scc.pl.k_selection(a, "dpp", show=False).get_xticks()
    np.testing.assert_array_equal(ticks, np.round(ticks))  # K is a count (5.5 was shown)


def test_copy_leaves_input_alone(adata):
    before = adata.copy()
    out = scc.tl.dpp(adata, n_runs=20, sampler="uniform", key_added="u", copy=True)
    assert "u" in out.obs and "u" not in adata.obs and "u" not in adata.uns
    assert list(adata.obs.columns) == list(before.obs.columns)
    assert scc.tl.dpp(adata, n_runs=20) is None


def test_reproducible_with_random_state(adata):
    a = scc.tl.dpp(adata, n_runs=20, random_state=3, copy=True)
    b = scc.tl.dpp(adata, n_runs=20, random_state=3, copy=True)
    np.testing.assert_array_equal(a.obs["dpp"], b.obs["dpp"])
    np.testing.assert_array_equal(a.obsm["dpp_membership"], b.obsm["dpp_membership"])


def test_auto_route_follows_settings(adata, monkeypatch):
    monkeypatch.setattr(scc.settings, "dense_auto_max_items", 50)
    scc.tl.dpp(adata, n_runs=20, n_components=60)
    assert adata.uns["dpp"]["mode"] == "sparse" and adata.uns["dpp"]["rank"] <= 60
    assert adjusted_rand_index(adata.obs["truth"], adata.obs["dpp"]) > 0.9


def test_use_rep_and_errors(adata):
    adata.obsm["X_two"] = adata.X[:, :2]
    scc.tl.dpp(adata, n_runs=10, use_rep="X_two", key_added="two")
    assert adata.uns["two"]["params"]["use_rep"] == "X_two"
    with pytest.raises(ValueError, match=r"not in adata\.obsm"):
        scc.tl.dpp(adata, n_runs=10, use_rep="X_missing")
    with pytest.raises(ValueError, match="sampler"):
        scc.tl.dpp(adata, n_runs=10, sampler="poisson")
    with pytest.raises(ValueError, match="a must be"):
        scc.tl.dpp(adata, n_runs=10, a=0.0)
    with pytest.raises(ValueError, match="layer"):
        scc.tl.dpp(adata, n_runs=10, layer="counts")
    with pytest.raises(ValueError, match="AnnData"):
        scc.tl.dpp(adata.X, n_runs=10)


def test_cli_plugs_in_dpp(adata):
    from scconsensus.cli import available_methods, run_method

    assert "dpp" in available_methods()
    # options the signature does not know (n_clusters) are dropped, the rest pass through
    run_method(adata, "dpp", n_clusters=3, random_state=1, key_added="cli", n_runs=20)
    assert adata.uns["cli"]["params"]["random_state"] == 1
    assert adjusted_rand_index(adata.obs["truth"], adata.obs["cli"]) > 0.9


def test_n_clusters_layout_round_trip_and_plot(adata, tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    scc.tl.dpp(adata, n_runs=30, n_clusters=2, key_added="two")
    labels = adata.obs["two"]
    assert labels.cat.categories.size == 2
    # every category holds items: what .cat.categories shows is the number found
    assert labels.value_counts().min() > 0
    uns = adata.uns["two"]
    assert uns["params"]["n_clusters"] == 2 and uns["n_clusters"] == 2
    assert "n_clusters=2 asked" in uns["reason"]
    cand = uns["candidates"]
    assert cand.loc[cand["chosen"], "n_clusters"].iloc[0] == 2
    scc.tl.dpp(adata, n_runs=30, key_added="auto")
    assert adata.uns["auto"]["params"]["n_clusters"] is None
    assert "kernel validity index" in adata.uns["auto"]["reason"]
    assert adata.obs["auto"].value_counts().min() > 0
    path = tmp_path / "k.h5ad"
    adata.write_h5ad(path)
    back = ad.read_h5ad(path)
    for key in ("two", "auto"):
        pd.testing.assert_frame_equal(back.uns[key]["candidates"], adata.uns[key]["candidates"])
        assert back.uns[key]["reason"] == adata.uns[key]["reason"]
        ax = scc.pl.k_selection(back, key, show=False)
        assert "chosen K" in ax.get_legend().get_texts()[-1].get_text()


def test_n_clusters_checked_before_anything_is_written(adata):
    before = set(adata.uns) | set(adata.obs.columns)
    for bad in (0, 1.5, "2", adata.n_obs + 1):
        with pytest.raises(ValueError, match="n_clusters"):
            scc.tl.dpp(adata, n_runs=5, n_clusters=bad)
    assert set(adata.uns) | set(adata.obs.columns) == before


def _tl_dpp_warnings(adata, **kwargs) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        scc.tl.dpp(adata, n_runs=20, **kwargs)
    return [str(w.message) for w in caught if str(w.message).startswith("tl.dpp:")]


def test_out_of_reach_n_clusters_warns(adata):
    """A Python warning, which R and catch_warnings catch (it was a log line)."""
    warned = _tl_dpp_warnings(adata, n_clusters=60, key_added="many")
    found = adata.uns["many"]["n_clusters"]
    assert found < 60 and adata.obs["many"].cat.categories.size == found
    assert "nearest" in adata.uns["many"]["reason"]
    assert len(warned) == 1 and "no cut of the consensus has exactly 60 clusters" in warned[0]
    assert _tl_dpp_warnings(adata, n_clusters=found, key_added="exact") == []


def test_auto_n_clusters_does_not_warn(adata):
    """``n_clusters="auto"`` (the command line's default) is the data's choice, not a miss."""
    assert _tl_dpp_warnings(adata, n_clusters="auto", key_added="auto") == []
    assert _tl_dpp_warnings(adata, key_added="none") == []
    assert adata.uns["auto"]["n_clusters"] == adata.uns["none"]["n_clusters"]


def test_random_state_recorded_as_pcc_and_pla_record_it(adata):
    """The int seed, None, or "custom" for a generator (not its repr with an address)."""
    scc.tl.dpp(adata, n_runs=5, random_state=None, key_added="a")
    scc.tl.dpp(adata, n_runs=5, random_state=np.random.default_rng(0), key_added="b")
    scc.tl.dpp(adata, n_runs=5, random_state=np.int64(3), key_added="c")
    records = [adata.uns[key]["params"]["random_state"] for key in "abc"]
    assert records[0] is None and records[1] == "custom" and type(records[2]) is int


def test_no_choice_between_cuts_is_said(adata):
    """A user trial's DPP on 500 log-expression features kept one consensus value above
    tau, and so one cut (7 clusters of 3 groups), and said it chose by KVI "among 1
    cuts": a warning now names the cause and the fixes. Many thresholds with one cut (a
    stable one), a subset of thresholds or a given K pass quietly."""
    from scconsensus.core.dpp import DPPCut
    from scconsensus.core.dpp._api import warn_no_choice

    one = pd.DataFrame({"threshold": [0.61, 0.605], "n_clusters": [7, 7]})
    with pytest.warns(UserWarning, match=r"only 2 consensus value\(s\) reach tau.*same 7 clusters"):
        warn_no_choice(one, DPPCut(), None, 200)
    # a user trial: n_runs=2 allows two values above tau at most; not the representation
    with pytest.warns(
        UserWarning, match=r"with n_runs=2, at most 2 value\(s\) can reach tau=0.5\. Use more runs"
    ):
        warn_no_choice(one, DPPCut(tau=0.5), None, 2)
    # at tau = 1 more runs would not help (a review)
    with pytest.warns(UserWarning, match=r"tau=1 leaves at most 1 value\(s\) above it.*Lower tau"):
        warn_no_choice(one, DPPCut(tau=1.0), None, 1000)
    many = pd.DataFrame({"threshold": [0.98, 0.8, 0.6], "n_clusters": [2, 2, 2]})
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="dpp: only")
        warn_no_choice(many, DPPCut(), None, 200)
        warn_no_choice(one, DPPCut(n_thresholds=2), None, 200)
        warn_no_choice(one, DPPCut(), 7, 200)
        scc.tl.dpp(adata, key_added="quiet", progress=False)
        scc.tl.dpp(adata, key_added="subset", n_thresholds=1, progress=False)
    assert len(adata.uns["quiet"]["candidates"]) > 2


def test_no_pair_at_tau_advises_a_lower_tau_first():
    """A verification trial: tau=1.0 on pbmc68k ("largest observed 0.96") was advised a
    representation (DPP already clustered X_pca) and more runs (400 did not help)."""
    X = np.random.default_rng(0).uniform(size=(150, 20)).astype(np.float32)
    adata = ad.AnnData(X)
    with pytest.raises(
        ValueError, match=r"tau=1.0 \(largest observed 0.75\): lower tau to at most"
    ):
        scc.tl.dpp(adata, n_runs=20, tau=1.0, progress=False)
    assert "dpp" not in adata.uns
