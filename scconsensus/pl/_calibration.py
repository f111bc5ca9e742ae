"""Reliability diagram: is a per-cell confidence the accuracy it claims?"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from anndata import AnnData
from matplotlib.axes import Axes
from matplotlib.lines import Line2D
from matplotlib.ticker import MaxNLocator

from .. import metrics
from .._docs import doc_params
from .._results import confidence_and_right, result_keys, truth_labels
from ._utils import check_adata, finish, get_axes

#: marker area (points²) of the plot's largest bin; every key is drawn on this one scale
_MAX_AREA = 300.0
#: room past 0 and 1 on both axes, so that the largest marker there is drawn whole
_MARGIN = 0.07
#: Where the legends go: beside and below a figure of the plot's own, in the corners of
#: axes the user gave.
_OUTSIDE = {
    # the figure's legend, which constrained layout makes room for (an axes' second
    # legend, added as an artist, it does not: a plain savefig cut it off)
    "sizes": {"loc": "outside right center"},
    "keys": {"loc": "upper center", "bbox_to_anchor": (0.5, -0.16)},
}
_INSIDE = {"sizes": {"loc": "lower right"}, "keys": {"loc": "upper left"}}


@doc_params()
def calibration(
    adata: AnnData,
    keys: str | Sequence[str] | None = "pcc",
    truth: str | pd.Series | Sequence | np.ndarray = "truth",
    *,
    n_bins: int = 10,
    figsize: tuple[float, float] = (4.5, 4.0),
    ax: Axes | None = None,
    show: bool | None = None,
    save: str | Path | bool | None = None,
) -> Axes | None:
    """Accuracy against confidence per bin, for each consensus result, on labelled data.

    A cell counts as right when its class is the majority class of its cluster. A
    calibrated confidence lies on the diagonal. The marker area is proportional to the
    number of cells in the bin, on one scale for every key of the plot (the largest
    bin gets the largest marker); the grey markers of the "cells per bin" legend give
    the scale. Cells whose confidence is NaN are left out. The other legend gives each
    key's AUROC (how well the confidence ranks the wrong cells below the right ones)
    and expected calibration error, the figures :func:`scconsensus.tl.compare` reports
    (with its ten bins). The legends sit beside and below a figure of the plot's own, and
    in the corners of axes given as ``ax`` (which may have neighbours).

    Parameters
    ----------
    adata
        With ``.obs[key]`` and ``.obs[f"{key}_confidence"]`` for each key.
    keys
        One or more consensus results' ``key_added``; ``None``: every result in
        ``adata`` (as :func:`scconsensus.tl.compare`).
    truth
        Known classes, in the forms :func:`scconsensus.tl.compare` takes: an ``.obs``
        column name, a :class:`pandas.Series` matched to the cells by its index, or
        labels of the ``n_obs`` cells in ``adata``'s order.
    n_bins
        Equal-width confidence bins of ``[0, 1]``.
    {figsize_ax}
    {show_save}

    Returns
    -------
    {returns_axes}

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import scconsensus as scc
    >>> adata = scc.datasets.iris()
    >>> scc.tl.ensemble(adata, n_partitions=30, random_state=0)
    >>> scc.tl.pcc(adata, n_clusters=3)
    >>> ax = scc.pl.calibration(adata, "pcc", show=False)
    """
    adata = check_adata(adata)
    # every check runs here, before a figure exists: a refused call leaves none open
    curves = _curves(adata, keys, truth, n_bins)
    outside = ax is None  # legends beside a figure of its own, not over a user's other axes
    ax = get_axes(ax, figsize)
    _draw(ax, curves, outside)
    return finish(ax.figure, show, save, f"calibration_{'_'.join(curves)}", ax)


def _curves(
    adata: AnnData,
    keys: str | Sequence[str] | None,
    truth: str | pd.Series | Sequence | np.ndarray,
    n_bins: int,
) -> dict[str, tuple[pd.DataFrame, str]]:
    """Each key's reliability table and legend label (AUROC, ECE)."""
    keys = result_keys(adata, keys)
    if not keys:
        raise ValueError(
            "keys is empty: pass one or more consensus results' key_added, or None for "
            "every result in adata."
        )
    _, classes = truth_labels(adata, truth)
    curves = {}
    for key in keys:
        name = f"{key}_confidence"
        if key not in adata.obs or name not in adata.obs:
            raise ValueError(
                f"No consensus result {key!r} (adata.obs[{key!r}] and adata.obs[{name!r}]): "
                "run a consensus method (e.g. scconsensus.tl.pcc) with this key_added first."
            )
        conf, right = confidence_and_right(adata, key, adata.obs[key], classes)
        table = metrics.calibration(conf, right, n_bins=n_bins)
        if table.empty:
            raise ValueError(
                f"No cell has a label of {key!r}, a known class and a confidence: nothing "
                f"to draw. Check truth and adata.obs[{name!r}]."
            )
        label = (
            f"{key}: AUROC {metrics.confidence_auroc(conf, right):.2f}, "
            f"ECE {metrics.expected_calibration_error(conf, right, n_bins):.3f}"
        )
        curves[key] = (table, label)
    return curves


def _draw(ax: Axes, curves: dict[str, tuple[pd.DataFrame, str]], outside: bool) -> None:
    """The diagonal, each key's bins, and the two legends (keys; cells per bin), outside
    the axes or (axes the user gave, which may have neighbours) in their corners."""
    # one reference for all keys, so that equal areas mean equal counts across keys
    largest = max(int(table["n_items"].max()) for table, _ in curves.values())
    ax.plot([0, 1], [0, 1], color="0.7", lw=1, ls="--")
    lines = []
    for i, (table, label) in enumerate(curves.values()):
        (line,) = ax.plot(table["confidence"], table["accuracy"], "-", color=f"C{i}", lw=1)
        line.set_label(label)
        lines.append(line)
        area = _MAX_AREA * table["n_items"].to_numpy() / largest
        ax.scatter(table["confidence"], table["accuracy"], s=area, color=f"C{i}")
    ticks = MaxNLocator(nbins=3, integer=True).tick_values(1, largest)
    counts = [int(c) for c in ticks if 1 <= c <= largest] or [largest]
    sizes = [
        Line2D([], [], ls="", marker="o", color="0.6", ms=np.sqrt(_MAX_AREA * c / largest))
        for c in counts
    ]
    # outside the axes no bin can lie under a legend (a trial's hid a bin at accuracy 1);
    # room for the largest marker at 0 and 1 either way
    places = _OUTSIDE if outside else _INSIDE
    size_legend = (ax.figure if outside else ax).legend(
        sizes, [str(c) for c in counts], title="cells per bin", fontsize=7, title_fontsize=7,
        frameon=False, labelspacing=1.2, **places["sizes"],
    )  # fmt: skip
    if not outside:
        ax.add_artist(size_legend)  # the keys' legend below replaces the axes' own
    ax.set_xlim(-_MARGIN, 1 + _MARGIN)
    ax.set_ylim(-_MARGIN, 1 + _MARGIN)
    ax.set_xlabel("confidence (bin mean)")
    ax.set_ylabel("accuracy (majority class of the cluster)")
    ax.legend(handles=lines, fontsize=7, frameon=False, **places["keys"])
