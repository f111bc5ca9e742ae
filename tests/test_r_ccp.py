"""scconsensus.r.consensus_cluster_plus against ConsensusClusterPlus called directly from Rscript.

R is installed in CI: there a missing R fails these tests instead of skipping them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import textwrap

import anndata as ad
import numpy as np
import pandas as pd
import pytest


def _require_r() -> None:
    try:
        import rpy2.robjects  # noqa: F401

        ok = shutil.which("Rscript") is not None
    except Exception:
        ok = False
    if not ok:
        if os.environ.get("CI"):
            pytest.fail("R/rpy2 are required in CI (.ci/run installs them).")
        pytest.skip("R or rpy2 not installed")


_require_r()

from scconsensus.r import consensus_cluster_plus  # noqa: E402


def _blobs(n=60, p=20, k=3, seed=0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(k, p)) * 2.0
    truth = rng.integers(0, k, n)
    X = centres[truth] + rng.normal(size=(n, p))
    obs = pd.DataFrame(
        {"truth": pd.Categorical(truth.astype(str))}, index=[f"s{i}" for i in range(n)]
    )
    return ad.AnnData(X=X, obs=obs)


_DIRECT = textwrap.dedent(
    """
    suppressPackageStartupMessages(library(ConsensusClusterPlus))
    a <- commandArgs(trailingOnly = TRUE)
    n <- as.integer(a[2]); p <- as.integer(a[3])
    # items were written row by row: read them back as a features x items matrix
    d <- matrix(readBin(a[1], what = "double", n = n * p, endian = "little"), nrow = p)
    colnames(d) <- paste0("s", seq_len(n))
    res <- ConsensusClusterPlus(d, maxK = as.integer(a[4]), reps = as.integer(a[5]),
        pItem = as.numeric(a[6]), pFeature = 1, clusterAlg = a[7], distance = a[8],
        innerLinkage = "average", finalLinkage = "average", seed = as.numeric(a[9]),
        plot = NULL)
    icl <- calcICL(res)
    for (k in 2:as.integer(a[4])) {
        write.table(res[[k]]$consensusClass, file = paste0("class_", k, ".txt"),
                    row.names = FALSE, col.names = FALSE)
        write.table(format(res[[k]]$consensusMatrix, digits = 17),
                    file = paste0("matrix_", k, ".txt"), quote = FALSE,
                    row.names = FALSE, col.names = FALSE)
    }
    write.csv(icl$clusterConsensus, "cluster_consensus.csv", row.names = FALSE)
    write.csv(icl$itemConsensus, "item_consensus.csv", row.names = FALSE)
    """
)


def _direct(tmp_path, X, max_k, reps, p_item, alg, distance, seed):
    """Run ConsensusClusterPlus in a fresh Rscript, in tmp_path; read its outputs."""
    (tmp_path / "run.R").write_text(_DIRECT)
    np.ascontiguousarray(X, dtype="<f8").tofile(tmp_path / "x.bin")
    args = [str(v) for v in ("x.bin", *X.shape, max_k, reps, p_item, alg, distance, seed)]
    subprocess.run(
        ["Rscript", "run.R", *args], cwd=tmp_path, check=True, capture_output=True, timeout=120
    )
    classes = {k: np.loadtxt(tmp_path / f"class_{k}.txt", dtype=int) for k in range(2, max_k + 1)}
    matrices = {k: np.loadtxt(tmp_path / f"matrix_{k}.txt") for k in range(2, max_k + 1)}
    cc = pd.read_csv(tmp_path / "cluster_consensus.csv")
    ic = pd.read_csv(tmp_path / "item_consensus.csv")
    return classes, matrices, cc, ic


@pytest.mark.slow
@pytest.mark.parametrize(
    ("alg", "distance", "seed"), [("hc", "pearson", 123), ("km", "euclidean", 7)]
)
def test_equals_direct_rscript(tmp_path, alg, distance, seed):
    adata = _blobs()
    max_k, reps, p_item = 4, 15, 0.8
    consensus_cluster_plus(
        adata, max_k, reps, p_item=p_item, cluster_alg=alg, distance=distance,
        seed=seed, use_rep="X", store_matrices=True,
    )  # fmt: skip
    rdir = tmp_path / "r"
    rdir.mkdir()
    classes, matrices, cc, ic = _direct(rdir, adata.X, max_k, reps, p_item, alg, distance, seed)
    for k in range(2, max_k + 1):
        ours = adata.obs[f"ccp_k{k}"].cat.codes.to_numpy()
        # R's cluster c is our category str(c - 1), item for item.
        np.testing.assert_array_equal(ours, classes[k] - 1)
        assert list(adata.obs[f"ccp_k{k}"].cat.categories) == [str(i) for i in range(k)]
        np.testing.assert_allclose(adata.obsp[f"ccp_k{k}_consensus"], matrices[k], atol=1e-12)
        mine = adata.uns[f"ccp_k{k}"]["cluster_consensus"]
        theirs = cc[cc["k"] == k].sort_values("cluster")["clusterConsensus"].to_numpy()
        np.testing.assert_allclose(mine, theirs, atol=1e-12)
        sub = ic[ic["k"] == k]
        items = sub["item"].str.slice(1).astype(int).to_numpy() - 1  # "s1" is item 0
        raw = adata.obsm[f"ccp_k{k}_item_consensus"]
        np.testing.assert_allclose(
            raw[items, sub["cluster"].to_numpy() - 1], sub["itemConsensus"], atol=1e-12
        )
    # Nothing left in R's working directory but our inputs and outputs.
    assert not (rdir / "untitled_consensus_cluster").exists()


def test_layout_statistics_and_h5ad(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    adata = _blobs(n=50)
    consensus_cluster_plus(adata, 5, 10, seed=1, use_rep="X", store_matrices=True)
    # No Rplots.pdf, no title folder: CCP writes nothing into the user's cwd.
    assert list(tmp_path.iterdir()) == []
    rec = adata.uns["ccp"]
    np.testing.assert_array_equal(rec["k"], [2, 3, 4, 5])
    assert rec["cdf"].shape == (4, 100)
    np.testing.assert_allclose(rec["cdf_x"], np.arange(1, 101) / 100)
    for j, k in enumerate(rec["k"]):
        M = adata.obsp[f"ccp_k{k}_consensus"]
        v = M[np.tril_indices_from(M, -1)]
        # The CDF at x is the fraction of pairs with consensus <= x (R's hist fuzz: 1e-9).
        expected = (v[None, :] <= rec["cdf_x"][:, None] + 1e-9).mean(axis=1)
        np.testing.assert_allclose(rec["cdf"][j], expected, atol=1e-12)
        assert rec["cdf"][j, -1] == pytest.approx(1.0)
        assert np.all(np.diff(rec["cdf"][j]) >= 0)
        assert rec["pac"][j] == pytest.approx(np.mean((v > 0.1 + 1e-9) & (v <= 0.9 + 1e-9)))
        memb = adata.obsm[f"ccp_k{k}_membership"]
        assert memb.shape == (50, k)
        np.testing.assert_allclose(memb.sum(axis=1), 1.0)
        own = memb[np.arange(50), adata.obs[f"ccp_k{k}"].cat.codes.to_numpy()]
        np.testing.assert_allclose(adata.obs[f"ccp_k{k}_confidence"], own)
    np.testing.assert_allclose(rec["area"], rec["cdf"].sum(axis=1) / 100)
    delta = np.r_[rec["area"][0], np.diff(rec["area"]) / rec["area"][:-1]]
    np.testing.assert_allclose(rec["delta_area"], delta)
    assert rec["best_k"] == rec["k"][np.argmin(rec["pac"])]
    cc = rec["cluster_consensus"]
    assert list(cc.columns) == ["k", "cluster", "cluster_consensus", "size"]
    assert cc.groupby("k")["size"].sum().eq(50).all()
    assert rec["params"]["seed"] == 1 and rec["params"]["reps"] == 10
    # Well separated blobs: k = 3 is found exactly.
    from scconsensus.metrics import adjusted_rand_index

    assert adjusted_rand_index(adata.obs["truth"], adata.obs["ccp_k3"]) == pytest.approx(1.0)

    path = tmp_path / "ccp.h5ad"
    adata.write_h5ad(path)
    back = ad.read_h5ad(path)
    pd.testing.assert_frame_equal(back.uns["ccp"]["cluster_consensus"], cc, check_dtype=False)
    np.testing.assert_array_equal(back.obs["ccp_k4"], adata.obs["ccp_k4"])
    np.testing.assert_allclose(back.uns["ccp"]["cdf"], rec["cdf"])


def test_seed_none_is_reproducible_and_copy():
    adata = _blobs(n=40, p=10, seed=3)
    first = consensus_cluster_plus(adata, 3, 8, use_rep="X", copy=True)
    second = consensus_cluster_plus(adata, 3, 8, use_rep="X", copy=True)
    zero = consensus_cluster_plus(adata, 3, 8, use_rep="X", seed=0, copy=True)
    assert "ccp" not in adata.uns and "ccp_k2" not in adata.obs  # copy=True leaves adata alone
    assert first.uns["ccp"]["params"]["seed"] == 0
    assert first.uns["ccp"]["params"]["seed_given"] is None
    for k in (2, 3):
        np.testing.assert_array_equal(first.obs[f"ccp_k{k}"], second.obs[f"ccp_k{k}"])
        np.testing.assert_array_equal(first.obs[f"ccp_k{k}"], zero.obs[f"ccp_k{k}"])
    np.testing.assert_array_equal(first.uns["ccp"]["cdf"], second.uns["ccp"]["cdf"])


def test_sparse_input_and_key_added():
    import scipy.sparse as sp

    adata = _blobs(n=40, p=10, seed=4)
    adata.X = sp.csr_matrix(np.abs(adata.X))
    consensus_cluster_plus(adata, 3, 5, use_rep="X", key_added="mine", seed=2)
    assert "mine_k3" in adata.obs and "mine" in adata.uns and "ccp" not in adata.uns


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"max_k": 1}, "max_k must be at least 2"),
        ({"max_k": 40}, "too large"),
        ({"reps": 0}, "reps must be a positive integer"),
        ({"p_item": 1.5}, "p_item must be in"),
        ({"cluster_alg": "dbscan"}, "cluster_alg='dbscan' is not supported"),
        ({"distance": "cosine"}, "distance='cosine' is not supported"),
        ({"inner_linkage": "ward"}, "inner_linkage='ward' is not supported"),
        ({"seed": -1}, "seed must be a non-negative integer"),
        ({"seed": 2**31}, "below 2\\*\\*31"),
        ({"max_k": 7, "p_item": 0.15}, "too few to cut"),
        ({"use_rep": "X_umap"}, "not in adata.obsm"),
        # one feature of 10 per resampling: R failed deep inside hclust
        ({"p_feature": 0.15}, r"keeps 1 of 10 features.*needs at least 2.*at least 0\.2"),
        ({"p_feature": 0.05, "distance": "euclidean"}, "keeps no feature of 10"),
    ],
)
def test_bad_input(kwargs, match):
    adata = _blobs(n=40, p=10)
    with pytest.raises(ValueError, match=match):
        consensus_cluster_plus(adata, **kwargs)


def test_constant_item_and_nan_are_refused():
    adata = _blobs(n=30, p=5)
    adata.X[3] = 1.0
    with pytest.raises(ValueError, match="constant across features"):
        consensus_cluster_plus(adata, 3, 5, use_rep="X")
    adata.X[3, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        consensus_cluster_plus(adata, 3, 5, use_rep="X")
    with pytest.raises(ValueError, match="AnnData"):
        consensus_cluster_plus(np.zeros((5, 5)))


@pytest.mark.parametrize("progress", [True, False])
def test_progress_shows_or_hides_ccp_messages(progress, capfd):
    # issue 14, item 1: progress= on every long-running r function
    consensus_cluster_plus(_blobs(), max_k=3, reps=5, progress=progress)
    err = capfd.readouterr().err
    assert bool(err.strip()) is progress, err[:200]
