"""The command line's words in messages: the methods' argument names as ``run``'s
options, and warnings printed as its errors are."""

from __future__ import annotations

import re
import sys

#: Method arguments the CLI sets from its own options (not through --param).
OWN_OPTIONS = {
    "n_clusters": "--n-clusters",
    "random_state": "--random-state",
    "ensemble_key": "--ensemble-key",
    "use_rep": "--use-rep",
    "key_added": "the method name",
    "progress": "--progress / --no-progress",
}


def console_warnings():
    """A ``warnings.showwarning`` for one run, as the command line says its errors (Python's
    form named a line of ``<frozen runpy>`` or of the ``scconsensus`` script, which tells a
    shell user nothing), each text once: every step reads the input again (the ensemble,
    then each method), and a filter's "once" does not hold where the package's steps
    change the filters."""
    said = set()

    def show(message, category, filename, lineno, file=None, line=None) -> None:
        text = cli_terms(str(message))
        if text not in said:
            said.add(text)
            print(f"scconsensus: warning: {text}", file=sys.stderr if file is None else file)

    return show


#: The methods' argument names that are ``run`` options, as a shell user writes them.
_CLI_NAMES = {
    # --progress is two options ("--progress / --no-progress"), key_added none
    **{
        name: flag
        for name, flag in OWN_OPTIONS.items()
        if flag.startswith("--") and " " not in flag
    },
    "n_partitions": "--n-partitions",
    "n_jobs": "--n-jobs",
    "subsample": "--subsample",
}

#: Python's advice as the command line follows it (tl.k_null's, after --k-null).
_CLI_PHRASES = (
    # the run may have reused the input's ensemble: its options need --rebuild-ensemble
    ("rebuild the ensemble with ", "rebuild the ensemble (--rebuild-ensemble) with "),
    ("Build it with scc.tl.ensemble and fit the result again.", "Pass --rebuild-ensemble."),
    (
        "Build the ensemble on a representation (sc.pp.pca, then tl.ensemble(adata, "
        "use_rep='X_pca')).",
        "Run sc.pp.pca on the input and pass --use-rep X_pca --rebuild-ensemble.",
    ),
    (
        "(sc.pp.pca; X_pca is then used), or pass use_rep, or a layer of normalised values.",
        "(sc.pp.pca on the input; X_pca is then used), or pass --use-rep.",
    ),
    (
        "or cluster a representation (sc.pp.pca).",
        "or cluster a representation (sc.pp.pca on the input, then --use-rep X_pca).",
    ),
    # select_k's warnings (a trial read Python's names on the command line)
    ("(tl.ensemble's default k='auto' reaches sqrt(n))", "(the default --k auto reaches sqrt(n))"),
    ("(tl.ensemble's default k='auto')", "(the default --k auto)"),
    (
        "Look at pl.k_selection, and give the number of clusters if the biology sets one.",
        "Look at the report's figure of K, and give --n-clusters if the biology sets one.",
    ),
    ("or give the number of clusters.", "or give --n-clusters."),
)

#: A name is rewritten unless it is one already (after "-"), part of a word, a key or an
#: attribute (after a word character, "." or a quote), an argument of Python code shown
#: as such ("tl.ensemble(n_partitions=20)"), or what --param was given.
_CLI_NAME = r"(?<![-\w.'\"])(?<!\w\()(?<!--param )({names})\b(?=\s*(=|\)|<|>|must\b|is\b))"


def ratio_text(value: float) -> str:
    """A ratio of cuts (``tl.k_null``) for the console: unbounded when the data cut none."""
    return "unbounded" if value == float("inf") else f"{value:.2f}"


def cli_terms(text: str) -> str:
    """The methods' argument names in a message as ``run``'s options (a user trial read
    "(n_partitions) ... e.g. k=(2, 3)" where the command line says --n-partitions and
    --k 2,3); the R bridge does the same for R (``.r_terms``)."""
    text = re.sub(r"(?<![\w(])k=\((\d+), (\d+)\)", r"--k \1,\2", text)
    # the memory guard's advice (a trial was told to set a Python setting)
    text = re.sub(r"(?<![\w-])(mode|divergence)='(\w+)'", r"--param \1=\2", text)
    text = text.replace(
        "raise scconsensus.settings.max_dense_bytes if you have the memory",
        "raise the limit (environment variable SCCONSENSUS_MAX_DENSE_BYTES, in bytes) if "
        "you have the memory",
    )
    for python, cli in _CLI_PHRASES:
        text = text.replace(python, cli)
    # the run writes the evidence and its figure; no Python session to call pl from
    text = re.sub(
        r"Look at (?:scc\.pl\.k_selection\(adata, '([^']+)'\)"
        r"|adata\.uns\['([^']+)'\]\['k_null'\])\.",
        lambda m: (
            f"Look at .uns['{m[1] or m[2]}'] in the --out file (k_selection, k_null) "
            "and the report's figure of K."
        ),
        text,
    )
    pattern = _CLI_NAME.format(names="|".join(map(re.escape, _CLI_NAMES)))
    text = re.sub(pattern, lambda m: _CLI_NAMES[m[1]], text)
    return re.sub(r"(?<![\w-])(--[a-z][\w-]*)='([^'\s]*)'", r"\1 \2", text)  # --use-rep X
