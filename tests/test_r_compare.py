"""tl.compare: agreement tables between consensus results (ours and ConsensusClusterPlus)."""

from __future__ import annotations

import os
import shutil

import anndata as ad
import numpy as np
import pandas as pd
import pytest

import scconsensus as scc
from scconsensus.tl._anndata import store_consensus


@pytest.fixture
def labelled():
    # 12 items; "b" is "a" with the names permuted; "c" moves two items of "a".
    a = np.repeat([0, 1, 2], 4)
    b = np.array([2, 0, 1])[a]
    c = a.copy()
    c[[0, 4]] = [1, 2]
    adata = ad.AnnData(np.zeros((12, 2)))
    for key, lab in (("a", a), ("b", b), ("c", c)):
        store_consensus(adata, key, np.eye(3)[lab], method="pcc", params={})
    adata.obs["truth"] = pd.Categorical(np.array(["x", "y", "z"])[a])
    return adata


def test_known_values(labelled):
    before = labelled.copy()
    df = scc.tl.compare(labelled, keys=["a", "b", "c"], truth="truth")
    assert list(df.columns) == [
        "key_1", "key_2", "n_clusters_1", "n_clusters_2", "n_items", "ari", "nmi", "h",
        "auroc", "ece",
    ]  # fmt: skip
    # pairs of keys are not judged; against the truth, the hard memberships' confidence 1
    # cannot rank c's two misplaced items (AUROC 0.5), and is 2/12 above c's accuracy
    assert df[["auroc", "ece"]].iloc[:3].isna().all().all()
    calib = df.iloc[3:].set_index("key_1")
    assert calib["auroc"].isna().tolist() == [True, True, False]  # a, b: nothing to rank
    assert calib.loc["c", "auroc"] == pytest.approx(0.5)
    assert calib["ece"].tolist() == pytest.approx([0.0, 0.0, 2 / 12])
    assert list(zip(df["key_1"], df["key_2"], strict=True)) == [
        ("a", "b"), ("a", "c"), ("b", "c"), ("a", "truth"), ("b", "truth"), ("c", "truth")
    ]  # fmt: skip
    row = df.set_index(["key_1", "key_2"])
    for pair in (("a", "b"), ("a", "truth"), ("b", "truth")):
        assert row.loc[pair, "ari"] == pytest.approx(1.0)
        assert row.loc[pair, "nmi"] == pytest.approx(1.0)
        assert row.loc[pair, "h"] == pytest.approx(1.0)
    # c agrees with a on 10 of 12 items after matching clusters.
    assert row.loc[("a", "c"), "h"] == pytest.approx(10 / 12)
    assert row.loc[("c", "truth"), "h"] == pytest.approx(10 / 12)
    from sklearn.metrics import adjusted_rand_score

    expected = adjusted_rand_score(labelled.obs["a"], labelled.obs["c"])
    assert row.loc[("a", "c"), "ari"] == pytest.approx(expected)
    assert 0 < row.loc[("a", "c"), "ari"] < 1
    assert (df["n_items"] == 12).all() and (df["n_clusters_1"] == 3).all()
    # Nothing written.
    assert list(labelled.obs.columns) == list(before.obs.columns)
    assert set(labelled.uns) == set(before.uns)


def test_default_keys_array_truth_and_missing_labels(labelled):
    df = scc.tl.compare(labelled)  # every result in the shared layout
    assert set(df["key_1"]) | set(df["key_2"]) == {"a", "b", "c"}
    truth = np.repeat(["p", "q", "r"], 4)
    df = scc.tl.compare(labelled, keys="c", truth=truth)
    assert df.loc[0, "key_2"] == "truth" and df.loc[0, "h"] == pytest.approx(10 / 12)
    labelled.obs["partial"] = pd.Categorical([None, None, *labelled.obs["a"][2:]])
    df = scc.tl.compare(labelled, keys=["partial", "a"])
    assert df.loc[0, "n_items"] == 10 and df.loc[0, "ari"] == pytest.approx(1.0)


def test_bad_input(labelled):
    with pytest.raises(ValueError, match=r"'nope' is not a column of adata\.obs"):
        scc.tl.compare(labelled, keys=["a", "nope"])
    with pytest.raises(ValueError, match="two labelings or a truth"):
        scc.tl.compare(labelled, keys=["a"])
    with pytest.raises(ValueError, match="truth has 3 labels but adata has 12 items"):
        scc.tl.compare(labelled, keys=["a"], truth=[0, 1, 2])
    with pytest.raises(ValueError, match="No consensus results"):
        scc.tl.compare(ad.AnnData(np.zeros((4, 2))))
    with pytest.raises(ValueError, match="AnnData"):
        scc.tl.compare(np.zeros((3, 3)), keys=["a", "b"])


def _with_confidence(adata):
    """c's two misplaced items get the lowest confidence: a perfect ranking (AUROC 1)."""
    conf = np.linspace(0.6, 0.95, 12)
    conf[[0, 4]] = [0.1, 0.2]
    adata.obs["c_confidence"] = conf
    return adata


def test_truth_series_is_matched_by_its_index(labelled):
    """A Series is aligned on obs_names (it was read by position: a shuffled one scrambled
    ARI and AUROC silently); an array or list stays positional."""
    adata = _with_confidence(labelled)
    cols = ["n_items", "ari", "nmi", "h", "auroc", "ece"]
    want = scc.tl.compare(adata, keys=["a", "c"], truth="truth")[cols]
    assert want["auroc"].iloc[-1] == pytest.approx(1.0)
    series = adata.obs["truth"]
    shuffled = series.iloc[np.random.default_rng(0).permutation(12)]
    extra = pd.concat([series, pd.Series(["x"], index=["not_a_cell"])])  # more names: fine
    positional = series.to_numpy()
    for truth in (shuffled, series.iloc[::-1], extra, positional, list(positional)):
        got = scc.tl.compare(adata, keys=["a", "c"], truth=truth)
        pd.testing.assert_frame_equal(got[cols], want)
        assert got["key_2"].iloc[-1] == "truth"
    with pytest.raises(ValueError, match=r"index holds integers, and adata\.obs_names are strings"):
        scc.tl.compare(adata, keys="c", truth=pd.Series(positional))  # a RangeIndex
    with pytest.raises(
        ValueError, match=r"lacks 2 of the 12 adata\.obs_names \(e\.g\. \['0', '1'\]"
    ):
        scc.tl.compare(adata, keys="c", truth=series.iloc[2:])
    with pytest.raises(ValueError, match="repeated index labels"):
        scc.tl.compare(adata, keys="c", truth=pd.concat([series, series.iloc[:1]]))


def test_a_continuous_truth_is_refused_and_float_coded_classes_are_not():
    """A user trial passed truth="percent_mito": 696 "classes" of 700 cells, ARI 0 and no
    word; class ids stored as floats (0.0, 1.0, ...) stay classes."""
    rng = np.random.default_rng(0)
    adata = ad.AnnData(np.zeros((60, 2)))
    adata.obs["a"] = pd.Categorical(rng.integers(0, 3, 60).astype(str))
    adata.obs["mito"] = rng.random(60)
    with pytest.raises(ValueError, match=r"truth 'mito' looks like a measurement \(60 distinct"):
        scc.tl.compare(adata, keys="a", truth="mito")
    with pytest.raises(ValueError, match="looks like a measurement"):
        scc.tl.compare(adata, keys="a", truth=rng.random(60))
    codes = adata.obs["a"].cat.codes.to_numpy().astype(float)
    assert scc.tl.compare(adata, keys="a", truth=codes)["ari"].iloc[0] == 1.0
    # counts per cell too (a later trial: truth="n_genes", 218 values of 700 cells), while
    # integer class ids stay classes
    many = ad.AnnData(np.zeros((700, 2)))
    many.obs["a"] = pd.Categorical(rng.integers(0, 3, 700).astype(str))
    many.obs["n_genes"] = rng.integers(500, 718, 700)
    with pytest.raises(
        ValueError, match=r"'n_genes' looks like a measurement \(\d+ distinct integer"
    ):
        scc.tl.compare(many, keys="a", truth="n_genes")
    many.obs["n_genes_float"] = many.obs["n_genes"].astype(float)  # as h5ad files hold them
    with pytest.raises(ValueError, match=r"'n_genes_float' looks like a measurement"):
        scc.tl.compare(many, keys="a", truth="n_genes_float")
    ids = many.obs["a"].cat.codes.to_numpy().astype(np.int64)
    assert scc.tl.compare(many, keys="a", truth=ids)["ari"].iloc[0] == 1.0
    # a measurement among the keys, compared with a clustering (a user trial): refused too
    with pytest.raises(
        ValueError, match=r"key 'n_genes' looks like a measurement.*not a clustering"
    ):
        scc.tl.compare(many, keys=["a", "n_genes"])
    many.obs["ids"] = ids
    assert scc.tl.compare(many, keys=["a", "ids"])["ari"].iloc[0] == 1.0


def test_nan_confidence_is_left_out_of_auroc_and_ece_alike(labelled):
    adata = _with_confidence(labelled)
    conf = adata.obs["c_confidence"].to_numpy().copy()
    conf[[0, 5]] = np.nan  # one misplaced item, one right one
    adata.obs["c_confidence"] = conf
    row = scc.tl.compare(adata, keys="c", truth="truth").iloc[0]
    keep = ~np.isnan(conf)
    right = np.ones(12, bool)
    right[[0, 4]] = False
    assert row["auroc"] == pytest.approx(1.0)  # was NaN
    ece = scc.metrics.expected_calibration_error(conf[keep], right[keep])
    assert row["ece"] == pytest.approx(ece)
    assert row["n_items"] == 12  # the agreement scores still use every labelled item


def test_truth_errors_speak_of_truth(labelled):
    labelled.obs["batch"] = pd.Categorical(["b1", "b2"] * 6)
    labelled.obs["score"] = np.arange(12.0)
    with pytest.raises(ValueError, match="truth='nope' is not a column") as err:
        scc.tl.compare(labelled, keys=["a"], truth="nope")
    message = str(err.value)
    # the columns that could hold classes (not the results, not numbers), and the array form
    assert "['truth', 'batch']" in message and "array" in message
    assert "Run a consensus method" not in message
    with pytest.raises(ValueError, match="truth='truth' is also in keys"):
        scc.tl.compare(labelled, keys=["truth", "a"], truth="truth")
    # labels passed as an array are called "truth" in the table, next to a key "truth"
    df = scc.tl.compare(labelled, keys=["truth", "a"], truth=labelled.obs["truth"].to_numpy())
    pairs = list(zip(df["key_1"], df["key_2"], strict=True))
    assert pairs == [("truth", "a"), ("truth", "truth"), ("a", "truth")]
    assert (df["ari"] == 1.0).all()


def test_mixes_ccp_and_our_results(blobs_adata):
    try:
        import rpy2.robjects  # noqa: F401

        has_r = shutil.which("Rscript") is not None
    except Exception:
        has_r = False
    if not has_r:
        if os.environ.get("CI"):
            pytest.fail("R/rpy2 are required in CI (.ci/run installs them).")
        pytest.skip("R or rpy2 not installed")
    from scconsensus.r import consensus_cluster_plus

    adata = blobs_adata
    consensus_cluster_plus(adata, 4, 10, seed=1, use_rep="X", distance="euclidean")
    scc.tl.ensemble(adata, n_partitions=20, k=(2, 5), random_state=0)
    # the paper's protocol: K is a maximum over all partitions, surplus clusters empty
    scc.tl.pcc(adata, n_clusters=4, partitions="all")
    df = scc.tl.compare(adata, keys=["pcc", "ccp_k3", "ccp_k4"], truth="truth")
    assert len(df) == 6
    row = df.set_index(["key_1", "key_2"])
    # Three well separated blobs: both methods find them.
    assert row.loc[("pcc", "truth"), "ari"] > 0.95
    assert row.loc[("ccp_k3", "truth"), "ari"] > 0.9
    assert row.loc[("pcc", "ccp_k3"), "h"] > 0.9
    assert row.loc[("ccp_k3", "ccp_k4"), "n_clusters_2"] == 4
