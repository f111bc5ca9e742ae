"""Whether the matrix a tool would cluster looks like raw counts, said before it does."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._warnings import warn

__all__ = ["warn_raw_counts"]

#: Values read to tell raw counts, and the largest value they must reach: integers below
#: it are not taken for counts (pixel intensities 0-16 of digits, small integer scores).
COUNTS_SAMPLE, COUNTS_MAX = 100_000, 100


def warn_raw_counts(X, name: str = "adata.X") -> None:
    """Warn when ``X`` looks like raw counts (non-negative integers up to ``COUNTS_MAX``
    or more, read on its first values): distances between cells then follow library size
    and the most expressed genes (a user trial clustered an un-normalised file silently)."""
    # the first rows only: ravel of a Fortran-ordered or strided X would copy all of it
    rows = -(-COUNTS_SAMPLE // max(X.shape[1], 1))
    values = X.data[:COUNTS_SAMPLE] if sp.issparse(X) else np.ravel(X[:rows])
    if values.size == 0 or values.min() < 0 or values.max() < COUNTS_MAX:
        return
    if np.array_equal(values, np.round(values)):
        warn(
            f"{name} looks like raw counts (integers up to {values.max():.0f}): cells would "
            "be compared by library size and their most expressed genes. Normalise and "
            "log-transform first (sc.pp.normalize_total, sc.pp.log1p), and cluster a PCA "
            "(sc.pp.pca; X_pca is then used), or pass use_rep or layer.",
            UserWarning,
        )
