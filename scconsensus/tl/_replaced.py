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
    """Every entry of the per-``k`` results that the consensus-k record under ``key_added``
    lists, as :func:`~scconsensus.tl._anndata.assign_all`'s
    :data:`~scconsensus.tl._anndata.REMOVE` entries: a new run writing ``keys`` overrides
    those it writes again (merged after these), and the rest go, its stored consensus
    matrices included (a review: a rerun without ``store_matrices`` kept the earlier ones).
    One warning names the results that go whole.

    Only results that are still consensus-k records are removed: a key the user has since
    filled with something else is left alone.
    """
    entries: dict[str, dict] = {"obs": {}, "obsm": {}, "obsp": {}, "uns": {}}
    if record_kind(adata, key_added) != "consensus_k":
        return entries
    listed = [str(key) for key in adata.uns[key_added].get("keys", [])]
    ours = [key for key in listed if record_kind(adata, key) == "consensus_k"]
    for key in ours:
        layout = consensus_layout(key)
        layout["obsm"] = [*layout["obsm"], f"{key}_item_consensus"]
        layout["obsp"] = [f"{key}_consensus"]
        for slot, names in layout.items():
            entries[slot].update({name: REMOVE for name in names if name in getattr(adata, slot)})
    written = set(keys)
    gone = [key for key in ours if key not in written]
    if gone:
        logg.warning(
            f"removing {', '.join(gone)}: results of the earlier run under {key_added!r} "
            "that this run replaces and does not write again; pass another key_added to keep them."
        )
    return entries
