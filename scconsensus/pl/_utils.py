"""Shared plumbing of the plotting functions: axes, colours, show/save, matrix lookup."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from anndata import AnnData
from matplotlib.axes import Axes
from matplotlib.colors import to_hex

__all__ = ["check_adata", "column_colors", "finish", "get_axes"]


def check_adata(adata: Any) -> AnnData:
    if not isinstance(adata, AnnData):
        raise ValueError(f"Expected an AnnData object, got {type(adata).__name__}.")
    return adata


def get_axes(ax: Axes | None, figsize: tuple[float, float]) -> Axes:
    """``ax`` or the axes of a new figure."""
    if ax is not None:
        return ax
    _, ax = plt.subplots(figsize=figsize)
    return ax


def finish(fig, show: bool | None, save: str | Path | bool | None, default_name: str) -> None:
    """Save and/or show ``fig`` the Scanpy way.

    ``save`` is a file path (any matplotlib format, from its suffix), or ``True`` for
    ``scanpy.settings.figdir / default_name``; ``show=None`` follows
    ``scanpy.settings.autoshow`` (only outside non-interactive backends).
    """
    if save:
        if save is True:
            import scanpy as sc

            path = Path(sc.settings.figdir) / default_name
        else:
            path = Path(save)
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=150, bbox_inches="tight")
    if show is None:
        import scanpy as sc

        show = bool(sc.settings.autoshow) and plt.get_backend().lower() != "agg"
    if show:
        plt.show()


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
    """Category -> colour, from ``.uns[f"{column}_colors"]`` when Scanpy stored one."""
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


def column_colors(adata: AnnData, column: str, order: np.ndarray) -> tuple[np.ndarray, Any]:
    """RGBA colours of ``.obs[column]`` for the items in ``order``, and a legend handle list."""
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
    mapping = category_colors(adata, column)
    rgba = np.array([to_rgba(mapping.get(str(x), "#cccccc")) for x in values.astype(str)])
    handles = [Patch(color=c, label=k) for k, c in mapping.items()]
    return rgba, handles


def as_list(value: str | Sequence[str] | None) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    return list(value)
