"""The cluster-relationship graph of the PCC paper (000_, Sect. 7.4)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from anndata import AnnData
from matplotlib.axes import Axes

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

    Each cluster is a node at its membership-weighted centroid in the embedding (size:
    expected cluster size); an arrow ``i -> j`` carries
    ``m_ij = E[|P_i ∩ P_j|] / E[|P_i|]``, the expected share of cluster ``i``'s items
    that cluster ``j`` also draws, shown when ``m_ij >= min_weight``. The matrix is read
    from ``.uns[key]["cluster_relationships"]`` when the method stored it, else computed
    from ``.obsm[f"{key}_membership"]``.

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
    figsize, title, ax
        Decorations, or the axes to draw into.
    show, save
        As in :func:`scconsensus.pl.consensus_cdf` (``sc.pl``'s rules).

    Returns
    -------
    :class:`~matplotlib.axes.Axes`, or ``None`` when the figure is shown.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import scconsensus as scc
    >>> adata = scc.datasets.pbmc68k_reduced()
    >>> scc.tl.consensus_k(adata, max_k=4, reps=5, distance="euclidean", keep_k=4)
    >>> ax = scc.pl.cluster_graph(adata, "consensus_k_k4", show=False)
    """
    from matplotlib.patches import FancyArrowPatch

    adata = check_adata(adata)
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
    mass = Yt.sum(axis=0)
    emb = None
    if basis is not None:
        emb_key = basis if basis in adata.obsm else f"X_{basis}"
        if emb_key in adata.obsm:
            emb = np.asarray(adata.obsm[emb_key])[:, :2]
    if emb is not None:
        with np.errstate(invalid="ignore", divide="ignore"):
            pos = (Yt.T @ emb) / mass[:, None]
        pos = np.where(np.isfinite(pos), pos, np.nanmean(emb, axis=0))
    else:
        angle = 2 * np.pi * np.arange(k) / k
        pos = np.column_stack([np.cos(angle), np.sin(angle)])
    ax = get_axes(ax, figsize)
    if emb is not None:
        ax.scatter(emb[:, 0], emb[:, 1], s=3, c="0.85", linewidths=0, zorder=0)
    colors = (
        list(category_colors(adata, key).values())
        if key in adata.obs
        else [f"C{c % 10}" for c in range(k)]
    )
    span = np.ptp(pos, axis=0).max() if k > 1 else 1.0
    span = span if span > 0 else 1.0
    sizes = 200 + 1800 * mass / max(mass.max(), 1e-12)
    for i in range(k):
        for j in range(k):
            if i == j or m[i, j] < min_weight:
                continue
            arrow = FancyArrowPatch(
                pos[i],
                pos[j],
                arrowstyle="-|>",
                mutation_scale=12,
                connectionstyle="arc3,rad=0.15",
                linewidth=0.5 + 6 * m[i, j],
                color="0.3",
                alpha=0.8,
                zorder=1,
                shrinkA=12,
                shrinkB=12,
            )
            ax.add_patch(arrow)
            mid = 0.5 * (pos[i] + pos[j])
            normal = np.array([pos[j][1] - pos[i][1], pos[i][0] - pos[j][0]])
            normal = normal / (np.linalg.norm(normal) or 1.0)
            ax.text(*(mid + 0.04 * span * normal), f"{m[i, j]:.2f}", fontsize=7, zorder=3)
    ax.scatter(
        pos[:, 0],
        pos[:, 1],
        s=sizes,
        c=[colors[c % len(colors)] for c in range(k)],
        edgecolors="k",
        zorder=2,
    )
    for c in range(k):
        ax.text(*pos[c], str(c), ha="center", va="center", fontsize=9, weight="bold", zorder=4)
    ax.set_title(title if title is not None else f"{key}: cluster relationships m_ij")
    if emb is not None:
        ax.set_xlabel(f"{basis}1")
        ax.set_ylabel(f"{basis}2")
    ax.set_xticks([])
    ax.set_yticks([])
    return finish(ax.figure, show, save, f"cluster_graph_{key}", ax)
