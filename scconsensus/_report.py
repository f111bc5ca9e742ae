"""Figure folder and Markdown summary of consensus results (used by ``scconsensus run``).

The report is built in three steps: :func:`_plan` lists the figures (a :class:`_Figure`
each: file name, caption, draw function), :func:`_draw` writes those it can, and
:func:`_markdown` assembles ``report.md`` from the results table, the consensus-k tables
and what was drawn. How a figure is drawn is part of its record, never read back from its
file name (a result key is free text).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from anndata import AnnData
from matplotlib.figure import Figure

from . import pl
from ._io import atomic_dir, check_writable
from ._progress import progress_bar
from ._report_table import NA_NOTE, markdown_table, results_table
from ._results import result_method
from .core.consensus_k import lowest_pac
from .tl._null_words import cuts, standing

__all__ = ["check_report_folder", "draw_report", "write_report"]

#: Figure sizes (inches) of the single-panel plots.
_WIDE = (7, 4)
_SQUARE = (6, 5)


@dataclass(frozen=True)
class _Figure:
    """One figure of the report.

    Attributes
    ----------
    name
        PNG file name inside the report folder.
    caption
        Markdown text shown under the figure.
    draw
        Draws the figure and returns it (the caller saves and closes it).
    """

    name: str
    caption: str
    draw: Callable[[], Figure]


def _single(plot: Callable[..., object], size: tuple[float, float]) -> Callable[[], Figure]:
    """A draw function for a plot that draws into one given ``ax``."""

    def draw() -> Figure:
        fig, ax = plt.subplots(figsize=size)
        plot(ax=ax)
        return fig

    return draw


def _has_consensus_k(adata: AnnData, key: str) -> bool:
    rec = adata.uns.get(key)
    return isinstance(rec, dict) and "cdf" in rec and "k" in rec


# --------------------------------------------------------------------------- plan


def _result_figures(
    adata: AnnData, key: str, ensemble_key: str, truth: str | None, basis: str | None
) -> list[_Figure]:
    """Figures of one consensus result ``.obs[key]`` (those its outputs allow)."""
    figures = []
    if f"{key}_membership" in adata.obsm:
        figures.append(
            _Figure(
                f"{key}_membership.png",
                f"`{key}`: soft memberships per item, sorted by cluster and, within each, "
                f"by `.obs['{key}_confidence']` (most confident first; items with no "
                "label last)" + (f"; the bar below shows `{truth}`." if truth else "."),
                _single(lambda ax: pl.membership(adata, key, truth, ax=ax, show=False), _WIDE),
            )
        )
        figures.append(
            _Figure(
                f"{key}_cluster_graph.png",
                f"`{key}`: cluster-relationship graph (Lourenço et al. 2015, Sect. 7.4): "
                "arrow i→j is the expected share of cluster i's items also drawn into "
                "cluster j.",
                _single(lambda ax: pl.cluster_graph(adata, key, basis, ax=ax, show=False), _WIDE),
            )
        )
    if basis is not None and f"{key}_confidence" in adata.obs:
        figures.append(
            _Figure(
                f"{key}_confidence_{basis}.png",
                f"`{key}` on the {basis.upper()}: labels, confidence "
                f"(`.obs['{key}_confidence']`) and entropy; low confidence marks items "
                f"the clustering is unsure of.{_entropy_note(adata, key)}",
                # three panels on a figure of its own: pl.confidence takes no ax
                lambda: pl.confidence(adata, key, basis, show=False)[0].figure,
            )
        )
    source, what = _heatmap_source(adata, key, ensemble_key)
    if source is not None:
        annotations = [truth] if truth else None
        figures.append(
            _Figure(
                f"{key}_heatmap.png",
                f"{what}, ordered by `{key}`; blocks on the diagonal are clusters the "
                "partitions agree on.",
                _single(
                    lambda ax: pl.consensus_heatmap(
                        adata, source, key, annotations=annotations, ax=ax, show=False
                    ),
                    _SQUARE,
                ),
            )
        )
    return figures


def _heatmap_source(adata: AnnData, key: str, ensemble_key: str) -> tuple[str | None, str]:
    """Which matrix the report draws for ``key``, as ``pl.consensus_heatmap(adata, key)``
    would (a user trial: the report drew every partition where PCC fitted 11), and its
    caption; the ensemble's co-association, said so, for a result that used none (DPP).
    ``None`` when a result's own ensemble is gone: another one would say nothing of it."""
    from .pl._heatmap import _result_ensemble

    if f"{key}_consensus" in adata.obsp:
        return key, f"Consensus matrix of `{key}`"
    try:
        own, columns = _result_ensemble(adata, key)
    except ValueError:  # its ensemble rebuilt since: the drawing fails, and says why
        return key, f"Co-association of the partitions `{key}` fitted"
    if own is not None:
        if own not in adata.obsm:
            return None, ""
        n = f"the {len(columns)} partitions" if columns is not None else "the partitions"
        return key, f"Co-association of {n} `{key}` fitted (`.obsm['{own}']`)"
    if ensemble_key in adata.obsm:
        return ensemble_key, (
            f"Co-association of the ensemble `.obsm['{ensemble_key}']`, which `{key}` did "
            "not use (it builds its own partitions)"
        )
    return None, ""


def _calibration_figures(adata: AnnData, keys: Sequence[str], truth: str | None) -> list[_Figure]:
    """The reliability diagram of every result with a confidence, when there is a truth."""
    scored = [k for k in keys if k in adata.obs and f"{k}_confidence" in adata.obs and k != truth]
    if truth is None or not scored:
        return []
    return [
        _Figure(
            "calibration.png",
            f"Calibration against `{truth}`: accuracy (the cell's class is its cluster's "
            "majority class) against confidence per bin, marker area = cells in the bin; "
            "the legend gives each result's AUROC and ECE, as in the table.",
            _single(lambda ax: pl.calibration(adata, scored, truth, ax=ax, show=False), _SQUARE),
        )
    ]


def _k_reason(adata: AnnData, key: str) -> str | None:
    """Why the result ``key`` has its number of clusters, when it chose it (``"auto"``):
    ``select_k``'s reason for PCC and PLA, the kernel validity index's for DPP."""
    rec = adata.uns.get(key)
    if not hasattr(rec, "get"):
        return None
    if "k_selection_reason" in rec:
        return str(rec["k_selection_reason"])
    chose = rec.get("params", {}).get("n_clusters") in (None, "auto")
    return str(rec["reason"]) if chose and "candidates" in rec and "reason" in rec else None


def _evidence_drawn_for(adata: AnnData, keys: Sequence[str]) -> dict[str, str]:
    """``{key: earlier key}`` for results whose K evidence an earlier result already has:
    PCC and PLA on one ensemble read the same ``select_k`` table, drawn once."""
    first: dict[str, str] = {}
    seen: list[tuple[str, pd.DataFrame]] = []
    for key in keys:
        rec = adata.uns.get(key)
        if _k_reason(adata, key) is None or "k_selection" not in rec:
            continue
        table = pd.DataFrame(rec["k_selection"])
        same = next((k for k, t in seen if t.equals(table)), None)
        if same is None:
            seen.append((key, table))
        else:
            first[key] = same
    return first


def _k_selection_figures(adata: AnnData, key: str, shared: dict[str, str]) -> list[_Figure]:
    """The evidence for the number of clusters of a result that chose it (none when an
    earlier result's figure, ``shared[key]``, shows the same), or that was compared with
    data without groups at a ``K`` given."""
    compared = "k_null" in adata.uns.get(key, {})
    if (_k_reason(adata, key) is None and not compared) or key in shared:
        return []
    band = (
        " The dotted line and the grey band: the same evidence in data without groups "
        "(tl.k_null's draws: their largest and their mean)."
        if compared
        else ""
    )
    return [
        _Figure(
            f"{key}_k_selection.png",
            f"`{key}`: the evidence for the number of clusters (PCC, PLA: the eigenvalue "
            "λ_K(E_K) per candidate K, falling where a further group would be cut; every "
            "stable resolution marked with its strength. DPP: the kernel validity index, "
            f"lower is better).{band}",
            _single(lambda ax: pl.k_selection(adata, key, ax=ax, show=False), _WIDE),
        )
    ]


def _consensus_k_figures(adata: AnnData, key: str) -> list[_Figure]:
    """CDF, delta area and PAC curves of one consensus-k record ``.uns[key]``."""
    return [
        _Figure(
            f"{key}_cdf.png",
            f"`{key}`: consensus CDF per k; the flatter the middle, the more stable k.",
            _single(lambda ax: pl.consensus_cdf(adata, key, ax=ax, show=False), _WIDE),
        ),
        _Figure(
            f"{key}_delta_area.png",
            f"`{key}`: delta area (relative gain in CDF area) against k.",
            _single(lambda ax: pl.delta_area(adata, key, ax=ax, show=False), _WIDE),
        ),
        _Figure(
            f"{key}_pac.png",
            f"`{key}`: proportion of ambiguous clustering against k (lower is better).",
            _single(lambda ax: pl.pac(adata, key, ax=ax, show=False), _WIDE),
        ),
    ]


def _figures(
    adata: AnnData,
    keys: Sequence[str],
    ck_keys: Sequence[str],
    ensemble_key: str,
    truth: str | None,
    basis: str | None,
) -> list[_Figure]:
    """Every figure of the report, in its order."""
    figures = [
        figure
        for key in keys
        if key in adata.obs
        for figure in _result_figures(adata, key, ensemble_key, truth, basis)
    ]
    shared = _evidence_drawn_for(adata, keys)
    figures += [figure for key in keys for figure in _k_selection_figures(adata, key, shared)]
    figures += _calibration_figures(adata, keys, truth)
    return figures + [figure for key in ck_keys for figure in _consensus_k_figures(adata, key)]


# --------------------------------------------------------------------------- draw


def _draw(
    figures: Sequence[_Figure], outdir: Path, progress: bool | None
) -> tuple[list[_Figure], list[tuple[str, str]]]:
    """Save every figure; one that cannot be drawn is returned with the reason."""
    written, failed = [], []
    for figure in progress_bar(figures, progress=progress, desc="figures", unit="fig"):
        try:
            figure.draw().savefig(outdir / figure.name, dpi=120, bbox_inches="tight")
            written.append(figure)
        except (ValueError, MemoryError, KeyError) as err:
            failed.append((figure.name, str(err)))
        finally:
            plt.close("all")
    return written, failed


# --------------------------------------------------------------------------- markdown


def _consensus_k_section(adata: AnnData, key: str) -> list[str]:
    rec = adata.uns[key]
    ks = np.atleast_1d(rec["k"]).astype(int)
    pac = np.asarray(rec["pac"], dtype=float)
    table = pd.DataFrame(
        {"k": ks, "PAC": pac, "delta area": np.asarray(rec["delta_area"], dtype=float)}
    )
    best, tied = lowest_pac(ks, pac)
    # ties said, as the warning says them (a user read one k where PAC was 0 at five)
    at = (
        f"k = {', '.join(map(str, tied))} (tied; best_k is {best})"
        if len(tied) > 1
        else f"k = {best}"
    )
    return [f"## Choosing k: `{key}` (lowest PAC at {at})", "", markdown_table(table), ""]


def _k_section(adata: AnnData, key: str, shared: dict[str, str]) -> list[str]:
    """How the result ``key`` chose its number of clusters, and the other candidates
    (``shared``: the earlier result whose figure shows the same evidence)."""
    reason = _k_reason(adata, key)
    if reason is None:
        null = _null_line(adata.uns.get(key, {}))
        return [f"## How many groups: `{key}`", "", "K was given.", "", *null] if null else []
    lines = [f"## How many groups: `{key}`", "", reason.rstrip(".") + ".", ""]
    lines += _null_line(adata.uns[key])
    if key in shared:
        lines += [f"The evidence is `{shared[key]}`'s (one ensemble): its figure shows it.", ""]
    splits = pd.DataFrame(adata.uns[key].get("k_splits", {}))
    if len(splits) > 1:
        # object columns: the table's rows keep their K as integers, not as 8.000
        splits = splits.astype(object)
        lines += [
            "Every stable resolution, strongest first; fit others with "
            f"`tl.{_method(adata, key)}(adata, n_clusters=[...])` (on the command line: "
            "`--n-clusters 4,8`, each stored as `<method>_k<K>`):",
            "",
            markdown_table(splits),
            "",
        ]
    return lines


def _null_line(record) -> list[str]:
    """What :func:`scconsensus.tl.k_null` found, when it was run on the result."""
    if "k_null" not in record:
        return []
    table = pd.DataFrame(record["k_null"])
    K = int(record.get("n_clusters_chosen", table["n_clusters"].iloc[0]))
    row = table[table["n_clusters"] == K].iloc[0]
    n_null = record.get("k_null_params", {}).get("n_null", 0)
    draws = f"{n_null} draw{'s' if n_null != 1 else ''}" if n_null else "draws"
    stands = standing(row)
    verdict = (
        f"K = {K} cannot be compared"
        if stands is None
        else f"K = {K} groups are {stands} stable than the data's shape alone gives"
    )
    return [
        f"Against data without groups (`tl.k_null`: {draws} of one Gaussian with the "
        f"data's covariance, the ensemble rebuilt on each): λ_{K}(E_{K}) = "
        f"{row.eigenvalue:.3f}, at most {row.null_max:.3f} in the draws; {cuts(row)}: "
        f"{verdict}.",
        "",
    ]


def _entropy_note(adata: AnnData, key: str) -> str:
    """For PCC and PLA, whose memberships come out nearly hard: their entropy is no
    uncertainty to read (a user trial found it 0 for most cells, and ranking doublets
    below chance), the confidence is."""
    if result_method(adata, key) not in ("pcc", "pla", "pla_transfer"):
        return ""
    return (
        " The entropy is that of the model's membership, nearly hard for PCC and PLA (0 for "
        "most items): read the confidence, which is taken from the ensemble."
    )


def _method(adata: AnnData, key: str) -> str:
    """The ``tl`` function that fitted ``key`` (PCC or PLA: their records hold K evidence)."""
    return "pla" if result_method(adata, key) == "pla" else "pcc"


def _markdown(
    adata: AnnData,
    keys: Sequence[str],
    ck_keys: Sequence[str],
    drawn: tuple[list[_Figure], list[tuple[str, str]]],
    ensemble_key: str,
    truth: str | None,
) -> str:
    lines = ["# scconsensus report", "", f"{adata.n_obs} items × {adata.n_vars} features."]
    if ensemble_key in adata.obsm:
        lines.append(
            f"Ensemble `{ensemble_key}`: {np.asarray(adata.obsm[ensemble_key]).shape[1]} "
            "partitions."
        )
    lines.append("")
    table = results_table(adata, keys, truth)
    if not table.empty:
        lines += ["## Consensus results", "", markdown_table(table), ""]
        if table.isna().to_numpy().any():
            lines += [NA_NOTE, ""]
    shared = _evidence_drawn_for(adata, keys)
    for key in keys:
        lines += _k_section(adata, key, shared)
    for key in ck_keys:
        lines += _consensus_k_section(adata, key)
    written, failed = drawn
    if written:
        lines += ["## Figures", ""]
        for figure in written:
            lines += [f"![{figure.name}]({figure.name})", "", figure.caption, ""]
    if failed:
        lines += ["## Figures not drawn", ""]
        lines += [f"- `{name}`: {reason}" for name, reason in failed]
        lines.append("")
    missing = [k for k in keys if k not in adata.obs and k not in ck_keys]
    if missing:
        lines += [f"Keys without results: {', '.join(f'`{k}`' for k in missing)}.", ""]
    return "\n".join(lines)


def check_report_folder(outdir: str | Path, option: str = "--figures") -> None:
    """Refuse a report folder that holds anything but an earlier report.

    :func:`write_report` replaces the whole folder (so its figures and ``report.md`` are
    always one set); a folder with other files would lose them.

    Parameters
    ----------
    outdir
        The folder :func:`write_report` is to write.
    option
        The option that named it, for the message.

    Raises
    ------
    ValueError
        When ``outdir`` is a file or a link, a folder that is neither empty nor
        ``report.md`` with ``.png`` figures, or where nothing can be written.
    """
    outdir = Path(outdir)
    if outdir.is_symlink():  # replaced whole, it would lose the link and not fill its target
        raise ValueError(
            f"{option} {str(outdir)!r} is a link; name the folder itself (the report replaces "
            "its folder whole)."
        )
    if outdir.exists() and not outdir.is_dir():
        raise ValueError(f"{option} {str(outdir)!r} is a file; name a folder for the report.")
    check_writable(outdir.parent, option)  # the report is swapped in beside it
    if not outdir.is_dir():
        return
    entries = list(outdir.iterdir())
    foreign = [p.name for p in entries if not (p.is_file() and p.suffix == ".png")]
    if entries and foreign != ["report.md"]:
        shown = [name for name in sorted(foreign) if name != "report.md"][:3]
        raise ValueError(
            f"{option} {str(outdir)!r} holds files that are not a scconsensus report "
            f"({', '.join(shown) or 'no report.md'}); the report replaces the whole "
            "folder, so choose a new or empty folder."
        )


def write_report(
    adata: AnnData,
    outdir: str | Path,
    keys: Sequence[str],
    *,
    ensemble_key: str = "scc_ensemble",
    truth: str | None = "truth",
    basis: str | None = None,
    progress: bool | None = None,
) -> Path:
    """Write PNG figures and ``report.md`` describing the consensus results ``keys``.

    For every result key in ``.obs``: membership bars, labels/confidence/entropy on an
    embedding (UMAP, else t-SNE, else PCA), the co-association heatmap of the ensemble
    ordered by the result's labels, and the cluster-relationship graph; for a result that chose its
    number of clusters, the evidence (:func:`scconsensus.pl.k_selection`), the reason and
    the other stable resolutions; with a ``truth``, one
    reliability diagram of the results' confidence (:func:`scconsensus.pl.calibration`).
    For every consensus-k record in ``.uns`` (:func:`scconsensus.tl.consensus_k`,
    :func:`scconsensus.r.consensus_cluster_plus`): consensus CDF, delta area and PAC
    curves. A figure that cannot be drawn is listed in
    the report with the reason instead of stopping the others.

    The figures and ``report.md`` are drawn into a new folder that then replaces
    ``outdir`` whole: an interrupted report leaves the previous one as it was.

    Parameters
    ----------
    adata
        Annotated data with results.
    outdir
        Folder to write (created, or replaced whole; see :func:`check_report_folder`).
    keys
        Result keys (e.g. ``["pcc", "pla", "dpp"]``); consensus-k records (``.uns`` entries
        with a ``cdf``) may be given too and are also found on their own.
    ensemble_key
        ``.obsm`` ensemble whose co-association is drawn.
    truth
        ``.obs`` column of known labels to score against and annotate (skipped if absent).
    basis
        Embedding for the scatter plots (default: the first of ``"umap"``, ``"tsne"``,
        ``"pca"`` present).
    progress
        Progress bar over the figures (``None``: when scanpy's verbosity is ``'info'`` or
        higher).

    Returns
    -------
    Path of ``report.md``.

    Examples
    --------
    >>> import tempfile
    >>> import scconsensus as scc
    >>> from scconsensus._report import write_report
    >>> adata = scc.datasets.iris()
    >>> scc.tl.consensus_k(adata, max_k=3, reps=10, distance="euclidean", keep_k=3)
    >>> path = write_report(adata, tempfile.mkdtemp(), ["consensus_k_k3"], progress=False)
    >>> path.name
    'report.md'
    """
    if not isinstance(adata, AnnData):
        raise ValueError(f"Expected an AnnData object, got {type(adata).__name__}.")
    outdir = Path(outdir)
    check_report_folder(outdir, "outdir")
    options = {"ensemble_key": ensemble_key, "truth": truth, "basis": basis, "progress": progress}
    with atomic_dir(outdir) as tmp:
        draw_report(adata, tmp, keys, **options)
    return outdir / "report.md"


def draw_report(
    adata: AnnData,
    folder: Path,
    keys: Sequence[str],
    *,
    ensemble_key: str = "scc_ensemble",
    truth: str | None = "truth",
    basis: str | None = None,
    progress: bool | None = None,
) -> None:
    """:func:`write_report`'s figures and ``report.md``, drawn into ``folder`` (empty,
    existing) and published by the caller: the command line renames them into place
    together with its ``.h5ad``, so that a kill never leaves one run's file beside another
    run's report.

    Parameters
    ----------
    adata, keys, ensemble_key, truth, basis, progress
        As :func:`write_report`'s.
    folder
        Where to draw.
    """
    truth = truth if truth is not None and truth in adata.obs else None
    if basis is None:
        basis = next((b for b in ("umap", "tsne", "pca") if f"X_{b}" in adata.obsm), None)
    keys = list(keys)
    ck_keys = [k for k in keys if _has_consensus_k(adata, k)]
    ck_keys += [k for k in adata.uns if _has_consensus_k(adata, k) and k not in ck_keys]
    figures = _figures(adata, keys, ck_keys, ensemble_key, truth, basis)
    drawn = _draw(figures, folder, progress)
    (folder / "report.md").write_text(_markdown(adata, keys, ck_keys, drawn, ensemble_key, truth))
