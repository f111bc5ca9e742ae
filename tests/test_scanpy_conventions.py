"""Issue 14, Scanpy side: scanpy's conventions, one test group per audit item."""

from __future__ import annotations

import inspect
import warnings

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
import scanpy as sc

import scconsensus as scc
from scconsensus._progress import PROGRESS_DOC
from scconsensus._results import result_method

# ---- 1. progress bars: off by default, switchable, TQDM_DISABLE respected ---------------

#: Every long-running tool and a small call of it that would draw a bar.
LONG_RUNNING = {
    "ensemble": lambda a, **kw: scc.tl.ensemble(a, n_partitions=25, k=(2, 4), **kw),
    "consensus_k": lambda a, **kw: scc.tl.consensus_k(
        a, max_k=3, reps=25, distance="euclidean", **kw
    ),
    "pcc": lambda a, **kw: scc.tl.pcc(a, n_clusters=3, **kw),
    "pla": lambda a, **kw: scc.tl.pla(a, n_clusters=3, weighted=True, cv_folds=2, **kw),
    "dpp": lambda a, **kw: scc.tl.dpp(a, n_runs=25, **kw),
}


@pytest.fixture
def verbosity():
    old = sc.settings.verbosity
    yield
    sc.settings.verbosity = old


@pytest.fixture
def small(blobs_adata):
    scc.tl.ensemble(blobs_adata, n_partitions=10, k=(2, 4), progress=False)
    return blobs_adata


def test_every_long_running_function_documents_progress_the_same_way():
    for name in LONG_RUNNING:
        fn = getattr(scc.tl, name)
        param = inspect.signature(fn).parameters["progress"]
        assert param.default is None, name
        doc = " ".join(fn.__doc__.split())
        assert " ".join(PROGRESS_DOC.split()) in doc, name


@pytest.mark.parametrize("name", list(LONG_RUNNING))
def test_quiet_scanpy_means_nothing_on_stderr(name, small, capfd, verbosity):
    sc.settings.verbosity = 0
    capfd.readouterr()
    LONG_RUNNING[name](small)
    assert capfd.readouterr().err == ""


@pytest.mark.parametrize("name", list(LONG_RUNNING))
def test_progress_false_prints_no_bar_at_info(name, small, capfd, verbosity):
    sc.settings.verbosity = "info"
    capfd.readouterr()
    LONG_RUNNING[name](small, progress=False)
    assert "100%" not in capfd.readouterr().err


def test_info_verbosity_turns_bars_on_and_progress_true_forces_them(small, capfd, verbosity):
    sc.settings.verbosity = "info"
    capfd.readouterr()
    scc.tl.ensemble(small, n_partitions=25, k=(2, 4))
    assert "ensemble: 100%" in capfd.readouterr().err
    sc.settings.verbosity = "error"
    scc.tl.ensemble(small, n_partitions=25, k=(2, 4), progress=True)
    assert "ensemble: 100%" in capfd.readouterr().err


def test_tqdm_disable_is_never_overridden(small, capfd, monkeypatch, verbosity):
    monkeypatch.setenv("TQDM_DISABLE", "1")
    sc.settings.verbosity = "info"
    capfd.readouterr()
    scc.tl.ensemble(small, n_partitions=25, k=(2, 4), progress=True)
    assert "100%" not in capfd.readouterr().err


def test_progress_must_be_a_bool_or_none(small):
    with pytest.raises(ValueError, match="progress must be True, False or None"):
        scc.tl.ensemble(small, n_partitions=5, progress="yes")
    before = small.obsm["scc_ensemble"].copy()
    with pytest.raises(ValueError, match="progress"):
        scc.tl.pcc(small, n_clusters=3, progress=1)
    np.testing.assert_array_equal(small.obsm["scc_ensemble"], before)


# ---- 2. save= follows sc.pl: suffix of the plot name, figdir, file format --------------


@pytest.fixture
def figsettings(tmp_path, monkeypatch):
    old = sc.settings.figdir, sc.settings.file_format_figs, sc.settings.autosave
    sc.settings.figdir = tmp_path / "figures"
    monkeypatch.chdir(tmp_path)
    yield tmp_path / "figures"
    sc.settings.figdir, sc.settings.file_format_figs, sc.settings.autosave = old
    plt.close("all")


@pytest.fixture(scope="module")
def with_consensus():
    adata = scc.datasets.iris()
    scc.tl.consensus_k(
        adata, max_k=4, reps=10, distance="euclidean", keep_k="all", store_matrices=True
    )
    return adata


def test_save_suffix_lands_in_figdir(with_consensus, figsettings):
    log = figsettings.parent / "scanpy.log"
    old = sc.settings.logfile
    sc.settings.logfile = log
    try:
        ax = scc.pl.membership(with_consensus, "consensus_k_k3", save="_membership.png", show=False)
    finally:
        sc.settings.logfile = old
    path = figsettings / "membership_consensus_k_k3_membership.png"
    assert path.exists() and ax is not None
    assert f"saving figure to file {path}" in log.read_text()
    assert not list(figsettings.parent.glob("*.png"))  # nothing in the working directory


def test_save_extension_only_chooses_the_format(with_consensus, figsettings):
    scc.pl.pac(with_consensus, save=".pdf", show=False)
    assert (figsettings / "pac_consensus_k.pdf").exists()
    assert not list(figsettings.parent.glob(".pdf*"))


def test_curves_of_other_keys_do_not_overwrite_each_other(with_consensus, figsettings):
    # the plot's name holds its keys (consensus_cdf, pac and delta_area were named alone)
    a = with_consensus.copy()
    a.uns["again"] = a.uns["consensus_k"]
    for fn in ("consensus_cdf", "pac", "delta_area"):
        for key in ("consensus_k", "again"):
            getattr(scc.pl, fn)(a, key, save=True, show=False)
        names = {p.name for p in figsettings.glob(f"{fn}_*")}
        assert names == {f"{fn}_consensus_k.pdf", f"{fn}_again.pdf"}, names


@pytest.mark.parametrize("save", [3, 1.0, ["x"]])
def test_save_of_another_type_is_refused(with_consensus, figsettings, save):
    with pytest.raises(ValueError, match="save must be True/False, a file-name suffix"):
        scc.pl.pac(with_consensus, save=save, show=False)


def test_save_true_uses_file_format_figs(with_consensus, figsettings):
    sc.settings.file_format_figs = "svg"
    scc.pl.cluster_graph(with_consensus, "consensus_k_k3", save=True, show=False)
    assert (figsettings / "cluster_graph_consensus_k_k3.svg").exists()
    sc.settings.autosave = True  # save=None follows autosave, as in sc.pl
    scc.pl.consensus_heatmap(with_consensus, "consensus_k_k3", show=False)
    assert (figsettings / "consensus_heatmap_consensus_k_k3.svg").exists()


def test_a_path_is_written_as_given(with_consensus, figsettings, tmp_path):
    path = tmp_path / "elsewhere" / "cdf.png"
    scc.pl.consensus_cdf(with_consensus, save=path, show=False)
    assert path.exists()


@pytest.mark.filterwarnings("ignore:FigureCanvasAgg is non-interactive")
def test_shown_figures_return_none(with_consensus, figsettings):
    assert scc.pl.delta_area(with_consensus, show=True) is None
    assert scc.pl.membership(with_consensus, "consensus_k_k3", show=True) is None
    assert scc.pl.k_selection is not None  # imported alongside


# ---- 3. consensus_heatmap of a consensus result finds its ensemble ----------------------


def test_heatmap_of_pcc_uses_the_partitions_it_fitted(figsettings):
    from scconsensus.core import coassociation
    from scconsensus.pl._heatmap import consensus_matrix

    adata = scc.datasets.iris()
    scc.tl.ensemble(adata, n_partitions=20, k=(2, 6), key_added="ens")
    scc.tl.pcc(adata, n_clusters=3, ensemble_key="ens")
    ax = scc.pl.consensus_heatmap(adata, "pcc", show=False)  # the README's call
    assert ax is not None
    used = np.asarray(adata.uns["pcc"]["partitions_used"])
    C, N = coassociation(adata.obsm["ens"][:, used], mode="dense")
    expected = np.divide(C, N, out=np.zeros(C.shape), where=N > 0)
    np.testing.assert_allclose(consensus_matrix(adata, "pcc"), expected)
    del adata.obsm["ens"]
    with pytest.raises(ValueError, match=r"scc.tl.ensemble\(adata, key_added='ens'\)"):
        scc.pl.consensus_heatmap(adata, "pcc", show=False)


# ---- 4. Leiden partitions use the user's neighbours graph ------------------------------


@pytest.fixture(scope="module")
def pbmc():
    return scc.datasets.pbmc68k_reduced()


@pytest.mark.slow
def test_leiden_ensemble_on_pbmc_uses_the_stored_graph(pbmc):
    from scconsensus.core.ensemble import PartitionOptions, generate_ensemble

    adata = pbmc.copy()
    scc.tl.ensemble(adata, 4, "leiden", resolution=1.0, random_state=2)
    assert adata.uns["scc_ensemble"]["params"]["graph"] == "obsp['connectivities']"
    direct = generate_ensemble(
        adata.obsm["X_pca"],
        4,
        "leiden",
        random_state=2,
        graph=adata.obsp["connectivities"],
        options=PartitionOptions(resolution=1.0),
    )
    np.testing.assert_array_equal(adata.obsm["scc_ensemble"], direct.labels)
    own = pbmc.copy()
    del own.uns["neighbors"]
    scc.tl.ensemble(own, 4, "leiden", resolution=1.0, random_state=2)
    assert own.uns["scc_ensemble"]["params"]["graph"] == "knn"
    assert (own.obsm["scc_ensemble"] != adata.obsm["scc_ensemble"]).any()


@pytest.mark.slow
def test_leiden_neighbors_key_and_obsp_as_in_scanpy(pbmc):
    adata = pbmc.copy()
    sc.pp.neighbors(adata, n_neighbors=5, key_added="nn5")
    scc.tl.ensemble(adata, 3, "leiden", neighbors_key="nn5", resolution=0.5, key_added="a")
    scc.tl.ensemble(adata, 3, "leiden", obsp="nn5_connectivities", resolution=0.5, key_added="b")
    np.testing.assert_array_equal(adata.obsm["a"], adata.obsm["b"])
    assert adata.uns["a"]["params"]["graph"] == "obsp['nn5_connectivities']"
    scc.tl.ensemble(adata, 2, "leiden", feature_subsample=0.5, key_added="c")
    assert adata.uns["c"]["params"]["graph"] == "knn"
    with pytest.raises(ValueError, match="not both"):
        scc.tl.ensemble(adata, 3, "leiden", neighbors_key="nn5", obsp="connectivities")
    with pytest.raises(ValueError, match=r"sc\.pp\.neighbors"):
        scc.tl.ensemble(adata, 3, "leiden", neighbors_key="nope")
    with pytest.raises(ValueError, match="method must be a method name"):
        scc.tl.ensemble(adata, 3, 3)  # not a method: refused, not a TypeError


def test_leiden_partitions_record_the_k_they_found(pbmc):
    adata = pbmc.copy()
    scc.tl.ensemble(adata, 4, ["leiden", "kmeans"], k=5, resolution=(0.3, 1.5))
    table = adata.uns["scc_ensemble"]["partitions"]
    found = [len(np.unique(c[c >= 0])) for c in adata.obsm["scc_ensemble"].T]
    np.testing.assert_array_equal(table["n_clusters"], found)
    leiden = table["method"] == "leiden"
    np.testing.assert_array_equal(table.loc[leiden, "k"], table.loc[leiden, "n_clusters"])
    assert (table.loc[leiden, "k"] > 1).all()
    assert (table.loc[~leiden, "k"] == 5).all()


def test_scalar_resolution_is_one_value(pbmc):
    adata = pbmc.copy()
    scc.tl.ensemble(adata, 3, "leiden", resolution=0.8)
    assert list(adata.uns["scc_ensemble"]["params"]["resolution"]) == [0.8, 0.8]
    assert (adata.uns["scc_ensemble"]["partitions"]["resolution"] == 0.8).all()
    with pytest.raises(ValueError, match="positive number or a"):
        scc.tl.ensemble(adata, 3, "leiden", resolution=-1.0)


# ---- 5. one vocabulary: method=, and sc.tl.ingest's argument order ---------------------


def test_method_is_the_name_everywhere_and_methods_still_works(blobs_adata):
    from scconsensus.core.ensemble import generate_ensemble

    for fn in (scc.tl.ensemble, generate_ensemble, scc.tl.consensus_k):
        params = inspect.signature(fn).parameters
        assert "method" in params and "methods" not in params, fn.__name__
    scc.tl.ensemble(blobs_adata, 4, method=["kmeans", "hc"], k=3, key_added="new")
    with pytest.warns(FutureWarning, match="methods= is now method="):
        scc.tl.ensemble(blobs_adata, 4, methods=["kmeans", "hc"], k=3, key_added="old")
    np.testing.assert_array_equal(blobs_adata.obsm["new"], blobs_adata.obsm["old"])
    assert list(blobs_adata.uns["new"]["params"]["method"]) == ["kmeans", "hc"]
    with pytest.raises(ValueError, match="method= only"):
        scc.tl.ensemble(blobs_adata, 4, method="kmeans", methods="hc")


def test_pla_transfer_takes_scanpy_ingest_order(blobs_adata):
    ref, new = blobs_adata[::2].copy(), blobs_adata[1::2].copy()
    scc.tl.ensemble(ref, 10, k=(2, 5), random_state=0)
    scc.tl.pla(ref, n_clusters=3)
    expected = scc.tl.pla_transfer(new, ref, copy=True)  # as sc.tl.ingest(adata, adata_ref)
    assert list(inspect.signature(scc.tl.pla_transfer).parameters)[:2] == ["adata", "adata_ref"]
    with pytest.warns(FutureWarning, match="reference goes second"):
        old = scc.tl.pla_transfer(ref, new, copy=True)
    with pytest.warns(FutureWarning, match="adata_new= is now adata="):
        kw = scc.tl.pla_transfer(adata_ref=ref, adata_new=new, copy=True)
    for out in (old, kw):
        assert out.n_obs == new.n_obs
        np.testing.assert_array_equal(out.obs["pla"], expected.obs["pla"])
    # new data transferred to before is no reference given first (a user trial): no
    # FutureWarning, and the reference's own problem is named
    del ref.uns["pla"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        with pytest.raises(ValueError, match="adata_ref has no PLA result"):
            scc.tl.pla_transfer(expected, ref)


def test_cli_speaks_the_same_vocabulary(tmp_path, capfd):
    from scconsensus.cli import main

    out = tmp_path / "o.h5ad"
    argv = ["run", "iris", "--out", str(out), "--no-figures", "--n-partitions", "6"]
    capfd.readouterr()
    assert main([*argv, "--ensemble-method", "kmeans,hc", "--method", "pla", "--no-progress"]) == 0
    assert "100%" not in capfd.readouterr().err
    # the old name still works, and is said as the command line says its warnings
    assert main([*argv, "--ensemble-methods", "kmeans", "--method", "pla"]) == 0
    said = capfd.readouterr().err
    assert "scconsensus: warning: --ensemble-methods is now --ensemble-method" in said


# ---- 6. .uns params hold what h5ad holds and read back to the same value ---------------


def _same(a, b) -> bool:
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, np.ndarray | list):
        return np.array_equal(np.asarray(a), np.asarray(b))
    same_kind = isinstance(a, str) == isinstance(b, str) and isinstance(a, bool) == isinstance(
        b, bool | np.bool_
    )
    return same_kind and bool(a == b)


def _no_none_strings(value) -> bool:
    if isinstance(value, dict):
        return all(_no_none_strings(v) for v in value.values())
    return not (isinstance(value, str) and value == "None")


def test_params_keep_none_and_survive_h5ad(blobs_adata, tmp_path):
    import anndata as ad

    a = blobs_adata
    scc.tl.ensemble(a, 8, k=(2, 4))
    scc.tl.pcc(a, n_clusters=3)
    scc.tl.pla(a, n_clusters=3, fit_fraction=None)
    scc.tl.dpp(a, n_runs=10)
    scc.tl.consensus_k(a, max_k=3, reps=5, distance="euclidean")
    keys = ["scc_ensemble", "pcc", "pla", "dpp", "consensus_k"]
    assert a.uns["pcc"]["params"]["max_iter"] is None
    assert a.uns["pcc"]["params"]["use_rep"] is None
    assert a.uns["pla"]["params"]["fit_fraction"] is None
    assert a.uns["scc_ensemble"]["params"]["predict_unsampled"] is False
    for key in keys:
        assert _no_none_strings(a.uns[key]["params"]), key
    a.write_h5ad(tmp_path / "a.h5ad")
    back = ad.read_h5ad(tmp_path / "a.h5ad")
    for key in keys:
        for name, value in a.uns[key]["params"].items():
            assert _same(value, back.uns[key]["params"][name]), (key, name, value)
    # every result names the function that wrote it, and the name survives the file
    methods = {key: back.uns[key].get("method") for key in [*keys[1:], "consensus_k_k2"]}
    assert methods == {
        "pcc": "pcc", "pla": "pla", "dpp": "dpp", "consensus_k": "consensus_k",
        "consensus_k_k2": "consensus_k",
    }  # fmt: skip
    scc.tl.pla_transfer(back, a, "pla", key_added="moved")
    assert result_method(back, "moved") == "pla_transfer"


# ---- 8. cluster_graph: a figure a reader can trust ------------------------------------


def _graph_adata():
    """Three blobs in a 2-D embedding and a 4-cluster membership whose cluster 3 is empty."""
    import anndata as ad

    rng = np.random.default_rng(0)
    centers = np.array([[0.0, 0.0], [10.0, 0.0], [5.0, 8.0]])
    truth = np.repeat(np.arange(3), 50)
    emb = centers[truth] + rng.normal(scale=0.8, size=(150, 2))
    Y = np.full((150, 4), 0.02)
    Y[np.arange(150), truth] = 0.9
    Y[truth == 0, 1] = 0.3  # cluster 0 overlaps cluster 1
    Y[:, 3] = 0.0
    Y /= Y.sum(axis=1, keepdims=True)
    Y[:5] = np.array([0.02, 0.02, 0.9, 0.0]) / 0.94  # far-away cells with a little mass
    adata = ad.AnnData(np.zeros((150, 1)), obsm={"X_umap": emb, "toy_membership": Y})
    adata.obs["toy"] = pd.Categorical(Y.argmax(1).astype(str), categories=["0", "1", "2", "3"])
    return adata, centers


def test_cluster_graph_draws_what_it_says(figsettings):
    from matplotlib.patches import FancyArrowPatch

    adata, centers = _graph_adata()
    ax = scc.pl.cluster_graph(adata, "toy", show=False, save="_toy.png")
    assert (figsettings / "cluster_graph_toy_toy.png").exists()
    nodes = [t for t in ax.texts if t.get_text() in {"0", "1", "2", "3"}]
    assert sorted(t.get_text() for t in nodes) == ["0", "1", "2"]  # no node for empty 3
    for t in nodes:  # every node sits on its own cells
        assert np.linalg.norm(np.asarray(t.xy) - centers[int(t.get_text())]) < 1.0
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("UMAP1", "UMAP2")
    arrows = [p for p in ax.patches if isinstance(p, FancyArrowPatch)]
    labels = [t for t in ax.texts if t not in nodes]
    assert len(arrows) == len(labels) >= 1  # one weight label per edge
    node_xy = np.array([t.xy for t in nodes])
    for t in labels:  # no weight label on a node
        assert np.linalg.norm(node_xy - np.asarray(t.xy), axis=1).min() > 1.0
    label_xy = np.array([t.xy for t in labels])
    gaps = np.linalg.norm(label_xy[:, None] - label_xy[None], axis=2) + np.eye(len(labels)) * 9
    assert gaps.min() > 0.5  # no two weights run together
    ax = scc.pl.cluster_graph(adata, "toy", "pca", show=False)  # no such embedding: circle
    assert ax.get_xlabel() == ""


# ---- 7. consensus_k writes what was asked for ------------------------------------------


def test_consensus_k_default_is_compact(pbmc, tmp_path):
    adata = pbmc.copy()
    before = {s: set(getattr(adata, s)) for s in ("obs", "obsm", "obsp", "uns")}
    scc.tl.consensus_k(adata, max_k=6, reps=10, method="kmeans")
    added = {s: set(getattr(adata, s)) - before[s] for s in before}
    best = adata.uns["consensus_k"]["best_k"]
    key = f"consensus_k_k{best}"
    assert added["obs"] == {key, f"{key}_confidence", f"{key}_entropy"}
    assert added["obsm"] == {"consensus_k_labels", f"{key}_membership", f"{key}_item_consensus"}
    assert added["obsp"] == set()
    assert added["uns"] == {"consensus_k", key}
    table = adata.obsm["consensus_k_labels"]
    assert table.columns.tolist() == ["k2", "k3", "k4", "k5", "k6"]
    np.testing.assert_array_equal(table[f"k{best}"], adata.obs[key])
    plain, grown = tmp_path / "plain.h5ad", tmp_path / "grown.h5ad"
    pbmc.write_h5ad(plain)
    adata.write_h5ad(grown)
    assert grown.stat().st_size < plain.stat().st_size + 200_000  # was +13.5 MB


def test_consensus_k_keeps_more_when_asked(blobs_adata):
    out = scc.tl.consensus_k(blobs_adata, max_k=4, reps=5, keep_k=[2, 4], copy=True)
    assert {"consensus_k_k2", "consensus_k_k4"} <= set(out.obs)
    assert "consensus_k_k3" not in out.obs and not out.obsp
    assert list(out.uns["consensus_k"]["keys"]) == ["consensus_k_k2", "consensus_k_k4"]
    out = scc.tl.consensus_k(
        blobs_adata, max_k=3, reps=5, keep_k="all", store_matrices=True, copy=True
    )
    assert set(out.obsp) == {"consensus_k_k2_consensus", "consensus_k_k3_consensus"}
    with pytest.raises(ValueError, match="keep_k"):
        scc.tl.consensus_k(blobs_adata, max_k=3, reps=5, keep_k=[5])


def test_a_view_is_made_actual_once_with_one_warning():
    """A user trial: tl.pcc on a view raised five ImplicitModificationWarnings (one per
    slot written); scanpy's functions say it once."""
    import warnings

    from anndata import ImplicitModificationWarning

    adata = scc.datasets.iris()
    scc.tl.ensemble(adata, n_partitions=20, random_state=0, progress=False)
    view = adata[:100]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        scc.tl.pcc(view, n_clusters=3, random_state=0, progress=False)
    said = [w for w in caught if issubclass(w.category, ImplicitModificationWarning)]
    assert len(said) == 1 and not view.is_view
    assert {"pcc", "pcc_confidence"} <= set(view.obs) and "pcc" not in adata.obs
