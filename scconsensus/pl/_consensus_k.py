"""Choosing ``k``: consensus CDF, delta area and PAC curves (ours and ConsensusClusterPlus's)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from anndata import AnnData
from matplotlib.axes import Axes
from matplotlib.lines import Line2D

from .._docs import doc_params
from .._results import result_method
from ._utils import as_list, check_adata, finish, get_axes

__all__ = ["consensus_cdf", "delta_area", "pac"]

_LINESTYLES = ("-", "--", ":", "-.")

_CURVE_DOCS = {
    "adata_k": """\
adata
    With ``.uns[key]`` from :func:`scconsensus.tl.consensus_k` or
    :func:`scconsensus.r.consensus_cluster_plus`.""",
    "key_k": """\
key
    One key, or a list to compare sources (e.g. ``["consensus_k", "ccp"]``).""",
}


def _record(adata: AnnData, key: str) -> dict:
    rec = adata.uns.get(key)
    if not isinstance(rec, dict) or "cdf" not in rec or "k" not in rec:
        raise ValueError(
            f"No consensus-k statistics at adata.uns[{key!r}]: run "
            f"scconsensus.tl.consensus_k(adata, key_added={key!r}) or "
            f"scconsensus.r.consensus_cluster_plus(adata, key_added={key!r}) first."
        )
    return rec


def _label(adata: AnnData, key: str) -> str:
    if result_method(adata, key) == "consensus_cluster_plus":
        return f"{key} (ConsensusClusterPlus)"
    return key


@doc_params(**_CURVE_DOCS)
def consensus_cdf(
    adata: AnnData,
    key: str | Sequence[str] = "consensus_k",
    *,
    figsize: tuple[float, float] = (5.0, 4.0),
    ax: Axes | None = None,
    show: bool | None = None,
    save: str | Path | bool | None = None,
) -> Axes | None:
    """Consensus CDF per ``k`` (one line each; several keys overlay with line styles).

    A flat middle section (values near 0 or 1 only) marks a stable ``k``; the PAC window
    is shaded.

    Parameters
    ----------
    {adata_k}
    {key_k}
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
    >>> scc.tl.consensus_k(adata, max_k=4, reps=10, distance="euclidean")
    >>> ax = scc.pl.consensus_cdf(adata, show=False)
    """
    adata = check_adata(adata)
    keys = as_list(key)
    ax = get_axes(ax, figsize)
    all_k = sorted({int(k) for kk in keys for k in np.atleast_1d(_record(adata, kk)["k"])})
    cmap = plt.get_cmap("viridis")
    colors = {k: cmap(i / max(1, len(all_k) - 1)) for i, k in enumerate(all_k)}
    for j, kk in enumerate(keys):
        rec = _record(adata, kk)
        x = np.concatenate([[0.0], np.asarray(rec["cdf_x"], dtype=float)])
        cdf = np.atleast_2d(np.asarray(rec["cdf"], dtype=float))
        for k, F in zip(np.atleast_1d(rec["k"]), cdf, strict=True):
            label = f"k={int(k)}" if len(keys) == 1 else f"{_label(adata, kk)} k={int(k)}"
            ax.step(
                x,
                np.concatenate([[F[0]], F]),
                where="pre",
                color=colors[int(k)],
                linestyle=_LINESTYLES[j % len(_LINESTYLES)],
                label=label,
            )
    window = np.asarray(_record(adata, keys[0]).get("pac_window", (0.1, 0.9)), dtype=float)
    ax.axvspan(window[0], window[1], color="0.9", zorder=-1, label="PAC window")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("consensus index")
    ax.set_ylabel("CDF")
    ax.set_title("consensus CDF")
    ax.legend(fontsize=7, frameon=False, loc="lower right")
    # the keys in the name: a second call with other keys must not overwrite the first
    return finish(ax.figure, show, save, "_".join(["consensus_cdf", *map(str, keys)]), ax)


def _curve(adata, keys, field, ylabel, title, ax, figsize, show, save, name):
    adata = check_adata(adata)
    keys = as_list(keys)
    ax = get_axes(ax, figsize)
    for j, kk in enumerate(keys):
        rec = _record(adata, kk)
        ks = np.atleast_1d(rec["k"]).astype(int)
        (line,) = ax.plot(
            ks,
            np.asarray(rec[field], dtype=float),
            marker="o",
            linestyle=_LINESTYLES[j % len(_LINESTYLES)],
            label=_label(adata, kk),
        )
        if field == "pac" and rec.get("best_k") is not None:
            ties = np.atleast_1d(rec.get("best_k_ties", rec["best_k"])).astype(int)
            _mark_best(ax, ties, line, _label(adata, kk), len(keys) == 1)
    ax.set_xlabel("k")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.legend(fontsize=8, frameon=False)
    return finish(ax.figure, show, save, "_".join([name, *map(str, keys)]), ax)


def _mark_best(ax: Axes, ties: np.ndarray, line: Line2D, label: str, alone: bool) -> None:
    """The ``k`` of lowest PAC (``.uns[key]["best_k"]``, the first of ``ties``), marked as
    ``pl.k_selection`` marks its chosen K, and the others tied with it named; in the
    colour of its key's curve when several keys share the axes."""
    color, text = ("C3", "") if alone else (line.get_color(), f"{label}: ")
    tied = f"; tied with k = {', '.join(map(str, ties[1:]))}" if ties.size > 1 else ""
    ax.axvline(ties[0], color=color, ls="--", label=f"{text}best k = {ties[0]} (lowest PAC{tied})")


@doc_params(**_CURVE_DOCS)
def delta_area(
    adata: AnnData,
    key: str | Sequence[str] = "consensus_k",
    *,
    figsize: tuple[float, float] = (5.0, 3.5),
    ax: Axes | None = None,
    show: bool | None = None,
    save: str | Path | bool | None = None,
) -> Axes | None:
    """ConsensusClusterPlus's delta area (relative gain in CDF area) against ``k``.

    The ``k`` after which the curve drops to near zero is Monti et al.'s choice.

    Parameters
    ----------
    {adata_k}
    {key_k}
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
    >>> scc.tl.consensus_k(adata, max_k=4, reps=10, distance="euclidean")
    >>> ax = scc.pl.delta_area(adata, show=False)
    """
    return _curve(
        adata,
        key,
        "delta_area",
        "relative change in area under CDF",
        "delta area",
        ax,
        figsize,
        show,
        save,
        "delta_area",
    )


@doc_params(**_CURVE_DOCS)
def pac(
    adata: AnnData,
    key: str | Sequence[str] = "consensus_k",
    *,
    figsize: tuple[float, float] = (5.0, 3.5),
    ax: Axes | None = None,
    show: bool | None = None,
    save: str | Path | bool | None = None,
) -> Axes | None:
    """Proportion of ambiguous clustering against ``k`` (lower is more stable).

    The ``k`` of lowest PAC (``.uns[key]["best_k"]``) is marked, as
    :func:`scconsensus.pl.k_selection` marks its chosen K.

    Parameters
    ----------
    {adata_k}
    {key_k}
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
    >>> scc.tl.consensus_k(adata, max_k=4, reps=10, distance="euclidean")
    >>> ax = scc.pl.pac(adata, show=False)
    """
    return _curve(
        adata,
        key,
        "pac",
        "PAC",
        "proportion of ambiguous clustering",
        ax,
        figsize,
        show,
        save,
        "pac",
    )
