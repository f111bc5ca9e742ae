"""Fixed blocks of work for numba's threads: the same result for any thread count.

Every parallel kernel of the PCC solvers cuts its work into blocks whose size
does not depend on the number of threads, lets each block write only its own
slots, and adds the blocks' partial sums in block order. A kernel whose items share
no sum (the extension: each item's own problem) may size its blocks by the threads.
"""

from __future__ import annotations

import types
from contextlib import contextmanager

import numba
import numpy as np

# pairs per block of the parallel loops over pairs
BLOCK = 4096
# items per block of the parallel loops over items
ROWS = 256
# below this many items a kernel runs serially: its call takes about a millisecond (the
# dense route at 2,000 items) and numba's threads do not pay; the serial twin compiles in
# less than half the time (the demo's first PCC fit, 700 items, one core: 22 s of numba
# compilation with the twins against 51 s with the parallel kernels)
SERIAL_BELOW = 2_000

_TWINS: dict = {}  # parallel kernel -> its serial twin


def serial_twin(kernel):
    """Register a serial twin of the ``parallel=True`` kernel ``kernel``; returns ``kernel``.

    The twin is compiled from the same code with ``prange`` as ``range``: the blocks
    and their order are those of the parallel kernel, so the result is the same bits.
    Its own name gives it its own entry in numba's cache. Compiled at its first call.
    """
    py = kernel.py_func
    twin = types.FunctionType(py.__code__, py.__globals__, py.__name__, py.__defaults__)
    twin.__qualname__ = f"{py.__qualname__}_serial"
    twin.__doc__ = py.__doc__
    options = {
        k: v for k, v in kernel.targetoptions.items() if k not in ("parallel", "cache", "nopython")
    }
    _TWINS[kernel] = numba.njit(cache=True, **options)(twin)
    return kernel


def twin_of(kernel):
    """The serial twin of ``kernel`` (``kernel`` itself if it has none)."""
    return _TWINS.get(kernel, kernel)


def variant(kernel, n_items: int):
    """``kernel``, or its serial twin below :data:`SERIAL_BELOW` items or on one thread.

    Only the variant a fit takes is compiled: a first fit on small data never pays for
    the parallel kernels' compilation. A custom divergence's kernels (re-jitted per
    divergence) have no twin and stay parallel.
    """
    if n_items >= SERIAL_BELOW and numba.get_num_threads() > 1:
        return kernel
    return twin_of(kernel)


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


@numba.njit(cache=True, error_model="numpy", inline="always")
def ordered_min(part):
    """``part.min()`` (NaN if any is NaN), as a loop: numba's ``np.min`` took 1 s to compile."""
    m = part[0]
    for b in range(part.shape[0]):
        if np.isnan(part[b]):
            return part[b]
        if part[b] < m:
            m = part[b]
    return m


@contextmanager
def ctrl_c_as_keyboard_interrupt():
    """A Ctrl-C inside the block always raised as ``KeyboardInterrupt``.

    Once numba's thread pool runs, a SIGINT may be taken by one of its threads and
    handled while the main thread is inside a numba call, which then reports
    "returned a result with an exception set" (``SystemError``, the interrupt as
    its cause).
    """
    try:
        yield
    except SystemError as err:
        if isinstance(err.__cause__ or err.__context__, KeyboardInterrupt):
            raise KeyboardInterrupt from None
        raise
