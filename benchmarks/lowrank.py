"""Squared-l2 PCC on all pairs: the dense co-association against its low-rank form.

Data: the planted blobs of ``benchmarks/scale.py`` (20 overlapping Gaussian
clusters in 50 dimensions, unequal sizes), an ensemble from
``scconsensus.core.generate_ensemble`` with its defaults (100 k-means
partitions, k = "auto", 80 % subsamples), and what ``pcc_consensus`` plans by
default (``plan_consensus``: K chosen from the ensemble, the partitions matched
to it, the spectral start). Both routes start from that same start, one start,
tolerance 1e-4 (the default):

- n = 2,000: the dense route (``coassociation`` + ``pcc(solver="batch")``)
  and the low-rank route (``pcc_lowrank``) side by side: CPU seconds, the
  objective (the low-rank one plus the constant ``l2_constant`` it leaves
  out), ARI to the truth and between the two.
- n = 20,000 and 100,000: the low-rank route alone (the dense one would need
  2 x n^2 int32 counts plus n^2 float64 work arrays): CPU seconds, steps,
  converged, relative KKT gap, ARI to the truth, and memory: the fit's peak of
  traced (numpy) allocations in a second run under ``tracemalloc``, and the
  process's peak RSS (which includes generating the ensemble).

Every size runs in a fresh subprocess; one thread (``OMP_NUM_THREADS=1``,
``NUMBA_NUM_THREADS=1``). Numba compilation is excluded by a warm-up call.

Usage::

    python benchmarks/lowrank.py                       # 2,000 (both), 20,000, 100,000
    python benchmarks/lowrank.py --sizes 20000 --dense-sizes 2000
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def _setup(n: int) -> dict:
    """Blobs, default ensemble and default plan at ``n`` items, with their CPU seconds."""
    from scale import make_blobs

    from scconsensus.core import generate_ensemble, plan_consensus

    X, truth = make_blobs(n)
    t = time.process_time()
    ens = generate_ensemble(X, progress=False)
    t_ens = time.process_time() - t
    t = time.process_time()
    plan = plan_consensus(ens.labels)
    t_plan = time.process_time() - t
    labels = np.ascontiguousarray(ens.labels[:, plan.columns])
    return {
        "truth": truth,
        "labels": labels,
        "start": plan.start,
        "K": plan.n_clusters,
        "rec": {"n": n, "K": plan.n_clusters, "R": labels.shape[1], "ensemble_s": t_ens},
        "plan_s": t_plan,
    }


def _warm_up() -> None:
    from scconsensus.core import coassociation, pcc
    from scconsensus.core.pcc import pcc_lowrank

    labels = np.random.default_rng(0).integers(0, 3, size=(40, 6)).astype(np.int32)
    labels[::7, 2] = -1
    pcc(*coassociation(labels), 3, "l2", solver="batch", n_init=1)
    pcc_lowrank(labels, 3, n_init=1)


def _lowrank(s: dict) -> dict:
    from scconsensus.core.pcc import pcc_lowrank
    from scconsensus.metrics import adjusted_rand_index

    t = time.process_time()
    res = pcc_lowrank(s["labels"], s["K"], init=s["start"])
    cpu = time.process_time() - t
    return {
        "cpu_s": cpu,
        "objective_wo_constant": res.objective,
        "steps": res.n_iter,
        "converged": bool(res.converged),
        "kkt_gap": res.kkt_gap,
        "ari_truth": adjusted_rand_index(s["truth"], res.labels),
        "labels": res.labels,
    }


def _fit_memory(s: dict) -> float:
    """Peak traced allocations (MiB) of a second low-rank fit."""
    import tracemalloc

    from scconsensus.core.pcc import pcc_lowrank

    tracemalloc.start()
    pcc_lowrank(s["labels"], s["K"], init=s["start"])
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / 2**20


def run_case(n: int, dense: bool) -> dict:
    """One size, in this process: the record printed by :func:`main`."""
    from scconsensus.core import coassociation, pcc
    from scconsensus.core.pcc import l2_constant
    from scconsensus.metrics import adjusted_rand_index

    _warm_up()
    s = _setup(n)
    rec = dict(s["rec"])
    low = _lowrank(s)
    rec["lowrank"] = {k: v for k, v in low.items() if k != "labels"}
    if dense:
        t = time.process_time()
        C, N = coassociation(s["labels"])
        t_co = time.process_time() - t
        t = time.process_time()
        res = pcc(C, N, s["K"], "l2", solver="batch", n_init=1, init=s["start"])
        rec["dense"] = {
            "coassociation_cpu_s": t_co,
            "cpu_s": time.process_time() - t,
            "objective": res.objective,
            "steps": res.n_iter,
            "n_polish": res.n_polish,
            "converged": bool(res.converged),
            "kkt_gap": res.kkt_gap,
            "ari_truth": adjusted_rand_index(s["truth"], res.labels),
            "ari_lowrank": adjusted_rand_index(low["labels"], res.labels),
        }
        del C, N
        t = time.process_time()
        rec["lowrank"]["constant"] = l2_constant(s["labels"])
        rec["lowrank"]["constant_cpu_s"] = time.process_time() - t
        rec["lowrank"]["objective"] = low["objective_wo_constant"] + rec["lowrank"]["constant"]
    rec["lowrank"]["fit_peak_traced_mib"] = _fit_memory(s)
    rec["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return rec


def _print(rec: dict) -> None:
    low = rec["lowrank"]
    print(
        f"\n== n={rec['n']}: K={rec['K']}, {rec['R']} matched partitions "
        f"(ensemble {rec['ensemble_s']:.1f} s CPU)"
    )
    if "dense" in rec:
        d = rec["dense"]
        print(f"{'route':8s} {'CPU s':>7s} {'objective':>16s} {'steps':>6s} {'KKT gap':>9s} ARI")
        print(
            f"{'dense':8s} {d['cpu_s']:7.2f} {d['objective']:16.8g} {d['steps']:6d} "
            f"{d['kkt_gap']:9.2g} {d['ari_truth']:.4f}  (+ co-association "
            f"{d['coassociation_cpu_s']:.2f} s; polish {d['n_polish']})"
        )
        print(
            f"{'lowrank':8s} {low['cpu_s']:7.2f} {low['objective']:16.8g} {low['steps']:6d} "
            f"{low['kkt_gap']:9.2g} {low['ari_truth']:.4f}"
        )
        print(
            f"objective lowrank / dense - 1 = {low['objective'] / d['objective'] - 1:.2e}; "
            f"ARI lowrank vs dense {d['ari_lowrank']:.4f}; "
            f"constant by pairs {low['constant_cpu_s']:.1f} s"
        )
    else:
        print(
            f"lowrank: {low['cpu_s']:.2f} s CPU, {low['steps']} steps, "
            f"converged={low['converged']}, KKT gap {low['kkt_gap']:.2g}, "
            f"ARI {low['ari_truth']:.4f}"
        )
    print(
        f"memory: fit peak traced {low['fit_peak_traced_mib']:.0f} MiB, "
        f"process peak RSS {rec['peak_rss_mib']:.0f} MiB (ensemble included)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dense-sizes", type=int, nargs="*", default=[2000])
    parser.add_argument("--sizes", type=int, nargs="*", default=[20_000, 100_000])
    parser.add_argument("--case", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--dense", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.case is not None:
        print(json.dumps(run_case(args.case, args.dense)))
        return
    print(f"load average at the start {os.getloadavg()}")
    for n, dense in [(n, True) for n in args.dense_sizes] + [(n, False) for n in args.sizes]:
        cmd = [sys.executable, __file__, "--case", str(n)] + (["--dense"] if dense else [])
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        _print(json.loads(out.strip().splitlines()[-1]))
    print(f"load average at the end {os.getloadavg()}")


if __name__ == "__main__":
    main()
