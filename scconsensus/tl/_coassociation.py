"""``tl.coassociation``: store the ensemble's co-association counts in ``.obsp``."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from anndata import AnnData
from scanpy import logging as logg

from .._docs import PARAMS, doc_params
from .._settings import settings
from .._validation import RandomState, check_choice, random_state_record
from ..core.coassociation import coassociation as _coassociation
from ..core.coassociation import sample_pairs
from ._anndata import (
    assign_all,
    check_copy,
    get_ensemble,
    get_rep,
    sanitize_uns,
    warn_overwrite,
)
from ._input_checks import check_use_rep
from ._record_keys import check_record_key


@doc_params()
def resolve_mode(mode: str, n_items: int) -> str:
    """``"dense"`` or ``"sparse"``: ``mode="auto"`` decides by ``settings.dense_auto_max_items``.

    Parameters
    ----------
    {mode}
    n_items
        Number of items.

    Returns
    -------
    str
        ``"dense"`` or ``"sparse"``.
    """
    check_choice(mode, ("auto", "dense", "sparse"), "mode")
    if mode == "auto":
        mode = "dense" if n_items <= settings.dense_auto_max_items else "sparse"
        logg.info(f"    mode='auto' chose the {mode} route for {n_items} items")
    return mode


_USE_REP_PAIRS = """\
use_rep
    Representation for the kNN pairs of sparse mode: an ``.obsm`` key or ``"X"``
    (default ``"X_pca"`` when present, else ``X``; random pairs only when neither
    can be used, or it is sparse)."""

#: The inputs both functions share, written once.
_PAIR_INPUTS = "\n".join(
    [
        PARAMS["adata_ensemble"],
        PARAMS["ensemble_key"],
        PARAMS["mode"],
        _USE_REP_PAIRS,
        PARAMS["n_neighbors_n_random"],
        PARAMS["random_state"] + "\n    Here it seeds the pair draw.",
    ]
)


@doc_params(pair_inputs=_PAIR_INPUTS)
def ensemble_coassociation(
    adata: AnnData,
    ensemble_key: str = "scc_ensemble",
    *,
    mode: str = "auto",
    use_rep: str | None = None,
    n_neighbors: int = 10,
    n_random: int = 30,
    random_state: RandomState = 0,
    client=None,
):
    """Co-association ``(C, N)`` of the ensemble at ``.obsm[ensemble_key]``, computed on demand.

    Sparse mode samples pairs from the kNN graph of the representation (when
    one is available) plus random pairs.

    Parameters
    ----------
    {pair_inputs}
    {client}

    Returns
    -------
    tuple of arrays
        ``(C, N)``: co-clustered and co-sampled counts, see
        :func:`scconsensus.core.coassociation.coassociation`.
    """
    labels = get_ensemble(adata, ensemble_key)
    check_use_rep(adata, use_rep)
    mode = resolve_mode(mode, labels.shape[0])
    if mode == "dense":
        return _coassociation(labels, "dense")
    try:
        X = get_rep(adata, use_rep)
    except ValueError:
        if use_rep is not None:
            raise
        X = None
    if X is not None and sp.issparse(X):
        X = None  # kNN on a wide sparse X is not worth it; random pairs only
    pairs = sample_pairs(
        labels.shape[0], X, n_neighbors=n_neighbors, n_random=n_random, random_state=random_state
    )
    return _coassociation(labels, "sparse", pairs=pairs, client=client)


@doc_params(pair_inputs=_PAIR_INPUTS)
def coassociation(
    adata: AnnData,
    ensemble_key: str = "scc_ensemble",
    *,
    mode: str = "auto",
    use_rep: str | None = None,
    n_neighbors: int = 10,
    n_random: int = 30,
    random_state: RandomState = 0,
    client=None,
    key_added: str = "scc_coassoc",
    copy: bool = False,
) -> AnnData | None:
    """Count how often items are clustered together across the ensemble.

    Parameters
    ----------
    {pair_inputs}
    {client}
        Here it counts the sparse mode's pairs (the same counts as locally).
    key_added
        ``.obsp[f"{key_added}_c"]`` (co-clustered counts), ``.obsp[f"{key_added}_n"]``
        (co-sampled counts) and ``.uns[key_added]``.
    {copy}

    Returns
    -------
    :class:`~anndata.AnnData` or None
        The copy when ``copy=True``, else ``None``. In sparse mode both matrices share
        one sparsity pattern (zeros of ``C`` kept explicitly): the sampled pairs with
        ``N > 0``.

    Examples
    --------
    >>> import scconsensus as scc
    >>> adata = scc.datasets.iris()
    >>> scc.tl.ensemble(adata, n_partitions=10, k=3)
    >>> scc.tl.coassociation(adata)
    >>> adata.obsp["scc_coassoc_c"].shape
    (150, 150)
    """
    key_added, copy = check_record_key(adata, key_added, "coassociation"), check_copy(adata, copy)
    labels = get_ensemble(adata, ensemble_key)
    mode = resolve_mode(mode, labels.shape[0])
    C, N = ensemble_coassociation(
        adata,
        ensemble_key,
        mode=mode,
        use_rep=use_rep,
        n_neighbors=n_neighbors,
        n_random=n_random,
        random_state=random_state,
        client=client,
    )
    adata = adata.copy() if copy else adata
    params = {
        "ensemble_key": ensemble_key,
        "mode": mode,
        "use_rep": use_rep,
        "n_neighbors": n_neighbors,
        "n_random": n_random,
        "random_state": random_state_record(random_state),
    }
    _store(adata, key_added, C, N, params, labels.shape[1])
    return adata if copy else None


def _store(adata: AnnData, key_added: str, C, N, params: dict, n_partitions: int) -> None:
    warn_overwrite(adata, obsp=[f"{key_added}_c", f"{key_added}_n"], uns=[key_added])
    if params["mode"] == "dense":  # N is symmetric: no n x n triu copy (time, memory)
        n_pairs = (int(np.count_nonzero(N)) - int(np.count_nonzero(np.diagonal(N)))) // 2
    else:
        n_pairs = N.nnz // 2
    uns = sanitize_uns({"params": params, "n_pairs": n_pairs, "n_partitions": n_partitions})
    assign_all(adata, obsp={f"{key_added}_c": C, f"{key_added}_n": N}, uns={key_added: uns})
