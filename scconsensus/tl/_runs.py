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


#: Rows converted to float64 at once by :func:`matrix_digest` (64 MB at 1,000 features).
DIGEST_BLOCK = 8_192


def matrix_digest(X) -> str:
    """A digest of the matrix an ensemble clustered, whatever the order of its rows: its
    shape and each column's first two moments, to 9 significant digits (a sum's order
    moves them by about 1e-16).

    :func:`scconsensus.tl.k_null` draws its reference with this matrix's covariance; a
    user trial scaled ``X`` after the ensemble (as a warning advised) and the reference
    took the scaled matrix's shape, not the one the ensemble's partitions saw. Cells put
    in another order (``sce[, order(sce$sample)]``) are the same matrix.
    """
    import hashlib

    first, second = np.zeros(X.shape[1]), np.zeros(X.shape[1])
    for start in range(0, X.shape[0], DIGEST_BLOCK):  # float64 a block at a time
        block = X[start : start + DIGEST_BLOCK]
        block = block.toarray() if sp.issparse(block) else block
        block = np.asarray(block, dtype=np.float64)
        first += block.sum(axis=0)
        second += np.einsum("ij,ij->j", block, block)
    moments = " ".join(f"{v:.9g}" for v in (*first, *second))
    h = hashlib.blake2b(f"{tuple(X.shape)} {moments}".encode(), digest_size=8)
    return h.hexdigest()


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
