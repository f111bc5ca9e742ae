"""``generate_ensemble`` with ``n_jobs`` = 1 and 2: wall, CPU and peak memory, same labels.

The planted blobs of ``benchmarks/scale.py`` (20 Gaussian clusters in 50 dimensions);
each ``n_jobs`` runs in its own subprocess. Peak memory is that process's ``ru_maxrss``,
which holds the partitions' threads; it does not see worker processes (joblib's loky
workers of earlier versions are not waited for: ``scale.py`` samples the process tree
for those). Prints one line per run and whether the labels are the same.

Run from the repository root, one thread per partition::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/ensemble_jobs.py --n 30000
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def child(n: int, n_partitions: int, n_jobs: int) -> None:
    sys.path[:0] = [HERE, os.path.join(HERE, "..")]  # this checkout's package
    from scale import make_blobs

    from scconsensus.core.ensemble import generate_ensemble

    X, _ = make_blobs(n, seed=0)
    c, w = time.process_time(), time.perf_counter()
    ens = generate_ensemble(X, n_partitions, random_state=0, n_jobs=n_jobs, progress=False)
    cpu, wall = time.process_time() - c, time.perf_counter() - w
    peak = max(
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,
    )
    digest = hashlib.sha1(ens.labels.tobytes()).hexdigest()[:12]
    print(json.dumps({"cpu": cpu, "wall": wall, "peak_mib": peak / 1024, "labels": digest}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=30_000)
    parser.add_argument("--n-partitions", type=int, default=30)
    parser.add_argument("--n-jobs", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        return child(args.n, args.n_partitions, args.child)
    print(f"n={args.n}, {args.n_partitions} k-means partitions; load {os.getloadavg()[0]:.1f}")
    digests = set()
    for jobs in args.n_jobs:
        cmd = [sys.executable, __file__, "--n", str(args.n), "--n-partitions"]
        cmd += [str(args.n_partitions), "--child", str(jobs)]
        out = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
        digests.add(out["labels"])
        print(
            f"n_jobs={jobs}: {out['wall']:.1f} s wall, {out['cpu']:.1f} s CPU (main process), "
            f"peak {out['peak_mib']:.0f} MiB, labels {out['labels']}"
        )
    print("same labels for every n_jobs:", len(digests) == 1)


if __name__ == "__main__":
    main()
