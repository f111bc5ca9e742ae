"""One parallel pass over dense counts for the checks of :func:`scconsensus.core.pcc.pcc`.

NumPy's checks (``isfinite``, ``C < 0``, ``C > N``, ``C == C.T``) each take a
full pass, and the comparison with the transpose reads one operand by columns.
Here square tiles are compared with their mirrors, both small enough to stay
in cache, and tiles go to threads.
"""

from __future__ import annotations

import numba
import numpy as np

from ._parallel import serial_twin

# tile side: a tile of C and of N and their mirrors, 4 x 32 KiB of float64, stay in L2
TILE = 64
# what dense_flags reports, in the order pcc words its errors
NONFINITE, NEGATIVE, C_ABOVE_N, ASYMMETRIC = range(4)


@numba.njit(cache=True, inline="always")
def _entry_flags(c, v, flags, b):
    # x - x is 0 for every finite value and NaN for NaN and +-inf
    if not (c - c == 0 and v - v == 0):
        flags[b, NONFINITE] = True
    if c < 0 or v < 0:
        flags[b, NEGATIVE] = True
    if c > v:
        flags[b, C_ABOVE_N] = True


@serial_twin
@numba.njit(cache=True, parallel=True)
def dense_flags(C, N):
    """``[non-finite, negative, C > N, asymmetric]``: which checks some entry fails.

    ``C`` and ``N`` are square, of the same shape and C-ordered.
    """
    n = N.shape[0]
    nt = (n + TILE - 1) // TILE
    # tile pairs (a, b) with a <= b, one task each; every task writes its own flags
    tasks = np.empty((nt * (nt + 1) // 2, 2), np.int64)
    r = 0
    for a in range(nt):
        for b in range(a, nt):
            tasks[r, 0] = a
            tasks[r, 1] = b
            r += 1
    flags = np.zeros((tasks.shape[0], 4), np.bool_)
    for t in numba.prange(tasks.shape[0]):
        a, b = tasks[t, 0], tasks[t, 1]
        for i in range(a * TILE, min(n, a * TILE + TILE)):
            for j in range(max(i, b * TILE), min(n, b * TILE + TILE)):
                c, v = C[i, j], N[i, j]
                _entry_flags(c, v, flags, t)
                if j == i:
                    continue
                ct, vt = C[j, i], N[j, i]
                _entry_flags(ct, vt, flags, t)
                if not (c == ct and v == vt):
                    flags[t, ASYMMETRIC] = True
    out = np.zeros(4, np.bool_)
    for t in range(tasks.shape[0]):
        for f in range(4):
            out[f] |= flags[t, f]
    return out
