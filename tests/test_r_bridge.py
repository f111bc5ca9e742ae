"""The R package in r_bridge/ (scconsensusR): its Python side, and its testthat suite run from R.

R is installed in CI: there a missing R fails these tests instead of skipping them.
"""

from __future__ import annotations

import filecmp
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import anndata as ad
import numpy as np
import pandas as pd
import pytest

from scconsensus import r_bridge as _bridge

ROOT = Path(__file__).resolve().parents[1]
R_BRIDGE = ROOT / "r_bridge"


def _require_rscript() -> str:
    path = shutil.which("Rscript")
    if path is None:
        if os.environ.get("CI"):
            pytest.fail("R is required in CI (.ci/run installs it).")
        pytest.skip("R not installed")
    return path


# ----------------------------------------------------------------- Python side (no R needed)


def test_names():
    assert _bridge.snake_case("nClusters") == "n_clusters"
    assert _bridge.snake_case("n.clusters") == "n_clusters"
    assert _bridge.snake_case("n_clusters") == "n_clusters"
    assert _bridge.snake_case("kMax") == "k_max"
    assert _bridge.camel_case("feature_subsample") == "featureSubsample"
    assert _bridge.camel_case("tau") == "tau"


def test_old_module_name_is_the_bridge():
    """An R package installed before the rename imports scconsensus.r._bridge."""
    import scconsensus.r._bridge as old

    for name in _bridge.__all__:
        assert getattr(old, name) is getattr(_bridge, name)


def test_convert_kwargs_coerces_whole_floats_where_ints_are_expected():
    def f(adata, n: int = 3, k=(2, 20), frac: float = 0.5, res=(0.2, 2.0), m: int | None = None,
          flag: bool = False, copy: bool = False):  # fmt: skip
        pass

    out = _bridge.convert_kwargs(
        f, {"n": 5.0, "k": (2.0, 6.0), "frac": 1.0, "res": (1.0, 2.0), "m": 4.0, "flag": True}
    )
    assert out == {"n": 5, "k": (2, 6), "frac": 1.0, "res": (1.0, 2.0), "m": 4, "flag": True}
    assert type(out["n"]) is int and type(out["k"][0]) is int
    assert type(out["frac"]) is float and type(out["res"][0]) is float
    assert _bridge.convert_kwargs(f, {"n": 2.5}) == {"n": 2.5}  # not whole: Python will refuse
    with pytest.raises(ValueError, match=r"f\(\) has no argument 'nClustres'\. Arguments: n, k"):
        _bridge.convert_kwargs(f, {"nClustres": 3})
    with pytest.raises(ValueError, match="has no argument 'copy'"):
        _bridge.convert_kwargs(f, {"copy": True})
    with pytest.raises(ValueError, match="given twice"):
        _bridge.convert_kwargs(f, {"m": 1, "M": 2})


def test_convert_kwargs_lists_become_tuples_only_where_python_takes_only_tuples():
    def f(
        adata,
        k: int | tuple[int, int] | Sequence[int] = (2, 20),
        resolution: tuple[float, float] = (0.2, 2.0),
        grid=(0.1, 1.0),
        names: list | None = None,
    ):
        pass

    out = _bridge.convert_kwargs(
        f, {"k": [2.0, 3.0, 4.0], "resolution": [0.5, 1.0], "grid": [1.0], "names": ["a"]}
    )
    assert out == {"k": [2, 3, 4], "resolution": (0.5, 1.0), "grid": (1.0,), "names": ["a"]}
    assert _bridge.convert_kwargs(f, {"k": (2.0, 5.0)})["k"] == (2, 5)  # sccRange()


def test_run_hands_back_warnings_and_silences_progress(blobs, capfd):
    X, _ = blobs
    adata = _bridge.make_adata(X)
    ens = np.zeros((X.shape[0], 4), dtype=np.int32)
    ens[: X.shape[0] // 2] = 1
    ens[0] = -1  # item 0 in no partition: PLA warns
    out = _bridge.run("pla", adata, {"nClusters": 2.0, "lam": 0.0}, ens, None, False)
    assert any("in no partition" in w for w in out["warnings"])
    assert len(out["warnings"]) == len(set(out["warnings"]))
    capfd.readouterr()
    _bridge.run("ensemble", _bridge.make_adata(X), {"nPartitions": 25.0, "k": 2.0}, progress=False)
    _bridge.run("dpp", _bridge.make_adata(X), {"nRuns": 5.0}, progress=False)
    assert capfd.readouterr().err == ""
    _bridge.run("dpp", _bridge.make_adata(X), {"nRuns": 5.0}, progress=True)
    assert "runs" in capfd.readouterr().err
    assert _bridge.uses_ensemble("pcc") and _bridge.uses_ensemble("pla")
    assert not _bridge.uses_ensemble("dpp") and not _bridge.uses_ensemble("ensemble")


def test_run_hands_back_log_warnings_and_messages_in_order(blobs, capfd):
    """Issue 27, item 1: scanpy's log reaches R as conditions, not as text on stderr."""
    import scanpy as sc

    X, _ = blobs
    capfd.readouterr()
    level = sc.settings._root_logger.level
    # K = 6 from 2-cluster partitions: tl.pcc's plan logs a warning
    args = ("pcc", _bridge.make_adata(X), {"nClusters": 6.0}, None, {"nPartitions": 6.0, "k": 2.0})
    quiet = _bridge.run(*args, progress=False)
    loud = _bridge.run(*args, progress=False, verbose=True)
    assert capfd.readouterr().err == ""
    assert sc.settings._root_logger.level == level  # the logger is left as it was
    assert {e["type"] for e in quiet["conditions"]} == {"warning"}
    assert any("have about 6 clusters" in w for w in quiet["warnings"])
    kinds = [e["type"] for e in loud["conditions"]]
    assert "message" in kinds and "warning" in kinds
    texts = [e["message"] for e in loud["conditions"]]
    # in the order they arose: the plan is announced before its warning
    fit = next(i for i, t in enumerate(texts) if t.startswith("fitting"))
    assert fit < next(i for i, t in enumerate(texts) if "have about 6 clusters" in t)
    assert _bridge.defaults("ensemble")["k"] == "auto"
    assert "adata" not in _bridge.defaults("pcc") and "copy" not in _bridge.defaults("pcc")


def test_run_hands_back_a_log_warning_as_a_warning(blobs, monkeypatch):
    """The test above now sees a Python warning; scanpy's log warnings (here the first
    use of PCC's kernels) still reach R as warnings."""
    from scconsensus.tl import _pcc

    monkeypatch.setattr(_pcc, "kernels_cached", lambda: False)
    X, _ = blobs
    args = ("pcc", _bridge.make_adata(X), {"nClusters": 2.0}, None, {"nPartitions": 6.0, "k": 2.0})
    got = _bridge.run(*args, progress=False)
    assert any(w.startswith("first use of PCC: numba compiles") for w in got["warnings"])


def test_matrix_transport_and_encode():
    X = np.arange(12, dtype=np.float64).reshape(3, 4)
    spec = {"shape": [4, 3], "dtype": "float64", "data": bytearray(X.T.tobytes(order="F"))}
    np.testing.assert_array_equal(_bridge.decode_matrix({**spec, "transpose": True}), X)
    enc = _bridge.encode({"a": X, "b": np.int32(3), "c": pd.Categorical(["1", "0"])})
    assert enc["a"] == {"shape": [3, 4], "dtype": "float64", "data": X.ravel(order="F").tolist()}
    assert enc["b"] == 3 and type(enc["b"]) is int
    df = pd.DataFrame({"k": [2, 3], "v": [0.5, 1.0]})
    enc = _bridge.encode({"df": df, "s": pd.Series(pd.Categorical(["b", "a"]))})
    assert enc["df"]["columns"]["k"]["dtype"] == "int32"
    assert enc["s"] == {"levels": ["a", "b"], "values": ["b", "a"]}


def test_run_builds_the_ensemble_and_returns_only_builtins(blobs):
    X, y = blobs
    adata = _bridge.make_adata(X, [f"c{i}" for i in range(len(y))])
    out = _bridge.run(
        "pcc", adata, {"nClusters": 4.0}, None, {"nPartitions": 10.0, "k": (2.0, 5.0)}
    )
    assert out["key"] == "pcc" and out["keys"] == ["pcc"]
    assert {"pcc", "pcc_confidence", "pcc_entropy"} <= set(out["obs"])
    assert {"pcc_membership", "scc_ensemble"} <= set(out["obsm"])
    assert out["uns"]["pcc"]["params"]["n_clusters"] == 4
    assert out["uns"]["scc_ensemble"]["params"]["n_partitions"] == 10

    def builtins_only(v):
        if isinstance(v, dict):
            return all(isinstance(k, str) and builtins_only(x) for k, x in v.items())
        if isinstance(v, list):
            return all(builtins_only(x) for x in v)
        return v is None or type(v) in (str, int, float, bool)

    assert builtins_only(out)
    from scconsensus.metrics import adjusted_rand_index

    labels = out["obs"]["pcc"]["values"]
    # three blobs at nClusters = 4 (a maximum): the k = 4, 5 partitions may split one
    assert adjusted_rand_index(y, labels) > 0.8
    with pytest.raises(ValueError, match=r"scconsensus\.tl\.nosuch does not exist"):
        _bridge.run("nosuch", ad.AnnData(X))


def test_run_names_every_key_of_several_k(blobs):
    """R's nClusters = c(2, 4) reaches tl.pcc as a list: every K's key comes back."""
    X, y = blobs
    adata = _bridge.make_adata(X, [f"c{i}" for i in range(len(y))])
    ens = {"nPartitions": 10.0, "k": (2.0, 5.0)}
    out = _bridge.run("pla", adata, {"nClusters": [4.0, 2.0]}, None, ens)
    assert out["keys"] == ["pla_k4", "pla_k2"] and out["key"] == "pla_k4"  # as given
    assert {"pla_k2_membership", "pla_k4_membership"} <= set(out["obsm"])
    out = _bridge.run("ensemble", _bridge.make_adata(X, None), ens)
    assert out["keys"] == [] and out["key"] is None


# ----------------------------------------------------------------- R side


@pytest.fixture(scope="module")
def r_library(tmp_path_factory):
    _require_rscript()
    lib = tmp_path_factory.mktemp("rlib")
    proc = subprocess.run(
        ["R", "CMD", "INSTALL", "--no-test-load", "-l", str(lib), str(R_BRIDGE)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return lib


@pytest.mark.slow
def test_testthat_suite_is_green(r_library, tmp_path):
    """Run r_bridge/tests/testthat against the installed package and this Python.

    Among them test-readme.R, which runs the R code of README.md (section "R and
    Bioconductor") and r_bridge/README.md, found through SCCONSENSUS_ROOT.
    """
    summary = tmp_path / "summary.csv"
    script = f"""
        .libPaths(c({str(r_library)!r}, .libPaths()))
        suppressPackageStartupMessages({{library(testthat); library(scconsensusR)}})
        ok <- sccAvailable()
        if (!isTRUE(ok)) stop("scconsensus not available: ", attr(ok, "reason"))
        r <- as.data.frame(test_dir({str(R_BRIDGE / "tests" / "testthat")!r},
                                    reporter = "summary", stop_on_failure = FALSE))
        write.csv(r[, c("file", "test", "nb", "failed", "skipped", "error", "warning",
                        "passed")], {str(summary)!r}, row.names = FALSE)
    """
    env = {
        **os.environ,
        "RETICULATE_PYTHON": sys.executable,
        "NUMBA_NUM_THREADS": "1",
        "SCCONSENSUS_ROOT": str(ROOT),
    }
    proc = subprocess.run(
        ["Rscript", "-e", script], capture_output=True, text=True, timeout=900, env=env,
        cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0 and summary.exists(), proc.stdout[-4000:] + proc.stderr[-4000:]
    res = pd.read_csv(summary)
    failing = res[(res["failed"] > 0) | res["error"] | res["skipped"]]
    assert failing.empty, f"{failing}\n{proc.stdout[-4000:]}"
    assert len(res) >= 10 and res["passed"].sum() >= 50
    # Every user-facing function is exercised.
    text = "".join(p.read_text() for p in (R_BRIDGE / "tests" / "testthat").glob("test-*.R"))
    for fn in ("ensemble(", "pcc(", "pla(", "dpp(", "PCCParam(", "PLAParam(", "DPPParam(",
               "clusterSweep(", "clusterCells(", "sccRange("):  # fmt: skip
        assert fn in text
    # issue 14: every Bioconductor-side item is pinned, and the READMEs run
    tests = set(res["test"])
    for item in range(1, 6):
        assert any(f"(item {item})" in t for t in tests), item
    assert {"test-bluster.R", "test-readme.R"} <= set(res["file"])


@pytest.mark.slow
def test_roxygen_pages_are_up_to_date(tmp_path):
    """man/ and NAMESPACE are generated by roxygen2 from R/ and committed: they must match."""
    _require_rscript()
    copy = tmp_path / "r_bridge"
    shutil.copytree(R_BRIDGE, copy)
    proc = subprocess.run(
        ["Rscript", "-e", f"roxygen2::roxygenise({str(copy)!r})"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    for name in ("NAMESPACE", *sorted(p.name for p in (R_BRIDGE / "man").glob("*.Rd"))):
        rel = name if name == "NAMESPACE" else f"man/{name}"
        assert filecmp.cmp(R_BRIDGE / rel, copy / rel, shallow=False), f"{rel} is stale"
    generated = sorted(p.name for p in (copy / "man").glob("*.Rd"))
    assert generated == sorted(p.name for p in (R_BRIDGE / "man").glob("*.Rd"))
    for fn in ("ensemble", "pcc", "pla", "dpp", "PCCParam", "sccRange"):
        assert f"{fn}.Rd" in generated


def _r_blocks(path: Path) -> list[str]:
    return re.findall(r"^```r\n(.*?)^```$", path.read_text(), flags=re.M | re.S)


@pytest.mark.slow
def test_readme_r_setup_works_in_a_fresh_session(r_library, tmp_path):
    """Issue 27, item 7: the READMEs' R setup, as written, finds the Python with scconsensus.

    A new R process without RETICULATE_PYTHON runs r_bridge/README.md's setup block and
    the repository README's R block (on data made in R first), so that the setup line is
    what points reticulate at this Python (the python3 on the PATH, as tools/setup.sh).
    """
    setup = _r_blocks(R_BRIDGE / "README.md")[0]
    readme = next(b for b in _r_blocks(ROOT / "README.md") if "RETICULATE_PYTHON" in b)
    data = """
        set.seed(7)
        x <- do.call(cbind, lapply(c(0, 4, 8), function(m) matrix(rnorm(400, m), 20)))
        dimnames(x) <- list(paste0("g", 1:20), paste0("s", 1:60))
        sce <- SingleCellExperiment::SingleCellExperiment(list(logcounts = x))
        SingleCellExperiment::reducedDim(sce, "PCA") <- prcomp(t(x))$x[, 1:5]
    """
    script = tmp_path / "setup.R"
    script.write_text(
        f".libPaths(c({str(r_library)!r}, .libPaths()))\n{data}\n{setup}\n"
        "stopifnot(isTRUE(sccAvailable()))\n"
        f"{readme}\nstopifnot(nlevels(res$labels) == 3L, 'pcc' %in% names(colData(sce)))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "RETICULATE_PYTHON"}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    proc = subprocess.run(
        ["Rscript", str(script)], capture_output=True, text=True, timeout=600, env=env,
        cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]


def test_the_ensemble_a_method_builds_is_seeded_by_its_random_state(blobs):
    """A docs audit: R's pcc(x, randomState = 5) built its ensemble with seed 0, where the
    help says ensemble(x) and the ensemble pcc(x) builds are the same for the same seed."""
    X, _ = blobs
    ens = {"nPartitions": 6.0, "k": (2.0, 5.0)}
    built = _bridge.run(
        "pcc", _bridge.make_adata(X), {"randomState": 5.0, "nClusters": 2.0}, None, ens
    )
    alone = _bridge.make_adata(X)
    _bridge.run("ensemble", alone, {**ens, "randomState": 5.0}, progress=False)
    seed0 = _bridge.make_adata(X)
    _bridge.run("ensemble", seed0, ens, progress=False)
    sent = built["obsm"]["scc_ensemble"]
    ours = np.reshape(sent["data"], sent["shape"], order="F")
    np.testing.assert_array_equal(ours, alone.obsm["scc_ensemble"])
    assert not np.array_equal(alone.obsm["scc_ensemble"], seed0.obsm["scc_ensemble"])
