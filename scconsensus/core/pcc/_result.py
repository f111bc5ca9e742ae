"""Result object of :func:`scconsensus.core.pcc.pcc` and the cluster relationships of Sect. 7.4."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..._docs import doc_params

#: The parameters of the Sect. 7.4 readings of soft clusters.
_SECT_74 = {
    "soft_membership": """\
membership
    ``(n_items, k)`` soft memberships.
threshold
    Memberships below this are treated as noise.""",
}


@dataclass
class PCCResult:
    """Outcome of probabilistic consensus clustering.

    Attributes
    ----------
    membership
        ``(n_items, k)`` soft memberships (rows on the simplex); the ``k <= K``
        clusters that carry mass, largest expected size first.
    labels
        ``(n_items,)`` int32 most probable cluster (``0 .. k-1``).
    objective
        Eq. (3) of the paper at ``membership`` for the best restart (lower is better).
    objective_trace
        Objective after every iteration of the best restart (index 0 = start);
        for long runs after every ``s``-th iteration, thinned to at most
        ~10,000 points. The last entry is the final value.
    n_iter
        Iterations of the best restart, in the solver's unit (:attr:`iterations` says
        it): an item's move (one line search) for ``"greedy"`` and ``"sweep"``, a step
        that moves every item for ``"batch"``, plus its ``n_polish`` greedy moves.
    converged
        Whether the best restart met the relative KKT tolerance (rather than
        stopping at ``max_iter``).
    kkt_gap
        Final ``max_j (g_JV - g_JU)`` on exact gradients, divided by the mean
        co-sampled weight per item ``sum_{i != j} N_ij / n`` (the relative gap
        compared with ``tol``); 0 exactly at a KKT point.
    divergence
        Name of the Bregman divergence.
    solver
        ``"greedy"``, ``"greedy-sparse"``, ``"batch"`` or ``"batch-sparse"``.
    restart_objectives
        Final objective of every restart, in order.
    cluster_order
        Indices of the kept clusters among the ``K`` columns of the solver.
    n_isolated
        Items without any observed pair; they get uniform membership.
    n_polish
        For ``solver="batch"``: greedy iterations that finished the best
        restart after the batch steps stalled (included in ``n_iter``).
    """

    membership: np.ndarray
    labels: np.ndarray
    objective: float
    objective_trace: np.ndarray
    n_iter: int
    converged: bool
    kkt_gap: float
    divergence: str
    solver: str
    restart_objectives: np.ndarray = field(default_factory=lambda: np.empty(0))
    cluster_order: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    n_isolated: int = 0
    n_polish: int = 0

    @property
    def iterations(self) -> str:
        """``n_iter`` with its unit, e.g. ``"32 batch steps"`` or ``"24089 item moves"``."""
        if not self.solver.startswith("batch"):
            return f"{self.n_iter} item moves"
        steps = f"{self.n_iter - self.n_polish} batch steps"
        return f"{steps} + {self.n_polish} item moves" if self.n_polish else steps

    @property
    def n_clusters(self) -> int:
        """Number of clusters that carry mass."""
        return int(self.membership.shape[1])

    def __repr__(self) -> str:
        state = "converged" if self.converged else "not converged"
        return (
            f"PCCResult(n_items={self.membership.shape[0]}, n_clusters={self.n_clusters}, "
            f"divergence={self.divergence!r}, objective={self.objective:.6g}, "
            f"{self.iterations}, {state}, kkt_gap={self.kkt_gap:.3g})"
        )


def thin_trace(trace: np.ndarray, max_points: int = 10_000) -> np.ndarray:
    """Every ``s``-th entry of a long trace, always keeping the first and last."""
    if trace.size <= max_points:
        return trace
    step = int(np.ceil(trace.size / max_points))
    idx = np.arange(0, trace.size, step)
    if idx[-1] != trace.size - 1:
        idx = np.append(idx, trace.size - 1)
    return trace[idx]


@doc_params(**_SECT_74)
def cluster_relationships(membership: np.ndarray, threshold: float = 0.01) -> np.ndarray:
    """Directed similarity ``m_ij`` between soft clusters (Sect. 7.4 of the PCC paper).

    Memberships below ``threshold`` are set to zero and each item's
    distribution is renormalised; then
    ``m_ij = E[|P_i ∩ P_j|] / E[|P_i|] = sum_n y_in y_jn / sum_n y_in``: the
    expected share of cluster ``i``'s items that would also be drawn into
    cluster ``j``. Rows of a well-separated consensus are close to
    ``e_i * (average confidence)``; large off-diagonal entries mark
    overlapping clusters.

    Parameters
    ----------
    {soft_membership}

    Returns
    -------
    ``(k, k)`` matrix, not symmetric in general.

    Examples
    --------
    >>> import numpy as np
    >>> from scconsensus.core.pcc import cluster_relationships
    >>> Y = np.array([[1.0, 0.0], [0.5, 0.5], [0.0, 1.0]])
    >>> cluster_relationships(Y).round(3)
    array([[0.833, 0.167],
           [0.167, 0.833]])
    """
    Y = np.asarray(membership, dtype=np.float64)
    if Y.ndim != 2:
        raise ValueError(f"membership must be 2-D (items x clusters), got shape {Y.shape}.")
    Y = thresholded_membership(Y, threshold)
    mass = Y.sum(axis=0)
    joint = Y.T @ Y
    return np.divide(joint, mass[:, None], out=np.zeros_like(joint), where=mass[:, None] > 0)


@doc_params(**_SECT_74)
def thresholded_membership(membership: np.ndarray, threshold: float) -> np.ndarray:
    """Memberships below ``threshold`` set to zero and each row renormalised (Sect. 7.4:
    how :func:`cluster_relationships` reads soft clusters; rows left empty stay zero).

    Parameters
    ----------
    {soft_membership}

    Returns
    -------
    ``(n_items, k)`` float64 memberships.

    Examples
    --------
    >>> import numpy as np
    >>> from scconsensus.core.pcc import thresholded_membership
    >>> thresholded_membership(np.array([[0.7, 0.2, 0.1]]), 0.15).round(3).tolist()
    [[0.778, 0.222, 0.0]]
    """
    Y = np.where(np.asarray(membership, dtype=np.float64) >= threshold, membership, 0.0)
    tot = Y.sum(axis=1, keepdims=True)
    return np.divide(Y, tot, out=np.zeros_like(Y), where=tot > 0)
