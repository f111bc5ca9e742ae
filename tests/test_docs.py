"""Docstrings: shared parameter text is filled in; exported functions document parameters."""

from __future__ import annotations

import importlib
import inspect
import itertools
import pydoc
import re

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


def every_documented_object() -> dict[str, object]:
    """Functions, classes and methods defined anywhere in the package (private ones too)."""
    import pkgutil

    import scconsensus

    found = {}
    for info in pkgutil.walk_packages(scconsensus.__path__, "scconsensus."):
        if info.name.endswith("__main__"):
            continue
        try:
            module = importlib.import_module(info.name)
        except ImportError:  # the R modules without the optional rpy2 extra
            continue
        for obj in vars(module).values():
            if getattr(obj, "__module__", None) != info.name:
                continue
            members = [obj]
            if inspect.isclass(obj):
                members += [m for m in vars(obj).values() if inspect.isfunction(m)]
            for member in members:
                if inspect.isfunction(member) or inspect.isclass(member):
                    found[f"{info.name}.{member.__qualname__}"] = member
    return found


def test_no_unfilled_placeholder():
    objects = {**public_api(), **every_documented_object()}
    assert len(objects) > 200
    unfilled = {
        name: PLACEHOLDER.findall(obj.__doc__)
        for name, obj in objects.items()
        if obj.__doc__ and PLACEHOLDER.search(obj.__doc__)
    }
    assert not unfilled, f"docstrings with unfilled {{name}} lines: {unfilled}"


def test_no_doubled_brace():
    """A trial read ``f"{{key}}_confidence"`` in help(): doc_params fills whole ``{name}``
    lines and keeps other braces, so nothing needs escaping."""
    objects = {**public_api(), **every_documented_object()}
    doubled = sorted(name for name, obj in objects.items() if "{{" in (obj.__doc__ or ""))
    assert not doubled, f"docstrings with doubled braces: {doubled}"


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
    # one or more entries: a name line, then its description indented by four spaces
    for name, text in PARAMS.items():
        lines = text.splitlines()
        assert lines[0] and not lines[0].startswith(" "), name
        assert lines[-1].startswith("    "), name
        for line, after in itertools.pairwise(lines):
            assert line.startswith("    ") or after.startswith("    "), name


# Exported functions allowed to lack a Parameters section: none now.
PARAMETERS_PENDING: set[str] = set()


def _lacks_parameters(obj) -> bool:
    try:
        signature = inspect.signature(obj)
    except ValueError:  # exception classes and other builtins without a signature
        return False
    params = [p for p in signature.parameters.values() if p.name not in ("self", "cls")]
    doc = inspect.getdoc(obj) or ""
    # result classes built by the library document their fields as Attributes
    documented = "Parameters\n---" in doc or (inspect.isclass(obj) and "Attributes\n---" in doc)
    return len(params) >= 2 and not documented


def test_exported_functions_document_parameters():
    lacking = {name for name, obj in public_api().items() if _lacks_parameters(obj)}
    assert lacking <= PARAMETERS_PENDING, sorted(lacking - PARAMETERS_PENDING)


#: Public modules whose functions' ``Parameters`` must follow their signatures, beyond
#: :data:`PUBLIC_MODULES` (the methods' own subpackages).
METHOD_MODULES = [
    "scconsensus.core.pcc",
    "scconsensus.core.pla",
    "scconsensus.core.dpp",
    "scconsensus.core.consensus_k",
    "scconsensus.core.ensemble",
]


def _section_names(doc: str, section: str) -> list[str] | None:
    """The entry names of a numpydoc section, in order (``a, b`` lines give both)."""
    found = re.search(
        rf"^{section}\n-+\n(.*?)(?=^\S[^\n]*\n-+\n|\Z)", inspect.cleandoc(doc), re.S | re.M
    )
    if found is None:
        return None
    names = []
    for line in found.group(1).splitlines():
        if line and not line.startswith(" "):
            names += [n.strip().lstrip("*") for n in line.split(" : ")[0].split(",")]
    return names


def _documented_functions() -> dict[str, object]:
    found = {n: o for n, o in public_api().items() if inspect.isfunction(o)}
    for module_name in METHOD_MODULES:
        for qualname, obj in _exported(module_name):
            if inspect.isfunction(obj):
                found.setdefault(qualname, obj)
    return found


def test_parameters_follow_the_signature():
    """Every public function documents each parameter once, in its signature's order."""
    functions = _documented_functions()
    assert {"scconsensus.tl.pcc", "scconsensus.core.dpp.dpp_consensus"} <= set(functions)
    wrong = {}
    for name, obj in functions.items():
        documented = _section_names(obj.__doc__ or "", "Parameters")
        if documented is None:
            continue  # no Parameters section: test_exported_functions_document_parameters
        signature = [p for p in inspect.signature(obj).parameters if p not in ("self", "cls")]
        if documented != signature:
            wrong[name] = (documented, signature)
    assert not wrong, wrong


def test_option_records_document_their_fields_in_order():
    import dataclasses

    from scconsensus import core

    records = [core.StartPlan, core.FitRoute, core.PartitionOptions]
    records += [core.dpp.DPPSampling, core.dpp.DPPCut, core.dpp.DPPRoute]
    records += [core.consensus_k.Resampling, core.pla.Weighting]
    for record in records:
        fields = [f.name for f in dataclasses.fields(record)]
        assert _section_names(record.__doc__, "Attributes") == fields, record.__name__


def test_examples_import_what_they_call():
    """A docs audit: three examples called their function bare, without importing it; the
    doctests passed (they run in the module's namespace), a user's copy raised NameError."""
    bare = []
    for qualname, obj in {**public_api(), **every_documented_object()}.items():
        name = qualname.rsplit(".", 1)[-1]
        if not (inspect.isfunction(obj) or inspect.isclass(obj)) or "Examples" not in (
            obj.__doc__ or ""
        ):
            continue
        example = obj.__doc__.split("Examples", 1)[1]
        code = "\n".join(
            line.strip()[4:] for line in example.splitlines() if line.strip()[:3] in (">>>", "...")
        )
        called = re.search(rf"(?<![\w.]){name}\(", code)
        if called and not re.search(rf"^(from [\w.]+ )?import .*\b{name}\b", code, re.M):
            bare.append(qualname)
    assert not bare, f"examples that call their function without importing it: {bare}"
