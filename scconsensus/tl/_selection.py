"""What ``tl.pcc`` and ``tl.pla`` report about their plan (the chosen K and the partitions)
and about what they wrote (the clusters fitted and the clusters that label cells)."""

from __future__ import annotations

import numpy as np
from anndata import AnnData
from scanpy import logging as logg

from .._warnings import warn
from ..core import ConsensusPlan

__all__ = ["clusters_written", "log_plan", "selection_uns"]


def log_plan(plan: ConsensusPlan) -> None:
    """Say which K was chosen and why, and which partitions are fitted; warn (a Python
    warning, which R and ``warnings.catch_warnings`` can catch) when they are far from K."""
    if plan.selection is not None:
        logg.info(f"    n_clusters='auto': {plan.selection.reason}")
    logg.info(f"    fitting {plan.columns.size} partitions ({plan.n_clusters} clusters)")
    if plan.note:
        warn(plan.note[0].upper() + plan.note[1:] + ".", UserWarning)


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


def clusters_written(adata: AnnData, key_added: str, n_fitted: int) -> str:
    """The clusters of a stored consensus, for its finish line: ``n_fitted`` membership
    columns and, when fewer, how many of them label cells (a cluster can carry mass
    without being any cell's largest membership; it stays in the membership only)."""
    n_labelled = adata.obs[key_added].cat.categories.size
    if n_labelled == n_fitted:
        return f"{n_fitted} clusters"
    rest = n_fitted - n_labelled
    return (
        f"{n_fitted} clusters fitted, {n_labelled} of them label cells (the other {rest} "
        f"carr{'ies' if rest == 1 else 'y'} mass only: see .obsm['{key_added}_membership'])"
    )
