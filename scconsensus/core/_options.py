"""Option records shared by the consensus methods, and their ``params`` encoding.

A method's ``core`` function takes the options of one stage as one frozen record (its
fields and defaults written once, there); the ``tl`` wrapper takes the same options as
flat keywords, scanpy's style, and builds the records from them.
"""

from __future__ import annotations

from dataclasses import fields


def options_record(*options) -> dict:
    """The fields of the option records ``options``, in order, as one flat dict."""
    return {f.name: getattr(o, f.name) for o in options for f in fields(o)}
