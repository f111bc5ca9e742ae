"""Probabilistic Label Aggregation (Lange & Buhmann, KDD 2005).

- :func:`pla`: PLA / weighted PLA on an ensemble (hard or soft), dense or on
  sampled pairs, λ by cross-validation, fit on a subset and extend.
- :func:`pla_em`: the EM of Sect. 3.1 on any co-association matrix.
- :func:`pla_extend`: out-of-sample posteriors (Sect. 3.3).
- :func:`predict_ensemble_labels`: nearest-neighbour labels of new items in every
  partition of a reference ensemble (the paper's predictor for single linkage).
"""

from ._em import PLAFit, pla_em
from ._extend import pla_extend, predict_ensemble_labels
from ._members import Members, as_members
from ._model import LAMBDA_GRID, PLAResult, entropic_weights, pla

__all__ = [
    "LAMBDA_GRID",
    "Members",
    "PLAFit",
    "PLAResult",
    "as_members",
    "entropic_weights",
    "pla",
    "pla_em",
    "pla_extend",
    "predict_ensemble_labels",
]
