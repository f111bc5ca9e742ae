"""Shared parameter text for docstrings, written once (scanpy's ``_doc_params`` pattern).

A docstring names a shared entry with a line holding only ``{name}``, indented like the
parameter names around it; :func:`doc_params` replaces that line with the entry of
:data:`PARAMS` (or a keyword given to the decorator), re-indented to fit. Lines indented
further below the placeholder continue the entry's description, so a function adds what
is particular to it without restating the common part::

    @doc_params()
    def f(adata, random_state=0):
        \"\"\"Do something.

        Parameters
        ----------
        {adata}
        {random_state}
            Here it seeds the pair draw.
        \"\"\"

Only whole-line placeholders are replaced, so literal braces elsewhere in a docstring
(``.obsm[f"{key}_membership"]``, ``{k: labels}``) need no escaping. A placeholder with no
text fails at import time, and ``tests/test_docs.py`` checks that no public docstring
keeps one.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

#: A docstring line that is a placeholder and nothing else.
PLACEHOLDER = re.compile(r"^(?P<indent>[ \t]*)\{(?P<name>\w+)\}[ \t]*$", re.MULTILINE)

_PROGRESS = """\
progress
    Show progress bars on standard error. ``None`` (default): only when
    ``scanpy.settings.verbosity`` is ``'info'`` or higher. tqdm's ``TQDM_DISABLE``
    environment variable is always respected."""

#: The shared entries, each a whole numpydoc parameter entry (name line and description).
PARAMS: dict[str, str] = {
    # --- AnnData wrappers (``scconsensus.tl``) ---
    "adata": """\
adata
    Annotated data matrix: items (cells or samples) in rows.""",
    "adata_ensemble": """\
adata
    Annotated data matrix with an ensemble of partitions at ``.obsm[ensemble_key]``
    (:func:`scconsensus.tl.ensemble`).""",
    "ensemble_key": """\
ensemble_key
    ``.obsm`` key of the ensemble labels (:func:`scconsensus.tl.ensemble`).""",
    "use_rep": """\
use_rep
    Representation to cluster: an ``.obsm`` key or ``"X"``. Default: ``"X_pca"`` when
    present, else ``X``.""",
    "layer": """\
layer
    Cluster ``adata.layers[layer]`` instead (not together with ``use_rep``).""",
    "use_rep_layer": """\
use_rep, layer
    The matrix to cluster: ``.obsm[use_rep]`` (``"X"``: ``adata.X``) or
    ``adata.layers[layer]``, not both. Default: ``"X_pca"`` when present, else ``X``.""",
    "key_added": """\
key_added
    Prefix of every key the result is written under.""",
    "copy": """\
copy
    Return a modified copy instead of writing to ``adata`` in place.""",
    "returns_copy": """\
:class:`~anndata.AnnData` or None
    The modified copy when ``copy=True``, otherwise ``None`` (``adata`` is written
    in place).""",
    "returns_consensus": """\
:class:`~anndata.AnnData` or None
    The copy when ``copy=True``, else ``None``; written in the shared consensus
    layout: ``.obs[key_added]`` (labels ``"0".."K-1"``, largest cluster first: by
    expected size, the membership's column sum, for PCC and PLA, by count for DPP, whose
    labels are its paper's cut of the consensus graph and can differ from an item's
    largest membership, at boundaries and inside large mixed clusters
    (``.uns[key_added]["label_agreement"]``); cells transferred onto a reference keep its order),
    ``.obsm[f"{key_added}_membership"]`` (the fitted memberships, rows summing to one;
    the labelled clusters are its first columns, clusters with mass that no item is
    labelled with come after), ``.obs[f"{key_added}_confidence"]`` (PCC, PLA: how well
    the ensemble's partitions agree with the item's label,
    :func:`scconsensus.core.ensemble_confidence`: the mean of the share of its
    co-members that carry its label and the share of its cluster that the partitions
    put with it, a score that ranks the items of one result, not a probability, its
    level set by the ensemble's range of ``k``; DPP: the item's membership in its own
    cluster, its mean consensus with that cluster's items after each row is rescaled to
    sum to one; NaN for an item with no label: one no partition sampled, or one tied
    exactly between all clusters) and
    ``.obs[f"{key_added}_entropy"]`` (membership entropy per item), and
    ``.uns[key_added]`` with the call's ``params`` and the method's figures.""",
    # --- shared by the array core and the wrappers ---
    "random_state": """\
random_state
    Seed: a non-negative int, a :class:`numpy.random.Generator` or ``None`` (fresh
    entropy). The same seed gives the same result.""",
    "n_jobs": """\
n_jobs
    Parallel workers: a positive number, ``-1`` for all cores (``-2`` all but one, ...),
    ``None`` for joblib's default. Results do not depend on it.""",
    "progress": _PROGRESS,
    "client": """\
client
    A :class:`dask.distributed.Client` to run the work on its cluster instead; the
    result is the same as the local run's.""",
    "n_clusters": """\
n_clusters
    Number of consensus clusters ``K`` (an int), or ``"auto"``: chosen from the
    ensemble by :func:`scconsensus.core.select_k`.""",
    "labels": """\
labels
    ``(n_items, n_partitions)`` ensemble labels, ``-1`` where a partition did not
    sample the item.""",
    "X": """\
X
    ``(n_items, n_features)`` data, dense or sparse; items in rows.""",
    "mode": """\
mode
    ``"dense"`` (all pairs of items), ``"sparse"`` (kNN and random pairs) or ``"auto"``:
    dense up to ``scconsensus.settings.dense_auto_max_items`` items.""",
    "n_neighbors_n_random": """\
n_neighbors, n_random
    Pairs per item in sparse mode: ``n_neighbors`` nearest neighbours and ``n_random``
    uniformly random partners (:func:`scconsensus.core.sample_pairs`).""",
    "pairs_per_item": """\
n_neighbors, n_random
    Pairs per item on the sparse route: ``n_neighbors`` within-cluster partners
    (kNN or ensemble draws, see ``pairs``) and ``n_random`` uniformly random ones.""",
    "pairs_use_rep": """\
use_rep
    Representation for the sparse route's kNN pairs: ``.obsm[use_rep]``
    (``"X"``: ``adata.X``); default ``X_pca`` when present, else the matrix the
    ensemble at ``ensemble_key`` clustered (its ``use_rep``/``layer``).""",
    "pairs": """\
pairs
    Within-cluster partners of the sparse route: ``"knn"`` (kNN of the
    representation; pynndescent above 50,000 items), ``"ensemble"`` (partners
    drawn from the item's cluster in random ensemble partitions, no kNN:
    :func:`scconsensus.core.ensemble_pairs`) or ``"auto"`` (``"ensemble"``
    above 100,000 items or without a representation, else ``"knn"``).""",
    "method": """\
method
    Base clustering: ``"kmeans"``, ``"kmeans_split"``, ``"hc"`` / ``"hc_single"`` /
    ``"hc_average"`` / ``"hc_complete"`` / ``"hc_ward"`` / ``"hc_centroid"``,
    ``"pam"``, ``"spectral"``, ``"leiden"``, or a list of them cycled over the
    partitions (see :func:`scconsensus.core.ensemble.generate_ensemble`).""",
    # --- consensus-k (``core.consensus_k``, ``tl.consensus_k``, ``r.consensus_cluster_plus``) ---
    "consensus_k_max_k_reps": """\
max_k
    Largest ``k`` (CCP's ``maxK``); partitions for ``k = 2..max_k``.
reps
    Subsamples (CCP's ``reps``).""",
    # the fields of core.consensus_k.Resampling, in order
    "consensus_k_sampling": """\
p_item, p_feature
    Fractions of items and features per subsample (``pItem``, ``pFeature``).
method
    ``"hc"`` (CCP's default, with ``linkage``/``distance``) or any fixed-``k`` method
    of :func:`~scconsensus.core.ensemble.generate_ensemble` (``"kmeans"``, ``"pam"``,
    ``"spectral"``, ``"hc_<linkage>"``).
distance, linkage
    Item distance and inner linkage for hierarchical clustering (CCP's ``distance``
    and ``innerLinkage``; ``"pearson"`` is ``1 - r`` between items).""",
    "consensus_k_ensemble_kwargs": """\
**ensemble_kwargs
    Passed to :func:`~scconsensus.core.ensemble.generate_ensemble` (non-``hc`` methods
    only): ``predict_unsampled``, ``n_neighbors`` (spectral), ``client``. Any other
    name raises, suggesting the closest parameter.""",
    # Returns of tl.consensus_k and r.consensus_cluster_plus: the layout both write
    "consensus_k_returns": """\
:class:`~anndata.AnnData` or None
    The modified copy when ``copy=True``, otherwise ``None``. Written for each kept ``k``
    (``r.consensus_cluster_plus``: every ``k`` from 2 to ``max_k``), with
    ``key = f"{key_added}_k{k}"``:

    ``.obs[key]``
        Final labels ``"0".."k-1"``.
    ``.obsm[f"{key}_membership"]``
        Item consensus with each cluster, rows normalised to sum to one (with
        ``.obs[f"{key}_confidence"]`` and ``.obs[f"{key}_entropy"]``); an item alone in its
        cluster (NaN in CCP's ``calcICL``) counts 1 with its own cluster.
    ``.obsm[f"{key}_item_consensus"]``
        The item consensus itself, not normalised (an item alone in its cluster: 1 there,
        as in the membership).
    ``.uns[key]``
        ``method``, ``params`` (with ``k``) and ``cluster_consensus`` (one value per
        cluster).
    ``.obsp[f"{key}_consensus"]``
        The consensus matrix ``M_k``, only with ``store_matrices=True``.

    and once:

    ``.obsm[f"{key_added}_labels"]``
        Every ``k``'s labels (kept or not), categorical columns ``"k2"``, ``"k3"``, ...
    ``.uns[key_added]``
        ``params``, ``keys`` (those written per ``k``), ``seconds`` and the record of
        :meth:`~scconsensus.core.consensus_k.ConsensusK.to_uns`: ``k``, ``cdf`` (one row per
        ``k`` at ``cdf_x`` = 0.01 .. 1), ``area``, ``delta_area`` (the area for the first
        ``k``, then the relative increase), ``pac`` (the fraction of item pairs with
        consensus in ``pac_window`` = (0.1, 0.9], Senbabaoglu et al. 2014), ``best_k``
        (lowest PAC; ``best_k_ties``: every ``k`` tied with it) and ``cluster_consensus``
        (columns ``k``, ``cluster``, ``cluster_consensus``, ``size``).

    A rerun under the same ``key_added`` replaces the earlier run's record and every
    ``k`` it wrote, those it does not write again included (a warning names them).""",
    # --- the ensemble (``tl.ensemble`` and ``core.generate_ensemble``) ---
    "ensemble_partitions": """\
n_partitions
    Number of partitions ``R``.
method
    One base clustering, or a list cycled over the partitions (Strehl & Ghosh's
    "ensemble type 2" when mixed; ``methods=``, the old name, still works until the
    next release): ``"kmeans"``; ``"kmeans_split"`` (random ``k`` in ``[√n/2, √n]``,
    "ensemble type 1"); ``"hc"`` (``linkage`` and ``distance`` below) or
    ``"hc_<linkage>"``; ``"pam"`` (k-medoids, FasterPAM); ``"spectral"`` (kNN
    affinity); ``"leiden"`` (the subgraph of the subsample's items, resolution drawn
    from ``resolution``). k-means clusters float32 data (scanpy's ``X_pca``) in
    float32, as scikit-learn does; the other methods compute in float64.
k
    Clusters per partition: an int; a ``(lo, hi)`` tuple, drawn uniformly (inclusive)
    per partition; a list (or any other sequence of ints: ``range``, 1-D array),
    cycled; or ``"auto"`` (default): drawn log-uniformly from 2 to
    ``sqrt(n_sampled)`` (within [10, 50]). Why: the consensus methods choose the
    number of stable groups from partitions of every resolution, then fit those near
    the chosen one (:func:`scconsensus.core.select_k`); a log scale gives every
    doubling of the resolution the same number of partitions.""",
    "ensemble_sampling": """\
subsample
    Fraction of items sampled without replacement per partition
    (ConsensusClusterPlus's ``pItem``).
feature_subsample
    Fraction of features per partition (``pFeature``).
predict_unsampled
    Assign unsampled items with the partition's own predictor instead of labelling
    them ``-1``: ``True`` (nearest centroid for k-means/PAM, nearest neighbour
    otherwise), ``"centroid"`` or ``"neighbor"``.
linkage, distance
    For ``"hc"``: linkage in single/average/complete/ward/centroid and distance in
    euclidean/pearson/spearman/cosine (pearson and spearman are ``1 - r`` between
    items, as in ConsensusClusterPlus, whose default protocol is ``"pearson"`` with
    ``"average"``).
resolution
    Leiden resolution: one value (as :func:`scanpy.tl.leiden`), or a ``(lo, hi)``
    range drawn log-uniformly per partition. Default: the range at which Leiden finds
    ``k``'s range of clusters (2 to ``sqrt(n_sampled)`` for ``"auto"``), found by a
    few Leiden runs on the graph of one subsample; the partitions then span the same
    resolutions as k-means partitions would (on 3,000 cells in 20 planted clusters,
    PCC on 100 such partitions: ARI 0.87 and K = 19, against 0.62 and K = 12 with the
    range ``(0.2, 2.0)``).
n_neighbors
    kNN graph size for spectral clustering, and for Leiden when no graph is given.""",
    "ensemble_options": """\
options
    ``subsample``, ``feature_subsample``, ``predict_unsampled``, ``linkage``,
    ``distance``, ``resolution``, ``n_neighbors`` as a
    :class:`~scconsensus.core.PartitionOptions` (``tl.ensemble`` documents each);
    ``None``: its defaults.""",
    "neighbors_key_obsp": """\
neighbors_key, obsp
    The graph Leiden partitions cluster, as in :func:`scanpy.tl.leiden`:
    ``.obsp[obsp]``, or the connectivities of ``.uns[neighbors_key]``. Default: the
    graph of :func:`scanpy.pp.neighbors` (``.uns["neighbors"]``) when present, else a
    ``n_neighbors``-NN graph of the representation. Each partition clusters the
    subgraph of the items it sampled (with ``feature_subsample < 1``, the kNN graph
    of its own features instead). ``.uns[key_added]["params"]["graph"]`` says which.""",
    "ensemble_run": """\
random_state
    Seed: a non-negative int, a :class:`numpy.random.Generator` or ``None`` (fresh
    entropy). The same seed gives the same result. Every partition gets its own child
    stream, so the ensemble does not depend on ``n_jobs`` or ``client``.
n_jobs
    Threads running partitions at once (joblib's threading backend, whatever
    ``joblib.parallel_config`` says: the threads share ``X``, so memory does not grow
    with ``n_jobs``). Ignored when ``client`` is given, the way to a Dask cluster.
client
    A :class:`dask.distributed.Client`: run one task per partition on its cluster
    (the data are scattered once to every worker); the same ensemble as the local
    run's.""",
    # --- plots (``scconsensus.pl``) ---
    "figsize_ax": """\
figsize, ax
    Size of a new figure in inches, or the axes to draw into (``figsize`` is then
    ignored).""",
    "transfer_use_rep": """\
use_rep
    Representation in both objects. ``None``: the matrix the reference's ensemble
    clustered (its partitions were drawn there: a ``use_rep`` or ``layer`` recorded by
    :func:`~scconsensus.tl.ensemble`), else the reference's ``X_pca`` when present, else
    ``X``; the reference names it for both (``.uns[key_added]["predictor_rep"]`` says
    which).""",
    "show_save": """\
show
    Show the figure (``None``: ``scanpy.settings.autoshow``, on interactive backends).
save
    As in ``sc.pl``: ``True`` writes ``{figdir}/{plot}{plot_suffix}.{file_format_figs}``;
    a string is appended to the plot name and may end in ``.png``, ``.pdf`` or ``.svg``
    to choose the format; a :class:`~pathlib.Path`, or a string with a folder in it
    (``"/tmp/run1/membership.png"``), is written as given. ``None``:
    ``scanpy.settings.autosave``.""",
    "returns_axes": """\
:class:`~matplotlib.axes.Axes` or None
    The axes, or ``None`` once the figure is shown.""",
}
#: tl.consensus_k takes the resampling options flat, after max_k and reps
PARAMS["consensus_k_resampling"] = (
    PARAMS["consensus_k_max_k_reps"] + "\n" + PARAMS["consensus_k_sampling"]
)


def _indent(text: str, indent: str) -> str:
    return "\n".join(indent + line if line else line for line in text.splitlines())


def fill_doc(doc: str, params: dict[str, str]) -> str:
    """Replace every whole-line ``{name}`` placeholder of ``doc`` with ``params[name]``.

    Parameters
    ----------
    doc
        A docstring.
    params
        Entry texts by placeholder name, unindented.

    Returns
    -------
    str
        ``doc`` with each placeholder line replaced by its text, indented like the line.

    Raises
    ------
    KeyError
        If a placeholder has no entry in ``params``.
    """

    def replace(match: re.Match) -> str:
        name = match["name"]
        if name not in params:
            raise KeyError(f"docstring placeholder {{{name}}} has no shared text")
        return _indent(params[name], match["indent"])

    return PLACEHOLDER.sub(replace, doc)


def doc_params(**kwds: str) -> Callable[[T], T]:
    """Decorator: fill the docstring's ``{name}`` lines from :data:`PARAMS` and ``kwds``.

    Parameters
    ----------
    **kwds
        Entry texts for this docstring only (unindented, like :data:`PARAMS`); they take
        precedence over the shared entries of the same name.

    Returns
    -------
    Callable
        A decorator that rewrites ``__doc__`` in place and returns the object itself, so
        signatures, ``help()`` and Sphinx see an ordinary docstring. Apply it below
        wrapping decorators (e.g. ``renamed_args``), which copy ``__doc__`` when they wrap.
    """
    params = {**PARAMS, **kwds}

    def decorate(obj: T) -> T:
        if obj.__doc__:
            obj.__doc__ = fill_doc(obj.__doc__, params)
        return obj

    return decorate
