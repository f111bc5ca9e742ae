"""The cluster-relationship graph of PCC (Lourenço et al. 2015, Sect. 7.4)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from anndata import AnnData
from matplotlib.axes import Axes

from .._docs import doc_params
from .._validation import check_number
from ..core import cluster_relationships
from ..core.pcc import thresholded_membership
from ._utils import category_colors, check_adata, finish, get_axes

__all__ = ["cluster_graph"]

#: Names under which a consensus method may store ``m_ij`` in ``.uns[key]``.
_RELATION_KEYS = ("cluster_relationships", "relationships", "m")


@doc_params()
def cluster_graph(
    adata: AnnData,
    key: str = "pcc",
    basis: str | None = "umap",
    *,
    threshold: float | None = None,
    min_weight: float = 0.05,
    title: str | None = None,
    figsize: tuple[float, float] = (5.5, 5.0),
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
    ``j -> i`` bend to opposite sides). Nodes that would overlap are moved apart just
    enough to show each (at K = 10 to 20 neighbouring clusters' medians lie closer than
    their discs), and no weight is placed on a node or on another weight. The matrix is
    read from
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
        Memberships below this are ignored (the paper's ``δ``) and ``m_ij`` computed at it.
        ``None``: the ``m_ij`` the method stored (``tl.pcc``: at its own threshold), else 0.01.
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
    threshold = _checked_threshold(threshold)
    Y, m, names = _cluster_inputs(adata, key, threshold)
    emb, basis = _embedding(adata, basis)
    pos = _node_positions(Y, emb)
    keep = _drawn_clusters(adata, key, Y)
    ax = get_axes(ax, figsize, fitted=False)  # label spots are settled on its size
    colors = _cluster_colors(adata, key, len(names))
    if emb is not None:
        _draw_cells(ax, emb, Y, colors)
    ax.set_aspect("equal", adjustable="datalim")  # arcs and label spots share one scale
    radius = _node_radii(Y.sum(axis=0), keep)
    to_pt, frame = _points(ax, pos[keep])
    pos = _spread_nodes(pos, radius, keep, to_pt, frame)
    _draw_edges(ax, pos, m, keep, radius, min_weight, to_pt, frame)
    _draw_nodes(ax, pos, radius, keep, colors, names)
    ax.set_title(title if title is not None else f"{key}: cluster relationships $m_{{ij}}$")
    _label_axes(ax, basis if emb is not None else None)
    return finish(ax.figure, show, save, f"cluster_graph_{key}", ax)


def _checked_threshold(threshold: float | None) -> float | None:
    if threshold is None:
        return None
    threshold = check_number(threshold, "threshold", within=(0.0, 1.0))
    if threshold == 1.0:  # 1 keeps no membership: an empty graph
        raise ValueError("threshold must be below 1: no membership would be kept.")
    return threshold


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


def _cluster_inputs(adata: AnnData, key: str, threshold: float | None):
    """Thresholded memberships, ``m_ij`` (stored or computed) and the cluster names."""
    name = f"{key}_membership"
    if name not in adata.obsm:
        raise ValueError(
            f"No memberships at adata.obsm[{name!r}]: run a consensus method with "
            f"key_added={key!r} first."
        )
    Y = np.asarray(adata.obsm[name], dtype=np.float64)
    k = Y.shape[1]
    record = adata.uns.get(key)
    # a threshold given is a question about these memberships: the stored m_ij answer
    # only the method's own threshold
    m = _stored_relationships(record, k) if threshold is None else None
    if threshold is None:
        threshold = _stored_threshold(record)
    if m is None:
        m = cluster_relationships(Y, threshold)
    Yt = thresholded_membership(Y, threshold)
    names = [str(c) for c in range(k)]
    if (
        key in adata.obs
        and hasattr(adata.obs[key], "cat")
        and len(adata.obs[key].cat.categories) == k
    ):
        names = [str(c) for c in adata.obs[key].cat.categories]
    return Yt, m, names


def _stored_relationships(record: Any, k: int) -> np.ndarray | None:
    """``m_ij`` as the method stored it, if it did (for the result's ``k`` clusters)."""
    for rel in _RELATION_KEYS:
        if isinstance(record, dict) and rel in record:
            m = np.asarray(record[rel], dtype=np.float64)
            if m.shape == (k, k):
                return m
    return None


def _stored_threshold(record: Any) -> float:
    params = record.get("params", {}) if isinstance(record, dict) else {}
    return float(params.get("relationship_threshold", 0.01))


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


#: Gap between node discs, and half the width and height of a weight label, in points.
_NODE_GAP, _LABEL_W, _LABEL_H = 3.0, 10.0, 6.0


def _points(ax: Axes, nodes: np.ndarray):
    """The data -> points transform at the axes' final limits, which are then fixed, and
    the axes' lower-left and upper-right corners in points.

    Node sizes are in points and positions in data units: overlaps can only be judged
    once the limits (and the equal aspect) are settled, so they are settled here, with
    the nodes inside them.
    """
    from matplotlib.transforms import Affine2D

    if len(nodes):
        ax.update_datalim(nodes)
    ax.autoscale_view()
    ax.apply_aspect()
    limits = np.array([ax.set_xlim(ax.get_xlim()), ax.set_ylim(ax.get_ylim())]).T
    to_pt = ax.transData + Affine2D().scale(72.0 / ax.figure.dpi)
    corners = to_pt.transform(limits)
    return to_pt, (corners.min(axis=0), corners.max(axis=0))


def _spread_nodes(pos: np.ndarray, radius: np.ndarray, keep: np.ndarray, to_pt, frame):
    """Push overlapping node discs apart (in points), keeping them inside the axes."""
    xy = to_pt.transform(pos[keep])
    r = radius[keep] + _NODE_GAP / 2
    lo, hi = frame
    for _ in range(300):
        moved = False
        for a in range(len(xy)):
            for b in range(a + 1, len(xy)):
                d = xy[b] - xy[a]
                dist = float(np.hypot(*d))
                need = r[a] + r[b]
                if dist >= need:
                    continue
                # coincident centres: part them along a fixed direction per pair
                u = d / dist if dist > 1e-9 else np.array([np.cos(a + b), np.sin(a + b)])
                xy[a] -= u * (need - dist) / 2
                xy[b] += u * (need - dist) / 2
                moved = True
        xy = np.clip(xy, lo + r[:, None], hi - r[:, None])
        if not moved:
            break
    out = pos.copy()
    out[keep] = to_pt.inverted().transform(xy)
    return out


def _draw_edges(ax, pos, m, keep, radius, min_weight: float, to_pt, frame) -> None:
    """Curved arrows ``i -> j`` (``i -> j`` and ``j -> i`` bend to opposite sides), each
    labelled on its own arc, on a white box, off the nodes and off the other labels (so
    that no two weights run together into one number)."""
    nodes = [(to_pt.transform(pos[c]), radius[c]) for c in keep]
    placed: list[np.ndarray] = []
    for i in keep:
        for j in keep:
            if i == j or m[i, j] < min_weight:
                continue
            ax.add_patch(_arrow(pos[i], pos[j], m[i, j], radius[i], radius[j]))
            ends = to_pt.transform(pos[i]), to_pt.transform(pos[j])
            spot = _label_spot(*ends, nodes, placed, frame)
            placed.append(spot)
            xy = to_pt.inverted().transform(spot)
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


def _label_spot(a: np.ndarray, b: np.ndarray, nodes, placed, frame) -> np.ndarray:
    """Where the weight of the arc ``a -> b`` goes (points): on the arc, the middle if
    free, else the nearest free point along it or beside it, else the least covered one.

    ``arc3`` draws the quadratic Bézier through the control point ``mid + rad * (dy, -dx)``.
    A label is a ``2 _LABEL_W x 2 _LABEL_H`` box; it is free when it clears every node
    disc and every label placed before.
    """
    d = b - a
    control = 0.5 * (a + b) + _RAD * np.array([d[1], -d[0]])
    normal = np.array([d[1], -d[0]]) / max(float(np.hypot(*d)), 1e-9)
    best, best_cover = None, np.inf
    for shift in (0.0, 1.0, -1.0, 2.0, -2.0):
        for t in (0.5, 0.4, 0.6, 0.3, 0.7, 0.2, 0.8):
            xy = (1 - t) ** 2 * a + 2 * (1 - t) * t * control + t**2 * b
            xy = xy + shift * 2 * _LABEL_H * normal
            cover = _cover(xy, nodes, placed, frame)
            if cover == 0.0:
                return xy
            if cover < best_cover:
                best, best_cover = xy, cover
    return best


def _cover(xy: np.ndarray, nodes, placed, frame) -> float:
    """How far a label box at ``xy`` reaches into the node discs, the placed labels and
    out of the axes."""
    half = np.array([_LABEL_W, _LABEL_H])
    lo, hi = frame
    cover = float(np.clip(lo - (xy - half), 0, None).sum() + np.clip(xy + half - hi, 0, None).sum())
    for centre, r in nodes:
        nearest = np.clip(centre, xy - half, xy + half)  # the box's point nearest the centre
        cover += max(0.0, r + 1.0 - float(np.hypot(*(nearest - centre))))
    for other in placed:
        overlap = 2 * half - np.abs(other - xy)
        cover += float(min(overlap)) if (overlap > 0).all() else 0.0
    return cover


#: Axis names of scanpy's embeddings (as ``sc.pl.embedding`` labels them).
_AXIS_PREFIX = {"pca": "PC", "umap": "UMAP", "tsne": "tSNE", "diffmap": "DC", "phate": "PHATE"}


def _axis_prefix(basis: str) -> str:
    if basis.startswith("draw_graph_"):
        return basis.removeprefix("draw_graph_").upper()
    return _AXIS_PREFIX.get(basis, basis)
