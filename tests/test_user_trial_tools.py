"""New-user trial defects in tl.pcc, core.pcc, tl.ensemble and copy=True, each pinned.

Every refused call must name the problem and the fix and leave the AnnData as it was.
"""

from __future__ import annotations

import warnings

import anndata as ad
import numpy as np
import pytest

import scconsensus as scc
from scconsensus.core import coassociation
from scconsensus.core.pcc import pcc_lowrank

GROUPS = np.repeat([[0, 0, 1], [1, 1, 0], [2, 2, 2]], 12, axis=0)


def _adata(labels=GROUPS) -> ad.AnnData:
    rng = np.random.default_rng(0)
    a = ad.AnnData(rng.normal(size=(labels.shape[0], 4)))
    a.obsm["scc_ensemble"] = np.ascontiguousarray(labels, dtype=np.int32)
    return a


def _refused(fn, adata, match, **kwargs):
    """``fn(adata, **kwargs)`` raises ValueError matching ``match``; adata unchanged."""
    before = adata.copy()
    with pytest.raises(ValueError, match=match):
        fn(adata, **kwargs)
    assert list(adata.obs) == list(before.obs) and list(adata.obsm) == list(before.obsm)
    assert list(adata.uns) == list(before.uns)
    for key in before.obsm:
        assert np.array_equal(adata.obsm[key], before.obsm[key])


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
        scc.core.pcc_consensus(GROUPS, 3, n_init=1)


# ---------------------------------------------------------- 5: parameter checks


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"tol": "1e-3"}, "tol must be a number, got '1e-3'"),
        ({"n_neighbors": 0, "mode": "sparse"}, "n_neighbors must be a positive integer"),
        ({"n_random": -1, "mode": "sparse"}, "n_random must be a non-negative integer"),
        ({"relationship_threshold": 2}, r"relationship_threshold=2 must lie in \[0, 1\]"),
        ({"relationship_threshold": -1}, r"relationship_threshold=-1 must lie in \[0, 1\]"),
        ({"relationship_threshold": "0.1"}, "relationship_threshold must be a number"),
    ],
)
def test_pcc_refuses_bad_parameters(kwargs, match):
    _refused(scc.tl.pcc, _adata(), match, n_clusters=3, n_init=1, **kwargs)


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
