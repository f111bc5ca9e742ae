"""Docstrings: shared parameter text is filled in; exported functions document parameters."""

from __future__ import annotations

import importlib
import inspect
import pydoc

import pytest

from scconsensus._docs import PARAMS, PLACEHOLDER, doc_params, fill_doc

PUBLIC_MODULES = [
    "scconsensus",
    "scconsensus.tl",
    "scconsensus.pl",
    "scconsensus.core",
    "scconsensus.metrics",
    "scconsensus.datasets",
    "scconsensus.r",
]


def _exported(module_name: str):
    try:
        module = importlib.import_module(module_name)
    except ImportError:  # scconsensus.r without the optional rpy2 extra
        return []
    names = getattr(module, "__all__", None) or [n for n in dir(module) if not n.startswith("_")]
    out = []
    for name in names:
        obj = getattr(module, name)
        if inspect.isfunction(obj) or inspect.isclass(obj):
            out.append((f"{module_name}.{name}", obj))
    return out


def public_api() -> dict[str, object]:
    """Exported functions and classes (and the public methods of those classes)."""
    found = {}
    for module_name in PUBLIC_MODULES:
        for qualname, obj in _exported(module_name):
            found.setdefault(qualname, obj)
            if inspect.isclass(obj):
                for attr, member in vars(obj).items():
                    if not attr.startswith("_") and inspect.isfunction(member):
                        found.setdefault(f"{qualname}.{attr}", member)
    return found


def test_public_api_is_found():
    api = public_api()
    assert "scconsensus.tl.ensemble" in api
    assert "scconsensus.metrics.adjusted_rand_index" in api


def test_no_unfilled_placeholder():
    unfilled = {
        name: PLACEHOLDER.findall(obj.__doc__)
        for name, obj in public_api().items()
        if obj.__doc__ and PLACEHOLDER.search(obj.__doc__)
    }
    assert not unfilled, f"docstrings with unfilled {{name}} lines: {unfilled}"


def test_fill_doc_indents_and_keeps_literal_braces():
    doc = 'Summary with ``f"{key}_x"``.\n\n    Parameters\n    ----------\n    {copy}\n'
    filled = fill_doc(doc, PARAMS)
    assert '``f"{key}_x"``' in filled
    assert "\n    copy\n        Return a modified copy" in filled
    with pytest.raises(KeyError, match="nope"):
        fill_doc("    {nope}\n", PARAMS)


def test_doc_params_keyword_overrides_and_help_renders():
    @doc_params(random_state="random_state\n    Seed of this one.")
    def f(adata, random_state=0):
        """Do it.

        Parameters
        ----------
        {adata}
        {random_state}
            And more.
        """

    assert (
        f.__doc__.count("random_state\n            Seed of this one.\n            And more.") == 1
    )
    text = pydoc.render_doc(f, renderer=pydoc.plaintext)
    assert "Annotated data matrix" in text
    assert "{" not in inspect.getdoc(f)


def test_shared_entries_are_numpydoc_entries():
    for name, text in PARAMS.items():
        head, *body = text.splitlines()
        assert head and not head.startswith(" "), name
        assert body and all(line.startswith("    ") for line in body), name
