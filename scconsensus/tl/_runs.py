"""Ensemble runs: which run of :func:`scconsensus.tl.ensemble` built an ensemble's labels.

``tl.ensemble`` marks every item with its run's id (``.obsm[f"{key}_run"]``); the
consensus tools refuse an ensemble joining several runs, and a result records the run
it was fitted to, so that a reader can tell an ensemble rebuilt since.
"""

from __future__ import annotations

import numpy as np
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


def ensemble_run(adata: AnnData, ensemble_key: str) -> int | None:
    """The run id of the ensemble at ``ensemble_key`` (:func:`ensemble_run_ids`), ``None``
    for a hand-made ensemble without the marker. A result records it, so that a reader
    can tell the ensemble it was fitted to from one built since under the same key."""
    runs = adata.obsm.get(run_key(ensemble_key))
    if runs is None or np.asarray(runs).size == 0:
        return None
    refuse_joined(adata, ensemble_key)
    return int(np.asarray(runs).flat[0])


def fitted_run(adata: AnnData, ensemble_key: str) -> dict[str, int]:
    """``{"ensemble_run": id}`` for a result's record (empty without a marker): the
    ensemble it is fitted to, for :func:`check_fitted_ensemble`."""
    run = ensemble_run(adata, ensemble_key)
    return {} if run is None else {"ensemble_run": run}


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
