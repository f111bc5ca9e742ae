"""``n_clusters=[...]``: several K in one call of ``tl.pcc`` / ``tl.pla``."""

from __future__ import annotations

import anndata as ad
import numpy as np
import pandas as pd
import pytest
from _helpers import assert_unchanged

import scconsensus as scc
import scconsensus.tl._pcc as tl_pcc


@pytest.fixture(scope="module")
def nested():
    """60 items: 2 lineages of 2 types each, with a k-means ensemble over k = 2..6."""
    rng = np.random.default_rng(0)
    truth = np.repeat(np.arange(4), 15)
    centres = np.repeat(rng.normal(scale=8.0, size=(2, 6)), 2, axis=0)
    centres += rng.normal(scale=3.0, size=(4, 6))
    a = ad.AnnData(centres[truth] + rng.standard_normal((60, 6)))
    a.obs_names = [f"c{i}" for i in range(60)]
    a.obs["truth"] = pd.Categorical(truth.astype(str))
    scc.tl.ensemble(a, 30, k=(2, 6), random_state=0)
    return a


def _written(adata) -> set[str]:
    return set(adata.obs) | set(adata.obsm) | set(adata.uns)


@pytest.mark.parametrize("method", ["pcc", "pla"])
def test_each_k_equals_its_own_call(nested, method):
    fit = getattr(scc.tl, method)
    together, alone = nested.copy(), nested.copy()
    fit(together, n_clusters=[4, 2], random_state=3)
    for K in (4, 2):
        fit(alone, n_clusters=K, random_state=3, key_added=f"{method}_k{K}")
        key = f"{method}_k{K}"
        np.testing.assert_array_equal(
            together.obsm[f"{key}_membership"], alone.obsm[f"{key}_membership"]
        )
        pd.testing.assert_series_equal(together.obs[key], alone.obs[key])
        assert together.uns[key]["params"]["n_clusters"] == K
    # only the keys of each K, nothing under key_added itself
    added = _written(together) - _written(nested)
    assert added == _written(alone) - _written(nested)
    assert method not in added and f"{method}_k4_membership" in added


def test_the_candidates_of_auto_can_be_passed_back(nested, tmp_path):
    a = nested.copy()
    scc.tl.pcc(a)
    candidates = a.uns["pcc"]["k_candidates"]
    table, splits = a.uns["pcc"]["k_selection"], a.uns["pcc"]["k_splits"]
    strong = table[table["drop"] >= a.uns["pcc"]["k_selection_threshold"]]
    # one K per split, and the splits' spans hold every K whose drop reaches the threshold
    assert candidates.tolist() == splits["n_clusters"].tolist()
    spans = [K for r in splits.itertuples() for K in range(r.k_first, r.k_last + 1)]
    assert sorted(spans) == strong["n_clusters"].tolist()
    assert len(candidates) >= 1
    a.write_h5ad(tmp_path / "a.h5ad")
    back = ad.read_h5ad(tmp_path / "a.h5ad")
    pd.testing.assert_frame_equal(back.uns["pcc"]["k_splits"], splits)
    scc.tl.pcc(back, n_clusters=back.uns["pcc"]["k_candidates"])
    for K in candidates:
        assert back.obsm[f"pcc_k{K}_membership"].shape[1] <= K


def test_copy_leaves_the_input_unchanged(nested):
    a = nested.copy()
    out = scc.tl.pla(a, n_clusters=(2, 3), copy=True, key_added="p")
    assert_unchanged(nested, a)
    assert {"p_k2", "p_k3"} <= set(out.obs)


def test_a_fault_in_a_later_k_undoes_the_earlier_ones(nested, monkeypatch):
    a = nested.copy()
    scc.tl.pcc(a, n_clusters=2, key_added="pcc_k2")  # an earlier result, overwritten then restored
    before = a.copy()
    real = tl_pcc.pcc_consensus

    def fails_at_three(labels, n_clusters, *args, **kwargs):
        if n_clusters == 3:
            raise KeyboardInterrupt
        return real(labels, n_clusters, *args, **kwargs)

    monkeypatch.setattr(tl_pcc, "pcc_consensus", fails_at_three)
    with pytest.raises(KeyboardInterrupt):
        scc.tl.pcc(a, n_clusters=[4, 2, 3], random_state=1)
    assert_unchanged(before, a)
