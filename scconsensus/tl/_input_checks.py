"""What the matrix a tool would cluster looks like, said before it does: a ``use_rep``
that names nothing, raw counts, or one feature on a scale that drowns the others."""

from __future__ import annotations

import numpy as np
import pandas as pd
import scipy.sparse as sp

from .._warnings import warn
from ._record_keys import COMPANIONS

__all__ = [
    "INPUT_MARK",
    "check_use_rep",
    "holds_counts",
    "representations",
    "warn_feature_matrix",
    "warn_one_feature",
    "warn_raw_counts",
]

#: ``.uns`` key marking an AnnData whose X is a representation (a reducedDim sent by the R
#: bridge), not features: the checks below pass it, as they pass ``.obsm``.
INPUT_MARK = "scconsensus_input"


def check_use_rep(adata, use_rep: str | None) -> None:
    """Refuse a ``use_rep`` naming nothing in ``.obsm``, before any work and even if unused.

    The consensus methods read it on their sparse route only; a misspelt key would
    otherwise pass unnoticed on the dense one.
    """
    if use_rep is not None and use_rep != "X" and use_rep not in adata.obsm:
        raise ValueError(
            f"use_rep={use_rep!r} is not in adata.obsm ({representations(adata)}). "
            "Compute it first (e.g. sc.pp.pca) or pass use_rep='X'."
        )


#: Ends of the ``.obsm`` keys scconsensus writes beside its results, and consensus-k's
#: item consensus: labels, memberships, consensus values, none a representation.
_OURS = (*COMPANIONS, "_item_consensus")


def representations(adata) -> str:
    """``"available: ['X_pca', ...]"``: the ``.obsm`` entries one would cluster, floats
    that scconsensus did not write (a trial was offered an ensemble's labels and a
    membership), or ``"none there"``."""
    found = [key for key, value in adata.obsm.items() if not key.endswith(_OURS) and _floats(value)]
    return f"available: {found}" if found else "none there"


def _floats(value) -> bool:
    dtypes = value.dtypes if isinstance(value, pd.DataFrame) else [getattr(value, "dtype", None)]
    return all(dtype is not None and pd.api.types.is_float_dtype(dtype) for dtype in dtypes)


def warn_feature_matrix(adata, X, name: str) -> None:
    """The checks of a matrix of features (``X`` or a layer of ``adata``) before it is
    clustered: raw counts, one feature on its own scale."""
    if adata.uns.get(INPUT_MARK) == "representation":
        return
    warn_raw_counts(X, name)
    warn_one_feature(X, name, adata.var_names)


#: Values read to tell raw counts, and the largest value they must reach: integers below
#: it are not taken for counts (pixel intensities 0-16 of digits, small integer scores).
COUNTS_SAMPLE, COUNTS_MAX = 100_000, 100


def _first_values(X) -> np.ndarray:
    # the first rows only: ravel of a Fortran-ordered or strided X would copy all of it
    rows = -(-COUNTS_SAMPLE // max(X.shape[1], 1))
    return X.data[:COUNTS_SAMPLE] if sp.issparse(X) else np.ravel(X[:rows])


def holds_counts(X) -> bool:
    """Whether ``X``'s first values are non-negative whole numbers, whatever its dtype
    (AnnData files often store counts as float32)."""
    values = _first_values(X)
    return bool(values.size and values.min() >= 0 and np.array_equal(values, np.round(values)))


def warn_raw_counts(X, name: str = "adata.X") -> None:
    """Warn when ``X`` looks like raw counts (non-negative integers up to ``COUNTS_MAX``
    or more, read on its first values): distances between cells then follow library size
    and the most expressed genes (a user trial clustered an un-normalised file silently)."""
    values = _first_values(X)
    if values.size and values.max() >= COUNTS_MAX and holds_counts(X):
        # a layer was asked for by name: another layer, not "layer", is the way out
        other = "another" if name.startswith("adata.layers") else "a"
        warn(
            f"{name} looks like raw counts (integers up to {values.max():.0f}): cells would "
            "be compared by library size and their most expressed genes. Normalise and "
            "log-transform first (sc.pp.normalize_total, sc.pp.log1p), and cluster a PCA "
            f"(sc.pp.pca; X_pca is then used), or pass use_rep, or {other} layer of "
            "normalised values.",
            UserWarning,
        )


#: Rows read for the features' variances (at most 2 * 10^6 entries: 16 MB of float64 at
#: 20,000 genes), and the share of the total variance one feature may hold before the
#: clusters are said to follow it alone (UCI wine's proline: 0.998; breast cancer's
#: largest 0.72, iris 0.68, pbmc68k_reduced 0.003).
SCALE_ROWS, SCALE_ENTRIES, ONE_FEATURE_SHARE = 5_000, 2_000_000, 0.9


def feature_variances(X) -> np.ndarray | None:
    """Each feature's variance on ``X``'s first rows (at most ``SCALE_ROWS``, and
    ``SCALE_ENTRIES`` entries); ``None`` under 3 rows."""
    rows = X[: min(X.shape[0], SCALE_ROWS, max(3, SCALE_ENTRIES // max(X.shape[1], 1)))]
    if rows.shape[0] < 3:
        return None
    if sp.issparse(rows):
        mean = np.asarray(rows.mean(axis=0)).ravel()
        return np.asarray(rows.multiply(rows).mean(axis=0)).ravel() - mean**2
    return np.var(rows, axis=0, dtype=np.float64)


def warn_one_feature(X, name: str = "adata.X", names=None) -> None:
    """Warn when one feature holds most of ``X``'s variance (read on its first rows):
    Euclidean distances, and so every partition, then follow it alone (a user trial
    clustered UCI wine unscaled: ARI 0.22, and 0.90 after ``sc.pp.scale``)."""
    var = feature_variances(X)
    if var is None or X.shape[1] < 2:
        return
    total = var.sum()
    top = int(np.argmax(var))
    if total <= 0 or var[top] < ONE_FEATURE_SHARE * total:
        return
    label = f"{names[top]!r}" if names is not None else f"column {top}"
    warn(
        f"One feature of {name} ({label}) holds {var[top] / total:.1%} of its variance: "
        "distances between items, and so the clusters, follow it alone. If the features "
        "are on different scales, scale them first (sc.pp.scale), or cluster a "
        "representation (use_rep).",
        UserWarning,
    )
