"""Ensemble runs: which run of :func:`scconsensus.tl.ensemble` built an ensemble's labels.

``tl.ensemble`` marks every item with its run's id (``.obsm[f"{key}_run"]``); the
consensus tools refuse an ensemble joining several runs, and a result records the run
it was fitted to, so that a reader can tell an ensemble rebuilt since.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from anndata import AnnData


def run_key(ensemble_key: str) -> str:
    """The ``.obsm`` key that marks which ensemble run each item was built in."""
    return f"{ensemble_key}_run"


def ensemble_run_ids(labels: np.ndarray) -> np.ndarray:
    """``(n, 1)`` int32: one id for every item, a digest of the ensemble's labels.

    Deterministic (the same seed gives the same id); two ensembles built separately
    give different ids. 31 bits, so that the marker travels to R (whose integers are
    32-bit) as the reducedDim it becomes there.
    """
    import hashlib

    digest = hashlib.blake2b(np.ascontiguousarray(labels).tobytes(), digest_size=4).digest()
    run = int.from_bytes(digest, "little") >> 1  # non-negative int32
    return np.full((labels.shape[0], 1), run, dtype=np.int32)


def fitted_run(adata: AnnData, ensemble_key: str) -> dict[str, int]:
    """``{"ensemble_run": id}`` for the record of a result fitted to the ensemble at
    ``ensemble_key`` (empty for a hand-made one without the marker), so that a reader can
    tell it from one built since under the same key (:func:`check_fitted_ensemble`). Read
    after ``get_ensemble``, which refused an ensemble of several runs."""
    runs = adata.obsm.get(run_key(ensemble_key))
    if runs is None or np.asarray(runs).size == 0:
        return {}
    return {"ensemble_run": int(np.asarray(runs).flat[0])}


def check_fitted_ensemble(adata: AnnData, key: str, ensemble_key: str) -> None:
    """Refuse to read the partitions of a result whose ensemble was rebuilt since its fit.

    Its ``partitions_used`` name columns of the ensemble it was fitted to; a user trial
    drew another ensemble's partitions under the result's name (or got an ``IndexError``
    when the new one had fewer). Records without a run id (hand-made ensembles, older
    files) are taken as they are; a joined ensemble is refused as the tools refuse it.
    """
    record = adata.uns.get(key)
    fitted = record.get("ensemble_run") if isinstance(record, dict) else None
    runs = adata.obsm.get(run_key(ensemble_key))
    if fitted is None or runs is None or np.asarray(runs).size == 0:
        return
    refuse_joined(adata, ensemble_key)
    now = int(np.asarray(runs).flat[0])
    if now == int(fitted):
        return
    raise ValueError(
        f"{key!r} was fitted to another ensemble than adata.obsm[{ensemble_key!r}] holds now "
        f"(run id {int(fitted)} then, {now} now: tl.ensemble was run again since), so its "
        f"partitions are gone. Fit it again on this ensemble (scc.tl."
        f"{record.get('method', 'pcc')}(adata, key_added={key!r}, ...)), or keep ensembles "
        "apart with tl.ensemble(key_added=...)."
    )


def refuse_joined(adata: AnnData, ensemble_key: str) -> None:
    """Refuse an ensemble whose items come from separately built ensembles: its columns
    mean other partitions for each part, and any consensus of them is wrong (it was a
    warning, after which a user trial got 411 cells of a 1,500-cell group put with
    another group)."""
    runs = adata.obsm.get(run_key(ensemble_key))
    if runs is None or np.asarray(runs).size == 0:
        return  # a hand-made ensemble, or one from before the marker: nothing to compare
    n_runs = np.unique(np.asarray(runs)).size
    if n_runs > 1:
        raise ValueError(
            f"adata.obsm[{ensemble_key!r}] joins {n_runs} ensembles built separately "
            f"(adata.obsm[{run_key(ensemble_key)!r}] holds {n_runs} run ids; e.g. ad.concat "
            "of AnnData objects that each ran tl.ensemble): the partitions of one part are "
            "unrelated to the same columns of another, so a consensus of them would be "
            "wrong. Run scconsensus.tl.ensemble on the joint data (scconsensus run: "
            "--rebuild-ensemble), then the consensus again."
        )


#: Entries :func:`matrix_digest` reads at once (64 MB of float64), whatever the width.
DIGEST_ENTRIES = 8_000_000
#: splitmix64's finaliser constants (Steele et al. 2014), which mix a row's hash so that
#: the sum over rows cannot cancel linearly.
_MIX = (np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB))


def matrix_digest(X) -> str:
    """A digest of the matrix an ensemble clustered, whatever the order of its rows: the
    sum over rows (mod 2**64) of a mixed hash of each row's float64 bits, exact, so that
    any changed value changes it and cells put in another order (``sce[, order(...)]``)
    do not.

    :func:`scconsensus.tl.k_null` draws its reference with this matrix's covariance; a
    user trial scaled ``X`` after the ensemble (as a warning advised) and the reference
    took the scaled matrix's shape, not the one the ensemble's partitions saw.
    """
    import hashlib

    weights = np.random.Generator(np.random.PCG64(2026)).integers(
        0, 2**63, size=X.shape[1], dtype=np.uint64
    ) * np.uint64(2) + np.uint64(1)
    total = np.uint64(0)
    rows = max(1, DIGEST_ENTRIES // max(X.shape[1], 1))  # bounded memory at any width
    with np.errstate(over="ignore"):  # uint64 arithmetic is mod 2**64 by design
        for start in range(0, X.shape[0], rows):
            total += _mixed_row_hashes(X[start : start + rows], weights).sum(dtype=np.uint64)
    h = hashlib.blake2b(f"{tuple(X.shape)} {int(total)}".encode(), digest_size=8)
    return h.hexdigest()


def _mixed_row_hashes(block, weights: np.ndarray) -> np.ndarray:
    """``mix(Σ_j bits(x_ij) · w_j)`` per row; a zero's bits are 0, so sparse and dense agree."""
    if sp.issparse(block):
        block = sp.csr_matrix(block, dtype=np.float64)
        terms = block.data.view(np.uint64) * weights[block.indices]
        csum = np.concatenate([[np.uint64(0)], np.cumsum(terms, dtype=np.uint64)])
        h = csum[block.indptr[1:]] - csum[block.indptr[:-1]]
    else:
        bits = np.ascontiguousarray(block, dtype=np.float64).view(np.uint64)
        h = (bits * weights).sum(axis=1, dtype=np.uint64)
    h = (h ^ (h >> np.uint64(30))) * _MIX[0]
    h = (h ^ (h >> np.uint64(27))) * _MIX[1]
    return h ^ (h >> np.uint64(31))


def legacy_digest(X) -> str:
    """The digest of releases before 2026-11-27 (rows at fixed positions), so that an
    ensemble stored then is still recognised."""
    import hashlib

    n = X.shape[0]
    rows = X[np.unique(np.linspace(0, n - 1, min(n, 1_000)).astype(np.int64))]
    dense = rows.toarray() if hasattr(rows, "toarray") else np.asarray(rows)
    h = hashlib.blake2b(repr(tuple(X.shape)).encode(), digest_size=8)
    h.update(np.ascontiguousarray(dense, dtype=np.float64).tobytes())
    return h.hexdigest()
