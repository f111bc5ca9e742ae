"""The answer from defaults: spectral start, K chosen from the ensemble, no empty categories."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import anndata as ad
import numpy as np
import pytest
from _helpers import evidence_table

import scconsensus as scc
from scconsensus.core import (
    KSelection,
    matched_partitions,
    partition_sizes,
    plan_consensus,
    select_k,
    spectral_consensus,
)
from scconsensus.core._splits import PLATEAU, READ_AFTER, STRONGER
from scconsensus.metrics import adjusted_rand_index


def structured_ensemble(n_groups: int, *, n_per: int = 40, seed: int = 0) -> tuple:
    """Partitions of known structure: ``n_groups`` groups, merged below and split above.

    A partition with ``k < n_groups`` clusters merges random groups; one with
    ``k >= n_groups`` splits every group at random into ``k // n_groups`` parts and
    never mixes two groups. ``k`` runs over 2..3 * n_groups + 3.
    """
    rng = np.random.default_rng(seed)
    truth = np.repeat(np.arange(n_groups), n_per)
    cols = []
    for k in range(2, 3 * n_groups + 4):
        for _ in range(4):
            if k < n_groups:
                merge = rng.permutation(np.arange(n_groups) % k)
                cols.append(merge[truth])
            else:
                parts = k // n_groups
                cols.append(truth * parts + rng.integers(0, parts, truth.size))
    return np.stack(cols, axis=1).astype(np.int32), truth


@pytest.mark.parametrize("n_groups", [2, 4, 7])
def test_select_k_recovers_the_number_of_groups(n_groups):
    labels, _ = structured_ensemble(n_groups)
    sel = select_k(labels, random_state=0)
    assert sel.n_clusters == n_groups, sel.table
    assert sel.table["chosen"].sum() == 1
    assert f"K={n_groups}" in sel.reason


def test_select_k_evidence_table_is_consistent():
    labels, _ = structured_ensemble(3)
    table = select_k(labels).table
    assert list(table.columns) == [
        "n_clusters",
        "eigenvalue",
        "envelope",
        "drop",
        "n_partitions",
        "chosen",
    ]
    assert (np.diff(table["envelope"]) <= 1e-12).all()  # a running minimum
    assert ((table["eigenvalue"] >= 0) & (table["eigenvalue"] <= 1 + 1e-9)).all()
    assert (np.diff(table["n_partitions"]) <= 0).all()  # E_K shrinks with K


def test_select_k_refuses_an_ensemble_without_structure():
    with pytest.raises(ValueError, match="single cluster"):
        select_k(np.zeros((20, 5), dtype=np.int32))


@pytest.mark.parametrize("seed", [0, 3])
def test_spectral_start_is_deterministic_per_seed(seed):
    labels, truth = structured_ensemble(5, seed=1)
    a = spectral_consensus(labels, 5, random_state=seed)
    b = spectral_consensus(labels, 5, random_state=seed)
    np.testing.assert_array_equal(a, b)
    assert adjusted_rand_index(truth, a) == pytest.approx(1.0)
    plan1 = plan_consensus(labels, "auto", random_state=seed)
    plan2 = plan_consensus(labels, "auto", random_state=seed)
    np.testing.assert_array_equal(plan1.start, plan2.start)
    np.testing.assert_allclose(plan1.start.sum(axis=1), 1.0)


@pytest.mark.parametrize("smoothing", [0.0, 1.0, -0.5, 1.5, "0.9", np.nan])
def test_plan_consensus_refuses_a_smoothing_outside_the_simplex(smoothing):
    """0 puts the start on the simplex's vertices (PCC's KL gradient is infinite there),
    1 on uniform rows (a stationary point of PCC and PLA) and anything outside [0, 1]
    gives negative memberships, which the solvers refused with an error about ``init``."""
    labels, _ = structured_ensemble(3)
    with pytest.raises(ValueError, match="smoothing"):
        plan_consensus(labels, 3, smoothing=smoothing)
    plan = plan_consensus(labels, 3, smoothing=0.9)
    np.testing.assert_allclose(plan.start.min(), 0.3)


def test_spectral_consensus_large_route_matches_structure():
    # more than 300 items and clusters: the exact Gram of the smaller side
    labels, truth = structured_ensemble(6, n_per=80, seed=2)
    got = spectral_consensus(labels, 6, random_state=0)
    assert adjusted_rand_index(truth, got) == pytest.approx(1.0)


def test_spectral_start_with_more_clusters_than_distinct_rows_says_nothing_of_sklearn():
    """A user trial: scconsensus run iris --n-clusters 149 printed scikit-learn's "Number of
    distinct clusters (86) found smaller than n_clusters (149)"; the fit reports the
    clusters without mass in its own words."""
    labels = np.repeat(np.array([[0, 1], [1, 0], [2, 2]]), 10, axis=0)  # 3 distinct rows
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = spectral_consensus(labels, 20, random_state=0)
    assert np.unique(got).size <= 3


def clear_ensemble(n_groups: int, *, n_per: int = 10, seed: int = 0) -> tuple:
    """Partitions from 2 to ``2 n_groups + 3`` clusters, merging or splitting ``n_groups``
    groups (eigenvalue 1 of multiplicity ``n_groups`` in every ``E_K`` with ``K <= n_groups``),
    a fifth of the items left out of each partition as ``tl.ensemble``'s subsamples do."""
    rng = np.random.default_rng(seed)
    truth = np.repeat(np.arange(n_groups), n_per)
    cols = []
    for k in [*range(2, n_groups), *range(n_groups, 2 * n_groups + 4)] * 3:
        if k < n_groups:
            col = rng.permutation(np.arange(n_groups) % k)[truth]
        else:
            parts = np.maximum(1, rng.multinomial(k - n_groups, np.ones(n_groups) / n_groups) + 1)
            col = truth * (k + 1) + rng.integers(0, parts[truth])
        col[rng.random(truth.size) < 0.2] = -1
        cols.append(col)
    return np.stack(cols, axis=1).astype(np.int32), truth


def _dense_eigenvalues(labels: np.ndarray, k: int) -> np.ndarray:
    from scconsensus.core._spectral import _normalised, incidence_matrix

    A = _normalised(incidence_matrix(labels)).toarray()
    gram = A.T @ A if A.shape[1] <= A.shape[0] else A @ A.T
    return np.linalg.eigvalsh(gram)[::-1][:k]


@pytest.mark.parametrize("bad", [0, -1, "3", 2.5, True])
def test_incidence_spectrum_refuses_a_bad_number_of_components(bad):
    """A clear message, not a LAPACK index error or an empty reduction."""
    from scconsensus.core import incidence_spectrum

    with pytest.raises(ValueError, match="n_components"):
        incidence_spectrum(np.array([[0, 1], [1, 0], [0, 0]]), bad)


@pytest.mark.parametrize("n_groups", [2, 5, 13, 40])
@pytest.mark.parametrize("route", ["exact", "subspace"])
def test_incidence_spectrum_is_exact_whatever_the_multiplicity(n_groups, route, monkeypatch):
    """Clear groups make eigenvalue 1 multiple: ARPACK missed some of them (issue 28)."""
    from scconsensus.core import _spectral, incidence_spectrum

    if route == "subspace":
        monkeypatch.setattr(_spectral, "EXACT_MAX_SIDE", 50)
    labels, _ = clear_ensemble(n_groups)
    labels = labels[:, partition_sizes(labels) >= n_groups]  # E_G: eigenvalue 1, G times
    k = n_groups + 2
    w, U = incidence_spectrum(labels, k, random_state=3)
    np.testing.assert_allclose(w, _dense_eigenvalues(labels, k), atol=1e-6)
    np.testing.assert_allclose(w[:n_groups], 1.0, atol=1e-6)
    np.testing.assert_allclose(U.T @ U, np.eye(k), atol=1e-6)
    w2, _ = incidence_spectrum(labels, k, random_state=11)
    np.testing.assert_allclose(w, w2, atol=1e-6)  # no dependence on the seed


@pytest.mark.parametrize("n_groups", [2, 5, 13, pytest.param(40, marks=pytest.mark.slow)])
def test_subspace_eigenvalues_are_lapacks_whatever_the_multiplicity(n_groups, monkeypatch):
    """select_k's large Gram matrices go to block subspace iteration first: clear groups
    (eigenvalue 1, ``n_groups`` times) must come out as dense eigvalsh gives them."""
    from scconsensus.core import _spectral
    from scconsensus.core._spectral import _normalised, incidence_matrix

    monkeypatch.setattr(_spectral, "SUBSPACE_BUDGET", 100.0)  # the budget is for speed
    labels = np.hstack([clear_ensemble(n_groups, n_per=50, seed=s)[0] for s in (0, 1)])
    sizes = partition_sizes(labels)
    labels = labels[:, (sizes >= n_groups) & (sizes <= n_groups + 6)]  # E_G, split groups
    A = _normalised(incidence_matrix(labels)).toarray()
    gram = np.asfortranarray(np.tril(A.T @ A))  # the lower triangle, as nested_spectra's
    k = n_groups + 2
    found = _spectral._subspace_top(gram, k)
    assert found is not None  # large enough for the iteration, which converged
    w, V = found
    want = np.linalg.eigvalsh(A.T @ A)[::-1][:k]
    np.testing.assert_allclose(w, want, atol=1e-9)
    np.testing.assert_allclose(w[:n_groups], 1.0, atol=1e-9)
    np.testing.assert_allclose(A.T @ (A @ V), V * w, atol=1e-6)
    np.testing.assert_allclose(V.T @ V, np.eye(k), atol=1e-9)
    again = _spectral._subspace_top(gram, k)  # a fixed start block: the same bits
    assert np.array_equal(w, again[0]) and np.array_equal(V, again[1])
    block = max(2 * k + 10, _spectral.SUBSPACE_MIN_BLOCK)
    monkeypatch.setattr(_spectral, "SUBSPACE_BUDGET", 1.5 * block / gram.shape[0])
    assert _spectral._subspace_top(gram, k) is None  # one step, not converged: LAPACK's turn


@pytest.mark.parametrize("budget", [100.0, 0.0])  # subspace iteration where it pays; LAPACK
@pytest.mark.parametrize("n_groups", [2, 5, 13, 40])
def test_incidence_spectrum_from_the_compiled_gram_is_exact(n_groups, budget, monkeypatch):
    """With more items than clusters, incidence_spectrum forms the column side's Gram in
    compiled code: its eigenvalues and item embedding are those of the dense matrices,
    unsampled items included (rows of zeros), ids with gaps as another tool's."""
    from scconsensus.core import _spectral, incidence_spectrum
    from scconsensus.core._spectral import _normalised, incidence_matrix

    monkeypatch.setattr(_spectral, "NESTED_MIN_ITEMS", 0)
    monkeypatch.setattr(_spectral, "SUBSPACE_BUDGET", budget)
    labels, _ = clear_ensemble(n_groups, n_per=50)
    sizes = partition_sizes(labels)
    labels = labels[:, (sizes >= n_groups) & (sizes <= n_groups + 6)]
    labels[labels == 1] = 10**6
    labels[:3] = -1
    assert _spectral._column_leading(labels, 2) is not None  # the compiled route
    k = n_groups + 2
    w, U = incidence_spectrum(labels, k)
    A = _normalised(incidence_matrix(labels))
    np.testing.assert_allclose(w, _dense_eigenvalues(labels, k), atol=1e-9)
    np.testing.assert_allclose(U.T @ U, np.eye(k), atol=1e-9)
    np.testing.assert_allclose(A @ (A.T @ U), U * w, atol=1e-6)  # RESIDUAL_TOL 1e-7
    assert not U[:3].any()


@pytest.mark.parametrize("n_groups", [2, 5, 13])
def test_nested_spectra_are_each_sets_incidence_spectrum(n_groups, monkeypatch):
    """select_k's one-pass Gram matrices (more items than clusters: the column side) give
    every E_K's eigenvalues as incidence_spectrum does, and the same choice of K."""
    from scconsensus.core import _resolution, _spectral
    from scconsensus.core._lapack import eigh_evr

    monkeypatch.setattr(_spectral, "NESTED_MIN_ITEMS", 0)  # the compiled pass on small data
    labels, _ = clear_ensemble(n_groups, n_per=150, seed=2)
    labels[labels == 1] = 7 * n_groups  # ids with gaps, as another tool's
    sizes = partition_sizes(labels)
    order = np.argsort(-sizes, kind="stable")
    requests = [(c, n_groups + 3) for c in (1, 5, labels.shape[1] // 2, labels.shape[1])]
    spectra = _spectral.nested_spectra(labels, order, requests)
    for (count, k), w in zip(requests, spectra, strict=True):
        np.testing.assert_allclose(w, _dense_eigenvalues(labels[:, order[:count]], k), atol=1e-9)
    assert _spectral.nested_spectra(labels[:20], order, requests) is None  # item side
    nested = select_k(labels, random_state=0)
    monkeypatch.setattr(_resolution, "nested_spectra", lambda *args: None)
    each = select_k(labels, random_state=0)
    assert nested.n_clusters == each.n_clusters == n_groups
    np.testing.assert_allclose(nested.table["eigenvalue"], each.table["eigenvalue"], atol=1e-12)
    a = np.asfortranarray(np.cov(np.random.default_rng(0).normal(size=(9, 30))))
    w, v = eigh_evr(a.copy(order="F"), (5, 8))
    w2, v2 = eigh_evr(a, (5, 8), overwrite_a=True)
    assert np.array_equal(w, w2) and np.array_equal(v, v2)


def test_nested_spectra_iterate_until_lapack_is_cheaper(monkeypatch):
    """The largest sets are iterated, and once an iteration runs out of steps the rest go
    to LAPACK; either way select_k's evidence is the exact one."""
    from scconsensus.core import _resolution, _spectral

    calls, real = [], _spectral._subspace_top
    monkeypatch.setattr(_spectral, "NESTED_MIN_ITEMS", 0)
    monkeypatch.setattr(_spectral, "_subspace_top", lambda *a: calls.append(real(*a)) or calls[-1])
    labels, _ = structured_ensemble(4, n_per=150, seed=2)  # 600 items, 476 clusters
    nested = select_k(labels, random_state=0)
    done = [w is not None for w in calls]
    assert done[0] and not done[-1] and done.count(False) == 1  # no try after a failure
    monkeypatch.setattr(_resolution, "nested_spectra", lambda *args: None)
    each = select_k(labels, random_state=0)
    assert nested.n_clusters == each.n_clusters == 4
    np.testing.assert_allclose(nested.table["eigenvalue"], each.table["eigenvalue"], atol=1e-9)


@pytest.mark.parametrize("n_groups", [2, 3, 8, 20, 40])
def test_select_k_finds_every_number_of_clear_groups(n_groups):
    labels, _ = clear_ensemble(n_groups)
    sel = select_k(labels, random_state=0)
    assert sel.n_clusters == n_groups, sel.table
    table = sel.table.set_index("n_clusters")
    assert table.loc[n_groups, "eigenvalue"] == pytest.approx(1.0, abs=1e-6)


@pytest.mark.slow
def test_select_k_is_bit_identical_across_processes(tmp_path):
    """Same input, same evidence, in fresh interpreters (ARPACK's was not)."""
    import subprocess
    import sys

    labels, _ = clear_ensemble(12, n_per=30, seed=4)
    np.save(tmp_path / "labels.npy", labels)
    code = (
        "import sys, numpy as np; from scconsensus.core import select_k; "
        f"t = select_k(np.load({str(tmp_path / 'labels.npy')!r})).table; "
        "sys.stdout.write(t['eigenvalue'].to_numpy().tobytes().hex())"
    )
    out = {
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        ).stdout
        for _ in range(2)
    }
    assert len(out) == 1


def test_spectra_run_on_one_blas_thread(monkeypatch):
    """The eigensolver's dense steps run on one BLAS thread whatever the caller set.

    More threads only slowed them (10x on 2 cores) and may round differently.
    """
    from threadpoolctl import threadpool_info, threadpool_limits

    from scconsensus.core import _spectral

    seen, routes = [], set()
    real = _spectral.eigh_evr

    def eigh_evr(*args, **kwargs):
        seen.extend(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas")
        routes.add("compiled Gram" if kwargs.get("overwrite_a") else "sparse Gram")
        return real(*args, **kwargs)

    def subspace(*args):
        seen.extend(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas")
        routes.add("subspace")
        return real_subspace(*args)

    real_subspace = _spectral._subspace_top
    monkeypatch.setattr(_spectral, "eigh_evr", eigh_evr)
    monkeypatch.setattr(_spectral, "_subspace_top", subspace)
    monkeypatch.setattr(_spectral, "NESTED_MIN_ITEMS", 0)
    # more items (600) than clusters (476): select_k forms the column side's Gram matrices
    labels, _ = structured_ensemble(4, n_per=150, seed=2)

    def blas_threads():
        return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]

    with threadpool_limits(limits=2, user_api="blas"):
        before = blas_threads()
        select_k(labels, random_state=0)
        spectral_consensus(labels, 4, random_state=0)
        spectral_consensus(labels[::3], 4, random_state=0)  # 200 items: the item side
        assert blas_threads() == before  # the caller's setting is restored
    assert routes == {"subspace", "compiled Gram", "sparse Gram"}
    assert seen and set(seen) == {1}


def test_matched_partitions_window_and_fallback():
    sizes = np.array([2, 2, 3, 5, 8, 10, 12, 13, 20])
    assert matched_partitions(sizes, 10, min_partitions=2).tolist() == [4, 5, 6]
    # too few near K: the nearest ones instead
    assert matched_partitions(sizes, 16, min_partitions=3).tolist() == [6, 7, 8]


@pytest.mark.slow
def test_auto_ensemble_is_log_uniform_over_resolutions():
    X = np.random.default_rng(0).normal(size=(400, 5))
    ens = scc.core.generate_ensemble(X, 200, "kmeans", "auto", random_state=0)
    k = partition_sizes(ens.labels)
    assert k.min() == 2 and k.max() <= 20  # sqrt(320 sampled) = 18
    # log-uniform: as many partitions with 2-4 clusters as with 9-18
    low, high = ((k >= 2) & (k < 5)).sum(), ((k >= 9) & (k < 19)).sum()
    assert abs(low - high) < 0.35 * (low + high)


@pytest.fixture(scope="module")
def three_blobs():
    from sklearn.datasets import make_blobs

    X, y = make_blobs(n_samples=300, centers=3, cluster_std=0.8, random_state=0)
    adata = ad.AnnData(X=X)
    adata.obs["truth"] = y.astype(str)
    scc.tl.ensemble(adata, random_state=0)
    return adata


@pytest.mark.parametrize("method", ["pcc", "pla"])
def test_defaults_find_three_blobs(three_blobs, method):
    adata = three_blobs.copy()
    getattr(scc.tl, method)(adata)
    uns = adata.uns[method]
    assert uns["n_clusters_chosen"] == 3
    assert adata.obs[method].cat.categories.tolist() == ["0", "1", "2"]
    from sklearn.cluster import KMeans

    kmeans = KMeans(3, n_init=10, random_state=0).fit_predict(adata.X)
    target = adjusted_rand_index(adata.obs["truth"], kmeans)
    assert adjusted_rand_index(adata.obs["truth"], adata.obs[method]) >= target - 0.02
    assert uns["k_selection"]["chosen"].sum() == 1
    assert "K=3" in uns["k_selection_reason"]


@pytest.mark.parametrize("method", ["pcc", "pla"])
def test_no_empty_categories_with_a_large_k(three_blobs, method):
    adata = three_blobs.copy()
    getattr(scc.tl, method)(adata, n_clusters=9)
    counts = adata.obs[method].value_counts()
    assert (counts > 0).all(), counts
    assert adata.obsm[f"{method}_membership"].shape[1] == counts.size
    np.testing.assert_allclose(adata.obsm[f"{method}_membership"].sum(axis=1), 1.0)


def test_k_evidence_survives_h5ad(three_blobs, tmp_path):
    adata = three_blobs.copy()
    scc.tl.pcc(adata)
    path = tmp_path / "a.h5ad"
    adata.write_h5ad(path)
    back = ad.read_h5ad(path)
    before, after = adata.uns["pcc"]["k_selection"], back.uns["pcc"]["k_selection"]
    np.testing.assert_allclose(before["eigenvalue"], after["eigenvalue"])
    assert after["chosen"].tolist() == before["chosen"].tolist()
    assert back.uns["pcc"]["n_clusters_chosen"] == 3
    assert back.uns["pcc"]["params"]["n_clusters"] == "auto"


@pytest.mark.slow
def test_readme_quick_start_runs_into_rank_genes_groups():
    readme = (Path(__file__).parents[1] / "README.md").read_text()
    block = re.search(r"## Quick start\n\n```python\n(.*?)```", readme, re.S).group(1)
    namespace: dict = {}
    exec(compile(block, "README.md", "exec"), namespace)  # Agg backend: show is a no-op
    adata = namespace["adata"]
    assert "rank_genes_groups" in adata.uns
    assert (adata.obs["pcc"].value_counts() > 0).all()


@pytest.mark.parametrize("n_clusters", [3, 4])
def test_pla_duplicate_components_are_not_uncertainty(n_clusters):
    # issue 13, item 6: an ensemble of 2-cluster partitions, PLA asked for more clusters
    from sklearn.datasets import make_blobs

    X, _ = make_blobs(100, centers=[[0, 0], [20, 20]], random_state=0)
    adata = ad.AnnData(X=X)
    scc.tl.ensemble(adata, n_partitions=20, k=2, random_state=0)
    scc.tl.pla(adata, n_clusters=n_clusters)
    C, N = scc.core.coassociation(adata.obsm["scc_ensemble"])
    # items that every partition puts with the same partners: no evidence of doubt
    always = np.array([((C[i] == N[i]) | (C[i] == 0)).all() for i in range(100)])
    assert always.all()
    assert adata.obs["pla_confidence"][always].min() > 0.9


def test_select_k_reports_every_stable_resolution():
    """Each split (consecutive K whose drop reaches the threshold) is listed once, the
    strongest first (issue 28)."""
    rng = np.random.default_rng(0)
    types = np.repeat(np.arange(6), 25)
    lineage = types // 2  # lineages of two types
    cols = [rng.permutation(3)[lineage] for _ in range(12)]
    # k = 4 and 5: one or two lineages, drawn at random, split into their types; partitions
    # between the levels that disagree are what makes the lineages a split of their own
    for n_split in (1, 2):
        for _ in range(12):
            split = np.isin(lineage, rng.choice(3, n_split, replace=False))
            cols.append(np.where(split, 3 + types, lineage))
    cols += [types * 3 + rng.integers(0, k, types.size) for k in (1, 2, 3) for _ in range(12)]
    sel = select_k(np.stack(cols, axis=1).astype(np.int32), random_state=0)
    drop = sel.table.set_index("n_clusters")["drop"]
    splits = sel.splits
    assert sel.n_clusters == 3 and sel.candidates == [6, 3]
    assert sel.candidates == splits["n_clusters"].tolist() and len(splits) >= 2
    assert list(splits["strength"]) == sorted(splits["strength"], reverse=True)
    # the spans cover every K whose drop reaches the threshold, each once, and no other
    spans = [K for r in splits.itertuples() for K in range(r.k_first, r.k_last + 1)]
    assert sorted(spans) == drop.index[drop >= sel.threshold].tolist()
    assert (
        (splits["k_first"] <= splits["n_clusters"]) & (splits["n_clusters"] <= splits["k_last"])
    ).all()
    other = [K for K in sel.candidates if K != sel.n_clusters]
    assert f"K={other[0]}" in sel.reason.split("other stable resolutions")[1]


def test_the_finest_k_of_the_ensemble_is_no_split():
    """Past the ensemble's finest partitions there is nothing to drop to: its finest k is
    no candidate (a drop to no partition read as a full split chose 18 on an ensemble of
    k = 2..18 over 6 groups)."""
    rng = np.random.default_rng(0)
    types = np.repeat(np.arange(6), 25)
    cols = [types % k for k in (2, 3) for _ in range(10)]
    cols += [types * 3 + rng.integers(0, 3, types.size) for _ in range(20)]  # k = 18
    sel = select_k(np.stack(cols, axis=1).astype(np.int32), random_state=0)
    assert sel.n_clusters == 6 and 18 not in sel.candidates
    assert sel.table["n_clusters"].max() < 18


def test_no_split_below_the_finest_k_chooses_it_with_a_warning():
    """4 clear groups and k = 2..4: no group is cut up to K = 3, so K = 4, the finest k,
    is chosen (a lower bound, said in a warning), not the largest drop (2)."""
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 4, 400)
    X = rng.normal(0, 20, (4, 10))[labels] + rng.normal(0, 1, (400, 10))
    a = ad.AnnData(X.astype(np.float32))
    scc.tl.ensemble(a, n_partitions=60, k=(2, 4), random_state=0, progress=False)
    with pytest.warns(UserWarning, match="no split up to K=3"):
        sel = select_k(a.obsm["scc_ensemble"])
    assert sel.n_clusters == 4 and "more than 3 groups" in sel.reason
    row = sel.table.iloc[-1]
    assert row["n_clusters"] == 4 and row["chosen"] and np.isnan(row["drop"])
    assert sel.table["chosen"].sum() == 1
    # a max_k below the finest k bounds K: no lower bound above it
    assert select_k(a.obsm["scc_ensemble"], max_k=3).n_clusters <= 3


def test_the_lower_bound_is_the_next_k_that_keeps_the_groups_not_the_finest_k():
    """16 groups, k = 2..18 with few partitions above 15: no split up to K = 15, and 16
    (the next K that keeps the evidence) is chosen, not 18, the finest k."""
    rng = np.random.default_rng(0)
    G, truth = 16, np.repeat(np.arange(16), 30)
    # k = 2..18: 4 partitions above 16, fewer than select_k's 5 needed to judge K = 16
    counts = [19, 7, 8, 13, 5, 5, 9, 4, 4, 2, 3, 5, 2, 2, 3, 2, 2]
    merges, alive = [], list(range(G))  # one tree over the groups: coarse cuts agree
    while len(alive) > 1:
        a, b = rng.choice(len(alive), 2, replace=False)
        merges.append((alive[a], alive[b]))
        alive.pop(b)
    cols = []
    for k in np.repeat(np.arange(2, 19), counts):
        lab = truth.copy()
        if k <= G:
            block = np.arange(G)
            for a, b in merges[: G - k]:
                block[block == block[b]] = block[a]
            lab = np.unique(block, return_inverse=True)[1][truth]
        for new, g in enumerate(rng.choice(G, max(k - G, 0), replace=False), start=G):
            idx = np.flatnonzero(truth == g)
            lab[rng.choice(idx, idx.size // 2, replace=False)] = new
        cols.append(lab)
    with pytest.warns(UserWarning, match="K=16 is only a lower bound"):
        sel = select_k(np.stack(cols, axis=1).astype(np.int32))
    assert sel.n_clusters == 16 and sel.table["n_clusters"].iloc[-1] == 16


def test_select_k_on_an_ensemble_that_samples_no_item():
    """Every entry -1: the error says nothing was sampled, not that partitions have one
    cluster."""
    with pytest.raises(ValueError, match="No partition of the ensemble labels any item"):
        select_k(-np.ones((10, 3), dtype=np.int32))


def test_one_resolution_at_its_own_k_warns():
    """Every partition with k clusters and the largest drop after k itself: the ensemble
    cannot tell k groups from more, and says so."""
    rng = np.random.default_rng(0)
    groups = np.repeat(np.arange(12), 20)
    cols = [rng.permutation(12)[groups] % 4 for _ in range(20)]  # 4 clusters, 12 groups
    with pytest.warns(UserWarning, match="cannot show whether the data hold 4 groups or more"):
        sel = select_k(np.stack(cols, axis=1).astype(np.int32), random_state=0)
    assert sel.n_clusters == 4 and "may hold more than 4 groups" in sel.reason


@pytest.mark.parametrize(
    ("plateau", "chosen", "read_at"),
    # chosen and read_at: offsets from the split's first K; None: the later split chosen
    [(0, 0, 0), (0, None, 0), (READ_AFTER, None, 1), (READ_AFTER - 1, None, 0), (0, 1, 1)],
)
def test_a_split_over_several_k_is_one_candidate(plateau, chosen, read_at):
    """A split that drops at K, K+1 and K+2 is one candidate (it was three, so fitting
    every candidate fitted redundant K), read where select_k reads it: at its first K,
    at its largest drop after a plateau, at the chosen K when it holds it (the largest
    drop of an ensemble at one resolution)."""
    drop = [0.0] * plateau + [0.06, 0.3, 0.1] + [0.0] * 6 + [0.05]
    first, last = 2 + plateau, 1 + len(drop)
    K = last if chosen is None else first + chosen
    sel = KSelection(K, evidence_table(drop, K), 0.05, "")
    splits = sel.splits
    assert splits["k_first"].tolist() == [first, last]
    assert splits["k_last"].tolist() == [first + 2, last]
    np.testing.assert_allclose(splits["strength"], [0.46, 0.05])
    assert sel.candidates == [first + read_at, last]
    assert K in sel.candidates


def test_splits_are_read_once_and_given_as_copies(monkeypatch):
    import scconsensus.core._resolution as resolution

    reads = []
    original = resolution.stable_splits
    monkeypatch.setattr(resolution, "stable_splits", lambda *a: reads.append(1) or original(*a))
    drop = [0.0, 0.06, 0.3, 0.1] + [0.0] * 6 + [0.05]
    sel = KSelection(3, evidence_table(drop, 3), 0.05, "")
    first = sel.splits
    first["n_clusters"] = 99  # the caller's copy: the selection keeps its own
    assert sel.candidates == [3, 12] and sel.splits["n_clusters"].tolist() == [3, 12]
    assert len(reads) == 1


def _unequal_groups(n_groups: int) -> np.ndarray:
    """Group ids, 12 to 80 items per group."""
    return np.repeat(np.arange(n_groups), np.linspace(12, 80, n_groups).astype(int))


def test_select_k_skips_a_weak_coarse_level():
    """Coarse partitions that agree on two halves of the groups, and on nothing finer, make
    a small early drop; the first drop alone took it (K=2 on 20 planted groups of unequal
    size, issue 28). A plateau of 9 candidates follows it, then the far stronger split of
    the groups: they are chosen."""
    rng = np.random.default_rng(0)
    n_groups = 12
    truth = _unequal_groups(n_groups)
    half = np.arange(n_groups) >= n_groups // 2
    h = n_groups // 2
    cols = []
    for k in range(2, 3 * n_groups + 4):
        for _ in range(4):
            if k < n_groups:  # merge groups only within each half
                a = k // 2
                lo = rng.permutation(np.arange(h) % a)
                hi = a + rng.permutation(np.arange(h) % (k - a))
                cols.append(np.where(half, np.tile(hi, 2), np.tile(lo, 2))[truth])
            else:
                parts = k // n_groups
                cols.append(truth * parts + rng.integers(0, parts, truth.size))
    sel = select_k(np.stack(cols, axis=1).astype(np.int32), random_state=0)
    drop = sel.table.set_index("n_clusters")["drop"]
    assert drop[2] >= sel.threshold  # the first drop alone chooses K=2
    assert sel.n_clusters == n_groups, sel.table
    assert {2, n_groups} <= set(sel.candidates)  # both levels reported
    assert "K=2 (" in sel.reason and "weak coarse level" in sel.reason


@pytest.mark.parametrize("plateau", [PLATEAU - 1, PLATEAU])
@pytest.mark.parametrize("ratio", [STRONGER * 0.9, STRONGER * 1.1])
def test_a_coarse_split_is_weak_only_before_a_long_plateau_and_a_much_stronger_split(
    plateau, ratio
):
    """A gradual descent, a short plateau or a finer split of comparable strength keep
    the first drop (ALL's lineages at K=2, iris, wine: the panel's K is unchanged)."""
    from scconsensus.core._resolution import _choose

    first, level = 0.06, 0.9
    envelope = np.r_[1.0, np.full(plateau + 1, level), 0.1, 0.1]
    drop = np.r_[first, np.zeros(plateau), first * ratio, 0.0, 0.0]
    Ks = np.arange(2, 2 + drop.size)
    K, _ = _choose(Ks, drop, envelope, 0.05, 100)
    weak = plateau >= PLATEAU and ratio >= STRONGER
    assert K == (Ks[plateau + 1] if weak else 2)


def test_select_k_reads_a_split_over_two_k_as_one():
    """Finer partitions that sometimes merge the two smallest groups leave a partial drop
    one K before the full one (K=19 of 20 unequal groups, issue 28): after a plateau, the
    split is one, read at its largest drop."""
    rng = np.random.default_rng(0)
    truth = _unequal_groups(12)
    cols = []
    for k in range(2, 40):
        for _ in range(4):
            if k < 12:
                cols.append(rng.permutation(np.arange(12) % k)[truth])
                continue
            col = truth * (k // 12) + rng.integers(0, k // 12, truth.size)
            if rng.random() < 0.5:  # the two smallest merged, the largest split once more
                col[truth == 1] = col[truth == 0][0]
                big = truth == 11
                col[big] = np.where(rng.random(big.sum()) < 0.5, col[big], col.max() + 1)
            cols.append(col)
    sel = select_k(np.stack(cols, axis=1).astype(np.int32), random_state=0)
    drop = sel.table.set_index("n_clusters")["drop"]
    assert drop[11] >= sel.threshold  # the first drop alone chooses K=11
    assert sel.n_clusters == 12, sel.table
    # one candidate, not 11 and 12: its span is in the record and the reason
    split = sel.splits[sel.splits["n_clusters"] == 12].iloc[0]
    assert (split.k_first, split.k_last) == (11, 12)
    assert 11 not in sel.candidates
    # quoted by its strength, as the other resolutions are
    said = f"its split drops over K=11-12, {split.strength:.3f} in all (one split, read at K=12)"
    assert said in sel.reason


def test_pl_k_selection_marks_the_stable_resolutions(three_blobs):
    import matplotlib

    matplotlib.use("Agg")
    adata = three_blobs.copy()
    scc.tl.ensemble(adata, random_state=0, progress=False)
    scc.tl.pcc(adata, progress=False)
    ax = scc.pl.k_selection(adata, "pcc", show=False)
    assert "stable resolutions" in [t.get_text() for t in ax.get_legend().get_texts()]
    # a fit at a given K reads no evidence: pointed to the run that chose K (a user trial
    # was told to run n_clusters='auto' with key_added='pcc_k5', a new result)
    scc.tl.pla(adata, n_clusters=[2], progress=False)
    with pytest.raises(ValueError, match=r"fit at a given K \(2\).*k_selection\(adata, 'pla'\)"):
        scc.pl.k_selection(adata, "pla_k2", show=False)


def test_pl_k_selection_marks_a_split_over_several_k_once():
    import matplotlib

    matplotlib.use("Agg")
    drop = [0.0] * 3 + [0.06, 0.3, 0.1] + [0.0] * 6 + [0.05]
    adata = ad.AnnData(np.zeros((3, 1)))
    table = evidence_table(drop, 5)
    adata.uns["pcc"] = {"k_selection": table, "k_selection_threshold": 0.05}
    ax = scc.pl.k_selection(adata, "pcc", show=False)
    (marks,) = [line for line in ax.get_lines() if line.get_label() == "stable resolutions"]
    assert marks.get_xdata().tolist() == [5, 14]  # the chosen K of the split, the later one
    assert [t.get_text() for t in ax.texts] == ["0.46", "0.05"]
    (span,) = ax.patches  # the split's span, K = 5-7
    assert span.get_x() == pytest.approx(4.5) and span.get_width() == pytest.approx(3.0)


@pytest.mark.parametrize(("gap", "full"), [(1, 0.66), (2, 0.66), (1, 0.06)])
def test_a_partial_drop_one_k_before_a_stronger_one_is_one_split(gap, full):
    """The evidence of 20 unequal groups at 100,000 cells (issue 28, some subsample seeds
    of ``select_k``): a weak coarse drop at K=3, a plateau, a partial drop at 18, none at
    19, the full one at 20. Read as two splits, the partial one (not 3x the coarse one)
    ended the skip and K=3 was chosen; one K apart, the second at least as strong, they
    are one split, read at 20. Two K apart, or a weaker second run, stay two splits; with no
    plateau between them they are one finer level, and K=3 is still skipped when one of
    them is 3x the coarse drop (K=21, as 20 unequal groups and a rare one of 0.5 % at
    10,000 cells gave: 0.057 at 18, 0.54 at 21)."""
    from scconsensus.core._resolution import _choose
    from scconsensus.core._splits import _runs

    drop = np.zeros(30)
    drop[1] = 0.055  # K=3
    drop[16] = 0.063  # K=18
    drop[16 + gap + 1] = full  # K=20 (or 21)
    envelope = 1.0 - np.r_[0.0, np.cumsum(drop)[:-1]]
    Ks = np.arange(2, 2 + drop.size)
    K, reason = _choose(Ks, drop, envelope, 0.05, 100)
    runs = _runs(drop, envelope, 0.05)
    if gap == 1 and full > 0.063:
        assert runs == [(1, 2), (16, 19)]
        assert K == 20 and "K=3 (0.055) is a weak coarse level" in reason
    else:
        assert runs == [(1, 2), (16, 17), (16 + gap + 1, 16 + gap + 2)]
        assert K == (21 if full > 0.063 else 3)
        if K == 21:
            assert "then a split at K=21 12.0 times as strong" in reason


@pytest.mark.parametrize(
    ("drops", "want"),
    [
        ({16: 0.063, 19: 0.06, 20: 0.5}, 22),  # the strong split is read at its largest drop
        ({10: 0.3, 16: 0.4}, 12),  # the first split 3x as strong, not the strongest
        ({10: 0.1, 14: 0.1, 30: 0.6}, 3),  # 32 is after another plateau: K=3 stays
    ],
)
def test_the_finer_level_after_a_plateau_is_read_at_its_first_strong_split(drops, want):
    """A weak coarse drop at K=3, a plateau, then splits without a plateau between them
    (one finer level): the first of them 3x as strong as the coarse one is chosen, read at
    its largest drop; a split after a further plateau is a level of its own."""
    from scconsensus.core._resolution import _choose

    drop = np.zeros(34)
    drop[1] = 0.055  # K=3
    for at, value in drops.items():
        drop[at] = value
    envelope = 1.0 - np.r_[0.0, np.cumsum(drop)[:-1]]
    K, reason = _choose(np.arange(2, 2 + drop.size), drop, envelope, 0.05, 100)
    assert K == want, reason


@pytest.mark.parametrize("seed", [1, 3])
def test_twenty_clear_groups_of_1000_cells_are_judged_not_cut_short(seed):
    """The default ensemble of 1,000 cells draws k up to 28: about 11 of its 100 partitions
    are finer than 20 groups. Needing 10 % of them finer to judge a K stopped the evidence
    before K = 20 on these seeds, and a weak coarse drop chose K = 2; at 5 % it is 20."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=3.0, size=(20, 50))
    truth = np.arange(1_000) % 20
    X = (centres[truth] + rng.standard_normal((1_000, 50))).astype(np.float32)
    labels = scc.core.generate_ensemble(X, random_state=seed).labels
    assert select_k(labels, random_state=seed).n_clusters == 20


def test_ten_unequal_groups_are_read_at_the_full_split_not_the_partial_one():
    """10 clear groups of Dirichlet(2) sizes (the smallest of 11 cells): the evidence drops
    by 0.069 at K = 9 (the smallest group is split off in part) and by 0.660 at 10, after
    7 candidates without a drop. Read at its first K (a plateau of 8 was needed) the split
    gave 9; read at its largest drop, 10."""
    rng = np.random.default_rng(0)
    centres = rng.normal(scale=3.0, size=(10, 50))
    truth = rng.choice(10, size=1_000, p=rng.dirichlet(np.full(10, 2.0)))
    X = (centres[truth] + rng.standard_normal((1_000, 50))).astype(np.float32)
    sel = select_k(scc.core.generate_ensemble(X, random_state=0).labels, random_state=0)
    assert sel.n_clusters == 10
    assert sel.splits[["k_first", "k_last"]].iloc[0].tolist() == [9, 10]


def test_more_clear_groups_than_the_ensemble_judges_give_a_lower_bound_not_k_2():
    """25 clear equal groups of 40 cells, k up to 28: coarse partitions merge them
    differently each time (``λ`` 0.65-0.75), the finest candidates agree (0.85), and a
    chance drop at K = 2 was the answer (ARI 0.07). The last K the evidence keeps is
    a lower bound, with a warning."""
    rng = np.random.default_rng(1)
    centres = rng.normal(scale=3.0, size=(25, 50))
    truth = np.arange(1_000) % 25
    X = (centres[truth] + rng.standard_normal((1_000, 50))).astype(np.float32)
    labels = scc.core.generate_ensemble(X, random_state=1).labels
    with pytest.warns(UserWarning, match="the data hold more groups than they can judge"):
        sel = select_k(labels, random_state=1)
    assert 20 <= sel.n_clusters <= 25
    assert "K=2 (" in sel.reason and "a lower bound" in sel.reason


def _past(eig, K=2, *, finest=30, n_partitions=100, later_split=False):
    """``_past_the_candidates`` on an evidence sequence over K = 2, 3, ... (the last two
    beyond the table), its drops computed as select_k computes them."""
    from scconsensus.core._resolution import _past_the_candidates

    eig = np.asarray(eig, dtype=float)
    Ks = np.arange(2, 2 + eig.size)
    envelope = np.minimum.accumulate(eig)
    drop = envelope[:-2] - np.maximum(eig[1:-1], eig[2:])
    if later_split:
        drop[6] = 0.1
    kw = {"finest": finest, "n_partitions": n_partitions, "threshold": 0.05}
    return _past_the_candidates(K, "chosen", Ks, eig, drop, **kw)[0]


RISING = [0.75, 0.68, 0.66, 0.70, 0.72, 0.75, 0.78, 0.80, 0.85, 0.86, 0.86]  # K = 2..12


@pytest.mark.parametrize(
    ("beyond", "bound"), [((0.86, 0.86), 14), ((0.86, 0.70), 13), ((0.78, 0.70), 12)]
)
def test_the_lower_bound_past_the_candidates_is_the_last_k_that_keeps_the_evidence(beyond, bound):
    with pytest.warns(UserWarning, match=f"K={bound} is only a lower bound"):
        assert _past(RISING + list(beyond)) == bound


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"eig": [*RISING[:8], 0.79, 0.8, 0.8, 0.8, 0.8]}, "the last three within 0.05"),
        ({"later_split": True}, "a split after the chosen one"),
        ({"eig": [*RISING[:10], 0.86, 0.5, 0.4]}, "a split at the last candidate"),
        ({"finest": 12}, "no partition finer than the table (or max_k bounds K)"),
        ({"n_partitions": 4}, "too few partitions"),
        (
            {"eig": [0.6, 0.52, 0.5, 0.55, 0.58, 0.6, 0.62, 0.65, 0.7, 0.7, 0.7, 0.7, 0.7]},
            "the last three keep 0.10 more, but not HELD",
        ),
        ({"eig": [*RISING[:8], 0.86, 0.86, 0.79, 0.86, 0.86]}, "their mean, not each, keeps more"),
        (
            {"eig": [0.6, 0.57, 0.54, 0.52, 0.5, 0.49, 0.48, 0.47, 0.46, 0.45, 0.44, 0.44, 0.43]},
            "no split, and the evidence falls",
        ),
    ],
)
def test_the_chosen_k_stands_unless_the_finest_candidates_keep_more(change, why):
    change = dict(change)  # the parameter is shared between runs
    eig = change.pop("eig", [*RISING, 0.86, 0.86])
    K = change.get("K", 2)
    assert _past(eig, **change) == K, why


def test_with_no_split_and_rising_evidence_the_largest_drop_gives_way_to_a_lower_bound():
    """No drop reaches the threshold (25 clear groups of 24 cells, every coarse partition
    merging them anew) and the evidence rises to the last candidates: not K = 2, the
    largest drop (0.00), but a lower bound."""
    eig = [0.72, 0.70, 0.72, 0.74, 0.76, 0.78, 0.80, 0.82, 0.84, 0.86, 0.86, 0.86, 0.86]
    with pytest.warns(UserWarning, match="than the largest drop at K=2"):
        assert _past(eig) == 14


def test_noise_keeps_too_little_evidence_for_a_lower_bound():
    """Gaussian noise: the evidence is low throughout (0.24-0.38 up to K = 19, read by 5
    partitions; 0.49 past it, by 3); a rise there is no sign of more groups (this seed gave
    a lower bound of K = 21 before ``HELD``)."""
    X = np.random.default_rng(3).standard_normal((1_000, 30))
    labels = scc.core.generate_ensemble(X, n_partitions=60, random_state=1).labels
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)
        sel = select_k(labels, random_state=1)
    assert "lower bound" not in sel.reason
    # what it says instead: no K is stable (the only warning)
    assert [str(w.message)[:48] for w in caught] == [
        "select_k: no number of clusters is stable in thi"
    ]


def test_no_drop_at_all_is_not_called_the_largest_drop():
    """A user trial read "the largest drop (-0.010)" on mockSCE as a bug: when nothing
    drops, the reason says so."""
    from scconsensus.core._resolution import _choose

    Ks = np.arange(2, 8)
    envelope = np.full(Ks.size, 0.4)
    drop = np.array([-0.02, -0.01, -0.03, -0.04, -0.05, -0.02])
    K, reason = _choose(Ks, drop, envelope, 0.05, 100, finest=8)
    assert K == 3 and "the largest change (none drops) (-0.010) is after K=3" in reason
    drop[1] = 0.02
    assert "the largest drop (0.020) is after K=3" in _choose(Ks, drop, envelope, 0.05, 100)[1]
