"""Probabilistic Label Aggregation (Lange & Buhmann, KDD 2005).

- :func:`pla_consensus`: the whole method on an ensemble's labels, as ``tl.pla`` runs
  it: choose ``K``, the partitions and the start, then :func:`pla`.
- :func:`pla`: PLA / weighted PLA on given partitions (hard or soft) at a given ``K``,
  dense or on sampled pairs, λ by cross-validation, fit on a subset and extend (also
  called as ``scconsensus.core.pla(...)``, the module, as when a function had its name).
- :func:`pla_em`: the EM of Sect. 3.1 on any co-association matrix.
- :func:`pla_extend`: out-of-sample posteriors (Sect. 3.3).
- :func:`predict_ensemble_labels`: nearest-neighbour labels of new items in every
  partition of a reference ensemble (the paper's predictor for single linkage).
"""

from .._callable import callable_module
from ._consensus import PLAConsensus, pla_consensus
from ._doc import PLA_PARAMS
from ._em import PLAFit, pla_em
from ._extend import pla_extend, predict_ensemble_labels
from ._members import Members, as_members
from ._model import PLAResult, pla
from ._options import LAMBDA_GRID, Weighting
from ._weighted import entropic_weights, warn_unused_lam

callable_module(__name__, pla)

__all__ = [
    "LAMBDA_GRID",
    "PLA_PARAMS",
    "Members",
    "PLAConsensus",
    "PLAFit",
    "PLAResult",
    "Weighting",
    "as_members",
    "entropic_weights",
    "pla",
    "pla_consensus",
    "pla_em",
    "pla_extend",
    "predict_ensemble_labels",
    "warn_unused_lam",
]
