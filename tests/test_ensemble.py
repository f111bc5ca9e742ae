import warnings

import numpy as np
import pytest

from scconsensus.core.ensemble import METHODS, PartitionOptions, generate_ensemble
from scconsensus.metrics import adjusted_rand_index


@pytest.mark.parametrize("method", METHODS)
def test_every_method_runs(blobs, method):
    X, y = blobs
    ens = generate_ensemble(
        X, 4, method, k=3, random_state=0, progress=False, options=PartitionOptions(subsample=0.9)
    )
    assert ens.labels.shape == (X.shape[0], 4)
    assert ens.labels.dtype == np.int32
    assert ((ens.labels >= 0).sum(axis=0) == round(0.9 * X.shape[0])).all()
    assert (ens.partitions["method"] == method).all()
    assert (ens.partitions["n_clusters"] >= 1).all()
    # clusters are labelled 0..k-1 with none empty
    for col in ens.labels.T:
        used = np.unique(col[col >= 0])
        np.testing.assert_array_equal(used, np.arange(used.size))
    if method in ("kmeans", "hc", "hc_average", "hc_ward", "pam", "spectral"):
        sampled = ens.labels[:, 0] >= 0
        assert adjusted_rand_index(y[sampled], ens.labels[sampled, 0]) > 0.9


@pytest.mark.parametrize("distance", ["euclidean", "pearson", "spearman", "cosine"])
def test_hc_distances(blobs, distance):
    X, _ = blobs
    ens = generate_ensemble(
        X + 10, 2, "hc", k=3, progress=False, options=PartitionOptions(distance=distance)
    )
    assert (ens.partitions["distance"] == distance).all()
    assert ens.labels.max() <= 2


@pytest.mark.slow
def test_deterministic_across_n_jobs(blobs):
    X, _ = blobs
    kw = dict(method=["kmeans", "hc_average", "leiden", "pam"], k=(2, 6), random_state=7)
    a = generate_ensemble(X, 8, progress=False, n_jobs=1, **kw)
    b = generate_ensemble(X, 8, progress=False, n_jobs=2, **kw)
    np.testing.assert_array_equal(a.labels, b.labels)
    assert a.partitions.equals(b.partitions)
    c = generate_ensemble(X, 8, progress=False, n_jobs=1, **dict(kw, random_state=8))
    assert not np.array_equal(a.labels, c.labels)


def test_k_range_list_and_split(blobs):
    X, _ = blobs
    ens = generate_ensemble(X, 30, "kmeans", k=(2, 5), progress=False)
    assert set(ens.partitions["k"]) <= {2, 3, 4, 5} and len(set(ens.partitions["k"])) > 1
    ens = generate_ensemble(X, 6, "kmeans", k=[3, 7], progress=False)
    assert ens.partitions["k"].tolist() == [3, 7, 3, 7, 3, 7]
    ens = generate_ensemble(
        X, 5, "kmeans_split", progress=False, options=PartitionOptions(subsample=1.0)
    )
    n = X.shape[0]
    assert ens.partitions["k"].between(np.ceil(np.sqrt(n) / 2), np.floor(np.sqrt(n))).all()


def test_mixed_methods_cycle(blobs):
    X, _ = blobs
    ens = generate_ensemble(X, 6, ["hc_single", "kmeans", "spectral"], k=3, progress=False)
    assert ens.partitions["method"].tolist() == ["hc_single", "kmeans", "spectral"] * 2


def test_feature_subsample(blobs):
    X, _ = blobs
    ens = generate_ensemble(
        X, 3, "kmeans", k=3, progress=False, options=PartitionOptions(feature_subsample=0.5)
    )
    assert ens.labels.shape == (X.shape[0], 3)


@pytest.mark.parametrize("how", [True, "centroid", "neighbor"])
def test_predict_unsampled(blobs, how):
    X, y = blobs
    ens = generate_ensemble(
        X,
        3,
        ["kmeans", "hc_single"],
        k=3,
        progress=False,
        options=PartitionOptions(subsample=0.3, predict_unsampled=how),
    )
    assert (ens.labels >= 0).all()
    assert adjusted_rand_index(y, ens.labels[:, 0]) > 0.9


def test_sparse_input(blobs):
    import scipy.sparse as sp

    X, _ = blobs
    ens = generate_ensemble(sp.csr_matrix(np.abs(X)), 2, "kmeans", k=3, progress=False)
    assert ens.labels.shape == (X.shape[0], 2)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(X=np.array([[np.nan, 1.0], [0.0, 1.0], [1.0, 2.0]])), "NaN"),
        (dict(X=np.array([[np.inf, 1.0], [0.0, 1.0], [1.0, 2.0]])), "NaN or infinite"),
        (dict(X=np.ones((1, 3))), "at least 3"),
        (dict(k=120), "too large"),
        (dict(k=(2, 500)), "too large"),
        (dict(k=1), "at least 2"),
        (dict(method="dbscan"), "not supported"),
        (dict(options=PartitionOptions(subsample=0.0)), r"subsample must be in \(0, 1\]"),
        (dict(options=PartitionOptions(subsample=1.5)), r"subsample must be in \(0, 1\]"),
        (dict(options=PartitionOptions(feature_subsample=-1)), "feature_subsample"),
        (dict(n_partitions=0), "positive integer"),
        (dict(options=PartitionOptions(distance="manhattan")), "distance"),
        (dict(X=np.ones(10)), "2-D"),
        (dict(options=PartitionOptions(predict_unsampled="maybe")), "predict_unsampled"),
    ],
)
def test_bad_input(blobs, kwargs, match):
    X, _ = blobs
    args = dict(X=X, n_partitions=2, method="kmeans", k=3, progress=False)
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        generate_ensemble(**args)


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_partitions_run_on_one_blas_and_openmp_thread(monkeypatch, n_jobs):
    """Each partition is single-threaded whatever the caller set (partitions are the unit
    of parallelism), also side by side on threads, and the caller's setting is back
    afterwards."""
    from threadpoolctl import threadpool_info, threadpool_limits

    from scconsensus.core import ensemble

    def threads():
        # BLAS and scikit-learn's OpenMP (k-means); numba's pool is sized by numba itself
        return [
            i["num_threads"]
            for i in threadpool_info()
            if i["user_api"] == "blas" or "scikit_learn" in i["filepath"]
        ]

    seen = []
    real = ensemble._partition

    def partition(*args):
        seen.extend(threads())
        return real(*args)

    monkeypatch.setattr(ensemble, "_partition", partition)
    X = np.random.default_rng(0).normal(size=(60, 5))
    with threadpool_limits(limits=2):
        before = threads()
        generate_ensemble(X, 6, "kmeans", k=(2, 3), n_jobs=n_jobs, progress=False)
        assert threads() == before
    assert seen and set(seen) == {1}


def test_duplicate_points_give_one_warning_for_the_ensemble():
    """A constant representation: sklearn warned once per partition (200 lines at the CLI)."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    X = np.zeros((60, 3))
    X[:2] = 1.0  # two distinct points: every k > 2 finds at most 2 clusters
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        generate_ensemble(X, 12, "kmeans", k=4, progress=False)
    assert not [w for w in record if issubclass(w.category, ConvergenceWarning)]
    fewer = [str(w.message) for w in record if "fewer clusters than asked" in str(w.message)]
    assert len(fewer) == 1 and fewer[0].startswith("12 of 12 partitions"), fewer


def test_leiden_clusters_the_given_graph_not_x(blobs):
    # the graph's groups cut across X's blobs: partitions must follow the graph
    X, _ = blobs
    n = X.shape[0]
    groups = np.random.default_rng(0).permutation(np.arange(n) % 4)
    same = groups[:, None] == groups[None, :]
    graph = np.where(same & ~np.eye(n, dtype=bool), 1.0, 0.0)
    ens = generate_ensemble(X, 3, "leiden", k=4, graph=graph, random_state=1, progress=False)
    for col in ens.labels.T:
        sampled = col >= 0
        assert adjusted_rand_index(groups[sampled], col[sampled]) == 1.0


def test_leiden_resolution_calibrated_to_k():
    from sklearn.datasets import make_blobs

    X, y = make_blobs(n_samples=400, centers=3, cluster_std=0.5, random_state=0)
    ens = generate_ensemble(X, 4, "leiden", k=3, random_state=0, progress=False)
    lo, hi = ens.params["resolution"]
    assert lo == hi and (ens.partitions["resolution"] == lo).all()
    for col in ens.labels.T:
        sampled = col >= 0
        assert adjusted_rand_index(y[sampled], col[sampled]) > 0.9
    wide = generate_ensemble(X, 20, "leiden", k=(3, 15), random_state=0, progress=False)
    found = wide.partitions["n_clusters"]
    lo, hi = wide.params["resolution"]
    assert lo < hi and found.min() <= 4 and found.max() >= 11
    given = generate_ensemble(
        X, 2, "leiden", progress=False, options=PartitionOptions(resolution=(0.5, 0.5))
    )
    assert list(given.params["resolution"]) == [0.5, 0.5]


def test_large_kmeans_partition_fits_a_sample_and_assigns_the_rest(blobs, monkeypatch):
    """Above KMEANS_FIT_ITEMS sampled items, centroids come from a random sample of that
    many (the 10^6-cell route); every sampled item still gets its nearest centroid."""
    from sklearn.cluster import KMeans

    from scconsensus.core import ensemble as ens_module

    X, truth = blobs
    monkeypatch.setattr(ens_module, "KMEANS_FIT_ITEMS", 40)
    fitted_rows = []
    fit = KMeans.fit

    def spy(self, X_fit, *args, **kwargs):
        fitted_rows.append(X_fit.shape[0])
        return fit(self, X_fit, *args, **kwargs)

    monkeypatch.setattr(KMeans, "fit", spy)
    ens = generate_ensemble(
        X, 6, "kmeans", k=3, random_state=0, progress=False, options=PartitionOptions(subsample=0.9)
    )
    assert fitted_rows and max(fitted_rows) == 40
    for col in ens.labels.T:
        sampled = col >= 0
        assert sampled.sum() > 40
        assert adjusted_rand_index(truth[sampled], col[sampled]) > 0.9
    again = generate_ensemble(
        X, 6, "kmeans", k=3, random_state=0, n_jobs=2, options=PartitionOptions(subsample=0.9)
    )
    np.testing.assert_array_equal(ens.labels, again.labels)


@pytest.mark.parametrize("sparse", [False, True])
def test_kmeans_assignment_in_blocks_is_the_nearest_centroid(blobs, monkeypatch, sparse):
    """Sampled items are assigned in blocks of rows read from X (no copy of the whole
    subsample): the labels are the model's prediction on the subsample at once, with and
    without a feature subsample, for dense and sparse X."""
    import scipy.sparse as sp
    from sklearn.cluster import KMeans

    from scconsensus.core import ensemble as ens_module

    X, _ = blobs
    monkeypatch.setattr(ens_module, "KMEANS_FIT_ITEMS", 30)
    monkeypatch.setattr(ens_module, "_ASSIGN_BLOCK", 7)
    models = []
    fit = KMeans.fit

    def spy(self, X_fit, *args, **kwargs):
        models.append(self)
        return fit(self, X_fit, *args, **kwargs)

    monkeypatch.setattr(KMeans, "fit", spy)
    Xin = sp.csr_matrix(X) if sparse else X
    for feats in (None, np.array([0, 1])):
        models.clear()
        items = np.arange(0, X.shape[0], 2)
        labels = ens_module._kmeans(Xin, items, feats, 3, seed=4)
        rows = X[items] if feats is None else X[items][:, feats]
        np.testing.assert_array_equal(labels, models[0].predict(rows))


def test_relabel_numbers_clusters_in_id_order():
    from scconsensus.core._methods import relabel

    for lab in ([5, 3, 3, 9], [-1, 2, 2, 0], [10**6, 3], [10**12, 3], [0], [2, 2]):
        lab = np.asarray(lab)
        want = np.unique(lab, return_inverse=True)[1].astype(np.int32)
        np.testing.assert_array_equal(relabel(lab), want)


def test_leiden_on_a_shared_graph_copies_no_rows_of_x(blobs, monkeypatch):
    """Leiden partitions of one shared graph cluster its subgraphs: no copy of their
    subsample's rows of X (320 MB a partition at 10^6 x 50); with a feature subsample each
    builds the kNN graph of its own rows."""
    from scconsensus.core import ensemble as ens_module

    X, _ = blobs
    copied = []
    rows = ens_module._rows
    monkeypatch.setattr(ens_module, "_rows", lambda *a, **kw: copied.append(1) or rows(*a, **kw))
    generate_ensemble(X, 3, "leiden", k=3, options=PartitionOptions(subsample=0.8), progress=False)
    assert not copied
    options = PartitionOptions(subsample=0.8, feature_subsample=0.5)
    generate_ensemble(X, 3, "leiden", k=3, options=options, progress=False)
    assert len(copied) == 3


def test_float32_input_stays_float32_for_kmeans_only(blobs, monkeypatch):
    """scanpy's float32 ``X_pca`` is clustered by k-means in float32 (no float64 copy of
    X: 400 MB and a third of each partition's time at 10^6 x 50); hierarchical, PAM and
    spectral partitions get float64 rows, so their labels are those of float64 input."""
    from sklearn.cluster import KMeans

    X, truth = blobs
    X32 = X.astype(np.float32)
    dtypes = []
    fit = KMeans.fit

    def spy(self, X_fit, *args, **kwargs):
        dtypes.append(X_fit.dtype)
        return fit(self, X_fit, *args, **kwargs)

    monkeypatch.setattr(KMeans, "fit", spy)
    ens = generate_ensemble(X32, 4, "kmeans", k=3, random_state=0, progress=False)
    assert dtypes and set(dtypes) == {np.dtype(np.float32)}
    assert all(adjusted_rand_index(truth[col >= 0], col[col >= 0]) > 0.9 for col in ens.labels.T)
    for method in ("hc", "pam", "spectral"):
        kw = {"k": 3, "random_state": 0, "progress": False}
        a, b = (
            generate_ensemble(X32, 3, method, **kw),
            generate_ensemble(X32.astype(float), 3, method, **kw),
        )
        np.testing.assert_array_equal(a.labels, b.labels)
    dtypes.clear()
    generate_ensemble(X.astype(np.int64), 2, "kmeans", k=3, progress=False)
    assert set(dtypes) == {np.dtype(np.float64)}


def test_check_matrix_keeps_float32_only_when_asked():
    import scipy.sparse as sp

    from scconsensus._validation import check_matrix

    X = np.ones((3, 2), dtype=np.float32)
    assert check_matrix(X).dtype == np.float64
    assert check_matrix(X, keep_float32=True).dtype == np.float32
    assert check_matrix(sp.csr_matrix(X), keep_float32=True).dtype == np.float32
    assert check_matrix(X.astype(np.int32), keep_float32=True).dtype == np.float64
    assert check_matrix([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], keep_float32=True).dtype == np.float64


def test_unsampled_items_are_predicted_from_their_own_rows():
    """``predict_unsampled`` copies the unsampled rows only: each partition made a dense
    float64 copy of all of X (a sparse X densified whole, plus its float64 copy for float32
    input), a peak of 5.7x the dense float32 X here against 3.3x; the labels are those
    of float64 input."""
    import tracemalloc

    import scipy.sparse as sp

    n, p = 4000, 2000
    X = sp.random(n, p, density=0.02, format="csr", random_state=0, dtype=np.float32)
    X.data += np.repeat(np.arange(4), n // 4)[np.repeat(np.arange(n), np.diff(X.indptr))]
    options = PartitionOptions(subsample=0.8, predict_unsampled=True)
    kw = {"k": 4, "options": options, "random_state": 0, "progress": False}
    tracemalloc.start()
    try:
        ens = generate_ensemble(X, 2, "leiden", **kw)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 * n * p * 4
    assert (ens.labels >= 0).all()
    np.testing.assert_array_equal(
        ens.labels, generate_ensemble(X.astype(float), 2, "leiden", **kw).labels
    )


def test_a_disconnected_spectral_graph_is_said_once_for_the_ensemble():
    """A user trial: scikit-learn's "not fully connected" warning came once per partition
    (20 for 20), inside the progress bar's line; now one warning counts them."""
    from sklearn.datasets import make_blobs

    X, _ = make_blobs(300, 5, centers=3, random_state=0, cluster_std=0.3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        generate_ensemble(X, 6, method="spectral", k=3, random_state=0)
    said = [str(w.message) for w in caught if "connected" in str(w.message)]
    assert len(said) == 1 and said[0].startswith("6 of 6 spectral partitions"), said
    # counted among the spectral partitions of a mixed ensemble (a user trial: "2 of 10")
    mixed = ["spectral", "kmeans", "kmeans", "kmeans", "kmeans"]
    with pytest.warns(UserWarning, match=r"^2 of 2 spectral partitions"):
        generate_ensemble(X, 10, method=mixed, k=3, random_state=0)


def test_square_subsamples_of_spectral_partitions_raise_no_sklearn_warning():
    """A user trial: 63 samples x 50 PCs, subsample 0.8 -> 50 x 50: scikit-learn took each
    square subsample for an affinity matrix and warned once per partition."""
    from sklearn.datasets import make_blobs

    X, _ = make_blobs(63, 50, centers=3, random_state=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        generate_ensemble(X, 5, method="spectral", k=3, random_state=0)
    assert not [w for w in caught if "affinity" in str(w.message)], caught


def test_tl_ensemble_records_its_seed_as_the_methods_do(tmp_path):
    """A user trial: "Generator(PCG64)" in the ensemble's record, "custom" in PCC's; None
    was the string "None". Now one rule, and h5ad keeps it."""
    import anndata as ad

    import scconsensus as scc

    seeds = {"a": None, "b": np.random.default_rng(0), "c": np.int64(3)}
    adata = scc.datasets.iris()
    for key, seed in seeds.items():
        scc.tl.ensemble(adata, 5, k=3, random_state=seed, key_added=key, progress=False)
    records = [adata.uns[key]["params"]["random_state"] for key in seeds]
    assert records[0] is None and records[1] == "custom" and type(records[2]) is int
    adata.write_h5ad(tmp_path / "e.h5ad")
    back = ad.read_h5ad(tmp_path / "e.h5ad")
    assert [back.uns[key]["params"].get("random_state") for key in "bc"] == ["custom", 3]
    # tl.coassociation too (a docs audit: it recorded "Generator(PCG64)")
    scc.tl.coassociation(adata, "a", mode="sparse", random_state=seeds["b"], key_added="co")
    assert adata.uns["co"]["params"]["random_state"] == "custom"
