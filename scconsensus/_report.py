"""Figure folder and Markdown summary of consensus results (used by ``scconsensus run``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from anndata import AnnData

from . import pl
from ._progress import progress_bar

__all__ = ["write_report"]


def _has_consensus_k(adata: AnnData, key: str) -> bool:
    rec = adata.uns.get(key)
    return isinstance(rec, dict) and "cdf" in rec and "k" in rec


def _scores(adata: AnnData, key: str, truth: str | None) -> dict:
    from .metrics import adjusted_rand_index, nmi

    labels = adata.obs[key]
    row = {
        "result": key,
        "clusters": int(labels.nunique()),
        "sizes": ", ".join(str(v) for v in labels.value_counts().sort_index().tolist()),
    }
    if f"{key}_confidence" in adata.obs:
        row["mean confidence"] = float(adata.obs[f"{key}_confidence"].mean())
    if truth is not None:
        row[f"ARI vs {truth}"] = adjusted_rand_index(adata.obs[truth], labels)
        row[f"NMI vs {truth}"] = nmi(adata.obs[truth], labels)
    return row


def _markdown_table(df: pd.DataFrame) -> str:
    cols = list(df.columns)
    lines = ["| " + " | ".join(cols) + " |", "| " + " | ".join("---" for _ in cols) + " |"]
    for _, row in df.iterrows():
        cells = [f"{v:.3f}" if isinstance(v, float) else str(v) for v in row.tolist()]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


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
    embedding (UMAP, else PCA), the co-association heatmap of the ensemble ordered by the
    result's labels, and the cluster-relationship graph. For every consensus-k record in
    ``.uns`` (:func:`scconsensus.tl.consensus_k`, :func:`scconsensus.r.consensus_cluster_plus`):
    consensus CDF, delta area and PAC curves. A figure that cannot be drawn is listed in
    the report with the reason instead of stopping the others.

    Parameters
    ----------
    adata
        Annotated data with results.
    outdir
        Folder to write into (created).
    keys
        Result keys (e.g. ``["pcc", "pla", "dpp"]``); consensus-k records (``.uns`` entries
        with a ``cdf``) may be given too and are also found on their own.
    ensemble_key
        ``.obsm`` ensemble whose co-association is drawn.
    truth
        ``.obs`` column of known labels to score against and annotate (skipped if absent).
    basis
        Embedding for the scatter plots (default ``"umap"`` when present, else ``"pca"``).
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
    outdir.mkdir(parents=True, exist_ok=True)
    truth = truth if truth is not None and truth in adata.obs else None
    if basis is None:
        basis = next((b for b in ("umap", "tsne", "pca") if f"X_{b}" in adata.obsm), None)
    keys = list(keys)
    results = [k for k in keys if k in adata.obs]
    ck_keys = [k for k in keys if _has_consensus_k(adata, k)]
    ck_keys += [k for k in adata.uns if _has_consensus_k(adata, k) and k not in ck_keys]

    jobs: list[tuple[str, str, Callable]] = []
    for key in results:
        if f"{key}_membership" in adata.obsm:
            jobs.append(
                (
                    f"{key}_membership.png",
                    f"`{key}`: soft memberships per item, sorted by cluster and confidence"
                    + (f"; the bar below shows `{truth}`." if truth else "."),
                    lambda ax, key=key: pl.membership(adata, key, truth, ax=ax, show=False),
                )
            )
            jobs.append(
                (
                    f"{key}_cluster_graph.png",
                    f"`{key}`: cluster-relationship graph (PCC paper Sect. 7.4): arrow i→j "
                    "is the expected share of cluster i's items also drawn into cluster j.",
                    lambda ax, key=key: pl.cluster_graph(adata, key, basis, ax=ax, show=False),
                )
            )
        if basis is not None and f"{key}_confidence" in adata.obs:
            jobs.append(
                (
                    f"{key}_confidence_{basis}.png",
                    f"`{key}` on the {basis.upper()}: labels, confidence (largest membership) "
                    "and entropy; low confidence marks items between clusters.",
                    lambda ax, key=key: pl.confidence(adata, key, basis, show=False),
                )
            )
        source = ensemble_key if ensemble_key in adata.obsm else None
        if source is None and f"{key}_consensus" in adata.obsp:
            source = key
        if source is not None:
            jobs.append(
                (
                    f"{key}_heatmap.png",
                    f"Consensus (`{source}`) ordered by `{key}`; blocks on the diagonal are "
                    "clusters the ensemble agrees on.",
                    lambda ax, key=key, source=source: pl.consensus_heatmap(
                        adata,
                        source,
                        key,
                        annotations=[truth] if truth else None,
                        ax=ax,
                        show=False,
                    ),
                )
            )
    for key in ck_keys:
        jobs.extend(
            [
                (
                    f"{key}_cdf.png",
                    f"`{key}`: consensus CDF per k; the flatter the middle, the more stable k.",
                    lambda ax, key=key: pl.consensus_cdf(adata, key, ax=ax, show=False),
                ),
                (
                    f"{key}_delta_area.png",
                    f"`{key}`: delta area (relative gain in CDF area) against k.",
                    lambda ax, key=key: pl.delta_area(adata, key, ax=ax, show=False),
                ),
                (
                    f"{key}_pac.png",
                    f"`{key}`: proportion of ambiguous clustering against k (lower is better).",
                    lambda ax, key=key: pl.pac(adata, key, ax=ax, show=False),
                ),
            ]
        )

    written, failed = [], []
    for name, caption, draw in progress_bar(jobs, progress=progress, desc="figures", unit="fig"):
        try:
            if "confidence" in name:
                axes = draw(None)
                fig = axes[0].figure
            else:
                fig, ax = plt.subplots(figsize=(6, 5) if "heatmap" in name else (7, 4))
                draw(ax)
            fig.savefig(outdir / name, dpi=120, bbox_inches="tight")
            written.append((name, caption))
        except (ValueError, MemoryError, KeyError) as err:
            failed.append((name, str(err)))
        finally:
            plt.close("all")

    lines = ["# scconsensus report", ""]
    lines.append(f"{adata.n_obs} items × {adata.n_vars} features.")
    if ensemble_key in adata.obsm:
        lines.append(
            f"Ensemble `{ensemble_key}`: {np.asarray(adata.obsm[ensemble_key]).shape[1]} "
            "partitions."
        )
    lines.append("")
    if results:
        lines += ["## Consensus results", ""]
        lines.append(_markdown_table(pd.DataFrame([_scores(adata, k, truth) for k in results])))
        lines.append("")
    for key in ck_keys:
        rec = adata.uns[key]
        ks = np.atleast_1d(rec["k"]).astype(int)
        table = pd.DataFrame(
            {
                "k": ks,
                "PAC": np.asarray(rec["pac"], dtype=float),
                "delta area": np.asarray(rec["delta_area"], dtype=float),
            }
        )
        best = int(ks[int(np.argmin(np.asarray(rec["pac"], dtype=float)))])
        lines += [f"## Choosing k: `{key}` (lowest PAC at k = {best})", ""]
        lines += [_markdown_table(table), ""]
    if written:
        lines += ["## Figures", ""]
        for name, caption in written:
            lines += [f"![{name}]({name})", "", caption, ""]
    if failed:
        lines += ["## Figures not drawn", ""]
        lines += [f"- `{name}`: {reason}" for name, reason in failed]
        lines.append("")
    missing = [k for k in keys if k not in adata.obs and k not in ck_keys]
    if missing:
        lines += [f"Keys without results: {', '.join(f'`{k}`' for k in missing)}.", ""]
    path = outdir / "report.md"
    path.write_text("\n".join(lines))
    return path
