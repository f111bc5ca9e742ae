"""The evidence for the number of clusters chosen from an ensemble."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
from anndata import AnnData
from matplotlib.axes import Axes

from .._docs import doc_params
from ..core import KSelection
from ._utils import check_adata, finish, get_axes, transferred_from


@doc_params()
def k_selection(
    adata: AnnData,
    key: str = "pcc",
    *,
    figsize: tuple[float, float] = (5.0, 3.5),
    ax: Axes | None = None,
    show: bool | None = None,
    save: str | Path | bool | None = None,
) -> Axes | None:
    """The evidence behind the number of clusters chosen, per candidate ``K``.

    For ``tl.pcc``/``tl.pla``: the eigenvalue ``λ_K(E_K)`` per candidate ``K``, its
    running minimum, the chosen ``K`` and every other stable resolution: one marker per
    split (consecutive ``K`` whose drop reaches the threshold, a partial drop one ``K``
    before a stronger one included) at the ``K`` it is read at,
    annotated with its strength, its span shaded when it drops over several ``K``
    (:attr:`scconsensus.core.KSelection.splits`). ``λ_K(E_K)`` is the ``K``-th eigenvalue of
    the normalised co-association of the partitions with at least ``K`` clusters: near
    1 while ``K`` groups are kept apart by finer partitions, falling once a further
    group would split one that they cut in ever different places
    (:func:`scconsensus.core.select_k`).

    After :func:`scconsensus.tl.k_null`, the same evidence in its reference draws
    (data of the same covariance without groups): the band from their mean to their
    largest value, which the data should clear at the chosen ``K``.

    For ``tl.dpp``: the kernel validity index (Vicente & Murua 2021, eq. 11; lower is
    better) of each cut of the consensus against its number of clusters, and the cut
    returned (``.uns[key]["candidates"]``).

    Parameters
    ----------
    adata
        With a result of ``tl.pcc``/``tl.pla`` run with ``n_clusters="auto"`` at
        ``.uns[key]["k_selection"]``, or of ``tl.dpp`` (``.uns[key]["candidates"]``).
    key
        The result's ``key_added``.
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
    >>> scc.tl.ensemble(adata, random_state=0)
    >>> scc.tl.pcc(adata)
    >>> ax = scc.pl.k_selection(adata, "pcc", show=False)
    """
    record = _record(check_adata(adata), key)
    if "k_selection" not in record and "k_null" in record:
        return _given_k(record, key, figsize, ax, show, save)
    if "k_selection" not in record:
        return _dpp_candidates(record, key, figsize, ax, show, save)
    table = record["k_selection"]
    ax = get_axes(ax, figsize)
    K = table["n_clusters"].to_numpy()
    ax.plot(K, table["eigenvalue"], "o-", color="0.6", label=r"$\lambda_K(E_K)$")
    ax.step(K, table["envelope"], where="post", color="C0", label="running minimum")
    _null_band(ax, record.get("k_null"))
    chosen = int(K[np.asarray(table["chosen"], dtype=bool)][0])
    ax.axvline(chosen, color="C3", ls="--", label=f"chosen K = {chosen}")
    _mark_splits(ax, table, record.get("k_selection_threshold"), chosen)
    ax.set_xlabel("number of clusters K")
    ax.xaxis.get_major_locator().set_params(integer=True)  # K is a count: no 5.5 ticks
    ax.set_ylabel("normalised co-association kept")
    # room above 1 for the strength written over a split whose level is near 1
    ax.set_ylim(0, 1.15)
    ax.set_yticks(np.linspace(0, 1, 6))
    ax.set_title(f"{key}: choice of K")
    ax.legend(frameon=False, fontsize="small")
    return finish(ax.figure, show, save, f"k_selection_{key}", ax)


def _record(adata: AnnData, key: str) -> dict:
    """``.uns[key]`` if it holds K evidence (PCC's, PLA's or DPP's), else what to run or plot."""
    record = adata.uns.get(key, {})
    if "k_selection" in record or "candidates" in record or "k_null" in record:
        return record
    if "pac" in record:
        raise ValueError(
            f"adata.uns[{key!r}] holds consensus-k statistics (tl.consensus_k or "
            f"r.consensus_cluster_plus), not an ensemble's K evidence: plot them with "
            f"scc.pl.pac(adata, {key!r}) (its best k marked), scc.pl.consensus_cdf or "
            f"scc.pl.delta_area; the k of lowest PAC is adata.uns[{key!r}]['best_k']."
        )
    params = record.get("params") if isinstance(record, dict) else None
    asked = params.get("n_clusters") if isinstance(params, dict) else None
    if asked is not None and not (isinstance(asked, str) and asked == "auto"):
        # a K given (one of a list, say): the evidence is that of an "auto" run, if any
        base = re.sub(r"_k\d+$", "", key)  # n_clusters=[...] stores <key>_k<K>
        raise ValueError(
            f"adata.uns[{key!r}] is a fit at a given K ({asked}), which reads no K evidence. "
            f"Plot the run that chose K (e.g. scc.pl.k_selection(adata, {base!r}) after a "
            f"run with n_clusters='auto' and key_added={base!r}), whose "
            f".uns[{base!r}]['k_candidates'] name the K to fit; or compare this K with data "
            f"without groups first (scc.tl.k_null(adata, {key!r})), which reads its evidence."
        )
    moved = transferred_from(adata, key, "its K evidence and stable resolutions", "k_selection")
    if moved:
        raise ValueError(f"No K evidence at adata.uns[{key!r}]['k_selection'].{moved}")
    raise ValueError(
        f"No K evidence at adata.uns[{key!r}]['k_selection']: run scc.tl.pcc or "
        f"scc.tl.pla with n_clusters='auto' (or scc.tl.dpp) and key_added={key!r} first."
    )


def _mark_splits(ax: Axes, table, threshold, chosen: int) -> None:
    """Every stable resolution, one per split, with its strength and its span of ``K``."""
    if threshold is None:
        return
    # recomputed from the table, as select_k reads it, so records written before the
    # splits were stored plot the same way
    splits = KSelection(chosen, table, float(threshold), "").splits
    if splits.empty:
        return
    envelope = dict(zip(table["n_clusters"].astype(int), table["envelope"], strict=True))
    at = splits["n_clusters"].to_numpy()
    level = [envelope[int(K)] for K in at]
    ax.plot(at, level, "v", color="C1", label="stable resolutions")
    for row, y in zip(splits.itertuples(), level, strict=True):
        if row.k_first != row.k_last:
            ax.axvspan(row.k_first - 0.5, row.k_last + 0.5, color="C1", alpha=0.12, lw=0)
        if row.n_clusters != chosen:
            ax.axvline(row.n_clusters, color="C1", ls=":", lw=1)
        ax.annotate(
            f"{row.strength:.2f}",
            (row.n_clusters, y),
            textcoords="offset points",
            xytext=(4, 6),
            ha="left",
            fontsize=7,
            color="C1",
            # beside the K line, not on it (a user trial: the chosen K's dashed line ran
            # through its label), and legible over the curve of λ_K it is written on
            bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.7, "pad": 0.5},
        )


def _null_band(ax: Axes, null) -> None:
    """The reference draws of :func:`scconsensus.tl.k_null`, their mean to their largest."""
    if null is None:
        return
    K = null["n_clusters"].to_numpy()
    ax.fill_between(K, null["null_mean"], null["null_max"], color="0.8", alpha=0.6, lw=0)
    ax.plot(K, null["null_max"], ls=":", color="0.4", label="without groups (tl.k_null)")


def _given_k(record, key: str, figsize, ax, show, save):
    """A ``K`` given, after :func:`scconsensus.tl.k_null`: its evidence and the draws'."""
    table = record["k_null"]
    ax = get_axes(ax, figsize)
    K = table["n_clusters"].to_numpy()
    ax.plot(K, table["eigenvalue"], "o-", color="0.6", label=r"$\lambda_K(E_K)$")
    _null_band(ax, table)
    given = int(record.get("n_clusters_chosen", K[0]))
    ax.axvline(given, color="C3", ls="--", label=f"given K = {given}")
    ax.set_xlabel("number of clusters K")
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.set_ylabel("normalised co-association kept")
    ax.set_ylim(0, 1.05)
    ax.set_title(f"{key}: K given, against data without groups")
    ax.legend(frameon=False, fontsize="small")
    return finish(ax.figure, show, save, f"k_selection_{key}", ax)


def _dpp_candidates(record, key: str, figsize, ax, show, save):
    """KVI of each cut of the DPP consensus against its number of clusters."""
    table = record["candidates"]
    ax = get_axes(ax, figsize)
    K = table["n_clusters"].to_numpy()
    kvi = table["kvi"].to_numpy(dtype=float)
    # cuts not scored (below tau when a K was asked) and one-cluster cuts have no KVI
    ok = np.isfinite(kvi) & (kvi > 0)
    ax.plot(K[ok], kvi[ok], "o", color="0.6", label="cuts of the consensus")
    chosen = np.asarray(table["chosen"], dtype=bool)
    k_chosen = int(K[chosen][0])
    theta = float(table["threshold"].to_numpy()[chosen][0])
    ax.axvline(k_chosen, color="C3", ls="--", label=f"chosen K = {k_chosen} (θ = {theta:.2f})")
    if ok.any():
        ax.set_yscale("log")
    ax.set_xlabel("number of clusters K")
    ax.xaxis.get_major_locator().set_params(integer=True)  # K is a count: no 5.5 ticks
    ax.set_ylabel("kernel validity index (lower is better)")
    ax.set_title(f"{key}: choice of K")
    ax.legend(frameon=False, fontsize="small")
    return finish(ax.figure, show, save, f"k_selection_{key}", ax)
