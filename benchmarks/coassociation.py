"""Time and peak memory of co-association builds.

- dense: n = 5,000 items, R = 100 partitions (BLAS on one-hot labels)
- sparse: n = 100,000 items, R = 100 partitions, ~40 sampled pairs per item
  (10 kNN + 30 random partners; the numba pair-counting kernel)

Labels are random (k in 2..20 per partition, 80 % of items sampled): the cost of
counting does not depend on how the labels were produced.

Run: ``python benchmarks/coassociation.py [--threads N]``
"""

from __future__ import annotations

import argparse
import os
import resource
import time
import tracemalloc


def random_ensemble(n: int, r: int, seed: int = 0):
    import numpy as np

    rng = np.random.default_rng(seed)
    labels = np.empty((n, r), dtype=np.int32)
    for j in range(r):
        labels[:, j] = rng.integers(0, rng.integers(2, 21), size=n)
        labels[rng.random(n) > 0.8, j] = -1
    return labels


def measure(label: str, fn) -> None:
    tracemalloc.start()
    t0 = time.perf_counter()
    result = fn()
    seconds = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{label:<48} {seconds:8.2f} s   peak alloc {peak / 1e6:9.1f} MB   max RSS {rss:8.1f} MB")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=None, help="numba/BLAS threads")
    args = parser.parse_args()
    if args.threads:
        os.environ["NUMBA_NUM_THREADS"] = str(args.threads)
        os.environ["OMP_NUM_THREADS"] = str(args.threads)

    import numpy as np

    from scconsensus.core.coassociation import coassociation, sample_pairs

    print(f"cores: {os.cpu_count()}, numba threads: {os.environ.get('NUMBA_NUM_THREADS', 'all')}")
    coassociation(random_ensemble(50, 3), "sparse", pairs=sample_pairs(50))  # compile once

    labels = random_ensemble(5_000, 100)
    C, N = measure("dense   n=5,000   R=100", lambda: coassociation(labels, "dense"))
    print(f"{'':<48} C, N: 2 x {C.nbytes / 1e6:.0f} MB int32; mean c/N = {(C / N).mean():.3f}")
    del C, N

    labels = random_ensemble(100_000, 100)
    X = np.random.default_rng(1).normal(size=(100_000, 10))
    pairs = measure(
        "pairs   n=100,000 (10 kNN + 30 random per item)",
        lambda: sample_pairs(100_000, X, n_neighbors=10, n_random=30),
    )
    print(f"{'':<48} {len(pairs):,} unique pairs ({len(pairs) / 100_000:.1f} per item)")
    _, Ns = measure(
        "sparse  n=100,000 R=100 (counting)",
        lambda: coassociation(labels, "sparse", pairs=pairs),
    )
    print(f"{'':<48} nnz {Ns.nnz:,} (both triangles)")


if __name__ == "__main__":
    main()
