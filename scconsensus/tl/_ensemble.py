"""``tl.ensemble``: build a clustering ensemble on an AnnData."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from anndata import AnnData
from scanpy import logging as logg

from .._docs import doc_params
from .._progress import check_progress
from .._validation import RandomState, check_key, check_n_jobs, renamed_args
from ..core.ensemble import PartitionOptions, generate_ensemble
from ._anndata import (
    assign_all,
    check_copy,
    default_rep,
    get_rep,
    sanitize_uns,
    warn_overwrite,
)
from ._record_keys import COMPANIONS, companion_ending, is_ensemble_record
from ._runs import ensemble_run_ids, matrix_digest, run_key

#: :func:`ensemble`'s texts of what it writes (the function stays under 80 lines).
_WRITES = {
    "ensemble_key_added": """\
key_added
    Results go to ``.obsm[key_added]``, ``.obsm[f"{key_added}_run"]`` and
    ``.uns[key_added]``.""",
    "ensemble_returns": """\
``None`` (the copy when ``copy=True``), with ``.obsm[key_added]``: ``(n_obs,
n_partitions)`` int32 labels, ``-1`` for unsampled items;
``.obsm[f"{key_added}_run"]``: ``(n_obs, 1)`` int32, the same id for every item, a
digest of the labels that marks the run the ensemble was built in (the consensus
tools refuse an ensemble that joins items of several runs, e.g. after ``ad.concat``);
and ``.uns[key_added]``: ``{"params": {...}, "partitions": DataFrame}``, the
method, ``k``, clusters found and parameters of every partition (``params["use_rep"]``
names the matrix clustered, ``"X_pca"`` where it was taken by default).""",
}


@renamed_args(methods="method")
@doc_params(**_WRITES)
def ensemble(
    adata: AnnData,
    n_partitions: int = 100,
    method: str | Sequence[str] = "kmeans",
    *,
    k: int | tuple[int, int] | Sequence[int] | str = "auto",
    subsample: float = 0.8,
    feature_subsample: float = 1.0,
    predict_unsampled: bool | str = False,
    linkage: str = "average",
    distance: str = "euclidean",
    resolution: float | tuple[float, float] | None = None,
    n_neighbors: int = 15,
    neighbors_key: str | None = None,
    obsp: str | None = None,
    use_rep: str | None = None,
    layer: str | None = None,
    random_state: RandomState = 0,
    n_jobs: int | None = 1,
    client=None,
    progress: bool | None = None,
    key_added: str = "scc_ensemble",
    copy: bool = False,
) -> AnnData | None:
    """Cluster many item/feature subsamples of ``adata`` into an ensemble of partitions.

    Parameters
    ----------
    {adata}
    {ensemble_partitions}
    {ensemble_sampling}
    {neighbors_key_obsp}
    {use_rep_layer}
    {ensemble_run}
    {progress}
    {ensemble_key_added}
    {copy}

    Returns
    -------
    {ensemble_returns}

    Examples
    --------
    >>> import scconsensus as scc
    >>> adata = scc.datasets.iris()
    >>> scc.tl.ensemble(adata, n_partitions=10, method=["kmeans", "hc"], k=(2, 5))
    >>> adata.obsm["scc_ensemble"].shape
    (150, 10)
    """
    key_added, copy = check_key(key_added), check_copy(adata, copy)
    _check_target(adata, key_added)
    n_jobs = check_n_jobs(n_jobs)
    X = get_rep(adata, use_rep, layer=layer, keep_float32=True)
    start = logg.info(f"building an ensemble of {n_partitions} partitions")
    graph, graph_key = _leiden_graph(adata, method, neighbors_key, obsp, feature_subsample)
    options = PartitionOptions(
        subsample=subsample, feature_subsample=feature_subsample,
        predict_unsampled=predict_unsampled, linkage=linkage, distance=distance,
        resolution=resolution, n_neighbors=n_neighbors,
    )  # fmt: skip
    result = generate_ensemble(
        X,
        n_partitions,
        method,
        k,
        options=options,
        graph=graph,
        random_state=random_state,
        n_jobs=n_jobs,
        client=client,
        progress=check_progress(progress),
    )
    # the matrix clustered, X_pca included when taken by default: the consensus methods
    # draw kNN pairs from it (lazy_rep), and X would be another view of the items
    use_rep = default_rep(adata, use_rep, layer)
    params = dict(result.params, use_rep=use_rep, layer=layer, graph=graph_key)
    params["matrix_digest"] = matrix_digest(X)  # tl.k_null checks it reads the same matrix
    return _store(adata.copy() if copy else adata, result, params, key_added, start, copy)


def _check_target(adata: AnnData, key_added: str) -> None:
    """Refuse to replace an ``.obsm``/``.uns`` entry that is not an ensemble of ours.

    An ensemble is recorded as ``.uns[key]`` with ``"params"`` and ``"partitions"``
    (:func:`_store`), or is an integer label matrix in ``.obsm[key]`` without a record;
    anything else under ``key`` is the user's, e.g. ``"X_pca"``, which a label matrix
    would silently replace.
    """
    if not isinstance(adata, AnnData):
        return  # get_rep names the type
    record = adata.uns.get(key_added)
    ours = is_ensemble_record(record)
    if record is None and key_added in adata.obsm:
        # labels without their record (ad.concat drops .uns; labels put there by hand):
        # an integer matrix is an ensemble; a float one (X_pca) is not
        found = adata.obsm[key_added]
        ours = isinstance(found, np.ndarray) and np.issubdtype(found.dtype, np.integer)
    taken = [
        f".{slot}[{key_added!r}]" for slot in ("obsm", "uns") if key_added in getattr(adata, slot)
    ]
    if taken and not ours:
        free = next(
            key
            for key in ("scc_ensemble", *(f"scc_ensemble_{i}" for i in range(2, 10**6)))
            if key not in adata.obsm and key not in adata.uns
        )
        raise ValueError(
            f"key_added={key_added!r} would overwrite {' and '.join(taken)}, which is not an "
            f"ensemble written by scconsensus.tl.ensemble; pass another key_added, e.g. "
            f"key_added={free!r} (and ensemble_key={free!r} to the consensus tools)."
        )
    companion = companion_ending(key_added)
    if companion is not None:
        # a user trial: key_added="scc_ensemble_run" replaced the run ids of "scc_ensemble"
        # (then "joins 12 ensembles"); "pcc_membership" was overwritten by the fit it fed
        raise ValueError(
            f"key_added={key_added!r} ends in {companion!r}, which the tools write beside "
            f"their results ({COMPANIONS[companion]}); pass another key_added, e.g. "
            f"'scc_ensemble'."
        )
    if key_added.startswith("X_"):
        # scanpy reads .obsm["X_*"] as coordinates: tl.dpp, sc.pp.neighbors and the
        # default representation would cluster the label matrix
        raise ValueError(
            f"key_added={key_added!r} names a representation: .obsm keys 'X_*' hold "
            "coordinates (X_pca, X_umap) by scanpy's convention, and tools that default to "
            "X_pca would read the ensemble's labels as one. Pass another key_added, e.g. "
            "'scc_ensemble'."
        )


def _store(adata: AnnData, result, params: dict, key_added: str, start, copy: bool):
    """Write the ensemble to ``.obsm[key_added]`` and ``.uns[key_added]``.

    ``.obsm[f"{key_added}_run"]`` marks every item with the ensemble it was built in,
    so ensembles joined row-wise later (``ad.concat``, which drops ``.uns``) are told
    apart (:func:`~scconsensus.tl._anndata.get_ensemble`).
    """
    warn_overwrite(adata, obsm=[key_added, run_key(key_added)], uns=[key_added])
    partitions = result.partitions.copy()
    partitions.index = partitions.index.astype(str)
    uns = {"params": sanitize_uns(params), "partitions": partitions}
    obsm = {key_added: result.labels, run_key(key_added): ensemble_run_ids(result.labels)}
    assign_all(adata, obsm=obsm, uns={key_added: uns})
    logg.info(
        "    finished",
        time=start,
        deep=(
            f"added\n    .obsm[{key_added!r}], ensemble labels\n"
            f"    .obsm[{run_key(key_added)!r}], the run's id\n    .uns[{key_added!r}]"
        ),
    )
    return adata if copy else None


def _leiden_graph(
    adata: AnnData,
    method: str | Sequence[str],
    neighbors_key: str | None,
    obsp: str | None,
    feature_subsample,
):
    """The graph Leiden partitions use, chosen as :func:`scanpy.tl.leiden` does, and its name.

    ``(None, "knn")`` when no Leiden partition is asked for or ``adata`` has no
    neighbours graph (the ensemble then builds a kNN graph of the representation);
    named ``"knn"`` also when partitions subsample features (each then builds the kNN
    graph of its own features).
    """
    graph, name = _adata_graph(adata, method, neighbors_key, obsp)
    if graph is not None and isinstance(feature_subsample, int | float) and feature_subsample < 1:
        name = "knn"
    return graph, name


def _adata_graph(
    adata: AnnData, method: str | Sequence[str], neighbors_key: str | None, obsp: str | None
):
    if obsp is not None and neighbors_key is not None:
        raise ValueError("Pass neighbors_key or obsp, not both (as in sc.tl.leiden).")
    methods = [method] if isinstance(method, str) else method
    uses_leiden = isinstance(methods, Sequence) and "leiden" in methods  # others: refused later
    if obsp is not None:
        if obsp not in adata.obsp:
            raise ValueError(f"obsp={obsp!r} is not in adata.obsp (available: {list(adata.obsp)}).")
        return (adata.obsp[obsp], f"obsp[{obsp!r}]") if uses_leiden else (None, "knn")
    if not uses_leiden and neighbors_key is None:
        return None, "knn"
    key = "neighbors" if neighbors_key is None else neighbors_key
    if key not in adata.uns:
        if neighbors_key is not None:
            raise ValueError(
                f"neighbors_key={neighbors_key!r} is not in adata.uns; run "
                f"sc.pp.neighbors(adata, key_added={neighbors_key!r}) first."
            )
        return None, "knn"
    name = adata.uns[key].get("connectivities_key", "connectivities")
    if name not in adata.obsp:
        raise ValueError(
            f"adata.uns[{key!r}] names .obsp[{name!r}], which is missing; rerun sc.pp.neighbors."
        )
    if not uses_leiden:
        return None, "knn"
    logg.info(f"    Leiden partitions cluster the graph .obsp[{name!r}] ({key})")
    return adata.obsp[name], f"obsp[{name!r}]"
