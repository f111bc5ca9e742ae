"""Whether numba's on-disk cache holds PCC's kernels yet.

The kernels are compiled once per install, on the first fit (the demo's 700 PBMCs:
13 s for the batch solver's serial kernels on one core, against 0.5 s for the same fit
later; the parallel kernels, taken from 2,000 items, compile in 2-3x that); a user
deserves a word before that pause. numba caches next to the source, or, where that is
not writable (a read-only site-packages), in its user-wide cache folder
(``~/.cache/numba``, or ``NUMBA_CACHE_DIR``); the paths read here are those it chose.
numba has no public query for it, so this reads where its cache index would be;
with a numba that lays its cache out otherwise, nothing is said.
"""

from __future__ import annotations

import os

from . import _batch_steps, _sweep
from ._parallel import twin_of


def kernels_cached() -> bool:
    """False while neither default solver's kernels are on disk: the next fit compiles them.

    Either one is enough to stay silent: the first fit on the other route still compiles
    its own, but a message on every call of a user who never takes that route would be false.
    """
    # the batch solver's step on small data (its serial twin) or large (the parallel kernel)
    kernels = (_batch_steps._project_step, twin_of(_batch_steps._project_step), _sweep._visit)
    try:
        paths = [fn._cache._cache_file._index_path for fn in kernels]
    except AttributeError:
        return True
    return any(os.path.exists(path) for path in paths)
