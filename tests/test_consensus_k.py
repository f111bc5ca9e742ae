"""Monti consensus statistics (core.consensus_k, tl.consensus_k) and agreement with CCP."""

from __future__ import annotations

import anndata as ad
import numpy as np
import pandas as pd
import pytest
from _helpers import block_matrix, scanpy_log

import scconsensus as scc
from scconsensus.core.consensus_k import (
    Resampling,
    cdf_area,
    cluster_consensus,
    consensus_cdf,
    consensus_k,
    consensus_labels,
    delta_area,
    item_consensus,
    pac,
    resample_partitions,
    summarize_consensus,
)
from scconsensus.core.ensemble import PartitionOptions, generate_ensemble
from scconsensus.metrics import adjusted_rand_index


def _expression(n_per=20, p=200, noise=1.6, seed=1):
    """Three groups of samples with gene profiles; Pearson distance separates them."""
    rng = np.random.default_rng(seed)
    centers = rng.normal(0, 1, size=(3, p))
    X = np.vstack([c + rng.normal(0, noise, size=(n_per, p)) for c in centers])
    return X, np.repeat(np.arange(3), n_per)


def _random_consensus(n, reps=50, seed=0):
    rng = np.random.default_rng(seed)
    A = rng.integers(0, reps + 1, size=(n, n)) / reps
    M = np.triu(A, 1)
    M = M + M.T
    np.fill_diagonal(M, 1.0)
    return M


# ----------------------------------------------------------------- statistics on known M


def test_block_diagonal_consensus_has_pac_zero_and_known_cdf():
    M = block_matrix([5, 5])[0]
    x, F = consensus_cdf(M)
    # 45 pairs, 20 inside blocks (value 1), 25 across (value 0)
    assert x[0] == pytest.approx(0.01) and x[-1] == 1.0
    np.testing.assert_allclose(F[:-1], 25 / 45)
    assert F[-1] == 1.0
    assert pac(M) == 0.0
    assert cdf_area(F) == pytest.approx((99 * 25 / 45 + 1) / 100)
    np.testing.assert_array_equal(consensus_labels(M, 2), np.repeat([0, 1], 5))


def test_final_clustering_has_exactly_k_clusters_despite_ties():
    M = block_matrix([4, 4, 4])[0]  # merge heights tie at 0 inside blocks and at 1 between them
    for k in (2, 3, 4, 5):
        labels = consensus_labels(M, k)
        assert len(np.unique(labels)) == k
        assert np.all(np.diff(np.bincount(labels)) <= 0)  # numbered by decreasing size
    # k = 3 recovers the blocks exactly
    assert adjusted_rand_index(np.repeat([0, 1, 2], 4), consensus_labels(M, 3)) == 1.0


def test_exact_k_cut_equals_scipy_cut_tree():
    from scipy.cluster.hierarchy import cut_tree, linkage

    from scconsensus.core.consensus_k._statistics import _cut_k

    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    X[:20] = X[0]  # tied merge heights
    for method in ("average", "single", "complete"):
        Z = linkage(X, method)
        for k in range(2, 12):
            ours = _cut_k(Z, k)
            assert len(np.unique(ours)) == k
            assert adjusted_rand_index(cut_tree(Z, n_clusters=k).ravel(), ours) == 1.0


def test_pac_counts_known_fraction_with_ccp_boundaries():
    n = 12
    pairs = np.array(np.triu_indices(n, 1)).T  # 66 pairs
    values = np.zeros(len(pairs))
    # 0.1 itself is not ambiguous, 0.9 is (window (0.1, 0.9]); 17 pairs in total inside
    values[:5] = 0.1
    values[5:15] = np.linspace(0.15, 0.85, 10)
    values[15:22] = 0.9
    values[22:30] = 1.0
    values[30:32] = 0.95
    M = np.eye(n)
    M[pairs[:, 0], pairs[:, 1]] = values
    M[pairs[:, 1], pairs[:, 0]] = values
    assert pac(M) == pytest.approx(17 / 66)
    _, F = consensus_cdf(M)
    assert F[89] - F[9] == pytest.approx(17 / 66)  # F(0.9) - F(0.1)
    assert pac(M, (0.05, 0.95)) == pytest.approx(24 / 66)


def test_cdf_matches_direct_empirical_cdf():
    M = _random_consensus(40, reps=50)
    v = M[np.tril_indices(40, -1)]
    x, F = consensus_cdf(M)
    direct = np.array([np.mean(v <= t + 1e-9) for t in x])
    np.testing.assert_allclose(F, direct)
    # coarser grid, same definition
    x5, F5 = consensus_cdf(M, n_bins=5)
    np.testing.assert_allclose(F5, [np.mean(v <= t + 1e-9) for t in x5])


def test_delta_area_is_ccp_relative_change():
    np.testing.assert_allclose(delta_area([0.5, 0.6, 0.66]), [0.5, 0.2, 0.1])


def test_item_and_cluster_consensus_match_brute_force():
    M = _random_consensus(15, seed=3)
    labels = np.array([0, 0, 0, 1, 1, 2, 2, 2, 2, 0, 1, 1, 2, 0, 3])  # cluster 3 is a singleton
    ic = item_consensus(M, labels)
    for i in range(15):
        for c in range(4):
            others = [j for j in range(15) if labels[j] == c and j != i]
            expected = np.mean(M[i, others]) if others else np.nan
            np.testing.assert_allclose(ic[i, c], expected)
    cc = cluster_consensus(M, labels)
    for c in range(3):
        members = np.flatnonzero(labels == c)
        sub = M[np.ix_(members, members)]
        np.testing.assert_allclose(cc[c], sub[np.triu_indices(len(members), 1)].mean())
    assert np.isnan(cc[3])


def test_summarize_orders_clusters_by_size_and_picks_lowest_pac():
    M3 = block_matrix([6, 4, 2])[0]
    M2 = block_matrix([6, 6], within=0.7, between=0.2)[0]
    res = summarize_consensus({3: M3, 2: M2})
    assert res.ks.tolist() == [2, 3]
    assert res.pac[1] == 0.0 and res.pac[0] > 0.5
    assert res.best_k == 3
    np.testing.assert_array_equal(np.bincount(res.labels[3]), [6, 4, 2])
    cc = res.cluster_consensus
    assert list(cc.columns) == ["k", "cluster", "cluster_consensus", "size"]
    assert cc.loc[cc["k"] == 3, "cluster_consensus"].tolist() == [1.0, 1.0, 1.0]
    Y = res.membership(3)
    np.testing.assert_allclose(Y.sum(axis=1), 1.0)
    np.testing.assert_array_equal(Y.argmax(axis=1), res.labels[3])


@pytest.mark.parametrize(
    ("matrix", "message"),
    [
        (np.ones((3, 4)), "square"),
        (np.full((3, 3), 2.0), "outside"),
        (np.full((3, 3), np.nan), "NaN"),
    ],
)
def test_bad_consensus_matrix_is_refused(matrix, message):
    with pytest.raises(ValueError, match=message):
        consensus_cdf(matrix)


def test_bad_pac_window_is_refused():
    with pytest.raises(ValueError, match="pac_window"):
        pac(np.eye(3), (0.9, 0.1))


# ----------------------------------------------------------------- resampling protocol


def test_hc_protocol_replays_generate_ensemble():
    X, _ = _expression()
    parts = resample_partitions(X, max_k=4, reps=6, random_state=3, progress=False)
    for k in (2, 4):
        ens = generate_ensemble(
            X,
            6,
            method="hc",
            k=k,
            random_state=3,
            progress=False,
            options=PartitionOptions(distance="pearson"),
        )
        np.testing.assert_array_equal(parts[k], ens.labels)


@pytest.mark.parametrize("distance", ["pearson", "spearman", "cosine"])
def test_blas_distances_equal_pdist(distance):
    from scipy.spatial.distance import squareform

    from scconsensus.core._distance import condensed_distance as _condensed_distance
    from scconsensus.core.consensus_k._engine import _square_distance

    X, _ = _expression(n_per=5, p=40)
    X[3] = 1.0  # a constant item: distance 2 to everything (NaN correlation)
    D = _square_distance(X, distance)
    expected = squareform(_condensed_distance(X, distance))
    if distance == "cosine":  # a constant non-zero row is fine for cosine
        assert np.isfinite(expected).all()
    np.testing.assert_allclose(D, expected, atol=1e-12)


@pytest.mark.slow
def test_same_seed_same_result_for_any_n_jobs():
    X, _ = _expression(n_per=10)
    a = consensus_k(X, max_k=4, reps=8, random_state=5, progress=False)
    b = consensus_k(X, max_k=4, reps=8, random_state=5, n_jobs=2, progress=False)
    np.testing.assert_array_equal(a.pac, b.pac)
    np.testing.assert_array_equal(a.cdf, b.cdf)
    for k in a.ks:
        np.testing.assert_array_equal(a.labels[k], b.labels[k])


def test_kmeans_protocol_shares_subsamples_across_k():
    X, truth = _expression(n_per=15)
    kmeans = Resampling(method="kmeans")
    res = consensus_k(X, max_k=4, reps=10, resampling=kmeans, keep_partitions=True, progress=False)
    sampled = [res.partitions[k] >= 0 for k in res.ks]
    for s in sampled[1:]:
        np.testing.assert_array_equal(s, sampled[0])
    assert adjusted_rand_index(truth, res.labels[3]) == 1.0
    assert res.best_k == 3


def test_recovers_groups_and_lowest_pac_at_true_k():
    X, truth = _expression()
    res = consensus_k(X, max_k=5, reps=30, progress=False)
    assert res.best_k in (2, 3)  # well-separated groups: PAC is 0 at k=3 (and k=2 merges two)
    assert res.pac[res.ks.tolist().index(3)] == 0.0
    assert res.pac[-1] > 0.0
    assert adjusted_rand_index(truth, res.labels[3]) == 1.0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_k": 60}, "max_k"),
        ({"max_k": 1}, "max_k"),
        ({"resampling": Resampling(method="leiden")}, "method"),
        ({"resampling": Resampling(p_item=0.0)}, "p_item"),
        ({"reps": 0}, "reps"),
        # the record's fields given flat, as tl.consensus_k takes them: name the record
        ({"p_item": 0.5}, r"resampling=Resampling\(p_item=0.5\)"),
        ({"method": "kmeans", "n_neighbors": 5}, r"resampling=Resampling\(method='kmeans'\)"),
    ],
)
def test_bad_parameters_are_refused(kwargs, message):
    X, _ = _expression(n_per=10)
    with pytest.raises(ValueError, match=message):
        consensus_k(X, **{"reps": 3, "progress": False, **kwargs})


def test_memory_guard(monkeypatch):
    X, _ = _expression(n_per=10)
    monkeypatch.setattr(scc.settings, "max_dense_bytes", 1000)
    with pytest.raises(MemoryError, match="sparse"):
        consensus_k(X, max_k=3, reps=2, progress=False)


# ----------------------------------------------------------------- AnnData wrapper


def test_tl_layout_roundtrip_and_copy(tmp_path):
    X, truth = _expression(n_per=10)
    adata = ad.AnnData(X, obs=pd.DataFrame({"truth": pd.Categorical(truth.astype(str))}))
    adata.obs_names = [f"s{i}" for i in range(adata.n_obs)]
    out = scc.tl.consensus_k(
        adata, max_k=4, reps=10, use_rep="X", copy=True, keep_k="all", store_matrices=True
    )
    assert "consensus_k" not in adata.uns and "consensus_k_k3" not in adata.obs
    rec = out.uns["consensus_k"]
    assert rec["k"].tolist() == [2, 3, 4]
    assert rec["cdf"].shape == (3, 100) and rec["cdf_x"].shape == (100,)
    assert rec["keys"].tolist() == ["consensus_k_k2", "consensus_k_k3", "consensus_k_k4"]
    for k in (2, 3, 4):
        key = f"consensus_k_k{k}"
        assert out.obs[key].cat.categories.tolist() == [str(c) for c in range(k)]
        np.testing.assert_allclose(out.obsm[f"{key}_membership"].sum(axis=1), 1.0)
        assert out.obsm[f"{key}_item_consensus"].shape == (30, k)
        assert out.obsp[f"{key}_consensus"].shape == (30, 30)
    assert rec["params"]["reps"] == 10 and rec["params"]["method"] == "hc"
    assert out.uns["consensus_k_k3"]["params"]["k"] == 3
    path = tmp_path / "ck.h5ad"
    out.write_h5ad(path)
    back = ad.read_h5ad(path)
    np.testing.assert_allclose(back.uns["consensus_k"]["pac"], rec["pac"])
    pd.testing.assert_frame_equal(
        back.uns["consensus_k"]["cluster_consensus"].reset_index(drop=True),
        rec["cluster_consensus"].reset_index(drop=True),
        check_dtype=False,
    )


def test_a_rerun_replaces_every_k_the_earlier_run_wrote():
    """Noticed in a trial: a rerun with a smaller max_k left the earlier run's k4, k5
    beside a record that no longer listed them; a key the user filled since is kept."""
    X, _ = _expression()
    adata = ad.AnnData(X)
    scc.tl.consensus_k(adata, max_k=5, reps=5, use_rep="X", keep_k="all")
    assert {"consensus_k_k4", "consensus_k_k5"} <= set(adata.uns)
    adata.obs["consensus_k_k4_confidence"] = "mine"  # stays: consensus_k_k4 is ours
    adata.uns["consensus_k_k4"]["method"] = "mine"  # no longer our record: kept whole
    with scanpy_log("warning") as log:
        scc.tl.consensus_k(adata, max_k=3, reps=5, use_rep="X", keep_k="all")
    assert "removing consensus_k_k5: results of the earlier run" in log.getvalue()
    assert list(adata.uns["consensus_k"]["keys"]) == ["consensus_k_k2", "consensus_k_k3"]
    assert "consensus_k_k5" not in adata.uns and "consensus_k_k5" not in adata.obs
    assert not any(key.startswith("consensus_k_k5") for key in adata.obsm)
    assert "consensus_k_k4" in adata.uns and "consensus_k_k4" in adata.obs
    scc.tl.consensus_k(adata, max_k=3, reps=5, use_rep="X", keep_k=[2])
    assert "consensus_k_k3" not in adata.obs and "consensus_k_k2" in adata.obs
    # a k written again loses what the new run does not write (a review: the stored
    # matrices of a run with store_matrices stayed beside a rerun without)
    scc.tl.consensus_k(adata, max_k=3, reps=5, use_rep="X", keep_k=[2], store_matrices=True)
    assert "consensus_k_k2_consensus" in adata.obsp
    scc.tl.consensus_k(adata, max_k=3, reps=5, use_rep="X", keep_k=[2])
    assert "consensus_k_k2_consensus" not in adata.obsp and "consensus_k_k2" in adata.obs


def test_tl_missing_rep_is_a_clear_error():
    adata = scc.datasets.iris()
    with pytest.raises(ValueError, match="use_rep"):
        scc.tl.consensus_k(adata, use_rep="X_missing")


# ----------------------------------------------------------------- ConsensusClusterPlus


@pytest.fixture(scope="module")
def ccp_run():
    # R, rpy2 and ConsensusClusterPlus are installed here and in CI: no skip
    from scconsensus.r import consensus_cluster_plus

    X, truth = _expression()
    adata = ad.AnnData(X)
    consensus_cluster_plus(
        adata, max_k=5, reps=50, p_item=0.8, seed=1, use_rep="X", store_matrices=True
    )
    return adata, truth


def test_statistics_equal_ccp_on_ccp_matrices(ccp_run):
    """Same consensus matrices -> the same CDF, area, delta area, PAC, ICL as R computes."""
    adata, _ = ccp_run
    rec = adata.uns["ccp"]
    ks = rec["k"].tolist()
    matrices = {k: adata.obsp[f"ccp_k{k}_consensus"] for k in ks}
    labels = {k: adata.obs[f"ccp_k{k}"].to_numpy() for k in ks}
    res = summarize_consensus(matrices, labels)
    np.testing.assert_allclose(res.cdf, rec["cdf"], atol=1e-12)
    np.testing.assert_allclose(res.area, rec["area"], atol=1e-12)
    np.testing.assert_allclose(res.delta_area, rec["delta_area"], atol=1e-12)
    np.testing.assert_allclose(res.pac, rec["pac"], atol=1e-12)
    for k in ks:
        # calcICL's item consensus; both layouts store 1 where calcICL gives NaN (an item
        # alone in its cluster)
        lab = labels[k].astype(int)
        ours = item_consensus(matrices[k], lab)
        assert np.isnan(ours).sum() == np.sum(np.bincount(lab) == 1)
        ours[np.isnan(ours)] = 1.0
        np.testing.assert_allclose(ours, adata.obsm[f"ccp_k{k}_item_consensus"], atol=1e-12)
        ccp_cc = rec["cluster_consensus"]
        ccp_cc = ccp_cc[ccp_cc["k"] == k].sort_values("cluster")["cluster_consensus"]
        np.testing.assert_allclose(cluster_consensus(matrices[k], labels[k]), ccp_cc, atol=1e-12)


def test_python_protocol_agrees_with_ccp_within_sampling_error(ccp_run):
    """Same protocol, different RNGs: PAC per k close, labels equal up to ARI."""
    adata, truth = ccp_run
    scc.tl.consensus_k(
        adata, max_k=5, reps=50, p_item=0.8, use_rep="X", random_state=1, keep_k="all"
    )
    ours, ccp = adata.uns["consensus_k"], adata.uns["ccp"]
    assert ours["k"].tolist() == ccp["k"].tolist()
    np.testing.assert_allclose(ours["pac"], ccp["pac"], atol=0.05)
    np.testing.assert_allclose(ours["area"], ccp["area"], atol=0.03)
    assert ours["best_k"] == ccp["best_k"]
    for k in (2, 3, 4):
        assert adjusted_rand_index(adata.obs[f"ccp_k{k}"], adata.obs[f"consensus_k_k{k}"]) > 0.9
    assert adjusted_rand_index(truth, adata.obs["consensus_k_k3"]) == 1.0


def test_both_write_every_ks_labels_in_one_table(ccp_run):
    """A user trial: the README said tl.consensus_k writes r.consensus_cluster_plus's
    layout, but only tl.consensus_k wrote .obsm[f"{key}_labels"]; now both do."""
    adata, _ = ccp_run
    table = adata.obsm["ccp_labels"]
    assert list(table.columns) == ["k2", "k3", "k4", "k5"]
    for k in range(2, 6):
        np.testing.assert_array_equal(table[f"k{k}"], adata.obs[f"ccp_k{k}"])
        assert list(table[f"k{k}"].cat.categories) == [str(c) for c in range(k)]


def test_a_second_ccp_run_says_it_replaces_the_record(ccp_run):
    """A verification trial: a rerun named .obsm['ccp_labels'] only, where tl.consensus_k
    also names its .uns record."""
    from scconsensus.r import consensus_cluster_plus

    adata = ccp_run[0].copy()
    with scanpy_log("warning") as log:
        consensus_cluster_plus(adata, max_k=3, reps=5, seed=2, use_rep="X")
    assert "overwriting .obsm['ccp_labels'], .uns['ccp']" in log.getvalue()
    # the earlier run's k = 4, 5 went with the record that listed them
    assert "removing ccp_k4, ccp_k5: results of the earlier run" in log.getvalue()
    assert list(adata.uns["ccp"]["keys"]) == ["ccp_k2", "ccp_k3"]
    assert not [k for k in (*adata.uns, *adata.obs, *adata.obsm, *adata.obsp) if "ccp_k4" in k]


def test_feature_subsample_too_small_to_correlate_is_refused():
    """One feature per subsample: every correlation undefined, NaN labels and PAC 0 at every k."""
    X, _ = _expression(n_per=5, p=8)
    with pytest.raises(ValueError, match=r"p_feature keeps 1 of 8 features.*distance='pearson'"):
        consensus_k(X, max_k=3, reps=4, resampling=Resampling(p_feature=0.1), progress=False)
    euclidean = Resampling(p_feature=0.1, distance="euclidean")
    consensus_k(X, max_k=3, reps=4, resampling=euclidean, progress=False)
    with pytest.raises(ValueError, match=r"feature_subsample keeps 1 of 8 features"):
        generate_ensemble(
            X, 3, "hc", k=3, options=PartitionOptions(distance="spearman", feature_subsample=0.1)
        )
    generate_ensemble(
        X, 3, "kmeans", k=3, progress=False, options=PartitionOptions(feature_subsample=0.1)
    )


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"max_k": 9}, "too large for 8 items per subsample"),
        ({"method": "kmedians"}, "method"),
        ({"n_neighbors": 5}, "does not use"),  # hc builds its trees directly
        # a user trial: with k-means, resolution (Leiden's) passed and did nothing
        ({"resolution": 1.0}, "drop resolution"),
        ({"resolution": 0.5, "method": "kmeans"}, "fixed-k method"),
        ({"n_neighbors": 5, "method": "kmeans"}, "spectral method's kNN graph"),
        ({"final_linkage": "bogus"}, "final_linkage"),
        ({"pac_window": (0.9, 0.1)}, "pac_window"),
        ({"n_jobs": 0}, "n_jobs=0"),
    ],
)
def test_tl_refuses_before_logging_the_start(kwargs, match):
    # the log named a run that the core then refused: checked first now
    adata = scc.datasets.iris()[:10].copy()
    with scanpy_log("info") as log, pytest.raises(ValueError, match=match):
        scc.tl.consensus_k(adata, reps=5, distance="euclidean", **kwargs)
    assert "consensus_k:" not in log.getvalue()
    assert "consensus_k" not in adata.uns


def test_pac_ties_are_said_and_listed():
    """A user trial read "lowest PAC at k = 2" where PAC was 0 at several k: the tie is a
    warning, every tied k is in the record, and a singleton's item consensus is 1, not NaN."""
    rng = np.random.default_rng(0)
    a = ad.AnnData(np.concatenate([rng.normal(c * 10, 0.5, (30, 5)) for c in range(4)]))
    with pytest.warns(UserWarning, match=r"PAC ties at its lowest \(0\) for k = 2, 4: best_k = 2"):
        scc.tl.consensus_k(a, max_k=6, reps=10, distance="euclidean", keep_k="all")
    rec = a.uns["consensus_k"]
    assert rec["best_k"] == 2 and rec["best_k_ties"].tolist() == [2, 4]
    assert rec["pac"][[0, 2]].max() == 0 and rec["pac"][[1, 3, 4]].min() > 0
    for k in range(2, 7):
        assert not np.isnan(a.obsm[f"consensus_k_k{k}_item_consensus"]).any()
    import matplotlib

    matplotlib.use("Agg")
    ax = scc.pl.pac(a, show=False)
    assert "best k = 2 (lowest PAC; tied with k = 4)" in [
        t.get_text() for t in ax.get_legend().get_texts()
    ]
    from scconsensus._report import _consensus_k_section

    assert "lowest PAC at k = 2, 4 (tied; best_k is 2)" in _consensus_k_section(a, "consensus_k")[0]
    one = scc.tl.consensus_k(a, max_k=3, reps=10, distance="euclidean", copy=True)
    assert one.uns["consensus_k"]["best_k_ties"].tolist() == [one.uns["consensus_k"]["best_k"]]


def test_a_disconnected_spectral_graph_is_said_once_for_every_k():
    """A user trial: consensus-k with spectral partitions warned "not fully connected" once
    per k; one warning now counts the partitions of every k, and other warnings pass."""
    import warnings

    from sklearn.datasets import make_blobs

    X, _ = make_blobs(120, 4, centers=3, random_state=0, cluster_std=0.2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        resample_partitions(X, 4, 5, resampling=Resampling(method="spectral"), progress=False)
    said = [str(w.message) for w in caught if "connected" in str(w.message)]
    assert said == [said[0]] and said[0].startswith("15 of 15 spectral partitions (k = 2..4)")
    assert all(w.filename == __file__ for w in caught), [w.filename for w in caught]
    # other warnings keep the user's filters, a module's too (a verification trial: they
    # were issued again without their module)
    dup = np.repeat(np.random.default_rng(0).normal(size=(3, 4)), 40, axis=0)
    kmeans = Resampling(method="kmeans", distance="euclidean")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.filterwarnings("ignore", module=__name__)
        resample_partitions(dup, 4, 5, resampling=kmeans, progress=False)
    assert not caught, [str(w.message) for w in caught]
