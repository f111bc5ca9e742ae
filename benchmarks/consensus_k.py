"""Speed of ``tl.consensus_k`` against Bioconductor's ConsensusClusterPlus (same protocol).

Protocol: hc + Pearson distance + average linkage, pItem 0.8, pFeature 1, reps 50,
k = 2..6, on synthetic expression data (items = samples, 5 groups, 2,000 features) of
increasing size. ConsensusClusterPlus runs through ``scconsensus.r.consensus_cluster_plus``
(rpy2, in process; its timing covers the R call only). Also printed: the largest PAC
difference over k and the ARI between the two final clusterings at k = 5 (R's and
NumPy's generators differ, so agreement is within sampling error, not exact: at n = 100
PAC at k = 2 ranged 0.61-0.69 over R seeds 1-3 and 0.63-0.71 over Python seeds 1-3, the
size of the differences printed here).

Run::

    python benchmarks/consensus_k.py                # n = 100, 300, 1000
    python benchmarks/consensus_k.py --sizes 128 500
"""

from __future__ import annotations

import argparse
import time

import anndata as ad
import numpy as np

import scconsensus as scc
from scconsensus.metrics import adjusted_rand_index


def data(n: int, p: int = 2000, groups: int = 5, seed: int = 0) -> ad.AnnData:
    rng = np.random.default_rng(seed)
    centers = rng.normal(0, 1, size=(groups, p))
    truth = rng.integers(0, groups, size=n)
    X = centers[truth] + rng.normal(0, 2.5, size=(n, p))
    return ad.AnnData(X.astype(np.float64))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 300, 1000])
    parser.add_argument("--reps", type=int, default=50)
    parser.add_argument("--max-k", type=int, default=6)
    parser.add_argument("--no-r", action="store_true", help="time the Python side only")
    args = parser.parse_args()
    print(f"{'n':>6} {'python_s':>9} {'ccp_s':>8} {'speedup':>8} {'max|dPAC|':>10} {'ARI_k5':>7}")
    for n in args.sizes:
        adata = data(n)
        t0 = time.perf_counter()
        scc.tl.consensus_k(adata, max_k=args.max_k, reps=args.reps, use_rep="X", keep_k="all")
        py = time.perf_counter() - t0
        if args.no_r:
            print(f"{n:>6} {py:>9.2f}")
            continue
        from scconsensus.r import consensus_cluster_plus

        t0 = time.perf_counter()
        consensus_cluster_plus(adata, max_k=args.max_k, reps=args.reps, seed=1, use_rep="X")
        r = time.perf_counter() - t0
        dpac = np.abs(adata.uns["consensus_k"]["pac"] - adata.uns["ccp"]["pac"]).max()
        ari = adjusted_rand_index(adata.obs["ccp_k5"], adata.obs["consensus_k_k5"])
        print(f"{n:>6} {py:>9.2f} {r:>8.2f} {r / py:>8.1f} {dpac:>10.3f} {ari:>7.3f}", flush=True)


if __name__ == "__main__":
    main()
