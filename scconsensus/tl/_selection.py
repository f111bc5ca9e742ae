"""What ``tl.pcc`` and ``tl.pla`` report about their plan: the chosen K and the partitions."""

from __future__ import annotations

import numpy as np
from scanpy import logging as logg

from ..core import ConsensusPlan

__all__ = ["log_plan", "selection_uns"]


def log_plan(plan: ConsensusPlan) -> None:
    """Say which K was chosen and why, and which partitions are fitted."""
    if plan.selection is not None:
        logg.info(f"    n_clusters='auto': {plan.selection.reason}")
    logg.info(f"    fitting {plan.columns.size} partitions ({plan.n_clusters} clusters)")
    if plan.note:
        logg.warning(plan.note)


def selection_uns(plan: ConsensusPlan) -> dict:
    """``.uns`` entries for the choice of K: ``n_clusters_chosen``, the evidence table,
    ``k_candidates`` (every stable resolution, one K per split, strongest first: a list to
    pass back as ``n_clusters``) and ``k_splits`` (each split's K, the span of K it drops
    over and its strength: :attr:`~scconsensus.core.KSelection.splits`)."""
    out = {"n_clusters_chosen": plan.n_clusters}
    if plan.selection is not None:
        out["k_selection"] = plan.selection.table
        out["k_selection_reason"] = plan.selection.reason
        out["k_selection_threshold"] = plan.selection.threshold
        splits = plan.selection.splits
        out["k_candidates"] = splits["n_clusters"].to_numpy(dtype=np.int64)
        out["k_splits"] = splits
    return out
