"""PCC's batch solver on 1 and 2 (or more) numba threads, side by side in one run.

The case is ``pcc.py``'s default-start case: dense n = 2,000, K = 30, KL, from the
spectral start of the default plan. The solver's kernels split their work into
fixed blocks and add the partial sums in a fixed order, so every thread count must
give the same objective, step count and memberships (checked here); what changes is
the wall time. BLAS stays on one thread inside the solver (for the same reason).
The thread counts are timed in turn, and the set-up alone (``max_iter=0``) is timed
too: it is the part of the solver that runs before the first step.

Run: ``python benchmarks/threads.py [--threads 1 2] [--repeats 3]`` on an otherwise
idle machine (a busy core shows up as no speed-up). numba's thread pool is sized by
``NUMBA_NUM_THREADS`` (default: the number of cores); the largest count asked for must
not exceed it.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np


def problem(n: int = 2000, K: int = 30):
    from sklearn.datasets import make_blobs

    from scconsensus.core import PartitionOptions, coassociation, generate_ensemble, plan_consensus

    X, truth = make_blobs(n_samples=n, centers=K, n_features=10, cluster_std=2.0, random_state=0)
    ens = generate_ensemble(
        X,
        100,
        "kmeans",
        k=(10, 45),
        random_state=0,
        progress=False,
        options=PartitionOptions(subsample=0.8),
    )
    plan = plan_consensus(ens.labels, K, random_state=0)
    C, N = coassociation(ens.labels[:, plan.columns])
    return C, N, plan.start, truth


def timed(C, N, K, start, counts: list[int], repeats: int, max_iter: int | None = None):
    """Best wall time of ``repeats`` fits per thread count, the counts taken in turn.

    Taking them in turn, not one after the other, keeps a drift of the machine's
    speed (common on a shared virtual machine) out of the ratio.
    """
    import numba

    from scconsensus.core import pcc

    best = {}
    for _ in range(repeats):
        for threads in dict.fromkeys(counts):
            numba.set_num_threads(threads)
            t, c = time.perf_counter(), time.process_time()
            res = pcc(C, N, K, "kl", solver="batch", init=start.copy(), n_init=1, max_iter=max_iter)
            wall, cpu = time.perf_counter() - t, time.process_time() - c
            if threads not in best or wall < best[threads][0]:
                best[threads] = (wall, cpu, res)
    return best


def main() -> None:
    import numba

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    if max(args.threads) > numba.config.NUMBA_NUM_THREADS:
        raise SystemExit(
            f"numba's pool has {numba.config.NUMBA_NUM_THREADS} threads; set "
            f"NUMBA_NUM_THREADS={max(args.threads)} to time {max(args.threads)}."
        )
    C, N, start, _ = problem()
    K = start.shape[1]
    print(f"load average at the start {os.getloadavg()}; best wall of {args.repeats} runs")
    timed(C, N, K, start, [max(args.threads)], 1)  # compile, or load from numba's cache
    setup = timed(C, N, K, start, args.threads, args.repeats, max_iter=0)
    rows = timed(C, N, K, start, args.threads, args.repeats)
    base_wall, _, base = rows[args.threads[0]]
    print("| threads | wall s | CPU s | steps | objective | speed-up (wall) | same result |")
    print("|---|---|---|---|---|---|---|")
    for t, (wall, cpu, res) in rows.items():
        same = (
            res.objective == base.objective
            and res.n_iter == base.n_iter
            and np.array_equal(res.membership, base.membership)
        )
        print(
            f"| {t} | {wall:.2f} | {cpu:.2f} | {res.n_iter} | {res.objective:.10g} | "
            f"{base_wall / wall:.2f}x | {same} |"
        )
    first = setup[args.threads[0]][0]
    print("\nset-up alone (`max_iter=0`: input checks, evaluator, one evaluation, objective):")
    print("| threads | wall ms | speed-up |\n|---|---|---|")
    for t, (wall, _, _) in setup.items():
        print(f"| {t} | {1000 * wall:.0f} | {first / wall:.2f}x |")
    print(f"load average at the end {os.getloadavg()}")


if __name__ == "__main__":
    main()
