"""tl.pla / tl.pla_transfer: shared layout, h5ad round trip, copy semantics, transfer."""

from __future__ import annotations

import re
import warnings
from functools import partial

import anndata as ad
import numpy as np
import pandas as pd
import pytest
from _helpers import knn_dtypes

import scconsensus as scc
from scconsensus.core.pla import LAMBDA_GRID
from scconsensus.metrics import adjusted_rand_index, h_criterion


def blob_adata(n_per=(40, 30, 20), seed=0, n_partitions=15):
    rng = np.random.default_rng(seed)
    centers = np.array([[0.0, 0.0], [9.0, 0.0], [0.0, 9.0]])
    truth = np.repeat(np.arange(3), n_per)
    X = centers[truth] + rng.normal(size=(truth.size, 2))
    adata = ad.AnnData(X.astype(np.float32))
    adata.obs["truth"] = pd.Categorical(truth.astype(str))
    scc.tl.ensemble(
        adata, n_partitions=n_partitions, k=(2, 5), use_rep="X", subsample=0.8, random_state=seed
    )
    return adata


@pytest.fixture(scope="module")
def adata():
    return blob_adata()


def test_layout_and_roundtrip(adata, tmp_path):
    a = adata.copy()
    before = set(a.obs.columns) | set(a.obsm) | set(a.uns)
    assert scc.tl.pla(a, n_clusters=3, weighted=True, random_state=0) is None
    after = set(a.obs.columns) | set(a.obsm) | set(a.uns)
    assert after - before == {"pla", "pla_membership", "pla_confidence", "pla_entropy"}
    assert isinstance(a.obs["pla"].dtype, pd.CategoricalDtype)
    assert list(a.obs["pla"].cat.categories) == ["0", "1", "2"]
    M = a.obsm["pla_membership"]
    np.testing.assert_allclose(M.sum(1), 1.0)
    support = scc.core.ensemble_confidence(a.obsm["scc_ensemble"], a.obs["pla"].cat.codes)
    np.testing.assert_allclose(a.obs["pla_confidence"], support)
    assert h_criterion(a.obs["truth"], a.obs["pla"]) == 1.0
    rec = a.uns["pla"]
    for key in (
        "log_likelihood",
        "log_likelihood_trace",
        "weights",
        "lam",
        "cv_scores",
        "objective_trace",
        "cluster_priors",
        "fit_index",
    ):
        assert key in rec, key
    assert rec["weights"].sum() == pytest.approx(1.0)
    assert rec["params"]["weighted"] is True
    assert np.all(np.diff(rec["log_likelihood_trace"]) >= -1e-9 * abs(rec["log_likelihood"]))
    path = tmp_path / "pla.h5ad"
    a.write_h5ad(path)
    b = ad.read_h5ad(path)
    np.testing.assert_allclose(b.obsm["pla_membership"], M)
    assert (b.obs["pla"] == a.obs["pla"]).all()
    np.testing.assert_allclose(b.uns["pla"]["weights"], rec["weights"])
    assert b.uns["pla"]["params"]["ensemble_key"] == "scc_ensemble"
    pd.testing.assert_frame_equal(
        b.uns["pla"]["cv_scores"].reset_index(drop=True),
        rec["cv_scores"].reset_index(drop=True),
        check_dtype=False,
    )


def test_copy_leaves_input_alone(adata):
    a = adata.copy()
    out = scc.tl.pla(a, n_clusters=3, key_added="c", copy=True)
    assert "c" not in a.obs and "c" not in a.uns and "c_membership" not in a.obsm
    assert out is not None and "c" in out.obs


def test_sparse_mode_and_fit_subset(adata):
    a = adata.copy()
    scc.tl.pla(a, n_clusters=3, mode="sparse", use_rep="X", n_random=10, fit_fraction=0.5)
    assert a.uns["pla"]["params"]["mode"] == "sparse"
    assert a.uns["pla"]["fit_index"].size == int(np.ceil(0.5 * a.n_obs))
    assert h_criterion(a.obs["truth"], a.obs["pla"]) == 1.0


def test_missing_ensemble_is_a_clear_error():
    a = ad.AnnData(np.zeros((10, 2), dtype=np.float32))
    with pytest.raises(ValueError, match=r"tl\.ensemble"):
        scc.tl.pla(a, n_clusters=2)


def test_transfer_by_nearest_neighbour():
    full = blob_adata(seed=1)
    ref = full[::2].copy()
    new = full[1::2].copy()
    del new.obsm["scc_ensemble"]
    # k >= 3: partitions that merge two blobs would pull eq. 26's posteriors toward the
    # bigger one (the fold-in starts there)
    scc.tl.ensemble(ref, n_partitions=15, k=(3, 5), use_rep="X", random_state=1)
    scc.tl.pla(ref, n_clusters=3, random_state=0)
    assert scc.tl.pla_transfer(new, ref, use_rep="X") is None
    assert list(new.obs["pla"].cat.categories) == list(ref.obs["pla"].cat.categories)
    np.testing.assert_allclose(new.obsm["pla_membership"].sum(1), 1.0)
    assert h_criterion(new.obs["truth"], new.obs["pla"]) == 1.0
    # cluster "c" means the same thing in both: each truth class gets one shared name
    for t in full.obs["truth"].cat.categories:
        names_ref = set(ref.obs["pla"][ref.obs["truth"] == t])
        names_new = set(new.obs["pla"][new.obs["truth"] == t])
        assert names_ref == names_new and len(names_ref) == 1


def test_plots_of_a_transferred_result_point_to_the_reference():
    """A user trial: pl.k_selection on a transferred result said to run tl.pla first, and
    pl.consensus_heatmap listed every layout it knows; both live in the reference."""
    full = blob_adata(seed=1)
    ref, new = full[::2].copy(), full[1::2].copy()
    del new.obsm["scc_ensemble"]
    scc.tl.pla(ref, random_state=0)
    scc.tl.pla_transfer(new, ref, use_rep="X")
    for plot in ("k_selection", "consensus_heatmap"):
        with pytest.raises(
            ValueError, match=rf"transferred by tl.pla_transfer.*scc.pl.{plot}\(adata_ref, 'pla'\)"
        ):
            getattr(scc.pl, plot)(new, "pla", show=False)
    # and only there: the layouts it would draw elsewhere are not this AnnData's to offer
    with pytest.raises(ValueError) as err:
        scc.pl.consensus_heatmap(new, "pla", show=False)
    assert "Expected" not in str(err.value) and "tl.coassociation" not in str(err.value)


def test_transferred_cells_get_the_references_kind_of_confidence():
    """Issue 24: the new cells' confidence was their largest membership (median 0.98 on
    pbmc68k) while the reference's is the ensemble's; now both are the ensemble's."""
    full = blob_adata(seed=2, n_partitions=20)
    ref, new = full[::2].copy(), full[1::2].copy()
    scc.tl.pla(ref, n_clusters=3, random_state=0)
    scc.tl.pla_transfer(new, ref, use_rep="X")
    ens = ref.obsm["scc_ensemble"]
    placed = scc.core.predict_ensemble_labels(ref.X, ens, new.X, n_neighbors=15)  # all
    want = scc.core.transferred_confidence(
        ens, ref.obs["pla"].cat.codes, placed, new.obs["pla"].cat.codes
    )
    np.testing.assert_allclose(new.obs["pla_confidence"], want)
    top = new.obsm["pla_membership"].max(axis=1)
    assert not np.allclose(new.obs["pla_confidence"], top)
    assert "transferred_confidence" in new.uns["pla"]["confidence"]
    # a reference cell transferred onto its own reference, in its own partitions: its
    # confidence is the reference's
    same = ref[:20].copy()
    scc.tl.pla_transfer(same, ref, new_ensemble_key="scc_ensemble", key_added="again")
    agree = same.obs["again"].to_numpy() == ref.obs["pla"].to_numpy()[:20]
    assert agree.all()
    np.testing.assert_allclose(same.obs["again_confidence"], ref.obs["pla_confidence"][:20])


def test_transfer_with_shared_ensemble_and_weights(adata):
    ref = adata.copy()
    scc.tl.pla(ref, n_clusters=3, weighted=True, lam=1.0, random_state=0)
    new = adata[:25].copy()  # same cells, labels in the same partitions
    out = scc.tl.pla_transfer(new, ref, new_ensemble_key="scc_ensemble", copy=True)
    assert "pla" not in new.obs
    assert (out.obs["pla"].to_numpy() == ref.obs["pla"].to_numpy()[:25]).all()
    np.testing.assert_allclose(out.uns["pla"]["weights"], ref.uns["pla"]["weights"])


def test_transfer_errors(adata):
    ref = adata.copy()
    new = ad.AnnData(np.zeros((5, 3), dtype=np.float32))
    with pytest.raises(ValueError, match="no PLA result"):
        scc.tl.pla_transfer(new, ref)
    scc.tl.pla(ref, n_clusters=3)
    with pytest.raises(ValueError, match="columns"):
        scc.tl.pla_transfer(new, ref, use_rep="X")
    with pytest.raises(ValueError, match=r"not in adata\.obsm"):
        scc.tl.pla_transfer(new, ref, new_ensemble_key="nope")
    # the reference's X_pca is not paired with the new cells' X (a user trial: "30
    # columns in adata_ref and 1000 in adata_new", the old argument's name)
    with_pca = ref.copy()
    with_pca.obsm["X_pca"] = with_pca.X.copy()
    with_pca.uns["scc_ensemble"]["params"]["use_rep"] = "X_pca"
    with pytest.raises(ValueError, match=r"^X_pca is in adata_ref but not in adata: project"):
        scc.tl.pla_transfer(new, with_pca)
    # a use_rep the reference lacks is the reference's to say (a verification trial)
    with pytest.raises(ValueError, match=r"use_rep='X_umap' is not in adata_ref\.obsm"):
        scc.tl.pla_transfer(new, with_pca, use_rep="X_umap")
    del ref.obsm["scc_ensemble"]  # the error names the reference (a user trial)
    with pytest.raises(ValueError, match=r"adata_ref has no ensemble at adata_ref\.obsm"):
        scc.tl.pla_transfer(new, ref, use_rep="X")


@pytest.mark.parametrize("stored", [True, False])
def test_transfer_refuses_a_reference_cut_after_the_fit(adata, stored):
    """A reference subset after tl.pla has a stale fit_index: a clear error, not an
    IndexError (cut smaller than the fit) or other cells' posteriors; results stored
    before ``fitted_n_obs`` existed are caught by the index bound."""
    ref = adata.copy()
    scc.tl.pla(ref, n_clusters=3)
    if not stored:
        del ref.uns["pla"]["fitted_n_obs"]
    cut = ref[: ref.n_obs // 2].copy()
    new = ref[:5].copy()
    with pytest.raises(ValueError, match=r"subset after tl\.pla"):
        scc.tl.pla_transfer(new, cut, new_ensemble_key="scc_ensemble")
    scc.tl.pla_transfer(new, ref, new_ensemble_key="scc_ensemble")  # the whole one works


def test_cli_method_pla(tmp_path):
    from scconsensus.cli import main

    out = tmp_path / "iris_pla.h5ad"
    argv = [
        "run",
        "iris",
        "--method",
        "pla",
        "--out",
        str(out),
        "--no-figures",
        "--n-partitions",
        "15",
        "--k",
        "2,6",
        "--n-clusters",
        "3",
    ]
    assert main(argv) == 0
    b = ad.read_h5ad(out)
    assert b.obsm["pla_membership"].shape == (150, 3)
    assert h_criterion(b.obs["truth"], b.obs["pla"]) > 0.8


def test_tl_pla_is_pla_consensus_on_the_ensemble(adata):
    """The array core runs PLA whole, as tl.pla does: same memberships, same params record."""
    a = adata.copy()
    scc.tl.pla(a, n_clusters=3, weighted=True, lam=1.0, random_state=np.random.default_rng(1))
    out = scc.core.pla_consensus(
        a.obsm["scc_ensemble"],
        3,
        True,
        weighting=scc.core.pla.Weighting(lam=1.0),
        random_state=np.random.default_rng(1),
    )
    np.testing.assert_array_equal(a.obsm["pla_membership"], out.membership)
    np.testing.assert_array_equal(a.uns["pla"]["partitions_used"], out.plan.columns)
    record = {k: v for k, v in a.uns["pla"]["params"].items() if k in out.params}
    assert record.keys() == out.params.keys() and record["random_state"] == "custom"
    assert list(a.uns["pla"]["params"])[:3] == ["n_clusters", "weighted", "ensemble_key"]


UNUSED_LAM = (
    " has no effect with weighted=False: λ only regularises the partition weights of "
    "weighted PLA. Pass weighted=True to use it, or "
)


def _warns_once(message: str, call) -> None:
    """``call()`` gives the "has no effect" warning once, with exactly ``message``."""
    with pytest.warns(UserWarning, match=f"^{re.escape(message)}$") as record:
        call()
    assert sum("no effect with weighted=False" in str(w.message) for w in record) == 1


def test_unused_lam_warning_names_the_keyword_of_each_entry_point(adata):
    """Issue 24: tl.pla takes lam= flat, the core takes it inside weighting=Weighting(...);
    the warning names the form the user typed, once, and how to drop it."""
    labels = adata.obsm["scc_ensemble"]
    record = scc.core.pla.Weighting(lam=5)
    in_record = "lam=5 in weighting=Weighting(...)" + UNUSED_LAM + "leave lam (or weighting) out."
    a = adata.copy()
    _warns_once("lam=5" + UNUSED_LAM + "leave lam out.", partial(scc.tl.pla, a, 3, lam=5))
    assert a.uns["pla"]["params"]["lam"] == 5  # recorded as given
    _warns_once(in_record, partial(scc.core.pla, labels, 3, weighting=record, random_state=0))
    _warns_once(in_record, partial(scc.core.pla_consensus, labels, 3, weighting=record))


def test_unused_cross_validation_options_are_named_too(adata):
    """lam_grid, cv_folds and cv_score only choose λ: with weighted=False tl.pla said
    nothing of them. Each one given is named, with lam, in one warning; defaults are not."""
    why = "λ only regularises the partition weights of weighted PLA; lam_grid, cv_folds "
    why += "and cv_score only choose λ. Pass weighted=True to use "
    _warns_once(
        "cv_folds=5 has no effect with weighted=False: " + why + "it, or leave cv_folds out.",
        partial(scc.tl.pla, adata.copy(), 3, cv_folds=5),
    )
    _warns_once(
        "lam=5, lam_grid=[1.0, 2.0], cv_score='penalized' have no effect with weighted=False: "
        + why + "them, or leave them out.",
        partial(scc.tl.pla, adata.copy(), 3, lam=5, lam_grid=[1.0, 2.0], cv_score="penalized"),
    )  # fmt: skip
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*no effect", category=UserWarning)
        scc.tl.pla(adata.copy(), 3, lam_grid=list(LAMBDA_GRID), cv_folds=3, progress=False)
    with pytest.raises(ValueError, match="cv_folds"):  # still checked, after the warning
        with pytest.warns(UserWarning, match="cv_folds=1 has no effect"):
            scc.tl.pla(adata.copy(), 3, cv_folds=1)


def test_knn_pairs_read_float32_x_as_it_is(adata, monkeypatch):
    """PLA's sparse route searches the kNN pairs of float32 input in float32, as PCC's
    does (same pairs for the same data; no float64 copy of all of X, 400 MB at
    10^6 x 50); the user's matrix is left as it was."""
    a = adata.copy()
    before = a.X.copy()
    seen = knn_dtypes(monkeypatch)
    scc.tl.pla(a, n_clusters=3, mode="sparse", use_rep="X", random_state=0, progress=False)
    assert seen == [np.dtype(np.float32)]
    assert a.X.dtype == np.float32 and np.array_equal(a.X, before)
    assert adjusted_rand_index(a.obs["truth"], a.obs["pla"]) > 0.9


def _clear_groups(n_groups=20, n_per=100, seed=0):
    """Clear Gaussian groups in 50 dimensions (centres N(0, 3²), unit noise), in ``.X`` only."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=3.0, size=(n_groups, 50))
    truth = np.repeat(np.arange(n_groups), n_per)
    a = ad.AnnData((centres[truth] + rng.standard_normal((truth.size, 50))).astype(np.float32))
    a.obs["truth"] = pd.Categorical(truth.astype(str))
    scc.tl.ensemble(a, random_state=seed, progress=False)
    return a


def test_sparse_route_without_a_representation_draws_partners_from_the_ensemble():
    """Without a representation PLA's sparse route drew random pairs only, of which those
    with no co-association are dropped: a handful of pairs per item inside its own group,
    and 3-17 cells of a clear group labelled with its neighbour (ARI 0.91 on 20 clear
    groups of 150 cells; 0.90 at 10,000 cells, the default route there). Partners drawn
    from the ensemble, as PCC's ``pairs="auto"`` does, give each item its group's evidence.
    An ensemble without :func:`scconsensus.tl.ensemble`'s record has no representation."""
    a = _clear_groups()
    del a.uns["scc_ensemble"]
    assert "X_pca" not in a.obsm
    scc.tl.pla(a, n_clusters=20, mode="sparse", random_state=0, progress=False)
    assert a.uns["pla"]["pair_source"] == "ensemble"
    assert a.uns["pla"]["params"]["pairs"] == "auto"
    assert adjusted_rand_index(a.obs["truth"], a.obs["pla"]) > 0.99
    a.obsm["X_pca"] = a.X
    scc.tl.pla(a, n_clusters=20, mode="sparse", random_state=0, progress=False)
    assert a.uns["pla"]["pair_source"] == "knn"
    assert adjusted_rand_index(a.obs["truth"], a.obs["pla"]) > 0.99
    scc.tl.pla(a, n_clusters=20, mode="dense", random_state=0, progress=False)
    assert "pair_source" not in a.uns["pla"]


def test_pairs_is_checked_before_anything_is_written(adata):
    a = adata.copy()
    del a.uns["scc_ensemble"]  # no record of the ensemble's representation
    for bad, match in [("bogus", "pairs='bogus' is not supported"), ("knn", "needs a repr")]:
        with pytest.raises(ValueError, match=match):
            scc.tl.pla(a, n_clusters=3, mode="sparse", pairs=bad)
        assert "pla" not in a.uns
    scc.tl.pla(a, n_clusters=3, mode="sparse", pairs="ensemble", random_state=0)
    assert a.uns["pla"]["pair_source"] == "ensemble"
    assert h_criterion(a.obs["truth"], a.obs["pla"]) == 1.0


def test_max_iter_reached_is_a_convergence_warning():
    """As PCC's: the record said converged=False without a word."""
    from sklearn.exceptions import ConvergenceWarning

    adata = scc.datasets.iris()
    scc.tl.ensemble(adata, n_partitions=10, k=(3, 6), random_state=0, progress=False)
    with pytest.warns(ConvergenceWarning, match=r"PLA stopped at max_iter=1 EM iterations"):
        scc.tl.pla(adata, n_clusters=3, max_iter=1, random_state=0, progress=False)
    assert not adata.uns["pla"]["converged"]


def test_transfer_votes_in_the_matrix_the_reference_ensemble_clustered():
    """A verification trial: with the reference's ensemble built on X_umap, the vote ran
    on X (the new cells' default) without a word; it now runs where the partitions were
    drawn, and says so."""
    full = blob_adata(seed=3)
    full.obsm["X_umap"] = full.X * 10.0
    full.X = np.random.default_rng(0).normal(size=full.X.shape).astype(np.float32)  # noise
    del full.obsm["scc_ensemble"], full.obsm["scc_ensemble_run"], full.uns["scc_ensemble"]
    scc.tl.ensemble(full, n_partitions=20, k=3, use_rep="X_umap", random_state=0)
    ref, new = full[::2].copy(), full[1::2].copy()
    scc.tl.pla(ref, n_clusters=3, random_state=0)
    on_x = scc.tl.pla_transfer(new, ref, use_rep="X", copy=True)
    scc.tl.pla_transfer(new, ref)
    assert new.uns["pla"]["predictor_rep"] == "X_umap"
    assert h_criterion(new.obs["truth"], new.obs["pla"]) == 1.0
    assert h_criterion(new.obs["truth"], on_x.obs["pla"]) < 0.6  # the noise it read before


def test_transfer_reads_x_when_the_ensemble_did_though_a_pca_came_later():
    """A review: an ensemble built on X records no use_rep; a PCA computed after it made the
    transfer read X_pca, which the new cells lacked ("X_pca is in adata_ref but not in
    adata") although the partitions were drawn on X."""
    full = blob_adata(seed=4)
    del full.obsm["scc_ensemble"], full.obsm["scc_ensemble_run"], full.uns["scc_ensemble"]
    scc.tl.ensemble(full, n_partitions=15, k=(2, 5), random_state=4)  # on X, no use_rep
    assert full.uns["scc_ensemble"]["params"]["use_rep"] is None
    ref, new = full[::2].copy(), full[1::2].copy()
    scc.tl.pla(ref, n_clusters=3, random_state=0)
    ref.obsm["X_pca"] = ref.X[:, :1].copy()  # a later PCA
    scc.tl.pla_transfer(new, ref)
    assert new.uns["pla"]["predictor_rep"] == "X"


def test_transfer_names_labels_no_reference_partition_has():
    """Noticed in a trial: new cells labelled with ids none of the reference's partitions
    has were put down to "never sampled"."""
    a = scc.datasets.iris()
    scc.tl.ensemble(a, n_partitions=10, random_state=0)
    scc.tl.pla(a, n_clusters=3, random_state=0)
    new = scc.datasets.iris()[:20].copy()
    labels = a.obsm["scc_ensemble"][:20].copy()
    labels[:5] = 99
    new.obsm["given"] = labels
    with pytest.warns(RuntimeWarning, match="5 new item.*labelled with ids no fitted item has"):
        scc.tl.pla_transfer(new, a, new_ensemble_key="given")
    assert new.obs["pla"].isna().sum() == 5
