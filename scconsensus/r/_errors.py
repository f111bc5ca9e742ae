"""Clear errors when R, rpy2 or an R package is missing.

rpy2 and R are optional: nothing here is imported by ``import scconsensus``,
and every function of :mod:`scconsensus.r` calls these checks first, so a
missing piece is reported by name with the command that installs it, instead
of a traceback from rpy2's loader.
"""

from __future__ import annotations

import importlib
import os
import shutil
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


def _load_rpy2() -> ModuleType:
    # Separate function so tests can simulate a machine without R.
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
