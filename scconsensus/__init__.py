"""scconsensus: consensus clustering for gene-expression data, native to Scanpy/AnnData.

>>> import scconsensus as scc
>>> adata = scc.datasets.iris()
>>> scc.tl.ensemble(adata, n_partitions=20, k=(2, 6))
"""

from importlib.metadata import PackageNotFoundError, version

from . import core, datasets, metrics, pl, tl
from ._settings import settings

try:
    __version__ = version("scconsensus")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0"


def __getattr__(name: str):
    # scconsensus.r needs the optional rpy2 extra: import it only when asked for
    if name == "r":
        import importlib

        return importlib.import_module(".r", __name__)
    raise AttributeError(f"module 'scconsensus' has no attribute {name!r}")


__all__ = ["core", "datasets", "metrics", "pl", "settings", "tl"]
