"""Consensus / co-association heatmap ordered by consensus labels, with annotation bars."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp
from anndata import AnnData
from matplotlib.axes import Axes

from .._docs import doc_params
from .._memory_guard import check_dense_memory
from .._results import result_method
from .._validation import check_int
from ..tl._runs import check_fitted_ensemble, refuse_joined
from ._utils import (
    as_list,
    category_colors,
    check_adata,
    column_colors,
    finish,
    get_axes,
    transferred_from,
)

#: The heatmap draws a dense matrix; it shrinks by showing fewer items, not by a sparse mode.
HEATMAP_ADVICE = "Show fewer items: pass a smaller max_items (a stratified random subset),"

__all__ = ["consensus_heatmap"]


def _ratio(C, N) -> np.ndarray:
    C = C.toarray() if sp.issparse(C) else np.asarray(C, dtype=np.float64)
    N = N.toarray() if sp.issparse(N) else np.asarray(N, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(N > 0, C / np.where(N > 0, N, 1), 0.0)


@doc_params()
def consensus_matrix(adata: AnnData, key: str, items: np.ndarray | None = None) -> np.ndarray:
    """The ``n x n`` consensus of ``key`` restricted to ``items`` (all when ``None``).

    ``key`` may name an ``.obsp`` matrix, a result with ``.obsp[f"{key}_consensus"]``
    (:func:`scconsensus.tl.consensus_k`, :func:`scconsensus.r.consensus_cluster_plus`),
    a co-association ``.obsp[f"{key}_c"]`` / ``f"{key}_n"`` pair
    (:func:`scconsensus.tl.coassociation`), an ensemble in ``.obsm`` (``c / N`` is
    computed), or a consensus result (``"pcc"``, ``"pla"``): ``c / N`` of the partitions
    it was fitted to, found through ``.uns[key]["params"]["ensemble_key"]``.

    Parameters
    ----------
    {adata}
    key
        Where the matrix is, as above.
    items
        Indices of the items to keep.

    Returns
    -------
    numpy.ndarray
        The dense consensus values of the kept items, in ``[0, 1]``.
    """
    sel = slice(None) if items is None else items
    n = adata.n_obs if items is None else len(items)
    check_dense_memory(n, n_matrices=2, what="Consensus heatmap", advice=HEATMAP_ADVICE)
    obsp = adata.obsp
    if key in obsp:
        M = obsp[key]
        if key.endswith("_c") and f"{key[:-2]}_n" in obsp:
            return _ratio(M[sel][:, sel], obsp[f"{key[:-2]}_n"][sel][:, sel])
        M = M[sel][:, sel]
        return M.toarray() if sp.issparse(M) else np.asarray(M, dtype=np.float64)
    if f"{key}_consensus" in obsp:
        return np.asarray(obsp[f"{key}_consensus"][sel][:, sel], dtype=np.float64)
    if f"{key}_c" in obsp and f"{key}_n" in obsp:
        return _ratio(obsp[f"{key}_c"][sel][:, sel], obsp[f"{key}_n"][sel][:, sel])
    if key in adata.obsm:
        refuse_joined(adata, key)  # as the consensus tools: its columns differ by part
        return _ensemble_ratio(np.asarray(adata.obsm[key])[sel])
    ensemble_key, columns = _result_ensemble(adata, key)
    if ensemble_key in adata.obsm:
        labels = np.asarray(adata.obsm[ensemble_key])[sel]
        return _ensemble_ratio(labels if columns is None else labels[:, columns])
    raise ValueError(_no_matrix(adata, key, ensemble_key))


def _no_matrix(adata: AnnData, key: str, ensemble_key: str | None) -> str:
    """Why no consensus matrix was found for ``key``, and what to run to have one."""
    found = (
        f" Its ensemble .obsm[{ensemble_key!r}] is gone: rebuild it with "
        f"scc.tl.ensemble(adata, key_added={ensemble_key!r})."
        if ensemble_key
        else ""
    )
    if result_method(adata, key) == "dpp":  # it samples its own partitions
        ensembles = [k for k in adata.obsm if f"{k}_run" in adata.obsm]
        draw = (
            f"pl.consensus_heatmap(adata, {ensembles[0]!r}, {key!r})"
            if ensembles
            else "scc.tl.ensemble(adata), then "
            f"pl.consensus_heatmap(adata, 'scc_ensemble', {key!r})"
        )
        found = (
            f" {key!r} is a result of tl.dpp, which keeps no consensus matrix (it can be "
            f"n x n); draw an ensemble's co-association ordered by its labels instead: {draw}."
        )
    moved = transferred_from(adata, key, "its ensemble and consensus matrix", "consensus_heatmap")
    if moved:  # nothing in this AnnData can be drawn: the list below would mislead
        return f"No consensus matrix for key={key!r}.{moved}"
    if f"{key}_item_consensus" in adata.obsm:
        # the layout of one k of tl.consensus_k / r.consensus_cluster_plus, run without
        # its matrices (store_matrices=False, the default)
        found = (
            f" {key!r} is a result of tl.consensus_k or r.consensus_cluster_plus run without "
            "its consensus matrices: run it again with store_matrices=True."
        )
    return (
        f"No consensus matrix for key={key!r}.{found} Expected .obsp[{key!r}], "
        f".obsp['{key}_consensus'] (tl.consensus_k / r.consensus_cluster_plus with "
        f"store_matrices=True), .obsp['{key}_c'] and ['{key}_n'] (tl.coassociation), an "
        f"ensemble in .obsm[{key!r}] (tl.ensemble), or a result of tl.pcc / tl.pla whose "
        "ensemble is still in .obsm."
    )


def _ensemble_ratio(labels: np.ndarray) -> np.ndarray:
    from ..core.coassociation import coassociation

    return _ratio(*coassociation(labels, mode="dense"))


def _result_ensemble(adata: AnnData, key: str) -> tuple[str | None, np.ndarray | None]:
    """The ensemble a consensus result was fitted to: its ``.obsm`` key and the columns used.

    Read from ``.uns[key]["params"]["ensemble_key"]`` and ``.uns[key]["partitions_used"]``
    (the partitions near the chosen K that PCC/PLA fitted); ``(None, None)`` if absent.
    """
    record = adata.uns.get(key)
    if not isinstance(record, dict) or not isinstance(record.get("params"), dict):
        return None, None
    ensemble_key = record["params"].get("ensemble_key")
    if not isinstance(ensemble_key, str):
        return None, None
    if ensemble_key in adata.obsm:
        check_fitted_ensemble(adata, key, ensemble_key)
    columns = record.get("partitions_used")
    return ensemble_key, None if columns is None else np.asarray(columns, dtype=np.int64)


def _order(M: np.ndarray, labels: np.ndarray | None) -> np.ndarray:
    """Items grouped by label, and by consensus with their own group inside it."""
    if labels is None:
        from scipy.cluster.hierarchy import leaves_list, linkage
        from scipy.spatial.distance import squareform

        D = 1.0 - M
        D = 0.5 * (D + D.T)
        np.fill_diagonal(D, 0.0)
        return leaves_list(linkage(squareform(D, checks=False), method="average"))
    codes = np.unique(labels, return_inverse=True)[1]
    k = codes.max() + 1
    H = np.zeros((codes.size, k))
    H[np.arange(codes.size), codes] = 1.0
    own = (M @ H)[np.arange(codes.size), codes] / H.sum(axis=0)[codes]
    return np.lexsort((-own, codes))


def _sample(adata: AnnData, labels, max_items: int, seed: int) -> np.ndarray | None:
    n = adata.n_obs
    if max_items is None or n <= max_items:
        return None
    rng = np.random.default_rng(seed)
    if labels is None:
        return np.sort(rng.choice(n, size=max_items, replace=False))
    # stratified: every group keeps its share (at least one item)
    codes = np.unique(np.asarray(labels).astype(str), return_inverse=True)[1]
    keep = []
    for c in range(codes.max() + 1):
        members = np.flatnonzero(codes == c)
        m = max(1, round(members.size * max_items / n))
        keep.append(rng.choice(members, size=min(m, members.size), replace=False))
    return np.sort(np.concatenate(keep))


def _heatmap_rows(adata: AnnData, key: str, groupby, max_items, random_state):
    """The matrix of the drawn items, their row order, and their indices in ``adata``."""
    if max_items is not None:
        max_items = check_int(max_items, "max_items", 2)
    if groupby is not None and groupby not in adata.obs:
        raise ValueError(
            f"groupby={groupby!r} is not a column of adata.obs "
            f"(available: {list(adata.obs.columns)})."
        )
    labels = None if groupby is None else adata.obs[groupby].to_numpy()
    items = _sample(adata, labels, max_items, random_state)
    M = consensus_matrix(adata, key, items)
    idx = np.arange(adata.n_obs) if items is None else items
    local_labels = None if labels is None else np.asarray(labels)[idx].astype(str)
    return M, _order(M, local_labels), idx


#: Qualitative colour maps whose colours the annotation bars share out.
_BAR_CMAPS = ("tab10", "Dark2", "Set1", "Set2", "Accent", "tab20b", "tab20c", "Pastel1")


def _bar_mappings(adata: AnnData, bars: list[str]) -> dict[str, dict[str, str] | None]:
    """Category colours per bar such that no colour stands for two things.

    The first bar keeps the colours the other plots give its column (the labels'
    ``category_colors``), as does a column whose colours Scanpy stored when they differ
    from those of the bars before it; every other categorical bar takes colours no
    earlier bar uses, from :data:`_BAR_CMAPS`.
    (All bars reused tab10, so one colour meant a cluster in one bar and a cell type in
    the next.) ``None``: the bar's own colours (numeric columns).
    """
    import matplotlib
    from matplotlib.colors import to_hex

    pool = list(
        dict.fromkeys(to_hex(c) for name in _BAR_CMAPS for c in matplotlib.colormaps[name].colors)
    )
    used: set[str] = set()
    out: dict[str, dict[str, str] | None] = {}
    for i, col in enumerate(bars):
        values = adata.obs[col] if col in adata.obs else None
        if values is None or (
            pd.api.types.is_numeric_dtype(values)
            and not isinstance(values.dtype, pd.CategoricalDtype)
        ):
            out[col] = None
            continue
        mapping = category_colors(adata, col)
        if i > 0 and (f"{col}_colors" not in adata.uns or used & set(mapping.values())):
            free = [c for c in pool if c not in used]
            if len(free) >= len(mapping):
                mapping = dict(zip(mapping, free, strict=False))
        used.update(mapping.values())
        out[col] = mapping
    return out


def _draw_bars(divider, adata: AnnData, bars: list[str], rows: np.ndarray):
    """Colour bars above the heatmap; the topmost bar's axes and the legend handles."""
    handles_all = []
    top = None
    mappings = _bar_mappings(adata, bars)
    for col in reversed(bars):
        bax = divider.append_axes("top", size="4%", pad=0.03)
        rgba, handles = column_colors(adata, col, rows, mappings.get(col))
        bax.imshow(rgba[None, :, :], aspect="auto", interpolation="nearest")
        bax.set_xticks([])
        bax.set_yticks([0])
        bax.set_yticklabels([col], fontsize=8)
        if handles and len(handles) <= 25:
            handles_all.append((col, handles))
        top = bax
    return top, handles_all


def _draw_legends(ax: Axes, cax: Axes, handles_all: list) -> None:
    """The bars' legends right of the colour bar and its label, the top bar's first.

    Figure legends (drawn over every panel, and kept by ``bbox_inches="tight"``) anchored
    to the colour bar's axes, so that they follow it when a layout moves the panels: at
    the figure's right edge they were clipped over a second panel (a user trial, ``ax=``),
    and as the heatmap's own artists a panel drawn after it hid them.
    """
    box = cax.get_tightbbox()  # no renderer: pdf, svg and a bare Figure have none
    x = cax.transAxes.inverted().transform((box.x1, box.y1))[0] + 0.5
    y, height = 1.0, cax.get_position().height
    for col, handles in reversed(handles_all):
        ax.figure.legend(
            handles=handles,
            title=col,
            loc="upper left",
            bbox_to_anchor=(x, y),
            bbox_transform=cax.transAxes,
            fontsize=7,
            title_fontsize=8,
            frameon=False,
        )
        y -= 0.06 * (len(handles) + 2) / 2 / height


@doc_params()
def consensus_heatmap(
    adata: AnnData,
    key: str,
    groupby: str | None = None,
    *,
    annotations: str | Sequence[str] | None = None,
    cmap: str = "Blues",
    max_items: int | None = 2000,
    random_state: int = 0,
    title: str | None = None,
    legend: bool = True,
    figsize: tuple[float, float] = (6.0, 5.5),
    ax: Axes | None = None,
    show: bool | None = None,
    save: str | Path | bool | None = None,
) -> Axes | None:
    """Heatmap of a consensus (or co-association ``c/N``) matrix ordered by labels.

    Parameters
    ----------
    {adata}
    key
        Where the matrix is: an ``.obsp`` key, a result key with
        ``.obsp[f"{key}_consensus"]`` (e.g. ``"consensus_k_k3"``, ``"ccp_k3"``, written
        by ``store_matrices=True``), a :func:`~scconsensus.tl.coassociation` key, an
        ensemble in ``.obsm`` (``"scc_ensemble"``), or a :func:`~scconsensus.tl.pcc` /
        :func:`~scconsensus.tl.pla` result (``"pcc"``): the co-association of the
        partitions it fitted, ordered by its labels.
    groupby
        ``.obs`` column whose groups order the rows and columns (default: ``key`` when
        it is an ``.obs`` column, else the average-linkage order of ``1 - M``).
    annotations
        ``.obs`` columns drawn as colour bars above the heatmap (categorical or numeric);
        ``groupby`` is always drawn first.
    cmap
        Colour map of the consensus values (0..1).
    max_items
        Above this many items (at least 2) a stratified random subset is drawn.
    {random_state}
        Here it seeds that subset.
    title, legend
        Title (default ``"consensus: {key}"``) and whether to draw the bars' legends.
    {figsize_ax}
        Annotation bars and the colour bar are split off ``ax``.
    {show_save}

    Returns
    -------
    :class:`~matplotlib.axes.Axes` or None
        The heatmap's axes, or ``None`` once the figure is shown.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import scconsensus as scc
    >>> adata = scc.datasets.iris()
    >>> scc.tl.ensemble(adata, n_partitions=10, k=(2, 5))
    >>> ax = scc.pl.consensus_heatmap(adata, "scc_ensemble", "truth", show=False)
    """
    from mpl_toolkits.axes_grid1 import make_axes_locatable

    adata = check_adata(adata)
    if groupby is None and key in adata.obs:
        groupby = key
    M, order, idx = _heatmap_rows(adata, key, groupby, max_items, random_state)
    ax = get_axes(ax, figsize, fitted=False)  # divided below
    divider = make_axes_locatable(ax)
    im = ax.imshow(
        M[np.ix_(order, order)], cmap=cmap, vmin=0, vmax=1, aspect="auto", interpolation="nearest"
    )
    ax.set(xticks=[], yticks=[])
    cax = divider.append_axes("right", size="4%", pad=0.08)
    ax.figure.colorbar(im, cax=cax, label="consensus")
    bars = ([groupby] if groupby else []) + [a for a in as_list(annotations) if a != groupby]
    top, handles_all = _draw_bars(divider, adata, bars, idx[order])
    (top or ax).set_title(title if title is not None else f"consensus: {key}")
    if legend and handles_all:
        _draw_legends(ax, cax, handles_all)
    return finish(ax.figure, show, save, f"consensus_heatmap_{key}", ax)
