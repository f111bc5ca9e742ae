"""Peak memory of the dense routes against the memory guard's estimate.

Routes: PCC's, PLA's and DPP's dense fits (``core``), and ``tl.coassociation(mode="dense")``.

Each route and size runs in a subprocess of its own: the peak resident memory
(``VmHWM``, reset through ``/proc/self/clear_refs`` after the imports and a warm-up
call that compiles the numba kernels) minus the resident memory before the call,
against the estimate the guard checks against ``settings.max_dense_bytes``. Linux only.

Run ``python benchmarks/memory.py`` (2,000 and 5,000 items, every route),
``python benchmarks/memory.py 2000 5000 10000`` or, for some routes only,
``python benchmarks/memory.py coassociation 2000 5000 10000``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROUTES = ("pcc", "pla", "dpp", "coassociation")


def _status(field: str) -> int:
    """A ``/proc/self/status`` memory field in bytes."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def _labels(n: int, n_partitions: int = 50, k: int = 6, seed: int = 0):
    """A planted ensemble: noisy 80 % subsamples of ``k`` groups, k-means-like k in 4..10."""
    import numpy as np

    rng = np.random.default_rng(seed)
    truth = rng.integers(k, size=n)
    cols = []
    for _ in range(n_partitions):
        kk = int(rng.integers(4, 11))
        lab = rng.integers(kk, size=k)[truth]
        noise = rng.random(n) < 0.1
        lab[noise] = rng.integers(kk, size=int(noise.sum()))
        lab[rng.random(n) > 0.8] = -1
        cols.append(lab)
    return np.column_stack(cols).astype(np.int32)


def _call(route: str, labels, k: int = 6):
    from scconsensus.core import FitRoute, pcc_consensus
    from scconsensus.core.pla import pla

    if route == "coassociation":  # the tl function: the AnnData store is part of its peak
        import anndata as ad
        import numpy as np

        from scconsensus.tl import coassociation

        adata = ad.AnnData(np.zeros((labels.shape[0], 1), dtype=np.float32))
        adata.obsm["scc_ensemble"] = labels
        return coassociation(adata, mode="dense")
    if route == "pcc":
        return pcc_consensus(labels, k, route=FitRoute(mode="dense"), random_state=0)
    if route == "dpp":  # DPP reads the data: the planted groups as points in 10 dimensions
        import numpy as np

        from scconsensus.core.dpp import DPPRoute, dpp_consensus

        X = np.random.default_rng(0).normal(size=(labels.shape[0], 10)) + labels[:, :10]
        return dpp_consensus(X, route=DPPRoute(mode="dense"), random_state=0)
    return pla(labels, k, mode="dense", random_state=0)


def _estimate(route: str, labels) -> int:
    from scconsensus._memory_guard import dense_route_bytes

    return dense_route_bytes(route, labels.shape[0])


def measure(route: str, n: int) -> tuple[int, int]:
    """``(peak bytes above the resident memory before the call, estimate)``, in this process."""
    import gc

    from scconsensus import settings

    settings.max_dense_bytes = 1024**4  # measure what the guard would refuse, too
    labels = _labels(n)
    _call(route, _labels(300))  # compile the kernels before the measurement
    gc.collect()
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")  # resets VmHWM to the current resident size
    before = _status("VmRSS")
    _call(route, labels)
    return _status("VmHWM") - before, _estimate(route, labels)


def main(sizes: list[int], routes: list[str]) -> None:
    print(f"{'route':13} {'items':>7} {'measured MiB':>13} {'estimate MiB':>13} {'ratio':>6}")
    for route in routes:
        for n in sizes:
            out = subprocess.run(
                [sys.executable, __file__, "--one", route, str(n)],
                check=True,
                capture_output=True,
                text=True,
                # the package of this checkout, as when run from its root
                env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
            ).stdout.split()
            peak, est = int(out[-2]), int(out[-1])
            print(
                f"{route:13} {n:7d} {peak / 2**20:13.1f} {est / 2**20:13.1f} {peak / est:6.2f}",
                flush=True,
            )


if __name__ == "__main__":
    if sys.argv[1:2] == ["--one"]:
        peak, est = measure(sys.argv[2], int(sys.argv[3]))
        print(peak, est)
    else:
        args = sys.argv[1:]
        routes = [a for a in args if a in ROUTES] or list(ROUTES)
        main([int(a) for a in args if a not in ROUTES] or [2000, 5000], routes)
