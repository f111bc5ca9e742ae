"""``scconsensus run``'s checks of what its methods and outputs would refuse, made before
the ensemble and the first method: a refusal never costs the work before it."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import anndata as ad

from . import tl
from ._memory_guard import SPARSE_ADVICE, check_dense_route
from ._validation import check_choice
from .core._subset import fit_count
from .core.dpp._api import MODES as DPP_MODES
from .core.pcc._consensus import DENSE_ADVICE as PCC_DENSE_ADVICE
from .core.pcc._consensus import MODES as PCC_MODES
from .core.pla._model import MODES as PLA_MODES

__all__ = ["check_apart", "check_methods_input", "check_param_kinds"]


#: The annotations' words for values the command line parses as numbers or TRUE/FALSE.
_NUMBERS = {"int", "float", "bool", "None"}


def check_param_kinds(methods: list[str], extra: dict[str, Any]) -> None:
    """A word where a method takes only a number or true/false (a trial's ``--param
    n_init=abc`` was refused after the ensemble), read from the methods' annotations
    (``from __future__ import annotations``: the words ``int | None``, as written)."""
    for name, value in extra.items():
        if not isinstance(value, str):
            continue
        for method in methods:
            given = inspect.signature(getattr(tl, method)).parameters.get(name)
            kinds = set(str(getattr(given, "annotation", "")).replace(" ", "").split("|"))
            if given is not None and kinds <= _NUMBERS:
                what = "true or false" if kinds == {"bool"} else "a number"
                also = ", or none" if "None" in kinds else ""
                raise ValueError(f"--param {name}={value}: {method} takes {what} there{also}.")


def check_apart(out: Path, figures: Path) -> None:
    """Refuse a report folder that is ``--out``, holds it, or holds the current folder: the
    report replaces its folder whole (a trial's ``--figures`` was the folder of ``--out``:
    "wrote" it, then deleted it; ``--figures .`` replaced the shell's folder)."""
    o, f = out.parent.resolve() / out.name, figures.resolve()  # a link at --out is replaced
    if f == o or f in o.parents:
        raise ValueError(
            f"--figures {str(figures)!r} {'is' if f == o else 'holds'} --out {str(out)!r}, and "
            "the report replaces its folder whole; name another folder for --figures, e.g. "
            f"{str(out.parent / (out.stem + '_figures'))!r}."
        )
    here = Path.cwd().resolve()
    if f == here or f in here.parents:
        raise ValueError(
            f"--figures {str(figures)!r} holds the current folder, and the report replaces its "
            "folder whole; name a new folder, e.g. --figures report."
        )


def check_methods_input(adata: ad.AnnData, methods: list[str], extra: dict[str, Any]) -> None:
    """What the methods would refuse on this input, refused before the ensemble and the
    first method (a trial lost 86 s of PLA to PCC's memory guard, and a layer missing for
    DPP after PCC and PLA had run): a ``--param layer`` the input lacks, and each dense
    route's memory where ``--param mode=dense`` asks for it; a ``mode`` a method lacks
    (a trial's ``mode=sprase`` was refused after the ensemble)."""
    layer = extra.get("layer")
    if layer is not None and layer not in adata.layers:
        raise ValueError(
            f"--param layer={layer}: the input has no such layer (layers: "
            f"{list(adata.layers) or 'none'}); name one of them, or leave it out."
        )
    modes = {"pcc": PCC_MODES, "pla": PLA_MODES, "dpp": DPP_MODES}
    for name in (m for m in methods if m in modes and "mode" in extra):
        check_choice(extra["mode"], modes[name], f"--param mode (for {name})")
    if extra.get("mode") != "dense":
        return
    fit = (extra.get("fit_size", "auto"), extra.get("fit_fraction"))
    for name in (m for m in methods if m in ("pcc", "pla")):
        n_fit = fit_count(adata.n_obs, *fit, method=name)
        advice = PCC_DENSE_ADVICE if name == "pcc" else SPARSE_ADVICE
        check_dense_route(name, n_fit, what=f"Dense {name.upper()}", advice=advice)
    if "dpp" in methods:
        check_dense_route("dpp", adata.n_obs, what="Exact DPP consensus")
