"""Within-cluster pairs drawn from the ensemble (kNN-free pair source for large n)."""

from __future__ import annotations

import numpy as np
import pytest

from scconsensus.core import coassociation, ensemble_pairs, generate_ensemble, pcc, sample_pairs
from scconsensus.metrics import adjusted_rand_index


def _labels(n=400, R=15, seed=0):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 6, size=(n, R)).astype(np.int32)
    labels[rng.random((n, R)) < 0.2] = -1
    return labels


def test_pairs_are_valid_and_co_clustered():
    labels = _labels()
    pairs = ensemble_pairs(labels, 8, random_state=1)
    n = labels.shape[0]
    assert pairs.dtype == np.int64 and pairs.shape[1] == 2
    assert (pairs[:, 0] < pairs[:, 1]).all() and pairs.max() < n
    assert np.unique(pairs[:, 0] * n + pairs[:, 1]).size == len(pairs)
    # nearly all pairs were co-clustered by some partition (the rest are the
    # fallback for items unsampled in every drawn partition: 0.2^4 of draws)
    a, b = labels[pairs[:, 0]], labels[pairs[:, 1]]
    co = ((a == b) & (a >= 0)).any(axis=1)
    assert co.mean() > 0.99
    # every item takes part
    assert np.unique(pairs).size == n


def test_seeded_and_distinct_seeds_differ():
    labels = _labels()
    np.testing.assert_array_equal(
        ensemble_pairs(labels, 5, random_state=3), ensemble_pairs(labels, 5, random_state=3)
    )
    assert not np.array_equal(
        ensemble_pairs(labels, 5, random_state=3), ensemble_pairs(labels, 5, random_state=4)
    )


def test_partner_drawn_uniformly_within_cluster():
    # one partition, two clusters of 50: partners of item 0 spread over its cluster
    labels = np.repeat([0, 1], 50).astype(np.int32)[:, None]
    pairs = ensemble_pairs(labels, 40, random_state=0)
    assert (labels[pairs[:, 0], 0] == labels[pairs[:, 1], 0]).all()
    partners = pairs[pairs[:, 0] == 0, 1]
    assert partners.size > 25 and partners.max() < 50


def test_bad_input():
    with pytest.raises(ValueError, match="n_per_item"):
        ensemble_pairs(_labels(), 0)
    with pytest.raises(ValueError):
        ensemble_pairs(np.zeros((5, 2, 2), dtype=np.int32))


@pytest.mark.slow
def test_sparse_pcc_on_ensemble_pairs_recovers_blobs():
    rng = np.random.default_rng(0)
    truth = rng.integers(4, size=600)
    X = rng.normal(scale=4.0, size=(4, 5))[truth] + rng.standard_normal((600, 5))
    ens = generate_ensemble(X, 20, "kmeans", k=(4, 8), random_state=0, progress=False)
    pairs = np.concatenate(
        [ensemble_pairs(ens.labels, 10, random_state=0), sample_pairs(600, n_random=20)]
    )
    C, N = coassociation(ens.labels, "sparse", pairs=pairs)
    res = pcc(C, N, 4, "kl", n_init=1, random_state=0)
    assert adjusted_rand_index(truth, res.labels) > 0.95


def _two_resolutions():
    """100 pool items: partition 0 puts items 0-9 in cluster 0, partition 1 items 0-89;
    items 100 (in both clusters 0), 101 (unsampled by partition 0), 102 (never sampled)."""
    labels = np.ones((103, 2), dtype=np.int32)
    labels[:10, 0] = labels[:90, 1] = 0
    labels[100] = 0
    labels[101] = [-1, 0]
    labels[102] = -1
    return labels


def test_finest_partitions_are_drawn_in_inverse_proportion_to_the_cluster_size():
    """Item 100 draws partition 0 (cluster of 10) with probability
    (1/10) / (1/10 + 1/90) = 0.9: partners outside items 0-9 come only from partition 1,
    0.1 x 80/90 = 0.089 of them (0.44 with partitions drawn uniformly)."""
    from scconsensus.core._ensemble_pairs import cluster_partners, finest_partners

    labels, pool = _two_resolutions(), np.arange(100)
    rng = np.random.default_rng(0)
    draws = 20_000
    second = finest_partners(labels, np.array([100, 101]), pool, draws, rng)
    first_item, second_item = second[:draws], second[draws:]
    assert first_item.max() < 90 and abs((first_item >= 10).mean() - 0.1 * 80 / 90) < 0.01
    # unsampled by partition 0: every partner from partition 1's cluster
    assert second_item.max() < 90 and (second_item >= 10).mean() > 0.85
    _, uniform = cluster_partners(labels, np.array([100]), pool, draws, np.random.default_rng(0))
    assert abs((uniform >= 10).mean() - 0.5 * 80 / 90) < 0.02


def test_finest_partners_of_an_item_no_partition_sampled_are_uniform_over_the_pool():
    from scconsensus.core._ensemble_pairs import finest_partners

    labels, pool = _two_resolutions(), np.arange(100)
    second = finest_partners(labels, np.array([102]), pool, 5_000, np.random.default_rng(1))
    assert second.min() >= 0 and second.max() < 100 and (second >= 90).mean() > 0.05


def test_finest_partners_are_seeded_and_skip_clusters_without_pool_members():
    """Same seed, same partners; item 1's clusters have no pool member in partition 0
    (id 5, above the pool's ids) nor in partition 1 (id 1, between the pool's 0 and 2),
    and partition 2 sampled no pool item: its partners are uniform over the pool."""
    from scconsensus.core._ensemble_pairs import finest_partners

    labels = np.array([[0, 0, -1], [5, 1, 0], [1, 2, -1], [0, 2, -1]], dtype=np.int32)
    pool, items = np.array([0, 2, 3]), np.array([1])
    draws = [
        finest_partners(labels, items, pool, 3000, np.random.default_rng(s)) for s in (4, 4, 5)
    ]
    np.testing.assert_array_equal(draws[0], draws[1])
    assert not np.array_equal(draws[0], draws[2])
    assert set(np.unique(draws[0])) == {0, 1, 2}
