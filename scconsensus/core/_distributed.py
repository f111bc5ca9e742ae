"""Running the embarrassingly parallel parts on a Dask cluster.

Two pieces of work spread over a :class:`dask.distributed.Client`:

- the partitions of an ensemble (one task per partition; the data are scattered
  once to every worker, not shipped with each task), and
- the sparse co-association count over sampled pairs (one task per chunk of pairs;
  the label matrix is scattered once).

Results equal the local run for the same ``random_state``: each partition draws
everything from its own :class:`numpy.random.SeedSequence` child fixed before any
task is scheduled, and pair counts are integers, so neither depends on where or in
which order the tasks ran. Dask is an optional dependency (``pip install
scconsensus[dask]``); it is imported only when a client is given.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from ._pairs import count_pairs

__all__ = ["check_client", "count_pairs_distributed", "map_ordered"]

# Pairs per co-association task: ~2 MB of index arrays each way, enough work
# (pairs x partitions label reads) to dwarf the scheduling overhead.
PAIR_CHUNK = 2_000_000
# Arguments larger than this are scattered to the workers once.
_SCATTER_ABOVE = 100_000


def check_client(client: Any) -> Any:
    """``client`` if it is a :class:`dask.distributed.Client`, else a clear error."""
    try:
        from distributed import Client
    except ImportError as err:  # pragma: no cover - dask is installed in CI
        raise ImportError(
            "client= needs dask.distributed; install it with `pip install scconsensus[dask]`."
        ) from err
    if not isinstance(client, Client):
        raise ValueError(
            f"client must be a dask.distributed.Client, got {type(client).__name__}. "
            "Create one with `from dask.distributed import Client; client = Client(...)`, "
            "or leave client=None to run locally (n_jobs)."
        )
    if client.status not in ("running", "connecting", "newly-created"):
        raise ValueError(f"The Dask client is not running (status {client.status!r}).")
    return client


def _is_large(value: Any) -> bool:
    import scipy.sparse as sp

    if isinstance(value, np.ndarray):
        return value.nbytes > _SCATTER_ABOVE
    if sp.issparse(value):
        return value.data.nbytes > _SCATTER_ABOVE
    return False


def _scatter(client: Any, value: Any) -> Any:
    """One copy of a large array per worker, instead of one per task."""
    if _is_large(value):
        return client.scatter(value, broadcast=True, hash=False)
    return value


def map_ordered(
    client: Any,
    func: Callable[..., Any],
    items: Sequence[Any],
    *,
    before: Sequence[Any] = (),
    after: Sequence[Any] = (),
) -> Iterator[Any]:
    """``func(*before, item, *after)`` for every item, on the cluster, yielded in input order.

    Arrays among the common arguments ``before`` and ``after`` are scattered once
    to every worker rather than shipped with every task.

    Parameters
    ----------
    client
        A running :class:`dask.distributed.Client`.
    func
        A module-level (picklable) function.
    items
        One task per item.
    before, after
        Arguments common to every task, placed before and after the item.
    """
    lead = [_scatter(client, v) for v in before]
    tail = [_scatter(client, v) for v in after]
    futures = [client.submit(func, *lead, item, *tail, pure=False) for item in items]
    try:
        for i, fut in enumerate(futures):
            yield fut.result()
            # drop our reference so the cluster can free the result right away
            futures[i] = None
    finally:
        live = [f for f in futures if f is not None]
        if live:
            client.cancel(live)


def _count_chunk(labels: np.ndarray, chunk: tuple[np.ndarray, np.ndarray]):
    rows, cols = chunk
    c = np.empty(rows.size, dtype=np.int32)
    m = np.empty(rows.size, dtype=np.int32)
    count_pairs(labels, rows, cols, c, m)
    return c, m


def count_pairs_distributed(
    client: Any,
    labels: np.ndarray,
    rows: np.ndarray,
    cols: np.ndarray,
    *,
    chunk_size: int = PAIR_CHUNK,
) -> tuple[np.ndarray, np.ndarray]:
    """Co-clustered and co-sampled counts of the pairs ``(rows[p], cols[p])`` on a cluster.

    The same numba kernel as the local count runs on chunks of pairs; the label
    matrix is scattered once to every worker.

    Returns
    -------
    ``(c, m)`` int32 arrays, one entry per pair.
    """
    check_client(client)
    chunk_size = max(1, int(chunk_size))
    bounds = range(0, rows.size, chunk_size)
    chunks = [(rows[s : s + chunk_size], cols[s : s + chunk_size]) for s in bounds]
    c = np.empty(rows.size, dtype=np.int32)
    m = np.empty(rows.size, dtype=np.int32)
    parts = map_ordered(client, _count_chunk, chunks, before=(labels,))
    for start, (ci, mi) in zip(bounds, parts, strict=True):
        c[start : start + ci.size] = ci
        m[start : start + mi.size] = mi
    return c, m
