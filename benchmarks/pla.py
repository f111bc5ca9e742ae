"""Time and peak memory of PLA at scale: sparse EM and fit-then-extend.

Lange & Buhmann (2005), Sect. 3.1 (EM) and Sect. 3.3 (out-of-sample extension).

Data: ``n`` items in 10 Gaussian blobs (10-D); an ensemble of ``L`` partitions, each a
copy of the truth with 20 % of the labels redrawn, its clusters relabelled and 20 % of
the items left unsampled (``-1``). (The cost of PLA depends on n, L, K and the number of
pairs, not on how the partitions were produced, and k-means on 100,000 items x 50
partitions would dominate the run.)

Runs
- sparse PLA on all ``n`` items: 10 kNN + 30 random pairs per item, K = 10
  (a dense ``Z`` would need n² x 8 bytes = 80 GB at n = 100,000);
- fit on ``r`` items (dense, r = 5,000) and extend to the other n - r (eqs. 22-26);
- fit on ``r`` items sparse (r = 20,000) and extend.

Reported: wall time, peak Python allocation (tracemalloc: numpy/scipy buffers), max RSS
of the process, EM steps, accuracy against the truth (H criterion), agreement with the
full sparse fit.

Run: ``python benchmarks/pla.py [--n 100000] [--partitions 50]``
"""

from __future__ import annotations

import argparse
import resource
import time
import tracemalloc

import numpy as np


def make_data(n: int, n_partitions: int, k: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, k, size=n)
    centers = rng.normal(scale=6.0, size=(k, 10))
    X = centers[truth] + rng.normal(size=(n, 10))
    labels = np.empty((n, n_partitions), dtype=np.int32)
    for j in range(n_partitions):
        lab = np.where(rng.random(n) < 0.2, rng.integers(0, k, n), truth)
        lab = rng.permutation(k)[lab]
        lab[rng.random(n) > 0.8] = -1
        labels[:, j] = lab
    return X, truth, labels


def measure(label: str, fn):
    tracemalloc.start()
    t0 = time.perf_counter()
    result = fn()
    seconds = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{label:<44} {seconds:8.2f} s   peak alloc {peak / 1e6:8.1f} MB   max RSS {rss:7.0f} MB")
    return result, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--partitions", type=int, default=50)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--fit-dense", type=int, default=5_000)
    parser.add_argument("--fit-sparse", type=int, default=20_000)
    args = parser.parse_args()

    from scconsensus.core.pla import pla
    from scconsensus.metrics import h_criterion

    n, L, K = args.n, args.partitions, args.k
    X, truth, labels = make_data(n, L, K)
    print(
        f"n = {n:,} items, L = {L} partitions, K = {K}; dense Z would need {n * n * 8 / 1e9:.0f} GB"
    )
    # compile the numba kernels outside the timings
    small = pla(labels[:500], K, mode="sparse", X=X[:500], n_init=1, random_state=0)
    del small

    from scconsensus.core.coassociation import sample_pairs

    pairs, t_pairs = measure(
        "sample_pairs: 10 kNN + 30 random per item",
        lambda: sample_pairs(n, X, n_neighbors=10, n_random=30, random_state=0),
    )
    full, t_pla = measure(
        "sparse PLA on those pairs, all items",
        lambda: pla(labels, K, mode="sparse", pairs=pairs, n_init=1, random_state=0),
    )
    t_full = t_pairs + t_pla
    print(
        f"    pairs stored {full.n_stored:,} ({full.n_stored / n:.0f} per item, diagonal "
        f"included), EM steps {full.n_iter}, converged {full.converged}, "
        f"accuracy {h_criterion(truth, full.labels):.4f}; total with pairs {t_full:.1f} s"
    )

    for r, mode in ((args.fit_dense, "dense"), (args.fit_sparse, "sparse")):
        res, t = measure(
            f"fit {mode} on r = {r:,}, extend to {n - r:,}",
            lambda r=r, mode=mode: pla(
                labels, K, mode=mode, X=X, fit_size=r, n_init=1, random_state=0
            ),
        )
        print(
            f"    EM steps {res.n_iter}, accuracy {h_criterion(truth, res.labels):.4f}, "
            f"agreement with the full sparse fit {h_criterion(full.labels, res.labels):.4f}, "
            f"speed-up x{t_full / t:.1f}"
        )


if __name__ == "__main__":
    main()
