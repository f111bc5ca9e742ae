"""``tl.pla_transfer(adata, adata_ref)``: scanpy's argument order (``sc.tl.ingest``)."""

from __future__ import annotations

from anndata import AnnData

from .._docs import doc_params
from .._results import result_method
from .._validation import renamed_args
from .._warnings import warn
from ._pla import transfer as _transfer

__all__ = ["pla_transfer"]


@renamed_args(adata_new="adata")
@doc_params()
def pla_transfer(
    adata: AnnData,
    adata_ref: AnnData,
    key: str = "pla",
    *,
    use_rep: str | None = None,
    n_neighbors: int = 15,
    new_ensemble_key: str | None = None,
    key_added: str | None = None,
    copy: bool = False,
) -> AnnData | None:
    """Assign the cells of ``adata`` to the PLA clusters of ``adata_ref``, as ``sc.tl.ingest``.

    Arguments in :func:`scanpy.tl.ingest`'s order: the new data first, the reference
    second. Every partition of the reference ensemble labels each new cell (a
    nearest-neighbour vote among the reference cells it sampled, in ``use_rep``); its
    posteriors make these labels most likely under the fitted clusters' labels (Lange &
    Buhmann 2005, Sect. 3.3, folded in: :func:`~scconsensus.core.pla.pla_extend`).

    The reference must hold the ensemble (``.obsm[params["ensemble_key"]]``), the fit
    of :func:`pla` (``.obs[key]``, ``.obsm[f"{key}_membership"]``, ``.uns[key]``) and a
    representation shared with ``adata`` (same genes in ``X``, or ``X_pca`` projected
    with ``sc.tl.ingest``); or pass ``new_ensemble_key`` (labels of the new cells in
    the same partitions) and no representation is needed.

    The new cells' confidence is the reference's kind, measured against the reference
    cells (:func:`scconsensus.core.transferred_confidence` of their labels in all the
    reference's partitions, or in the fit's own when ``new_ensemble_key`` holds no more),
    so it compares with the reference cells'. Cells no partition places get uniform
    posteriors, no label and a NaN confidence.

    Parameters
    ----------
    adata
        New cells; written (or copied) with the shared consensus layout
        (``adata_new=``, the old name, still works until the next release).
    adata_ref
        Reference with a :func:`pla` result under ``key``.
    key
        ``key_added`` of the reference's :func:`pla` call.
    {transfer_use_rep}
    n_neighbors
        Voters of the nearest-neighbour predictor per partition (1 follows noise).
    new_ensemble_key
        ``.obsm`` key of ``adata`` holding its labels in the reference's partitions.
    key_added
        Prefix of the results in ``adata`` (default ``key``). Cluster ``"c"`` is the
        reference's cluster ``"c"``.
    {copy}

    Returns
    -------
    {returns_consensus}
        ``.uns[key_added]`` holds ``"transferred_from"`` (``key``), the reference's
        partition ``"weights"`` and ``"confidence"``, which says what the confidence
        column is and over which partitions.

    Examples
    --------
    >>> import scconsensus as scc
    >>> adata = scc.datasets.iris()
    >>> ref, new = adata[:120].copy(), adata[120:].copy()
    >>> scc.tl.ensemble(ref, n_partitions=20, k=(2, 6), use_rep="X", random_state=0)
    >>> scc.tl.pla(ref, n_clusters=3)
    >>> scc.tl.pla_transfer(new, ref, use_rep="X")  # as sc.tl.ingest(new, ref)
    >>> new.obs["pla"].cat.categories.tolist() == ref.obs["pla"].cat.categories.tolist()
    True
    """
    adata, adata_ref = _scanpy_order(adata, adata_ref, key)
    return _transfer(
        adata_ref,
        adata,
        key,
        use_rep=use_rep,
        n_neighbors=n_neighbors,
        new_ensemble_key=new_ensemble_key,
        key_added=key_added,
        copy=copy,
    )


def _has_pla(adata: AnnData, key: str) -> bool:
    """Whether ``adata`` holds a PLA fit under ``key`` (a transfer's result is no fit: new
    data transferred to before looked like a reference given first)."""
    if not (isinstance(adata, AnnData) and f"{key}_membership" in adata.obsm):
        return False
    return result_method(adata, key) == "pla"


def _scanpy_order(adata: AnnData, adata_ref: AnnData, key: str) -> tuple[AnnData, AnnData]:
    """``(adata, adata_ref)``; the old order (reference first) is swapped with a FutureWarning."""
    if adata is not adata_ref and _has_pla(adata, key) and not _has_pla(adata_ref, key):
        warn(
            "pla_transfer(adata_ref, adata_new) is now pla_transfer(adata, adata_ref), as "
            "sc.tl.ingest(adata, adata_ref): the reference goes second. The old order "
            "will stop working in the next release.",
            FutureWarning,
        )
        return adata_ref, adata
    return adata, adata_ref
