"""PCC and PLA on all pairs against sampled pairs, per source of within-cluster partners.

For each dataset and seed: ``tl.ensemble(random_state=seed)``, then ``tl.pcc`` or
``tl.pla`` at the true K and with the defaults, on each route: ``mode="dense"`` (all
pairs), ``mode="sparse", pairs="knn"`` (kNN of the representation plus random pairs) and
``mode="sparse", pairs="ensemble"`` (partners drawn from the ensemble plus random
pairs). Prints CPU seconds of the consensus call, ARI to the known classes and the
number of labelled clusters. The representation is ``X_pca``, set to ``X`` where a
dataset has none (the ensemble clusters ``X`` there too). Run from the repository root,
one thread::

    OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1 python benchmarks/routes.py --method pcc \\
        --data digits:0 clear_unequal:2000 --seeds 0 1 2
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

ROUTES = {
    "dense": {"mode": "dense"},
    "sparse, kNN pairs": {"mode": "sparse", "pairs": "knn"},
    "sparse, ensemble pairs": {"mode": "sparse", "pairs": "ensemble"},
}


def dataset(spec: str, seed: int):
    """``name:n`` (``n`` ignored by the shipped datasets): ``AnnData`` with ``X_pca``."""
    from accuracy import CLEAR, clear_groups, load
    from scale import _adata, make_blobs

    name, n = spec.split(":")
    if name == "blobs":
        X, truth = make_blobs(int(n), seed=seed)
        adata = _adata(X, truth)
    else:
        adata = clear_groups(name, int(n), seed) if name in CLEAR else load(name)
    if "X_pca" not in adata.obsm:
        adata.obsm["X_pca"] = np.asarray(adata.X).copy()
    return adata


def run(method: str, spec: str, seed: int) -> list[str]:
    """One line per K (true, defaults): each route's CPU s, ARI and labelled clusters."""
    import scconsensus as scc
    from scconsensus.metrics import adjusted_rand_index

    adata = dataset(spec, seed)
    truth = adata.obs["truth"].cat.codes.to_numpy()
    scc.tl.ensemble(adata, random_state=seed, progress=False)
    lines = []
    for tag, kw in (("true K", {"n_clusters": int(np.unique(truth).size)}), ("defaults", {})):
        cells = [f"{spec.split(':')[0]} ({adata.n_obs}), seed {seed}, {tag}"]
        for i, route in enumerate(ROUTES.values()):
            key, start = f"{method}_{tag[0]}{i}", time.process_time()
            fit = getattr(scc.tl, method)
            fit(adata, random_state=seed, progress=False, key_added=key, **kw, **route)
            secs = time.process_time() - start
            labels = adata.obs[key].cat.codes.to_numpy()
            found = np.unique(labels[labels >= 0]).size
            cells.append(f"{secs:.1f} s, {adjusted_rand_index(truth, labels):.3f} ({found})")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--method", choices=("pcc", "pla"), default="pcc")
    parser.add_argument("--data", nargs="+", default=["digits:0", "clear_unequal:2000"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    print("| data, K | " + " | ".join(ROUTES) + " |")
    print("|---" * (len(ROUTES) + 1) + "|")
    for spec in args.data:
        for seed in args.seeds:
            print("\n".join(run(args.method, spec, seed)), flush=True)


if __name__ == "__main__":
    main()
