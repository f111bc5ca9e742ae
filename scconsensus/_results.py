"""Consensus results and reference labels as read from an AnnData.

Shared by :func:`scconsensus.tl.compare` and :func:`scconsensus.pl.calibration`, so that
the table and the figure read the same keys, the same truth and the same cells.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from anndata import AnnData

from . import metrics


def consensus_keys(adata: AnnData) -> list[str]:
    """The consensus results in ``adata``, in ``.obs``'s column order.

    Parameters
    ----------
    adata
        Holds the results.

    Returns
    -------
    list of str
        Every key with labels in ``.obs[key]`` and memberships in
        ``.obsm[f"{key}_membership"]`` (the shared layout).
    """
    return [c for c in adata.obs.columns if f"{c}_membership" in adata.obsm]


def confidence_and_right(
    adata: AnnData, key: str, labels: pd.Series, truth: pd.Series
) -> tuple[np.ndarray | None, np.ndarray]:
    """``.obs[f"{key}_confidence"]`` (None without one) and whether each item is right.

    Parameters
    ----------
    adata
        Holds the confidence.
    key
        The consensus result.
    labels
        Its labels, ``adata.obs[key]``.
    truth
        Reference labels aligned on ``adata.obs_names`` (from :func:`truth_labels`).

    Returns
    -------
    tuple
        The confidence of the items labelled by both (NaN where a cell has none:
        :mod:`scconsensus.metrics` leaves those out) and, for the same items, whether
        the item's class is the majority class of its cluster.
    """
    both = (labels.notna() & truth.notna()).to_numpy()
    right = metrics.majority_correct(
        truth.to_numpy()[both].astype(str), labels.to_numpy()[both].astype(str)
    )
    name = f"{key}_confidence"
    if name not in adata.obs:
        return None, right
    return adata.obs[name].to_numpy(dtype=np.float64)[both], right


#: What records written before ``.uns[key]["method"]`` hold that names their method.
_SIGNS = (
    ("transferred_from", "pla_transfer"),
    ("log_likelihood", "pla"),
    ("run_sizes", "dpp"),
    ("restart_objectives", "pcc"),
    ("pac", "consensus_k"),
)


def result_method(adata: AnnData, key: str) -> str | None:
    """The function that wrote the result ``key``: ``.uns[key]["method"]``.

    Parameters
    ----------
    adata
        Holds the result.
    key
        Its key.

    Returns
    -------
    str or None
        ``"pcc"``, ``"pla"``, ``"pla_transfer"``, ``"dpp"``, ``"consensus_k"`` or
        ``"consensus_cluster_plus"``; for a record written before the entry existed
        (an older ``.h5ad``), read from the entries only that method writes; ``None``
        when ``.uns[key]`` is no such record.

    Examples
    --------
    >>> import anndata as ad, numpy as np
    >>> from scconsensus._results import result_method
    >>> adata = ad.AnnData(np.zeros((2, 1)), uns={"a": {"method": "pla"}, "b": {"run_sizes": 1}})
    >>> result_method(adata, "a"), result_method(adata, "b"), result_method(adata, "c")
    ('pla', 'dpp', None)
    """
    record = adata.uns.get(key)
    if not isinstance(record, dict):
        return None
    if "method" in record:
        return str(record["method"])
    params = record.get("params")
    if isinstance(params, dict) and "cluster_alg" in params:  # ConsensusClusterPlus's argument
        return "consensus_cluster_plus"
    return next((method for entry, method in _SIGNS if entry in record), None)


def result_keys(adata: AnnData, keys) -> list[str]:
    """The keys to compare, without repeats; every consensus result when ``None``.

    Parameters
    ----------
    adata
        Holds the results.
    keys
        A key, several, or ``None``.

    Returns
    -------
    list of str
        The keys, in the order given.
    """
    if keys is None:
        keys = consensus_keys(adata)
        if not keys:
            raise ValueError(
                "No consensus results in adata (no .obs[key] with .obsm[key + '_membership']). "
                "Run a consensus method first, or pass keys naming .obs columns."
            )
    elif isinstance(keys, str):
        keys = [keys]
    return list(dict.fromkeys(keys))


def truth_labels(adata: AnnData, truth) -> tuple[str, pd.Series]:
    """The reference's name and its labels on ``adata.obs_names``.

    Parameters
    ----------
    adata
        The items the reference labels.
    truth
        An ``.obs`` column name; a :class:`pandas.Series`, aligned on its index; or
        labels of the ``n_obs`` items in ``adata``'s order (array, list, ...).

    Returns
    -------
    tuple
        The name (the column's, or ``"truth"``) and the labels, indexed by
        ``adata.obs_names``.
    """
    if truth is None:
        raise ValueError(
            "truth is None: pass the known classes, as an .obs column name or as labels "
            "(an array in adata's order, or a Series indexed by obs_names)."
        )
    if isinstance(truth, str):
        if truth not in adata.obs:
            raise ValueError(_not_a_truth_column(adata, truth))
        return truth, check_classes(truth, adata.obs[truth])
    if isinstance(truth, pd.Series):
        return "truth", check_classes("truth", _aligned(adata, truth))
    values = np.asarray(truth).ravel()
    if values.size != adata.n_obs:
        raise ValueError(f"truth has {values.size} labels but adata has {adata.n_obs} items.")
    return "truth", check_classes("truth", pd.Series(values, index=adata.obs_names))


def check_classes(name: str, labels: pd.Series, role: str = "truth") -> pd.Series:
    """``labels``, refused when they are measurements rather than classes (a user trial
    passed ``truth="percent_mito"``: 696 "classes" of 700 cells, ARI 0 without a word;
    another ``tl.compare(adata, ["pcc", "n_genes"])``). ``role`` names them: ``"truth"``
    or ``"key"``."""
    floats = pd.api.types.is_float_dtype(labels)
    # counts per cell (a later trial passed truth="n_genes": 218 "classes" of 700 cells),
    # stored as integers or as whole floats
    counts = pd.api.types.is_integer_dtype(labels) and not pd.api.types.is_bool_dtype(labels)
    if floats and np.array_equal(labels.dropna(), np.round(labels.dropna())):
        floats, counts = False, True
    if floats or counts:
        distinct, known = labels.nunique(), int(labels.notna().sum())
        if distinct > (max(20, known // 2) if floats else max(50, known // 5)):
            raise ValueError(
                f"{role} {name!r} looks like a measurement ({distinct} distinct "
                f"{'float' if floats else 'integer'} values among {known} labelled items), "
                f"not {'classes' if role == 'truth' else 'a clustering'}: pass "
                f"{'known class labels' if role == 'truth' else 'cluster labels'} (a "
                "categorical or string column, or integer ids)."
            )
    return labels


def _aligned(adata: AnnData, truth: pd.Series) -> pd.Series:
    """A Series of labels on ``adata.obs_names``, matched by index as pandas does."""
    if not truth.index.is_unique:
        dup = truth.index[truth.index.duplicated()].unique()[:3].tolist()
        raise ValueError(
            f"truth is a Series with repeated index labels (e.g. {dup}), so its labels "
            "cannot be matched to adata.obs_names: drop the repeats, or pass "
            "truth.to_numpy() for labels in adata's order."
        )
    missing = adata.obs_names[~adata.obs_names.isin(truth.index)]
    if missing.size and pd.api.types.is_integer_dtype(truth.index.dtype):
        raise ValueError(
            "truth is a Series whose index holds integers, and adata.obs_names are "
            f"strings (e.g. {adata.obs_names[:3].tolist()}): a Series is matched to the "
            "cells by its index. Index it by adata.obs_names, or pass truth.to_numpy() "
            "for labels in adata's order."
        )
    if missing.size:
        raise ValueError(
            f"truth is a Series whose index lacks {missing.size} of the {adata.n_obs} "
            f"adata.obs_names (e.g. {missing[:3].tolist()}); a Series is matched to the "
            "cells by its index: index it by adata.obs_names, or pass truth.to_numpy() "
            "for labels in adata's order."
        )
    return truth.reindex(adata.obs_names)


def _not_a_truth_column(adata: AnnData, truth: str) -> str:
    """The error for a ``truth`` that names no column, with the columns that could be one."""
    results = set(consensus_keys(adata))
    candidates = [
        c
        for c, dtype in adata.obs.dtypes.items()
        if c not in results
        and (isinstance(dtype, pd.CategoricalDtype) or pd.api.types.is_string_dtype(dtype))
    ]
    return (
        f"truth={truth!r} is not a column of adata.obs. Columns that could hold known "
        f"classes (categorical or text): {candidates or 'none'}. Pass one of them, or the "
        "labels themselves (an array in adata's order, or a Series indexed by obs_names)."
    )
