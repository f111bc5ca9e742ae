"""AnnData <-> SingleCellExperiment, via anndata2ri, keeping consensus results.

anndata2ri maps ``X`` and ``layers`` to assays (transposed: features in
rows), ``.obs`` to ``colData`` (categorical labels become factors with the
same levels), ``.obsm`` to ``reducedDims`` (``X_pca`` <-> ``PCA``: the ``X_``
prefix is dropped and restored), ``.var`` to ``rowData`` and ``.uns`` to
``metadata``. So every consensus result in scconsensus's layout survives the
trip: ``.obs[key]`` labels, ``.obs[key_confidence]`` / ``_entropy`` as
``colData`` columns and ``.obsm[key_membership]`` as a reducedDim.
``.obsp`` (pairwise matrices) has no SingleCellExperiment slot and is not
converted.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd
from anndata import AnnData

from ..tl._input_checks import holds_counts
from ._errors import require_r_package, require_rpy2
from ._session import quiet_r
from ._uns import decode, encode


def _anndata2ri():
    require_rpy2()
    try:
        import anndata2ri
    except ModuleNotFoundError as err:
        from ._errors import RDependencyError

        raise RDependencyError(
            "anndata2ri is not installed: pip install 'scconsensus[r]' (anndata2ri>=1.3)."
        ) from err
    require_r_package("SingleCellExperiment")
    return anndata2ri


def _x_assay_name(adata: AnnData) -> str:
    """The assay name Bioconductor gives what ``adata.X`` holds, as far as AnnData records it."""
    if "log1p" in adata.uns:  # written by scanpy.pp.log1p
        name = "logcounts"
    elif adata.X is not None and holds_counts(adata.X):
        name = "counts"
    else:
        name = "X"
    return "X" if name in adata.layers else name


def to_sce(adata: AnnData, *, x_assay: str | None = None, uns: bool = True) -> Any:
    """Convert an AnnData to an R ``SingleCellExperiment`` (an rpy2 object).

    Parameters
    ----------
    adata
        Items (cells) in rows; the SCE has them as columns.
    x_assay
        Assay name given to ``adata.X``; layers keep their names. ``None``
        (default) names it as Bioconductor tools expect where AnnData records what
        it holds: ``"logcounts"`` after :func:`scanpy.pp.log1p` (``.uns["log1p"]``),
        ``"counts"`` for non-negative whole numbers (of any dtype: files often hold counts
        as float32), else ``"X"`` (then pass ``"logcounts"`` for
        log-normalised values, the assay scconsensusR and scran read by default).
        From R, without Python, ``zellkonverter::readH5AD("file.h5ad")`` reads an
        ``.h5ad`` file as a SingleCellExperiment (``X`` becomes the assay named by
        its ``X_name`` argument).
    uns
        Convert ``.uns`` into ``metadata(sce)`` (``None`` as ``NULL``, lists as
        vectors; see :func:`from_sce`). ``False`` leaves it out.

    Returns
    -------
    ``rpy2.robjects.methods.RS4`` holding the SingleCellExperiment (``.obsm`` entries as
    reducedDims; a table of labels, as ``tl.consensus_k`` writes, as numbers with ``NA``
    where an item has none); assign it
    in R with ``rpy2.robjects.globalenv["sce"] = sce``.

    Examples
    --------
    >>> import scconsensus as scc
    >>> from scconsensus.r import from_sce, to_sce
    >>> adata = scc.datasets.iris()
    >>> sce = to_sce(adata, x_assay="logcounts")
    >>> back = from_sce(sce)
    >>> back.shape == adata.shape
    True
    """
    if not isinstance(adata, AnnData):
        raise ValueError(f"Expected an AnnData object, got {type(adata).__name__}.")
    if x_assay is None:
        x_assay = _x_assay_name(adata)
    if x_assay in adata.layers:
        raise ValueError(
            f"x_assay={x_assay!r} is also a layer name; choose another name for X's assay."
        )
    anndata2ri = _anndata2ri()
    ro = require_rpy2()
    from rpy2.robjects.conversion import localconverter

    # A shallow stand-in so that uns=False or renaming never touches the user's object.
    light = AnnData(
        X=adata.X,
        obs=adata.obs,
        var=adata.var,
        obsm={name: _numeric(value) for name, value in adata.obsm.items()},
        layers=dict(adata.layers),
        uns=encode(dict(adata.uns)) if uns else None,
    )
    with quiet_r(), localconverter(anndata2ri.converter), warnings.catch_warnings():
        # anndata2ri 1.3 calls rpy2's deprecated conversion.py2rpy internally.
        warnings.simplefilter("ignore", DeprecationWarning)
        sce = ro.conversion.get_conversion().py2rpy(light)
    if adata.X is not None and x_assay != "X":
        rename = ro.r(
            "function(sce, to) { n <- SummarizedExperiment::assayNames(sce); "
            "n[n == 'X'] <- to; SummarizedExperiment::assayNames(sce) <- n; sce }"
        )
        with quiet_r():
            sce = rename(sce, x_assay)
    return _frame_column_names(sce, adata.obsm, ro)


def _frame_column_names(sce: Any, obsm, ro) -> Any:
    """anndata2ri drops a DataFrame's column names on its way to a reducedDim (the labels
    table's ``k2``, ``k3``, ...): set them again."""
    frames = {name: value for name, value in obsm.items() if isinstance(value, pd.DataFrame)}
    if not frames:
        return sce
    name_columns = ro.r(
        "function(sce, name, cols) { m <- SingleCellExperiment::reducedDim(sce, name); "
        "colnames(m) <- cols; SingleCellExperiment::reducedDim(sce, name) <- m; sce }"
    )
    with quiet_r():
        for name, frame in frames.items():
            sce = name_columns(sce, name, ro.StrVector([str(c) for c in frame.columns]))
    return sce


def _numeric(value: Any) -> Any:
    """An ``.obsm`` entry as a reducedDim can hold it: a DataFrame's categorical columns
    (``tl.consensus_k``'s labels table: ``"0"``, ``"1"``, ...) as numbers, NaN where
    missing; anndata2ri converts only numeric frames."""
    if not isinstance(value, pd.DataFrame):
        return value
    out = {}
    for name, col in value.items():
        if isinstance(col.dtype, pd.CategoricalDtype):
            as_numbers = pd.to_numeric(col.cat.categories.astype(str), errors="coerce")
            codes = col.cat.codes.to_numpy()
            if np.isnan(as_numbers).any():  # names that are not numbers: their codes
                as_numbers = np.arange(len(as_numbers), dtype=np.float64)
            col = np.where(codes >= 0, np.asarray(as_numbers, dtype=np.float64)[codes], np.nan)
        out[name] = col
    return pd.DataFrame(out, index=value.index)


def from_sce(sce: Any, *, x_assay: str | None = None, uns: bool = True) -> AnnData:
    """Convert an R ``SingleCellExperiment`` (rpy2 object) to an AnnData.

    Parameters
    ----------
    sce
        The SingleCellExperiment, e.g. ``rpy2.robjects.globalenv["sce"]``.
    x_assay
        Assay that becomes ``X``; the first assay when ``None``. The others
        become layers.
    uns
        Convert ``metadata(sce)`` into ``.uns``. R has no scalars: vectors of length
        one come back as scalars, longer ones as arrays, ``NULL`` as ``None``.

    Returns
    -------
    AnnData with columns of the SCE as rows; factors in ``colData`` are
    categoricals, reducedDims are ``.obsm`` entries (``PCA`` -> ``X_pca``).
    """
    anndata2ri = _anndata2ri()
    ro = require_rpy2()
    from rpy2.robjects.conversion import localconverter

    prepare = ro.r(
        """function(sce, first, keepMeta) {
            if (!methods::is(sce, "SingleCellExperiment")) {
                if (methods::is(sce, "SummarizedExperiment")) {
                    sce <- methods::as(sce, "SingleCellExperiment")
                } else stop("not a SingleCellExperiment")
            }
            if (!is.null(first)) {
                n <- SummarizedExperiment::assayNames(sce)
                if (!first %in% n) stop(paste0("no assay '", first, "'"))
                SummarizedExperiment::assays(sce) <- SummarizedExperiment::assays(sce)[
                    c(first, setdiff(n, first))]
            }
            if (!keepMeta) S4Vectors::metadata(sce) <- list()
            sce
        }"""
    )
    from rpy2.rinterface_lib.embedded import RRuntimeError

    with quiet_r():
        try:
            sce = prepare(sce, x_assay if x_assay is not None else ro.NULL, bool(uns))
        except RRuntimeError as err:
            if "no assay" in str(err):
                raise ValueError(f"The SingleCellExperiment has no assay {x_assay!r}.") from err
            raise ValueError(
                f"Expected a SingleCellExperiment (or SummarizedExperiment), got R error: {err}"
            ) from err
        except (NotImplementedError, ValueError) as err:
            raise ValueError(
                f"Expected an rpy2 SingleCellExperiment, got {type(sce).__name__}."
            ) from err
        with localconverter(anndata2ri.converter), warnings.catch_warnings():
            # anndata2ri 1.3 passes obsm positionally to AnnData (FutureWarning
            # that prints every array); not ours to fix, and harmless.
            warnings.simplefilter("ignore", FutureWarning)
            warnings.simplefilter("ignore", DeprecationWarning)
            adata = ro.conversion.get_conversion().rpy2py(sce)
    adata.uns = decode(adata.uns)
    return adata
