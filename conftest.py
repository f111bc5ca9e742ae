"""Session-wide test settings shared by tests/ and the doctests in scconsensus/."""

import os

import matplotlib
import pytest

matplotlib.use("Agg")

# Starting R (rpy2, anndata2ri; possibly while test modules are collected) prepends R's and
# the system's library folders to LD_LIBRARY_PATH; child processes started later (joblib
# workers, Dask nannies, ``python -c`` checks) would then load the system libpython and lose
# this interpreter's site-packages. Keep the value the session started with.
_LIBRARY_PATH = os.environ.get("LD_LIBRARY_PATH")


def _restore_library_path() -> None:
    if _LIBRARY_PATH is None:
        os.environ.pop("LD_LIBRARY_PATH", None)
    else:
        os.environ["LD_LIBRARY_PATH"] = _LIBRARY_PATH


def pytest_collection_finish(session):
    _restore_library_path()


@pytest.fixture(autouse=True)
def _keep_library_path():
    yield
    _restore_library_path()
