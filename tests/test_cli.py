import anndata as ad
import pytest

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
