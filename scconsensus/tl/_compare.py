"""``tl.compare``: agreement between consensus results, and with a reference labelling."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

import numpy as np
import pandas as pd
from anndata import AnnData

from .. import metrics

_SCORES = {
    "ari": metrics.adjusted_rand_index,
    "nmi": metrics.nmi,
    "h": metrics.h_criterion,
}


def _consensus_keys(adata: AnnData) -> list[str]:
    # Every result in the shared layout has labels in .obs and memberships in .obsm.
    return [c for c in adata.obs.columns if f"{c}_membership" in adata.obsm]


def _labels(adata: AnnData, key: str) -> pd.Series:
    if key not in adata.obs:
        found = _consensus_keys(adata)
        raise ValueError(
            f"{key!r} is not a column of adata.obs; consensus results found: {found}. "
            "Run a consensus method (e.g. scconsensus.tl.pcc) or pass keys naming .obs columns."
        )
    return adata.obs[key]


def compare(
    adata: AnnData,
    keys: Sequence[str] | None = None,
    truth: str | pd.Series | Sequence | np.ndarray | None = None,
) -> pd.DataFrame:
    """Pairwise agreement (ARI, NMI, H) between consensus labelings and with a reference.

    Parameters
    ----------
    adata
        Holds the labelings in ``.obs``.
    keys
        ``.obs`` columns to compare: any mix of scconsensus results (``"pcc"``,
        ``"pla"``, ...) and ConsensusClusterPlus results (``"ccp_k3"``, ...).
        Default: every column with a ``.obsm[f"{key}_membership"]``, i.e. every
        consensus result stored in the shared layout.
    truth
        Reference labelling: an ``.obs`` column name; a :class:`pandas.Series`,
        matched to the items by its index (which must hold every ``obs_name``
        once); or labels of the ``n_obs`` items in ``adata``'s order (array,
        list). Each key is also compared with it.

    Returns
    -------
    pandas.DataFrame
        One row per unordered pair of keys, then one per key against ``truth``,
        with columns ``key_1``, ``key_2`` (``truth``'s column name, or
        ``"truth"`` for a Series or array), ``n_clusters_1``, ``n_clusters_2``, ``n_items`` (items
        labelled in both; missing labels are left out), ``ari`` (adjusted Rand
        index), ``nmi`` (normalised mutual information) and ``h`` (fraction of
        items on which the two agree after the best one-to-one matching of
        clusters, eq. 11 of Lourenço et al. 2015). The rows against ``truth`` also
        judge the key's per-cell confidence (``.obs[f"{key}_confidence"]``; NaN
        without one), with an item counted right when its class is the majority
        class of its cluster: ``auroc`` (how well the confidence ranks the wrong
        items below the right ones; 0.5 is chance) and ``ece`` (expected
        calibration error: mean ``|confidence - accuracy|`` over ten confidence
        bins, weighted by their items; :func:`scconsensus.pl.calibration` draws
        the bins). Both leave out the items whose confidence is NaN, so they
        judge the same items. ``adata`` is not modified.

    Examples
    --------
    >>> import scconsensus as scc
    >>> adata = scc.datasets.iris()
    >>> adata.obs["a"] = adata.obs["truth"]
    >>> scc.tl.compare(adata, keys=["a"], truth="truth")[["key_1", "key_2", "ari", "h"]]
      key_1  key_2  ari    h
    0     a  truth  1.0  1.0
    """
    if not isinstance(adata, AnnData):
        raise ValueError(f"Expected an AnnData object, got {type(adata).__name__}.")
    keys = result_keys(adata, keys)
    columns = {key: _labels(adata, key) for key in keys}
    if truth is not None:
        truth_name, truth_values = truth_labels(adata, truth)
        # only a column can be compared twice; an array is named "truth" in the table alone
        if isinstance(truth, str) and truth in columns:
            raise ValueError(f"truth={truth!r} is also in keys; compare it once.")
        if len(keys) < 1:
            raise ValueError("Pass at least one key to compare with truth.")
    elif len(keys) < 2:
        raise ValueError(
            f"Comparing needs two labelings or a truth; got keys={keys} and truth=None."
        )
    rows = [_scores(a, columns[a], b, columns[b]) for a, b in combinations(keys, 2)]
    if truth is not None:
        for key in keys:
            row = _scores(key, columns[key], truth_name, truth_values)
            row.update(_calibration(adata, key, columns[key], truth_values))
            rows.append(row)
    return pd.DataFrame(rows)


def _calibration(adata: AnnData, key: str, labels: pd.Series, truth: pd.Series) -> dict:
    """``auroc`` and ``ece`` of ``.obs[f"{key}_confidence"]`` against the truth (NaN without)."""
    conf, right = confidence_and_right(adata, key, labels, truth)
    if conf is None:
        return {"auroc": np.nan, "ece": np.nan}
    return {
        "auroc": metrics.confidence_auroc(conf, right),
        "ece": metrics.expected_calibration_error(conf, right),
    }


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
        keys = _consensus_keys(adata)
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
        return truth, adata.obs[truth]
    if isinstance(truth, pd.Series):
        return "truth", _aligned(adata, truth)
    values = np.asarray(truth).ravel()
    if values.size != adata.n_obs:
        raise ValueError(f"truth has {values.size} labels but adata has {adata.n_obs} items.")
    return "truth", pd.Series(values, index=adata.obs_names)


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
    results = set(_consensus_keys(adata))
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


def _scores(a: str, la: pd.Series, b: str, lb: pd.Series) -> dict:
    """One table row: sizes and agreement scores of labelings ``a`` and ``b``."""
    both = (la.notna() & lb.notna()).to_numpy()
    if both.sum() < 2:
        raise ValueError(f"{a!r} and {b!r} label fewer than 2 items in common.")
    va = la.to_numpy()[both].astype(str)
    vb = lb.to_numpy()[both].astype(str)
    row = {
        "key_1": a,
        "key_2": b,
        "n_clusters_1": int(np.unique(va).size),
        "n_clusters_2": int(np.unique(vb).size),
        "n_items": int(both.sum()),
    }
    row.update({name: score(vb, va) for name, score in _SCORES.items()})
    return row
