"""Plotting: Scanpy-style figures of ensembles and consensus results."""

from ._calibration import calibration
from ._consensus_k import consensus_cdf, delta_area, pac
from ._graph import cluster_graph
from ._heatmap import consensus_heatmap
from ._k_selection import k_selection
from ._membership import confidence, membership

__all__: list[str] = [
    "calibration",
    "cluster_graph",
    "confidence",
    "consensus_cdf",
    "consensus_heatmap",
    "delta_area",
    "k_selection",
    "membership",
    "pac",
]
