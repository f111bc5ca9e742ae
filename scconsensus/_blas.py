"""One BLAS thread around code whose BLAS calls are small or must give the same bits.

OpenBLAS splits even tiny products between its threads, and the split changes
how sums are rounded. ARPACK's small dense steps inside ``svds`` ran 10-14x
slower on 2 threads than on 1 (35 spectra of ``select_k`` at 2,000 items: 1.0 s
against 0.1 s), and the PCC solvers' steps amplify a different rounding into a
different result. ``threadpoolctl.threadpool_limits`` scans the loaded libraries
on every call (3 ms); the controller here scans once.
"""

from __future__ import annotations

from functools import cache

from threadpoolctl import ThreadpoolController


@cache
def _controller() -> ThreadpoolController:
    import scipy.linalg  # noqa: F401 - scipy's own OpenBLAS must be loaded to be found

    return ThreadpoolController()


def one_blas_thread():
    """Context manager that limits every loaded BLAS library to one thread.

    Examples
    --------
    >>> import numpy as np
    >>> from scconsensus._blas import one_blas_thread
    >>> with one_blas_thread():
    ...     float(np.ones(3) @ np.ones(3))
    3.0
    """
    return _controller().limit(limits=1, user_api="blas")
