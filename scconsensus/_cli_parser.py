"""The ``scconsensus`` command line's options and help (``cli.py`` runs the commands)."""

from __future__ import annotations

import argparse
import warnings
from collections.abc import Callable

#: Consensus methods the CLI knows; each runs if ``scconsensus.tl`` provides it.
CONSENSUS_METHODS = ("pcc", "pla", "dpp")
BUNDLED = ("pbmc68k_reduced", "iris", "wine", "breast_cancer", "digits")


class _RenamedOption(argparse.Action):
    """Stores the value; the option's second name is its old one and warns when used."""

    def __call__(self, parser, namespace, values, option_string=None):
        if option_string != self.option_strings[0]:
            warnings.warn(
                f"{option_string} is now {self.option_strings[0]}; the old name will stop "
                "working in the next release.",
                FutureWarning,
                stacklevel=2,
            )
        setattr(namespace, self.dest, values)


def _add_ensemble_options(p_run: argparse.ArgumentParser) -> None:
    """``run``'s options that build the ensemble (their defaults: ``cli.ENSEMBLE_DEFAULTS``)."""
    p_run.add_argument(
        "--n-partitions",
        type=int,
        default=None,
        help="ensemble size (100)",
    )
    p_run.add_argument(
        "--ensemble-method",
        "--ensemble-methods",  # the old name, for one release
        action=_RenamedOption,
        default=None,
        help="comma-separated, e.g. kmeans,leiden,hc (tl.ensemble's method)",
    )
    p_run.add_argument(
        "--k",
        default=None,
        help="clusters per partition: auto (default; log-spaced 2..sqrt(n)); LO,HI a range "
        "drawn per partition; one value, or three or more (3,5,8), the values cycled over "
        "the partitions; [A,B] in brackets exactly the two values A and B",
    )
    p_run.add_argument(
        "--subsample",
        type=float,
        default=None,
        help="fraction of the items each partition clusters (0.8)",
    )


def command_parser(
    commands: dict[str, Callable[[argparse.Namespace], int]],
) -> argparse.ArgumentParser:
    """The parser of ``scconsensus``; ``commands`` maps "run", "demo" and "warmup" to the
    functions they call."""
    from . import __version__

    parser = argparse.ArgumentParser(
        prog="scconsensus", description="Consensus clustering for gene-expression data."
    )
    parser.add_argument(
        "--version", action="version", version=f"%(prog)s {__version__}", help="print the version"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p_run = sub.add_parser(
        "run",
        help="build an ensemble and run consensus methods",
        epilog="Dense n x n routes refuse above 4 GiB; raise the limit with the environment "
        "variable SCCONSENSUS_MAX_DENSE_BYTES=<bytes>, or pass --param mode=sparse.",
    )
    p_run.add_argument("input", help=f".h5ad file or bundled dataset ({', '.join(BUNDLED)})")
    p_run.add_argument(
        "--method",
        action="append",
        choices=CONSENSUS_METHODS,
        help="consensus method (repeatable; default: all available)",
    )
    p_run.add_argument("--out", required=True, help="output .h5ad")
    p_run.add_argument("--figures", help="figure folder (default: next to --out)")
    p_run.add_argument("--no-figures", action="store_true", help="skip the figure report")
    _add_ensemble_options(p_run)
    p_run.add_argument("--ensemble-key", default="scc_ensemble", help="the ensemble's .obsm key")
    p_run.add_argument(
        "--rebuild-ensemble", action="store_true", help="rebuild even if INPUT has one"
    )
    p_run.add_argument("--use-rep", default=None, help=".obsm key or X (default X_pca, else X)")
    p_run.add_argument(
        "--n-clusters",
        default="auto",
        help="auto (chosen from the ensemble), a number, or several: 2,5 (stored as <method>_k2, "
        "<method>_k5)",
    )
    p_run.add_argument("--random-state", type=int, default=0, help="seed of every random choice")
    p_run.add_argument("--n-jobs", type=int, default=1, help="parallel jobs of the ensemble (1)")
    p_run.add_argument(
        "--k-null",
        type=int,
        default=0,
        help="compare pcc's and pla's K with N draws of data without groups (tl.k_null; 0: off)",
    )
    p_run.add_argument(
        "--truth",
        default=None,
        help=".obs column to score against (default: 'truth' when INPUT has it)",
    )
    p_run.add_argument(
        "--param", action="append", default=[], help="extra KEY=VALUE passed to the methods"
    )
    p_run.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="progress bars (default: when scanpy's verbosity is info or higher)",
    )
    p_run.set_defaults(func=commands["run"])
    p_demo = sub.add_parser("demo", help="run everything on the bundled PBMC data")
    p_demo.add_argument("--outdir", default="scconsensus_demo", help="result and figure folder")
    p_demo.set_defaults(func=commands["demo"])
    p_warm = sub.add_parser(
        "warmup",
        help="compile the numba kernels once, ahead of the first analysis (run after "
        "installing; tools/setup.sh does)",
        description="Compile the numba kernels of the demo and of the default routes for "
        "larger data (1-1.5 minutes, once), so that the first analysis does not wait for "
        "them. Nothing is written but numba's cache: beside the package's sources, or in "
        "your user cache folder (~/.cache/numba) where those are not writable by you; "
        "NUMBA_CACHE_DIR overrides both. Run it as the user who will analyse.",
    )
    p_warm.set_defaults(func=commands["warmup"])
    return parser
