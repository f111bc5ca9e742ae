"""``tl.pla_transfer``: accuracy and cost against the predictor's voters per partition.

A reference of ``--n-ref`` cells and ``--n-new`` new cells drawn from the same planted,
overlapping Gaussian groups (8 groups of 2-30 % in 50 dimensions, noise 3 against centres
N(0, 2), as a user trial of 2026-11-26 built them). The reference gets ``tl.ensemble()``
and ``tl.pla()`` with the defaults; the new cells are transferred with each
``--neighbors`` value. Printed per value: CPU seconds of the transfer, ARI of the new
cells' labels against their groups, and the accuracy of both the reference's and the new
cells' labels after mapping each cluster to its majority group (the reference's).

Run from the repository root, one thread::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1 \\
        python benchmarks/transfer.py --n-ref 50000 --n-new 5000 --neighbors 1 15 50
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.metrics import adjusted_rand_score

sys.path.insert(0, str(Path(__file__).parents[1]))  # this checkout's package
import scconsensus as scc

SHARES = np.array([0.3, 0.2, 0.15, 0.1, 0.1, 0.08, 0.05, 0.02])


def groups(n: int, seed: int):
    """``n`` cells of the planted groups in ``.obsm["X_pca"]``, their group in ``.obs``."""
    from anndata import AnnData

    centres = np.random.default_rng(123).normal(size=(SHARES.size, 50)) * 2.0 / np.sqrt(2)
    rng = np.random.default_rng(seed)
    truth = rng.choice(SHARES.size, size=n, p=SHARES)
    adata = AnnData(obs=pd.DataFrame({"truth": pd.Categorical(truth.astype(str))}))
    adata.obs_names = [f"c{seed}_{i}" for i in range(n)]
    adata.obsm["X_pca"] = (centres[truth] + rng.normal(size=(n, 50)) * 3.0).astype(np.float32)
    return adata


def accuracy(labels: pd.Series, truth: pd.Series, majority: pd.Series) -> float:
    """Share of cells whose cluster's majority group (in the reference) is theirs."""
    return float((labels.map(majority).astype(str) == truth.astype(str)).mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n-ref", type=int, default=50_000)
    parser.add_argument("--n-new", type=int, default=5_000)
    parser.add_argument("--neighbors", nargs="+", type=int, default=[1, 15, 50])
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    ref = groups(args.n_ref, seed=0)
    scc.tl.ensemble(ref, random_state=0, progress=False)
    scc.tl.pla(ref, random_state=0, progress=False)
    majority = pd.crosstab(ref.obs["pla"], ref.obs["truth"]).idxmax(axis=1)
    ref_acc = accuracy(ref.obs["pla"], ref.obs["truth"], majority)
    ref_ari = adjusted_rand_score(ref.obs["truth"], ref.obs["pla"])
    print(f"reference: {args.n_ref} cells, ARI {ref_ari:.3f}, accuracy {ref_acc:.3f}")
    scc.tl.pla_transfer(groups(50, seed=1), ref, use_rep="X_pca")  # compiles the kernels
    for k in args.neighbors:
        new = groups(args.n_new, seed=7)
        start = time.process_time()
        scc.tl.pla_transfer(new, ref, use_rep="X_pca", n_neighbors=k)
        cpu = time.process_time() - start
        ari = adjusted_rand_score(new.obs["truth"], new.obs["pla"])
        acc = accuracy(new.obs["pla"], new.obs["truth"], majority)
        print(f"n_neighbors {k:3d}: CPU {cpu:5.2f} s, ARI {ari:.3f}, accuracy {acc:.3f}")


if __name__ == "__main__":
    main()
