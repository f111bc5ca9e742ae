"""Reading inputs from and writing results to AnnData, shared by every ``tl`` wrapper.

One layout for every consensus method (ours and ConsensusClusterPlus):

- ``.obs[key]``: categorical hard labels ``"0" .. "k-1"``
- ``.obsm[f"{key}_membership"]``: ``(n_obs, k)`` soft memberships as the model fitted them,
  rows sum to 1; the clusters of ``.obs[key]`` are its first columns (category ``"c"`` is
  column ``c``), clusters with mass that no item is labelled with come after
- ``.obs[f"{key}_confidence"]``: for PCC and PLA, how well the ensemble's partitions
  agree with the item's label (:func:`scconsensus.core.ensemble_confidence`): the mean
  of two shares, each averaged over the partitions that sampled the item, the share of
  its co-members (in the partitions of at least ``k`` clusters) that carry its label and
  the share of its consensus cluster that the partition puts with it; a score that ranks
  the items of one result, not a probability (finer partitions lower it for every item
  alike). Cells transferred by ``tl.pla_transfer``: the same, measured against the
  reference's items (:func:`scconsensus.core.transferred_confidence`). DPP,
  ConsensusClusterPlus and consensus-k: the item's membership in its own cluster (DPP:
  its mean consensus with that cluster, after each row of the membership is rescaled to
  sum to 1). NaN for an item with no label
- ``.obs[f"{key}_entropy"]``: entropy (nats) of the membership per item
- ``.uns[key]``: ``{"method": "pcc", "params": {...}, ...method figures}``

An item whose membership is exactly uniform (no evidence for any cluster, e.g. an item
that no partition of the ensemble sampled) gets a missing hard label (NaN), not ``"0"``;
so does an item tied exactly between all clusters, with a warning that counts them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd
from anndata import AnnData
from anndata import ImplicitModificationWarning as IMW
from scanpy import logging as logg

from .._docs import doc_params
from .._validation import check_bool, check_key, check_labels, check_matrix
from .._warnings import warn
from ..core import ensemble_confidence, transferred_confidence
from ..core.membership import (
    confidence,
    entropy,
    hard_labels,
    labelled_first,
    normalize_rows,
)
from ._input_checks import check_use_rep, warn_feature_matrix
from ._record_keys import is_ensemble_record
from ._runs import refuse_joined

#: Above this many features, ``use_rep=None`` refuses ``.X`` without a representation.
MAX_FEATURES_WITHOUT_REP = 5_000


@doc_params()
def get_rep(
    adata: AnnData,
    use_rep: str | None = None,
    *,
    layer: str | None = None,
    keep_float32: bool = False,
    min_items: int = 3,
):
    """The matrix to cluster: ``.obsm[use_rep]``, a layer, ``X_pca`` when present, else ``X``.

    Parameters
    ----------
    {adata}
    {use_rep_layer}
    keep_float32
        Return float32 input as float32 (k-means and kNN searches), else float64.
    min_items
        Fewest items accepted: 3 to cluster, 1 for items assigned to a fitted consensus
        (``tl.pla_transfer``'s new cells).

    Returns
    -------
    numpy.ndarray or scipy.sparse.csr_matrix
        The checked matrix, items in rows.

    Raises
    ------
    ValueError
        If ``use_rep`` is missing, or ``X`` is too wide to use without a
        reduced representation, or the matrix holds NaN/inf.
    """
    if not isinstance(adata, AnnData):
        raise ValueError(f"Expected an AnnData object, got {type(adata).__name__}.")
    if layer is not None:
        if use_rep is not None:
            raise ValueError("Pass either use_rep or layer, not both.")
        if layer not in adata.layers:
            raise ValueError(
                f"layer={layer!r} is not in adata.layers (available: {list(adata.layers)})."
            )
        X = check_matrix(
            adata.layers[layer], f"adata.layers[{layer!r}]", keep_float32=keep_float32,
            min_items=min_items,
        )  # fmt: skip
        warn_feature_matrix(adata, X, f"adata.layers[{layer!r}]")  # often scanpy's counts
        return X
    use_rep = default_rep(adata, use_rep)
    if use_rep is None:
        if adata.n_vars > MAX_FEATURES_WITHOUT_REP:
            raise ValueError(
                f"adata has {adata.n_vars} features and no 'X_pca'. Run sc.pp.pca(adata) "
                "first, or pass use_rep='X' to cluster on all features."
            )
        use_rep = "X"
    if use_rep == "X":
        if adata.X is None:
            raise ValueError("adata.X is empty; pass use_rep naming an .obsm entry.")
        if adata.isbacked:  # X is a file dataset: checked as an object it read "dtype object"
            raise ValueError(
                "adata.X is on disk (AnnData opened with backed='r'), and scconsensus reads "
                "X into memory: load it first with adata = adata.to_memory(), or cluster a "
                "representation or a layer (use_rep='X_pca', layer=...)."
            )
        X = check_matrix(adata.X, "adata.X", keep_float32=keep_float32, min_items=min_items)
        warn_feature_matrix(adata, X, "adata.X")
        return X
    check_use_rep(adata, use_rep)
    rep = adata.obsm[use_rep]
    if isinstance(rep, pd.DataFrame):
        rep = rep.to_numpy()
    return check_matrix(
        rep, f"adata.obsm[{use_rep!r}]", keep_float32=keep_float32, min_items=min_items
    )


def default_rep(adata: AnnData, use_rep: str | None, layer: str | None = None) -> str | None:
    """``use_rep`` as :func:`get_rep` reads it: ``"X_pca"`` when neither it nor ``layer``
    is given and ``adata.obsm`` holds one (``None`` still means ``X``)."""
    if use_rep is None and layer is None and "X_pca" in adata.obsm:
        return "X_pca"
    return use_rep


def lazy_rep(adata: AnnData, use_rep: str | None, ensemble_key: str):
    """The representation for the sparse route's kNN pairs, checked now and read when drawn.

    A function returning :func:`get_rep`'s matrix: ``use_rep``, else ``X_pca``, else the
    matrix :func:`scconsensus.tl.ensemble` clustered for ``ensemble_key`` (the ensemble's
    own view of the items, so their kNN share its clusters). ``None`` when there is none
    to read (no such record, or its matrix is gone): the core then draws its pairs
    otherwise, as it did before the record was read.
    """
    check_use_rep(adata, use_rep)
    if default_rep(adata, use_rep) is not None:
        return lambda: get_rep(adata, use_rep, keep_float32=True)
    built_on = _ensemble_rep(adata, ensemble_key)
    return None if built_on is None else _EnsembleRep(adata, *built_on)


class _EnsembleRep:
    """Reads the matrix the ensemble clustered when the core draws kNN pairs of it, and
    says so afterwards (:func:`log_rep_read`): a log line written while the core's
    progress bar is drawn lands inside the bar's line."""

    def __init__(self, adata: AnnData, use_rep: str | None, layer: str | None):
        self.adata, self.use_rep, self.layer, self.read = adata, use_rep, layer, False

    def __call__(self) -> np.ndarray:
        self.read = True
        return get_rep(self.adata, self.use_rep, layer=self.layer, keep_float32=True)


def log_rep_read(X) -> None:
    """Log which matrix the kNN pairs came from, when :func:`lazy_rep` read the ensemble's."""
    if isinstance(X, _EnsembleRep) and X.read:
        name = _rep_name(X.use_rep, X.layer)
        logg.info(f"    kNN pairs of {name}, the matrix the ensemble clustered")


def _rep_name(use_rep: str | None, layer: str | None) -> str:
    if layer is not None:
        return f"adata.layers[{layer!r}]"
    return "adata.X" if use_rep in (None, "X") else f"adata.obsm[{use_rep!r}]"


def _ensemble_rep(adata: AnnData, ensemble_key: str) -> tuple[str | None, str | None] | None:
    """``(use_rep, layer)`` recorded by :func:`scconsensus.tl.ensemble` for
    ``ensemble_key`` while that matrix is still there to read, else ``None``. A recorded
    ``use_rep=None`` without a layer comes back as ``"X"``: the ensemble recorded the name
    it read, so ``None`` is ``X``, not an ``X_pca`` computed since."""
    record = adata.uns.get(ensemble_key)
    if not is_ensemble_record(record):
        return None
    params = record["params"] if isinstance(record["params"], Mapping) else {}
    use_rep, layer = params.get("use_rep"), params.get("layer")
    if layer is not None:
        there = layer in adata.layers
    elif use_rep is not None and use_rep != "X":
        there = use_rep in adata.obsm
    else:  # adata.X, which tl.ensemble reads without use_rep only up to a width
        there = adata.X is not None and (use_rep == "X" or adata.n_vars <= MAX_FEATURES_WITHOUT_REP)
    if not there:
        return None
    return ("X" if use_rep is None and layer is None else use_rep), layer


@doc_params()
def get_ensemble(adata: AnnData, ensemble_key: str = "scc_ensemble") -> np.ndarray:
    """The ``(n_obs, n_partitions)`` int32 labels written by :func:`scconsensus.tl.ensemble`.

    Parameters
    ----------
    {adata_ensemble}
    {ensemble_key}

    Returns
    -------
    numpy.ndarray
        The checked labels, ``-1`` where a partition did not sample the item.
    """
    if not isinstance(adata, AnnData):
        raise ValueError(f"Expected an AnnData object, got {type(adata).__name__}.")
    if ensemble_key not in adata.obsm:
        raise ValueError(
            f"No ensemble at adata.obsm[{ensemble_key!r}]. Run scconsensus.tl.ensemble(adata) "
            "first, or pass ensemble_key naming an existing ensemble."
        )
    labels = check_labels(adata.obsm[ensemble_key], f"adata.obsm[{ensemble_key!r}]")
    refuse_joined(adata, ensemble_key)
    return labels


def check_copy(adata: AnnData, copy: Any) -> bool:
    """``copy`` checked against ``adata`` before any work: a backed AnnData cannot be copied.

    anndata copies a backed object only to a new file, so ``copy=True`` would fail in
    :meth:`anndata.AnnData.copy` after the whole computation; refused up front instead.

    Parameters
    ----------
    adata
        The AnnData a tool was given.
    copy
        The tool's ``copy`` argument.

    Returns
    -------
    bool
        ``copy`` as a bool.
    """
    copy = check_bool(copy, "copy")
    if copy and isinstance(adata, AnnData) and adata.isbacked:
        raise ValueError(
            f"copy=True cannot copy an AnnData opened in backed mode ({adata.filename}): anndata "
            "copies those only to a file. Load it first with adata = adata.to_memory(), or "
            "make a file copy with adata.copy(filename='copy.h5ad') and pass that with "
            "copy=False."
        )
    return copy


#: A membership row whose largest and smallest entries differ by less than this is uniform.
UNIFORM_TOL = 1e-12


def consensus_layout(key: str) -> dict[str, list[str]]:
    """The entries a consensus result ``key`` writes, per slot (the table of the module
    docstring): labels, confidence and entropy in ``.obs``, the membership in ``.obsm``,
    the record in ``.uns``."""
    return {
        "obs": [key, f"{key}_confidence", f"{key}_entropy"],
        "obsm": [f"{key}_membership"],
        "uns": [key],
    }


def warn_overwrite(adata: AnnData, **slots: Iterable[str]) -> None:
    """Log one warning naming every existing key that a write is about to replace.

    Parameters
    ----------
    adata
        The AnnData about to be written.
    **slots
        ``obs=[...]``, ``obsm=[...]``, ``obsp=[...]``, ``uns=[...]``: keys to be written.
    """
    taken = [
        f".{slot}[{key!r}]"
        for slot, keys in slots.items()
        for key in keys
        if key in getattr(adata, slot)
    ]
    if taken:
        logg.warning(
            f"overwriting {', '.join(taken)}; pass another key_added to keep the existing values."
        )


def sanitize_uns(value: Any) -> Any:
    """Make a value writable to ``.h5ad`` (str keys, no tuples, no lists of dicts).

    ``None`` stays ``None`` (anndata >= 0.12 writes and reads it back), so a parameter
    left at ``None`` reads as ``None``, in memory and from the file.

    Examples
    --------
    >>> from scconsensus.tl._anndata import sanitize_uns
    >>> sanitize_uns({"max_iter": None, "k": (2, 5), 3: "x"})
    {'max_iter': None, 'k': array([2, 5]), '3': 'x'}
    """
    if isinstance(value, Mapping):
        return {str(k): sanitize_uns(v) for k, v in value.items()}
    if value is None:
        return None
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, tuple | list):
        items = [sanitize_uns(v) for v in value]
        if all(isinstance(v, str) for v in items):
            return np.asarray(items, dtype=object) if items else np.array([], dtype=float)
        if all(isinstance(v, bool | int | float) for v in items):
            return np.asarray(items)
        return {str(i): v for i, v in enumerate(items)}
    return value


@doc_params()
def store_consensus(
    adata: AnnData,
    key_added: str,
    membership: np.ndarray,
    *,
    method: str,
    params: Mapping[str, Any],
    labels: np.ndarray | None = None,
    uns: Mapping[str, Any] | None = None,
    drop_empty: bool = True,
    ensemble: np.ndarray | None = None,
    reference: tuple[np.ndarray, np.ndarray] | None = None,
) -> None:
    """Write a consensus result in the shared layout (see module docstring): all of it
    or, on any fault, none (:func:`consensus_entries`, then :func:`assign_all`).

    Parameters
    ----------
    adata
        Written in place.
    {key_added}
    membership
        ``(n_obs, k)`` soft memberships; rows are renormalised to sum to one.
    method
        The function that fitted it (``"pcc"``, ``"pla"``, ``"pla_transfer"``, ``"dpp"``,
        ``"consensus_k"``, ``"consensus_cluster_plus"``), stored as
        ``.uns[key_added]["method"]``: readers of the result (plots, the report) ask it
        rather than guess from the record's other entries.
    params
        The call's parameters, stored under ``.uns[key_added]["params"]``.
    labels
        Hard labels ``0..k-1``; the argmax of ``membership`` when omitted.
    uns
        Further method figures for ``.uns[key_added]``.
    drop_empty
        Give categories only to clusters some item is labelled with (no empty
        category): they become the first columns of the membership, which is
        otherwise stored as given. ``False`` keeps a reference's clusters as
        categories, e.g. for cells transferred onto it.
    ensemble
        The ``(n_obs, R)`` partitions the consensus was built from: the confidence is
        then their support of each item's label
        (:func:`~scconsensus.core.ensemble_confidence`), else the item's membership in
        its own cluster.
    reference
        ``(ensemble, labels)`` of the items a consensus was fitted on, when the items
        written are others assigned to it (``ensemble`` then holds their labels in the
        same partitions): the confidence is measured against the reference's items
        (:func:`~scconsensus.core.transferred_confidence`).
    """
    entries = consensus_entries(
        adata,
        key_added,
        membership,
        method=method,
        params=params,
        labels=labels,
        uns=uns,
        drop_empty=drop_empty,
        ensemble=ensemble,
        reference=reference,
    )
    assign_all(adata, **entries)


def consensus_entries(
    adata: AnnData,
    key_added: str,
    membership: np.ndarray,
    *,
    method: str,
    params: Mapping[str, Any],
    labels: np.ndarray | None = None,
    uns: Mapping[str, Any] | None = None,
    drop_empty: bool = True,
    ensemble: np.ndarray | None = None,
    reference: tuple[np.ndarray, np.ndarray] | None = None,
) -> dict[str, dict[str, Any]]:
    """The entries :func:`store_consensus` writes, built and not assigned.

    Arguments as :func:`store_consensus`'s. Returns ``{"obs": ..., "obsm": ...,
    "uns": ...}``, the keyword arguments of :func:`assign_all`: a caller writing
    several results (one per ``k``) merges them into one all-or-nothing assignment.
    Logs the overwrite warning.
    """
    check_key(key_added)
    fitted = membership  # as given: _warn_tied tells rows without mass from ties
    membership = normalize_rows(membership)
    if membership.shape[0] != adata.n_obs:
        raise ValueError(
            f"membership has {membership.shape[0]} rows but adata has {adata.n_obs} items."
        )
    membership, labels, k = _final_labels(membership, labels, drop_empty, (fitted, ensemble))
    categories = [str(i) for i in range(k)]
    conf = _confidence(membership, labels, ensemble, reference)
    layout = consensus_layout(key_added)
    obs_keys = layout["obs"]
    warn_overwrite(adata, **layout)
    record = {"method": method, "params": dict(params)}
    if uns:
        record.update(uns)
    # everything built before the first assignment: a fault leaves adata as it was
    obs = dict(
        zip(
            obs_keys,
            [
                pd.Categorical.from_codes(labels, categories=categories),
                conf,
                entropy(membership),
            ],
            strict=True,
        )
    )
    return {
        "obs": obs,
        "obsm": {f"{key_added}_membership": membership},
        "uns": {key_added: sanitize_uns(record)},
    }


def merge_entries(*parts: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """One set of :func:`assign_all` arguments from several (e.g. one per ``k``, from
    :func:`consensus_entries`): written by one call, all of them or none.

    Examples
    --------
    >>> from scconsensus.tl._anndata import merge_entries
    >>> merge_entries({"obs": {"a": 1}}, {"obs": {"b": 2}, "uns": {"c": 3}})
    {'obs': {'a': 1, 'b': 2}, 'obsm': {}, 'obsp': {}, 'uns': {'c': 3}}
    """
    merged: dict[str, dict[str, Any]] = {"obs": {}, "obsm": {}, "obsp": {}, "uns": {}}
    for part in parts:
        for slot, new in part.items():
            merged[slot].update(new)
    return merged


def labels_table(obs_names: pd.Index, labels: Mapping[int, np.ndarray]) -> pd.DataFrame:
    """Every ``k``'s labels (``0..k-1``, ``-1`` none) as categorical columns ``"k2"``, ...:
    the ``.obsm[f"{key}_labels"]`` of ``tl.consensus_k`` and ``r.consensus_cluster_plus``."""
    columns = {
        f"k{int(k)}": pd.Categorical.from_codes(
            np.asarray(codes, dtype=np.int64), categories=[str(c) for c in range(int(k))]
        )
        for k, codes in labels.items()
    }
    return pd.DataFrame(columns, index=obs_names)


def _confidence(membership: np.ndarray, labels: np.ndarray, ensemble, reference) -> np.ndarray:
    """The ensemble's support of each label when the ensemble is given (measured against
    the ``reference``'s items when there is one), else the membership."""
    if ensemble is None:
        return confidence(membership, labels)
    if reference is not None:
        return transferred_confidence(reference[0], reference[1], ensemble, labels)
    return ensemble_confidence(ensemble, labels)


def _final_labels(membership: np.ndarray, labels, drop_empty: bool, evidence=(None, None)):
    """``(membership, labels, k)``: no label for uniform rows, the labelled clusters first
    (``k`` of them) when ``drop_empty``. ``evidence``: the membership before its rows
    were normalised, and the ensemble, for :func:`_warn_tied`."""
    k = membership.shape[1]
    labels = hard_labels(membership) if labels is None else np.asarray(labels, dtype=np.int64)
    if k > 1:
        # argmax of a uniform row is cluster 0 only by position: no evidence, no label
        uniform = np.ptp(membership, axis=1) < UNIFORM_TOL
        labels = np.where(uniform, -1, labels)
        _warn_tied(uniform, evidence, k)
    # a cluster no item is labelled with would be an empty category (it breaks
    # sc.tl.rank_genes_groups); callers order first so that their .uns figures align
    if drop_empty:
        membership, labels, _, k = labelled_first(membership, labels)
    return membership, labels, k


def _warn_tied(uniform: np.ndarray, evidence: tuple, k: int) -> None:
    """Warn about items left unlabelled by an exact tie between the ``k`` clusters.

    Rows without evidence are uniform too: those of the items no partition sampled (the
    consensus warns about them) and rows without mass in ``evidence[0]``. An item
    with evidence that ends exactly between all clusters (e.g. 0.5 / 0.5 at ``k = 2``,
    with as many partitions for each side) was left unlabelled silently.
    """
    fitted, ensemble = evidence
    if not uniform.any():  # the common case: no pass over the rows below
        return
    if fitted is not None:  # a row without mass (DPP's lone outlier) has no evidence
        rows = np.flatnonzero(uniform)
        uniform = np.zeros_like(uniform)
        uniform[rows] = np.clip(np.asarray(fitted)[rows], 0.0, None).sum(axis=1) > 0
    if ensemble is not None:
        uniform = uniform & (np.asarray(ensemble) >= 0).any(axis=1)
    n_tied = int(uniform.sum())
    if n_tied:
        warn(
            f"{n_tied} item(s) have a membership tied exactly between all {k} clusters "
            "(their partitions are split evenly between them); they get no label (NaN; NA "
            "in R) and keep their memberships. More partitions, or another random_state, "
            "usually breaks the tie.",
            RuntimeWarning,
        )


def assign_all(
    adata: AnnData,
    *,
    obs: Mapping[str, Any] | None = None,
    obsm: Mapping[str, Any] | None = None,
    obsp: Mapping[str, Any] | None = None,
    uns: Mapping[str, Any] | None = None,
) -> None:
    """Assign built results to ``adata``: all of them, or (on any fault) none.

    An interruption (Ctrl-C) between two assignments restores the entries written so
    far to what they were, so ``adata`` is never left with half a result.

    Parameters
    ----------
    adata
        Written in place.
    obs, obsm, obsp, uns
        New entries of ``adata.obs``, ``.obsm``, ``.obsp`` and ``.uns`` by key;
        :data:`REMOVE` as a value deletes the key.
    """
    if adata.is_view:  # one warning, as scanpy's view_to_actual, not one per slot
        warn("Writing to a view of an AnnData: making it an actual AnnData.", IMW)
        adata._init_as_actual(adata.copy())
    stores = [(adata.obs, obs), (adata.obsm, obsm), (adata.obsp, obsp), (adata.uns, uns)]
    done = []
    try:
        for store, new in stores:
            for key, value in (new or {}).items():
                done.append((store, key, store[key] if key in store else _ABSENT))
                if value is not REMOVE:
                    store[key] = value
                elif key in store:
                    del store[key]
    except BaseException:
        for store, key, old in reversed(done):
            if old is _ABSENT:
                if key in store:
                    del store[key]
            else:
                store[key] = old
        raise


#: Marks an entry that did not exist before :func:`assign_all`.
_ABSENT = object()
#: A value that makes :func:`assign_all` delete the key.
REMOVE = object()
