"""Clear errors when R, rpy2 or an R package is missing.

rpy2 and R are optional: nothing here is imported by ``import scconsensus``,
and every function of :mod:`scconsensus.r` calls these checks first, so a
missing piece is reported by name with the command that installs it, instead
of a traceback from rpy2's loader.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import shutil
import subprocess
import sys
from types import ModuleType

#: R packages we use, with their Bioconductor/CRAN origin and Debian package.
R_PACKAGES: dict[str, tuple[str, str]] = {
    "ConsensusClusterPlus": ("bioc", "r-bioc-consensusclusterplus"),
    "SingleCellExperiment": ("bioc", "r-bioc-singlecellexperiment"),
    "S4Vectors": ("bioc", "r-bioc-s4vectors"),
    "SummarizedExperiment": ("bioc", "r-bioc-summarizedexperiment"),
    "reticulate": ("cran", "r-cran-reticulate"),
    "testthat": ("cran", "r-cran-testthat"),
}


class RDependencyError(ImportError, ValueError):
    """R, rpy2 or an R package needed by :mod:`scconsensus.r` is not available.

    An :class:`ImportError` (a missing optional dependency) that is also a
    :class:`ValueError`, the error scconsensus raises for every unusable input.
    """


def install_hint(package: str) -> str:
    """How to install the R package ``package`` (Debian and from within R)."""
    origin, debian = R_PACKAGES.get(package, ("bioc", f"r-bioc-{package.lower()}"))
    if origin == "cran":
        return f"apt-get install {debian} or install.packages('{package}')"
    return f"apt-get install {debian} or BiocManager::install('{package}')"


#: Starts R the way rpy2 does, in a child process (see :func:`probe_r`).
_PROBE = "import rpy2.robjects as ro; ro.r('invisible(1)')"
#: Seconds the probe may take (R starts in about a second).
PROBE_TIMEOUT = 120
_PROBED_OK = False


def _r_home_hint() -> str:
    """The R_HOME the ``R`` on PATH reports, as advice (empty when there is none)."""
    found = shutil.which("R")
    if found is None:
        return ""
    env = {k: v for k, v in os.environ.items() if k != "R_HOME"}
    try:
        out = subprocess.run([found, "RHOME"], env=env, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return ""
    home = out.stdout.strip()
    return f" (the R on PATH, {found}, has R_HOME={home})" if home else ""


def probe_r() -> None:
    """Start R once in a child process before embedding it in this one.

    A broken R (e.g. ``R_HOME`` pointing nowhere) does not raise when rpy2 embeds it:
    R prints "Fatal error: unable to open the base package" and exits the whole
    process, a Jupyter kernel with its unsaved work included. The child dies instead,
    and its exit becomes an :class:`RDependencyError` naming what to fix. Runs once per
    session and only while R is not yet embedded.

    Raises
    ------
    RDependencyError
        If R cannot start.
    """
    global _PROBED_OK
    if _PROBED_OK or "rpy2.robjects" in sys.modules or importlib.util.find_spec("rpy2") is None:
        return
    try:
        out = subprocess.run(
            [sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=PROBE_TIMEOUT
        )
    except subprocess.TimeoutExpired as err:
        raise RDependencyError(
            f"R did not start within {PROBE_TIMEOUT} s; check that 'R --vanilla' starts in a "
            "terminal."
        ) from err
    if out.returncode == 0:
        _PROBED_OK = True
        return
    lines = [line for line in (out.stderr + out.stdout).splitlines() if line.strip()]
    detail = "; ".join(lines[-2:]) or f"exit code {out.returncode}"
    r_home = os.environ.get("R_HOME")
    if r_home is not None:
        fix = (
            f"R_HOME is set to {r_home!r}: unset it or point it to an R installation"
            f"{_r_home_hint()}"
        )
    else:
        fix = "check the R installation (apt-get install --reinstall r-base-core)"
    raise RDependencyError(f"R cannot start ({detail}); {fix}.")


def _load_rpy2() -> ModuleType:
    # Separate function so tests can simulate a machine without R.
    probe_r()
    saved = os.environ.get("LD_LIBRARY_PATH")
    try:
        return importlib.import_module("rpy2.robjects")
    finally:
        # Starting R prepends R's and the system's library folders to LD_LIBRARY_PATH.
        # This process's loader is already set, but child processes (joblib/loky and Dask
        # workers) would then load the system libpython instead of this interpreter's
        # and lose its site-packages, so the variable is put back as it was.
        if saved is None:
            os.environ.pop("LD_LIBRARY_PATH", None)
        else:
            os.environ["LD_LIBRARY_PATH"] = saved


def require_rpy2() -> ModuleType:
    """Import ``rpy2.robjects`` or raise :class:`RDependencyError` saying what to install."""
    try:
        return _load_rpy2()
    except ModuleNotFoundError as err:
        if err.name is not None and not err.name.startswith("rpy2"):
            raise
        raise RDependencyError(
            "rpy2 is not installed: pip install 'scconsensus[r]' (rpy2>=3.5.13,<3.6 with R < 4.5). "
            "It also needs R itself: apt-get install r-base-core, or see https://cran.r-project.org."
        ) from err
    except RDependencyError:
        raise
    except (OSError, RuntimeError, ValueError, ImportError) as err:
        # rpy2 is there but cannot find or load libR (no R, or R_HOME wrong).
        found = shutil.which("R")
        where = f"R was found at {found} but could not be loaded" if found else "R was not found"
        raise RDependencyError(
            f"R is not installed or not usable ({where}: {err}). Install R "
            "(apt-get install r-base-core, or see https://cran.r-project.org) and check that "
            "R_HOME points to it; then pip install 'scconsensus[r]'."
        ) from err


_FOUND: set[str] = set()


def _has_r_package(package: str) -> bool:
    # Only successes are remembered, so installing a package mid-session works.
    if package not in _FOUND:
        ro = require_rpy2()
        if not bool(ro.r["requireNamespace"](package, quietly=True)[0]):
            return False
        _FOUND.add(package)
    return True


def require_r_package(package: str) -> None:
    """Raise :class:`RDependencyError` naming the install command if ``package`` is missing."""
    require_rpy2()
    if not _has_r_package(package):
        raise RDependencyError(f"R package '{package}' is not installed: {install_hint(package)}.")


def require_rscript() -> str:
    """Path of the ``Rscript`` executable, or :class:`RDependencyError`."""
    path = shutil.which("Rscript")
    if path is None:
        raise RDependencyError(
            "Rscript was not found on PATH: install R (apt-get install r-base-core, or see "
            "https://cran.r-project.org)."
        )
    return path
