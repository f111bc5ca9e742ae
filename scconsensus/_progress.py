"""One rule for progress bars: ``progress=None`` follows scanpy's verbosity.

Every long-running function takes ``progress: bool | None = None``:

- ``True`` / ``False``: bars on / off;
- ``None``: on only when ``scanpy.settings.verbosity`` is at least ``"info"`` (scanpy's
  default is ``"warning"``, so bars are off unless asked for);
- tqdm's own environment switch wins: when ``TQDM_DISABLE`` is set, bars follow it as
  tqdm reads it (any non-empty value disables), whatever ``progress`` says.

Bars go to standard error, as tqdm's do.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
from tqdm.auto import tqdm

__all__ = ["PROGRESS_DOC", "check_progress", "progress_bar", "show_progress"]

#: Shared docstring text of the ``progress`` parameter.
PROGRESS_DOC = (
    "Show progress bars on standard error. ``None`` (default): only when "
    "``scanpy.settings.verbosity`` is ``'info'`` or higher. tqdm's ``TQDM_DISABLE`` "
    "environment variable is always respected."
)


def check_progress(progress: Any) -> bool | None:
    """``progress`` as ``True``, ``False`` or ``None``; anything else raises ``ValueError``."""
    if progress is None or isinstance(progress, bool | np.bool_):
        return None if progress is None else bool(progress)
    raise ValueError(f"progress must be True, False or None, got {progress!r}.")


def show_progress(progress: bool | None) -> bool:
    """Whether bars are wanted: ``progress``, or scanpy's verbosity ``>= info`` when ``None``.

    Examples
    --------
    >>> import scanpy as sc
    >>> from scconsensus._progress import show_progress
    >>> show_progress(False), show_progress(True)
    (False, True)
    >>> sc.settings.verbosity = "warning"
    >>> show_progress(None)
    False
    """
    progress = check_progress(progress)
    if progress is not None:
        return progress
    import scanpy as sc

    return int(sc.settings.verbosity) >= 2  # scanpy's Verbosity.info


def progress_bar(iterable: Any = None, *, progress: bool | None = None, **kwargs: Any) -> tqdm:
    """A :class:`tqdm.auto.tqdm` shown by the rule of :func:`show_progress`.

    When ``TQDM_DISABLE`` is in the environment, it decides, read as tqdm reads it
    (``bool`` of the string), also when it was set after tqdm was imported.

    Examples
    --------
    >>> from scconsensus._progress import progress_bar
    >>> sum(progress_bar(range(3), progress=False))
    3
    """
    env = os.environ.get("TQDM_DISABLE")
    kwargs["disable"] = bool(env) if env is not None else not show_progress(progress)
    return tqdm(iterable, **kwargs)
