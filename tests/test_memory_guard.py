"""Dense n x n routes refuse above ``settings.max_dense_bytes``, naming the size and the
sparse option, before allocating anything; sparse routes carry on."""

from __future__ import annotations

import re

import numpy as np
import pytest
from anndata import AnnData

import scconsensus as scc
from scconsensus import settings
from scconsensus._memory_guard import dense_route_bytes
from scconsensus.core.coassociation import coassociation
from scconsensus.core.ensemble import PartitionOptions, generate_ensemble

N_ITEMS = 120


@pytest.fixture
def low_limit(monkeypatch):
    # 120 x 120 x 4 bytes x 3 (C, N, the product block) = 172,800 bytes: refused at 10 kB
    monkeypatch.setattr(settings, "max_dense_bytes", 10_000)


@pytest.fixture
def adata():
    rng = np.random.default_rng(0)
    truth = rng.integers(3, size=N_ITEMS)
    X = rng.normal(scale=5.0, size=(3, 4))[truth] + rng.standard_normal((N_ITEMS, 4))
    a = AnnData(X)
    a.obsm["X_pca"] = X.copy()
    scc.tl.ensemble(a, 12, k=(2, 5), random_state=0)
    return a


def _size_message(n: int, gib: str | None = None) -> str:
    # small sizes are given in KiB/MiB (or bytes), never as "0.0 GiB"
    size = r"\d+\.\d [KMG]iB" if gib is None else rf"{re.escape(gib)} GiB"
    return rf"{n} x {n}.*\({size}\).*mode='sparse'"


def test_real_size_is_named_without_allocating():
    # 200,000 items: the dense pair (2 x 200,000^2 int32) and a 2,048-row float32
    # product block would need 299.5 GiB; the default limit refuses it at once, with
    # the exact size
    labels = np.zeros((200_000, 2), dtype=np.int32)
    with pytest.raises(MemoryError, match=_size_message(200_000, "299.5")):
        coassociation(labels, "dense")


def test_dense_coassociation_refused(low_limit, adata):
    with pytest.raises(MemoryError, match=_size_message(N_ITEMS)):
        coassociation(adata.obsm["scc_ensemble"], "dense")
    before = set(adata.obsp)
    with pytest.raises(MemoryError, match=_size_message(N_ITEMS)):
        scc.tl.coassociation(adata, mode="dense")
    assert set(adata.obsp) == before  # nothing written on refusal
    # the sparse route named in the message works under the same limit
    scc.tl.coassociation(adata, mode="sparse")
    assert adata.uns["scc_coassoc"]["params"]["mode"] == "sparse"


def test_limit_is_configurable(monkeypatch, adata):
    need = dense_route_bytes("coassociation", N_ITEMS)  # C, N and the product block
    assert need == 2 * N_ITEMS**2 * 4 + N_ITEMS**2 * 4
    monkeypatch.setattr(settings, "max_dense_bytes", need)
    C, _ = coassociation(adata.obsm["scc_ensemble"], "dense")  # exactly at the limit: allowed
    assert C.shape == (N_ITEMS, N_ITEMS)
    monkeypatch.setattr(settings, "max_dense_bytes", need - 1)
    with pytest.raises(MemoryError, match="max_dense_bytes"):
        coassociation(adata.obsm["scc_ensemble"], "dense")


@pytest.mark.parametrize("method", ["hc", "hc_single", "hc_average", "hc_ward", "hc_centroid"])
def test_hierarchical_ensembles_refused(low_limit, method):
    X = np.random.default_rng(1).normal(size=(N_ITEMS, 3))
    n_sub = round(0.8 * N_ITEMS)
    # scipy's linkage forms the condensed distance matrix for every linkage
    size = _size_message(n_sub).replace("mode='sparse'", "method='kmeans'")
    with pytest.raises(MemoryError, match=rf"Hierarchical clustering.*{size}"):
        generate_ensemble(
            X, 4, method, k=3, progress=False, options=PartitionOptions(subsample=0.8)
        )


def test_pam_refused_kmeans_fine(low_limit):
    X = np.random.default_rng(2).normal(size=(N_ITEMS, 3))
    with pytest.raises(MemoryError, match=r"PAM.*method='kmeans'"):
        generate_ensemble(X, 2, "pam", k=3, progress=False)
    ens = generate_ensemble(X, 4, ["kmeans", "leiden"], k=3, progress=False)
    assert ens.labels.shape == (N_ITEMS, 4)


def test_auto_goes_sparse_and_says_so(monkeypatch, adata):
    import io

    import scanpy as sc

    monkeypatch.setattr(settings, "dense_auto_max_items", N_ITEMS - 1)
    verbosity, logfile = sc.settings.verbosity, sc.settings.logfile
    log = io.StringIO()
    sc.settings.verbosity, sc.settings.logfile = "info", log
    try:
        scc.tl.coassociation(adata)
        scc.tl.pcc(adata, n_clusters=3, n_init=1)
    finally:
        sc.settings.verbosity, sc.settings.logfile = verbosity, logfile
    assert adata.uns["scc_coassoc"]["params"]["mode"] == "sparse"
    assert adata.uns["pcc"]["route"] == "sparse"
    err = log.getvalue()
    assert f"mode='auto' chose the sparse route for {N_ITEMS} items" in err
    assert re.search(rf"sparse co-association on \d+ sampled pairs .* of {N_ITEMS} items", err)


def test_pcc_dense_refused_sparse_runs(low_limit, adata):
    with pytest.raises(MemoryError, match=_size_message(N_ITEMS)):
        scc.tl.pcc(adata, n_clusters=3, mode="dense")
    assert "pcc" not in adata.obs
    scc.tl.pcc(adata, n_clusters=3, mode="sparse", n_init=1)
    assert adata.uns["pcc"]["route"] == "sparse"


def test_pla_dense_refused(low_limit, adata):
    with pytest.raises(MemoryError, match=rf"{N_ITEMS} x {N_ITEMS}.*mode='sparse'"):
        scc.tl.pla(adata, n_clusters=3, mode="dense")
    assert "pla" not in adata.obs


def test_dpp_dense_refused(low_limit, adata):
    with pytest.raises(MemoryError, match=rf"{N_ITEMS} x {N_ITEMS}.*mode='sparse'"):
        scc.tl.dpp(adata, n_runs=5, mode="dense")
    assert "dpp" not in adata.obs


@pytest.mark.parametrize("method", ["pcc", "pla"])
def test_oversize_dense_route_refused_before_planning(monkeypatch, method):
    # 200,000 cells: PCC fits 10,000 items by default (its solver needs 4.5 GiB), PLA
    # 20,000; refused before the plan (K, partitions, start), not after ~12 s of it
    from scconsensus.core import _plan
    from scconsensus.core.pcc import _consensus as _pcc_consensus
    from scconsensus.core.pla import _consensus as _pla_consensus

    def no_plan(*args, **kwargs):
        raise AssertionError("planned before the memory check")

    for module in (_pcc_consensus, _plan, _pla_consensus):
        monkeypatch.setattr(module, "plan_consensus", no_plan, raising=False)
    monkeypatch.setattr(settings, "max_dense_bytes", 2 * 1024**3)
    a = AnnData(np.zeros((200_000, 1), dtype=np.float32))
    a.obsm["scc_ensemble"] = np.zeros((200_000, 2), dtype=np.int32)
    n = {"pcc": 10000, "pla": 20000}[method]
    with pytest.raises(MemoryError, match=rf"{n} x {n} working arrays.*\(\d+\.\d GiB\)"):
        getattr(scc.tl, method)(a, n_clusters=3, mode="dense")


def test_dense_dpp_counts_its_four_matrices(monkeypatch, adata):
    """A trial measured DPP's dense peak 1.35x the guard's three matrices
    (benchmarks/memory.py: 1.54 and 1.38 at 2,000 and 4,000 items; 1.16, 1.04 now)."""
    assert dense_route_bytes("dpp", N_ITEMS) == 4 * N_ITEMS**2 * 8
    monkeypatch.setattr(settings, "max_dense_bytes", 7 * N_ITEMS**2 * 4)  # 3.5 matrices
    with pytest.raises(MemoryError, match=_size_message(N_ITEMS)):
        scc.tl.dpp(adata, mode="dense", n_runs=5)
    assert "dpp" not in adata.obs


def test_the_limit_from_the_environment(tmp_path):
    """The command line has no Python session to set settings.max_dense_bytes in: the
    guard's advice there names SCCONSENSUS_MAX_DENSE_BYTES, read at import."""
    import os
    import subprocess
    import sys

    code = "import scconsensus; print(scconsensus.settings.max_dense_bytes)"
    env = {**os.environ, "SCCONSENSUS_MAX_DENSE_BYTES": "12345"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.strip() == "12345"
    env["SCCONSENSUS_MAX_DENSE_BYTES"] = "1e9"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.strip() == "1000000000"
    env["SCCONSENSUS_MAX_DENSE_BYTES"] = "12345678901234567891"  # exact, not through float
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.strip() == "12345678901234567891"
    # a bad value is said when the limit is read, and ignored: an error at import would end
    # every call in a traceback, `scconsensus --version` too (a trial)
    guard = (
        "import numpy as np, scconsensus; "
        "scconsensus.core.coassociation(np.zeros((5, 2), dtype=np.int32), 'dense'); " + code[20:]
    )
    for bad in ("8GB", "-5"):
        env["SCCONSENSUS_MAX_DENSE_BYTES"] = bad
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        assert out.returncode == 0 and out.stderr == ""  # nothing at import
        out = subprocess.run([sys.executable, "-c", guard], env=env, capture_output=True, text=True)
        assert out.returncode == 0 and out.stdout.strip() == str(4 * 1024**3)
        said = f"SCCONSENSUS_MAX_DENSE_BYTES={bad!r} is not a non-negative whole number of bytes"
        assert said in out.stderr


def test_the_command_line_advice_names_its_own_options(monkeypatch, tmp_path, capsys):
    from scconsensus.cli import main

    monkeypatch.setattr(settings, "max_dense_bytes", 10_000)
    argv = ["run", "iris", "--out", str(tmp_path / "o.h5ad"), "--no-figures", "--method", "pla"]
    # PCC's refusal comes before the ensemble and PLA (a trial lost PLA's 86 s to it)
    assert main([*argv, "--method", "pcc", "--param", "mode=dense", "--n-partitions", "5"]) == 2
    said = capsys.readouterr()
    assert "Dense PLA needs" in said.err and "ensemble:" not in said.out
    assert "Use --param mode=sparse (sampled pairs)" in said.err
    assert "environment variable SCCONSENSUS_MAX_DENSE_BYTES" in said.err
    assert "settings.max_dense_bytes" not in said.err and "mode='" not in said.err
    assert main([*argv[:-2], "--method", "pcc", "--param", "mode=dense"]) == 2
    assert "Dense PCC needs" in capsys.readouterr().err
    assert main([*argv[:-2], "--method", "dpp", "--param", "layer=counts"]) == 2
    assert "--param layer=counts: the input has no such layer" in capsys.readouterr().err
    from scconsensus._settings import ENV_PROBLEM

    ENV_PROBLEM.append("SCCONSENSUS_MAX_DENSE_BYTES='8GB' is not")  # as a bad value leaves it
    assert main([*argv, "--param", "mode=dense"]) == 2  # said as the command line's own
    assert (
        "scconsensus: warning: SCCONSENSUS_MAX_DENSE_BYTES='8GB' is not" in capsys.readouterr().err
    )
    assert main([*argv, "--param", "mode=sprase"]) == 2  # a typo costs no ensemble
    said = capsys.readouterr()
    assert "--param mode (for pla)" in said.err and "ensemble:" not in said.out
