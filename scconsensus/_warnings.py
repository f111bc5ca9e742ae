"""Warnings that name the user's line, not the package's.

A fixed ``stacklevel`` is right for one call path only: the same check reached
through a ``tl`` wrapper, the ``core`` function or a renamed-argument shim
lies at another depth, and the warning then names a line inside the package.
As pandas' ``find_stack_level``, :func:`warn` walks out of the package instead.
"""

from __future__ import annotations

import os
import sys
import warnings

_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _outside_level() -> int:
    """The ``stacklevel`` of the first frame outside the package, counted from :func:`warn`."""
    frame = sys._getframe(1)  # the frame of warn(), which calls warnings.warn: level 1
    level = 1
    while frame is not None and _inside(frame.f_code.co_filename):
        frame = frame.f_back
        level += 1
    return level


def _inside(filename: str) -> bool:
    # "<stdin>", "<doctest ...>", "<ipython-input-...>" are the user's, wherever the cwd is
    return not filename.startswith("<") and os.path.abspath(filename).startswith(_PACKAGE)


def warn(message: str | Warning, category: type[Warning] = UserWarning) -> None:
    """:func:`warnings.warn` attributed to the caller's code outside ``scconsensus``.

    A :class:`Warning` instance as ``message`` is issued as its own class, as
    :func:`warnings.warn` does (``category`` is then not used).

    Examples
    --------
    >>> import warnings
    >>> from scconsensus._warnings import warn
    >>> with warnings.catch_warnings(record=True) as w:
    ...     warnings.simplefilter("always")
    ...     warn("check this", RuntimeWarning)
    >>> w[0].category.__name__, w[0].message.args[0]
    ('RuntimeWarning', 'check this')
    """
    warnings.warn(message, category, stacklevel=_outside_level())
