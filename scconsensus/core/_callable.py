"""A module that can be called as the function it is named after, as its name once was.

``scconsensus.core.pcc``, ``core.pla`` and ``core.coassociation`` name modules (so that
``core.pcc.Bregman`` is attribute access like any other); until 0.x the same names were
functions imported over them. Calling the module calls that function, so code written
then keeps working, and no function shadows a module.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable


class _CallableModule(types.ModuleType):
    """A module whose call is its ``__call_target__``'s."""

    def __call__(self, *args, **kwargs):
        return self.__call_target__(*args, **kwargs)


def callable_module(name: str, function: Callable) -> None:
    """Make the imported module ``name`` callable as ``function`` (same arguments, result)."""
    module = sys.modules[name]
    module.__call_target__ = function
    module.__class__ = _CallableModule
