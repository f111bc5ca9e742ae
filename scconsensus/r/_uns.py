"""``.uns`` values encoded for anndata2ri's ``metadata`` conversion, and decoded back.

anndata2ri (1.3) converts a dict entry by entry and stops at the first value it
cannot convert: a ``None`` (as in every consensus result's ``params``) silently
dropped it and every later key. Python lists came back as a one-entry dict and
logicals as rpy2 objects. Numeric and character arrays, data frames and
matrices survive as they are, so only the rest is encoded: ``None`` as R's
``NULL``, lists and tuples of scalars as vectors (others as lists named "0",
"1", ...), logicals as logical vectors. R has no scalars: a value comes back from
R as a vector, and a vector of length one is read back as a scalar.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def encode(value: Any) -> Any:
    """``value`` with what anndata2ri would lose replaced by R objects it keeps."""
    import rpy2.robjects as ro

    if isinstance(value, dict):
        return {key: encode(v) for key, v in value.items()}
    if value is None:
        return ro.NULL
    if isinstance(value, bool | np.bool_):
        return ro.BoolVector([bool(value)])
    if isinstance(value, np.ndarray) and value.dtype.kind == "b" and value.ndim == 1:
        return ro.BoolVector(value.tolist())
    if isinstance(value, list | tuple):
        array = np.asarray(value) if value and _scalars(value) else None
        if array is not None and array.dtype.kind in "biufU":
            return encode(array)
        return {str(i): encode(v) for i, v in enumerate(value)}
    return value


def decode(value: Any) -> Any:
    """What :func:`encode` (and anndata2ri) made of a value, as Python values again."""
    from rpy2.rinterface_lib.sexp import NULLType
    from rpy2.robjects.vectors import BoolVector

    if isinstance(value, dict):
        return {str(key): decode(v) for key, v in value.items()}
    if isinstance(value, NULLType):
        return None
    if isinstance(value, BoolVector):  # BoolArray (a logical with dim) is a BoolVector too
        value = np.asarray(value, dtype=bool)
    if isinstance(value, np.ndarray) and value.ndim == 1 and value.size == 1:
        return value[0].item()
    return value


def _scalars(values) -> bool:
    return all(isinstance(v, bool | int | float | str | np.generic) for v in values)
