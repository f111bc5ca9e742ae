"""PCC solver speed: dense, from the default start, and the paper's large sparse shape (Sect. 7.3).

0. default: n = 2,000 items (30 Gaussian blobs in 10-D), 100 k-means partitions
   (k in 10..45, 80 % subsamples), K = 30 and what ``tl.pcc`` does by default:
   the partitions matched to K and the spectral start (``plan_consensus``),
   dense co-association, KL, one start, tolerance 1e-4. Each solver runs from
   that same start; the objective ratio batch / greedy is printed. Target
   (issue 12): <= 2 s CPU per start, objective <= greedy's x (1 + 1e-4).
   ``--default-k 15 20 30`` runs it for several K (K blobs each): with fewer,
   larger clusters the supports overlap more and more steps take the all-pairs
   route.
1. dense: n = 2,000 items (8 Gaussian blobs in 10-D), an ensemble of 100
   k-means partitions (k in 2..20, 80 % subsamples), dense co-association,
   ``pcc(C, N, K=10)`` with one random start, KL and squared l2, run to the
   relative KKT tolerance 1e-4 (the default).
2. large: the shape of the paper's KDD-Cup run: n = 120,000 items (3 Gaussian
   classes of unequal size in 39-D standing in for the KDD data, which is not
   bundled), 100 k-means partitions on 50 % subsamples with k in 2..10
   (incomplete partitions), ~32 sampled pairs per item (random partners, as
   the paper sampled 0.25 per mille of the ~7.2e9 pairs uniformly), K = 10, one
   random start. The paper's C code took 13.8 s (l2) and 16.7 s (KL) on one
   2.8 GHz core at its cap of nK iterations; the greedy solver runs with that
   cap, the sweep solver (the default on sparse input) to the KKT tolerance or
   ``--large-max-iter-nk`` nK moves. One table: the input checks' CPU time,
   then per divergence and solver the CPU seconds (with and without the
   checks), iterations, converged and the relative KKT gap. ``--large-cache
   FILE.npz`` keeps the counts between runs (the ensemble takes a while).

Timings are wall-clock and process CPU time (the latter less sensitive to a
machine shared with other jobs) around ``pcc`` only (input checks included, numba
compilation excluded by a warm-up call on a tiny problem). Run it single-threaded
as the paper did: ``NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 python benchmarks/pcc.py``
(``--quick`` shrinks the problems for a smoke run). ``--solver`` (default: batch
and greedy) runs the dense cases with each solver from the same start and
prints the objective ratio batch / greedy. The large case runs ``--large-solver``
(default greedy and sweep); the batch solver runs there to the KKT tolerance or
``--large-batch-steps`` steps.
"""

from __future__ import annotations

import argparse
import os
import resource
import time

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

PAPER_SECONDS = {"l2": 13.8, "kl": 16.7}


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def warm_up() -> None:
    from scconsensus.core import coassociation, pcc, sample_pairs

    rng = np.random.default_rng(0)
    labels = rng.integers(0, 3, size=(30, 5)).astype(np.int32)
    C, N = coassociation(labels)
    Cs, Ns = coassociation(labels, "sparse", pairs=sample_pairs(30, n_random=5))
    for div in ("kl", "l2"):
        for solver in ("batch", "greedy"):
            pcc(C, N, 3, div, solver=solver, n_init=1, max_iter=50)
        for solver in ("batch", "greedy", "sweep"):
            pcc(Cs, Ns, 3, div, solver=solver, n_init=1, max_iter=50)


def dense_case(n: int, n_partitions: int, K: int, solvers=("greedy",)) -> None:
    from sklearn.datasets import make_blobs

    from scconsensus.core import PartitionOptions, coassociation, generate_ensemble, pcc
    from scconsensus.metrics import h_criterion

    X, truth = make_blobs(n_samples=n, centers=8, n_features=10, cluster_std=2.0, random_state=0)
    t = time.perf_counter()
    ens = generate_ensemble(
        X,
        n_partitions,
        "kmeans",
        k=(2, 20),
        random_state=0,
        progress=False,
        options=PartitionOptions(subsample=0.8),
    )
    t_ens = time.perf_counter() - t
    t = time.perf_counter()
    C, N = coassociation(ens.labels)
    t_co = time.perf_counter() - t
    print(f"\n== dense: n={n}, {n_partitions} k-means partitions, K={K}")
    print(f"ensemble {t_ens:.1f} s, dense co-association {t_co:.2f} s")
    for div in ("l2", "kl"):
        objective = {}
        for solver in solvers:
            t, c = time.perf_counter(), time.process_time()
            res = pcc(C, N, K, div, solver=solver, n_init=1, random_state=0)
            dt, dc = time.perf_counter() - t, time.process_time() - c
            objective[solver] = res.objective
            print(
                f"PCC-{div:<3} {solver:<6} {dt:7.2f} s wall, {dc:7.2f} s CPU  {res.n_iter:>8} "
                f"iterations ({1e6 * dt / max(res.n_iter, 1):.1f} us/iteration, "
                f"{res.n_iter / (n * K):.3f} nK, {res.n_polish} polish)  "
                f"converged={res.converged} kkt_gap={res.kkt_gap:.1e} "
                f"objective={res.objective:.8g} clusters={res.n_clusters} "
                f"H={h_criterion(truth, res.labels):.3f}"
            )
        if len(objective) == 2:
            ratio = objective["batch"] / objective["greedy"]
            print(f"PCC-{div:<3} objective batch / greedy = {ratio:.8f}")
    print(f"peak RSS so far {peak_rss_mib():.0f} MiB")


def default_start_case(n: int, K: int, solvers=("batch", "greedy")) -> None:
    from sklearn.datasets import make_blobs

    from scconsensus.core import (
        PartitionOptions,
        coassociation,
        generate_ensemble,
        pcc,
        plan_consensus,
    )
    from scconsensus.metrics import adjusted_rand_index

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
    print(f"\n== default start: n={n}, K={K}, {plan.columns.size} matched partitions, spectral")
    objective = {}
    for solver in solvers:
        t, c = time.perf_counter(), time.process_time()
        res = pcc(C, N, K, "kl", solver=solver, init=plan.start, n_init=1)
        dt, dc = time.perf_counter() - t, time.process_time() - c
        objective[solver] = res.objective
        print(
            f"PCC-kl  {solver:<6} {dt:7.2f} s wall, {dc:7.2f} s CPU  {res.n_iter:>8} iterations "
            f"({res.n_polish} polish) converged={res.converged} kkt_gap={res.kkt_gap:.1e} "
            f"objective={res.objective:.10g} ARI={adjusted_rand_index(truth, res.labels):.4f}"
        )
    if len(objective) == 2:
        ratio = objective["batch"] / objective["greedy"]
        print(f"PCC-kl  objective batch / greedy = {ratio:.8f} (target <= 1.0001)")


def _large_data(n: int, n_partitions: int, pairs_per_item: float, cache: str | None):
    """``(truth, C, N, note)`` of the Sect. 7.3 shape, built or read from ``cache`` (.npz)."""
    import scipy.sparse as sp

    from scconsensus.core import PartitionOptions, coassociation, generate_ensemble, sample_pairs
    from scconsensus.metrics import h_criterion

    if cache and os.path.exists(cache):
        z = np.load(cache)
        if z["indptr"].size == n + 1:
            shape = (n, n)
            C = sp.csr_matrix((z["c"], z["indices"], z["indptr"]), shape=shape)
            N = sp.csr_matrix((z["nv"], z["indices"], z["indptr"]), shape=shape)
            return z["truth"], C, N, f"read from {cache}"
    rng = np.random.default_rng(0)
    sizes = (np.array([0.57, 0.23, 0.20]) * n).astype(int)
    sizes[0] += n - sizes.sum()
    truth = np.repeat(np.arange(3), sizes)
    centers = rng.normal(scale=2.0, size=(3, 39))
    X = centers[truth] + rng.normal(size=(n, 39))
    t = time.perf_counter()
    ens = generate_ensemble(
        X,
        n_partitions,
        "kmeans",
        k=(2, 10),
        random_state=0,
        progress=True,
        options=PartitionOptions(subsample=0.5),
    )
    t_ens = time.perf_counter() - t
    labels = ens.labels
    acc = np.mean(
        [h_criterion(truth[labels[:, r] >= 0], labels[labels[:, r] >= 0, r]) for r in range(20)]
    )
    t = time.perf_counter()
    pairs = sample_pairs(n, n_random=round(pairs_per_item / 2), random_state=0)
    C, N = coassociation(labels, "sparse", pairs=pairs)
    t_co = time.perf_counter() - t
    if cache:
        np.savez(cache, indptr=N.indptr, indices=N.indices, c=C.data, nv=N.data, truth=truth)
    note = (
        f"ensemble {t_ens:.1f} s (mean H of a partition on its items {acc:.2f}; paper 0.79), "
        f"sparse co-association {t_co:.1f} s"
    )
    return truth, C, N, note


def large_case(
    n: int,
    n_partitions: int,
    K: int,
    pairs_per_item: float,
    solvers=("greedy", "sweep"),
    batch_steps: int | None = None,
    max_iter_nk: float = 50.0,
    cache: str | None = None,
) -> None:
    from scconsensus.core import pcc
    from scconsensus.core.pcc._core import _check_input
    from scconsensus.metrics import h_criterion

    truth, Cs, Ns, note = _large_data(n, n_partitions, pairs_per_item, cache)
    ell = Ns.nnz / n
    share = Ns.nnz / 2 / (n * (n - 1) / 2)
    print(
        f"\n== large (Sect. 7.3 shape): n={n}, {n_partitions} k-means partitions on 50 % "
        f"subsamples (k 2..10), K={K}; greedy capped at the paper's nK={n * K} iterations, "
        f"sweep at {max_iter_nk:g} nK moves, batch at --large-batch-steps"
    )
    print(
        f"{note}; {Ns.nnz // 2} co-sampled pairs = {ell:.1f} per item ({1000 * share:.3f} "
        "per mille of all pairs; paper 0.25)"
    )
    c = time.process_time()
    _check_input(Cs, Ns)
    checks = time.process_time() - c
    print(f"input checks (inside every pcc call below): {checks:.2f} s CPU")
    print(
        f"{'':8} {'solver':<6} {'CPU s':>7} {'solver s':>8} {'paper s':>7} {'iterations':>11} "
        f"{'converged':>9} {'KKT gap':>8} {'objective':>14} {'H':>6}"
    )
    for div, solver in ((d, s) for d in ("l2", "kl") for s in solvers):
        cap = {"greedy": n * K, "sweep": round(max_iter_nk * n * K), "batch": batch_steps}
        c = time.process_time()
        res = pcc(Cs, Ns, K, div, solver=solver, n_init=1, max_iter=cap[solver], random_state=0)
        dc = time.process_time() - c
        print(
            f"PCC-{div:<4} {solver:<6} {dc:7.2f} {dc - checks:8.2f} {PAPER_SECONDS[div]:7.1f} "
            f"{res.n_iter:>11} {res.converged!s:>9} {res.kkt_gap:8.1e} "
            f"{res.objective:14.8g} {h_criterion(truth, res.labels):6.3f}",
            flush=True,
        )
    print(f"peak RSS {peak_rss_mib():.0f} MiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes for a smoke run")
    parser.add_argument("--skip-default", action="store_true")
    parser.add_argument(
        "--default-k",
        nargs="+",
        type=int,
        default=[30],
        help="K (= planted blobs) of the default-start case; several run one after another",
    )
    parser.add_argument(
        "--large-solver",
        nargs="+",
        default=["greedy", "sweep"],
        choices=["greedy", "sweep", "batch"],
    )
    parser.add_argument("--large-batch-steps", type=int, default=None)
    parser.add_argument(
        "--large-max-iter-nk",
        type=float,
        default=50.0,
        help="sweep's move cap, in nK (pcc's default)",
    )
    parser.add_argument(
        "--large-cache", default=None, help=".npz to read the large case's C, N from (or write)"
    )
    parser.add_argument("--skip-dense", action="store_true")
    parser.add_argument("--skip-large", action="store_true")
    parser.add_argument(
        "--solver",
        nargs="+",
        default=["batch", "greedy"],
        choices=["greedy", "batch"],
        help="solvers",
    )
    args = parser.parse_args()
    import numba

    print(f"numba threads: {numba.config.NUMBA_NUM_THREADS}, load average {os.getloadavg()}")
    t = time.perf_counter()
    warm_up()
    print(f"warm-up (numba compile or cache load) {time.perf_counter() - t:.1f} s")
    if not args.skip_default:
        for K in args.default_k:
            default_start_case(600 if args.quick else 2000, K, args.solver)
    if not args.skip_dense:
        dense_case(500 if args.quick else 2000, 100, 10, args.solver)
    if not args.skip_large:
        large_case(
            12_000 if args.quick else 120_000,
            100,
            10,
            33,
            args.large_solver,
            args.large_batch_steps,
            args.large_max_iter_nk,
            args.large_cache,
        )
    print(f"load average at the end {os.getloadavg()}")


if __name__ == "__main__":
    main()
