import os
import subprocess
import sys

import anndata as ad
import numpy as np
import pytest

import scconsensus as scc
from scconsensus.cli import main


def test_bad_input_file(tmp_path, capsys):
    # exit status 2 and the prefix, as argparse's own usage errors (it was 1, no prefix)
    assert main(["run", str(tmp_path / "missing.h5ad"), "--out", str(tmp_path / "o.h5ad")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("scconsensus: error: Input") and "neither a file" in err


def test_bad_param(tmp_path, blobs_adata, capsys):
    src = tmp_path / "in.h5ad"
    blobs_adata.write_h5ad(src)
    assert main(["run", str(src), "--out", str(tmp_path / "o.h5ad"), "--param", "oops"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("scconsensus: error: --param expects KEY=VALUE, got 'oops'")


def test_run_writes_ensemble(tmp_path, blobs_adata):
    src = tmp_path / "in.h5ad"
    blobs_adata.write_h5ad(src)
    out = tmp_path / "out.h5ad"
    assert (
        main(
            [
                "run",
                str(src),
                "--out",
                str(out),
                "--n-partitions",
                "5",
                "--k",
                "2,4",
                "--no-figures",
            ]
        )
        == 0
    )
    back = ad.read_h5ad(out)
    assert back.obsm["scc_ensemble"].shape == (blobs_adata.n_obs, 5)


def test_run_pcc_writes_layout(tmp_path, blobs_adata):
    src = tmp_path / "in.h5ad"
    blobs_adata.write_h5ad(src)
    out = tmp_path / "out.h5ad"
    args = ["run", str(src), "--out", str(out), "--n-partitions", "10", "--k", "2,5"]
    assert main([*args, "--method", "pcc", "--n-clusters", "4", "--no-figures"]) == 0
    back = ad.read_h5ad(out)
    assert back.obsm["pcc_membership"].shape[0] == blobs_adata.n_obs
    assert (
        3 <= back.obs["pcc"].nunique() <= 4
    )  # K = 4 is a maximum; k-means at k = 4, 5 split a blob
    assert back.uns["pcc"]["params"]["n_clusters"] == 4


def test_run_fits_several_k_under_their_own_keys(tmp_path, blobs_adata, capsys):
    """A user trial: ``--n-clusters 2,5`` was refused, and two runs at two K overwrote
    ``.obs["pcc"]``; Python's ``n_clusters=[2, 5]`` keeps both."""
    src = tmp_path / "in.h5ad"
    blobs_adata.write_h5ad(src)
    out = tmp_path / "out.h5ad"
    args = ["run", str(src), "--out", str(out), "--n-partitions", "10", "--k", "2,5"]
    methods = ["--method", "pcc", "--method", "dpp", "--no-figures", "--no-progress"]
    assert main([*args, *methods, "--n-clusters", "3,2"]) == 0
    back = ad.read_h5ad(out)
    for key in ("pcc_k2", "pcc_k3", "dpp_k2", "dpp_k3"):
        assert key in back.obs and back.uns[key]["params"]["n_clusters"] == int(key[-1])
    assert "pcc" not in back.obs and "dpp" not in back.obs
    table = capsys.readouterr().out
    assert all(f"\n{key} " in table for key in ("pcc_k3", "pcc_k2", "dpp_k3", "dpp_k2"))
    assert main([*args, *methods, "--n-clusters", "2,2"]) == 2
    assert "--n-clusters 2,2 names a K twice" in capsys.readouterr().err
    assert main([*args, *methods, "--n-clusters", "auto,3"]) == 2
    assert "several K are integers only; run 'auto' on its own" in capsys.readouterr().err
    # the report draws and scores every K under its key
    figs = tmp_path / "figs"
    report = ["--method", "pcc", "--figures", str(figs), "--no-progress"]
    assert main([*args, *report, "--n-clusters", "2,3"]) == 0
    text = (figs / "report.md").read_text()
    assert "(pcc_k2_heatmap.png)" in text and "(pcc_k3_membership.png)" in text
    from scconsensus.cli import _n_clusters

    assert _n_clusters("[2,5]") == [2, 5] and _n_clusters("[4]") == [4] and _n_clusters("4") == 4


def test_run_reports_the_confidence_calibration(tmp_path, blobs_adata, capsys):
    """Issue 24: the run reported ARI, NMI and H against --truth but not the calibration
    that tl.compare computes; report.md also scored only a column named "truth"."""
    import scconsensus as scc

    a = blobs_adata.copy()
    a.obs["cell_type"] = a.obs.pop("truth")
    src, out, figures = tmp_path / "in.h5ad", tmp_path / "out.h5ad", tmp_path / "fig"
    a.write_h5ad(src)
    args = ["run", str(src), "--out", str(out), "--n-partitions", "10", "--k", "2,5"]
    args += ["--method", "pcc", "--truth", "cell_type", "--figures", str(figures)]
    assert main([*args, "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "confidence AUROC vs cell_type" in printed and "confidence ECE vs cell_type" in printed
    want = scc.tl.compare(ad.read_h5ad(out), ["pcc"], truth="cell_type").iloc[-1]
    text = (figures / "report.md").read_text()
    header, _, row = text.split("## Consensus results")[1].strip().splitlines()[:3]
    cells = dict(zip(header.strip("| ").split(" | "), row.strip("| ").split(" | "), strict=True))
    assert cells["confidence AUROC vs cell_type"] == f"{want['auroc']:.3f}"
    assert cells["confidence ECE vs cell_type"] == f"{want['ece']:.3f}"
    assert "ARI vs cell_type" in header
    assert "](calibration.png)" in text and (figures / "calibration.png").stat().st_size > 0


def test_run_reports_how_many_groups(tmp_path, blobs_adata):
    """Issue 28: the run's report gave no sign of how K was chosen; now the evidence, the
    reason and the other stable resolutions of a result that chose K, and nothing for a
    result given its K."""
    src, figures = tmp_path / "in.h5ad", tmp_path / "fig"
    blobs_adata.write_h5ad(src)
    args = ["run", str(src), "--out", str(tmp_path / "out.h5ad"), "--method", "pla"]
    assert main([*args, "--figures", str(figures), "--no-progress"]) == 0
    back = ad.read_h5ad(tmp_path / "out.h5ad")
    text = (figures / "report.md").read_text()
    section = text.split("## How many groups: `pla`")[1].split("##")[0]
    assert back.uns["pla"]["k_selection_reason"].rstrip(".") in section
    assert (figures / "pla_k_selection.png").stat().st_size > 0
    assert "](pla_k_selection.png)" in text
    given = tmp_path / "given"
    assert main([*args, "--n-clusters", "3", "--figures", str(given), "--no-progress"]) == 0
    text = (given / "report.md").read_text()
    assert "How many groups" not in text and not (given / "pla_k_selection.png").exists()


def test_report_draws_one_evidence_for_pcc_and_pla_on_one_ensemble(tmp_path, blobs_adata):
    """PCC and PLA on one ensemble read the same select_k table: one figure, and PLA's
    section points to it."""
    import scconsensus as scc
    from scconsensus._report import write_report

    a = blobs_adata.copy()
    scc.tl.ensemble(a, random_state=0, progress=False)
    scc.tl.pcc(a, progress=False)
    scc.tl.pla(a, progress=False)
    path = write_report(a, tmp_path / "r", ["pcc", "pla"], progress=False)
    text = path.read_text()
    assert (tmp_path / "r" / "pcc_k_selection.png").exists()
    assert not (tmp_path / "r" / "pla_k_selection.png").exists()
    pla_section = text.split("## How many groups: `pla`")[1].split("##")[0]
    assert "The evidence is `pcc`'s" in pla_section


def test_report_scores_skip_unlabelled_cells_and_dpp_given_k(blobs_adata):
    """A cell no partition sampled has no label: the scores leave it out (sklearn raised
    on the NaN). A DPP result given its K has no "how many groups" section."""
    import numpy as np

    import scconsensus as scc
    from scconsensus._report import _k_reason
    from scconsensus._report_table import results_table

    a = blobs_adata.copy()
    scc.tl.ensemble(a, n_partitions=3, k=(2, 5), random_state=0, progress=False)
    scc.tl.pcc(a, n_clusters=3, progress=False)
    assert a.obs["pcc"].isna().any()
    row = results_table(a, ["pcc"], "truth").iloc[0]
    want = scc.tl.compare(a, ["pcc"], truth="truth").iloc[-1]
    assert np.isfinite(row["ARI vs truth"]) and row["ARI vs truth"] == want["ari"]
    scc.tl.dpp(a, n_clusters=3, progress=False)
    assert _k_reason(a, "dpp") is None
    scc.tl.dpp(a, progress=False, key_added="dpp_auto")
    assert "kernel validity index" in _k_reason(a, "dpp_auto")


def test_unknown_method_is_rejected(tmp_path, blobs_adata):
    src = tmp_path / "in.h5ad"
    blobs_adata.write_h5ad(src)
    with pytest.raises(SystemExit):
        main(["run", str(src), "--out", str(tmp_path / "o.h5ad"), "--method", "magic"])


def test_version_prints_the_version(capsys):
    """Issue 27, item 9: ``scconsensus --version`` needs no command."""
    from scconsensus import __version__

    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"scconsensus {__version__}"


def test_every_option_has_help():
    """Issue 27, item 9: walk the parser and its sub-commands; no option without help."""
    import argparse

    from scconsensus.cli import build_parser

    missing, seen, parsers = [], 0, [build_parser()]
    while parsers:
        parser = parsers.pop()
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                parsers.extend(action.choices.values())
                helps = {a.dest: a.help for a in action._choices_actions}
                missing += [f"command {name}" for name in action.choices if not helps.get(name)]
                continue
            seen += 1
            if not (action.help or "").strip():
                missing.append(f"{parser.prog} {'/'.join(action.option_strings) or action.dest}")
    assert seen > 20 and not missing, missing


def test_k_in_brackets_is_a_list_of_two():
    """Issue 27, item 9: ``--k 4,14`` is a range; ``--k [4,14]`` the two values (R's c(4, 14))."""
    from scconsensus.cli import _k_values

    assert _k_values("4,14") == (4, 14)
    assert _k_values("[4,14]") == [4, 14]
    assert _k_values("3,5,8") == [3, 5, 8]
    assert _k_values("auto") == "auto"
    with pytest.raises(ValueError, match="integers"):
        _k_values("[4,x]")


WARM_CHILD = """
import numpy as np, anndata as ad
from numba.core import event
compiled = []

class Listener(event.Listener):
    def on_start(self, ev):
        pass

    def on_end(self, ev):
        compiled.append(ev.data["dispatcher"].py_func.__qualname__)

event.register("numba:compile", Listener())
import scconsensus as scc
from scconsensus import cli

ns = cli._demo_args(cli.Path("."))
cli._compute(cli._load(ns.input), ns, ns.method, {}, "auto", say=lambda _: None)
rng = np.random.default_rng(1)  # 6,000 cells with the defaults: the sampled-pairs route
X = rng.normal(scale=4.0, size=(5, 50))[rng.integers(0, 5, 6000)] + rng.normal(size=(6000, 50))
adata = ad.AnnData(obsm={"X_pca": X.astype(np.float32)})
scc.tl.ensemble(adata, 20)
scc.tl.pcc(adata)
scc.tl.pla(adata)
# a fit on a subset and its extension, as PCC's above 10,000 cells
scc.tl.pcc(adata, fit_size=3000, key_added="pcc_subset")
scc.tl.pla(adata, fit_size=3000, key_added="pla_subset")
# all pairs of 2,400 cells: the dense fit's multi-threaded kernels (PCC and PLA without a
# representation up to 5,000 cells)
scc.tl.pcc(adata, mode="dense", fit_size=2400, key_added="pcc_dense")
scc.tl.pla(adata, mode="dense", fit_size=2400, key_added="pla_dense")
print("compiled:", compiled)
"""


@pytest.mark.slow
def test_warmup_leaves_nothing_to_compile(tmp_path):
    """After ``scconsensus warmup`` in an empty numba cache, the demo, a default run on
    6,000 cells, a fit on half of them and a dense fit on 2,400 compile no kernel: the
    first analysis after an install does not wait."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    warm = subprocess.run(
        [sys.executable, "-m", "scconsensus", "warmup"], env=env, capture_output=True, text=True
    )
    assert warm.returncode == 0, warm.stderr
    assert "compiled and cached" in warm.stdout
    assert list((tmp_path / "numba").rglob("*.nbi"))  # the cache NUMBA_CACHE_DIR names
    child = subprocess.run(
        [sys.executable, "-c", WARM_CHILD], env=env, capture_output=True, text=True
    )
    assert child.returncode == 0, child.stderr
    assert "compiled: []" in child.stdout, child.stdout


def test_warnings_are_said_as_the_command_line_says_errors(tmp_path, capsys):
    """The 'few partitions near K' warning, now a Python warning, named a line of
    ``<frozen runpy>`` on the command line."""
    out = tmp_path / "r.h5ad"
    args = ["run", "iris", "--method", "pcc", "--n-clusters", "12", "--n-partitions", "10"]
    assert main([*args, "--k", "2,4", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "scconsensus: warning: Only 0 of the ensemble's 10 partition(s)" in err
    assert "UserWarning" not in err and "runpy" not in err
    # in the command line's terms (a user trial read k=(8, 16) and n_partitions)
    assert "a k range around 12, e.g. --k 8,16." in err and "k=(" not in err
    # an input's ensemble is kept unless rebuilt: the advice says how (a verification trial)
    assert "rebuild the ensemble (--rebuild-ensemble) with a k range around 12" in err
    assert main([*args, "--random-state", "-1", "--out", str(out)]) == 2
    assert "scconsensus: error: --random-state" in capsys.readouterr().err


def test_ensemble_options_beside_an_ensemble_in_input_are_named(tmp_path, blobs_adata, capsys):
    """A user trial: --k 2,3 --ensemble-method hc on an earlier output were dropped without
    a word; the run keeps INPUT's ensemble and says which options it did not use. Scores
    not defined (no misassigned cell: AUROC) read n/a, not nan."""
    src, out = tmp_path / "in.h5ad", tmp_path / "out.h5ad"
    blobs_adata.write_h5ad(src)
    base = ["run", str(src), "--method", "pcc", "--no-figures", "--no-progress"]
    assert main([*base, "--n-partitions", "10", "--k", "2,5", "--out", str(src)]) == 0
    capsys.readouterr()
    assert main([*base, "--k", "2,3", "--ensemble-method", "hc", "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert "ensemble: INPUT's .obsm['scc_ensemble'] (10 partitions)" in captured.out
    assert (
        "scconsensus: warning: --ensemble-method, --k not used: INPUT already holds an "
        "ensemble at .obsm['scc_ensemble']; pass --rebuild-ensemble" in captured.err
    )
    assert ad.read_h5ad(out).obsm["scc_ensemble"].shape[1] == 10
    assert main([*base, "--out", str(out)]) == 0  # the defaults: nothing to warn about
    assert "not used" not in capsys.readouterr().err
    # given explicitly, even at its default value, an option is named (a review)
    assert main([*base, "--n-partitions", "100", "--k", "auto", "--out", str(out)]) == 0
    assert "--n-partitions, --k not used" in capsys.readouterr().err


def test_undefined_scores_read_n_a_with_a_note(tmp_path, capsys):
    """Three clear groups, every cell right: the confidence AUROC is not defined."""
    import numpy as np
    import pandas as pd
    from sklearn.datasets import make_blobs

    from scconsensus._report_table import NA_NOTE

    X, y = make_blobs(300, 5, centers=3, random_state=0, cluster_std=0.3)
    adata = ad.AnnData(X.astype(np.float32))
    adata.obs["truth"] = pd.Categorical(y.astype(str))
    src, out = tmp_path / "in.h5ad", tmp_path / "out.h5ad"
    adata.write_h5ad(src)
    args = ["run", str(src), "--method", "pcc", "--n-partitions", "20", "--no-progress"]
    assert main([*args, "--out", str(out), "--figures", str(tmp_path / "fig")]) == 0
    printed = capsys.readouterr().out
    assert " n/a " in printed and NA_NOTE in printed and "nan" not in printed.lower()
    assert "| n/a |" in (tmp_path / "fig" / "report.md").read_text()


def test_cli_terms_leave_options_keys_and_python_code_alone():
    """A review: "--subsample" became "----subsample", "--param n_clusters=..." and
    "tl.ensemble(n_partitions=20)" were rewritten too."""
    from scconsensus.cli import _cli_terms

    assert _cli_terms("(n_partitions) or k=(2, 4); n_jobs=0 is") == (
        "(--n-partitions) or --k 2,4; --n-jobs=0 is"
    )
    for kept in (
        "--subsample must be in (0, 1], got 1.5.",
        "--param n_clusters=... is set by --n-clusters; use that instead.",
        "e.g. tl.ensemble(n_partitions=20) or more",
        "settings.n_jobs is; .obsm['use_rep'] is",
    ):
        assert _cli_terms(kept) == kept


def test_the_command_line_says_its_own_words(tmp_path, capsys):
    """A robustness trial: the old option's FutureWarning came with argparse's source
    line; the demo's error named --out, which it does not have; select_k's advice named
    tl.ensemble, pl.k_selection and k='auto'."""
    from scconsensus.cli import _cli_terms, main

    out = tmp_path / "o.h5ad"
    argv = ["run", str(tmp_path / "missing.h5ad"), "--out", str(out), "--no-figures"]
    assert main([*argv, "--ensemble-methods", "kmeans"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("scconsensus: warning: --ensemble-methods is now")
    assert "argparse" not in err and "FutureWarning" not in err
    (tmp_path / "a_file").write_text("")
    assert main(["demo", "--outdir", str(tmp_path / "a_file")]) == 2
    assert "scconsensus: error: --outdir: cannot create" in capsys.readouterr().err
    (tmp_path / "d" / "figures").mkdir(parents=True)
    (tmp_path / "d" / "figures" / "notes.txt").write_text("mine")
    assert main(["demo", "--outdir", str(tmp_path / "d")]) == 2
    assert "scconsensus: error: --outdir '" in capsys.readouterr().err
    out2 = ["run", "iris", "--out", str(out), "--no-figures", "--n-partitions", "5"]
    assert main([*out2, "--param", "n_init=abc"]) == 2  # a word where a number goes
    said = capsys.readouterr()
    assert "--param n_init=abc: pcc takes a number there." in said.err
    from scconsensus._cli_checks import check_param_kinds

    # words the methods take pass (a review: the check reads annotations as written)
    check_param_kinds(["pcc", "pla", "dpp"], {"fit_size": "auto", "lam": "cv", "mode": "sparse"})
    with pytest.raises(ValueError, match="pla takes true or false there"):
        check_param_kinds(["pla"], {"weighted": "yes"})
    with pytest.raises(ValueError, match="pcc takes a number there, or none"):
        check_param_kinds(["pcc"], {"max_iter": "lots"})
    assert "ensemble:" not in said.out
    said = _cli_terms(
        "Build the ensemble over larger k (tl.ensemble's default k='auto' reaches sqrt(n)), "
        "or give the number of clusters. Look at pl.k_selection, and give the number of "
        "clusters if the biology sets one."
    )
    assert _cli_terms("mode='lowrank' (divergence='l2' only); pass use_rep='X'.") == (
        "--param mode=lowrank (--param divergence=l2 only); pass --use-rep X."
    )
    assert said == (
        "Build the ensemble over larger k (the default --k auto reaches sqrt(n)), or give "
        "--n-clusters. Look at the report's figure of K, and give --n-clusters if the "
        "biology sets one."
    )


def test_a_method_twice_is_refused_and_params_one_method_ignores_are_said(
    tmp_path, blobs_adata, capsys
):
    """A fourth user trial: --method pcc twice ran PCC twice into one key, and
    --param divergence=l2 reached PCC but not PLA without a word."""
    src = tmp_path / "in.h5ad"
    blobs_adata.write_h5ad(src)
    out = str(tmp_path / "o.h5ad")
    args = ["run", str(src), "--out", out, "--no-figures", "--n-partitions", "6"]
    assert main([*args, "--method", "pcc", "--method", "pcc"]) == 2
    assert "--method pcc is given twice" in capsys.readouterr().err
    assert not os.path.exists(out)
    run = [*args, "--method", "pcc", "--method", "pla", "--param", "divergence=l2"]
    assert main([*run, "--n-clusters", "3"]) == 0
    printed = capsys.readouterr().out
    assert "note: --param divergence is used by pcc only (pla does not take it)" in printed
    assert ad.read_h5ad(out).uns["pcc"]["params"]["divergence"] == "l2"


def test_a_measurement_as_truth_is_refused_before_the_run(tmp_path, capsys):
    """A user trial: --truth n_genes ran the ensemble and PCC, wrote the output, and only
    then was refused as a measurement."""
    import scanpy as sc

    src = tmp_path / "in.h5ad"
    sc.datasets.pbmc68k_reduced().write_h5ad(src)
    out = tmp_path / "o.h5ad"
    assert main(["run", str(src), "--out", str(out), "--truth", "n_genes", "--no-figures"]) == 2
    assert "'n_genes' looks like a measurement" in capsys.readouterr().err
    assert not out.exists()


def test_results_of_the_input_are_computed_again_in_the_command_lines_words(tmp_path, capsys):
    """A user trial: a run on an earlier output said "overwriting .obs['pcc'] ...; pass
    another key_added", which the command line cannot; raw counts were advised "use_rep or
    layer" (it has --use-rep only); --ensemble-key X_pca wrote the labels as the PCA."""
    first, second = tmp_path / "a.h5ad", tmp_path / "b.h5ad"
    base = ["run", "--method", "pcc", "--n-partitions", "10", "--no-figures", "--no-progress"]
    assert main([*base, "iris", "--out", str(first)]) == 0
    capsys.readouterr()
    assert main([*base, str(first), "--out", str(second)]) == 0
    captured = capsys.readouterr()
    assert f"note: the input's pcc is computed again in {second}" in captured.out
    assert "key_added" not in captured.out + captured.err
    # another kind of record under a result's key is refused before any work (a review)
    ck = scc.datasets.iris()
    scc.tl.consensus_k(ck, max_k=3, reps=3, key_added="pcc")
    ck.write_h5ad(first)
    assert main([*base, str(first), "--out", str(second)]) == 2
    captured = capsys.readouterr()
    assert "error: The input holds a consensus-k result (tl.consensus_k" in captured.err
    assert "ensemble:" not in captured.out
    assert main([*base, "iris", "--ensemble-key", "pcc", "--out", str(second)]) == 2
    assert "--ensemble-key pcc is where a result of this run is stored" in capsys.readouterr().err
    assert main([*base, "iris", "--ensemble-key", "x_membership", "--out", str(second)]) == 2
    assert "ends in '_membership'" in capsys.readouterr().err
    # an input's coordinates named as its ensemble: refused before "ensemble: ..." is said
    assert main([*base, "pbmc68k_reduced", "--ensemble-key", "X_pca", "--out", str(second)]) == 2
    captured = capsys.readouterr()
    assert "holds float32 values, not an ensemble's cluster labels" in captured.err
    assert "ensemble:" not in captured.out
    counts = ad.AnnData(np.random.default_rng(0).poisson(200, (60, 8)).astype(np.float32))
    counts.write_h5ad(first)
    assert main([*base, str(first), "--out", str(second)]) == 0
    err = capsys.readouterr().err
    assert "looks like raw counts" in err and "pass --use-rep." in err and "layer" not in err
    # said once, though the ensemble and each method read the input (a user trial: twice)
    assert main([*base, str(first), "--method", "dpp", "--out", str(second)]) == 0
    assert capsys.readouterr().err.count("looks like raw counts") == 1
    assert main([*base, "iris", "--ensemble-key", "X_pca", "--out", str(second)]) == 2
    assert "error: --ensemble-key X_pca names a representation" in capsys.readouterr().err
