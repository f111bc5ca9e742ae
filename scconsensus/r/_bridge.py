"""Old name of :mod:`scconsensus.r_bridge`, for R packages installed before the rename.

An ``scconsensusR`` installed from a checkout before the rename imports
``scconsensus.r._bridge``; the functions it calls are the same objects here.
"""

from ..r_bridge import (
    camel_case,
    convert_kwargs,
    decode_matrix,
    defaults,
    encode,
    make_adata,
    run,
    snake_case,
    uses_ensemble,
)

__all__ = [
    "camel_case",
    "convert_kwargs",
    "decode_matrix",
    "defaults",
    "encode",
    "make_adata",
    "run",
    "snake_case",
    "uses_ensemble",
]
