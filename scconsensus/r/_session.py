"""Running R code from Python quietly, with local converters only.

rpy2's global ``activate()`` is gone and would leak conversions into the
user's own rpy2 code; every call here converts inside ``localconverter``.
R's console output (package start-up notes, ConsensusClusterPlus's
progress messages) goes to scanpy's logger at debug level rather than to
the user's terminal.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

from scanpy import logging as logg

from ._errors import require_rpy2


@contextlib.contextmanager
def quiet_r(show: bool = False) -> Iterator[None]:
    """Route R's console output to ``logg.debug`` for the duration of the block.

    With ``show``, R's messages (its progress reports) go to standard error instead.
    """
    require_rpy2()
    from rpy2.rinterface_lib import callbacks

    saved = callbacks.consolewrite_print, callbacks.consolewrite_warnerror

    def to_log(text: str) -> None:
        if text.strip():
            logg.debug(f"R: {text.rstrip()}")

    callbacks.consolewrite_print = to_log
    callbacks.consolewrite_warnerror = sys.stderr.write if show else to_log
    try:
        yield
        # R prints deferred warnings at the end of the next top-level call: make
        # that call here, while the output still goes to the log.
        ro = require_rpy2()
        ro.r("invisible(NULL)")
    finally:
        callbacks.consolewrite_print, callbacks.consolewrite_warnerror = saved


def numpy_converter():
    """rpy2 converter for plain numpy arrays and R base vectors (names are dropped)."""
    ro = require_rpy2()
    from rpy2.robjects import numpy2ri

    return ro.default_converter + numpy2ri.converter
