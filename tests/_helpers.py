"""Test data and independent reference computations shared by several test files."""

from __future__ import annotations

import io
from contextlib import contextmanager

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp


def planted(n_per=15, k=3, R=30, noise=0.15, missing=0.0, seed=0):
    """Ensemble of noisy copies of a planted partition (optionally sub-sampled).

    Returns ``(truth, labels)``: ``k`` groups of ``n_per`` items, and ``R`` partitions in
    which each label is redrawn with probability ``noise`` and left out (``-1``) with
    probability ``missing``. ``missing=None`` skips that draw altogether: no item is left
    out, and the random stream (so the data) differs from ``missing=0.0``.
    """
    rng = np.random.default_rng(seed)
    truth = np.repeat(np.arange(k), n_per)
    n = truth.size
    cols = []
    for _ in range(R):
        lab = np.where(rng.random(n) < noise, rng.integers(0, k, n), truth)
        if missing is not None:
            lab = np.where(rng.random(n) < missing, -1, lab)
        cols.append(lab)
    return truth, np.stack(cols, axis=1).astype(np.int32)


def np_kkt_gap(C, N, Y, name):
    """Independent numpy KKT gap of PCC (eq. 6) for ``"kl"`` or ``"l2"``.

    Returns ``(gap, scale)``: the largest ``max_{v in supp} g_iv - min_v g_iv`` over items,
    and the mean co-sampled weight per item that the solvers' relative tolerance uses.
    """
    C = np.asarray(C, float)
    N = np.asarray(N, float).copy()
    np.fill_diagonal(N, 0)
    P = np.divide(C, N, out=np.zeros_like(C), where=N > 0)
    Q = np.clip(Y @ Y.T, 0.0, 1.0)
    if name == "l2":
        D = 2 * (Q - P)
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            D = np.where(P > 0, -P / Q, 0.0) + np.where(P < 1, (1 - P) / (1 - Q), 0.0)
    with np.errstate(invalid="ignore"):
        G = np.where(N > 0, N * D, 0.0) @ Y
    gap = max(G[i][Y[i] > 0].max() - G[i].min() for i in range(Y.shape[0]))
    return gap, N.sum() / N.shape[0]


def block_matrix(sizes, within=1.0, between=0.0):
    """Consensus-like matrix with constant values within and between blocks.

    ``within``: one value, or one per block; ``between``: one value, or a ``(k, k)``
    array of block-to-block values. The diagonal is one. Returns ``(M, block_labels)``.
    """
    lab = np.repeat(np.arange(len(sizes)), sizes)
    k = len(sizes)
    B = np.broadcast_to(np.asarray(between, dtype=float), (k, k)).copy()
    np.fill_diagonal(B, np.broadcast_to(np.asarray(within, dtype=float), (k,)))
    M = B[lab][:, lab]
    np.fill_diagonal(M, 1.0)
    return M, lab


def same(a, b) -> bool:
    """Deep equality of AnnData slots (arrays, frames, sparse, nested dicts)."""
    if isinstance(a, dict) or (hasattr(a, "keys") and not isinstance(a, pd.DataFrame)):
        return set(a.keys()) == set(b.keys()) and all(same(a[k], b[k]) for k in a.keys())
    if isinstance(a, pd.DataFrame | pd.Series):
        return type(a) is type(b) and a.equals(b)
    if sp.issparse(a):
        return sp.issparse(b) and a.shape == b.shape and (a != b).nnz == 0
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
    if isinstance(a, float) and np.isnan(a):
        return isinstance(b, float) and np.isnan(b)
    return bool(a == b)


def assert_unchanged(before, after) -> None:
    """Every slot of the AnnData ``after`` equals that of the copy ``before``."""
    for slot in ("X", "obs", "var", "obsm", "obsp", "uns", "layers"):
        assert same(getattr(before, slot), getattr(after, slot)), f".{slot} changed"


def fails_cleanly(fn, adata, match, *args, raises=ValueError, **kwargs):
    """``fn(adata, ...)`` raises ``raises`` matching ``match``, and ``adata`` is untouched."""
    before = adata.copy()
    with pytest.raises(raises, match=match):
        fn(adata, *args, **kwargs)
    assert_unchanged(before, adata)


def knn_dtypes(monkeypatch) -> list:
    """The dtype of every matrix the kNN pairs are searched in, as the run goes."""
    from scconsensus.core import coassociation

    seen = []
    knn = coassociation.knn_indices
    monkeypatch.setattr(
        coassociation, "knn_indices", lambda X, *a, **kw: seen.append(X.dtype) or knn(X, *a, **kw)
    )
    return seen


@contextmanager
def scanpy_log(verbosity: str = "warning"):
    """Everything scanpy's logger writes at ``verbosity`` during the block."""
    import scanpy as sc

    buffer = io.StringIO()
    before = sc.settings.verbosity, sc.settings.logfile
    sc.settings.verbosity, sc.settings.logfile = verbosity, buffer
    try:
        yield buffer
    finally:
        sc.settings.verbosity, sc.settings.logfile = before


def evidence_table(drop: list[float], chosen: int) -> pd.DataFrame:
    """A :attr:`~scconsensus.core.KSelection.table` from K = 2 on with the drops ``drop``
    (the envelope falls by each drop)."""
    drop = np.asarray(drop, dtype=float)
    Ks = np.arange(2, 2 + drop.size)
    envelope = 1.0 - np.r_[0.0, np.cumsum(drop)[:-1]]
    return pd.DataFrame(
        {
            "n_clusters": Ks,
            "eigenvalue": envelope,
            "envelope": envelope,
            "drop": drop,
            "n_partitions": np.full(drop.size, 50),
            "chosen": Ks == chosen,
        }
    )


def digests_for_numba_threads(setup: str, call: str) -> list[str]:
    """SHA-256 of ``call``'s array after ``setup``, with 1, 2 and 4 numba threads in one
    fresh interpreter (numba reads its thread ceiling once, at import)."""
    import os
    import subprocess
    import sys

    script = (
        f"import hashlib, numba, numpy as np\n{setup}\n"
        "for t in (1, 2, 4):\n"
        "    numba.set_num_threads(t)\n"
        f"    out = {call}\n"
        "    print(hashlib.sha256(out.tobytes()).hexdigest())\n"
    )
    env = {**os.environ, "NUMBA_NUM_THREADS": "4"}
    run = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
    digests = run.stdout.split()
    assert len(digests) == 3, run.stderr[-2000:]
    return digests
