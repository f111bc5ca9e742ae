"""How many groups on clear planted data: the defaults against the planted groups.

Issue 28's check: 20 (``--groups``) well-separated Gaussian groups in 50 dimensions
(:func:`accuracy.clear_groups`, equal or Dirichlet(2) sizes, no ``X_pca``), then
``tl.ensemble(random_state=seed)`` and ``tl.pcc`` / ``tl.pla`` with their defaults. Prints,
per size, kind and seed, each method's labelled clusters, ARI and CPU seconds (the
consensus call alone), and the route it took (``dense``, or ``sparse`` with its pair
source); ``--compact``: one row per number of groups, size and kind, with each method's
clusters per seed and its lowest ARI. Run from the repository root, one thread::

    OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1 python benchmarks/planted.py \\
        --sizes 2000 10000 --seeds 0 1 2 3 4
    python benchmarks/planted.py --groups 4 8 10 20 --sizes 1000 --compact
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


def fit(kind: str, n: int, seed: int, groups: int, methods, ensemble_method: str) -> dict:
    """``{method: (clusters, ARI, CPU s, route)}`` on one planted dataset."""
    from accuracy import clear_groups

    import scconsensus as scc
    from scconsensus.metrics import adjusted_rand_index

    adata = clear_groups(kind, n, seed, groups)
    truth = adata.obs["truth"].cat.codes.to_numpy()
    scc.tl.ensemble(adata, method=ensemble_method, random_state=seed, progress=False)
    out = {}
    for method in methods:
        start = time.process_time()
        getattr(scc.tl, method)(adata, random_state=seed, progress=False)
        secs = time.process_time() - start
        labels = adata.obs[method].cat.codes.to_numpy()
        found = np.unique(labels[labels >= 0]).size
        out[method] = (found, adjusted_rand_index(truth, labels), secs, route(adata.uns[method]))
    return out


def rows(args) -> None:
    """Print the table, a row per run or (``--compact``) per groups, size and kind."""
    for groups in args.groups:
        for n in args.sizes:
            for kind in args.kinds:
                runs = []
                for seed in args.seeds:
                    got = fit(kind, n, seed, groups, args.methods, args.ensemble_method)
                    runs.append(got)
                    if not args.compact:
                        cells = [f"{kind} {n:,}", str(seed)] + [
                            f"{k} ({ari:.3f}, {s:.1f} s, {r})" for k, ari, s, r in got.values()
                        ]
                        print("| " + " | ".join(cells) + " |", flush=True)
                if args.compact:
                    cells = [str(groups), f"{kind} {n:,}"] + [
                        "/".join(str(run[m][0]) for run in runs)
                        + f" (ARI >= {min(run[m][1] for run in runs):.3f})"
                        for m in args.methods
                    ]
                    print("| " + " | ".join(cells) + " |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", nargs="+", type=int, default=[2_000, 10_000])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    parser.add_argument("--methods", nargs="+", default=["pcc", "pla"], choices=("pcc", "pla"))
    parser.add_argument(
        "--kinds", nargs="+", default=["clear_equal", "clear_unequal"], help="or nested"
    )
    parser.add_argument("--ensemble-method", default="kmeans", help="tl.ensemble's method")
    parser.add_argument("--groups", nargs="+", type=int, default=[20], help="planted groups")
    parser.add_argument("--compact", action="store_true", help="a row per groups/size/kind")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    first = "| groups | data | " if args.compact else "| data | seed | "
    print(first + " | ".join(args.methods) + " |")
    print("|---" * (len(args.methods) + 2) + "|")
    rows(args)


if __name__ == "__main__":
    main()
