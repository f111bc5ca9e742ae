"""Python side of the R package in ``r_bridge/`` (called through reticulate).

The R package's one entry point into Python: a public, stable module whose functions in
``__all__`` are the contract with ``r_bridge/R/*.R``. It sits beside :mod:`scconsensus.r`
(the other direction, Python calling R through rpy2) and imports nothing of it, since
reticulate's R session needs no rpy2.

Pure Python (no rpy2): the R package builds an AnnData from a matrix or a
SingleCellExperiment, and this module calls ``scconsensus.tl.<name>`` on it
with R-style arguments translated, then hands back what the call wrote.

Two things differ between R and Python and are fixed here, by looking at the
Python signature rather than guessing per method, so that every ``tl``
function works from R as soon as it exists:

- names: R-style ``nClusters`` / ``n.clusters`` become ``n_clusters``;
- numbers: reticulate sends R's ``5`` as the float ``5.0``; a whole float
  becomes an ``int`` where the parameter is an int (by its default value or
  its annotation), element-wise in tuples and lists;
- sequences: R vectors arrive as lists (values, e.g. ``k = 2:10``) and ranges
  (``sccRange(2, 20)``) as tuples; a list becomes a tuple where the parameter
  takes only a tuple (e.g. ``resolution``).

Python warnings and scanpy's log warnings raised during a call are handed back,
in order, for R to signal as ``warning()`` conditions, and with ``verbose`` the
log's information for R's ``message()``; nothing of them is printed to the
standard error. Progress bars can be switched off (see :func:`run`).

Matrices cross without reticulate's NumPy conversion, which needs the NumPy C
API of the NumPy it was built against (Debian's reticulate 1.28 refuses NumPy
2: "Required version of NumPy not available"). R sends a matrix as the raw
bytes of its column-major values (``writeBin``) with its shape, and gets back
only Python built-ins: arrays as ``{"shape", "dtype", "data"}`` with ``data``
a flat column-major list (:func:`encode`).
"""

from __future__ import annotations

import contextlib
import inspect
import io
import logging
import re
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
from anndata import AnnData

from ._validation import check_int

__all__ = [
    "camel_case",
    "convert_kwargs",
    "decode_matrix",
    "defaults",
    "encode",
    "make_adata",
    "run",
    "snake_case",
    "uses_ensemble",
]

#: Parameters the bridge sets itself.
_RESERVED = ("adata", "copy")

#: Python's ways to choose the input, which R chooses with its own arguments: refused with
#: those named (``useRep`` named a reducedDim the bridge never sends; ``layer`` met the
#: ``use_rep="X"`` the bridge sets and failed as "pass either use_rep or layer").
_R_INPUT = {
    "use_rep": "use.dimred = '<name>' (a reducedDim) or assay.type = '<name>' (an assay)",
    "layer": "assay.type = '<name>' (an assay of x)",
}

#: Not listed among an R function's arguments: no R object reaches them (a Dask client, a
#: graph in .obsp or .uns, which the AnnData built from x does not hold).
_R_UNLISTED = ("obsp", "neighbors_key", "client", *_R_INPUT)


def snake_case(name: str) -> str:
    """``nClusters`` and ``n.clusters`` -> ``n_clusters``; snake_case names are kept."""
    name = name.replace(".", "_")
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def camel_case(name: str) -> str:
    """``n_clusters`` -> ``nClusters`` (the name R users pass)."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _is_int(value: Any) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool)


def _wants_int(param: inspect.Parameter) -> bool:
    default = param.default
    if isinstance(default, bool):
        return False
    if _is_int(default):
        return True
    if isinstance(default, tuple | list) and default:
        return all(_is_int(v) for v in default)
    annotation = param.annotation
    annotation = annotation if isinstance(annotation, str) else str(annotation)
    if "float" in annotation:
        return False
    return bool(re.search(r"\bint\b", annotation)) or "RandomState" in annotation


def _wants_tuple(param: inspect.Parameter) -> bool:
    """The parameter takes a tuple but no other sequence (e.g. ``tuple[float, float]``)."""
    annotation = param.annotation
    if annotation is inspect.Parameter.empty:
        return isinstance(param.default, tuple)
    annotation = annotation if isinstance(annotation, str) else str(annotation)
    return "tuple" in annotation and not re.search(r"Sequence|list|Iterable", annotation)


def _to_int(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, np.floating) and float(value).is_integer():
        return int(value)
    if isinstance(value, tuple):
        return tuple(_to_int(v) for v in value)
    if isinstance(value, list):
        return [_to_int(v) for v in value]
    if isinstance(value, np.ndarray) and value.dtype.kind == "f":
        if np.all(np.isfinite(value)) and np.all(value == np.round(value)):
            return value.astype(np.int64)
    return value


def convert_kwargs(function, kwargs: Mapping[str, Any] | None) -> dict[str, Any]:
    """Translate R-style keyword arguments for ``function`` (names and integer coercion).

    Raises
    ------
    ValueError
        For an argument ``function`` does not take, listing those it does (R names).
    """
    sig = inspect.signature(function)
    params = {k: p for k, p in sig.parameters.items() if k not in _RESERVED}
    renamed = getattr(function, "__renamed__", {})  # old names: Python warns, R sees it
    out: dict[str, Any] = {}
    for r_name, value in (kwargs or {}).items():
        name = snake_case(r_name)
        if name in renamed:
            params = {**params, name: params[renamed[name]]}
        if name in _R_INPUT:
            raise ValueError(
                f"{r_name} is how Python chooses the input of {function.__name__}(); in R, "
                f"choose it with {_R_INPUT[name]}, or pass the matrix itself as x."
            )
        if name not in params:
            valid = ", ".join(_r_listed(params))
            raise ValueError(
                f"{function.__name__}() has no argument {r_name!r}. Arguments: {valid}."
            )
        if name in out:
            raise ValueError(f"Argument {name!r} was given twice (as {r_name!r}).")
        if isinstance(value, Mapping) and value.get("matrix") is True:
            value = decode_matrix(value)
        if isinstance(value, list) and _wants_tuple(params[name]):
            value = tuple(value)
        out[name] = _to_int(value) if _wants_int(params[name]) else value
    return out


def _r_listed(params: Mapping[str, Any]) -> list[str]:
    """The R names of ``params`` an R user can pass (``key_added`` is R's ``name``)."""
    names = ("name" if k == "key_added" else camel_case(k) for k in params)
    return [n for n, k in zip(names, params, strict=True) if k not in _R_UNLISTED]


def decode_matrix(spec: Mapping[str, Any]) -> Any:
    """A matrix sent by R: ``{"shape", "dtype", "data"}`` (bytes, column-major) or sparse CSC.

    ``{"shape", "i", "p", "x"}`` are the slots of a ``dgCMatrix``; ``"transpose"``
    (default ``False``) returns the transpose, as a view.
    """
    import scipy.sparse as sp

    shape = tuple(int(v) for v in np.atleast_1d(spec["shape"]))
    if "p" in spec:
        out = sp.csc_matrix(
            (
                np.frombuffer(bytes(spec["x"]), dtype=np.float64),
                np.frombuffer(bytes(spec["i"]), dtype=np.int32),
                np.frombuffer(bytes(spec["p"]), dtype=np.int32),
            ),
            shape=shape,
        )
    else:
        dtype = np.dtype(str(spec.get("dtype", "float64")))
        out = np.frombuffer(bytes(spec["data"]), dtype=dtype).reshape(shape, order="F")
    return out.T if spec.get("transpose", False) else out


def encode(value: Any) -> Any:
    """Python built-ins only (for reticulate without NumPy): arrays become dicts.

    ndarrays -> ``{"shape", "dtype", "data"}`` (``data`` column-major), DataFrames ->
    ``{"columns": {name: encoded column}, "index": [...]}``, categoricals ->
    ``{"levels", "values"}``, NumPy scalars -> Python scalars, mappings recursively.
    """
    if isinstance(value, Mapping):
        return {str(k): encode(v) for k, v in value.items()}
    if isinstance(value, pd.DataFrame):
        return {
            "columns": {str(c): encode(value[c]) for c in value.columns},
            "index": [str(i) for i in value.index],
        }
    if isinstance(value, pd.Series):
        if isinstance(value.dtype, pd.CategoricalDtype):
            return {
                "levels": [str(c) for c in value.cat.categories],
                "values": [None if pd.isna(v) else str(v) for v in value],
            }
        return encode(value.to_numpy())
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "OUS":
            flat = [encode(v) for v in value.ravel(order="F")]
            # a matrix of strings (e.g. every k's labels) keeps its shape
            return (
                {"shape": list(value.shape), "dtype": "str", "data": flat}
                if value.ndim > 1
                else flat
            )
        kind = {"b": "bool", "i": "int32", "u": "int32"}.get(value.dtype.kind, "float64")
        flat = np.asarray(value).ravel(order="F")
        if kind == "int32" and flat.size and np.abs(flat).max() >= 2**31:
            kind = "float64"  # R integers are 32-bit
        return {"shape": list(value.shape), "dtype": kind, "data": flat.astype(kind).tolist()}
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, tuple | list):
        return [encode(v) for v in value]
    return value


def make_adata(
    X: Any, obs_names: Any = None, var_names: Any = None, representation: bool = False
) -> AnnData:
    """AnnData with items in rows from an ``(items, features)`` matrix (dense or sparse).

    ``X`` may also be a matrix spec from R (see :func:`decode_matrix`). ``var_names`` name
    the features in messages. ``representation``: ``X`` is a reducedDim (a PCA...), which
    Python would read from ``.obsm``: marked so (``.uns[INPUT_MARK]``) that the checks of
    a matrix of features (raw counts, one feature's scale) pass it, as they pass
    ``.obsm`` (its first component holding most of the variance is no fault).
    """
    import scipy.sparse as sp

    if isinstance(X, Mapping):
        X = decode_matrix(X)
    X = sp.csr_matrix(X) if sp.issparse(X) else np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"Expected a 2-D matrix, got shape {X.shape}.")
    obs = None
    if obs_names is not None:
        names = [str(v) for v in np.atleast_1d(obs_names)]
        if len(names) != X.shape[0]:
            raise ValueError(f"{len(names)} item names for {X.shape[0]} items.")
        if len(set(names)) == len(names):
            obs = pd.DataFrame(index=names)
    var = None
    if var_names is not None:
        features = [str(v) for v in np.atleast_1d(var_names)]
        if len(features) == X.shape[1] and len(set(features)) == len(features):
            var = pd.DataFrame(index=features)
    adata = AnnData(X=X, obs=obs, var=var)
    if representation:
        from .tl._input_checks import INPUT_MARK

        adata.uns[INPUT_MARK] = "representation"
    return adata


def _tool(name: str):
    from . import tl

    function = getattr(tl, name, None)
    if function is None or not callable(function):
        from . import __version__

        raise ValueError(
            f"scconsensus.tl.{name} does not exist in the installed scconsensus {__version__}; "
            "upgrade the Python package (pip install -U scconsensus)."
        )
    return function


def uses_ensemble(name: str) -> bool:
    """Whether ``scconsensus.tl.<name>`` reads an ensemble (has an ``ensemble_key``)."""
    return "ensemble_key" in inspect.signature(_tool(name)).parameters


def _call(function, adata: AnnData, kwargs: dict[str, Any], progress: bool | None) -> None:
    """``function(adata, **kwargs)`` with progress bars on, off or left to the function.

    A function with a ``progress`` parameter gets it; one without is silenced
    by catching its standard error (tqdm writes there) when ``progress`` is ``False``.
    """
    params = inspect.signature(function).parameters
    if progress is not None and "progress" in params:
        kwargs = {"progress": bool(progress), **kwargs}
    if progress is False and "progress" not in params:
        with contextlib.redirect_stderr(io.StringIO()):
            function(adata, **kwargs)
    else:
        function(adata, **kwargs)


def defaults(name: str) -> dict[str, Any]:
    """The arguments of ``scconsensus.tl.<name>`` by their R name, with Python's defaults.

    The one place R learns a default: R's formals leave Python's arguments at ``NULL``
    and ``show()`` of a parameter object prints these. A default that is not a plain
    value (an object, a function) is given as its ``repr``.
    """
    params = inspect.signature(_tool(name)).parameters
    out = {}
    for key, param in params.items():
        if key in _RESERVED or key in _R_UNLISTED or param.default is inspect.Parameter.empty:
            continue
        value = param.default
        if not (value is None or isinstance(value, str | bool | int | float | tuple)):
            value = repr(value)
        out[camel_case(key)] = value
    return encode(out)


class _Collect(logging.Handler):
    """A handler that appends scanpy's log records to ``events`` instead of printing them."""

    def __init__(self, events: list[dict[str, str]]):
        super().__init__(level=0)
        self.events = events

    def emit(self, record: logging.LogRecord) -> None:
        kind = "warning" if record.levelno >= logging.WARNING else "message"
        category = "UserWarning" if kind == "warning" else record.levelname
        self.events.append(
            {"type": kind, "category": category, "message": record.getMessage().strip()}
        )


@contextlib.contextmanager
def _conditions(verbose: bool):
    """Collect Python warnings and scanpy's log records, in the order they arise.

    scanpy logs through its own root logger (``settings._root_logger``, not
    :mod:`logging`'s), which prints to the standard error; R can neither catch
    nor silence that, so its handlers are swapped for a collector for the call.
    Its level is lowered to scanpy's ``hint`` only with ``verbose``: R users
    then get what ``verbosity = "hint"`` would print in Python.
    """
    from scanpy import settings

    events: list[dict[str, str]] = []
    logger = settings._root_logger
    level, handlers = logger.level, logger.handlers[:]

    def showwarning(message, category, filename, lineno, file=None, line=None):
        text = str(message).strip()
        events.append({"type": "warning", "category": category.__name__, "message": text})

    logger.handlers[:] = [_Collect(events)]
    logger.setLevel(15 if verbose else logging.WARNING)  # 15: scanpy's HINT
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            warnings.showwarning = showwarning  # restored by catch_warnings
            yield events
    finally:
        logger.handlers[:] = handlers
        logger.setLevel(level)


def _once(events: list[dict[str, str]]) -> list[dict[str, str]]:
    """Each warning once (a check repeated per partition says the same thing); all messages."""
    seen: set[str] = set()
    out = []
    for event in events:
        if event["type"] == "warning":
            if event["message"] in seen:
                continue
            seen.add(event["message"])
        out.append(event)
    return out


def run(
    name: str,
    adata: AnnData,
    kwargs: Mapping[str, Any] | None = None,
    ensemble: Any = None,
    ensemble_kwargs: Mapping[str, Any] | None = None,
    progress: bool | None = None,
    verbose: bool = False,
    ensemble_record: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Call ``scconsensus.tl.<name>(adata, **kwargs)`` and return what it wrote.

    Parameters
    ----------
    name
        A function of :mod:`scconsensus.tl` (``"ensemble"``, ``"pcc"``, ``"pla"``, ``"dpp"``, ...).
    adata
        Built by :func:`make_adata`; the representation to use is its ``X``.
    kwargs
        R-style arguments for the function (see :func:`convert_kwargs`).
    ensemble
        ``(items, partitions)`` labels (``-1`` = not sampled) for methods that
        read an ensemble; when ``None`` such methods get one built by
        :func:`scconsensus.tl.ensemble` with ``ensemble_kwargs``.
    ensemble_kwargs
        R-style arguments for :func:`scconsensus.tl.ensemble`.
    progress
        Progress bars on (``True``), off (``False``, nothing written to standard
        error) or as the function decides (``None``).
    verbose
        Also collect scanpy's information records (``info`` and ``hint``).
    ensemble_record
        The record of a given ``ensemble`` (``.uns`` of :func:`scconsensus.tl.ensemble`,
        as R's ``metadata()`` keeps it): its recipe, which R's ``nNull`` (``kwargs``
        ``n_null``: :func:`scconsensus.tl.k_null` after ``pcc`` or ``pla``, on every
        result) rebuilds on reference data.

    Returns
    -------
    ``{"key": main result key or None, "keys": every key that has a membership (one per
    K of a list of ``n_clusters``; ``consensus_k``: one per k kept), "obs": {...},
    "obsm": {...}, "uns": {...}, "conditions": [...], "warnings": [...]}`` with the
    entries the call added,
    passed through :func:`encode`; ``conditions`` are the Python warnings and
    scanpy's log records in order, each ``{"type": "warning" | "message",
    "category", "message"}`` (each warning once), ``warnings`` their warnings'
    messages.
    """
    with _conditions(bool(verbose)) as events:
        out = _run(name, adata, kwargs, (ensemble, ensemble_record), ensemble_kwargs, progress)
    out["conditions"] = _once(events)
    out["warnings"] = [e["message"] for e in out["conditions"] if e["type"] == "warning"]
    return out


def _obsm_value(value: Any) -> Any:
    """An ``.obsm`` entry for R: a table keeps its column names (consensus-k's ``"k2"``,
    ``"k3"``, ... name which ``k`` each column is), anything else is an array."""
    return value if isinstance(value, pd.DataFrame) else np.asarray(value)


def _null_draws(name: str, kwargs: dict[str, Any]) -> int:
    """R's ``nNull``, taken out of ``kwargs``: reference draws for
    :func:`scconsensus.tl.k_null` after ``pcc`` or ``pla`` (0, as ``--k-null 0``: none)."""
    given = [k for k in kwargs if snake_case(k) == "n_null"]
    if not given:
        return 0
    value = kwargs.pop(given[0])
    if np.size(value) != 1:
        raise ValueError(f"nNull must be one whole number (0: off), got {np.size(value)} values.")
    n_null = check_int(np.ravel(value)[0], "nNull", 0)
    if n_null and name not in ("pcc", "pla"):
        raise ValueError(
            f"nNull compares the K of pcc() and pla() with data without groups; {name}() "
            "does not take it."
        )
    return n_null


def _recipe(record: Mapping[str, Any]) -> dict[str, Any]:
    """An ensemble's record from R's ``metadata()`` as :func:`scconsensus.tl.ensemble`
    wrote it: its matrix is the one handed over, ``X``."""
    params = {k: v for k, v in dict(record.get("params") or {}).items() if "." not in k}
    partitions = record.get("partitions")
    if not isinstance(partitions, pd.DataFrame):
        partitions = pd.DataFrame()
    return {"params": {**params, "use_rep": "X", "layer": None}, "partitions": partitions}


def _run(name, adata, kwargs, given, ensemble_kwargs, progress) -> dict[str, Any]:
    function = _tool(name)
    params = inspect.signature(function).parameters
    kwargs = dict(kwargs or {})
    n_null = _null_draws(name, kwargs)
    converted = convert_kwargs(function, kwargs)
    ensemble, record = given
    if n_null and ensemble is not None:
        if not isinstance(record, Mapping) or "params" not in record:
            raise ValueError(
                "nNull rebuilds the ensemble on reference data and needs its recipe, which "
                "a hand-made ensemble lacks: leave ensemble out (the call builds one, with "
                "ensembleArgs), or store it with ensemble(sce) and pass the SingleCellExperiment."
            )
        key = converted.get("ensemble_key", params["ensemble_key"].default)
        adata.uns[key] = _recipe(record)
    # The matrix the R user handed over is X: use it whatever its width.
    if "use_rep" in params and converted.get("use_rep") is None:
        converted["use_rep"] = "X"
    # Snapshot first, so an ensemble built here is handed back too.
    before_obs, before_obsm = set(adata.obs.columns), set(adata.obsm)
    before_uns = {k: id(v) for k, v in adata.uns.items()}
    if "ensemble_key" in params:
        key = converted.get("ensemble_key", params["ensemble_key"].default)
        if ensemble is not None:
            labels = decode_matrix(ensemble) if isinstance(ensemble, Mapping) else ensemble
            labels = np.asarray(labels)
            if labels.ndim == 1:
                labels = labels[:, None]
            adata.obsm[key] = _to_int(labels).astype(np.int32)
        elif key not in adata.obsm:
            ens = _tool("ensemble")
            ens_kwargs = convert_kwargs(ens, ensemble_kwargs)
            ens_kwargs.setdefault("use_rep", "X")
            # R documents one seed for the call: the ensemble it builds and the fit
            if "random_state" in converted:
                ens_kwargs.setdefault("random_state", converted["random_state"])
            ens_kwargs["key_added"] = key
            _call(ens, adata, ens_kwargs, progress)
    elif ensemble is not None or ensemble_kwargs:
        raise ValueError(f"scconsensus.tl.{name} does not use an ensemble.")

    if n_null:  # refused now, not after the fit
        from .tl._null import check_null_input

        check_null_input(adata, converted.get("ensemble_key", params["ensemble_key"].default))
    _call(function, adata, converted, progress)
    obs_new = [c for c in adata.obs.columns if c not in before_obs]
    main = [c for c in obs_new if f"{c}_membership" in adata.obsm]
    if n_null:  # one set of draws for every K of the call
        null = {"key": main, "n_null": n_null, "random_state": converted.get("random_state", 0)}
        _call(_tool("k_null"), adata, null, progress)
    obsm_new = [k for k in adata.obsm if k not in before_obsm]
    uns_new = [k for k in adata.uns if before_uns.get(k) != id(adata.uns[k])]
    return encode(
        {
            "key": main[0] if main else None,
            "keys": main,
            "obs": {c: adata.obs[c] for c in obs_new},
            "obsm": {k: _obsm_value(adata.obsm[k]) for k in obsm_new},
            "uns": {k: adata.uns[k] for k in uns_new},
        }
    )
