"""The results table of ``report.md`` and of ``scconsensus run``'s printout."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from anndata import AnnData

from . import tl

__all__ = ["NA_NOTE", "markdown_table", "results_table"]


def results_table(adata: AnnData, keys: Sequence[str], truth: str | None) -> pd.DataFrame:
    """One row per consensus result in ``.obs``: clusters, sizes, confidence, scores.

    The table of ``report.md`` and of ``scconsensus run``'s printout.

    Parameters
    ----------
    adata
        Annotated data with the results.
    keys
        ``.obs`` columns of consensus labels; keys not in ``.obs`` are skipped.
    truth
        ``.obs`` column of known labels; when given, ARI, NMI and H against it, and the
        calibration of the confidence.

    Returns
    -------
    Columns ``result``, ``clusters``, ``sizes`` (cluster sizes in the order of the
    categories), ``mean confidence`` (when ``.obs[f"{key}_confidence"]`` exists) and
    ``ARI vs {truth}``, ``NMI vs {truth}``, ``H vs {truth}``, ``confidence AUROC vs
    {truth}`` and ``confidence ECE vs {truth}`` (:func:`scconsensus.tl.compare`'s row,
    on the cells with a label and a class; ``auroc`` and ``ece``: how well the
    confidence ranks the cells whose class is not their cluster's majority class below
    the others, and its expected calibration error; NaN without a confidence); empty
    without results.
    """
    rows = []
    for key in (k for k in keys if k in adata.obs):
        labels = adata.obs[key]
        row = {
            "result": key,
            "clusters": int(labels.nunique()),
            "sizes": ", ".join(str(v) for v in labels.value_counts().sort_index().tolist()),
        }
        if f"{key}_confidence" in adata.obs:
            row["mean confidence"] = float(adata.obs[f"{key}_confidence"].mean())
        if truth is not None:
            # one reading of the truth for every score: compare leaves out the cells
            # without a label or a class (an unsampled cell has no label)
            scores = tl.compare(adata, [key], truth=truth).iloc[-1]
            for name, column in (("ARI", "ari"), ("NMI", "nmi"), ("H", "h")):
                row[f"{name} vs {truth}"] = float(scores[column])
            row[f"confidence AUROC vs {truth}"] = float(scores["auroc"])
            row[f"confidence ECE vs {truth}"] = float(scores["ece"])
        rows.append(row)
    return pd.DataFrame(rows)


def markdown_table(df: pd.DataFrame) -> str:
    cols = list(df.columns)
    lines = ["| " + " | ".join(cols) + " |", "| " + " | ".join("---" for _ in cols) + " |"]
    for _, row in df.iterrows():
        cells = [_cell(v) for v in row.tolist()]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _cell(value) -> str:
    """A table cell; ``n/a`` for a score that is not defined (e.g. the AUROC of a result
    with no misassigned cell), where ``nan`` read as a failure."""
    if isinstance(value, float):
        return "n/a" if np.isnan(value) else f"{value:.3f}"
    return str(value)


#: Said under a results table that has an undefined score.
NA_NOTE = (
    "n/a: not defined here (the confidence AUROC needs misassigned and right cells both; "
    "a result without a confidence has no calibration)."
)
