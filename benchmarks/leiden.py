"""Leiden ensembles on a precomputed ``sc.pp.neighbors`` graph: CPU and wall per size.

For each size: the planted blobs of ``benchmarks/scale.py`` (20 Gaussian clusters in
50 dimensions, ``.obsm["X_pca"]``), ``sc.pp.neighbors`` (not timed), one
``sc.tl.leiden`` for scale, then ``tl.ensemble(adata, 100, "leiden")`` with the
defaults (``--resolution LO HI`` for a given range). Prints CPU (``time.process_time``,
this process) and wall seconds, the clusters the partitions found, the ARI of the
median partition to the planted truth and, with ``--pcc``, of ``tl.pcc`` on the
ensemble (K chosen from the data).

Run from the repository root, one thread::

    OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \\
        python benchmarks/leiden.py --sizes 3000 10000
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
# this checkout's package, not an installed one
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def _timed(fn):
    c, w = time.process_time(), time.perf_counter()
    out = fn()
    return out, time.process_time() - c, time.perf_counter() - w


def run(n: int, n_partitions: int, seed: int, pcc: bool, resolution=None) -> None:
    import scanpy as sc
    from scale import _adata, make_blobs

    import scconsensus as scc
    from scconsensus.metrics import adjusted_rand_index as ari

    adata = _adata(*make_blobs(n, seed=seed))
    truth = adata.obs["truth"].cat.codes.to_numpy()
    sc.pp.neighbors(adata, use_rep="X_pca", random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        _, c, w = _timed(
            lambda: sc.tl.leiden(adata, random_state=seed, flavor="igraph", n_iterations=2)
        )
    print(f"n={n}: one sc.tl.leiden {c:.2f} s CPU, {w:.2f} s wall")
    kw = {"resolution": resolution, "random_state": seed}
    _, c, w = _timed(lambda: scc.tl.ensemble(adata, n_partitions, "leiden", **kw))
    table = adata.uns["scc_ensemble"]["partitions"]
    L = adata.obsm["scc_ensemble"]
    member = np.median([ari(truth[col >= 0], col[col >= 0]) for col in L.T])
    ks = table["n_clusters"]
    print(
        f"n={n}: {n_partitions} Leiden partitions {c:.2f} s CPU, {w:.2f} s wall; "
        f"k {ks.min()}..{ks.max()} (median {ks.median():g}); median member ARI {member:.3f}"
    )
    if pcc:
        _, c, w = _timed(lambda: scc.tl.pcc(adata, random_state=seed))
        labels = adata.obs["pcc"].cat.codes.to_numpy()
        K = adata.obs["pcc"].nunique()
        print(f"n={n}: tl.pcc {c:.2f} s CPU, {w:.2f} s wall; K={K}, ARI {ari(truth, labels):.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[3000, 10000])
    parser.add_argument("--n-partitions", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--resolution", type=float, nargs=2, help="a (lo, hi) range; default: calibrated to k"
    )
    parser.add_argument("--pcc", action="store_true", help="also run tl.pcc on the ensemble")
    args = parser.parse_args()
    import scconsensus

    print(f"scconsensus from {os.path.dirname(scconsensus.__file__)}")
    print(f"load average: {os.getloadavg()[0]:.2f}")
    for n in args.sizes:
        run(n, args.n_partitions, args.seed, args.pcc, args.resolution)


if __name__ == "__main__":
    main()
