"""Symmetric eigendecomposition that Ctrl-C can interrupt, bit for bit SciPy's ``evr``.

SciPy's LAPACK wrappers hold the interpreter for the whole call: ``scipy.linalg.eigh``
of a 3,000 × 3,000 kernel ignores Ctrl-C for seconds (53 s on a busy CPU in the issue
29 audit). :func:`eigh_evr` calls the same ``dsyevr`` of SciPy's LAPACK through
``ctypes``, which releases the interpreter during the call, in a worker thread
(:func:`~scconsensus._threads.interruptible`): the caller's KeyboardInterrupt arrives
within a fraction of a second, while the worker finishes its call in the background
and its result is dropped. Same routine, arguments and workspace as
``scipy.linalg.eigh(a, driver="evr")`` (``lower=True``): the same bits.
"""

from __future__ import annotations

import ctypes
from functools import cache

import numpy as np
import scipy.linalg
from scipy.linalg.lapack import dsyevr_lwork

from .._threads import interruptible

_INT = ctypes.POINTER(ctypes.c_int)
_DOUBLE = ctypes.POINTER(ctypes.c_double)


@cache
def _dsyevr():
    """SciPy's ``dsyevr`` (``scipy.linalg.cython_lapack``) as a ctypes function."""
    from numba.extending import get_cython_function_address

    address = get_cython_function_address("scipy.linalg.cython_lapack", "dsyevr")
    # CFUNCTYPE (not PYFUNCTYPE): ctypes releases the interpreter during the call
    return ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * 21)(address)


def _ptr(array: np.ndarray) -> int:
    return array.ctypes.data


def _run_dsyevr(a: np.ndarray, il: int, iu: int) -> tuple[np.ndarray, np.ndarray, int]:
    """``dsyevr`` on the Fortran-ordered copy ``a`` (overwritten): ``(w, z, info)``."""
    n = a.shape[0]
    m = iu - il + 1
    lwork, liwork, _ = dsyevr_lwork(n, lower=1)
    w = np.empty(n)
    z = np.empty((n, m), order="F")
    isuppz = np.empty(2 * n, dtype=np.intc)
    work, iwork = np.empty(max(int(lwork), 1)), np.empty(max(int(liwork), 1), dtype=np.intc)
    ints = np.array([n, n, il, iu, 0, n, work.size, iwork.size, 0], dtype=np.intc)
    floats = np.zeros(3)  # vl, vu (unused for these ranges), abstol: SciPy's defaults
    floats[1] = 1.0
    range_ = b"A" if m == n else b"I"
    args = (
        b"V", range_, b"L", _ptr(ints), _ptr(a), _ptr(ints[1:]), _ptr(floats),
        _ptr(floats[1:]), _ptr(ints[2:]), _ptr(ints[3:]), _ptr(floats[2:]), _ptr(ints[4:]),
        _ptr(w), _ptr(z), _ptr(ints[5:]), _ptr(isuppz), _ptr(work), _ptr(ints[6:]),
        _ptr(iwork), _ptr(ints[7:]), _ptr(ints[8:]),
    )  # fmt: skip
    _dsyevr()(*args)
    return w[: int(ints[4])], z[:, : int(ints[4])], int(ints[8])


def _lapack_ready(a) -> bool:
    """Whether ``dsyevr`` can overwrite ``a`` itself: through a raw pointer, nothing
    checks that the array is float64, Fortran-ordered, aligned or writeable (a read-only
    array, or a memory map opened read-only, would be written to or crash)."""
    return (
        isinstance(a, np.ndarray)
        and a.dtype == np.float64
        and a.flags.f_contiguous
        and a.flags.aligned
        and a.flags.writeable
    )


def eigh_evr(
    a: np.ndarray, subset_by_index: tuple[int, int] | None = None, *, overwrite_a: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """``scipy.linalg.eigh(a, driver="evr", subset_by_index=...)``, interruptible by Ctrl-C.

    Parameters
    ----------
    a
        ``(n, n)`` symmetric float64 matrix; its lower triangle is read (not changed
        unless ``overwrite_a``).
    subset_by_index
        ``(lo, hi)``: only the eigenpairs ``lo..hi`` (0-based, ascending), as SciPy's.
    overwrite_a
        Let LAPACK overwrite ``a`` when it is already a writeable, aligned,
        Fortran-ordered float64 array (no copy; a 2,600-side copy cost 40 ms, mostly
        page faults); any other ``a`` is copied and left as it was.

    Returns
    -------
    w, v
        Ascending eigenvalues and the eigenvectors as columns, equal bit for bit to
        SciPy's.

    Examples
    --------
    >>> import numpy as np, scipy.linalg
    >>> from scconsensus.core._lapack import eigh_evr
    >>> a = np.random.default_rng(0).normal(size=(50, 50)); a = a + a.T
    >>> w, v = eigh_evr(a)
    >>> ref = scipy.linalg.eigh(a, driver="evr")
    >>> bool(np.array_equal(w, ref[0]) and np.array_equal(v, ref[1]))
    True
    """
    if not (overwrite_a and _lapack_ready(a)):
        a = np.array(a, dtype=np.float64, order="F")  # the copy LAPACK overwrites
    n = a.shape[0]
    if a.ndim != 2 or n != a.shape[1] or n == 0:
        return scipy.linalg.eigh(a, driver="evr", subset_by_index=subset_by_index)
    lo, hi = (0, n - 1) if subset_by_index is None else (int(i) for i in subset_by_index)
    if not 0 <= lo <= hi < n:  # SciPy's own message
        return scipy.linalg.eigh(a, driver="evr", subset_by_index=subset_by_index)
    w, z, info = interruptible(_run_dsyevr, a, lo + 1, hi + 1)
    if info != 0:
        raise np.linalg.LinAlgError(f"LAPACK dsyevr failed (info = {info}).")
    return w, z
