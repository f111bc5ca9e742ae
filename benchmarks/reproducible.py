"""Same seed, same result for any thread count and ``n_jobs``: the defaults end to end.

``tl.ensemble(random_state=0)`` then ``tl.pcc`` and ``tl.pla`` with their defaults on the
planted blobs of ``benchmarks/scale.py``, once per configuration, each in a fresh
interpreter whose BLAS/OpenMP and numba thread counts are set before numpy is imported.
Every run prints a digest of what it stored (the ensemble, each method's membership,
labels, confidence, the ``select_k`` table) with its wall and CPU time (in all and per
step) and peak memory; the last line says whether every digest matches the first
configuration's.

The tests check 1, 2 and 4 threads on small inputs; this runs the whole pipeline at
single-cell scale, where the kernels take their blocked, multi-threaded paths, so run it
on a machine with many cores::

    python benchmarks/reproducible.py --n 100000 --configs 1:1 16:16 4:16
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
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")


def _digest(*arrays) -> str:
    import numpy as np

    h = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(np.asarray(a))
        h.update(str((a.dtype, a.shape)).encode())
        h.update(a.tobytes())
    return h.hexdigest()[:16]


def child(n: int, n_jobs: int) -> None:
    sys.path[:0] = [HERE, os.path.join(HERE, "..")]  # this checkout's package
    import numpy as np
    from scale import _adata, make_blobs

    import scconsensus as scc
    from scconsensus.metrics import adjusted_rand_index

    X, truth = make_blobs(n, seed=0)
    adata = _adata(X, truth)
    out: dict = {"n": n, "n_jobs": n_jobs, "threads": os.environ.get("NUMBA_NUM_THREADS")}
    c, w = time.process_time(), time.perf_counter()
    scc.tl.ensemble(adata, random_state=0, n_jobs=n_jobs, progress=False)
    out["ensemble"] = _digest(adata.obsm["scc_ensemble"])
    steps = {"ensemble": round(time.process_time() - c, 1)}
    walls = {"ensemble": round(time.perf_counter() - w, 1)}  # which step uses the cores
    for method in ("pcc", "pla"):
        step, wall = time.process_time(), time.perf_counter()
        getattr(scc.tl, method)(adata, random_state=0, progress=False)
        steps[method] = round(time.process_time() - step, 1)
        walls[method] = round(time.perf_counter() - wall, 1)
        labels = adata.obs[method].cat.codes.to_numpy()
        table = adata.uns[method].get("k_selection")
        out[method] = {
            "membership": _digest(adata.obsm[f"{method}_membership"]),
            "labels": _digest(labels),
            "confidence": _digest(adata.obs[f"{method}_confidence"].to_numpy()),
            "k_selection": _digest(np.asarray(table, dtype=float)) if table is not None else "",
            "clusters": int(adata.obs[method].nunique()),
            "ari": round(adjusted_rand_index(truth, labels), 4),
        }
    out["cpu_s"] = round(time.process_time() - c, 1)
    out["wall_s"] = round(time.perf_counter() - w, 1)
    out["step_cpu_s"] = steps
    out["step_wall_s"] = walls
    out["peak_gib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2)
    print(json.dumps(out))


def _run(n: int, threads: int, n_jobs: int) -> dict:
    env = {**os.environ, **{var: str(threads) for var in THREAD_VARS}}
    cmd = [sys.executable, __file__, "--child", str(n), str(n_jobs)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{threads}:{n_jobs} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _fingerprint(row: dict) -> tuple:
    fields = ("membership", "labels", "confidence", "k_selection")
    return (row["ensemble"], *(tuple(row[m][f] for f in fields) for m in ("pcc", "pla")))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    # above PLA's fit_size="auto" (20,000), so that its extension runs too
    parser.add_argument("--n", type=int, default=30_000, help="cells")
    parser.add_argument(
        "--configs", nargs="+", default=["1:1", "2:2"], help="THREADS:N_JOBS, one per run"
    )
    parser.add_argument("--child", nargs=2, type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    rows = []
    for config in args.configs:
        threads, n_jobs = (int(v) for v in config.split(":"))
        row = _run(args.n, threads, n_jobs)
        rows.append(row)
        summary = {m: (row[m]["clusters"], row[m]["ari"]) for m in ("pcc", "pla")}
        print(
            f"threads {threads:>2} n_jobs {n_jobs:>2}: wall {row['wall_s']:>7.1f} s, "
            f"CPU {row['cpu_s']:>7.1f} s {row['step_cpu_s']}, wall per step "
            f"{row['step_wall_s']}, peak {row['peak_gib']} GiB, "
            f"(clusters, ARI) {summary}, "
            f"digests: ensemble {row['ensemble']}, pcc {row['pcc']['membership']}, "
            f"pla {row['pla']['membership']}",
            flush=True,
        )
    same = all(_fingerprint(r) == _fingerprint(rows[0]) for r in rows)
    print(f"n = {args.n}: the same result in every configuration: {same}")
    if not same:
        for r in rows:
            print(json.dumps(r))


if __name__ == "__main__":
    main()
