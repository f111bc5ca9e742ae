"""Missing R, rpy2 or R packages give an error naming what to install."""

from __future__ import annotations

import os
import shutil
import sys

import anndata as ad
import numpy as np
import pytest

from scconsensus.r import _errors
from scconsensus.r._errors import RDependencyError, install_hint


def _r_usable() -> bool:
    try:
        import rpy2.robjects  # noqa: F401
    except Exception:
        return False
    return shutil.which("Rscript") is not None


def _small():
    return ad.AnnData(np.random.default_rng(0).normal(size=(20, 5)))


@pytest.mark.slow
def test_import_does_not_need_r():
    # `import scconsensus` must not load rpy2 (an optional extra).
    import subprocess

    code = (
        "import sys, scconsensus as scc; assert 'rpy2' not in sys.modules; "
        "assert 'scconsensus.r' not in sys.modules; scc.r; print('ok')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_missing_r_is_named(monkeypatch):
    # What rpy2 raises when libR cannot be found.
    def no_r():
        raise OSError("cannot load library '/usr/lib/R/lib/libR.so'")

    monkeypatch.setattr(_errors, "_load_rpy2", no_r)
    monkeypatch.setattr(shutil, "which", lambda name: None)
    from scconsensus.r import consensus_cluster_plus

    with pytest.raises(RDependencyError, match="R is not installed") as info:
        consensus_cluster_plus(_small(), 3, 5)
    assert "apt-get install r-base-core" in str(info.value)
    assert isinstance(info.value, ImportError) and isinstance(info.value, ValueError)


def test_missing_rpy2_is_named(monkeypatch):
    monkeypatch.setitem(sys.modules, "rpy2.robjects", None)
    monkeypatch.setitem(sys.modules, "rpy2", None)
    from scconsensus.r import consensus_cluster_plus, to_sce

    with pytest.raises(
        RDependencyError, match=r"rpy2 is not installed: pip install 'scconsensus\[r\]'"
    ):
        consensus_cluster_plus(_small(), 3, 5)
    with pytest.raises(RDependencyError, match="rpy2 is not installed"):
        to_sce(_small())


def test_missing_bioconductor_package_is_named(monkeypatch):
    if not _r_usable():
        if os.environ.get("CI"):
            pytest.fail("R/rpy2 are required in CI (.ci/run installs them).")
        pytest.skip("R or rpy2 not installed")
    # A real lookup of a package that does not exist...
    with pytest.raises(RDependencyError) as info:
        _errors.require_r_package("NoSuchBiocPackageXyz")
    assert "BiocManager::install('NoSuchBiocPackageXyz')" in str(info.value)
    # ...and ConsensusClusterPlus reported missing, as on a machine without it.
    monkeypatch.setattr(_errors, "_has_r_package", lambda name: name != "ConsensusClusterPlus")
    from scconsensus.r import consensus_cluster_plus

    with pytest.raises(RDependencyError) as info:
        consensus_cluster_plus(_small(), 3, 5)
    assert str(info.value) == (
        "R package 'ConsensusClusterPlus' is not installed: apt-get install "
        "r-bioc-consensusclusterplus or BiocManager::install('ConsensusClusterPlus')."
    )


def test_install_hints():
    assert install_hint("reticulate") == (
        "apt-get install r-cran-reticulate or install.packages('reticulate')"
    )
    assert "r-bioc-singlecellexperiment" in install_hint("SingleCellExperiment")


def test_missing_rscript(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(RDependencyError, match="Rscript was not found"):
        _errors.require_rscript()
