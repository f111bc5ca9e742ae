"""``tl.dpp``: determinantal consensus clustering (Vicente & Murua 2021) on an AnnData."""

from __future__ import annotations

import numpy as np
from anndata import AnnData
from scanpy import logging as logg

from .._docs import doc_params
from .._progress import check_progress
from .._settings import settings
from .._validation import RandomState, check_int
from .._warnings import warn
from ..core.dpp import (
    DPP_PARAMS,
    REFERENCE_SIZE,
    DPPCut,
    DPPRoute,
    DPPSampling,
    dpp_consensus,
)
from ._anndata import check_copy, get_rep, store_consensus
from ._record_keys import check_record_key


@doc_params(**DPP_PARAMS)
def dpp(
    adata: AnnData,
    n_runs: int = 200,
    use_rep: str | None = None,
    *,
    layer: str | None = None,
    sampler: str = "dpp",
    k_max: int | None = None,
    reference_size: int | None = REFERENCE_SIZE,
    expected_size: float | None = None,
    a: float = 0.5,
    tau: float = 0.6,
    s: float = 1.0,
    n_thresholds: int | None = None,
    n_clusters: int | str | None = None,
    mode: str = "auto",
    n_components: int | None = None,
    n_neighbors: int = 15,
    n_random: int = 10,
    random_state: RandomState = 0,
    key_added: str = "dpp",
    progress: bool | None = None,
    copy: bool = False,
) -> AnnData | None:
    """Determinantal consensus clustering: DPP-sampled Voronoi runs, thresholded consensus.

    Each run cuts the data into the Voronoi cells of items drawn from a determinantal
    point process; the runs' consensus is cut where the kernel validity index is lowest
    (Vicente & Murua 2021; :func:`scconsensus.core.dpp.dpp_consensus`).

    Parameters
    ----------
    {adata}
    {dpp_n_runs}
    {use_rep_layer}
    {dpp_sampling}
    {dpp_cut}
    {dpp_n_clusters}
    {dpp_route}
    {random_state}
    {key_added}
    {progress}
    {copy}

    Returns
    -------
    {returns_consensus}
        {dpp_uns}

    Examples
    --------
    >>> import scconsensus as scc
    >>> adata = scc.datasets.iris()
    >>> scc.tl.dpp(adata, n_runs=50)
    >>> adata.obs["dpp"].cat.categories.size >= 2
    True
    """
    key_added, copy = check_record_key(adata, key_added, "consensus"), check_copy(adata, copy)
    n_runs = check_int(n_runs, "n_runs", 1)
    X = get_rep(adata, use_rep, layer=layer)
    start = _log_start(n_runs, sampler, X.shape[0], mode)
    sampling = DPPSampling(sampler=sampler, k_max=k_max, reference_size=reference_size,
                           expected_size=expected_size)  # fmt: skip
    route = DPPRoute(mode=mode, n_components=n_components, n_neighbors=n_neighbors,
                     n_random=n_random)  # fmt: skip
    result = dpp_consensus(
        X, n_runs, sampling=sampling, cut=DPPCut(a=a, tau=tau, s=s, n_thresholds=n_thresholds),
        n_clusters=n_clusters, route=route, random_state=random_state,
        progress=check_progress(progress),
    )  # fmt: skip
    params = {"n_runs": n_runs, "use_rep": use_rep, "layer": layer, **result.params}
    return _store(adata.copy() if copy else adata, key_added, result, params, start, copy)


def _log_start(n_runs: int, sampler: str, n: int, mode: str):
    route = (
        mode if mode != "auto" else ("dense" if n <= settings.dense_auto_max_items else "sparse")
    )
    return logg.info(
        f"determinantal consensus clustering: {n_runs} {sampler} runs on {n} items, "
        f"{route} route"
        + (
            f" (mode='auto', settings.dense_auto_max_items={settings.dense_auto_max_items})"
            if mode == "auto"
            else ""
        )
    )


def _store(adata: AnnData, key_added: str, result, params: dict, start, copy: bool):
    """Write ``result`` in the shared consensus layout, with DPP's figures in ``.uns``."""
    candidates = result.candidates.copy()
    candidates.index = candidates.index.astype(str)
    uns = {
        "candidates": candidates,
        "threshold": result.threshold,
        "n_clusters": int(result.labels.max()) + 1,
        "sigma2": result.sigma2,
        "mode": result.mode,
        "run_sizes": result.run_sizes,
        "alpha": result.info["alpha"],
        "reason": result.info["reason"],
        # the cut joins items through chains of consensus, the membership averages it:
        # the two part wherever a cut cluster is large and mixed, not only at boundaries
        "label_agreement": float(np.mean(result.membership.argmax(axis=1) == result.labels)),
    }
    for key in ("expected_size", "kernel_scale", "rank"):
        if key in result.info:
            uns[key] = result.info[key]
    store_consensus(
        adata, key_added, result.membership, method="dpp", params=params,
        labels=result.labels, uns=uns,
    )  # fmt: skip
    asked = params["n_clusters"]
    # "auto" (the command line's default) asks for no particular number
    if asked not in (None, "auto") and asked != uns["n_clusters"]:
        warn(f"tl.dpp: {result.info['reason']}", UserWarning)  # catchable, as PCC's
    else:
        logg.info(f"    {result.info['reason']}")
    logg.info(
        f"    finished: {uns['n_clusters']} clusters at threshold {result.threshold:.3g}; "
        f"{uns['label_agreement']:.0%} of the items have their largest membership in their "
        "own cluster",
        time=start,
        deep=(
            f"added\n    .obs[{key_added!r}], labels\n    .obsm['{key_added}_membership']"
            f"\n    .obs['{key_added}_confidence'], .obs['{key_added}_entropy']"
            f"\n    .uns[{key_added!r}]"
        ),
    )
    return adata if copy else None
