"""Clustering ensembles: many partitions of item- and feature-subsamples.

Each partition draws its own subsample, method and ``k`` from a child of one
:class:`numpy.random.SeedSequence`, so the ensemble is the same for any ``n_jobs``.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp
from joblib import Parallel, delayed
from sklearn.exceptions import ConvergenceWarning

from .._docs import doc_params
from .._memory_guard import check_dense_memory
from .._progress import progress_bar
from .._threads import one_openmp_thread, one_thread
from .._validation import (
    RandomState,
    check_choice,
    check_correlation_subsample,
    check_fraction,
    check_int,
    check_matrix,
    check_options,
    random_state_record,
    renamed_args,
)
from .._warnings import warn
from ._ensemble_plan import Spec, k_argument, k_choices, plan_partitions, warn_small_subsample
from ._leiden import (
    _calibrated_resolution,
    _check_graph,
    _igraph,
    _knn_graph,
    _leiden,
    _partition_graph,
    _resolution_range,
)
from ._methods import (
    DENSE_METHOD_ADVICE,
    hierarchical,
    pam,
    quiet_disconnected,
    relabel,
    spectral,
)
from ._methods import predict_unsampled as predict_unsampled_items
from ._options import PartitionOptions, takes_records
from ._spectral import partition_sizes

__all__ = ["METHODS", "Ensemble", "PartitionOptions", "generate_ensemble"]

LINKAGES = ("single", "average", "complete", "ward", "centroid")
DISTANCES = ("euclidean", "pearson", "spearman", "cosine")
METHODS = (
    "kmeans",
    "kmeans_split",
    "hc",
    *(f"hc_{link}" for link in LINKAGES),
    "pam",
    "spectral",
    "leiden",
)
#: A k-means partition of more sampled items than this fits its centroids on this many of
#: them, drawn at random, and assigns the others to the nearest centroid (as CLARA does
#: for k-medoids, Kaufman & Rousseeuw 1990). 5,000 items are 100 per cluster at the
#: default ensemble's finest ``k`` (50). On 10^5 planted cells with a population of 0.1 %
#: or 0.5 %, 5,000 isolate it in as many partitions as 10,000 do and PCC keeps it as
#: often, for 0.6 of the ensemble's time; 3,000 lost it more often (``benchmarks/README.md``).
KMEANS_FIT_ITEMS = 5_000
#: A k-means partition of ``k`` clusters keeps the best of ``ceil(KMEANS_INIT_BUDGET / k)``
#: starts. With few clusters one start is a coin flip between local optima (ALL's B/T
#: lineages at k = 2: ARI 0.51 over 20 single starts, 0.88 with 5), and a consensus of
#: coin flips loses to one k-means; at k >= 10 one start costs as much as 10 at k = 1.
KMEANS_INIT_BUDGET = 10
#: Rows of ``X`` read at once when a k-means partition assigns its sampled items.
_ASSIGN_BLOCK = 65_536


@dataclass
class Ensemble:
    """An ensemble of partitions.

    Attributes
    ----------
    labels
        ``(n_items, n_partitions)`` int32 labels ``0..k_l-1``; ``-1`` for items a
        partition did not sample (unless they were predicted).
    partitions
        One row per partition: method, requested ``k``, clusters found, items
        sampled, and the method's parameters.
    params
        The parameters the ensemble was generated with.
    """

    labels: np.ndarray
    partitions: pd.DataFrame
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def n_partitions(self) -> int:
        return self.labels.shape[1]


def _rows(
    X: np.ndarray | sp.csr_matrix,
    rows: np.ndarray,
    feats: np.ndarray | None,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """The dense rows ``X[rows]`` (features ``feats``; all when ``None``), in ``out`` if given."""
    if feats is None and not sp.issparse(X):
        # mode="clip" (the rows are valid): numpy buffers ``out`` under the default "raise"
        return np.take(X, rows, axis=0, out=out, mode="clip")
    block = X[rows] if feats is None else X[rows][:, feats]
    return block.toarray() if sp.issparse(block) else block


def _float64(X: np.ndarray | sp.csr_matrix) -> np.ndarray | sp.csr_matrix:
    """``X`` in float64 (a copy only of float32 input)."""
    return X.astype(np.float64, copy=False)


def _kmeans(
    X: np.ndarray | sp.csr_matrix, items: np.ndarray, feats: np.ndarray | None, k: int, seed: int
) -> np.ndarray:
    """k-means labels of the rows ``items`` of ``X``: fitted on at most ``KMEANS_FIT_ITEMS``."""
    from sklearn.cluster import KMeans

    n_init = -(-KMEANS_INIT_BUDGET // k)
    model = KMeans(n_clusters=k, n_init=n_init, random_state=seed)
    fit_rows = items
    if items.size > KMEANS_FIT_ITEMS:
        rng = np.random.default_rng(seed)
        fit_rows = items[np.sort(rng.choice(items.size, KMEANS_FIT_ITEMS, replace=False))]
    with warnings.catch_warnings():
        # duplicate points leave fewer than k clusters: one warning for the whole ensemble
        # (_warn_fewer_clusters), not sklearn's one per partition
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(_rows(X, fit_rows, feats))
    return model.labels_ if fit_rows is items else _assign(model, X, items, feats)


def _assign(
    model: Any, X: np.ndarray | sp.csr_matrix, items: np.ndarray, feats: np.ndarray | None
) -> np.ndarray:
    """``model.predict`` of the rows ``items``, read in blocks of ``_ASSIGN_BLOCK`` rows.

    A copy of every sampled row at once cost more than the k-means itself at 10^6 items
    (320 MB of float64 a partition, 0.27-0.34 s of it in page faults, against 0.1 s
    for the fit); a reused block buffer has none.
    """
    labels = np.empty(items.size, dtype=np.int32)
    buf = None
    if feats is None and not sp.issparse(X):
        buf = np.empty((min(items.size, _ASSIGN_BLOCK), X.shape[1]), dtype=X.dtype)
    for start in range(0, items.size, _ASSIGN_BLOCK):
        rows = items[start : start + _ASSIGN_BLOCK]
        block = _rows(X, rows, feats, None if buf is None else buf[: rows.size])
        labels[start : start + rows.size] = model.predict(block)
    return labels


_PREDICTOR = {"kmeans": "centroid", "kmeans_split": "centroid", "pam": "centroid"}


def _run_in_thread(*args: Any) -> tuple[np.ndarray, dict[str, Any]]:
    """One partition on a thread of :func:`_run_all`'s pool: OpenMP limited in this thread
    (a per-thread setting); BLAS, a process-wide one, is limited once around the pool."""
    with one_openmp_thread():
        return _partition(*args)


def _run_partition(*args: Any) -> tuple[np.ndarray, dict[str, Any]]:
    """One partition, single-threaded: partitions, not BLAS/OpenMP threads, are the unit
    of parallelism (``n_jobs``, Dask). Multi-threaded k-means on one small task, or on a
    busy machine, spends most of its time spin-waiting: mini-batch k-means of 800,000 x 50
    took 62 s on 2 threads against 13 s on one on this 2-core machine under load."""
    with one_thread():
        return _partition(*args)


def _partition(
    X: np.ndarray | sp.csr_matrix,
    spec: Spec,
    n_sub: int,
    n_feat: int,
    linkage: str,
    distance: str,
    resolution: tuple[float, float],
    n_neighbors: int,
    predict_unsampled: bool | str,
    graph: sp.csr_matrix | None,
) -> tuple[np.ndarray, dict[str, Any]]:
    rng = np.random.default_rng(spec.seed)
    n, p = X.shape
    items = np.sort(rng.choice(n, size=n_sub, replace=False)) if n_sub < n else np.arange(n)
    feats = np.sort(rng.choice(p, size=n_feat, replace=False)) if n_feat < p else None
    seed = int(rng.integers(2**31 - 1))
    method = spec.method
    info: dict[str, Any] = {"method": method, "k": spec.k or 0, "linkage": "", "distance": ""}
    info["resolution"] = np.nan
    # k-means reads X in blocks and Leiden on a shared graph none of it; the other
    # methods need the subsample's rows at once (a copy of 320 MB at 10^6 x 50)
    kmeans = method in ("kmeans", "kmeans_split")
    rows = not (kmeans or (method == "leiden" and graph is not None))
    # float32 input stays float32 for k-means only: the other methods' results stay
    # those of float64 distances
    X_sub = _float64(_rows(X, items, feats)) if rows else None
    if kmeans:
        fit = _kmeans(X, items, feats, spec.k, seed)
    elif method.startswith("hc"):
        link = method[3:] or linkage
        fit = hierarchical(X_sub, spec.k, link, distance)
        info.update(linkage=link, distance=distance)
    elif method == "pam":
        fit = pam(X_sub, spec.k, seed)
    elif method == "spectral":
        fit, info["connected"] = spectral(X_sub, spec.k, seed, n_neighbors)
    else:  # leiden
        # log-uniform, as k="auto": clusters grow about as a power of the resolution
        res = float(np.exp(rng.uniform(*np.log(resolution))))
        fit = _leiden(_partition_graph(graph, items, n, X_sub, n_neighbors, seed), res, seed)
        info["resolution"] = res
    fit = relabel(fit)
    out = np.full(n, -1, dtype=np.int32)
    out[items] = fit
    if predict_unsampled and n_sub < n:
        how = predict_unsampled if isinstance(predict_unsampled, str) else None
        how = how or _PREDICTOR.get(method, "neighbor")
        missing = np.ones(n, dtype=bool)
        missing[items] = False
        rest = np.flatnonzero(missing)
        # the unsampled rows only: a dense (float64) copy of all of X per partition was
        # n x p floats (sparse X densified whole) for the fifth of them it predicts
        X_rest = _rows(X, rest, feats)
        X_fit = _rows(X, items, feats) if X_sub is None else X_sub
        X_rest, X_fit = (X_rest, X_fit) if kmeans else (_float64(X_rest), _float64(X_fit))
        out[rest] = predict_unsampled_items(X_rest, X_fit, fit, how)
    info["n_clusters"] = int(fit.max()) + 1
    if method == "leiden":  # the resolution, not k, set it: record the k it found
        info["k"] = info["n_clusters"]
    info["n_sampled"] = int(n_sub)
    return out, info


def _check_methods(method: Any) -> list[str]:
    """``method`` as a non-empty list of known method names."""
    if not isinstance(method, str | Sequence):
        raise ValueError(f"method must be a method name or a list of them, got {method!r}.")
    methods = [method] if isinstance(method, str) else list(method)
    if not methods:
        raise ValueError("method is an empty list; give at least one clustering method.")
    for m in methods:
        check_choice(m, METHODS, "method")
    return methods


def _check_options(linkage, distance, subsample, feature_subsample, predict_unsampled):
    """Validate the per-partition options; the two sampling fractions, checked."""
    check_choice(linkage, LINKAGES, "linkage")
    check_choice(distance, DISTANCES, "distance")
    subsample = check_fraction(subsample, "subsample")
    feature_subsample = check_fraction(feature_subsample, "feature_subsample")
    if predict_unsampled not in (True, False, "centroid", "neighbor"):
        raise ValueError(
            "predict_unsampled must be True, False, 'centroid' or 'neighbor', "
            f"got {predict_unsampled!r}."
        )
    return subsample, feature_subsample


def _check_hc_memory(methods: list[str], n_sub: int) -> None:
    for m in sorted(set(methods)):
        if m.startswith("hc"):
            # scipy's linkage builds the condensed float64 distance matrix (4 n^2 bytes)
            # for every linkage, ward and centroid included
            check_dense_memory(
                n_sub,
                itemsize=4,
                what=f"Hierarchical clustering ({m})",
                advice=DENSE_METHOD_ADVICE,
            )


def _run_all(X, specs: list, args: tuple, client, n_jobs, progress):
    """Every partition (on ``n_jobs`` threads, or on a Dask cluster), in ``specs`` order.

    Threads share ``X`` and the graph, so memory does not grow with ``n_jobs`` (worker
    processes each held their copy: 12 GiB for 16 workers at 10^6 items against 5.5 GiB
    for one); k-means, the bulk of an ensemble, runs without the GIL.
    """
    if client is not None:
        from ._distributed import map_ordered

        results = map_ordered(client, _run_partition, specs, before=(X,), after=args)
        return _collect(X, specs, results, progress)
    with one_thread():
        tasks = (delayed(_run_in_thread)(X, spec, *args) for spec in specs)
        pool = Parallel(n_jobs=n_jobs, backend="threading", return_as="generator")
        return _collect(X, specs, pool(tasks), progress)


def _collect(X, specs: list, results, progress):
    """The labels matrix and partition table from the partitions' results, in order."""
    labels = np.empty((X.shape[0], len(specs)), dtype=np.int32)
    infos = []
    bar = progress_bar(
        results, progress=progress, total=len(specs), desc="ensemble", unit="partition"
    )
    for i, (col, info) in enumerate(bar):
        labels[:, i] = col
        infos.append(info)
    # only spectral partitions say whether their graph was connected
    connected = [info.pop("connected") for info in infos if "connected" in info]
    disconnected = connected.count(False)
    partitions = pd.DataFrame(infos)
    _warn_fewer_clusters(labels, partitions)
    if disconnected:
        said = DisconnectedGraphWarning(disconnected, len(connected))
        sink = DISCONNECTED_SINK.get()
        if sink is None:
            warn(said)
        else:
            sink.append(said)
    return labels, partitions


#: Where a caller that runs one ensemble per ``k`` (the consensus-k protocol) collects the
#: disconnected-graph counts to say them once; ``None``: each ensemble warns.
DISCONNECTED_SINK: ContextVar[list | None] = ContextVar("disconnected_sink", default=None)


class DisconnectedGraphWarning(UserWarning):
    """Spectral partitions ran on a kNN graph of several components.

    It carries its counts, so that a caller that runs one ensemble per ``k`` (the
    consensus-k protocol) can say it once for all of them.

    Parameters
    ----------
    disconnected
        Spectral partitions whose graph was not connected.
    spectral
        Spectral partitions in all.
    where
        Text after "partitions" naming where they ran (e.g. ``" (k = 2..6)"``).

    Examples
    --------
    >>> import warnings
    >>> from scconsensus.core import DisconnectedGraphWarning
    >>> with warnings.catch_warnings():  # to silence it
    ...     warnings.simplefilter("ignore", DisconnectedGraphWarning)
    >>> str(DisconnectedGraphWarning(2, 10))[:40]
    '2 of 10 spectral partitions ran on a kNN'
    """

    def __init__(self, disconnected: int, spectral: int, where: str = "") -> None:
        self.disconnected, self.spectral = disconnected, spectral
        super().__init__(
            f"{disconnected} of {spectral} spectral partitions{where} ran on a kNN graph "
            "that is not fully connected (scikit-learn: the spectral embedding may not work "
            "as expected); raise n_neighbors, or use another method for well-separated data."
        )


def _warn_fewer_clusters(labels: np.ndarray, partitions: pd.DataFrame) -> None:
    """One warning for the partitions that found fewer clusters than their ``k``."""
    asked = partitions["k"].to_numpy()
    found = partition_sizes(labels)
    short = np.flatnonzero((asked > 0) & (found < asked))
    if short.size:
        r = short[0]
        warn(
            f"{short.size} of {labels.shape[1]} partitions found fewer clusters than asked "
            f"(partition {r}: {found[r]} for k={asked[r]}): their subsample holds fewer "
            "distinct points than k. Check the representation clustered (e.g. a constant "
            ".obsm['X_pca'] or duplicated cells) or ask for fewer clusters.",
            UserWarning,
        )


def _record(n_partitions, methods, k, options, graph, n_neighbors, random_state) -> dict:
    """The parameters an ensemble was generated with, as stored in ``Ensemble.params``;
    ``graph`` is ``(source, calibrated)``: whether the Leiden resolutions were calibrated
    to ``k`` (a rebuild on other data, ``tl.k_null``'s, calibrates them anew)."""
    subsample, feature_subsample, predict_unsampled, linkage, distance, resolution = options
    graph_source, calibrated = graph
    return {
        "n_partitions": n_partitions,
        "method": list(methods),
        "k": k if isinstance(k, str) else list(k) if isinstance(k, tuple | list) else int(k),
        "k_kind": "range" if isinstance(k, tuple) else "list",
        "subsample": subsample,
        "feature_subsample": feature_subsample,
        "predict_unsampled": predict_unsampled,
        "linkage": linkage,
        "distance": distance,
        "resolution": "auto" if resolution is None else list(resolution),  # auto: no Leiden
        "resolution_calibrated": calibrated,
        "graph": graph_source,
        "n_neighbors": int(n_neighbors),
        "random_state": random_state_record(random_state),  # as every method records it
    }


@takes_records(options=PartitionOptions)
@renamed_args(methods="method")
@doc_params()
def generate_ensemble(
    X: np.ndarray | sp.spmatrix,
    n_partitions: int = 100,
    method: str | Sequence[str] = "kmeans",
    k: int | tuple[int, int] | Sequence[int] | str = "auto",
    *,
    options: PartitionOptions | None = None,
    graph: sp.spmatrix | None = None,
    random_state: RandomState = 0,
    n_jobs: int | None = 1,
    client: Any = None,
    progress: bool | None = None,
) -> Ensemble:
    """Build an ensemble of partitions of the rows of ``X``.

    Parameters
    ----------
    {X}
    {ensemble_partitions}
    {ensemble_options}
    graph
        ``(n_items, n_items)`` weighted graph for Leiden, e.g. scanpy's
        ``.obsp["connectivities"]``; each partition clusters the subgraph of its items
        (with igraph's Leiden, two sweeps, as :func:`scanpy.tl.leiden` with
        ``flavor="igraph"``). Default: one ``n_neighbors``-NN graph of ``X``, built once;
        with ``feature_subsample < 1`` each partition builds the kNN graph of its features.
    {ensemble_run}
    {progress}

    Returns
    -------
    Ensemble
        Labels ``(n_items, n_partitions)`` (``-1`` where unsampled), one row per partition
        and the parameters.

    Examples
    --------
    >>> import numpy as np
    >>> from scconsensus.core.ensemble import generate_ensemble
    >>> X = np.random.default_rng(0).normal(size=(60, 3))
    >>> ens = generate_ensemble(X, n_partitions=5, k=3, progress=False)
    >>> ens.labels.shape
    (60, 5)
    """
    o = check_options(options, PartitionOptions, "options")
    X = check_matrix(X, keep_float32=True)
    n, p = X.shape
    n_partitions = check_int(n_partitions, "n_partitions", 1)
    n_neighbors = check_int(o.n_neighbors, "n_neighbors", 1)
    methods = _check_methods(method)
    linkage, distance, predict_unsampled = o.linkage, o.distance, o.predict_unsampled
    subsample, feature_subsample = _check_options(
        linkage, distance, o.subsample, o.feature_subsample, predict_unsampled
    )
    resolution = None if o.resolution is None else _resolution_range(o.resolution)
    graph = _check_graph(graph, n)
    graph_source = "given" if graph is not None else "knn"
    n_sub = max(2, round(subsample * n))
    n_feat = max(1, round(feature_subsample * p))
    if any(m.startswith("hc") for m in methods):
        check_correlation_subsample(n_feat, p, distance, "feature_subsample")
    k = k_argument(k)
    warn_small_subsample(k, methods, subsample, n_sub, n)
    specs = plan_partitions(n_partitions, methods, k, n_sub, random_state)
    _check_hc_memory(methods, n_sub)
    if client is not None:
        from ._distributed import check_client

        check_client(client)
    leiden = (graph, (k, resolution), n_sub, n_neighbors, random_state)
    graph, resolution = _leiden_setup(X, methods, feature_subsample == 1.0, *leiden)
    args = (n_sub, n_feat, linkage, distance, resolution, n_neighbors, predict_unsampled, graph)
    with quiet_disconnected():  # said once, by _collect
        labels, partitions = _run_all(X, specs, args, client, n_jobs, progress)
    options = (subsample, feature_subsample, predict_unsampled, linkage, distance, resolution)
    source = (graph_source, "leiden" in methods and o.resolution is None)
    params = _record(n_partitions, methods, k, options, source, n_neighbors, random_state)
    return Ensemble(labels=labels, partitions=partitions, params=params)


def _leiden_setup(X, methods, shared: bool, graph, k_resolution, n_sub, n_neighbors, seed):
    """The igraph ``Graph`` Leiden partitions share and their ``(lo, hi)`` resolutions.

    The graph is ``graph``, else one kNN graph of all items; ``None`` when partitions
    subsample features (each clusters the kNN graph of its own features) or none is
    Leiden. Without a ``resolution``, the range is calibrated to ``k``'s range.
    """
    k, resolution = k_resolution
    if "leiden" not in methods or (not shared and resolution is not None):
        return None, resolution
    whole = graph if graph is not None else _knn_graph(_float64(X), n_neighbors, seed)
    g = _igraph(whole)
    if resolution is None:
        _, values = k_choices(k, n_sub)
        resolution = _calibrated_resolution(g, (min(values), max(values)), n_sub, seed)
    return (g if shared else None), resolution
