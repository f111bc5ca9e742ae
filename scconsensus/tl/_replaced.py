"""What a rerun under the same ``key_added`` replaces: a consensus-k run's record lists
the per-``k`` results it wrote, and a new record replaces them all, not only those it
writes again (a run with ``max_k=6`` then one with ``max_k=3`` left ``k4``-``k6`` beside a
record that no longer listed them)."""

from __future__ import annotations

from collections.abc import Iterable

from anndata import AnnData
from scanpy import logging as logg

from ._anndata import REMOVE, consensus_layout
from ._record_keys import record_kind

__all__ = ["earlier_k_entries"]


def earlier_k_entries(adata: AnnData, key_added: str, keys: Iterable[str]) -> dict[str, dict]:
    """The entries of the per-``k`` results that the consensus-k record under ``key_added``
    lists and a new run writing ``keys`` does not, as :func:`~scconsensus.tl._anndata.assign_all`'s
    :data:`~scconsensus.tl._anndata.REMOVE` entries; one warning names them.

    Only results that are still consensus-k records are removed: a key the user has since
    filled with something else is left alone.
    """
    entries: dict[str, dict] = {"obs": {}, "obsm": {}, "obsp": {}, "uns": {}}
    if record_kind(adata, key_added) != "consensus_k":
        return entries
    listed = adata.uns[key_added].get("keys", [])
    kept = set(keys)
    stale = [
        str(key) for key in listed if key not in kept and record_kind(adata, key) == "consensus_k"
    ]
    for key in stale:
        layout = consensus_layout(key)
        layout["obsm"] = [*layout["obsm"], f"{key}_item_consensus"]
        layout["obsp"] = [f"{key}_consensus"]
        for slot, names in layout.items():
            entries[slot].update({name: REMOVE for name in names if name in getattr(adata, slot)})
    if stale:
        logg.warning(
            f"removing {', '.join(stale)}: results of the earlier run under {key_added!r} "
            "that this run replaces and does not write again; pass another key_added to keep them."
        )
    return entries
