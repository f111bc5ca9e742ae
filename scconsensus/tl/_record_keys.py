"""Which kind of record a key holds, so that one tool's ``key_added`` never replaces the
``.uns`` record of another kind (an ensemble's, a consensus-k result's) and leaves that
record's other entries orphaned."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from anndata import AnnData

from .._results import result_method
from .._validation import check_key

#: What each kind of record is, for the messages.
KINDS = {
    "ensemble": "the record of an ensemble (tl.ensemble)",
    "coassociation": "the record of a co-association (tl.coassociation)",
    "consensus_k": "a consensus-k result (tl.consensus_k or r.consensus_cluster_plus)",
    "consensus": "a consensus result (tl.pcc, tl.pla, tl.dpp or tl.pla_transfer)",
}
#: Methods whose records (the run's and each k's) are consensus-k results.
_CONSENSUS_K = ("consensus_k", "consensus_cluster_plus")


#: The endings of the .obsm keys written beside a result, which no ensemble may take.
COMPANIONS = {
    "_run": "an ensemble's run ids",
    "_membership": "a consensus result's memberships",
    "_labels": "a consensus-k run's labels per k",
}


def companion_ending(key: str) -> str | None:
    """The ending of :data:`COMPANIONS` that ``key`` has, if any."""
    return next((end for end in COMPANIONS if key.endswith(end)), None)


def each_k_key(key_added: str, n_clusters: int) -> str:
    """The key one K of a list is stored under: ``f"{key_added}_k{K}"``."""
    return f"{key_added}_k{int(n_clusters)}"


def is_ensemble_record(record) -> bool:
    """Whether ``record`` (an ``.uns`` entry) is the record of :func:`scconsensus.tl.ensemble`."""
    return isinstance(record, Mapping) and {"params", "partitions"} <= set(record)


def record_kind(adata: AnnData, key: str) -> str | None:
    """The kind of ``.uns[key]``: a key of :data:`KINDS`, or ``None`` for none of ours.

    Consensus results of PCC, PLA and DPP share one layout (labels, membership,
    confidence, entropy), so one may replace another under the same key; the records of
    ``tl.consensus_k`` and ConsensusClusterPlus (the run's and each ``k``'s) are another.
    """
    record = adata.uns.get(key)
    if not isinstance(record, Mapping):
        return None
    method = result_method(adata, key)
    if method is not None:
        return "consensus_k" if method in _CONSENSUS_K else "consensus"
    if is_ensemble_record(record):
        return "ensemble"
    if {"n_pairs", "n_partitions"} <= set(record):
        return "coassociation"
    return None


def check_record_key(
    adata: AnnData, key_added: str, kind: str, per_k: Sequence[int] = (), top: bool = True
) -> str:
    """``key_added`` checked (:func:`~scconsensus._validation.check_key`), refused where a
    key the call writes holds a record of another kind.

    Parameters
    ----------
    adata
        Where the call writes.
    key_added
        The key it was given.
    kind
        The kind of record it writes (a key of :data:`KINDS`).
    per_k
        The ``k`` it also writes under ``f"{key_added}_k{k}"``.
    top
        Whether it writes ``key_added`` itself.

    Raises
    ------
    ValueError
        Naming what the key holds and a free ``key_added``.
    """
    key_added = check_key(key_added)
    if not isinstance(adata, AnnData):
        return key_added

    def written(base: str) -> list[str]:
        return ([base] if top else []) + [each_k_key(base, k) for k in per_k]

    found = [(key, record_kind(adata, key)) for key in written(key_added)]
    clash = next(((key, got) for key, got in found if got not in (None, kind)), None)
    if clash is None:
        return key_added
    key, got = clash
    taken = {*adata.uns, *adata.obs.columns, *adata.obsm}
    free = next(
        base
        for base in (f"{key_added}_{i}" for i in range(2, 10**6))
        if not taken.intersection(written(base))
    )
    via = "" if key == key_added else f" (it writes {key!r})"
    raise ValueError(
        f"key_added={key_added!r}{via} would replace .uns[{key!r}], {KINDS[got]}, and leave "
        f"its other entries without it. Pass another key_added, e.g. {free!r}."
    )
