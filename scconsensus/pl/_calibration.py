"""Reliability diagram: is a per-cell confidence the accuracy it claims?"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from anndata import AnnData
from matplotlib.axes import Axes

from .. import metrics
from .._docs import doc_params
from ._utils import check_adata, finish, get_axes


@doc_params()
def calibration(
    adata: AnnData,
    keys: str | Sequence[str] = "pcc",
    truth: str = "truth",
    *,
    n_bins: int = 10,
    figsize: tuple[float, float] = (4.5, 4.0),
    ax: Axes | None = None,
    show: bool | None = None,
    save: str | Path | bool | None = None,
) -> Axes | None:
    """Accuracy against confidence per bin, for each consensus result, on labelled data.

    A cell counts as right when its class (``.obs[truth]``) is the majority class of
    its cluster. A calibrated confidence lies on the diagonal; the marker area is the
    number of cells in the bin. The legend gives each key's AUROC (how well the
    confidence ranks the wrong cells below the right ones) and expected calibration
    error, the figures :func:`scconsensus.tl.compare` reports.

    Parameters
    ----------
    adata
        With ``.obs[key]`` and ``.obs[f"{{key}}_confidence"]`` for each key.
    keys
        One or more consensus results' ``key_added``.
    truth
        ``.obs`` column of known classes.
    n_bins
        Equal-width confidence bins of ``[0, 1]``.
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
    >>> scc.tl.ensemble(adata, n_partitions=30, random_state=0)
    >>> scc.tl.pcc(adata, n_clusters=3)
    >>> ax = scc.pl.calibration(adata, "pcc", show=False)
    """
    adata = check_adata(adata)
    keys = [keys] if isinstance(keys, str) else list(keys)
    if truth not in adata.obs:
        raise ValueError(f"truth={truth!r} is not a column of adata.obs: pass known classes.")
    ax = get_axes(ax, figsize)
    ax.plot([0, 1], [0, 1], color="0.7", lw=1, ls="--")
    for i, key in enumerate(keys):
        conf, right = _confidence_and_right(adata, key, truth)
        table = metrics.calibration(conf, right, n_bins=n_bins)
        label = (
            f"{key}: AUROC {metrics.confidence_auroc(conf, right):.2f}, "
            f"ECE {metrics.expected_calibration_error(conf, right, n_bins):.3f}"
        )
        ax.plot(table["confidence"], table["accuracy"], "-", color=f"C{i}", lw=1)
        size = 300 * table["n_items"] / table["n_items"].max()
        ax.scatter(table["confidence"], table["accuracy"], s=size, color=f"C{i}", label=label)
    ax.set_xlim(-0.02, 1.02)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("confidence (bin mean)")
    ax.set_ylabel("accuracy (majority class of the cluster)")
    ax.legend(fontsize=7, frameon=False, loc="upper left")
    return finish(ax.figure, show, save, f"calibration_{'_'.join(keys)}", ax)


def _confidence_and_right(adata: AnnData, key: str, truth: str):
    """Confidence and majority-class correctness of the cells labelled by ``key``."""
    name = f"{key}_confidence"
    if key not in adata.obs or name not in adata.obs:
        raise ValueError(
            f"No consensus result {key!r} (adata.obs[{key!r}] and adata.obs[{name!r}]): run "
            "a consensus method (e.g. scconsensus.tl.pcc) with this key_added first."
        )
    labels, classes = adata.obs[key], adata.obs[truth]
    both = (labels.notna() & classes.notna()).to_numpy()
    conf = adata.obs[name].to_numpy(dtype=np.float64)[both]
    right = metrics.majority_correct(
        classes.to_numpy()[both].astype(str), labels.to_numpy()[both].astype(str)
    )
    return conf, right
