import anndata as ad
import pytest

from scconsensus.cli import main


def test_bad_input_file(tmp_path, capsys):
    with pytest.raises(SystemExit, match="neither a file"):
        main(["run", str(tmp_path / "missing.h5ad"), "--out", str(tmp_path / "o.h5ad")])


def test_bad_param(tmp_path, blobs_adata):
    src = tmp_path / "in.h5ad"
    blobs_adata.write_h5ad(src)
    with pytest.raises(SystemExit):
        main(["run", str(src), "--out", str(tmp_path / "o.h5ad"), "--param", "oops"])


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
