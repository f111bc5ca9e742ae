"""Fixed blocks of work for numba's threads: the same result for any thread count.

Every parallel kernel of the PCC solvers cuts its work into blocks whose size
does not depend on the number of threads, lets each block write only its own
slots, and adds the blocks' partial sums in block order.
"""

from __future__ import annotations

import numba

# pairs per block of the parallel loops over pairs
BLOCK = 4096
# items per block of the parallel loops over items
ROWS = 256


@numba.njit(cache=True, inline="always")
def interleaved(t, n):
    """Task ``t`` of ``n`` -> item ``0, n - 1, 1, n - 2, ...``.

    Work on pairs ``j > i`` shrinks with ``i``; numba hands each thread a
    contiguous range of tasks, which now holds as many long rows as short ones.
    """
    return t // 2 if t % 2 == 0 else n - 1 - t // 2


@numba.njit(cache=True, error_model="numpy", inline="always")
def ordered_sum(part):
    """Sum of the blocks' partial sums, in block order: the same bits for any threads."""
    total = 0.0
    for b in range(part.shape[0]):
        total += part[b]
    return total
