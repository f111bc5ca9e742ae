"""Items per k-means fit in the ensemble: its cost, and whether a rare population survives.

Each k-means partition of more than ``scconsensus.core.ensemble.KMEANS_FIT_ITEMS`` sampled
items fits its centroids on that many of them and assigns the rest. A population of 0.1 %
has 5 cells in a fit on 5,000 items: this script plants one next to 20 groups of
unequal size (``accuracy.clear_groups``' geometry: centres N(0, 3²) in 50 dimensions, unit
noise) and prints, per fit size, the ensemble's CPU time, the share of partitions with a
cluster of its own for the rare population (half of its cells or more, and at least half
rare), and what ``tl.pcc`` makes of it: K, ARI against the 21 groups, and the rare
population's recall (the share of its cells in clusters that are mostly rare).

Run from the repository root, one thread::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1 \\
        python benchmarks/kmeans_fit_items.py --n 100000 --fit-items 10000 5000 3000
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pandas as pd
from anndata import AnnData
from sklearn.metrics import adjusted_rand_score

import scconsensus as scc
from scconsensus.core import ensemble as ensemble_module


def planted(n: int, rare_share: float, seed: int) -> tuple[AnnData, np.ndarray]:
    """20 groups of Dirichlet(2) sizes and a 21st (label 20) of ``rare_share`` of the cells."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=3.0, size=(21, 50))
    weights = np.r_[rng.dirichlet(np.full(20, 2.0)) * (1 - rare_share), rare_share]
    truth = rng.choice(21, size=n, p=weights)
    obs = pd.DataFrame(
        {"truth": pd.Categorical(truth.astype(str))}, index=[f"c{i}" for i in range(n)]
    )
    adata = AnnData(obs=obs)
    adata.obsm["X_pca"] = (centres[truth] + rng.standard_normal((n, 50))).astype(np.float32)
    return adata, truth


def isolated(labels: np.ndarray, rare: np.ndarray) -> float:
    """Share of partitions with a cluster that holds half the rare cells and is half rare."""
    hits = 0
    for col in labels.T:
        seen = col[rare & (col >= 0)]
        if seen.size:
            top = np.bincount(seen).argmax()
            hits += (seen == top).mean() >= 0.5 and rare[col == top].mean() >= 0.5
    return hits / labels.shape[1]


def run(adata: AnnData, truth: np.ndarray, seed: int) -> str:
    rare = truth == 20
    start = time.process_time()
    scc.tl.ensemble(adata, random_state=seed)
    cpu = time.process_time() - start
    share = isolated(np.asarray(adata.obsm["scc_ensemble"]), rare)
    scc.tl.pcc(adata, random_state=seed)
    labels = adata.obs["pcc"].to_numpy().astype(int)
    mostly_rare = {c: rare[labels == c].mean() >= 0.5 for c in np.unique(labels)}
    recall = np.mean([mostly_rare[c] for c in labels[rare]])
    return (
        f"ensemble {cpu:5.1f} s CPU, rare own cluster in {share:.2f} of partitions, "
        f"pcc K {adata.obs['pcc'].nunique()}, ARI {adjusted_rand_score(truth, labels):.4f}, "
        f"rare recall {recall:.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--fit-items", nargs="+", type=int, default=[10_000, 5_000, 3_000])
    parser.add_argument("--rare-shares", nargs="+", type=float, default=[0.001, 0.005])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1])
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    default = ensemble_module.KMEANS_FIT_ITEMS
    for share in args.rare_shares:
        for seed in args.seeds:
            adata, truth = planted(args.n, share, seed)
            for fit in args.fit_items:
                ensemble_module.KMEANS_FIT_ITEMS = fit
                result = run(adata.copy(), truth, seed)
                print(f"rare {share:.3f}, seed {seed}, fit on {fit:6d}: {result}", flush=True)
    ensemble_module.KMEANS_FIT_ITEMS = default


if __name__ == "__main__":
    main()
