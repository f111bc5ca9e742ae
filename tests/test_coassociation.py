import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from scconsensus import settings as scc_settings
from scconsensus.core.coassociation import coassociation, pairs_from_sparse, sample_pairs


def brute_force(labels):
    n, r = labels.shape
    C = np.zeros((n, n), dtype=int)
    N = np.zeros((n, n), dtype=int)
    for i in range(n):
        for j in range(n):
            for p in range(r):
                a, b = labels[i, p], labels[j, p]
                if a >= 0 and b >= 0:
                    N[i, j] += 1
                    C[i, j] += a == b
    return C, N


label_matrices = st.tuples(st.integers(2, 12), st.integers(1, 8)).flatmap(
    lambda shape: arrays(np.int32, shape, elements=st.integers(-1, 4))
)


@settings(max_examples=60, deadline=None)
@given(label_matrices)
def test_dense_matches_brute_force(labels):
    C, N = coassociation(labels)
    C_ref, N_ref = brute_force(labels)
    np.testing.assert_array_equal(C, C_ref)
    np.testing.assert_array_equal(N, N_ref)


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(label_matrices, st.integers(0, 2**16))
def test_sparse_equals_dense_on_sampled_pairs(labels, seed):
    n = labels.shape[0]
    pairs = sample_pairs(n, n_random=3, random_state=seed)
    C, N = coassociation(labels)
    Cs, Ns = coassociation(labels, "sparse", pairs=pairs)
    rows, cols, c, m = pairs_from_sparse(Cs, Ns)
    np.testing.assert_array_equal(c, C[rows, cols])
    np.testing.assert_array_equal(m, N[rows, cols])
    # every sampled pair with N > 0 is present, nothing else
    expected = {(i, j) for i, j in pairs if N[i, j] > 0}
    assert set(zip(rows.tolist(), cols.tolist(), strict=True)) == expected


@settings(max_examples=40, deadline=None)
@given(label_matrices)
def test_invariants(labels):
    C, N = coassociation(labels)
    r = labels.shape[1]
    assert (C == C.T).all() and (N == N.T).all()
    assert (C >= 0).all() and (C <= N).all() and (N <= r).all()
    np.testing.assert_array_equal(np.diag(C), (labels >= 0).sum(axis=1))
    np.testing.assert_array_equal(np.diag(N), np.diag(C))


def test_sparse_pattern_shared_and_symmetric(rng):
    labels = rng.integers(-1, 3, size=(40, 15))
    Cs, Ns = coassociation(labels, "sparse", pairs=sample_pairs(40, n_random=5))
    assert sp.isspmatrix_csr(Cs) and sp.isspmatrix_csr(Ns)
    np.testing.assert_array_equal(Cs.indptr, Ns.indptr)
    np.testing.assert_array_equal(Cs.indices, Ns.indices)
    assert abs(Cs - Cs.T).sum() == 0 and abs(Ns - Ns.T).sum() == 0
    assert Ns.diagonal().sum() == 0
    assert (Cs.data <= Ns.data).all() and (Ns.data > 0).all()
    assert (Cs.data == 0).any()  # explicit zeros are kept


def test_sample_pairs_knn_and_random(blobs):
    X, _ = blobs
    pairs = sample_pairs(X.shape[0], X, n_neighbors=5, n_random=0)
    assert (pairs[:, 0] < pairs[:, 1]).all()
    assert len(np.unique(pairs, axis=0)) == len(pairs)
    # every item appears with its nearest neighbour
    d = ((X[:, None] - X[None]) ** 2).sum(-1)
    np.fill_diagonal(d, np.inf)
    nearest = d.argmin(axis=1)
    present = {tuple(p) for p in pairs.tolist()}
    assert all((min(i, j), max(i, j)) in present for i, j in enumerate(nearest))
    a = sample_pairs(X.shape[0], n_random=4, random_state=1)
    b = sample_pairs(X.shape[0], n_random=4, random_state=1)
    np.testing.assert_array_equal(a, b)


def test_bad_input():
    with pytest.raises(ValueError, match="at least 2"):
        coassociation(np.zeros((1, 3), dtype=int))
    with pytest.raises(ValueError, match="-1"):
        coassociation(np.full((3, 2), -2))
    with pytest.raises(ValueError, match="needs pairs"):
        coassociation(np.zeros((3, 2), dtype=int), "sparse")
    with pytest.raises(ValueError, match=r"\(m, 2\)"):
        coassociation(np.zeros((3, 2), dtype=int), "sparse", pairs=np.zeros((4, 3), dtype=int))
    with pytest.raises(ValueError, match="outside"):
        coassociation(np.zeros((3, 2), dtype=int), "sparse", pairs=np.array([[0, 5]]))
    with pytest.raises(ValueError, match="mode"):
        coassociation(np.zeros((3, 2), dtype=int), "blocky")


def test_memory_guard(monkeypatch):
    monkeypatch.setattr(scc_settings, "max_dense_bytes", 1000)
    with pytest.raises(MemoryError, match="mode='sparse'"):
        coassociation(np.zeros((100, 2), dtype=int))


@pytest.mark.parametrize("scale", [10**7, 10**9])
def test_large_label_values_cost_what_their_clusters_cost(scale):
    # counts depend on which labels are equal, never on their values: one-hot columns
    # per label value made 10**7 take 6.5 s and 740 MB for 60 items, 10**9 a MemoryError
    labels = np.repeat([[0, 0, 1], [1, 1, 0], [2, 2, 2]], 20, axis=0)
    labels[::7, 1] = -1  # unsampled items stay unsampled after the renumbering
    big = np.where(labels >= 0, labels * scale + 3, -1)
    C, N = coassociation(big)
    C0, N0 = coassociation(labels)
    assert np.array_equal(C, C0) and np.array_equal(N, N0)
    assert np.array_equal(C, brute_force(labels)[0])


def test_compact_labels_keeps_order_and_unsampled():
    from scconsensus.core._labels import compact_labels

    labels = np.array([[9, 0, 5], [-1, 0, 7], [3, 1, -1], [9, 1, 5]], dtype=np.int32)
    out = compact_labels(labels)
    assert out.tolist() == [[1, 0, 0], [-1, 0, 1], [0, 1, -1], [1, 1, 0]]
    assert compact_labels(out) is out  # already compact: no copy
    # a caller that knows the numbering skips the check, or goes straight to renumbering
    assert compact_labels(out, numbered=True) is out
    assert np.array_equal(compact_labels(labels, numbered=False), out)
    assert compact_labels(out, numbered=False).tolist() == out.tolist()


@pytest.mark.parametrize("shift", [0, 1, 10**9])
def test_partition_sizes_count_the_ids_in_use(shift):
    from scconsensus.core import partition_sizes

    # 0-based (the fast path), 1-based and sparse ids (counted per column), a partition
    # that sampled nothing, and one with a gap in its ids
    labels = np.array([[0, 2, -1, 0], [1, 0, -1, 3], [1, 2, -1, 3], [-1, 0, -1, 0]])
    shifted = np.where(labels >= 0, labels + shift, -1).astype(np.int32)
    assert partition_sizes(shifted).tolist() == [2, 2, 0, 2]
    numbered = np.where(labels >= 0, labels.clip(0, 1) + shift, -1).astype(np.int32)
    assert partition_sizes(numbered).tolist() == [2, 2, 0, 2]
