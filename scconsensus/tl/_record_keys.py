"""Which kind of record a key holds, so that one tool's ``key_added`` never replaces the
``.uns`` record of another kind (an ensemble's, a consensus-k result's) and leaves that
record's other entries orphaned."""

from __future__ import annotations

from collections.abc import Mapping

from anndata import AnnData

from .._results import result_method
from .._validation import check_key

#: What each kind of record is, for the messages.
KINDS = {
    "ensemble": "the record of an ensemble (tl.ensemble)",
    "coassociation": "the record of a co-association (tl.coassociation)",
    "consensus_k": "a consensus-k result (tl.consensus_k)",
    "consensus": "a consensus result (tl.pcc, tl.pla, tl.dpp, tl.pla_transfer or "
    "ConsensusClusterPlus)",
}


def record_kind(adata: AnnData, key: str) -> str | None:
    """The kind of ``.uns[key]``: a key of :data:`KINDS`, or ``None`` for none of ours.

    Consensus results of every method share one layout (labels, membership,
    confidence, entropy), so one may replace another under the same key.
    """
    record = adata.uns.get(key)
    if not isinstance(record, Mapping):
        return None
    method = result_method(adata, key)
    if method is not None:
        return "consensus_k" if method == "consensus_k" else "consensus"
    if {"params", "partitions"} <= set(record):
        return "ensemble"
    if {"n_pairs", "n_partitions"} <= set(record):
        return "coassociation"
    return None


def check_record_key(adata: AnnData, key_added: str, kind: str) -> str:
    """``key_added`` checked (:func:`~scconsensus._validation.check_key`), refused where
    ``.uns[key_added]`` is a record of another kind.

    Raises
    ------
    ValueError
        Naming what the key holds and a free key.
    """
    key_added = check_key(key_added)
    found = record_kind(adata, key_added) if isinstance(adata, AnnData) else None
    if found is None or found == kind:
        return key_added
    free = next(f"{key_added}_{i}" for i in range(2, 10**6) if f"{key_added}_{i}" not in adata.uns)
    raise ValueError(
        f"key_added={key_added!r} would replace .uns[{key_added!r}], {KINDS[found]}, and "
        f"leave its other entries without it. Pass another key_added, e.g. {free!r}."
    )
