"""``tl.k_null``: the stability of K groups against reference data without groups."""

from __future__ import annotations

import warnings

import anndata
import matplotlib
import numpy as np
import pytest
from anndata import AnnData

import scconsensus as scc
from scconsensus.core import gaussian_like, k_evidence, null_evidence, null_table, select_k
from scconsensus.core.ensemble import generate_ensemble

matplotlib.use("Agg")

HARDLY = "(hardly more|less) stable than in data without groups"


def _fitted(adata, method="pcc", **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scc.tl.ensemble(adata, random_state=0, progress=False)
        getattr(scc.tl, method)(adata, random_state=0, progress=False, **kw)
    return adata


def _blobs(seed=0, n_per=100, groups=4, dim=10):
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=6.0, size=(groups, dim))
    X = np.repeat(centres, n_per, axis=0) + rng.normal(size=(groups * n_per, dim))
    return AnnData(X.astype(np.float32))


def test_evidence_is_what_select_k_reads():
    labels = generate_ensemble(_blobs().X, 40, random_state=1, progress=False).labels
    table = select_k(labels, random_state=3).table
    Ks = table["n_clusters"].to_numpy()
    np.testing.assert_allclose(
        k_evidence(labels, Ks, random_state=3), table["eigenvalue"], rtol=1e-12
    )


def test_the_reference_has_the_data_covariance_and_no_groups():
    X = _blobs().X
    draw = gaussian_like(X, 20_000, np.random.default_rng(0))
    assert draw.shape == (20_000, X.shape[1]) and draw.dtype == np.float32
    np.testing.assert_allclose(draw.mean(0), X.mean(0), atol=0.15)
    scale = np.abs(np.cov(X, rowvar=False)).max()
    np.testing.assert_allclose(
        np.cov(draw, rowvar=False), np.cov(X, rowvar=False), atol=0.05 * scale
    )
    # one Gaussian: no bimodal axis, where the data's first axis has four groups
    first = (draw - draw.mean(0)) @ np.linalg.svd(X - X.mean(0), full_matrices=False)[2][0]
    assert abs(np.mean(first**4) / np.var(first) ** 2 - 3.0) < 0.15


def test_a_too_wide_matrix_is_refused_with_the_fix(monkeypatch):
    from scconsensus.core import _null

    monkeypatch.setattr(_null, "MAX_DENSE", 100)
    with pytest.raises(ValueError, match=r"use_rep='X_pca'"):
        gaussian_like(np.ones((50, 10)), 50, np.random.default_rng(0))


def test_the_draws_are_reproducible_and_one_row_each():
    X, Ks = _blobs().X, np.arange(2, 5)

    def build(Xn, seed):
        return generate_ensemble(Xn, 20, k=(2, 8), random_state=seed, progress=False).labels

    first = null_evidence(X, Ks, build, n_null=2, random_state=5)
    assert first.shape == (2, Ks.size)
    np.testing.assert_array_equal(first, null_evidence(X, Ks, build, n_null=2, random_state=5))
    table = null_table(Ks, first[0], first)
    np.testing.assert_allclose(table["ratio"], (1 - first.max(0)) / (1 - first[0]))


def test_the_ratio_of_cuts_is_unbounded_when_the_data_cut_nothing():
    table = null_table([2, 3, 4], np.array([1.0, 1.0, 0.8]), np.array([[0.95, 1.0, 0.6]]))
    np.testing.assert_allclose(table["ratio"], [np.inf, 1.0, 2.0])
    # a K the draws (or the data) have too few partitions to judge compares nothing
    null = np.array([[0.5, np.nan, np.nan], [0.6, 0.4, np.nan]])
    table = null_table([2, 3, 4], np.array([0.9, np.nan, 0.7]), null)
    np.testing.assert_allclose(table["null_max"], [0.6, 0.4, np.nan])
    np.testing.assert_allclose(table["ratio"], [4.0, np.nan, np.nan])


def test_a_k_too_fine_to_judge_is_said_so():
    # K = 12 on iris: the ensemble (k up to 12) has too few partitions that fine
    adata = _fitted(scc.datasets.iris(), n_clusters=12)
    with pytest.warns(UserWarning, match="cannot be compared: .*too few of the ensemble's"):
        scc.tl.k_null(adata, n_null=1, progress=False)
    assert np.isnan(adata.uns["pcc"]["k_null_ratio"])


def test_draws_with_too_few_partitions_at_k_say_nothing():
    # a user trial read null_max 1.000 at K = 22, from one or two partitions of a draw
    labels = np.tile(np.repeat(np.arange(3), 20)[:, None], (1, 40))
    labels[:, :2] = np.arange(60)[:, None] % 30  # two partitions of 30 clusters
    Ks = np.array([2, 3, 20])
    assert k_evidence(labels, Ks)[2] == pytest.approx(1.0)  # two partitions agree
    read = k_evidence(labels, Ks, judged=True)
    assert np.isnan(read[2]) and (read[:2] > 0.9).all()


def test_clear_groups_clear_the_reference_and_noise_does_not():
    clear = _fitted(_blobs())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        scc.tl.k_null(clear, progress=False)
    assert clear.uns["pcc"]["n_clusters_chosen"] == 4
    assert clear.uns["pcc"]["k_null_ratio"] > 3
    rng = np.random.default_rng(0)
    noise = _fitted(AnnData(rng.normal(size=(600, 10)).astype(np.float32)))
    with pytest.warns(UserWarning, match=HARDLY):
        scc.tl.k_null(noise, progress=False)
    assert noise.uns["pcc"]["k_null_ratio"] < 1.5


def test_wine_in_raw_units_is_flagged_and_iris_is_not():
    # measured on the panel: wine's proline holds 99.8 % of the variance, and its chosen
    # K (2 or 7; 3 classes) cuts 1.13-1.42 times less than the reference; iris 6
    wine = _fitted(scc.datasets.wine(), "pla")
    with pytest.warns(UserWarning, match=r"scale the features \(sc.pp.scale\).*'pla'"):
        scc.tl.k_null(wine, "pla", progress=False)
    iris = _fitted(scc.datasets.iris())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        scc.tl.k_null(iris, progress=False)


def test_writes_only_its_entries_and_copy_leaves_the_input():
    adata = _fitted(_blobs())
    before = {k: set(v) if isinstance(v, dict) else None for k, v in adata.uns.items()}
    obs, obsm = adata.obs.copy(), set(adata.obsm)
    out = scc.tl.k_null(adata, copy=True, progress=False)
    assert "k_null" not in adata.uns["pcc"] and "k_null" in out.uns["pcc"]
    assert scc.tl.k_null(adata, progress=False) is None
    added = set(adata.uns["pcc"]) - before["pcc"]
    assert added == {"k_null", "k_null_ratio", "k_null_params"}
    assert set(adata.obsm) == obsm and adata.obs.equals(obs)
    assert adata.uns["pcc"]["k_null_params"] == {"n_null": 3, "random_state": 0}
    table = adata.uns["pcc"]["k_null"]
    np.testing.assert_array_equal(
        table["eigenvalue"], adata.uns["pcc"]["k_selection"]["eigenvalue"]
    )


def test_a_given_k_is_judged_on_its_own_evidence():
    adata = _fitted(_blobs(), n_clusters=3)
    scc.tl.k_null(adata, n_null=1, progress=False)
    table = adata.uns["pcc"]["k_null"]
    assert list(table["n_clusters"]) == [2, 3, 4, 5]
    ratio = table.loc[table["n_clusters"] == 3, "ratio"].iloc[0]
    assert adata.uns["pcc"]["k_null_ratio"] == ratio


def test_same_seed_same_reference_for_any_n_jobs():
    adata = _fitted(_blobs())
    one = scc.tl.k_null(adata, n_null=2, random_state=4, copy=True, progress=False)
    two = scc.tl.k_null(adata, n_null=2, random_state=4, n_jobs=2, copy=True, progress=False)
    assert one.uns["pcc"]["k_null"].equals(two.uns["pcc"]["k_null"])


@pytest.mark.parametrize(
    ("setup", "match"),
    [
        (lambda a: None, r"No PCC or PLA result at 'pcc'.*scc.tl.pcc\(adata\)"),
        (lambda a: _fitted(a, "dpp"), r"found: none"),
        (lambda a: scc.tl.dpp(_fitted(a), progress=False, key_added="pcc"), r"found: dpp"),
        (lambda a: _fitted(a).uns.pop("scc_ensemble"), r"no recorded recipe"),
        (lambda a: setattr(_fitted(a), "X", None), r"\(adata.X\) is gone"),
        (lambda a: scc.tl.ensemble(_fitted(a), random_state=9, progress=False), r"rebuilt|again"),
    ],
)
def test_what_cannot_be_compared_is_refused_with_the_fix(setup, match):
    adata = _blobs(n_per=30)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        setup(adata)
    with pytest.raises(ValueError, match=match):
        scc.tl.k_null(adata, progress=False)
    assert "k_null" not in adata.uns.get("pcc", {})


def test_the_matrix_the_ensemble_clustered_is_read_not_a_newer_pca():
    adata = _fitted(_blobs())
    first = scc.tl.k_null(adata, n_null=1, copy=True, progress=False)
    adata.obsm["X_pca"] = adata.X[:, :2] * 0.0 + 1.0  # added since, a single point
    scc.tl.k_null(adata, n_null=1, progress=False)
    assert adata.uns["pcc"]["k_null"].equals(first.uns["pcc"]["k_null"])


def test_k_selection_draws_the_reference_band():
    adata = _fitted(_blobs())
    scc.tl.k_null(adata, n_null=1, progress=False)
    ax = scc.pl.k_selection(adata, "pcc", show=False)
    labels = [line.get_label() for line in ax.get_lines()]
    assert "without groups (tl.k_null)" in labels
    matplotlib.pyplot.close("all")


def test_the_command_line_compares_each_k_and_reports_it(tmp_path, capsys):
    from scconsensus.cli import main

    src, out = tmp_path / "in.h5ad", tmp_path / "out.h5ad"
    _blobs(n_per=40).write_h5ad(src)
    args = ["run", str(src), "--out", str(out), "--method", "pcc", "--n-partitions", "30"]
    assert main([*args, "--k-null", "-1"]) == 2
    assert "--k-null" in capsys.readouterr().err and not out.exists()
    assert main([*args, "--k-null", "2"]) == 0
    record = anndata.read_h5ad(out).uns["pcc"]
    assert record["k_null_params"]["n_null"] == 2 and record["k_null_ratio"] > 1.5
    report = (tmp_path / "out_figures" / "report.md").read_text()
    assert "Against data without groups (`tl.k_null`: 2 draws" in report


def test_leiden_draws_are_calibrated_to_k_anew():
    # the data's calibrated resolutions gave a Gaussian draw one cluster per partition,
    # and every ratio came out unbounded without evidence (a review)
    adata = _blobs(n_per=60)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scc.tl.ensemble(adata, 30, method="leiden", k=(2, 8), random_state=0, progress=False)
        scc.tl.pcc(adata, random_state=0, progress=False)
        scc.tl.k_null(adata, n_null=2, progress=False)
    assert adata.uns["scc_ensemble"]["params"]["resolution_calibrated"] is True
    table = adata.uns["pcc"]["k_null"]
    assert table["null_max"].between(0.05, 0.99).all()
    assert adata.uns["pcc"]["k_null_ratio"] > 1.5  # unbounded: the data cut nothing


def test_a_generator_seed_is_recorded_so_that_h5ad_writes(tmp_path):
    adata = _fitted(_blobs())
    scc.tl.k_null(adata, n_null=1, random_state=np.random.default_rng(3), progress=False)
    assert adata.uns["pcc"]["k_null_params"]["random_state"] == "custom"
    adata.write_h5ad(tmp_path / "a.h5ad")
    back = anndata.read_h5ad(tmp_path / "a.h5ad").uns["pcc"]
    np.testing.assert_array_equal(back["k_null"]["ratio"], adata.uns["pcc"]["k_null"]["ratio"])


def test_results_of_one_ensemble_share_the_draws():
    adata = _fitted(_blobs())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scc.tl.pla(adata, random_state=0, progress=False)
        scc.tl.pcc(adata, n_clusters=[3, 5], random_state=0, progress=False)
    keys = ["pcc", "pla", "pcc_k3", "pcc_k5"]
    scc.tl.k_null(adata, keys, n_null=2, progress=False)
    alone = scc.tl.k_null(adata, "pcc_k5", n_null=2, copy=True, progress=False)
    tables = {k: adata.uns[k]["k_null"].set_index("n_clusters") for k in keys}
    assert tables["pcc"]["null_max"].equals(tables["pla"]["null_max"])
    np.testing.assert_array_equal(
        tables["pcc_k3"]["null_max"], tables["pcc"]["null_max"][[2, 3, 4, 5]]
    )
    assert alone.uns["pcc_k5"]["k_null"].equals(adata.uns["pcc_k5"]["k_null"])
    # K given: read with the result's seed, as the chosen K was
    np.testing.assert_allclose(tables["pcc_k5"]["eigenvalue"][5], tables["pcc"]["eigenvalue"][5])


def test_results_of_two_ensembles_are_refused_together():
    adata = _fitted(_blobs())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scc.tl.ensemble(adata, 20, random_state=1, key_added="other", progress=False)
        scc.tl.pcc(adata, 4, ensemble_key="other", key_added="pcc_other", progress=False)
    with pytest.raises(ValueError, match="different ensembles"):
        scc.tl.k_null(adata, ["pcc", "pcc_other"], progress=False)
    with pytest.raises(ValueError, match="several distinct results"):
        scc.tl.k_null(adata, ["pcc", "pcc"], progress=False)


def test_a_given_k_without_groups_points_at_the_table():
    rng = np.random.default_rng(0)
    noise = _fitted(AnnData(rng.normal(size=(600, 10)).astype(np.float32)), n_clusters=4)
    with pytest.warns(UserWarning, match=r"Look at adata.uns\['pcc'\]\['k_null'\]\.$") as got:
        scc.tl.k_null(noise, progress=False)
    assert not any("sc.pp.scale" in str(w.message) for w in got)  # no feature dominates


def test_the_command_line_refuses_before_fitting(tmp_path, capsys):
    from scconsensus.cli import main

    src, out = tmp_path / "in.h5ad", tmp_path / "out.h5ad"
    adata = _blobs(n_per=40)
    adata.obsm["scc_ensemble"] = np.random.default_rng(0).integers(0, 3, (160, 10))
    adata.write_h5ad(src)
    assert main(["run", str(src), "--out", str(out), "--method", "pcc", "--k-null", "2"]) == 2
    err = capsys.readouterr()
    assert "Pass --rebuild-ensemble." in err.err and "pcc:" not in err.out
    assert not out.exists()


def test_a_matrix_changed_since_the_ensemble_is_refused_and_nothing_written():
    # a user trial scaled X as the warning advised and got a clean pass for clusters that
    # still followed one feature; another passed a subset (a view) and overwrote the parent
    import scanpy as sc

    wine = _fitted(scc.datasets.wine())
    before = dict(wine.uns["pcc"])
    sc.pp.scale(wine)
    with pytest.raises(ValueError, match="not the matrix the ensemble at 'scc_ensemble'"):
        scc.tl.k_null(wine, progress=False)
    iris = _fitted(scc.datasets.iris())
    view = iris[:100]
    with pytest.raises(ValueError, match=r"changed since, or this is a subset"):
        scc.tl.k_null(view, progress=False)
    assert "k_null" not in iris.uns["pcc"] and set(wine.uns["pcc"]) == set(before)


def test_cells_in_another_order_are_the_same_matrix():
    """A Bioconductor trial: sce[, order(sce$sample)] then nNull was refused as "not the
    matrix the ensemble clustered"; the ensemble's rows move with the cells."""
    iris = _fitted(scc.datasets.iris())
    order = np.random.default_rng(0).permutation(iris.n_obs)
    shuffled = iris[order].copy()
    scc.tl.k_null(shuffled, n_null=2, progress=False)
    assert "k_null" in shuffled.uns["pcc"]
    # centred float64 data (a PCA from R's prcomp): column sums are rounding noise, which a
    # moments digest read differently in another order (a review); the row hash does not,
    # and still tells a column shuffled on its own or a sign flipped
    from scconsensus.tl._runs import matrix_digest

    rng = np.random.default_rng(1)
    X = rng.normal(size=(3000, 30))
    X = (X - X.mean(0)) / X.std(0)
    assert all(matrix_digest(X) == matrix_digest(X[rng.permutation(3000)]) for _ in range(5))
    shuffled_column, flipped = X.copy(), X.copy()
    shuffled_column[:, 0] = X[rng.permutation(3000), 0]
    flipped[:, 1] *= -1
    assert len({matrix_digest(m) for m in (X, shuffled_column, flipped)}) == 3
    # an ensemble stored before (its digest read rows at fixed places) is still recognised
    from scconsensus.tl._runs import legacy_digest

    iris.uns["scc_ensemble"]["params"]["matrix_digest"] = legacy_digest(iris.X)
    scc.tl.k_null(iris, n_null=2, progress=False)


def test_k_selection_draws_a_given_k_against_the_draws():
    adata = _fitted(_blobs(), n_clusters=3)
    with pytest.raises(ValueError, match=r"scc.tl.k_null\(adata, 'pcc'\)"):
        scc.pl.k_selection(adata, "pcc", show=False)
    scc.tl.k_null(adata, n_null=1, progress=False)
    ax = scc.pl.k_selection(adata, "pcc", show=False)
    labels = [line.get_label() for line in ax.get_lines()]
    assert "without groups (tl.k_null)" in labels and "given K = 3" in labels
    matplotlib.pyplot.close("all")


def test_the_command_line_says_what_it_compared(tmp_path, capsys):
    from scconsensus.cli import main

    src = tmp_path / "in.h5ad"
    rng = np.random.default_rng(0)
    AnnData(rng.normal(size=(300, 6)).astype(np.float32)).write_h5ad(src)
    args = ["run", str(src), "--n-partitions", "30", "--k-null", "2", "--no-figures"]
    assert main([*args, "--out", str(tmp_path / "a.h5ad"), "--method", "dpp"]) == 0
    assert "--k-null compares the K of pcc and pla only" in capsys.readouterr().out
    assert main([*args, "--out", str(tmp_path / "b.h5ad"), "--method", "pcc"]) == 0
    said = capsys.readouterr()
    assert "ratio of cuts (1.5+: beyond): pcc" in said.out
    assert "Look at .uns['pcc'] in the --out file (k_selection, k_null)" in said.err
    assert "--subsample" not in said.err
