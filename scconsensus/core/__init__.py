"""Array-level core: ensembles, co-association and consensus solvers, no AnnData.

This layer takes and returns numpy/scipy objects; it is what the R bridge and
power users call directly.
"""

from .coassociation import coassociation, pairs_from_sparse, sample_pairs
from .ensemble import Ensemble, generate_ensemble

__all__ = ["Ensemble", "coassociation", "generate_ensemble", "pairs_from_sparse", "sample_pairs"]
