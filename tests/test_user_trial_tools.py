"""New-user trial defects in tl.pcc, core.pcc, tl.ensemble and copy=True, each pinned.

Every refused call must name the problem and the fix and leave the AnnData as it was.
"""

from __future__ import annotations

import warnings

import anndata as ad
import numpy as np
import pytest
from _helpers import fails_cleanly

import scconsensus as scc
from scconsensus.core import coassociation
from scconsensus.core.pcc import pcc_lowrank

GROUPS = np.repeat([[0, 0, 1], [1, 1, 0], [2, 2, 2]], 12, axis=0)


def _adata(labels=GROUPS) -> ad.AnnData:
    rng = np.random.default_rng(0)
    a = ad.AnnData(rng.normal(size=(labels.shape[0], 4)))
    a.obsm["scc_ensemble"] = np.ascontiguousarray(labels, dtype=np.int32)
    return a


_refused = fails_cleanly


# ---------------------------------------------------- 1: items in no partition


def test_pcc_warns_about_items_in_no_partition():
    labels = GROUPS.copy()
    labels[:5] = -1  # five items no partition sampled
    a = _adata(labels)
    with pytest.warns(RuntimeWarning, match=r"^5 item\(s\) are in no partition; they get unif"):
        scc.tl.pcc(a, n_clusters=3, n_init=1)
    # as documented: uniform rows and no hard label
    assert a.obs["pcc"].isna().sum() == 5 and a.obs["pcc"][5:].notna().all()
    k = a.obsm["pcc_membership"].shape[1]
    assert np.allclose(a.obsm["pcc_membership"][:5], 1.0 / k)


def test_pcc_says_nothing_when_every_item_is_sampled():
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        scc.core.pcc_consensus(GROUPS, 3, start=scc.core.StartPlan(n_init=1))


# ---------------------------------------------------------- 5: parameter checks


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"tol": "1e-3"}, "tol must be a number, got '1e-3'"),
        ({"n_neighbors": -1, "mode": "sparse"}, "n_neighbors must be a non-negative integer"),
        (
            {"n_neighbors": 0, "n_random": 0, "mode": "sparse"},
            r"Give n_neighbors > 0 or n_random > 0",
        ),
        ({"n_random": -1, "mode": "sparse"}, "n_random must be a non-negative integer"),
        ({"relationship_threshold": 2}, r"relationship_threshold=2 must lie in \[0, 1\]"),
        ({"relationship_threshold": -1}, r"relationship_threshold=-1 must lie in \[0, 1\]"),
        ({"relationship_threshold": "0.1"}, "relationship_threshold must be a number"),
        ({"tol": 0}, "tol must be a positive number"),
        ({"divergence": "kld"}, "divergence='kld' is not supported"),
        ({"n_init": 0}, "n_init must be a positive integer"),
        ({"max_iter": -1}, "max_iter must be a non-negative integer"),
    ],
)
def test_pcc_refuses_bad_parameters(kwargs, match, monkeypatch):
    """Before any work: planning (the spectral start) and counting pairs come after the checks."""

    def no_work(*args, **kwargs):
        raise AssertionError("planned before checking the arguments")

    monkeypatch.setattr("scconsensus.core.pcc._consensus._plan", no_work)
    kwargs = {"n_init": 1, **kwargs}
    _refused(scc.tl.pcc, _adata(), match, n_clusters=3, **kwargs)


def test_core_pcc_refuses_bad_parameters():
    C, N = coassociation(GROUPS)
    with pytest.raises(ValueError, match=r"min_mass=-1 must lie in \[0, 36\)"):
        scc.core.pcc(C, N, 3, min_mass=-1)
    with pytest.raises(ValueError, match=r"init='random' is not a start.*init=None for n_init"):
        scc.core.pcc(C, N, 3, "kl", init="random")
    with pytest.raises(ValueError, match=r"N is required.*coassociation"):
        scc.core.pcc(C, None, 3)
    with pytest.raises(ValueError, match="tol must be a number"):
        scc.core.pcc(C, N, 3, tol="1e-3")
    labels = np.ascontiguousarray(GROUPS, dtype=np.int32)
    with pytest.raises(ValueError, match=r"min_mass=-1 must lie"):
        pcc_lowrank(labels, 3, "l2", min_mass=-1)


# ------------------------------------------------------------- 2: k as a sequence


def test_ensemble_takes_k_as_any_sequence_of_ints():
    from scconsensus.core.ensemble import generate_ensemble

    X = np.random.default_rng(1).normal(size=(40, 3))

    def run(k):
        return generate_ensemble(X, 6, k=k, progress=False).labels

    assert np.array_equal(run(range(3, 6)), run([3, 4, 5]))
    assert np.array_equal(run(np.array([3, 5])), run([3, 5]))
    assert np.array_equal(run(np.int64(4)), run(np.array(4)))
    a = _adata()
    scc.tl.ensemble(a, 4, k=range(3, 6), key_added="ens")
    assert a.uns["ens"]["params"]["k"].tolist() == [3, 4, 5]
    with pytest.raises(ValueError, match="k as an array must be 1-D"):
        run(np.array([[3, 5]]))
    with pytest.raises(ValueError, match=r"sequence of ints \(list, range, 1-D array\)"):
        run({3, 5})


# ---------------------------------------------- 3: key_added over the user's data


def test_ensemble_refuses_to_overwrite_what_it_did_not_write():
    a = _adata()
    a.obsm["X_pca"] = np.random.default_rng(3).normal(size=(a.n_obs, 2))
    a.uns["pcc"] = {"params": {}}
    _refused(
        scc.tl.ensemble,
        a,
        r"would overwrite .obsm\['X_pca'\].*key_added='scc_ensemble_2'",
        n_partitions=3,
        key_added="X_pca",
    )
    _refused(scc.tl.ensemble, a, r"would overwrite .uns\['pcc'\]", n_partitions=3, key_added="pcc")
    # its own ensemble is replaced as before
    scc.tl.ensemble(a, 3, k=3, key_added="ens")
    scc.tl.ensemble(a, 4, k=3, key_added="ens")
    assert a.obsm["ens"].shape == (a.n_obs, 4)


def test_ensemble_refuses_a_representation_name_that_is_free():
    """A user trial: key_added="X_pca" on data without X_pca wrote the label matrix there,
    and tl.dpp clustered it as the PCA (6 clusters on iris, against 4)."""
    a = scc.datasets.iris()
    _refused(
        scc.tl.ensemble, a, r"'X_pca' names a representation", n_partitions=3, key_added="X_pca"
    )
    _refused(scc.tl.ensemble, a, r"names a representation", n_partitions=3, key_added="X_mine")
    # nor an ending the tools write beside a result (a verification trial: "scc_ensemble_run"
    # replaced an ensemble's run ids; "pcc_membership" was overwritten by the fit it fed)
    for key, ending in (("scc_ensemble_run", "_run"), ("pcc_membership", "_membership")):
        _refused(scc.tl.ensemble, a, rf"ends in '{ending}'", n_partitions=3, key_added=key)


def test_a_result_key_never_replaces_another_kind_of_record():
    """A user trial: tl.pcc(key_added="scc_ensemble") replaced the ensemble's record (then
    tl.k_null blamed a missing matrix), and tl.consensus_k(key_added="pcc") left PCC's
    labels and membership without their record."""
    a = scc.datasets.iris()
    scc.tl.ensemble(a, 10, random_state=0, progress=False)
    scc.tl.pcc(a, n_clusters=3, progress=False)
    for fn, kw in (
        (scc.tl.pcc, {"n_clusters": 3}),
        (scc.tl.pla, {"n_clusters": 3}),
        (scc.tl.dpp, {}),
        (scc.tl.coassociation, {}),
    ):
        _refused(
            fn,
            a,
            r"replace .uns\['scc_ensemble'\], the record of an ensemble",
            **kw,
            key_added="scc_ensemble",
        )
    _refused(
        scc.tl.consensus_k,
        a,
        r"a consensus result .*e.g. 'pcc_2'",
        max_k=3,
        reps=3,
        key_added="pcc",
    )
    scc.tl.consensus_k(a, max_k=3, reps=3, key_added="ck")
    _refused(scc.tl.pcc, a, r"a consensus-k result", n_clusters=3, key_added="ck")
    # the k keys too, both ways, naming the key given and a base whose k keys are free
    _refused(
        scc.tl.pcc,
        a,
        r"key_added='ck' \(it writes 'ck_k2'\).*e.g. 'ck_2'",
        n_clusters=[2, 3],
        key_added="ck",
    )
    scc.tl.pcc(a, n_clusters=[2, 3], key_added="multi")
    _refused(
        scc.tl.consensus_k,
        a,
        r"\(it writes 'multi_k2'\).*a consensus result",
        max_k=3,
        reps=3,
        key_added="multi",
    )
    # ConsensusClusterPlus's records are consensus-k results, as tl.consensus_k's
    a.uns["ccp"] = {"params": {"cluster_alg": "hc"}, "pac": np.zeros(2)}
    _refused(scc.tl.pcc, a, r"a consensus-k result", n_clusters=3, key_added="ccp")
    scc.tl.consensus_k(a, max_k=3, reps=3, key_added="ccp")
    # one consensus result may replace another: they share one layout
    scc.tl.pla(a, n_clusters=3, key_added="pcc")
    assert a.uns["pcc"]["method"] == "pla"


def test_ensemble_warns_when_partitions_are_smaller_than_k():
    a = ad.AnnData(np.random.default_rng(2).normal(size=(200, 3)))
    with pytest.warns(UserWarning, match=r"subsample=0.01 leaves 2 of 200 items per partition"):
        scc.tl.ensemble(a, 3, subsample=0.01)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        scc.tl.ensemble(a, 3)


# -------------------------------------------------------------- 5, 6: copy


def test_copy_must_be_a_bool():
    _refused(scc.tl.ensemble, _adata(), "copy must be True or False, got 'yes'", copy="yes")
    _refused(scc.tl.pcc, _adata(), "copy must be True or False, got 1", copy=1)


@pytest.mark.parametrize(
    ("tool", "kwargs"),
    [
        (scc.tl.ensemble, {"n_partitions": 3}),
        (scc.tl.pcc, {"n_clusters": 3}),
        (scc.tl.coassociation, {}),
        (scc.tl.consensus_k, {"max_k": 3, "reps": 3}),
        (scc.tl.pla, {"n_clusters": 3}),
        (scc.tl.dpp, {"n_runs": 2}),
    ],
)
def test_copy_of_a_backed_adata_is_refused_before_any_work(tool, kwargs, tmp_path):
    _adata().write_h5ad(tmp_path / "a.h5ad")
    backed = ad.read_h5ad(tmp_path / "a.h5ad", backed="r")
    with pytest.raises(ValueError, match=r"backed mode.*adata.to_memory\(\)"):
        tool(backed, copy=True, **kwargs)
    assert set(backed.obs) == set() and set(backed.obsm) == {"scc_ensemble"}
    backed.file.close()


@pytest.mark.parametrize(
    ("tool", "kwargs"),
    [
        (scc.tl.ensemble, {"n_partitions": 3}),
        (scc.tl.dpp, {"n_runs": 2}),
        (scc.tl.consensus_k, {"max_k": 3, "reps": 3}),
    ],
)
def test_a_backed_x_is_named_as_such_not_as_an_object_dtype(tool, kwargs, tmp_path):
    """A user trial: ``adata.X must be numeric, got dtype object`` for a float32 X on disk."""
    a = _adata()
    del a.obsm["scc_ensemble"]
    a.write_h5ad(tmp_path / "a.h5ad")
    backed = ad.read_h5ad(tmp_path / "a.h5ad", backed="r")
    with pytest.raises(ValueError, match=r"adata.X is on disk .*adata.to_memory\(\)"):
        tool(backed, **kwargs)
    backed.file.close()


def test_pla_transfer_refuses_copy_of_a_backed_adata(tmp_path):
    ref = _adata()
    scc.tl.pla(ref, n_clusters=3)
    _adata().write_h5ad(tmp_path / "new.h5ad")
    backed = ad.read_h5ad(tmp_path / "new.h5ad", backed="r")
    with pytest.raises(ValueError, match=r"backed mode.*adata.to_memory\(\)"):
        scc.tl.pla_transfer(backed, ref, new_ensemble_key="scc_ensemble", copy=True)
    assert set(backed.obs) == set()
    backed.file.close()


# ---------------------------------------------------------- review follow-ups


def test_ensemble_replaces_its_labels_after_concat_dropped_the_record():
    a = ad.AnnData(np.random.default_rng(0).normal(size=(60, 3)))
    scc.tl.ensemble(a, 4, k=3, random_state=0)
    b = ad.concat([a[:30], a[30:]])  # keeps .obsm, drops .uns
    assert "scc_ensemble" in b.obsm and "scc_ensemble" not in b.uns
    scc.tl.ensemble(b, 4, k=3, random_state=1)
    assert b.obsm["scc_ensemble"].shape == (60, 4) and "params" in b.uns["scc_ensemble"]
    b.obsm["X_pca"] = np.zeros((60, 2))
    with pytest.raises(ValueError, match="not an ensemble"):
        scc.tl.ensemble(b, 4, k=3, key_added="X_pca")


def test_default_subsample_on_small_data_does_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        scc.tl.ensemble(ad.AnnData(np.random.default_rng(0).normal(size=(10, 3))), 4)


def test_coassociation_takes_label_ids_at_the_int32_limit():
    top = 2**31 - 1
    labels = np.array([[0, top], [1, top], [1, 5], [0, 5]], dtype=np.int32)
    C, N = coassociation(labels)
    C0, N0 = coassociation(np.array([[0, 1], [1, 1], [1, 0], [0, 0]], dtype=np.int32))
    np.testing.assert_array_equal(C, C0)
    np.testing.assert_array_equal(N, N0)


def test_no_pairs_per_item_only_matters_in_sparse_mode():
    route = scc.core.FitRoute(mode="dense", n_neighbors=0, n_random=0, fit_size="auto")
    dense = scc.core.pcc_consensus(GROUPS, 3, route=route, start=scc.core.StartPlan(n_init=1))
    assert dense.route == "dense"
    route = scc.core.FitRoute(mode="sparse", n_neighbors=0, n_random=0)
    with pytest.raises(ValueError, match="Give n_neighbors > 0 or n_random > 0"):
        scc.core.pcc_consensus(GROUPS, 3, route=route)


def test_pla_lam_grid_as_a_pandas_series():
    import pandas as pd

    a = _adata()
    scc.tl.pla(a, n_clusters=3, weighted=True, lam_grid=pd.Series([0.1, 1.0]), cv_folds=2)
    assert list(a.uns["pla"]["params"]["lam_grid"]) == [0.1, 1.0]


def test_a_missing_use_rep_lists_the_representations_not_labels_or_memberships():
    """A trial was offered 'scc_ensemble', 'scc_ensemble_run' and 'pla_membership' as
    representations to cluster."""
    a = scc.datasets.iris()
    scc.tl.ensemble(a, n_partitions=10, random_state=0)
    with pytest.raises(ValueError, match=r"not in adata\.obsm \(none there\)"):
        scc.tl.pcc(a, n_clusters=3, use_rep="X_nope", mode="sparse")
    scc.tl.pla(a, n_clusters=3, random_state=0)
    a.obsm["X_pca"] = np.asarray(a.X[:, :2], dtype=np.float32)
    with pytest.raises(ValueError, match=r"\(available: \['X_pca'\]\)\. Compute it"):
        scc.tl.pcc(a, n_clusters=3, use_rep="X_nope", mode="sparse")
    new = a[:20].copy()
    with pytest.raises(ValueError, match=r"adata_ref\.obsm \(available: \['X_pca'\]\):"):
        scc.tl.pla_transfer(new, a, use_rep="X_nope")
