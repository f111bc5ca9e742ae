"""The README's Python blocks run as written, so they cannot drift from the package.

The blocks share one namespace, as in a notebook, starting from the Quick start. A block
meant for data we do not ship refers to a name bound here first (``big``, ``adata_new``);
lines meant for huge data or a cluster are swapped for small ones in ``SMALL``, and every
swapped line must still be in the README.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import warnings
from contextlib import contextmanager
from pathlib import Path

import matplotlib.pyplot as plt
import pytest
import scanpy as sc

README = (Path(__file__).parents[1] / "README.md").read_text()

#: README line -> the line run instead (a size, not the call, changes).
SMALL = {
    "scc.tl.pla(big, n_clusters=10, fit_size=5000)  # fit on 5,000 cells, extend to the rest": (
        "scc.tl.pla(big, n_clusters=10, fit_size=300)"
    ),
    "client = Client(n_workers=4, threads_per_worker=1)": (
        "client = Client(n_workers=1, threads_per_worker=1, processes=False)"
    ),
}

#: Names the blocks use for data of the reader's own, bound to bundled data.
PRELUDE = """
import scconsensus as scc
big = scc.datasets.pbmc68k_reduced()
scc.tl.ensemble(big, 20, k=(5, 15))
adata_new = scc.datasets.pbmc68k_reduced()[:100].copy()  # X_pca in the reference's space
"""


def python_blocks() -> list[tuple[str, str]]:
    """``(section, code)`` of every ```python block, in order."""
    blocks, section = [], ""
    for part in re.split(r"(^#{2,3} .*$)", README, flags=re.M):
        if re.match(r"#{2,3} ", part):
            section = part.lstrip("# ").strip()
            continue
        blocks += [(section, code) for code in re.findall(r"```python\n(.*?)```", part, re.S)]
    return blocks


def small(code: str) -> str:
    for line, replacement in SMALL.items():
        code = code.replace(line, replacement)
    return code


def run(code: str, namespace: dict, where: str) -> None:
    exec(compile(small(code), f"README.md ({where})", "exec"), namespace)
    plt.close("all")


#: Sections whose blocks fit the ensemble they build (PLA's fits K=3 to the ensemble of
#: PCC's million-cell block, k=(20, 40), as a notebook run top to bottom would).
FIT_THEIR_OWN_ENSEMBLE = ("Quick start", "PCC", "How many groups")


@contextmanager
def scanpy_log():
    """What scanpy's logger writes (its warnings) during the block."""
    buffer, logfile = io.StringIO(), sc.settings.logfile
    sc.settings.logfile = buffer
    try:
        yield buffer
    finally:
        sc.settings.logfile = logfile


def test_substitutions_still_match_the_readme():
    for line in SMALL:
        assert line in README, f"README no longer has {line!r}: update SMALL"


@pytest.mark.slow
def test_scanpy_sections_run_as_written():
    namespace: dict = {}
    exec(PRELUDE, namespace)
    ran = []
    for section, code in python_blocks():
        if section.startswith(("R and Bioconductor", "Large data and Dask", "Choosing k")):
            continue  # below, each with what it needs
        with scanpy_log() as log, warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            run(code, namespace, section)
        if section.startswith(FIT_THEIR_OWN_ENSEMBLE):
            # an example that asks for a K its ensemble barely holds teaches the wrong habit
            said = log.getvalue() + "".join(str(w.message) for w in caught)
            assert "partition(s) have about" not in said, (section, said)
        if section.startswith("PCC"):  # the PLA block transfers onto this reference
            namespace["adata_ref"] = namespace["adata"]
        ran.append(section)
    assert ran[0] == "Quick start" and len(ran) >= 5, ran
    adata = namespace["adata"]
    assert {"pcc", "pla", "wpla", "dpp"} <= set(adata.obs)
    assert "pla" in namespace["adata_new"].obs


def _require_r() -> None:
    """As in test_r_ccp.py: skip without R and rpy2, except in CI."""
    try:
        import rpy2.robjects  # noqa: F401

        ok = shutil.which("Rscript") is not None
    except Exception:
        ok = False
    if not ok:
        if os.environ.get("CI"):
            pytest.fail("R/rpy2 are required in CI (.ci/run installs them).")
        pytest.skip("R or rpy2 not installed")


def _with_pcc() -> dict:
    namespace: dict = {}
    quick = next(code for section, code in python_blocks() if section == "Quick start")
    run(quick, namespace, "Quick start")
    return namespace


@pytest.mark.slow
def test_choosing_k_section_runs_as_written():
    _require_r()
    namespace = _with_pcc()
    code = next(code for section, code in python_blocks() if section.startswith("Choosing k"))
    run(code, namespace, "Choosing k")
    assert "consensus_k_labels" in namespace["adata"].obsm


@pytest.mark.slow
def test_r_section_runs_as_written():
    _require_r()
    namespace = _with_pcc()
    code = next(code for section, code in python_blocks() if section == "R and Bioconductor")
    run(code, namespace, "R and Bioconductor")
    assert namespace["adata2"].n_obs == namespace["adata"].n_obs


@pytest.mark.slow
def test_dask_section_runs_as_written():
    pytest.importorskip("dask.distributed")
    namespace = _with_pcc()
    code = next(code for section, code in python_blocks() if section == "Large data and Dask")
    try:
        run(code, namespace, "Large data and Dask")
    finally:
        if "client" in namespace:
            namespace["client"].close()
    assert "scc_coassoc_c" in namespace["adata"].obsp
