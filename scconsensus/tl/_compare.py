"""``tl.compare``: agreement between consensus results, and with a reference labelling."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

import numpy as np
import pandas as pd
from anndata import AnnData

from .. import metrics
from .._results import (
    check_classes,
    confidence_and_right,
    consensus_keys,
    result_keys,
    truth_labels,
)

_SCORES = {
    "ari": metrics.adjusted_rand_index,
    "nmi": metrics.nmi,
    "h": metrics.h_criterion,
}


def _labels(adata: AnnData, key: str) -> pd.Series:
    if key not in adata.obs:
        found = consensus_keys(adata)
        raise ValueError(
            f"{key!r} is not a column of adata.obs; consensus results found: {found}. "
            "Run a consensus method (e.g. scconsensus.tl.pcc) or pass keys naming .obs columns."
        )
    return check_classes(key, adata.obs[key], role="key")


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
