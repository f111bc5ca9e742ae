"""What :func:`scconsensus.tl.k_null` says: the log line and the warning, in words a user
can act on (and that R's message rules translate)."""

from __future__ import annotations

import numpy as np
from anndata import AnnData
from scanpy import logging as logg

from .._warnings import warn
from ..core import NULL_RATIO
from ._input_checks import feature_variances

__all__ = ["cuts", "feature_share", "report_null", "standing"]

#: A feature holding this share of the variance is named in the warning's advice.
DOMINANT = 0.5


def feature_share(X) -> float:
    """The largest share of ``X``'s variance one feature holds (on its first rows, as
    ``tl.ensemble``'s check reads them)."""
    var = feature_variances(X)
    total = 0.0 if var is None else float(var.sum())
    return float(var.max()) / total if total > 0 else 0.0


def standing(row) -> str | None:
    """How a ``K`` stands against the draws (a row of the ``k_null`` table): ``"more"``,
    ``"hardly more"`` or ``"less"`` stable than in data without groups; ``None`` when
    there is nothing to compare."""
    if np.isnan(row.ratio):
        return None
    return "more" if row.ratio >= NULL_RATIO else "less" if row.ratio < 1 else "hardly more"


def cuts(row) -> str:
    """What the data and the draws cut at one ``K`` (a row of the ``k_null`` table)."""
    if np.isnan(row.eigenvalue):
        return "too few of the ensemble's partitions have that many clusters to judge it"
    if np.isnan(row.null_max):
        return "too few partitions of the draws have that many clusters to judge it"
    draws = f"the draws at least {1 - row.null_max:.3f}"
    if np.isinf(row.ratio):
        return f"they cut none of the co-association, {draws}"
    data = f"they cut {1 - row.eigenvalue:.3f} of the co-association"
    return f"{data}, {draws}, {row.ratio:.2f} times as much"


def report_null(adata: AnnData, key: str, K: int, table, n_null: int, share: float) -> None:
    """Log the comparison of ``key``; warn when its ``K`` groups are not clearly beyond the
    draws (or cannot be compared)."""
    row = table[table["n_clusters"] == K].iloc[0]
    said = (
        f"λ_{K}(E_{K}) = {row.eigenvalue:.3f}, at most {row.null_max:.3f} in {n_null} draw(s) "
        f"of one Gaussian with the data's covariance: {cuts(row)}"
    )
    logg.info(f"    {key}: {said}")
    stands = standing(row)
    if stands == "more":
        return
    advice = (
        f" One feature holds {share:.1%} of the variance: scale the features (sc.pp.scale) or "
        "cluster a representation (sc.pp.pca)."
        if share >= DOMINANT
        else ""
    )
    look = (
        f" Look at scc.pl.k_selection(adata, {key!r})."
        if "k_selection" in adata.uns[key]
        else f" Look at adata.uns[{key!r}]['k_null']."
    )
    if stands is None:
        warn(f"tl.k_null: the {K} clusters of {key!r} cannot be compared: {cuts(row)}.{look}")
        return
    given = "k_selection" not in adata.uns[key]
    why = (
        f"K={K} cuts across what the partitions keep together; n_clusters='auto' may find "
        "a stable K."
        if given and stands == "less"
        else "They may follow the data's shape (k-means cuts an elongated cloud the same way "
        f"every time) rather than groups, or the data hold none here.{advice}"
    )
    warn(
        f"tl.k_null: the {K} clusters of {key!r} are {stands} stable than in data without "
        "groups: "
        f"{said} (under {NULL_RATIO:g}). {why}{look}",
        UserWarning,
    )
