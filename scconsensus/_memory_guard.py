"""Memory guards of the dense routes: refuse an ``n x n`` allocation above
:attr:`scconsensus.settings.max_dense_bytes` before any work, naming the memory needed
and what to do instead."""

from __future__ import annotations

import warnings

from ._settings import ENV_PROBLEM, settings

#: Advice of :func:`check_dense_memory` for functions that have a sparse route.
SPARSE_ADVICE = "Use mode='sparse' (sampled pairs)"
#: Advice for dense-only functions (consensus-k statistics, ConsensusClusterPlus, heatmaps).
NO_SPARSE_ADVICE = (
    "This has no sparse route: run it on fewer items (e.g. a random subset of cells), "
    "use tl.ensemble with tl.pcc/tl.pla/tl.dpp (mode='sparse') for large data,"
)


def limit() -> int:
    """:attr:`settings.max_dense_bytes`, saying once that a bad ``SCCONSENSUS_MAX_DENSE_BYTES``
    was ignored (here, inside the call: the command line words it as its own warnings)."""
    problem = ENV_PROBLEM.pop() if ENV_PROBLEM else None
    if problem is not None:
        warnings.warn(problem, UserWarning, stacklevel=3)
    return settings.max_dense_bytes


def format_bytes(n_bytes: float) -> str:
    """``n_bytes`` in the largest unit that keeps it at least 1 (bytes, KiB, MiB, GiB)."""
    for unit, size in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if n_bytes >= size:
            return f"{n_bytes / size:.1f} {unit}"
    return f"{int(n_bytes)} bytes"


def check_dense_memory(
    n_items: int,
    *,
    n_matrices: int = 1,
    itemsize: int = 8,
    what: str,
    advice: str = SPARSE_ADVICE,
) -> None:
    """Refuse a dense ``n x n`` allocation above :attr:`settings.max_dense_bytes`.

    Parameters
    ----------
    advice
        What the caller can do instead; the default names ``mode='sparse'``, so
        functions without a sparse route pass their own.

    Raises
    ------
    MemoryError
        Naming the size that would be needed and ``advice``.
    """
    need = int(n_items) ** 2 * int(itemsize) * int(n_matrices)
    limit_bytes = limit()
    if need > limit_bytes:
        raise MemoryError(
            f"{what} needs {n_matrices} dense {n_items} x {n_items} matrix/matrices "
            f"({format_bytes(need)}), above the limit of {format_bytes(limit_bytes)}. {advice} "
            "or raise scconsensus.settings.max_dense_bytes if you have the memory."
        )


#: Rows of ``Z`` one dense PLA EM step works on at a time (``core/pla/_em.py``).
PLA_BLOCK_BYTES = 64 * 1024**2
#: Most rows of the float32 product block of the dense co-association
#: (``core/coassociation.py``).
COASSOCIATION_BLOCK_ROWS = 2048


def dense_route_bytes(route: str, n_items: int) -> int:
    """Peak memory of a dense consensus route fitted on ``n_items``, working arrays included.

    Counted from the arrays each route holds at once (``benchmarks/memory.py`` measures
    the peak against this: 0.96–0.97 for PCC, 1.05–1.12 for PLA at 2,000 and 5,000
    items):

    - ``"pcc"``: ``C``, ``N`` (float32) and the batch solver's ``P = C/N``, ``A = YYᵀ``,
      ``B``, ``E`` (float64), plus up to one int64 index per co-clustered pair:
      48 bytes per pair.
    - ``"pla"``: ``Z`` (float64) and two ``Z``-sized EM temporaries per row block of
      at most :data:`PLA_BLOCK_BYTES`.
    - ``"dpp"``: the kernel ``L``, the eigensolver's copy of it, the eigenvectors and
      the consensus values, float64 (measured peak / this: 1.16, 1.04 at 2,000 and 4,000
      items; the former estimate, three of them, was 1.54 and 1.38 under).
    - ``"coassociation"``: ``C``, ``N`` (int32) and the float32 product block of at
      most :data:`COASSOCIATION_BLOCK_ROWS` rows (measured peak / this: 1.16, 1.01,
      1.02 at 2,000, 5,000, 10,000 items; the former estimate, ``C`` and ``N`` alone,
      was 1.64–1.75× under with the ``n x n`` copy ``tl.coassociation`` then made).

    Parameters
    ----------
    route
        ``"pcc"``, ``"pla"``, ``"dpp"`` or ``"coassociation"``.
    n_items
        Items fitted on the dense route (counted, for the co-association).

    Returns
    -------
    int
        Bytes.
    """
    pairs = int(n_items) ** 2
    if route == "pcc":
        return pairs * (2 * 4 + 4 * 8 + 8)
    if route == "pla":
        return pairs * 8 + 2 * min(pairs * 8, PLA_BLOCK_BYTES)
    if route == "dpp":
        return pairs * 4 * 8
    if route == "coassociation":
        return pairs * 2 * 4 + 4 * int(n_items) * min(int(n_items), COASSOCIATION_BLOCK_ROWS)
    raise ValueError(f"route must be 'pcc', 'pla', 'dpp' or 'coassociation', got {route!r}.")


def check_dense_route(route: str, n_items: int, *, what: str, advice: str = SPARSE_ADVICE) -> None:
    """Refuse a dense route whose peak (:func:`dense_route_bytes`) is above the limit.

    Called before any set-up work (planning, co-association), so an oversize call
    fails at once instead of after it.

    Raises
    ------
    MemoryError
        Naming the memory needed, the limit and ``advice``.
    """
    need = dense_route_bytes(route, n_items)
    limit_bytes = limit()
    if need > limit_bytes:
        raise MemoryError(
            f"{what} needs {n_items} x {n_items} working arrays, temporaries included, "
            f"({format_bytes(need)}), above the limit of {format_bytes(limit_bytes)}. "
            f"{advice} or raise scconsensus.settings.max_dense_bytes if you have the memory."
        )
