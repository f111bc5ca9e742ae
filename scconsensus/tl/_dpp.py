"""``tl.dpp``: determinantal consensus clustering (Vicente & Murua 2021) on an AnnData."""

from __future__ import annotations

from anndata import AnnData
from scanpy import logging as logg

from .._progress import check_progress
from .._settings import settings
from .._validation import RandomState, check_int, check_key
from ..core.dpp import dpp_consensus
from ._anndata import get_rep, store_consensus


def dpp(
    adata: AnnData,
    n_runs: int = 200,
    use_rep: str | None = None,
    *,
    sampler: str = "dpp",
    a: float = 0.5,
    tau: float = 0.6,
    s: float = 1.0,
    mode: str = "auto",
    k_max: int | None = None,
    expected_size: float | None = None,
    n_components: int | None = None,
    n_thresholds: int | None = None,
    n_neighbors: int = 15,
    n_random: int = 10,
    layer: str | None = None,
    random_state: RandomState = 0,
    key_added: str = "dpp",
    progress: bool | None = None,
    copy: bool = False,
) -> AnnData | None:
    """Determinantal consensus clustering: DPP-sampled Voronoi runs, thresholded consensus.

    Each of ``n_runs`` runs draws generator items from a determinantal point process with
    the RBF kernel of Vicente & Murua (2021), eq. 9 (bandwidth: mean pairwise squared
    distance times ``s``) and cuts the data into their Voronoi cells. The consensus matrix
    of the runs is cut at every observed value ``θ ≥ tau``; connected components smaller
    than ``n**a`` are merged into the component holding their strongest link, and the
    candidate with the lowest kernel validity index (KVI, eq. 11) is kept. See
    :func:`scconsensus.core.dpp.dpp_consensus`.

    Parameters
    ----------
    adata
        Items (cells or samples) in rows.
    n_runs
        Number of runs ``R`` (paper: 200).
    use_rep
        ``.obsm`` key or ``"X"``; default ``"X_pca"`` when present, else ``X``.
    sampler
        ``"dpp"``, or the baselines ``"uniform"`` (PAM-like) and ``"kmeans++"``.
    a
        Clusters smaller than ``n**a`` are merged (paper: 1/2).
    tau
        Smallest consensus threshold considered (paper: 0.6).
    s
        Bandwidth scale (paper: 1).
    mode
        ``"dense"`` (exact DPP, full consensus matrix), ``"sparse"`` (Nyström low-rank
        DPP, consensus on kNN + random pairs) or ``"auto"``: dense up to
        ``scconsensus.settings.dense_auto_max_items`` items.
    k_max
        Largest number of generators of the baselines (default ``ceil(sqrt(n))``).
    expected_size
        Not in the paper: rescale the DPP kernel so that runs draw this many generators
        on average (default: the paper's kernel as is; its mean draw grows with n and
        the dimension, see :func:`scconsensus.core.dpp.dpp_consensus`).
    n_components
        Nyström rank of the sparse route (default ``min(n, 300)``).
    n_thresholds
        Keep at most this many thresholds (default: every observed value ``≥ tau``).
    n_neighbors, n_random
        Pairs per item for the sparse route's consensus.
    layer
        Cluster ``adata.layers[layer]`` instead.
    random_state
        Seed of every random choice.
    key_added
        Prefix of the keys written.
    progress
        Show progress bars on standard error. ``None`` (default): only when
        ``scanpy.settings.verbosity`` is ``'info'`` or higher. tqdm's ``TQDM_DISABLE``
        environment variable is always respected.
    copy
        Return a modified copy instead of writing in place.

    Returns
    -------
    ``None`` or a copy, with

    ``.obs[key_added]``
        Categorical cluster labels ``"0".."K-1"``, largest cluster first.
    ``.obsm[f"{key_added}_membership"]``
        ``(n_obs, K)``: each item's mean consensus with the other items of each cluster,
        rows normalised to sum to one.
    ``.obs[f"{key_added}_confidence"]``, ``.obs[f"{key_added}_entropy"]``
        Largest membership and membership entropy per item.
    ``.uns[key_added]``
        ``params``; ``candidates`` (DataFrame: threshold, n_clusters, kvi, sr, within,
        between, btilde, chosen); ``threshold`` (chosen θ); ``sigma2``; ``mode``;
        ``run_sizes`` (generators per run); ``expected_size`` of the DPP where used.

    Examples
    --------
    >>> import scconsensus as scc
    >>> adata = scc.datasets.iris()
    >>> scc.tl.dpp(adata, n_runs=50)
    >>> adata.obs["dpp"].cat.categories.size >= 2
    True
    """
    key_added = check_key(key_added)
    n_runs = check_int(n_runs, "n_runs", 1)
    X = get_rep(adata, use_rep, layer=layer)
    n = X.shape[0]
    route = (
        mode if mode != "auto" else ("dense" if n <= settings.dense_auto_max_items else "sparse")
    )
    start = logg.info(
        f"determinantal consensus clustering: {n_runs} {sampler} runs on {n} items, "
        f"{route} route"
        + (
            f" (mode='auto', settings.dense_auto_max_items={settings.dense_auto_max_items})"
            if mode == "auto"
            else ""
        )
    )
    result = dpp_consensus(
        X,
        n_runs,
        sampler=sampler,
        a=a,
        tau=tau,
        s=s,
        mode=mode,
        k_max=k_max,
        expected_size=expected_size,
        n_components=n_components,
        n_thresholds=n_thresholds,
        n_neighbors=n_neighbors,
        n_random=n_random,
        random_state=random_state,
        progress=check_progress(progress),
    )
    adata = adata.copy() if copy else adata
    params = {
        "n_runs": n_runs,
        "use_rep": use_rep,
        "layer": layer,
        "sampler": sampler,
        "a": a,
        "tau": tau,
        "s": s,
        "mode": mode,
        "k_max": result.info["k_max"],
        "expected_size": expected_size,
        "n_components": n_components,
        "n_thresholds": n_thresholds,
        "n_neighbors": n_neighbors,
        "n_random": n_random,
        "random_state": random_state if isinstance(random_state, int) else str(random_state),
    }
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
    }
    for key in ("expected_size", "kernel_scale", "rank"):
        if key in result.info:
            uns[key] = result.info[key]
    store_consensus(
        adata, key_added, result.membership, params=params, labels=result.labels, uns=uns
    )
    logg.info(
        f"    finished: {uns['n_clusters']} clusters at threshold {result.threshold:.3g}",
        time=start,
        deep=(
            f"added\n    .obs[{key_added!r}], labels\n    .obsm['{key_added}_membership']"
            f"\n    .obs['{key_added}_confidence'], .obs['{key_added}_entropy']"
            f"\n    .uns[{key_added!r}]"
        ),
    )
    return adata if copy else None
