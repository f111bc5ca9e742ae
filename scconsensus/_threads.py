"""One thread for BLAS (and OpenMP) around code that must not split its work.

- Small or bit-sensitive BLAS work (:func:`one_blas_thread`): OpenBLAS splits
  even tiny products between its threads, and the split changes how sums are
  rounded. ARPACK's small dense steps inside ``svds`` ran 10-14x slower on 2
  threads than on 1 (the 35 spectra of ``select_k`` at 2,000 items: 1.0 s
  against 0.1 s), and the PCC solvers' steps amplify a different rounding into
  a different result.
- One ensemble partition (:func:`one_thread`): partitions, not threads, are the
  unit of parallelism there. Partitions on threads (:func:`one_openmp_thread`):
  OpenMP's setting is each thread's own, BLAS's the process's.

``threadpoolctl.threadpool_limits`` scans the loaded libraries on every call
(3-8 ms; a third of the ensemble's time at 1,000 items); the controllers here
scan once per process, after loading the libraries they must find.
"""

from __future__ import annotations

import threading
from functools import cache

from threadpoolctl import ThreadpoolController


@cache
def _blas_controller() -> ThreadpoolController:
    import scipy.linalg  # noqa: F401 - scipy's own OpenBLAS must be loaded to be found

    return ThreadpoolController()


@cache
def _all_controller() -> ThreadpoolController:
    import scipy.linalg  # noqa: F401
    import sklearn.cluster  # noqa: F401 - scikit-learn's OpenMP runtime, for k-means

    return ThreadpoolController()


def one_blas_thread():
    """Context manager that limits every loaded BLAS library to one thread.

    Examples
    --------
    >>> import numpy as np
    >>> from scconsensus._threads import one_blas_thread
    >>> with one_blas_thread():
    ...     float(np.ones(3) @ np.ones(3))
    3.0
    """
    return _blas_controller().limit(limits=1, user_api="blas")


def one_thread():
    """Context manager that limits BLAS and OpenMP (NumPy, SciPy, scikit-learn) to one thread.

    Examples
    --------
    >>> from scconsensus._threads import one_thread
    >>> with one_thread():
    ...     pass
    """
    return _all_controller().limit(limits=1)


def one_openmp_thread():
    """Context manager that limits OpenMP (scikit-learn's k-means) to one thread, in the
    calling thread only: OpenMP's thread count is a per-thread setting, so threads running
    side by side each set and restore their own (BLAS's is the process's: set it once,
    outside, with :func:`one_thread`).

    Examples
    --------
    >>> from scconsensus._threads import one_openmp_thread
    >>> with one_openmp_thread():
    ...     pass
    """
    return _all_controller().limit(limits=1, user_api="openmp")


#: Seconds the calling thread waits at a time in :func:`interruptible`.
_WAIT_SLICE = 0.05


def interruptible(func, /, *args, on_interrupt=None, **kwargs):
    """``func(*args, **kwargs)`` in a worker thread, the caller waiting in short slices.

    Ctrl-C reaches Python code only between bytecodes of the main thread: a long
    compiled call that releases the interpreter (LAPACK through ``ctypes``, numba with
    ``nogil``, scikit-learn's neighbour search) still delays the KeyboardInterrupt until
    it returns. Run in a worker, the caller raises it within ``_WAIT_SLICE`` seconds;
    the worker finishes its call in the background (or stops early when
    ``on_interrupt`` tells it to) and its result is dropped. ``func`` must not write to
    anything the caller keeps, and must not be a numba ``parallel`` kernel (a second
    call could then launch beside the unfinished one, which numba's workqueue layer
    refuses).

    Parameters
    ----------
    func
        The call; it should release the interpreter, else the caller waits as before.
    on_interrupt
        Called in the caller on the KeyboardInterrupt, before it is re-raised: e.g. sets
        a flag the worker's kernel checks, so that it stops instead of running on.

    Examples
    --------
    >>> from scconsensus._threads import interruptible
    >>> interruptible(sum, [1, 2, 3])
    6
    """
    out: dict = {}

    def work() -> None:
        try:
            out["value"] = func(*args, **kwargs)
        except BaseException as exc:  # re-raised in the caller, with its traceback
            out["error"] = exc

    worker = threading.Thread(target=work, name="scconsensus-worker", daemon=True)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(_WAIT_SLICE)
    except KeyboardInterrupt:
        if on_interrupt is not None:
            on_interrupt()
        raise
    if "error" in out:
        raise out["error"]
    return out["value"]
