"""How many groups on clear planted data: the defaults against the 20 planted groups.

Issue 28's check: 20 well-separated Gaussian groups in 50 dimensions
(:func:`accuracy.clear_groups`, equal or Dirichlet(2) sizes, no ``X_pca``), then
``tl.ensemble(random_state=seed)`` and ``tl.pcc`` / ``tl.pla`` with their defaults. Prints,
per size, kind and seed, each method's labelled clusters, ARI and CPU seconds (the
consensus call alone), and the route it took (``dense``, or ``sparse`` with its pair
source). Run from the repository root, one thread::

    OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1 python benchmarks/planted.py \\
        --sizes 2000 10000 --seeds 0 1 2 3 4
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))


def route(uns: dict) -> str:
    """``dense`` or ``sparse/<pair source>`` from a method's ``.uns`` record."""
    if uns.get("pair_source") is None:
        return uns.get("route", "dense")
    return f"sparse/{uns['pair_source']}"


def run(kind: str, n: int, seed: int, methods, ensemble_method: str) -> str:
    """One table row: each method's clusters (ARI, CPU s, route)."""
    from accuracy import clear_groups

    import scconsensus as scc
    from scconsensus.metrics import adjusted_rand_index

    adata = clear_groups(kind, n, seed)
    truth = adata.obs["truth"].cat.codes.to_numpy()
    scc.tl.ensemble(adata, method=ensemble_method, random_state=seed, progress=False)
    cells = [f"{kind} {n:,}", str(seed)]
    for method in methods:
        start = time.process_time()
        getattr(scc.tl, method)(adata, random_state=seed, progress=False)
        secs = time.process_time() - start
        labels = adata.obs[method].cat.codes.to_numpy()
        found = np.unique(labels[labels >= 0]).size
        ari = adjusted_rand_index(truth, labels)
        cells.append(f"{found} ({ari:.3f}, {secs:.1f} s, {route(adata.uns[method])})")
    return "| " + " | ".join(cells) + " |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", nargs="+", type=int, default=[2_000, 10_000])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    parser.add_argument("--methods", nargs="+", default=["pcc", "pla"], choices=("pcc", "pla"))
    parser.add_argument(
        "--kinds", nargs="+", default=["clear_equal", "clear_unequal"], help="or nested"
    )
    parser.add_argument("--ensemble-method", default="kmeans", help="tl.ensemble's method")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    print("| data | seed | " + " | ".join(args.methods) + " |")
    print("|---" * (len(args.methods) + 2) + "|")
    for n in args.sizes:
        for kind in args.kinds:
            for seed in args.seeds:
                print(run(kind, n, seed, args.methods, args.ensemble_method), flush=True)


if __name__ == "__main__":
    main()
