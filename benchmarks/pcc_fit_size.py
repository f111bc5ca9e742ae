"""Fit size of PCC (or PLA): what a fit on a subset and its extension keep, against its cost.

``tl.pcc(fit_size="auto")`` fits at most ``AUTO_FIT_SIZE["pcc"]`` items and extends the
fit to the others (``scconsensus.core.pcc.pcc_extend``); ``tl.pla`` likewise with
``AUTO_FIT_SIZE["pla"]`` and its own extension. This script builds one ensemble
per dataset and seed (``tl.ensemble(random_state=seed)``) and runs ``tl.pcc`` (``--method
pla``: ``tl.pla``) on it at each ``--fit-sizes`` value (0: every item), printing the CPU
seconds of the call, the number of
clusters, the ARI against the planted groups and, where the data hold one, the recall of
a rare population (the share of its cells in clusters that are mostly rare).

Data: ``rare0.001`` / ``rare0.005`` (20 Dirichlet(2) groups and one of 0.1 % / 0.5 %,
``kmeans_fit_items.planted``), ``clear_unequal`` / ``clear_equal`` / ``nested``
(``accuracy.clear_groups``).

Run from the repository root, one thread::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1 \\
        python benchmarks/pcc_fit_size.py --n 100000 --fit-sizes 20000 10000
    ... --method pla --fit-sizes 0 20000     # PLA on every item against the default
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.metrics import adjusted_rand_score

import scconsensus as scc

sys.path.insert(0, str(Path(__file__).parent))
from accuracy import clear_groups
from kmeans_fit_items import planted


def load(kind: str, n: int, seed: int):
    """``(adata with X_pca, truth)``; truth 20 marks the rare population."""
    if kind.startswith("rare"):
        return planted(n, float(kind[4:]), seed)
    adata = clear_groups(kind, n, seed)
    adata.obsm["X_pca"] = adata.X
    return adata, adata.obs["truth"].to_numpy().astype(int)


def rare_recall(labels: np.ndarray, rare: np.ndarray) -> float:
    """Share of the rare cells in clusters whose cells are mostly rare."""
    mostly = {c: rare[labels == c].mean() >= 0.5 for c in np.unique(labels)}
    return float(np.mean([mostly[c] for c in labels[rare]]))


def run(adata, truth: np.ndarray, seed: int, fit_size: int, method: str = "pcc") -> str:
    """``tl.<method>`` fitted on ``fit_size`` items (0: all): CPU seconds, K, ARI, rare recall."""
    start = time.process_time()
    key = f"{method}_fit{fit_size}"  # a key per run: overwriting one would warn
    fit = fit_size or None
    getattr(scc.tl, method)(adata, random_state=seed, fit_size=fit, key_added=key, progress=False)
    cpu = time.process_time() - start
    labels = adata.obs[key].to_numpy().astype(int)
    rare = truth == 20  # clear_groups has groups 0-19 only
    recall = f", rare recall {rare_recall(labels, rare):.2f}" if rare.any() else ""
    ari = adjusted_rand_score(truth, labels)
    return f"tl.{method} {cpu:5.1f} s CPU, K {np.unique(labels).size}, ARI {ari:.4f}{recall}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--fit-sizes", nargs="+", type=int, default=[20_000, 10_000])
    parser.add_argument("--data", nargs="+", default=["rare0.001", "rare0.005", "clear_unequal"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--method", choices=["pcc", "pla"], default="pcc")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    for kind in args.data:
        for seed in args.seeds:
            adata, truth = load(kind, args.n, seed)
            scc.tl.ensemble(adata, random_state=seed, progress=False)
            for fit in args.fit_sizes:
                line = run(adata, truth, seed, fit, args.method)
                print(f"{kind}, n {args.n}, seed {seed}, fit {fit:6d}: {line}", flush=True)


if __name__ == "__main__":
    main()
