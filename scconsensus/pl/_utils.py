"""Shared plumbing of the plotting functions: axes, colours, show/save, matrix lookup."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from anndata import AnnData
from matplotlib.axes import Axes
from matplotlib.backend_bases import FigureCanvasBase
from matplotlib.colors import to_hex

from .._docs import doc_params
from .._io import atomic_file

__all__ = ["check_adata", "column_colors", "finish", "get_axes"]


def check_adata(adata: Any) -> AnnData:
    if not isinstance(adata, AnnData):
        raise ValueError(f"Expected an AnnData object, got {type(adata).__name__}.")
    return adata


@doc_params()
def get_axes(ax: Axes | None, figsize: tuple[float, float], fitted: bool = True) -> Axes:
    """``ax`` or the axes of a new figure.

    Parameters
    ----------
    {figsize_ax}
    fitted
        Whether a new figure fits its labels (matplotlib's constrained layout), so that they
        are whole in a figure the user saves with ``savefig`` (a trial: the K axis label
        was cut off; ``save=`` alone used ``bbox_inches="tight"``). ``False`` for axes
        that ``mpl_toolkits.axes_grid1`` divides (the layout engine would move the parts
        apart) or whose contents are placed for the axes' size (the cluster graph's
        labels).

    Returns
    -------
    matplotlib.axes.Axes
        The axes to draw into.
    """
    if ax is not None:
        return ax
    _, ax = plt.subplots(figsize=figsize, layout="constrained" if fitted else None)
    return ax


#: Extensions that ``save`` may end with (scanpy's list); others get ``file_format_figs``.
_SAVE_EXTENSIONS = (".svg", ".pdf", ".png")


def figure_path(writekey: str, save: str | Path | bool) -> Path:
    """Where ``save`` writes a plot named ``writekey``, by scanpy's rules.

    ``True``: ``figdir / f"{writekey}{plot_suffix}.{file_format_figs}"``; a string is a
    suffix appended to ``writekey``, and ends in ``.png``, ``.pdf`` or ``.svg`` to choose
    the format; a :class:`~pathlib.Path`, or a string with a folder in it, is written as
    given (format from its suffix, else ``file_format_figs``).

    Parameters
    ----------
    writekey
        The plot's name (e.g. ``"membership_pcc"``).
    save
        ``True``, a suffix, or a path.

    Returns
    -------
    pathlib.Path
        The file to write.

    Examples
    --------
    >>> import scanpy as sc
    >>> from scconsensus.pl._utils import figure_path
    >>> sc.settings.figdir, sc.settings.file_format_figs = "figures", "pdf"
    >>> str(figure_path("membership_pcc", True))
    'figures/membership_pcc.pdf'
    >>> str(figure_path("membership_pcc", "_run1.svg"))
    'figures/membership_pcc_run1.svg'
    >>> str(figure_path("membership_pcc", "/tmp/run1/membership.png"))
    '/tmp/run1/membership.png'
    >>> sc.settings.file_format_figs = "png"
    """
    import scanpy as sc

    # a suffix never holds a folder: "/tmp/x/fig.png" as one made figures/plot/tmp/x/
    if isinstance(save, Path) or (isinstance(save, str) and ("/" in save or os.sep in save)):
        path = Path(save)  # without a format's suffix ("run.1"), the one scanpy saves in
        if path.suffix[1:].lower() in FigureCanvasBase.get_supported_filetypes():
            return path
        return path.with_name(f"{path.name}.{sc.settings.file_format_figs}")
    ext = None
    if isinstance(save, str):
        for try_ext in _SAVE_EXTENSIONS:
            if save.endswith(try_ext):
                ext, save = try_ext[1:], save[: -len(try_ext)]
                break
        writekey += save
    ext = ext or sc.settings.file_format_figs
    return Path(sc.settings.figdir) / f"{writekey}{sc.settings.plot_suffix}.{ext}"


@doc_params()
def finish(fig, show: bool | None, save: str | Path | bool | None, writekey: str, result):
    """Save and/or show ``fig`` the Scanpy way; ``result``, or ``None`` once shown.

    ``save`` follows :func:`figure_path` (``None``: ``scanpy.settings.autosave``) and
    logs "saving figure to file ..." as scanpy does; ``show=None`` follows
    ``scanpy.settings.autoshow`` on interactive backends (never on Agg). As in
    ``sc.pl``, a figure saved by scanpy's rules is closed afterwards, and a shown
    figure returns ``None``.

    Parameters
    ----------
    fig
        The figure.
    {show_save}
    writekey
        The plot's name, for :func:`figure_path`.
    result
        What the plot function returns when the figure is not shown.

    Returns
    -------
    object
        ``result``, or ``None`` once the figure is shown.
    """
    import scanpy as sc
    from scanpy import logging as logg

    save = sc.settings.autosave if save is None else save
    if not isinstance(save, bool | str | Path):
        plt.close(fig)
        raise ValueError(
            f"save must be True/False, a file-name suffix such as '_run1.pdf', or a path ("
            f"str with a folder, or a pathlib.Path), got {save!r}."
        )
    if save is not False and save is not None and save != "":
        path = figure_path(writekey, save)
        path.parent.mkdir(parents=True, exist_ok=True)
        dpi = plt.rcParams["savefig.dpi"]
        dpi = dpi if not isinstance(dpi, str) and dpi >= 150 else 150
        logg.warning(f"saving figure to file {path}")
        with atomic_file(path) as tmp:  # an interrupted save keeps the previous file
            fig.savefig(tmp, dpi=dpi, bbox_inches="tight", format=path.suffix[1:] or None)
    if show is None:
        show = bool(sc.settings.autoshow) and plt.get_backend().lower() != "agg"
    if show:
        plt.show()
    if save and not isinstance(save, Path):
        plt.close(fig)
    return None if show else result


def _palette(n: int) -> list[str]:
    if n <= 10:
        cmap = plt.get_cmap("tab10")
    elif n <= 20:
        cmap = plt.get_cmap("tab20")
    else:
        import matplotlib

        cmap = matplotlib.colormaps["nipy_spectral"].resampled(n)
        return [to_hex(cmap(i)) for i in range(n)]
    return [to_hex(cmap(i)) for i in range(n)]


def category_colors(adata: AnnData, column: str) -> dict[str, str]:
    """Category -> colour, from ``.uns[f"{column}_colors"]`` when Scanpy stored one.

    Parameters
    ----------
    adata
        Annotated data.
    column
        An ``.obs`` column.

    Returns
    -------
    dict
        Colour (hex) by category name.
    """
    values = adata.obs[column]
    cats = (
        list(values.cat.categories)
        if isinstance(values.dtype, pd.CategoricalDtype)
        else sorted(pd.unique(values.astype(str)))
    )
    stored = adata.uns.get(f"{column}_colors")
    if stored is not None and len(stored) >= len(cats):
        colors = [to_hex(c) for c in stored[: len(cats)]]
    else:
        colors = _palette(len(cats))
    return {str(c): col for c, col in zip(cats, colors, strict=True)}


def column_colors(
    adata: AnnData, column: str, order: np.ndarray, mapping: dict[str, str] | None = None
) -> tuple[np.ndarray, Any]:
    """RGBA colours of ``.obs[column]`` for the items in ``order``, and a legend handle list.

    Parameters
    ----------
    adata
        Annotated data.
    column
        An ``.obs`` column, categorical (category colours) or numeric (viridis).
    order
        The items, in drawing order.
    mapping
        Colour by category for a categorical column (default :func:`category_colors`).

    Returns
    -------
    rgba : numpy.ndarray
        ``(len(order), 4)`` colours.
    handles : list or None
        Legend patches of the categories; ``None`` for a numeric column.
    """
    from matplotlib.colors import to_rgba
    from matplotlib.patches import Patch

    if column not in adata.obs:
        raise ValueError(
            f"{column!r} is not a column of adata.obs (available: {list(adata.obs.columns)})."
        )
    values = adata.obs[column].iloc[order]
    if pd.api.types.is_numeric_dtype(values) and not isinstance(values.dtype, pd.CategoricalDtype):
        v = values.to_numpy(dtype=float)
        lo, hi = np.nanmin(v), np.nanmax(v)
        scaled = (v - lo) / (hi - lo) if hi > lo else np.zeros_like(v)
        return plt.get_cmap("viridis")(scaled), None
    mapping = mapping if mapping is not None else category_colors(adata, column)
    rgba = np.array([to_rgba(mapping.get(str(x), "#cccccc")) for x in values.astype(str)])
    handles = [Patch(color=c, label=k) for k, c in mapping.items()]
    return rgba, handles


def as_list(value: str | Sequence[str] | None) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    return list(value)


def transferred_from(adata: AnnData, key: str, what: str, plot: str) -> str:
    """The message for a result of :func:`scconsensus.tl.pla_transfer`, whose ``what`` lives
    in its reference (``plot``: the function to call there); ``""`` for any other key."""
    record = adata.uns.get(key)
    if not isinstance(record, dict) or "transferred_from" not in record:
        return ""
    ref = record["transferred_from"]
    return (
        f" {key!r} holds cells transferred by tl.pla_transfer from the reference's result "
        f"{ref!r}; {what} are the reference's: plot the reference AnnData, "
        f"scc.pl.{plot}(adata_ref, {ref!r})."
    )
