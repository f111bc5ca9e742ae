"""Soft memberships as stacked bars, and per-item confidence on an embedding."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from anndata import AnnData
from matplotlib.axes import Axes
from matplotlib.patches import StepPatch

from .._docs import doc_params
from ._utils import category_colors, check_adata, column_colors, finish, get_axes

__all__ = ["confidence", "membership"]


def _membership(adata: AnnData, key: str) -> np.ndarray:
    name = f"{key}_membership"
    if name not in adata.obsm:
        raise ValueError(
            f"No memberships at adata.obsm[{name!r}]: run a consensus method with "
            f"key_added={key!r} first (tl.pcc, tl.pla, tl.dpp, tl.consensus_k, ...)."
        )
    return np.asarray(adata.obsm[name], dtype=np.float64)


def _membership_order(
    adata: AnnData, key: str, Y: np.ndarray, columns: dict[str, int] | None
) -> np.ndarray:
    """Items by cluster, the most confident first within each, items with no label last.

    Confident by ``.obs[f"{key}_confidence"]`` where it exists (PCC's and PLA's is the
    ensemble's, not the membership), else by the membership in the item's cluster; an
    item with no label (code ``-1``) ranks by its largest membership.
    """
    rows = np.arange(Y.shape[0])
    if columns is None:
        labels = Y.argmax(axis=1)
    else:
        codes = np.asarray(adata.obs[key].cat.codes, dtype=np.int64)
        labels = np.where(codes < 0, -1, np.asarray(list(columns.values()))[codes])
    unlabelled = labels < 0
    # code -1 would index the last column: rank those items by their largest entry instead
    conf = np.where(unlabelled, Y.max(axis=1), Y[rows, np.maximum(labels, 0)])
    name = f"{key}_confidence"
    # pandas' test, not np.issubdtype: that raises TypeError on extension dtypes (a
    # nullable Float64 column, a categorical one)
    if name in adata.obs and pd.api.types.is_numeric_dtype(adata.obs[name]):
        stored = adata.obs[name].to_numpy(dtype=np.float64, na_value=np.nan)
        conf = np.where(unlabelled, conf, stored)
    conf = np.where(np.isnan(conf), -np.inf, conf)  # no value: last within its cluster
    return np.lexsort((-conf, np.where(unlabelled, Y.shape[1], labels)))


def _label_columns(adata: AnnData, key: str, k: int) -> dict[str, int] | None:
    """Membership column of each category of ``.obs[key]`` (``None``: no labels): label
    ``"j"`` is column ``j``, as the consensus tools store them, else by position. A subset
    drops unused categories (``"0"``, ``"2"``): their position no longer says the column."""
    if key not in adata.obs or not hasattr(adata.obs[key], "cat"):
        return None
    names = [str(c) for c in adata.obs[key].cat.categories]
    try:
        numbers = [int(name) for name in names]
    except ValueError:
        numbers = []
    if len(set(numbers)) == len(names) and all(0 <= j < k for j in numbers):
        return dict(zip(names, numbers, strict=True))
    return {name: i for i, name in enumerate(names) if i < k}


def _column_colors(adata: AnnData, key: str, columns: dict[str, int] | None, k: int) -> list[str]:
    """A colour per membership column (``columns``: :func:`_label_columns`): its label's (as
    the other plots draw it), grey for a column that labels no item (mass only; a user trial
    saw it take cluster 0's colour)."""
    if columns is None:
        return [f"C{c % 10}" for c in range(k)]
    by_name = category_colors(adata, key)
    colors = {col: by_name[name] for name, col in columns.items()}
    greys = [c for c in range(k) if c not in colors]
    for i, c in enumerate(greys):
        colors[c] = str(0.45 + 0.4 * i / max(len(greys), 1))
    return [colors[c] for c in range(k)]


def _draw_stacked(ax: Axes, Y: np.ndarray, colors: list[str], labelled: set[int]) -> None:
    # filled steps instead of n bars: the same picture, fast for thousands of cells. Added
    # as artists, not by ax.stairs: its data-limit update walks each step's 2n vertices in
    # Python (a second of the demo's three membership figures), and the caller sets the
    # limits anyway
    n, k = Y.shape
    edges = np.arange(n + 1) - 0.5
    cum = np.zeros(n)
    for c in range(k):
        top = cum + Y[:, c]
        color = colors[c % len(colors)]
        label = str(c) if c in labelled else f"{c} (labels no item)"
        step = StepPatch(top, edges, baseline=cum, facecolor=color, linewidth=0, label=label)
        ax.add_artist(step)
        cum = top


def _group_bar(ax: Axes, adata: AnnData, groupby: str, order: np.ndarray) -> None:
    from mpl_toolkits.axes_grid1 import make_axes_locatable

    bax = make_axes_locatable(ax).append_axes("bottom", size="8%", pad=0.05)
    rgba, _ = column_colors(adata, groupby, order)
    bax.imshow(rgba[None, :, :], aspect="auto", interpolation="nearest")
    bax.set_xticks([])
    bax.set_yticks([0])
    bax.set_yticklabels([groupby], fontsize=8)


@doc_params()
def membership(
    adata: AnnData,
    key: str,
    groupby: str | None = None,
    *,
    title: str | None = None,
    figsize: tuple[float, float] = (9.0, 3.0),
    ax: Axes | None = None,
    show: bool | None = None,
    save: str | Path | bool | None = None,
) -> Axes | None:
    """Stacked bars of each item's soft membership, items sorted by cluster and confidence.

    Items are grouped by their label in ``.obs[key]`` (label ``"j"`` is membership column
    ``j``; a column that labels no item, which carries mass only, is drawn grey), and
    within a cluster the most confident come first: by ``.obs[f"{key}_confidence"]``
    where that column exists (for PCC and PLA the ensemble's confidence, which need not
    follow the membership drawn), else by the membership in their cluster. Items with no
    label (NaN) come last.

    Parameters
    ----------
    adata
        Annotated data with ``.obsm[f"{key}_membership"]`` and ``.obs[key]``.
    key
        The consensus result (e.g. ``"pcc"``, ``"consensus_k_k3"``).
    groupby
        Optional ``.obs`` column drawn as a colour bar under the bars (e.g. the known
        cell types).
    title
        Axes title (default: the key, the number of items and of clusters).
    {figsize_ax}
    {show_save}

    Returns
    -------
    :class:`~matplotlib.axes.Axes` or None
        The bars' axes, or ``None`` once the figure is shown.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import scconsensus as scc
    >>> adata = scc.datasets.iris()
    >>> scc.tl.consensus_k(adata, max_k=3, reps=10, distance="euclidean", keep_k=3)
    >>> ax = scc.pl.membership(adata, "consensus_k_k3", "truth", show=False)
    """
    adata = check_adata(adata)
    Y = _membership(adata, key)
    n, k = Y.shape
    columns = _label_columns(adata, key, k)
    order = _membership_order(adata, key, Y, columns)
    ax = get_axes(ax, figsize, fitted=False)  # a strip may be divided off below
    labelled = set(range(k)) if columns is None else set(columns.values())
    _draw_stacked(ax, Y[order], _column_colors(adata, key, columns, k), labelled)
    ax.set_xlim(-0.5, n - 0.5)
    ax.set_ylim(0, 1)
    ax.set_ylabel("membership")
    ax.set_xticks([])
    ax.set_title(title if title is not None else f"{key}: memberships ({n} items, {k} clusters)")
    ax.legend(
        title=key, bbox_to_anchor=(1.01, 1), loc="upper left", fontsize=7, frameon=False, ncol=1
    )
    if groupby is not None:
        _group_bar(ax, adata, groupby, order)
    return finish(ax.figure, show, save, f"membership_{key}", ax)


@doc_params()
def confidence(
    adata: AnnData,
    key: str,
    basis: str = "umap",
    *,
    values: Sequence[str] = ("labels", "confidence", "entropy"),
    show: bool | None = None,
    save: str | Path | bool | None = None,
    **kwargs,
) -> list[Axes] | None:
    """Labels, confidence and entropy of a consensus on an embedding (``sc.pl.embedding``).

    Parameters
    ----------
    adata
        Annotated data with ``.obsm[f"X_{basis}"]``.
    key
        The consensus result: colours ``.obs[key]``, ``.obs[f"{key}_confidence"]`` and
        ``.obs[f"{key}_entropy"]``.
    basis
        Embedding (``"umap"``, ``"pca"``, ``"tsne"``...).
    values
        Which of ``"labels"``, ``"confidence"``, ``"entropy"`` to draw, one panel each.
        The entropy is that of the membership: for PCC and PLA, whose memberships come out
        nearly hard, it is 0 for most items, and the confidence (from the ensemble) is the
        uncertainty to read.
    {show_save}
    **kwargs
        Passed to :func:`scanpy.pl.embedding` (``size``, ``ncols``, ``cmap``, ...).

    Returns
    -------
    list of :class:`~matplotlib.axes.Axes` or None
        One axes per panel, or ``None`` once the figure is shown.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import scconsensus as scc
    >>> adata = scc.datasets.pbmc68k_reduced()
    >>> scc.tl.consensus_k(adata, max_k=3, reps=5, distance="euclidean", keep_k=3)
    >>> axes = scc.pl.confidence(adata, "consensus_k_k3", show=False)
    """
    import scanpy as sc

    adata = check_adata(adata)
    if f"X_{basis}" not in adata.obsm and basis not in adata.obsm:
        raise ValueError(
            f"No embedding .obsm['X_{basis}'] (available: {list(adata.obsm)}); compute it "
            f"(e.g. sc.tl.umap) or pass basis='pca'."
        )
    names = {"labels": key, "confidence": f"{key}_confidence", "entropy": f"{key}_entropy"}
    bad = [v for v in values if v not in names]
    if bad:
        raise ValueError(f"values {bad} not understood; choose from {list(names)}.")
    color = [names[v] for v in values]
    missing = [c for c in color if c not in adata.obs]
    if missing:
        raise ValueError(
            f"{missing} not in adata.obs: run a consensus method with key_added={key!r} first."
        )
    # scanpy takes cmap or color_map, not both: the user's, else viridis
    if "cmap" not in kwargs:
        kwargs.setdefault("color_map", "viridis")
    axes = sc.pl.embedding(adata, basis, color=color, show=False, **kwargs)
    axes = list(np.atleast_1d(axes))
    return finish(axes[0].figure, show, save, f"confidence_{key}_{basis}", axes)
