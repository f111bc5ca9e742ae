"""The cluster-relationship graph of PCC (Lourenço et al. 2015, Sect. 7.4)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from anndata import AnnData
from matplotlib.axes import Axes

from .._docs import doc_params
from ._utils import category_colors, check_adata, finish, get_axes

__all__ = ["cluster_graph"]

#: Names under which a consensus method may store ``m_ij`` in ``.uns[key]``.
_RELATION_KEYS = ("cluster_relationships", "relationships", "m")


def _relationships(Y: np.ndarray, threshold: float) -> tuple[np.ndarray, np.ndarray]:
    """``m_ij = E|P_i ∩ P_j| / E|P_i|`` and the thresholded, renormalised memberships.

    Memberships below ``threshold`` are dropped and rows renormalised, as Sect. 7.4
    prescribes before measuring the overlap of soft clusters.
    """
    Y = np.where(Y >= threshold, Y, 0.0)
    tot = Y.sum(axis=1, keepdims=True)
    Y = np.divide(Y, tot, out=np.zeros_like(Y), where=tot > 0)
    mass = Y.sum(axis=0)
    joint = Y.T @ Y
    m = np.divide(joint, mass[:, None], out=np.zeros_like(joint), where=mass[:, None] > 0)
    return m, Y


@doc_params()
def cluster_graph(
    adata: AnnData,
    key: str = "pcc",
    basis: str | None = "umap",
    *,
    threshold: float = 0.01,
    min_weight: float = 0.05,
    figsize: tuple[float, float] = (5.5, 5.0),
    title: str | None = None,
    ax: Axes | None = None,
    show: bool | None = None,
    save: str | Path | bool | None = None,
) -> Axes | None:
    """Directed graph of how soft clusters overlap (PCC paper, Sect. 7.4).

    Each cluster is a node at the membership-weighted median of the cells labelled with
    it in the embedding, drawn over the cells (faded, in their cluster's colour), with area
    proportional to the expected cluster size; a cluster no item is labelled with is
    not drawn. An arrow ``i -> j`` carries ``m_ij = E[|P_i ∩ P_j|] / E[|P_i|]``, the
    expected share of cluster ``i``'s items that cluster ``j`` also draws, shown when
    ``m_ij >= min_weight`` and labelled at the middle of its own arc (``i -> j`` and
    ``j -> i`` bend to opposite sides). The matrix is read from
    ``.uns[key]["cluster_relationships"]`` when the method stored it, else computed from
    ``.obsm[f"{key}_membership"]``. Axes are named as ``sc.pl.embedding`` names them
    (``UMAP1``, ``PC1``, ...) and drawn to equal scale.

    Parameters
    ----------
    adata
        With ``.obsm[f"{key}_membership"]``.
    key
        The consensus result (``"pcc"``, ``"pla"``, ...).
    basis
        Embedding for the node positions (``.obsm[f"X_{basis}"]``, first two columns);
        ``None`` or missing: nodes on a circle.
    threshold
        Memberships below this are ignored (the paper's ``δ``).
    min_weight
        Smallest ``m_ij`` drawn as an edge.
    title
        Axes title (default: ``"{key}: cluster relationships"``).
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
    >>> adata = scc.datasets.pbmc68k_reduced()
    >>> scc.tl.consensus_k(adata, max_k=4, reps=5, distance="euclidean", keep_k=4)
    >>> ax = scc.pl.cluster_graph(adata, "consensus_k_k4", show=False)
    """
    adata = check_adata(adata)
    Y, m, names = _cluster_inputs(adata, key, threshold)
    emb, basis = _embedding(adata, basis)
    pos = _node_positions(Y, emb)
    keep = _drawn_clusters(adata, key, Y)
    ax = get_axes(ax, figsize)
    colors = _cluster_colors(adata, key, len(names))
    if emb is not None:
        _draw_cells(ax, emb, Y, colors)
    ax.set_aspect("equal", adjustable="datalim")  # arcs and label spots share one scale
    radius = _node_radii(Y.sum(axis=0), keep)
    span = np.ptp(pos if emb is None else emb, axis=0).max()
    _draw_edges(ax, pos, m, keep, radius, min_weight, spacing=0.06 * (span or 1.0))
    _draw_nodes(ax, pos, radius, keep, colors, names)
    ax.set_title(title if title is not None else f"{key}: cluster relationships $m_{{ij}}$")
    _label_axes(ax, basis if emb is not None else None)
    return finish(ax.figure, show, save, f"cluster_graph_{key}", ax)


def _draw_nodes(ax: Axes, pos, radius, keep, colors: list[str], names) -> None:
    for c in keep:
        ax.scatter(*pos[c], s=(2 * radius[c]) ** 2, color=colors[c], edgecolors="k", zorder=3)
        ax.annotate(names[c], pos[c], ha="center", va="center", fontsize=9, weight="bold", zorder=4)


def _label_axes(ax: Axes, basis: str | None) -> None:
    """Axis names as ``sc.pl.embedding`` gives them; none for nodes on a circle."""
    if basis is not None:
        prefix = _axis_prefix(basis)
        ax.set_xlabel(f"{prefix}1")
        ax.set_ylabel(f"{prefix}2")
    ax.set_xticks([])
    ax.set_yticks([])


def _cluster_inputs(adata: AnnData, key: str, threshold: float):
    """Thresholded memberships, ``m_ij`` (stored or computed) and the cluster names."""
    name = f"{key}_membership"
    if name not in adata.obsm:
        raise ValueError(
            f"No memberships at adata.obsm[{name!r}]: run a consensus method with "
            f"key_added={key!r} first."
        )
    Y = np.asarray(adata.obsm[name], dtype=np.float64)
    k = Y.shape[1]
    m, Yt = _relationships(Y, threshold)
    stored = adata.uns.get(key, {})
    for rel in _RELATION_KEYS:
        if isinstance(stored, dict) and rel in stored:
            cand = np.asarray(stored[rel], dtype=np.float64)
            if cand.shape == (k, k):
                m = cand
                break
    names = [str(c) for c in range(k)]
    if (
        key in adata.obs
        and hasattr(adata.obs[key], "cat")
        and len(adata.obs[key].cat.categories) == k
    ):
        names = [str(c) for c in adata.obs[key].cat.categories]
    return Yt, m, names


def _embedding(adata: AnnData, basis: str | None) -> tuple[np.ndarray | None, str | None]:
    """First two columns of ``.obsm[basis]`` or ``.obsm[f"X_{basis}"]``; ``None`` if absent."""
    if basis is None:
        return None, None
    emb_key = basis if basis in adata.obsm else f"X_{basis}"
    if emb_key not in adata.obsm:
        return None, None
    return np.asarray(adata.obsm[emb_key], dtype=np.float64)[:, :2], emb_key.removeprefix("X_")


def _node_positions(Y: np.ndarray, emb: np.ndarray | None) -> np.ndarray:
    """Each cluster at the median of the cells labelled with it, weighted by membership
    (all cells by membership if none is labelled; a circle without embedding).

    Unlike the membership-weighted mean, this stays on the cluster's cells when small
    memberships of far-away cells add up, or when the cluster is curved.
    """
    k = Y.shape[1]
    if emb is None:
        angle = np.pi / 2 - 2 * np.pi * np.arange(k) / k
        return np.column_stack([np.cos(angle), np.sin(angle)])
    pos = np.tile(np.nanmedian(emb, axis=0), (k, 1))
    hard = Y.argmax(axis=1)
    for c in range(k):
        w = np.where(hard == c, Y[:, c], 0.0)  # the cells labelled c, by membership
        w = w if w.sum() > 0 else Y[:, c]
        if w.sum() > 0:
            pos[c] = [_weighted_median(emb[:, d], w) for d in range(2)]
    return pos


def _weighted_median(x: np.ndarray, w: np.ndarray) -> float:
    order = np.argsort(x)
    cum = np.cumsum(w[order])
    return float(x[order][np.searchsorted(cum, 0.5 * cum[-1])])


def _drawn_clusters(adata: AnnData, key: str, Y: np.ndarray) -> np.ndarray:
    """Clusters with mass, and with at least one item labelled with them when labels exist."""
    keep = Y.sum(axis=0) > 0
    if key in adata.obs and hasattr(adata.obs[key], "cat"):
        codes = adata.obs[key].cat.codes.to_numpy()
        counts = np.bincount(codes[codes >= 0], minlength=Y.shape[1])[: Y.shape[1]]
        if counts.size == keep.size:
            keep &= counts > 0
    return np.flatnonzero(keep)


def _cluster_colors(adata: AnnData, key: str, k: int) -> list[str]:
    if key in adata.obs:
        colors = list(category_colors(adata, key).values())
        if len(colors) >= k:
            return colors
    return [f"C{c % 10}" for c in range(k)]


def _draw_cells(ax: Axes, emb: np.ndarray, Y: np.ndarray, colors: list[str]) -> None:
    """Cells in their cluster's colour, faded, so that nodes can be checked against them."""
    from matplotlib.colors import to_rgba

    rgba = np.array([to_rgba(colors[c]) for c in Y.argmax(axis=1)])
    rgba[:, 3] = 0.45
    ax.scatter(emb[:, 0], emb[:, 1], s=6, c=rgba, linewidths=0, zorder=0)


def _node_radii(mass: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """Node radius in points: area proportional to the expected cluster size."""
    top = mass[keep].max() if keep.size else 1.0
    return 5 + 9 * np.sqrt(mass / max(top, 1e-12))


def _draw_edges(ax, pos, m, keep, radius, min_weight: float, spacing: float) -> None:
    """Curved arrows ``i -> j`` (``i -> j`` and ``j -> i`` bend to opposite sides), each
    labelled on its own arc, on a white box, at least ``spacing`` from the other labels and
    from the node centres (so that no two weights run together into one number)."""
    placed: list[np.ndarray] = [pos[c] for c in keep]
    for i in keep:
        for j in keep:
            if i == j or m[i, j] < min_weight:
                continue
            ax.add_patch(_arrow(pos[i], pos[j], m[i, j], radius[i], radius[j]))
            xy = _label_spot(pos[i], pos[j], np.asarray(placed), spacing)
            placed.append(xy)
            ax.annotate(
                f"{m[i, j]:.2f}",
                xy,
                ha="center",
                va="center",
                fontsize=7,
                zorder=5,
                bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.8},
            )


#: Bend of the arcs (matplotlib's ``arc3`` ``rad``).
_RAD = 0.3


def _arrow(a: np.ndarray, b: np.ndarray, weight: float, ra: float, rb: float):
    from matplotlib.patches import FancyArrowPatch

    return FancyArrowPatch(
        a,
        b,
        arrowstyle="-|>,head_length=0.5,head_width=0.25",
        mutation_scale=14,
        connectionstyle=f"arc3,rad={_RAD}",
        linewidth=0.5 + 5 * weight,
        color="0.25",
        alpha=0.85,
        zorder=1,
        shrinkA=ra + 1,
        shrinkB=rb + 1,
    )


def _label_spot(a: np.ndarray, b: np.ndarray, taken: np.ndarray, spacing: float) -> np.ndarray:
    """A point of the arc ``a -> b``, the middle if free, else the freest nearby point.

    ``arc3`` draws the quadratic Bézier through the control point ``mid + rad * (dy, -dx)``
    (the axes have equal scale, so data and display directions agree).
    """
    d = b - a
    control = 0.5 * (a + b) + _RAD * np.array([d[1], -d[0]])
    best, best_gap = None, -1.0
    for t in (0.5, 0.4, 0.6, 0.3, 0.7, 0.2, 0.8):
        xy = (1 - t) ** 2 * a + 2 * (1 - t) * t * control + t**2 * b
        gap = np.linalg.norm(taken - xy, axis=1).min() if len(taken) else np.inf
        if gap >= spacing:
            return xy
        if gap > best_gap:
            best, best_gap = xy, gap
    return best


#: Axis names of scanpy's embeddings (as ``sc.pl.embedding`` labels them).
_AXIS_PREFIX = {"pca": "PC", "umap": "UMAP", "tsne": "tSNE", "diffmap": "DC", "phate": "PHATE"}


def _axis_prefix(basis: str) -> str:
    if basis.startswith("draw_graph_"):
        return basis.removeprefix("draw_graph_").upper()
    return _AXIS_PREFIX.get(basis, basis)
