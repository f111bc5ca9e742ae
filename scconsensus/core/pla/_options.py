"""How weighted PLA's λ is chosen, as one record (written once here, with its defaults).

``tl.pla`` takes the same options as flat keywords (scanpy's style) and builds the record;
:func:`~scconsensus.core.pla.pla` and :func:`~scconsensus.core.pla_consensus` take it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..._docs import doc_params
from ._doc import PLA_PARAMS

__all__ = ["LAMBDA_GRID", "Weighting"]

#: λ values tried by cross-validation (the grid of Lange & Buhmann 2005, Sect. 4).
LAMBDA_GRID = (0.1, 0.5, 1.0, 10.0, 20.0, 50.0, 100.0, 500.0)


@doc_params(**PLA_PARAMS)
@dataclass(frozen=True)
class Weighting:
    """λ of weighted PLA, fixed or cross-validated (used with ``weighted=True`` only).

    Checked by :func:`~scconsensus.core.pla.pla`.

    Attributes
    ----------
    {pla_lambda}
    """

    lam: float | str = "cv"
    lam_grid: tuple = LAMBDA_GRID
    cv_folds: int = 3
    cv_score: str = "heldout"
