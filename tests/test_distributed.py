"""Ensembles and pair counts on a real Dask cluster equal the local run."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from anndata import AnnData

distributed = pytest.importorskip("distributed")

import joblib  # noqa: E402
from distributed import Client, LocalCluster, get_task_stream  # noqa: E402

import scconsensus as scc  # noqa: E402
from scconsensus.core._distributed import count_pairs_distributed  # noqa: E402
from scconsensus.core.coassociation import coassociation, sample_pairs  # noqa: E402
from scconsensus.core.ensemble import PartitionOptions, generate_ensemble  # noqa: E402


@pytest.fixture(scope="module")
def client():
    cluster = LocalCluster(
        n_workers=2, processes=True, threads_per_worker=1, dashboard_address=":0"
    )
    c = Client(cluster)
    yield c
    c.close()
    cluster.close()


def _blobs(n: int, p: int = 6, k: int = 4, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    truth = rng.integers(k, size=n)
    centers = rng.normal(scale=4.0, size=(k, p))
    return centers[truth] + rng.standard_normal((n, p)), truth


def _same(a, b) -> None:
    np.testing.assert_array_equal(a.labels, b.labels)
    pd.testing.assert_frame_equal(a.partitions, b.partitions)
    assert a.params == b.params


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:.*spectral partitions ran on a kNN graph")
def test_mixed_ensemble_on_cluster_equals_local(client):
    X, _ = _blobs(240)
    kw = dict(
        n_partitions=12,
        method=["kmeans", "hc", "pam", "spectral", "leiden", "kmeans_split"],
        k=(2, 6),
        options=PartitionOptions(subsample=0.8),
        random_state=7,
        progress=False,
    )
    local = generate_ensemble(X, **kw)
    with get_task_stream(client) as ts:
        remote = generate_ensemble(X, client=client, **kw)
    _same(local, remote)
    ran = [t for t in ts.data if t["key"].startswith("_run_partition")]
    assert len(ran) == 12
    # the work really was spread over both worker processes
    assert len({t["worker"] for t in ran}) == 2


def test_large_input_is_scattered_and_equal(client):
    # 2,500 x 6 float64 = 120 kB: above the scatter threshold, and with
    # feature subsampling and prediction of the unsampled items
    X, _ = _blobs(2500, p=6, k=5, seed=1)
    kw = dict(
        n_partitions=8,
        method="kmeans",
        k=(3, 8),
        options=PartitionOptions(subsample=0.5, feature_subsample=0.75, predict_unsampled=True),
        random_state=3,
        progress=False,
    )
    local = generate_ensemble(X, **kw)
    remote = generate_ensemble(X, client=client, **kw)
    _same(local, remote)
    assert (remote.labels >= 0).all()


def test_joblib_dask_backend_leaves_the_ensemble_on_local_threads(client):
    """The ensemble's threads ignore joblib's backend setting (``client=`` reaches a
    cluster, as the docs say): nothing runs on the cluster, and the result is the same."""
    from distributed import get_task_stream

    X, _ = _blobs(200, seed=2)
    kw = dict(n_partitions=6, method=["kmeans", "hc_average"], k=3, random_state=0)
    local = generate_ensemble(X, **kw, progress=False)
    with get_task_stream(client) as stream, joblib.parallel_config(backend="dask"):
        remote = generate_ensemble(X, n_jobs=-1, **kw, progress=False)
    assert stream.data == []
    _same(local, remote)


def test_tl_ensemble_and_coassociation_with_client(client, tmp_path):
    X, _ = _blobs(300, seed=4)
    a = AnnData(X)
    b = AnnData(X.copy())
    scc.tl.ensemble(a, 10, k=(2, 5), random_state=1)
    scc.tl.ensemble(b, 10, k=(2, 5), random_state=1, client=client)
    np.testing.assert_array_equal(a.obsm["scc_ensemble"], b.obsm["scc_ensemble"])
    pd.testing.assert_frame_equal(
        a.uns["scc_ensemble"]["partitions"], b.uns["scc_ensemble"]["partitions"]
    )
    scc.tl.coassociation(a, mode="sparse", n_random=8)
    scc.tl.coassociation(b, mode="sparse", n_random=8, client=client)
    for key in ("scc_coassoc_c", "scc_coassoc_n"):
        diff = a.obsp[key] != b.obsp[key]
        assert diff.nnz == 0
        np.testing.assert_array_equal(a.obsp[key].indices, b.obsp[key].indices)
    # nothing about the client leaks into what is written
    b.write_h5ad(tmp_path / "distributed.h5ad")


def test_pair_counts_on_cluster_equal_local(client):
    rng = np.random.default_rng(5)
    labels = rng.integers(-1, 4, size=(500, 20)).astype(np.int32)
    pairs = sample_pairs(500, rng.normal(size=(500, 3)), n_neighbors=5, n_random=6)
    C0, N0 = coassociation(labels, "sparse", pairs=pairs)
    C1, N1 = coassociation(labels, "sparse", pairs=pairs, client=client)
    for x, y in ((C0, C1), (N0, N1)):
        np.testing.assert_array_equal(x.indptr, y.indptr)
        np.testing.assert_array_equal(x.indices, y.indices)
        np.testing.assert_array_equal(x.data, y.data)
    # many small chunks, compared pair by pair with a brute-force count
    rows, cols = pairs[:, 0], pairs[:, 1]
    with get_task_stream(client) as ts:
        c, m = count_pairs_distributed(client, labels, rows, cols, chunk_size=97)
    assert len([t for t in ts.data if t["key"].startswith("_count_chunk")]) == -(-rows.size // 97)
    a, b = labels[rows], labels[cols]
    both = (a >= 0) & (b >= 0)
    np.testing.assert_array_equal(m, both.sum(axis=1))
    np.testing.assert_array_equal(c, (both & (a == b)).sum(axis=1))


def test_bad_client_is_refused():
    X, _ = _blobs(50)
    with pytest.raises(ValueError, match=r"dask\.distributed\.Client"):
        generate_ensemble(X, n_partitions=2, k=2, client="tcp://127.0.0.1:8786")
    with pytest.raises(ValueError, match=r"dask\.distributed\.Client"):
        coassociation(np.zeros((5, 2), dtype=np.int32), "sparse", pairs=[[0, 1]], client=object())


def test_closed_client_is_refused():
    cluster = LocalCluster(n_workers=1, processes=False, dashboard_address=":0")
    c = Client(cluster)
    c.close()
    cluster.close()
    X, _ = _blobs(50)
    with pytest.raises(ValueError, match="not running"):
        generate_ensemble(X, n_partitions=2, k=2, client=c)
