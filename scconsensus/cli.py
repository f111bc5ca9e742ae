"""Command line: ``scconsensus run`` on an ``.h5ad`` or a bundled dataset, ``scconsensus demo``,
and ``scconsensus warmup`` (compile the numba kernels once, after installing).

Consensus methods plug in by name: ``--method NAME`` calls ``scconsensus.tl.NAME`` with the
options its signature accepts.
"""

from __future__ import annotations

import argparse
import inspect
import re
import sys
import time
import warnings
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import anndata as ad
import numpy as np

from . import datasets, tl
from ._cli_checks import check_apart, check_methods_input, check_param_kinds
from ._cli_parser import BUNDLED, CONSENSUS_METHODS, command_parser
from ._cli_publish import publish
from ._cli_terms import OWN_OPTIONS as _OWN_OPTIONS
from ._cli_terms import cli_terms as _cli_terms
from ._cli_terms import console_warnings, ratio_text
from ._io import (
    check_not_open,
    check_replaceable,
    check_writable,
    output_lock,
    remove_stale,
)
from ._report import check_report_folder
from ._results import truth_labels
from ._validation import (
    check_choice,
    check_fraction,
    check_int,
    check_key,
    check_kwargs,
    check_n_jobs,
)
from .core.ensemble import METHODS
from .tl._anndata import consensus_layout
from .tl._null import check_null_input
from .tl._record_keys import KINDS, companion_ending, each_k_key, record_kind


def available_methods() -> list[str]:
    """Consensus methods present in this installation."""
    return [m for m in CONSENSUS_METHODS if hasattr(tl, m)]


def _parse_value(text: str) -> Any:
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return {"true": True, "false": False, "none": None}.get(text.lower(), text)


def _parse_params(items: list[str]) -> dict[str, Any]:
    params = {}
    for item in items:
        if "=" not in item:
            raise ValueError(f"--param expects KEY=VALUE, got {item!r}")
        key, value = item.split("=", 1)
        params[key.strip()] = _parse_value(value.strip())
    return params


def _load(source: str) -> ad.AnnData:
    if source in BUNDLED:
        return getattr(datasets, source)()
    path = Path(source)
    if not path.exists():
        raise ValueError(
            f"Input {source!r} is neither a file nor a bundled dataset ({', '.join(BUNDLED)})."
        )
    if path.suffix != ".h5ad":
        raise ValueError(
            f"Input {source!r} is not an .h5ad file; convert it first, e.g. "
            "anndata.read_csv(path).write_h5ad('data.h5ad') (items in rows)."
        )
    try:
        return ad.read_h5ad(path)
    except Exception as err:  # h5py/anndata raise many types for a damaged file
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ValueError(
            f"Cannot read {source!r} as an .h5ad file ({first}); check that it was written "
            "by AnnData (adata.write_h5ad) and is complete."
        ) from None


def _k_values(text: str) -> tuple[int, int] | list[int] | str:
    """``--k``: ``auto``; two values are an inclusive range, one or three or more a list.

    ``[a,b]`` (in brackets) is a list whatever its length, e.g. the two values R's
    ``c(4, 14)`` means.
    """
    text = text.strip()
    if text == "auto":
        return "auto"
    as_list = text.startswith("[") and text.endswith("]")
    try:
        values = [int(v) for v in text.strip("[]").split(",") if v.strip()]
    except ValueError:
        msg = f"--k expects integers separated by commas (e.g. 2,20), got {text!r}."
        raise ValueError(msg) from None
    if not values or min(values) < 2:
        raise ValueError(f"--k values must be integers of at least 2, got {text!r}.")
    return tuple(values) if len(values) == 2 and not as_list else values


def _int_or_text(text: str) -> int | str:
    try:
        return int(text)
    except ValueError:
        return text


def _check_args(args: argparse.Namespace, methods: list[str], extra: dict[str, Any]) -> None:
    """Every argument checked before any work, so a typo costs no ensemble."""
    check_int(args.n_partitions, "--n-partitions", 1)
    args.n_clusters = _n_clusters(args.n_clusters)
    check_fraction(args.subsample, "--subsample")
    check_n_jobs(args.n_jobs)
    check_int(args.k_null, "--k-null", 0)
    check_key(args.ensemble_key, "--ensemble-key")
    for name in args.ensemble_method.split(","):
        check_choice(name.strip(), METHODS, "--ensemble-method")
    if Path(args.out).suffix != ".h5ad":
        raise ValueError(f"--out must name an .h5ad file, got {args.out!r}.")
    for name in extra:
        if name in _OWN_OPTIONS:
            raise ValueError(
                f"--param {name}=... is set by {_OWN_OPTIONS[name]}; use that instead."
            )
    ending = companion_ending(args.ensemble_key)
    if args.ensemble_key in result_keys(methods, args.n_clusters) or ending:
        where = (
            f"ends in {ending!r}, which the tools write beside a result"
            if ending
            else "is where a result of this run is stored"
        )
        raise ValueError(
            f"--ensemble-key {args.ensemble_key} {where}; choose another, e.g. scc_ensemble."
        )
    twice = sorted({m for m in methods if methods.count(m) > 1})
    if twice:
        raise ValueError(
            f"--method {twice[0]} is given twice; name each method once (its result is "
            f"stored under one key, {twice[0]!r})."
        )
    accepted = {p for m in methods for p in inspect.signature(getattr(tl, m)).parameters}
    accepted -= {"adata", "copy", *_OWN_OPTIONS}
    check_kwargs(extra, accepted, f"--param (for {', '.join(methods)})")
    check_param_kinds(methods, extra)


def _n_clusters(text: str) -> str | int | list[int]:
    """``--n-clusters``: "auto", one K, or several, ``2,5`` or ``[4]`` (each stored under
    ``<method>_k<K>``, as ``n_clusters=[2, 5]`` stores them; a user trial found the
    command line refused what Python takes)."""
    if text == "auto":
        return text
    hint = 'Give "auto" (chosen from the ensemble), an integer >= 2, or several: 2,5.'
    text = str(text).strip()
    as_list = text.startswith("[") and text.endswith("]")  # [4]: one K stored as pcc_k4
    parts = [part.strip() for part in text.strip("[]").split(",")]
    if len(parts) > 1 and "auto" in parts:
        raise ValueError(
            f"--n-clusters {text}: several K are integers only; run 'auto' on its own (its "
            "K and the other stable resolutions are in .uns[method]['k_candidates'])."
        )
    Ks = [check_int(_int_or_text(part), "--n-clusters", 2, hint=hint) for part in parts]
    if len(set(Ks)) < len(Ks):
        raise ValueError(f"--n-clusters {text} names a K twice; give each K once.")
    return Ks[0] if len(Ks) == 1 and not as_list else Ks


def result_keys(methods: list[str], n_clusters: Any) -> list[str]:
    """The keys ``run`` stores: each method's name, or ``<method>_k<K>`` for each K of
    several."""
    if not isinstance(n_clusters, list):
        return list(methods)
    return [each_k_key(name, K) for name in methods for K in n_clusters]


def run_method(adata: ad.AnnData, name: str, **options: Any) -> None:
    """Call ``scconsensus.tl.<name>(adata, ...)`` with the options its signature accepts."""
    if name not in CONSENSUS_METHODS:
        raise ValueError(f"Unknown method {name!r}; choose from {list(CONSENSUS_METHODS)}.")
    if not hasattr(tl, name):
        raise ValueError(f"Method {name!r} is not available in this installation.")
    fn = getattr(tl, name)
    accepted = inspect.signature(fn).parameters
    # the CLI's shared options go only to methods that take them (dpp has no ensemble_key)
    fn(adata, **{k: v for k, v in options.items() if k in accepted and v is not None})


def _truth_column(adata: ad.AnnData, truth: str | None) -> str | None:
    """The ``.obs`` column to score against: ``truth`` as given, else ``"truth"`` if present.

    A column asked for by name must exist: scoring against nothing would look like a run
    without scores, not like a typo.
    """
    if truth is None:
        return "truth" if "truth" in adata.obs else None
    if truth not in adata.obs:
        raise ValueError(
            f"--truth {truth!r} is not a column of the input's .obs; available: "
            f"{list(adata.obs.columns)}. Pass one of them, or leave --truth out."
        )
    truth_labels(adata, truth)  # classes, not a measurement: refused before any run
    return truth


def _figure_folder(args: argparse.Namespace) -> Path | None:
    if args.no_figures:
        return None
    out = Path(args.out)
    return Path(args.figures) if args.figures else out.parent / (out.stem + "_figures")


def run(args: argparse.Namespace) -> int:
    args.ensemble_given = _fill_ensemble_defaults(args)
    methods = args.method or available_methods()
    extra = _parse_params(args.param)
    k = _k_values(args.k)
    _check_args(args, methods, extra)
    # the outputs are checked, and held, before any computing: a run is never lost at its
    # end; and the input before any folder is made for them
    figures = _figure_folder(args)
    check_not_open(args.out)
    check_writable(Path(args.out).parent, "--out")
    if figures is not None:
        check_apart(Path(args.out), figures)
        check_report_folder(figures)
    adata, truth, keys, replaced = _load_checked(args, methods, extra)
    # the figure folder is locked under its own name too: another run's --out may have it
    # as its default, or name it with --figures (never a deadlock: no lock waits)
    figures_lock = output_lock(figures, "--figures") if figures is not None else nullcontext()
    with output_lock(args.out), figures_lock:
        for path in [args.out] + ([figures] if figures else []):
            remove_stale(path)  # a killed run's temporary files; its previous report back
        if figures is not None:
            check_replaceable(figures, "--figures")
        _compute(adata, args, methods, extra, k)
        return publish(adata, args, (keys, replaced, truth), figures)


def _load_checked(args: argparse.Namespace, methods: list[str], extra: dict[str, Any]) -> tuple:
    """``(adata, truth, keys, replaced)``: the input read and checked against the run."""
    adata = _load(args.input)
    if adata.n_obs < 3:
        raise ValueError(
            f"The input {args.input!r} has {adata.n_obs} cell(s); at least 3 are needed to cluster."
        )
    truth = _truth_column(adata, args.truth)
    largest = max(np.atleast_1d(args.n_clusters)) if args.n_clusters != "auto" else 0
    if largest >= adata.n_obs:
        raise ValueError(
            f"--n-clusters {largest} is too large for {adata.n_obs} items; "
            f"choose --n-clusters < {adata.n_obs}."
        )
    keys = result_keys(methods, args.n_clusters)
    _check_ensemble_key(adata, args)
    check_methods_input(adata, methods, extra)
    return adata, truth, keys, _replaced(adata, keys)


def _check_ensemble_key(adata: ad.AnnData, args: argparse.Namespace) -> None:
    """Refuse, before any work, an ensemble to build at an .obsm 'X_*' key (read as
    coordinates by scanpy), and an input's matrix at ``--ensemble-key`` that holds no
    labels (a user trial's X_pca was announced as "50 partitions", then refused)."""
    key = args.ensemble_key
    if key not in adata.obsm or args.rebuild_ensemble:
        if key.startswith("X_"):
            raise ValueError(
                f"--ensemble-key {key} names a representation (.obsm keys 'X_*' hold "
                "coordinates, such as X_pca); choose another, e.g. scc_ensemble."
            )
        return
    kind = np.asarray(adata.obsm[key]).dtype
    if not np.issubdtype(kind, np.integer):
        raise ValueError(
            f"--ensemble-key {key}: the input's .obsm[{key!r}] holds {kind} values, not an "
            "ensemble's cluster labels; pass the key of the input's ensemble, or another "
            "--ensemble-key to build one."
        )


def _replaced(adata: ad.AnnData, keys: list[str]) -> list[str]:
    """The input's results this run computes again, removed from ``adata`` (the methods'
    own overwrite warning advises another ``key_added``, which the command line sets from
    the method's name). A key holding another kind of record is refused before any work
    (the methods refuse it in Python's words)."""
    kinds = {key: record_kind(adata, key) for key in keys}
    for key, kind in kinds.items():
        if kind not in (None, "consensus"):
            raise ValueError(
                f"The input holds {KINDS[kind]} at .uns[{key!r}], where this run stores its "
                f"{key!r} result: remove it from the input (del adata.uns[{key!r}] in "
                "Python), or run the method from Python with another key_added."
            )
    found = [key for key in keys if key in adata.obs or key in adata.uns]
    for key in found:
        layout = consensus_layout(key)
        layout["uns"].append(f"{key}_colors")  # scanpy's, for the labels' categories
        for slot, names in layout.items():
            held = getattr(adata, slot)
            for name in (n for n in names if n in held):
                del held[name]
    return found


def _compute(
    adata: ad.AnnData,
    args: argparse.Namespace,
    methods: list[str],
    extra: dict[str, Any],
    k: Any,
    say: Callable[[str], object] = print,
) -> None:
    """The ensemble (unless ``adata`` has one and it is not to be rebuilt), then each
    method, timed."""
    start = time.perf_counter()
    if args.ensemble_key not in adata.obsm or args.rebuild_ensemble:
        tl.ensemble(
            adata,
            args.n_partitions,
            [m.strip() for m in args.ensemble_method.split(",")],
            k=k,
            subsample=args.subsample,
            use_rep=args.use_rep,
            random_state=args.random_state,
            n_jobs=args.n_jobs,
            key_added=args.ensemble_key,
            progress=args.progress,
        )
        say(f"ensemble: {args.n_partitions} partitions in {time.perf_counter() - start:.1f} s")
    else:
        _keep_ensemble(adata, args, say)
    compared = [m for m in methods if m in ("pcc", "pla")] if args.k_null else []
    if compared:  # refused now, not after the fits (a recipe missing, a matrix too wide)
        check_null_input(adata, args.ensemble_key)
    elif args.k_null:
        say("note: --k-null compares the K of pcc and pla only: not run")
    options = {"random_state": args.random_state, "ensemble_key": args.ensemble_key}
    options.update(use_rep=args.use_rep, progress=args.progress, **extra)
    for note in _unused_params(methods, extra):
        say(note)
    for name in methods:
        t0 = time.perf_counter()
        # DPP cuts one consensus per call: one call per K of several
        one_call = getattr(getattr(tl, name, None), "takes_k_list", False)
        calls = (
            [(K, each_k_key(name, K)) for K in args.n_clusters]
            if isinstance(args.n_clusters, list) and not one_call
            else [(args.n_clusters, name)]
        )
        for K, key in calls:
            run_method(adata, name, n_clusters=K, key_added=key, **options)
        say(f"{name}: {time.perf_counter() - t0:.1f} s")
    if compared:  # one set of draws for every result of the ensemble
        t0 = time.perf_counter()
        keys = result_keys(compared, args.n_clusters)
        null = {"n_null": args.k_null, "random_state": args.random_state, "n_jobs": args.n_jobs}
        tl.k_null(adata, keys, progress=args.progress, **null)
        ratios = ", ".join(f"{k} {ratio_text(adata.uns[k]['k_null_ratio'])}" for k in keys)
        say(f"k_null: {time.perf_counter() - t0:.1f} s; ratio of cuts (1.5+: beyond): {ratios}")


def _unused_params(methods: list[str], extra: dict[str, Any]) -> list[str]:
    """A note for each ``--param`` that some of the methods run do not take (a user trial
    passed divergence=l2 to pcc and pla, and only PCC used it, without a word)."""
    notes = []
    for name in extra:
        without = [m for m in methods if name not in inspect.signature(getattr(tl, m)).parameters]
        if without:
            users = [m for m in methods if m not in without]
            notes.append(
                f"note: --param {name} is used by {', '.join(users)} only "
                f"({', '.join(without)} {'does' if len(without) == 1 else 'do'} not take it)"
            )
    return notes


#: ``run``'s options that build the ensemble, with their defaults (parsed as None, so that
#: a value typed is told from one left out: :func:`_fill_ensemble_defaults`).
ENSEMBLE_DEFAULTS = {
    "n_partitions": 100,
    "ensemble_method": "kmeans",
    "k": "auto",
    "subsample": 0.8,
}


def _fill_ensemble_defaults(args: argparse.Namespace) -> list[str]:
    """The ensemble options given on the command line (parsed with no default, so that
    ``--n-partitions 100`` counts as given), their defaults filled in."""
    left_out = [name for name in ENSEMBLE_DEFAULTS if getattr(args, name) is None]
    for name in left_out:
        setattr(args, name, ENSEMBLE_DEFAULTS[name])
    return [name for name in ENSEMBLE_DEFAULTS if name not in left_out]


def _keep_ensemble(adata: ad.AnnData, args: argparse.Namespace, say) -> None:
    """Say that INPUT's ensemble is used, and warn when ensemble options were given: a
    user trial's ``--k 2,3 --ensemble-method hc`` on an earlier output was dropped
    without a word."""
    n = np.asarray(adata.obsm[args.ensemble_key]).shape[1]
    say(f"ensemble: INPUT's .obsm[{args.ensemble_key!r}] ({n} partitions)")
    given = getattr(args, "ensemble_given", [])
    if given:
        options = ", ".join("--" + name.replace("_", "-") for name in given)
        warnings.warn(
            f"{options} not used: INPUT already holds an ensemble at "
            f".obsm[{args.ensemble_key!r}]; pass --rebuild-ensemble to build one with them.",
            UserWarning,
            stacklevel=2,
        )


def _demo_args(outdir: Path) -> argparse.Namespace:
    """``scconsensus run``'s arguments for the demo (and the warm-up, which computes the
    same and writes nothing)."""
    return argparse.Namespace(
        input="pbmc68k_reduced",
        method=available_methods(),
        out=str(outdir / "pbmc68k_reduced_consensus.h5ad"),
        figures=str(outdir / "figures"),
        no_figures=False,
        ensemble_key="scc_ensemble",
        rebuild_ensemble=True,
        n_partitions=50,
        ensemble_method="kmeans,leiden",
        progress=None,
        k="auto",
        subsample=0.8,
        use_rep="X_pca",
        random_state=0,
        n_jobs=1,
        k_null=3,
        n_clusters="auto",
        truth=None,
        param=[],
    )


def demo(args: argparse.Namespace) -> int:
    ns = _demo_args(Path(args.outdir))
    print(
        "scconsensus demo: 700 PBMCs (pbmc68k_reduced), 50 k-means/Leiden partitions on X_pca, "
        f"consensus by {', '.join(ns.method) or 'no method (none installed)'}"
    )
    return run(ns)


def warmup(args: argparse.Namespace) -> int:
    """Compile the numba kernels of the demo and of the default routes at any size into
    numba's on-disk cache, so that the first analysis does not wait for them.

    Numba caches next to the package's sources, or in the user's cache folder when
    those are read-only (``NUMBA_CACHE_DIR`` overrides both); each later process loads
    the compiled kernels from there. Inputs of other types than the defaults give (a
    float64 ``X_pca``, a custom divergence) still compile theirs on first use.
    """
    import scanpy as sc

    ns = _demo_args(Path("."))
    ns.progress, ns.k_null = False, 0
    start = time.perf_counter()
    adata = _load(ns.input)
    # quiet: "first use of PCC: numba compiles ..." is what this command is for
    with sc.settings.verbosity.override("error"):
        _compute(adata, ns, ns.method, {}, _k_values(ns.k), say=lambda _: None)
        _warm_large_routes(ns.method)
    print(
        f"scconsensus warmup: the kernels of {', '.join(ns.method) or 'the ensemble'} compiled "
        f"and cached in {time.perf_counter() - start:.1f} s"
    )
    return 0


def _warm_large_routes(methods: list[str]) -> None:
    """The routes of larger data on 2,400 planted cells: ``select_k``'s compiled Gram
    matrices, the dense fit's multi-threaded kernels (from 2,000 cells, as PCC and PLA
    take all pairs up to 5,000 cells without a representation), sampled pairs (above
    1,000 cells with one) and a fit on a subset extended to the rest (PCC above 10,000).
    Their kernels take 20-60 s to compile, the runs a few seconds."""
    rng = np.random.default_rng(0)
    truth = rng.integers(0, 4, 2_400)
    X = (rng.normal(scale=4.0, size=(4, 50))[truth] + rng.normal(size=(2_400, 50))).astype(
        np.float32
    )
    adata = ad.AnnData(obsm={"X_pca": X})
    tl.ensemble(adata, 20, random_state=0, progress=False)
    for name in methods:
        run_method(adata, name, mode="dense", progress=False, key_added=f"{name}_dense")
        for size in _WARM_FIT_SIZES.get(name, [None]):  # DPP fits every cell
            run_method(adata, name, mode="sparse", progress=False, fit_size=size)


#: Fits on a subset of the warm-up's 2,400 cells: PCC extends 1,200 cells with the serial
#: twin of its extension kernel and 2,100 with the parallel one (from 2,000 items on more
#: than one thread), so that both are compiled.
_WARM_FIT_SIZES = {"pcc": [1_200, 300], "pla": [1_200]}


def build_parser() -> argparse.ArgumentParser:
    """The ``scconsensus`` command line and its three commands."""
    return command_parser({"run": run, "demo": demo, "warmup": warmup})


def main(argv: list[str] | None = None) -> int:
    # warnings said as the command line says its errors from the parsing on (a trial saw
    # the old option name's FutureWarning printed with argparse's source line)
    with warnings.catch_warnings():  # restores the caller's display on return
        warnings.showwarning = console_warnings()
        args = build_parser().parse_args(argv)
        try:
            return args.func(args)
        except (ValueError, MemoryError) as err:
            text = _cli_terms(str(err))
            if getattr(args, "outdir", None) is not None:  # the demo's only output option
                text = re.sub(r"^(--out|--figures)(?=[: ])", "--outdir", text)
            print(f"scconsensus: error: {text}", file=sys.stderr)
            return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
