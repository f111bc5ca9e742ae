"""Plots render (image written, non-empty) and the report writes its figures and summary."""

from __future__ import annotations

import matplotlib
import matplotlib.legend

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from matplotlib.axes import Axes
from PIL import Image

import scconsensus as scc
from scconsensus._report import write_report


@pytest.fixture(scope="module")
def adata():
    """A small PBMC subset with an ensemble, a consensus-k record and UMAP."""
    a = scc.datasets.pbmc68k_reduced()[::4].copy()  # 175 cells
    scc.tl.ensemble(a, 12, ["kmeans"], k=(3, 8))
    scc.tl.consensus_k(a, max_k=5, reps=10, method="kmeans", keep_k="all", store_matrices=True)
    return a


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def _check_png(path):
    assert path.exists() and path.stat().st_size > 2000
    img = np.asarray(Image.open(path).convert("L"), dtype=float)
    assert img.shape[0] > 100 and img.shape[1] > 100
    assert img.std() > 5  # not a blank canvas


def test_heatmap_from_ensemble_with_annotations(adata, tmp_path):
    path = tmp_path / "heat.png"
    ax = scc.pl.consensus_heatmap(
        adata, "scc_ensemble", "consensus_k_k4", annotations=["truth", "n_genes"], save=path
    )
    assert isinstance(ax, Axes)
    _check_png(path)
    # one annotation bar per column plus the heatmap and colour bar
    assert len(ax.figure.axes) == 5


def test_heatmap_bars_share_no_colour(adata):
    """Issue 27, item 10: a colour means one category of one bar (all bars reused tab10)."""
    a = adata.copy()
    a.obs["batch"] = pd.Categorical(np.arange(a.n_obs) % 3).astype(str)
    a.obs["phase"] = pd.Categorical(np.where(np.arange(a.n_obs) % 2, "G1", "S"))
    a.uns["phase_colors"] = ["#1f77b4", "#ff7f0e"]  # Scanpy's first two: the labels' too
    ax = scc.pl.consensus_heatmap(
        a, "scc_ensemble", "consensus_k_k4", annotations=["batch", "phase"], show=False
    )
    colours = {}
    for bar in ax.figure.axes:
        labels = [t.get_text() for t in bar.get_yticklabels()]
        if bar.images and labels and labels[0] in ("consensus_k_k4", "batch", "phase"):
            rgba = bar.images[0].get_array()[0]
            colours[labels[0]] = {tuple(np.round(c, 4)) for c in rgba}
    assert set(colours) == {"consensus_k_k4", "batch", "phase"}
    assert len(colours["batch"]) == 3 and len(colours["phase"]) == 2
    for one, other in [
        ("consensus_k_k4", "batch"),
        ("consensus_k_k4", "phase"),
        ("batch", "phase"),
    ]:
        assert not colours[one] & colours[other], (one, other)
    # the labels keep the colours the other plots give them
    first = scc.pl._utils.category_colors(a, "consensus_k_k4")
    from matplotlib.colors import to_rgba

    assert {tuple(np.round(to_rgba(c), 4)) for c in first.values()} >= colours["consensus_k_k4"]


def test_heatmap_from_stored_consensus_matrix_and_subsample(adata, tmp_path):
    path = tmp_path / "heat_k.png"
    scc.pl.consensus_heatmap(adata, "consensus_k_k3", max_items=60, save=path)
    _check_png(path)
    image = plt.gcf().axes[0].images[0].get_array()
    assert image.shape[0] <= 62  # the stratified subset, not all 175 items


def test_heatmap_order_groups_labels(adata):
    ax = scc.pl.consensus_heatmap(adata, "consensus_k_k3", legend=False, show=False)
    M = np.asarray(ax.images[0].get_array())
    assert M.shape == (adata.n_obs, adata.n_obs)
    assert np.trace(M) == pytest.approx(adata.n_obs)
    # rows are grouped by label ("0", "1", "2" in turn): the consensus is high inside the
    # diagonal blocks and low outside them
    sizes = np.bincount(adata.obs["consensus_k_k3"].cat.codes.to_numpy())
    block = np.zeros_like(M, dtype=bool)
    start = 0
    for size in sizes:
        block[start : start + size, start : start + size] = True
        start += size
    assert M[block].mean() > 0.6 > 0.3 > M[~block].mean()


def test_heatmap_missing_key_is_clear(adata):
    with pytest.raises(ValueError, match="No consensus matrix"):
        scc.pl.consensus_heatmap(adata, "nope")
    with pytest.raises(ValueError, match="groupby"):
        scc.pl.consensus_heatmap(adata, "scc_ensemble", "nope")


def test_membership_bars(adata, tmp_path):
    path = tmp_path / "memb.png"
    ax = scc.pl.membership(adata, "consensus_k_k4", "truth", save=path)
    _check_png(path)
    steps = [p for p in ax.patches if p.__class__.__name__ == "StepPatch"]
    assert len(steps) == 4
    top, _, _ = steps[-1].get_data()
    np.testing.assert_allclose(top, 1.0)  # stacked memberships reach one for every item
    with pytest.raises(ValueError, match="membership"):
        scc.pl.membership(adata, "missing")


def test_membership_bars_sort_by_the_stored_confidence_and_put_unlabelled_last():
    """Issue 24: sorted by the own-cluster membership while the CLI said "by confidence"
    (for PCC and PLA the two differ); code -1 indexed the last column."""
    import anndata as ad

    Y = np.array([[0.9, 0.1], [0.6, 0.4], [0.2, 0.8], [0.3, 0.7], [0.5, 0.5], [0.95, 0.05]])
    a = ad.AnnData(np.zeros((6, 1)))
    a.obsm["c_membership"] = Y
    a.obs["c"] = pd.Categorical.from_codes([0, 0, 1, 1, -1, 0], categories=["0", "1"])
    a.obs["c_confidence"] = [0.2, 0.7, 0.9, 0.4, np.nan, np.nan]
    ax = scc.pl.membership(a, "c", show=False)
    top, _, _ = next(p for p in ax.patches if p.__class__.__name__ == "StepPatch").get_data()
    # cluster 0 by stored confidence (NaN last), then cluster 1, then the unlabelled item
    np.testing.assert_allclose(top, Y[[1, 0, 5, 2, 3, 4], 0])
    del a.obs["c_confidence"]  # no column: the membership in the item's own cluster
    ax = scc.pl.membership(a, "c", show=False)
    top, _, _ = next(p for p in ax.patches if p.__class__.__name__ == "StepPatch").get_data()
    np.testing.assert_allclose(top, Y[[5, 0, 1, 2, 3, 4], 0])
    plt.close("all")


def test_membership_columns_that_label_no_item_are_grey_and_named_so():
    """A user trial: the sixth column of a K = 6 fit (mass, no label) took cluster 0's
    colour, and its legend entry read as a category of .obs[key]."""
    import anndata as ad

    Y = np.array([[0.7, 0.1, 0.2], [0.1, 0.8, 0.1], [0.6, 0.1, 0.3]])
    a = ad.AnnData(np.zeros((3, 1)))
    a.obsm["c_membership"] = Y
    a.obs["c"] = pd.Categorical.from_codes([0, 1, 0], categories=["0", "1"])
    ax = scc.pl.membership(a, "c", show=False)
    steps = [p for p in ax.patches if p.__class__.__name__ == "StepPatch"]
    labels = [p.get_label() for p in steps]
    assert labels == ["0", "1", "2 (labels no item)"]
    first, last = steps[0].get_facecolor(), steps[2].get_facecolor()
    assert first != last and last[0] == last[1] == last[2]  # a grey
    # a subset drops category "0": column 1 keeps its label's colour, columns 0 and 2
    # (no item left) are grey, and items rank by their own column (a review)
    sub = a[[1]].copy()
    assert list(sub.obs["c"].cat.categories) == ["1"]
    ax = scc.pl.membership(sub, "c", show=False)
    steps = [p for p in ax.patches if p.__class__.__name__ == "StepPatch"]
    assert [p.get_label() for p in steps] == ["0 (labels no item)", "1", "2 (labels no item)"]
    own, grey = steps[1].get_facecolor(), steps[0].get_facecolor()
    assert len(set(own[:3])) > 1 and grey[0] == grey[1] == grey[2]
    plt.close("all")


@pytest.mark.parametrize("dtype", ["Float64", "category"])
def test_membership_bars_read_a_confidence_of_an_extension_dtype(dtype):
    """np.issubdtype raised TypeError on pandas' extension dtypes: a nullable Float64
    confidence (with pd.NA) sorts as the float column, a categorical one is not a number."""
    import anndata as ad

    Y = np.array([[0.9, 0.1], [0.6, 0.4], [0.2, 0.8], [0.3, 0.7], [0.5, 0.5], [0.95, 0.05]])
    a = ad.AnnData(np.zeros((6, 1)))
    a.obsm["c_membership"] = Y
    a.obs["c"] = pd.Categorical.from_codes([0, 0, 1, 1, -1, 0], categories=["0", "1"])
    values = [0.2, 0.7, 0.9, 0.4, pd.NA, pd.NA]
    a.obs["c_confidence"] = pd.array(values, dtype="Float64")
    if dtype == "category":
        a.obs["c_confidence"] = a.obs["c_confidence"].astype("category")
    ax = scc.pl.membership(a, "c", show=False)
    top, _, _ = next(p for p in ax.patches if p.__class__.__name__ == "StepPatch").get_data()
    # Float64: as the float column (NaN last); category: by the membership, as with none
    order = [1, 0, 5, 2, 3, 4] if dtype == "Float64" else [5, 0, 1, 2, 3, 4]
    np.testing.assert_allclose(top, Y[order, 0])


@pytest.mark.parametrize("fn", ["consensus_cdf", "delta_area", "pac"])
def test_consensus_k_curves(adata, tmp_path, fn):
    path = tmp_path / f"{fn}.png"
    ax = getattr(scc.pl, fn)(adata, "consensus_k", save=path)
    _check_png(path)
    assert len(ax.lines) >= (4 if fn == "consensus_cdf" else 1)


def test_curves_overlay_two_sources(adata, tmp_path):
    # a second record in the same layout (as scconsensus.r.consensus_cluster_plus writes)
    rec = dict(adata.uns["consensus_k"])
    rec["params"] = {**rec["params"], "cluster_alg": "hc"}
    adata.uns["ccp_like"] = {**rec, "method": "consensus_cluster_plus"}
    ax = scc.pl.delta_area(adata, ["consensus_k", "ccp_like"], save=tmp_path / "both.png")
    assert len(ax.lines) == 2
    assert "ConsensusClusterPlus" in ax.get_legend().get_texts()[1].get_text()
    ax = scc.pl.consensus_cdf(adata, ["consensus_k", "ccp_like"])
    assert len(ax.lines) == 8
    del adata.uns["ccp_like"]
    with pytest.raises(ValueError, match="consensus_k"):
        scc.pl.consensus_cdf(adata, "scc_ensemble")


def test_confidence_on_umap(adata, tmp_path):
    path = tmp_path / "conf.png"
    axes = scc.pl.confidence(adata, "consensus_k_k4", save=path)
    assert len(axes) == 3
    _check_png(path)
    # the docstring passes cmap on to sc.pl.embedding (a user trial: scanpy refused both
    # cmap and the color_map set here)
    axes = scc.pl.confidence(adata, "consensus_k_k4", values=["confidence"], cmap="magma")
    assert axes[0].collections[0].get_cmap().name == "magma"
    plt.close("all")
    with pytest.raises(ValueError, match="embedding"):
        scc.pl.confidence(adata, "consensus_k_k4", basis="tsne")


def test_cluster_graph_uses_stored_relationships(adata, tmp_path):
    path = tmp_path / "graph.png"
    k = adata.obsm["consensus_k_k4_membership"].shape[1]
    m = np.full((k, k), 0.01)
    m[0, 1] = 0.9  # a single strong edge
    np.fill_diagonal(m, 0.5)
    adata.uns["consensus_k_k4"]["cluster_relationships"] = m
    ax = scc.pl.cluster_graph(adata, "consensus_k_k4", save=path)
    _check_png(path)
    arrows = [p for p in ax.patches if p.__class__.__name__ == "FancyArrowPatch"]
    assert len(arrows) == 1
    assert any(t.get_text() == "0.90" for t in ax.texts)
    del adata.uns["consensus_k_k4"]["cluster_relationships"]
    ax = scc.pl.cluster_graph(adata, "consensus_k_k4", basis=None, min_weight=0.0)
    arrows = [p for p in ax.patches if p.__class__.__name__ == "FancyArrowPatch"]
    assert len(arrows) == k * (k - 1)


def test_cluster_graph_threshold_sets_the_edges_not_only_the_nodes(adata):
    """A docs audit: with m_ij stored (PCC), threshold=0.4 drew the fit's edges; a threshold
    given now computes m_ij from the memberships at it, as core.cluster_relationships."""
    from scconsensus.core import cluster_relationships

    Y = np.asarray(adata.obsm["consensus_k_k4_membership"])
    adata.uns["consensus_k_k4"]["cluster_relationships"] = np.full((Y.shape[1],) * 2, 0.5)

    def weights(ax):
        return sorted(float(t.get_text()) for t in ax.texts if "." in t.get_text())

    stored = weights(scc.pl.cluster_graph(adata, "consensus_k_k4", basis=None, min_weight=0))
    assert set(stored) == {0.5}
    m = cluster_relationships(Y, 0.4)
    ax = scc.pl.cluster_graph(adata, "consensus_k_k4", basis=None, threshold=0.4, min_weight=0)
    off = m[~np.eye(len(m), dtype=bool)]
    assert weights(ax) == sorted(float(f"{w:.2f}") for w in off)
    plt.close("all")
    # a verification trial: 1.5 or NaN drew an empty graph, "0.1" a numpy traceback
    for bad, said in ((1.5, r"=1.5 must lie in \[0, 1\]"), (1.0, " must be below 1"),
                      (np.nan, " must be finite"), ("0.1", " must be a number")):  # fmt: skip
        with pytest.raises(ValueError, match=f"threshold{said}"):
            scc.pl.cluster_graph(adata, "consensus_k_k4", threshold=bad, show=False)


def test_plot_into_given_axes(adata):
    _fig, axs = plt.subplots(1, 2)
    ax = scc.pl.pac(adata, ax=axs[0])
    assert ax is axs[0]
    ax = scc.pl.membership(adata, "consensus_k_k2", ax=axs[1])
    assert ax is axs[1]


@pytest.mark.slow
def test_report_writes_figures_and_summary(adata, tmp_path):
    a = adata.copy()
    a.obs["broken"] = pd.Categorical(["0"] * a.n_obs)  # a key without memberships
    path = write_report(
        a, tmp_path / "rep", ["consensus_k_k4", "consensus_k", "broken", "absent"], progress=False
    )
    text = path.read_text()
    pngs = sorted(p.name for p in (tmp_path / "rep").glob("*.png"))
    for name in (
        "consensus_k_k4_membership.png",
        "consensus_k_k4_cluster_graph.png",
        "consensus_k_k4_confidence_umap.png",
        "consensus_k_k4_heatmap.png",
        "consensus_k_cdf.png",
        "consensus_k_delta_area.png",
        "consensus_k_pac.png",
    ):
        assert name in pngs
        _check_png(tmp_path / "rep" / name)
        assert f"]({name})" in text
    assert "ARI vs truth" in text
    assert "lowest PAC at k =" in text
    assert "`absent`" in text


def test_report_heatmap_draws_what_the_result_fitted_and_says_so():
    """A user trial: the report drew all 100 partitions where PCC fitted 11, and captioned
    DPP's figure as its consensus though DPP used no ensemble."""
    import anndata as ad

    from scconsensus._report import _heatmap_source

    a = ad.AnnData(np.zeros((4, 1)))
    a.obsm["scc_ensemble"] = np.zeros((4, 3), dtype=np.int32)
    a.uns["pcc"] = {"params": {"ensemble_key": "scc_ensemble"}, "partitions_used": [0, 2]}
    a.uns["dpp"] = {"params": {"n_runs": 5}, "run_sizes": [2, 2]}
    source, caption = _heatmap_source(a, "pcc", "scc_ensemble")
    assert source == "pcc" and "the 2 partitions `pcc` fitted" in caption
    source, caption = _heatmap_source(a, "dpp", "scc_ensemble")
    assert source == "scc_ensemble" and "which `dpp` did not use" in caption
    with pytest.raises(ValueError, match=r"tl\.dpp, which keeps no consensus matrix"):
        scc.pl.consensus_heatmap(a, "dpp")
    a.obsm["other"] = a.obsm["scc_ensemble"]
    del a.obsm["scc_ensemble"]
    assert _heatmap_source(a, "dpp", "scc_ensemble") == (None, "")
    # PCC's own ensemble gone: no figure, not another ensemble said to be unused (a review)
    assert _heatmap_source(a, "pcc", "other") == (None, "")


@pytest.mark.slow
def test_report_key_containing_confidence(adata, tmp_path):
    """The figure type comes from the figure's record, not from a search of its file name."""
    a = adata.copy()
    key = "low_confidence_run"
    src = "consensus_k_k4"
    for store in (a.obs, a.obsm, a.obsp, a.uns):
        for name in [n for n in store if n == src or n.startswith(f"{src}_")]:
            store[key + name[len(src) :]] = store[name]
    path = write_report(a, tmp_path / "rep", [key], progress=False)
    text = path.read_text()
    assert "Figures not drawn" not in text
    for name in (
        f"{key}_membership.png",
        f"{key}_cluster_graph.png",
        f"{key}_confidence_umap.png",
        f"{key}_heatmap.png",
    ):
        _check_png(tmp_path / "rep" / name)
        assert f"]({name})" in text


@pytest.mark.parametrize("k", [10, 20])
def test_cluster_graph_nodes_and_weights_do_not_overlap(k):
    """Issue 27, item 10: at K = 10 and 20 clusters close together in the embedding, no two
    node discs overlap and no weight label covers a node or another label (display space)."""
    import anndata as ad
    from matplotlib.collections import PathCollection

    rng = np.random.default_rng(k)
    centres = np.column_stack([np.arange(k) % 5, np.arange(k) // 5]) * 0.6  # close medians
    truth = np.repeat(np.arange(k), 20)
    emb = centres[truth] + rng.normal(scale=0.15, size=(truth.size, 2))
    Y = np.full((truth.size, k), 0.1 / k)
    Y[np.arange(truth.size), truth] += 0.6
    Y[np.arange(truth.size), (truth + 1) % k] += rng.uniform(0.1, 0.3, truth.size)  # overlaps
    Y /= Y.sum(axis=1, keepdims=True)
    adata = ad.AnnData(np.zeros((truth.size, 1)), obsm={"X_umap": emb, "toy_membership": Y})
    adata.obs["toy"] = pd.Categorical(Y.argmax(1).astype(str), [str(c) for c in range(k)])
    ax = scc.pl.cluster_graph(adata, "toy", show=False)
    fig = ax.figure
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    names = {str(c) for c in range(k)}
    nodes = [t for t in ax.texts if t.get_text() in names]
    labels = [t for t in ax.texts if t.get_text() not in names]
    assert len(nodes) == k and len(labels) >= k
    discs = [c for c in ax.collections if isinstance(c, PathCollection)][1:]  # cells first
    centre = np.array([ax.transData.transform(t.xy) for t in nodes])
    radius = np.array([np.sqrt(d.get_sizes()[0]) / 2 for d in discs]) * fig.dpi / 72
    gaps = np.linalg.norm(centre[:, None] - centre[None], axis=2) - radius[:, None] - radius
    assert (gaps + np.eye(k) * 1e9).min() >= 0  # no two discs overlap
    boxes = [t.get_bbox_patch().get_window_extent(renderer) for t in labels]
    for box in boxes:  # no label on a node
        nearest = np.clip(centre, [box.x0, box.y0], [box.x1, box.y1])
        assert (np.linalg.norm(nearest - centre, axis=1) >= radius).all()
    for i, a in enumerate(boxes):  # no two labels overlap
        for b in boxes[i + 1 :]:
            assert not a.overlaps(b)


def test_heatmap_legends_stay_beside_it_in_a_grid(adata):
    """A user trial drew the heatmap as one panel of two (``ax=``): its legends sat at the
    figure's right edge, clipped; as the heatmap's own artists, the panel drawn after it hid
    them. They are figure legends (drawn over every panel) anchored right of its colour bar
    now, the top bar's first, on any canvas."""
    from matplotlib.figure import Figure

    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 5))
    ax = scc.pl.consensus_heatmap(
        adata, "consensus_k_k3", annotations=["consensus_k_k2"], ax=left, show=False
    )
    legends = fig.legends
    assert [leg.get_title().get_text() for leg in legends] == ["consensus_k_k3", "consensus_k_k2"]
    renderer = fig.canvas.get_renderer()
    for leg in legends:
        box = leg.get_window_extent(renderer)
        assert box.x0 >= ax.get_window_extent(renderer).x1  # right of the heatmap
        assert box.x0 < right.get_window_extent(renderer).x1  # not at the figure's edge
    plt.close(fig)
    # a canvas without get_renderer (a bare Figure, pdf, svg) draws them too
    bare = Figure()
    scc.pl.consensus_heatmap(adata, "consensus_k_k3", ax=bare.add_subplot(), show=False)
    assert len(bare.legends) == 1


def test_a_save_string_with_a_folder_is_the_file(adata, tmp_path, monkeypatch):
    """A user trial: save="/tmp/x/fig.png" wrote figures/k_selection_pcc/tmp/x/fig.png
    (a suffix); a string with a folder in it is now the file, as a Path is."""
    monkeypatch.chdir(tmp_path)
    target = tmp_path / "run1" / "membership.png"
    scc.pl.membership(adata, "consensus_k_k2", save=str(target), show=False)
    _check_png(target)
    assert not (tmp_path / "figures").exists()
    # without a suffix, scanpy's format (a verification trial: "Format 'tmp-36d9...'")
    import scanpy

    before, scanpy.settings.file_format_figs = scanpy.settings.file_format_figs, "png"
    try:
        scc.pl.membership(adata, "consensus_k_k2", save="run2/membership", show=False)
    finally:
        scanpy.settings.file_format_figs = before
    _check_png(tmp_path / "run2" / "membership.png")
    # a dot that is no format's ("run.1") is part of the name (a review)
    from scconsensus.pl._utils import figure_path

    assert figure_path("m", "out/run.1").name == f"run.1.{scanpy.settings.file_format_figs}"
    plt.close("all")


def _inside(box, outer, tol=1.0) -> bool:
    return (
        box.x0 >= outer.x0 - tol
        and box.y0 >= outer.y0 - tol
        and box.x1 <= outer.x1 + tol
        and box.y1 <= outer.y1 + tol
    )


def test_a_figure_saved_with_savefig_keeps_its_labels_and_bins_whole(adata):
    """A trial saved ``ax.figure.savefig(...)`` itself: the K axis label was cut off (only
    ``save=`` used a tight box), and the calibration legend lay over a bin at accuracy 1
    while a bin at confidence 1 was drawn half outside the axes."""
    a = adata.copy()
    scc.tl.pcc(a, random_state=0)
    a.obs["truth"] = a.obs["bulk_labels"]
    for ax in (
        scc.pl.k_selection(a, "pcc", show=False),
        scc.pl.calibration(a, "pcc", truth="truth", show=False),
    ):
        fig = ax.figure
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        # everything drawn: labels, ticks, title, legends (the figure's too)
        assert _inside(ax.get_tightbbox(renderer), fig.bbox)
        for legend in fig.legends:
            assert _inside(legend.get_window_extent(renderer), fig.bbox)
    legends = [*ax.findobj(matplotlib.legend.Legend), *fig.legends]
    assert len(legends) == 2
    for legend in legends:  # outside the axes, where no bin can lie under them
        assert not legend.get_window_extent(renderer).overlaps(ax.bbox)
    # every marker whole inside the axes, the largest one at (1, 1) too (a review: the
    # collection's own extent is a null box here, which any check passes)
    a.obs["pcc_confidence"], a.obs["truth"] = 1.0, a.obs["pcc"]
    ax = scc.pl.calibration(a, "pcc", truth="truth", show=False)
    ax.figure.canvas.draw()
    box = ax.bbox
    for dots in ax.collections:
        centres = ax.transData.transform(dots.get_offsets())
        radius = np.sqrt(dots.get_sizes()) * ax.figure.dpi / 72 / 2
        assert (centres[:, 0] - radius >= box.x0).all() and (centres[:, 0] + radius <= box.x1).all()
        assert (centres[:, 1] - radius >= box.y0).all() and (centres[:, 1] + radius <= box.y1).all()
    # in axes the user gave, beside others, the legends stay inside them
    _, (left, _right) = plt.subplots(1, 2, figsize=(8, 4))
    scc.pl.calibration(a, "pcc", truth="truth", ax=left, show=False)
    left.figure.canvas.draw()
    for legend in left.findobj(matplotlib.legend.Legend):
        assert _inside(legend.get_window_extent(left.figure.canvas.get_renderer()), left.bbox)
