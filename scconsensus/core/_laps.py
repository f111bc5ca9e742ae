"""Time per stage of a method, for the log and the result's record."""

from __future__ import annotations

import time
from collections.abc import Callable


class Laps:
    """Seconds per stage, each measured from the end of the one before.

    Parameters
    ----------
    clock
        ``time.perf_counter`` (wall) or ``time.process_time`` (CPU: on a shared machine
        the wall time would also count other processes).
    timings
        A record to add the stages to (a new one when omitted).

    Examples
    --------
    >>> from scconsensus.core._laps import Laps
    >>> lap = Laps()
    >>> lap("first")
    >>> list(lap.timings)
    ['first']
    """

    def __init__(
        self,
        clock: Callable[[], float] = time.perf_counter,
        timings: dict[str, float] | None = None,
    ) -> None:
        self.timings: dict[str, float] = {} if timings is None else timings
        self._now = clock
        self._last = clock()

    def __call__(self, stage: str) -> None:
        now = self._now()
        self.timings[stage] = now - self._last
        self._last = now
