"""Hostile input: every defect of the audit (issue 13) pinned by its reproduction.

Each numbered test is one item of the audit (item 6, PLA's duplicate components, is
tested with PLA's choice of K). A failing call must name the problem and the fix and
leave the AnnData exactly as it was; the fuzz test at the end checks that random small
inputs end in a result or one of the documented exceptions, never an internal one.
"""

from __future__ import annotations

import os
import subprocess
import sys

import anndata as ad
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from _helpers import assert_unchanged, fails_cleanly, scanpy_log
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import scconsensus as scc
from scconsensus.cli import main
from scconsensus.r import RDependencyError


def _has_r() -> bool:
    try:
        scc.r.require_r_package("ConsensusClusterPlus")
    except RDependencyError:
        return False
    return True


needs_r = pytest.mark.skipif(
    os.environ.get("SCC_SKIP_R") == "1" or not _has_r(), reason="R not available"
)


@pytest.fixture(scope="module")
def small():
    """40 items in 3 groups, with an ensemble: the shared starting point."""
    rng = np.random.default_rng(0)
    truth = np.repeat([0, 1, 2], [14, 13, 13])
    X = rng.normal(scale=4.0, size=(3, 5))[truth] + rng.standard_normal((40, 5))
    a = ad.AnnData(X, obs=pd.DataFrame({"truth": pd.Categorical(truth.astype(str))}))
    a.obs_names = [f"c{i}" for i in range(40)]
    scc.tl.ensemble(a, 8, k=(2, 4), random_state=0)
    return a


@pytest.fixture
def adata(small):
    return small.copy()


# ------------------------------------------------------------------ "unchanged" check


def _fails_cleanly(fn, adata, match, *args, **kwargs):
    """``fn(adata, ...)`` raises ValueError/MemoryError matching ``match``; adata untouched."""
    fails_cleanly(fn, adata, match, *args, raises=(ValueError, MemoryError), **kwargs)


# --------------------------------------------------------------------- item 1: R_HOME


@pytest.mark.slow
@needs_r
def test_01_bad_r_home_raises_instead_of_killing_python(tmp_path):
    code = (
        "import scconsensus as scc\n"
        "try:\n"
        "    scc.r.consensus_cluster_plus(scc.datasets.iris(), max_k=3, reps=3)\n"
        "except scc.r.RDependencyError as err:\n"
        "    print('caught:', err)\n"
    )
    env = {**os.environ, "R_HOME": "/nonexistent/R"}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=tmp_path
    )
    assert out.returncode == 0, out.stderr  # the process survives
    assert "caught: R cannot start" in out.stdout
    assert "R_HOME is set to '/nonexistent/R'" in out.stdout


# ------------------------------------------------------------- items 2, 3, 12: keys

WRITERS = {
    "ensemble": lambda a, key: scc.tl.ensemble(a, 3, k=3, key_added=key),
    "coassociation": lambda a, key: scc.tl.coassociation(a, key_added=key),
    "pcc": lambda a, key: scc.tl.pcc(a, n_clusters=3, n_init=1, key_added=key),
    "pla": lambda a, key: scc.tl.pla(a, n_clusters=3, key_added=key),
    "dpp": lambda a, key: scc.tl.dpp(a, n_runs=5, key_added=key),
    "consensus_k": lambda a, key: scc.tl.consensus_k(a, max_k=3, reps=3, key_added=key),
    "pla_transfer": lambda a, key: scc.tl.pla_transfer(a, a, key="pla", key_added=key),
}


@pytest.mark.parametrize("key", ["a/b", "e/1"])
@pytest.mark.parametrize("name", sorted(WRITERS))
def test_02_slash_in_key_is_refused_before_writing(adata, name, key, tmp_path):
    if name == "pla_transfer":
        scc.tl.pla(adata, n_clusters=3)
    _fails_cleanly(WRITERS[name], adata, "contains '/'", key)
    path = tmp_path / "still_readable.h5ad"
    adata.write_h5ad(path)
    ad.read_h5ad(path)


@pytest.mark.parametrize("key", [None, 3, "", "  "])
@pytest.mark.parametrize("name", sorted(WRITERS))
def test_03_non_string_key_writes_nothing(adata, name, key):
    if name == "pla_transfer" and key is None:
        pytest.skip("key_added=None means 'the reference key' for pla_transfer")
    if name == "pla_transfer":
        scc.tl.pla(adata, n_clusters=3)
    _fails_cleanly(WRITERS[name], adata, "non-empty string", key)


# ------------------------------------------------------------------ item 4: typos


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"p_items": 0.5}, "'p_items' \\(did you mean 'p_item'\\?\\)"),
        ({"bogus_kw": 1}, "unknown argument\\(s\\) 'bogus_kw'"),
        ({"mode": "sparse"}, "unknown argument\\(s\\) 'mode'"),
        ({"methods": "kmeans"}, "'methods' \\(did you mean 'method'\\?\\)"),
        ({"n_neighbors": 5}, "method='hc' does not use"),
    ],
)
def test_04_unknown_names_raise_with_a_suggestion(adata, kwargs, match):
    _fails_cleanly(scc.tl.consensus_k, adata, match, max_k=3, reps=3, **kwargs)


def test_04_cli_unknown_param_raises(tmp_path, capsys):
    out = tmp_path / "o.h5ad"
    args = ["run", "iris", "--out", str(out), "--method", "pcc", "--no-figures"]
    assert main([*args, "--param", "foo=1"]) == 2
    assert main([*args, "--param", "n_inits=2"]) == 2
    err = capsys.readouterr().err
    assert "unknown argument(s) 'foo'" in err and "did you mean 'n_init'?" in err
    assert not out.exists()


# ---------------------------------------------------------------- item 5: max_k=2


@needs_r
def test_05_ccp_max_k_2_works(adata):
    scc.r.consensus_cluster_plus(adata, max_k=2, reps=5, use_rep="X", distance="euclidean")
    uns = adata.uns["ccp"]
    assert list(uns["k"]) == [2] and uns["cdf"].shape == (1, 100)
    assert set(uns["cluster_consensus"]["k"]) == {2}
    assert adata.obs["ccp_k2"].cat.categories.tolist() == ["0", "1"]
    assert "ccp_k3" not in adata.obs and uns["params"]["r_max_k"] == 3


# ----------------------------------------------------------------- item 7: k types


@pytest.mark.parametrize("k", ["25", "10", ("2", "5"), ["3", 4]])
def test_07_string_k_is_refused(adata, k):
    _fails_cleanly(scc.tl.ensemble, adata, "not the string", 3, k=k, key_added="e")


@pytest.mark.parametrize(
    ("fn", "kwargs"),
    [
        (scc.tl.ensemble, {"n_partitions": 3, "k": 2.0, "key_added": "e"}),
        (scc.tl.ensemble, {"n_partitions": 3.0, "k": (2.0, 3.0), "key_added": "e"}),
        (scc.tl.dpp, {"n_runs": 5.0}),
        (scc.tl.pcc, {"n_clusters": 3.0, "n_init": 1}),
        (scc.tl.consensus_k, {"max_k": 3.0, "reps": 3.0}),
    ],
)
def test_07_integral_floats_are_accepted_everywhere(adata, fn, kwargs):
    def written():
        return set(adata.obs) | set(adata.obsm) | set(adata.uns)

    before = written()
    assert fn(adata, **kwargs) is None
    assert written() > before  # the result was stored, in place


@pytest.mark.parametrize(
    ("fn", "kwargs"),
    [
        (scc.tl.dpp, {"n_runs": "5"}),
        (scc.tl.pcc, {"n_clusters": "3"}),
        (scc.tl.consensus_k, {"max_k": "3"}),
        (scc.tl.ensemble, {"n_partitions": "3"}),
    ],
)
def test_07_string_counts_are_refused(adata, fn, kwargs):
    _fails_cleanly(fn, adata, "string|integer", **kwargs)


@pytest.mark.parametrize("method", ["pcc", "pla"])
@pytest.mark.parametrize(
    ("n_clusters", "match"),
    [
        ([], "names no number of clusters"),
        ([3, 3], "K=3 more than once"),
        ((2, 40), r"n_clusters\[1\]=40 is too large for 40 items"),
        ([1, 3], r"n_clusters\[0\] must be at least 2"),
        (["auto", 3], "a list holds integers only"),
        ([3, 2.5], r"n_clusters\[1\] must be an integer"),
        (np.array([], dtype=int), "names no number of clusters"),
    ],
)
def test_07_a_list_of_k_is_checked_whole_before_any_fit(adata, method, n_clusters, match):
    _fails_cleanly(getattr(scc.tl, method), adata, match, n_clusters=n_clusters)


# ---------------------------------------------------------- item 8: memory message


@pytest.fixture
def low_limit(monkeypatch):
    monkeypatch.setattr(scc.settings, "max_dense_bytes", 1000)


@pytest.mark.parametrize(
    ("fn", "kwargs"),
    [
        (scc.tl.consensus_k, {"max_k": 3, "reps": 3}),
        (scc.r.consensus_cluster_plus, {"max_k": 3, "reps": 3, "distance": "euclidean"}),
        (scc.pl.consensus_heatmap, {"key": "scc_ensemble", "show": False}),
    ],
)
def test_08_memory_message_sizes_and_advice(low_limit, adata, fn, kwargs):
    before = adata.copy()
    with pytest.raises(MemoryError) as info:
        fn(adata, **kwargs)
    message = str(info.value)
    assert "0.0 GiB" not in message and "1000 bytes" in message
    assert "KiB" in message
    assert "mode='sparse'" not in message.split(". ")[1]  # no advice they cannot follow
    assert_unchanged(before, adata)
    plt.close("all")


@pytest.mark.parametrize("value", ["10", None, 1.5, True])
def test_08_bad_settings_value_is_refused_at_assignment(value):
    old = scc.settings.max_dense_bytes
    with pytest.raises(ValueError, match="max_dense_bytes must be"):
        scc.settings.max_dense_bytes = value
    assert scc.settings.max_dense_bytes == old


# ------------------------------------------------------------------- item 9: CLI


@pytest.mark.parametrize(
    ("name", "content", "match"),
    [("bad.h5ad", b"not hdf5", "Cannot read"), ("data.csv", b"a,b\n1,2\n", "not an .h5ad")],
)
def test_09_cli_unreadable_input_is_one_line(tmp_path, capsys, name, content, match):
    path = tmp_path / name
    path.write_bytes(content)
    assert main(["run", str(path), "--out", str(tmp_path / "o.h5ad")]) == 2
    err = capsys.readouterr().err.strip()
    assert match in err and len(err.splitlines()) == 1 and "Traceback" not in err


@pytest.mark.parametrize(
    "bad",
    [
        ["--n-clusters", "0"],
        ["--n-partitions", "0"],
        ["--subsample", "0"],
        ["--n-jobs", "0"],
        ["--k", "1,x"],
        ["--ensemble-method", "kmeanz"],
        ["--ensemble-key", "a/b"],
    ],
)
def test_09_cli_arguments_checked_before_any_work(tmp_path, capsys, bad):
    out = tmp_path / "o.h5ad"
    assert main(["run", "iris", "--out", str(out), "--no-figures", *bad]) == 2
    captured = capsys.readouterr()
    assert "ensemble:" not in captured.out  # refused before the ensemble was built
    assert captured.err.startswith("scconsensus: error:") and not out.exists()


# ------------------------------------------------------- item 10: advice that exists


@pytest.mark.parametrize(
    ("fn", "n", "kwargs"),
    [
        (scc.tl.ensemble, 3, {"n_partitions": 3, "k": 2}),
        (scc.tl.consensus_k, 3, {"max_k": 3, "reps": 3}),
        (scc.tl.ensemble, 40, {"n_partitions": 3, "k": 2, "subsample": 0.001}),
    ],
)
def test_10_no_impossible_advice(adata, fn, n, kwargs):
    a = adata[:n].copy()
    before = a.copy()
    with pytest.raises(ValueError) as info:
        fn(a, **kwargs)
    assert "< 2" not in str(info.value) and "at least 3 items" in str(info.value)
    assert_unchanged(before, a)


# --------------------------------------------------------------- item 11: min_mass


@pytest.mark.slow
def test_11_min_mass_too_large_is_a_clear_error(adata):
    _fails_cleanly(scc.tl.pcc, adata, "min_mass=1e\\+09 must lie in \\[0, 40\\)", min_mass=1e9)
    # above every cluster but below n: the largest cluster is kept, not a division by zero
    scc.tl.pcc(adata, n_clusters=3, n_init=1, min_mass=39, divergence="l2")
    assert adata.obs["pcc"].nunique() == 1
    # under KL one cluster says that items some partition split are always together (an
    # infinite objective): the fewest dropped clusters that make it finite stay
    scc.tl.pcc(adata, n_clusters=3, n_init=1, min_mass=39)
    assert np.isfinite(adata.uns["pcc"]["objective"])
    np.testing.assert_allclose(adata.obsm["pcc_membership"].sum(axis=1), 1.0)


# ------------------------------------------------------ item 12: silent overwrites


@pytest.mark.parametrize("key", ["pcc", "truth"])
def test_12_overwrite_is_logged(adata, key):
    if key == "pcc":
        scc.tl.pcc(adata, n_clusters=3, n_init=1)
    with scanpy_log() as log:
        scc.tl.pcc(adata, n_clusters=3, n_init=1, key_added=key)
    assert f"overwriting .obs[{key!r}]" in log.getvalue()


def test_12_no_warning_for_new_key(adata):
    with scanpy_log() as log:
        scc.tl.pcc(adata, n_clusters=3, n_init=1, key_added="fresh")
    assert "overwriting" not in log.getvalue()


@pytest.mark.parametrize("method", ["pcc", "pla"])
def test_12_never_sampled_item_has_no_label(adata, method):
    adata.obsm["scc_ensemble"][0] = -1
    getattr(scc.tl, method)(adata, n_clusters=3)
    membership = adata.obsm[f"{method}_membership"]
    np.testing.assert_allclose(membership[0], 1 / membership.shape[1])
    assert pd.isna(adata.obs[method].iloc[0])
    assert adata.obs[method].iloc[1:].notna().all()


# --------------------------------------------------------- item 13: n_jobs, Pearson


@pytest.mark.parametrize(
    ("fn", "kwargs"),
    [
        (scc.tl.ensemble, {"n_partitions": 3, "k": 3}),
        (scc.tl.consensus_k, {"max_k": 3, "reps": 3}),
    ],
)
def test_13_n_jobs_zero_is_ours(adata, fn, kwargs):
    _fails_cleanly(fn, adata, "n_jobs=0 asks for no workers", n_jobs=0, **kwargs)


@pytest.mark.parametrize("fn", [scc.tl.consensus_k, scc.r.consensus_cluster_plus])
def test_13_constant_row_under_pearson_refused_alike(adata, fn):
    adata.X[3] = 1.0
    _fails_cleanly(fn, adata, "constant across features", max_k=3, reps=3, use_rep="X")


# ------------------------------------------- every public function: failure = no change


def _with_results(a):
    a.layers["counts"] = a.X.copy()
    scc.tl.pcc(a, n_clusters=3, n_init=1)
    scc.tl.pla(a, n_clusters=3)
    return a


FAILING_CALLS = {
    "tl.coassociation": (scc.tl.coassociation, {"ensemble_key": "missing"}),
    "tl.compare": (scc.tl.compare, {"keys": ["missing"]}),
    "tl.consensus_k": (scc.tl.consensus_k, {"max_k": 3, "p_items": 0.5}),
    "tl.dpp": (scc.tl.dpp, {"n_runs": 0}),
    "tl.ensemble": (scc.tl.ensemble, {"k": "25"}),
    "tl.k_null": (scc.tl.k_null, {"n_null": 0}),
    "tl.pcc": (scc.tl.pcc, {"min_mass": 1e9}),
    "tl.pla": (scc.tl.pla, {"n_clusters": 3, "key_added": 3}),
    "tl.pla_transfer": (lambda a, **kw: scc.tl.pla_transfer(a, a, **kw), {"key": "nope"}),
    "pl.calibration": (scc.pl.calibration, {"keys": "missing", "show": False}),
    "pl.cluster_graph": (scc.pl.cluster_graph, {"key": "missing", "show": False}),
    "pl.confidence": (scc.pl.confidence, {"key": "missing", "show": False}),
    "pl.consensus_cdf": (scc.pl.consensus_cdf, {"key": "missing", "show": False}),
    "pl.consensus_heatmap": (scc.pl.consensus_heatmap, {"key": "missing", "show": False}),
    "pl.delta_area": (scc.pl.delta_area, {"key": "missing", "show": False}),
    "pl.k_selection": (scc.pl.k_selection, {"key": "missing", "show": False}),
    "pl.membership": (scc.pl.membership, {"key": "missing", "show": False}),
    "pl.pac": (scc.pl.pac, {"key": "missing", "show": False}),
    "r.consensus_cluster_plus": (scc.r.consensus_cluster_plus, {"max_k": 1}),
    "r.to_sce": (scc.r.to_sce, {"x_assay": "counts"}),  # also a layer name
}
# helpers and error classes of scconsensus.r, not functions taking an AnnData
NOT_ADATA = {"r.RDependencyError", "r.require_r_package", "r.require_rpy2", "r.from_sce"}


def test_every_public_function_has_a_failing_call():
    public = {f"{mod}.{name}" for mod in ("tl", "pl", "r") for name in getattr(scc, mod).__all__}
    assert public - NOT_ADATA == set(FAILING_CALLS)


@pytest.mark.parametrize("name", sorted(FAILING_CALLS))
def test_failing_call_leaves_adata_unchanged(small, name):
    fn, kwargs = FAILING_CALLS[name]
    a = _with_results(small.copy())
    before = a.copy()
    with pytest.raises((ValueError, KeyError, TypeError, MemoryError)):
        fn(a, **kwargs)
    assert_unchanged(before, a)
    plt.close("all")


# ---------------------------------------------------------------------------- fuzz

DOCUMENTED = (ValueError, TypeError, MemoryError, RDependencyError)
# Python's own wording: a documented type, but raised from deep inside instead of checked
PYTHON_MESSAGES = (
    "truth value of an array",
    "object is not iterable",
    "invalid literal for",
    "argument must be a string",
    "unsupported operand",
    "not subscriptable",
)

# values a careless or hostile caller might pass to any argument
ANY_VALUE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 60),
    st.sampled_from([0.0, 0.5, 1.0, 2.5, -1.0, 1e9, float("nan"), float("inf")]),
    st.sampled_from(["", "3", "a/b", "auto", "sparse", "dense", "kmeans", "x"]),
    st.tuples(st.integers(-1, 8), st.integers(-1, 8)),
)
FUZZ_ARGS = {
    "ensemble": ("n_partitions", "method", "k", "subsample", "key_added", "n_neighbors"),
    "pcc": ("n_clusters", "mode", "n_init", "min_mass", "tol", "key_added", "max_iter"),
    "pla": ("n_clusters", "mode", "weighted", "key_added", "fit_size", "lam", "max_iter", "tol"),
    "dpp": ("n_runs", "sampler", "a", "tau", "s", "mode", "key_added", "k_max"),
}


@st.composite
def _case(draw, name):
    n = draw(st.integers(2, 14))
    p = draw(st.integers(1, 4))
    seed = draw(st.integers(0, 2**16))
    names = draw(st.lists(st.sampled_from(FUZZ_ARGS[name]), max_size=3, unique=True))
    kwargs = {arg: draw(ANY_VALUE) for arg in names}
    return n, p, seed, kwargs


@pytest.mark.parametrize("name", sorted(FUZZ_ARGS))
@settings(
    max_examples=15,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_fuzz_results_or_documented_errors(name, data):
    n, p, seed, kwargs = data.draw(_case(name))
    rng = np.random.default_rng(seed)
    a = ad.AnnData(rng.normal(size=(n, p)))
    if name != "ensemble":
        labels = rng.integers(-1, 3, size=(n, 4)).astype(np.int32)
        a.obsm["scc_ensemble"] = labels
    if name == "pcc":
        kwargs.setdefault("n_init", 1)
    if name == "dpp":
        kwargs.setdefault("n_runs", 5)
    if name == "ensemble":
        kwargs.setdefault("n_partitions", 3)
        kwargs.setdefault("k", (2, 3))  # the default (2, 20) is too large for these sizes
    before = a.copy()
    try:
        getattr(scc.tl, name)(a, **kwargs)
    except DOCUMENTED as err:
        assert str(err), f"{type(err).__name__} without a message"
        assert not any(m in str(err) for m in PYTHON_MESSAGES), str(err)
        assert_unchanged(before, a)
